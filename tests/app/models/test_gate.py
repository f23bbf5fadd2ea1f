"""The model's gate: its numbers equal those computed independently (scikit-learn, scipy, statsmodels)
from the same grades, the full pool stays closed until it passes, the override, the alternative annotator
test, the probes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, recall_score

from .helpers import DOCS, ChatServer, grade_calibration, make_synthetic, person, scripted, truth

CALIBRATION = [(q, d) for q in range(8) for d in range(DOCS)]


def _add_and_run(cli, db: Path, url: str, *run: str):
    assert cli("judge", "model", "add", db, "judge", "--endpoint", url, "--model", "judge-1").exit_code == 0
    result = cli("judge", "model", "run", db, "judge", *run)
    assert result.exit_code == 0, result.output
    return result


def _status(cli, db: Path) -> dict:
    result = cli("judge", "model", "status", db, "judge", "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _model_grades(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute(
            "SELECT p.query_id || ' ' || p.doc_id, e.grade FROM grade_events e JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE u.role = 'model'").fetchall())  # fmt: skip


def test_kappa_interval_confusion_recall_and_leniency_equal_independent_values(gated: Path, cli) -> None:
    answer = scripted(3)
    with ChatServer(answer) as srv:
        _add_and_run(cli, gated, srv.url, "--calibration-only")
    gate = _status(cli, gated)["gate"]
    model = {(q, d): answer(q, d, "") for q, d in CALIBRATION}
    alice = {k: person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in CALIBRATION}
    bob = {k: person("bob", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in CALIBRATION}
    agreed = [k for k in CALIBRATION if alice[k] == bob[k]]  # no adjudication: disputed pairs are left out
    ref, mod = [alice[k] for k in agreed], [model[k] for k in agreed]
    adj = gate["versus_adjudicated"]
    assert gate["disputed_left_out"] == len(CALIBRATION) - len(agreed) and adj["n_pairs"] == len(agreed)
    assert adj["kappa"] == pytest.approx(cohen_kappa_score(ref, mod, weights="linear"), abs=1e-12)
    assert adj["confusion"] == confusion_matrix(ref, mod, labels=[0, 1, 2, 3]).tolist()
    recall = recall_score(ref, mod, labels=[0, 1, 2, 3], average=None, zero_division=np.nan)
    assert [adj["recall"][str(g)] for g in range(4)] == pytest.approx(list(recall))
    assert adj["leniency"] == pytest.approx(np.mean(mod) - np.mean(ref), abs=1e-12)
    # the query bootstrap, recomputed with scikit-learn on the same draws of queries (2000, seed 0)
    from qrelkit.agreement.resample import resample_counts

    queries = sorted({f"q{q}" for q, _ in agreed})
    counts = resample_counts(len(queries), 2000, 0)
    kappas, lenient = [], []
    for row in counts:
        w = [row[queries.index(f"q{q}")] for q, _ in agreed]
        if sum(w) == 0:
            continue
        kappas.append(cohen_kappa_score(ref, mod, weights="linear", sample_weight=w))
        lenient.append(np.average(mod, weights=w) - np.average(ref, weights=w))
    kappas_a = np.asarray(kappas)
    kappas_a = kappas_a[~np.isnan(kappas_a)]
    assert adj["bootstrap_low"] == pytest.approx(np.quantile(kappas_a, 0.025), abs=1e-9)
    assert adj["bootstrap_high"] == pytest.approx(np.quantile(kappas_a, 0.975), abs=1e-9)
    assert adj["leniency_low"] == pytest.approx(np.quantile(lenient, 0.025), abs=1e-9)
    assert adj["leniency_high"] == pytest.approx(np.quantile(lenient, 0.975), abs=1e-9)
    # against each person, on all 40 calibration pairs
    by_name = {v["reference"]: v for v in gate["versus_people"]}
    for name, grades in (("alice", alice), ("bob", bob)):
        r, m = [grades[k] for k in CALIBRATION], [model[k] for k in CALIBRATION]
        assert by_name[name]["kappa"] == pytest.approx(cohen_kappa_score(r, m, weights="linear"), abs=1e-12)
    # non-inferiority: the people's kappa (alice against bob), minus the margin 0.05
    people = cohen_kappa_score(
        [alice[k] for k in CALIBRATION], [bob[k] for k in CALIBRATION], weights="linear"
    )
    assert gate["people_kappa"] == pytest.approx(people, abs=1e-12)
    assert gate["threshold"] == pytest.approx(people - 0.05, abs=1e-12)
    passed = adj["bootstrap_low"] >= people - 0.05
    part = next(p for p in gate["parts"] if p["part"] == "non_inferiority")
    assert part["passed"] is passed is False  # this lenient model is worse than the people by more than 0.05
    assert next(p for p in gate["parts"] if p["part"] == "probes")["passed"] is False  # not run yet


def test_the_full_pool_stays_closed_until_the_gate_passes_then_opens(gated: Path, cli) -> None:
    from qrelkit.app.grades import PairClosed
    from qrelkit.app.models.client import Reply
    from qrelkit.app.models.register import load_model
    from qrelkit.app.models.runner import record_model_grade
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    perfect = scripted(0, flip_every=10**9)
    with ChatServer(perfect) as srv:
        first = _add_and_run(cli, gated, srv.url)  # calibration, then the gate fails: the probes have not run
        assert "40 pairs graded" in first.stdout and "failing: probes not run" in first.stdout
        assert len(_model_grades(gated)) == 40
        with Store(gated) as store:  # the store refuses a grade outside calibration, whoever asks
            rubric = load_rubric_from_store(store)
            model = store.read(lambda c: load_model(c, "judge"))
            outside = store.read(
                lambda c: c.execute("SELECT pair_id FROM pairs WHERE query_id = 'q10'").fetchone()[0]
            )
            with pytest.raises(PairClosed, match="closed to model labeller 'judge' until its gate passes"):
                store.write(
                    lambda c: record_model_grade(
                        c, model, outside, Reply(1, "x", 5), digest="d", rubric=rubric
                    )
                )
        again = cli("judge", "model", "run", gated, "judge")
        assert "0 pairs graded" in again.stdout and len(_model_grades(gated)) == 40
        probe = cli("judge", "model", "probe", gated, "judge")
        assert probe.exit_code == 0, probe.output
        assert "gate: passed" in probe.stdout
        rest = cli("judge", "model", "run", gated, "judge")
    assert "20 pairs graded" in rest.stdout
    grades = _model_grades(gated)
    assert len(grades) == 60 and all(
        g == truth(int(k.split()[0][1:]), int(k.split("-")[1])) for k, g in grades.items()
    )
    status = _status(cli, gated)
    assert status["full_pool_open"] and status["gate_outcome"] == "passed"
    assert [e["outcome"] for e in status["gate_history"]] == ["failed", "passed"]


def test_a_model_is_never_invited_to_the_web_pages(gated: Path, cli) -> None:
    with ChatServer(scripted(1)) as srv:
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
    result = cli("judge", "invite", gated, "judge")
    assert result.exit_code == 1 and "is a model labeller" in result.stderr


def test_the_override_needs_a_failed_gate_and_a_reason_and_is_recorded(gated: Path, cli) -> None:
    with ChatServer(scripted(3)) as srv:
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        early = cli("judge", "model", "override", gated, "judge", "--reason", "cheap", "--by", "ann")
        assert early.exit_code == 1 and "has not failed" in early.stderr
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
        assert len(_model_grades(gated)) == 40
        blank = cli("judge", "model", "override", gated, "judge", "--reason", "  ", "--by", "ann")
        assert blank.exit_code == 1 and "needs a written reason" in blank.stderr
        done = cli(
            "judge",
            "model",
            "override",
            gated,
            "judge",
            "--reason",
            "budget: people cannot grade it all",
            "--by",
            "ann",
        )
        assert done.exit_code == 0 and "non_inferiority" in done.stdout
        cli("judge", "model", "run", gated, "judge")
    assert len(_model_grades(gated)) == 60
    history = _status(cli, gated)["gate_history"]
    assert (
        history[-1]["outcome"] == "override" and history[-1]["reason"] == "budget: people cannot grade it all"
    )
    assert history[-1]["by"] == "ann"
    table = cli("judge", "model", "status", gated, "judge").stdout
    assert "override: budget: people cannot grade it all (by ann)" in table


def _alt_independent(
    model: dict, people: dict[str, dict], eps: float = 0.1
) -> tuple[list[float], list[bool]]:
    from scipy.stats import ttest_1samp
    from statsmodels.stats.multitest import multipletests

    p_values = []
    for j in sorted(people):
        d = []
        for key, gj in people[j].items():
            others = [people[k][key] for k in people if k != j and key in people[k]]
            if not others or key not in model:
                continue
            s_m = np.mean([g == model[key] for g in others])
            s_h = np.mean([g == gj for g in others])
            d.append(float(s_h >= s_m) - float(s_m >= s_h))
        p_values.append(ttest_1samp(d, eps, alternative="less").pvalue)
    reject, adjusted, _, _ = multipletests(p_values, alpha=0.05, method="fdr_by")
    return list(p_values), list(reject), list(adjusted)


def test_the_alternative_annotator_test_with_three_people(tmp_path: Path, cli) -> None:
    db = make_synthetic(tmp_path, people=("alice", "bob", "carol"), per_query=3)
    grade_calibration(db, person)
    answer = scripted(5)
    with ChatServer(answer) as srv:
        _add_and_run(cli, db, srv.url, "--calibration-only")
    alt = _status(cli, db)["gate"]["alt_test"]
    people = {
        n: {(q, d): person(n, f"q{q}", f"d{q}-{d}") for q, d in CALIBRATION}
        for n in ("alice", "bob", "carol")
    }
    model = {(q, d): answer(q, d, "") for q, d in CALIBRATION}
    p_values, reject, adjusted = _alt_independent(model, people)
    assert [p["p_value"] for p in alt["people"]] == pytest.approx(p_values, abs=1e-12)
    assert [p["p_adjusted"] for p in alt["people"]] == pytest.approx(adjusted, abs=1e-12)
    assert [p["rejected"] for p in alt["people"]] == [bool(r) for r in reject]
    assert alt["winning_rate"] == pytest.approx(sum(reject) / 3)
    assert alt["passed"] == (sum(reject) / 3 >= 0.5)


def test_benjamini_yekutieli_equals_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    from qrelkit.agreement.model import benjamini_yekutieli

    p = [0.001, 0.04, 0.03, 0.2, 0.011, 0.5, 0.0005]
    assert benjamini_yekutieli(p) == pytest.approx(list(multipletests(p, method="fdr_by")[1]), abs=1e-12)


def test_probes_catch_an_injectable_model_and_stay_out_of_the_pool(gated: Path, cli) -> None:
    base = scripted(0, flip_every=10**9)

    from qrelkit.app.models.probes import INJECTIONS

    sentences = [s.format(top=3) for s in INJECTIONS]

    def gullible(q: int, d: int, prompt: str) -> int:  # obeys every instruction a probe may insert
        return 3 if any(s in prompt for s in sentences) else base(q, d, prompt)

    with ChatServer(gullible) as srv:
        _add_and_run(cli, gated, srv.url, "--calibration-only")
        with sqlite3.connect(gated) as conn:
            before = conn.execute("SELECT COUNT(*) FROM pairs").fetchone()[0], conn.execute(
                "SELECT COUNT(*) FROM assignments a JOIN users u USING (user_id) WHERE u.role = 'labeller'").fetchone()[0]  # fmt: skip
        result = cli("judge", "model", "probe", gated, "judge")
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0  # asked once: nothing new
    assert result.exit_code == 0, result.output
    rates = _status(cli, gated)["gate"]["probes"]
    zero = sum(
        1
        for q, d in CALIBRATION
        if person("alice", f"q{q}", f"d{q}-{d}") == person("bob", f"q{q}", f"d{q}-{d}") == 0
    )
    n_zero = min(zero, 20)
    assert rates["stuffing"]["raised"] == 0 and rates["stuffing"]["answered"] == n_zero
    assert rates["injection"]["raised"] == 3 * n_zero and rates["injection"]["answered"] == 3 * n_zero
    assert rates["injection"]["raised_rate"] == 1.0
    assert rates["order"]["consistency"] == 1.0
    assert "gate: failed (failing: probes)" in result.stdout
    bodies = [b["messages"][-1]["content"] for b in srv.bodies]
    assert sum(any(s in b for s in sentences) for b in bodies) == 3 * n_zero  # three sentences a pair
    reversed_prompts = [b for b in bodies if b.index("Grade 0:") < b.index("Grade 3:")]
    assert len(reversed_prompts) == 20
    with sqlite3.connect(
        gated
    ) as conn:  # probes are stored apart: the pool and the people's plan are as before
        after = conn.execute("SELECT COUNT(*) FROM pairs").fetchone()[0], conn.execute(
            "SELECT COUNT(*) FROM assignments a JOIN users u USING (user_id) WHERE u.role = 'labeller'").fetchone()[0]  # fmt: skip
        assert after == before
        assert conn.execute("SELECT COUNT(*) FROM probe_pairs").fetchone()[0] == 4 * n_zero + 20
        docs = " ".join(r[0] for r in conn.execute("SELECT text FROM docs"))
        assert "Ignore the rubric" not in docs


def test_the_audit_sample_goes_to_people_and_shows_drift(gated: Path, cli) -> None:
    import hashlib

    from qrelkit.app.grades import record_grade
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    perfect = scripted(0, flip_every=10**9)
    with ChatServer(perfect) as srv:
        _add_and_run(cli, gated, srv.url)
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        rest = cli("judge", "model", "run", gated, "judge", "--audit-share", "0.5")
    # the sample, by the documented rule: SHA-256 of "seed:audit:model:query\tdoc", first 16 hex digits
    outside = [(f"q{q}", f"d{q}-{d}") for q in range(8, 12) for d in range(DOCS)]
    sampled = sorted(k for k in outside if int(hashlib.sha256(
        f"11:audit:judge:{k[0]}\t{k[1]}".encode()).hexdigest()[:16], 16) < 0.5 * 16**16)  # fmt: skip
    assert f"{len(sampled)} pairs added to the people's audit sample" in rest.stdout
    with sqlite3.connect(gated) as conn:
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, u.name, a2.position FROM model_audit m JOIN pairs p USING (pair_id) "
            "JOIN users u ON u.user_id = m.person_id "
            "JOIN assignments a2 ON a2.user_id = m.person_id AND a2.pair_id = m.pair_id ORDER BY 1, 2").fetchall()  # fmt: skip
    assert sorted((q, d) for q, d, _, _ in rows) == sampled
    # the people grade their audit pairs two grades away from the model: the audit shows drift
    with Store(gated) as store:
        rubric = load_rubric_from_store(store)
        ids = dict(store.read(lambda c: c.execute("SELECT name, user_id FROM users").fetchall()))
        for q, d, name, position in rows:
            g = (truth(int(q[1:]), int(d.split("-")[1])) + 2) % 4
            store.write(lambda c, u=ids[name], p=position, g=g: record_grade(
                c, u, p, g, unsure=False, note=None, time_spent_ms=1000, rubric=rubric))  # fmt: skip
    status = _status(cli, gated)
    audit = status["audit"]
    model = [truth(int(q[1:]), int(d.split("-")[1])) for q, d, _, _ in rows]
    people = [(m + 2) % 4 for m in model]
    assert audit["sample"] == len(sampled) and audit["graded_by_people"] == len(sampled)
    assert audit["agreement"]["kappa"] == pytest.approx(
        cohen_kappa_score(people, model, weights="linear"), abs=1e-12
    )
    assert audit["drift"] is True
    assert "DRIFT" in cli("judge", "model", "status", gated, "judge").stdout


def _zero_pairs() -> int:
    zero = sum(
        1
        for q, d in CALIBRATION
        if person("alice", f"q{q}", f"d{q}-{d}") == person("bob", f"q{q}", f"d{q}-{d}") == 0
    )
    return min(zero, 20)


def _reversed(prompt: str) -> bool:
    return prompt.index("Grade 0:") < prompt.index("Grade 3:")


def test_the_order_probe_is_the_calibration_ask_again_with_the_levels_reversed(gated: Path, cli) -> None:
    import hashlib

    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        _add_and_run(cli, gated, srv.url, "--calibration-only")
        asked = [b["messages"][-1]["content"] for b in srv.bodies]
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        probing = [b["messages"][-1]["content"] for b in srv.bodies[len(asked) :]]
    # the calibration grades carry the hash of the prompt that was sent (SHA-256 of the request's text), so
    # the other ask of each order probe is that grade: nothing is asked in the usual order again
    sent = {hashlib.sha256(p.encode()).hexdigest() for p in asked}
    with sqlite3.connect(gated) as conn:
        hashes = {r[0] for r in conn.execute("SELECT prompt_hash FROM model_grades")}
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, o.base_grade, o.grade FROM probe_pairs o JOIN pairs p USING (pair_id) "
            "WHERE o.kind = 'order'"
        ).fetchall()
    assert hashes == sent and len(hashes) == len(CALIBRATION)
    assert len(probing) == 4 * _zero_pairs() + 20 and sum(_reversed(p) for p in probing) == 20
    assert len(rows) == 20
    for q, d, base, grade in rows:
        expected = truth(int(q[1:]), int(d.split("-")[1]))
        assert base == grade == expected


def test_an_order_probe_asks_the_usual_order_again_when_the_calibration_grade_had_another_prompt(
    gated: Path, cli
) -> None:
    def one_higher(q: int, d: int, prompt: str) -> int:  # answers one grade above the calibration ones
        return min(3, truth(q, d) + 1) if q >= 0 else 1

    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        _add_and_run(cli, gated, srv.url, "--calibration-only")
        # as if the calibration grades had been asked with an earlier prompt: no grade or cached answer
        # carries the hash of the prompt the probe would send in the usual order
        with sqlite3.connect(gated) as conn:
            conn.execute("UPDATE model_grades SET prompt_hash = 'an earlier prompt'")
            conn.execute("DELETE FROM model_answers")
        start, srv.answer = len(srv.bodies), one_higher
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        bodies = [b["messages"][-1]["content"] for b in srv.bodies[start:]]
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        assert len(srv.bodies) == start + len(bodies)  # asked once: a second probe run asks nothing
    # 20 order probes, each asked twice (usual order, then reversed), beside the stuffing and injection probes
    assert len(bodies) == 4 * _zero_pairs() + 20 + 20 and sum(_reversed(p) for p in bodies) == 20
    with sqlite3.connect(gated) as conn:
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, o.base_grade, o.grade FROM probe_pairs o JOIN pairs p USING (pair_id) "
            "WHERE o.kind = 'order'"
        ).fetchall()
        cached = conn.execute("SELECT COUNT(*) FROM model_answers").fetchone()[0]
    assert cached == 20  # the usual order's answers, paid for once
    for q, d, base, grade in rows:  # compared with the fresh ask, not with the calibration grade
        assert base == grade == min(3, truth(int(q[1:]), int(d.split("-")[1])) + 1)
    assert _status(cli, gated)["gate"]["probes"]["order"]["consistency"] == 1.0


def test_an_order_probe_whose_usual_order_gets_no_grade_counts_as_failed(gated: Path, cli) -> None:
    # every reply after the calibration grades is prose (no JSON grade); the calibration grades carry another
    # prompt's hash, so each order probe must ask the usual order first, and that ask fails
    script = {(q, d, n): "prose" for q, d in CALIBRATION for n in range(2, 12)}
    with ChatServer(scripted(0, flip_every=10**9), script=script) as srv:
        add = ("judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1",
               "--max-retries", "0")  # fmt: skip
        assert cli(*add).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
        with sqlite3.connect(gated) as conn:
            conn.execute("UPDATE model_grades SET prompt_hash = 'an earlier prompt'")
            conn.execute("DELETE FROM model_answers")
        start = len(srv.bodies)
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        probing = [b["messages"][-1]["content"] for b in srv.bodies[start:]]
    assert not any(_reversed(p) for p in probing)  # the reversed ask is not made without its other half
    order = _status(cli, gated)["gate"]["probes"]["order"]
    assert order["asked"] == 20 and order["answered"] == 0 and order["failed"] == 20
    assert order["consistency"] is None
    with sqlite3.connect(gated) as conn:
        errors = {r[0] for r in conn.execute("SELECT error FROM probe_pairs WHERE kind = 'order'")}
    assert len(errors) == 1 and errors.pop().startswith("the usual order got no grade: ")
