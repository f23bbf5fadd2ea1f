"""One owner per workflow concept: the calibration draw, the assignment plan, the merge into final
qrels, the kappa interval and the run-naming rule give the same answer through every path (the pool
and the judging project, the file-based commands and the app, the Python API and the command line).

Expected values are either hand-made (the merge's outcomes) or the other path's output: these tests
exist to fail when two paths disagree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qrelkit.data.values import Qrels, Run
from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.judgments.adjudication import Vote, check_decision, merge, merge_two, pair_status, read_decisions

from ..conftest import CLI, EXAMPLE

RUNS = sorted((EXAMPLE / "runs").glob("*.run"))


invoke = CLI


# -- the merge -------------------------------------------------------------------------------------------


def _labellers() -> tuple[Qrels, Qrels]:
    a = Qrels.from_dict({"q1": {"d1": 3, "d2": 0, "d3": 1, "d4": 2}, "q2": {"d5": 1}}, name="alice")
    b = Qrels.from_dict({"q1": {"d1": 3, "d2": 2, "d3": 0, "d4": 2}, "q2": {"d6": 0}}, name="bob")
    return a, b


def _decisions(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "decisions.tsv"
    path.write_text(text)
    return path


def test_pair_status_by_hand() -> None:
    assert pair_status([]) == "ungraded"
    assert pair_status([Vote("a", 2)]) == "single"
    assert pair_status([Vote("a", 2), Vote("b", 2)]) == "agreed"
    assert pair_status([Vote("a", 2), Vote("b", 1)]) == "disputed"
    assert pair_status([Vote("a", 2), Vote("b", None, unsure=True)]) == "disputed"
    assert pair_status([Vote("a", None, unsure=True)]) == "disputed"


def test_merge_two_files_with_decisions(tmp_path: Path) -> None:
    a, b = _labellers()
    dec = read_decisions(
        _decisions(tmp_path, "query_id\tdoc_id\tgrade\nq1\td2\t1\nq1\td3\t1\n"), [0, 1, 2, 3]
    )
    merged = merge_two(a, b, dec, names=("alice", "bob"))
    assert merged.qrels().to_dict() == {"q1": {"d1": 3, "d2": 1, "d3": 1, "d4": 2}, "q2": {"d5": 1, "d6": 0}}
    c = merged.counts
    assert (c["agreed"], c["adjudicated"], c["single_labeller"], c["total"]) == (2, 2, 2, 6)
    assert (c["defaulted"], c["overridden"], c["unresolved_left_out"]) == (0, 0, 0)
    assert c["undecided_policy"] == "refuse" and c["override_allowed"] is False


def test_an_undecided_pair_is_refused_left_out_or_defaulted_as_asked(tmp_path: Path) -> None:
    a, b = _labellers()
    dec = read_decisions(_decisions(tmp_path, "q1\td3\t1\n"))
    with pytest.raises(ValidationError, match=r"1 disputed pair\(s\) have no decision: \(q1, d2\)") as info:
        merge_two(a, b, dec)
    assert "--allow-unresolved leave-out" in str(info.value)
    left = merge_two(a, b, dec, undecided="leave-out")
    assert ("q1", "d2") not in left.grades and left.unresolved == (("q1", "d2"),)
    assert left.counts["unresolved_left_out"] == 1 and left.counts["total"] == 5
    for policy, grade in (("a", 0), ("b", 2), ("max", 2), ("min", 0)):
        merged = merge_two(a, b, dec, undecided=policy)
        assert merged.grades["q1", "d2"] == grade and merged.grades["q1", "d3"] == 1
        assert (merged.counts["adjudicated"], merged.counts["defaulted"]) == (1, 1)


def test_overriding_an_agreed_pair_needs_to_be_asked_for_and_is_counted(tmp_path: Path) -> None:
    a, b = _labellers()
    dec = read_decisions(_decisions(tmp_path, "q1\td2\t1\nq1\td3\t1\nq1\td1\t2\n"))
    with pytest.raises(ValidationError, match=r"\(q1, d1\) is not disputed \(agreed") as info:
        merge_two(a, b, dec, source="decisions.tsv")
    assert info.value.line == 3 and info.value.source == "decisions.tsv"
    merged = merge_two(a, b, dec, allow_override=True)
    assert merged.grades["q1", "d1"] == 2 and merged.counts["overridden"] == 1
    with pytest.raises(ValidationError, match="not disputed"):
        check_decision(("q", "d"), [Vote("x", 1)], allow_override=False)
    assert check_decision(("q", "d"), [Vote("x", 1)], allow_override=True) == "single"


def test_a_decision_for_a_pair_nobody_was_given_is_an_error() -> None:
    with pytest.raises(ValidationError, match="no labeller was given"):
        merge({("q", "d"): [Vote("a", 1)]}, {("q", "x"): 1})
    with pytest.raises(ValidationError, match="unknown policy"):
        merge({}, undecided="guess")


def test_decision_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="more than once") as info:
        read_decisions(_decisions(tmp_path, "q1\td2\t1\n\nq1\td2\t2\n"))
    assert info.value.line == 3
    with pytest.raises(InputFormatError, match="3 tab-separated fields") as info:
        read_decisions(_decisions(tmp_path, "q1\td2\t1\nq1 d3 1\n"))
    assert info.value.line == 2
    with pytest.raises(InputFormatError, match="not an integer"):
        read_decisions(_decisions(tmp_path, "q1\td2\thigh\n"))
    with pytest.raises(ValidationError, match="not on the scale"):
        read_decisions(_decisions(tmp_path, "q1\td2\t5\n"), [0, 1, 2, 3])


# -- the calibration draw and the assignment plan: pool and judge init -----------------------------------


def _unplanned(pool: Path, out: Path) -> Path:
    """The pool without its calibration marks and labeller plan, as a pool made without them."""
    lines = [json.loads(line) for line in pool.read_text().splitlines()]
    for obj in lines:
        obj["calibration"] = False
        obj.pop("labellers", None)
    out.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return out


def _project_plan(db: Path) -> tuple[set[str], dict[tuple[str, str], tuple[str, ...]]]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        cal = {r[0] for r in conn.execute("SELECT DISTINCT query_id FROM pairs WHERE calibration = 1")}
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, u.name FROM assignments a JOIN pairs p USING (pair_id) "
            "JOIN users u USING (user_id) ORDER BY u.name"
        ).fetchall()
    plan: dict[tuple[str, str], tuple[str, ...]] = {}
    for q, d, name in rows:
        plan[q, d] = (*plan.get((q, d), ()), name)
    return cal, plan


@pytest.mark.parametrize("seed", [0, 3, 41])
def test_the_same_seed_draws_the_same_calibration_queries_and_plan_in_pool_and_judge_init(
    tmp_path: Path, seed: int
) -> None:
    pool = tmp_path / "pool.jsonl"
    labellers = "alice,bob,carol"
    result = invoke("pool", *RUNS, "--depth", 5, "--calibration", 6, "--seed", seed,
                    "--labellers", labellers, "-o", pool)  # fmt: skip
    assert result.exit_code == 0, result.output
    pooled = [json.loads(line) for line in pool.read_text().splitlines()]
    pool_cal = {o["query_id"] for o in pooled if o["calibration"]}
    pool_plan = {
        (o["query_id"], o["doc_id"]): tuple(sorted(o["labellers"])) for o in pooled if not o["judged"]
    }
    assert len(pool_cal) == 6

    db = tmp_path / "p.db"
    result = invoke("judge", "init", db, "--rubric", EXAMPLE / "rubric.toml",
                    "--pool", _unplanned(pool, tmp_path / "bare.jsonl"), "--docs", EXAMPLE / "docs.jsonl",
                    "--queries", EXAMPLE / "queries.tsv", "--labellers", labellers,
                    "--calibration", 6, "--seed", seed)  # fmt: skip
    assert result.exit_code == 0, result.output
    cal, plan = _project_plan(db)
    assert cal == pool_cal
    assert plan == pool_plan


def test_judge_init_refuses_a_calibration_count_the_pool_contradicts(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    assert invoke("pool", *RUNS, "--depth", 3, "--calibration", 4, "--seed", 1, "-o", pool).exit_code == 0
    result = invoke("judge", "init", tmp_path / "p.db", "--rubric", EXAMPLE / "rubric.toml", "--pool", pool,
                    "--docs", EXAMPLE / "docs.jsonl", "--queries", EXAMPLE / "queries.tsv",
                    "--labellers", "alice,bob", "--calibration", 5)  # fmt: skip
    assert result.exit_code == 1
    assert "--calibration 5 conflicts with the pool, which marks 4 calibration queries" in result.output
    assert not (tmp_path / "p.db").exists()


# -- one kappa interval: the app, the manifest and `qrelkit agree` ----------------------------------------


def test_the_app_the_manifest_and_agree_give_the_same_kappa_interval(tmp_path: Path) -> None:
    """Two labellers grade the calibration pairs of a project (from their example judgments); the app's
    calibration state, the exported manifest and `qrelkit agree` on the exported grades agree exactly."""
    from qrelkit.app import grades as g
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store
    from qrelkit.formats import read_qrels

    pool = tmp_path / "pool.jsonl"
    assert invoke("pool", *RUNS, "--depth", 5, "--calibration", 12, "--seed", 2, "--labellers", "alice,bob",
                  "-o", pool).exit_code == 0  # fmt: skip
    db = tmp_path / "p.db"
    result = invoke("judge", "init", db, "--rubric", EXAMPLE / "rubric.toml", "--pool", pool,
                    "--docs", EXAMPLE / "docs.jsonl", "--queries", EXAMPLE / "queries.tsv", "--seed", 2)  # fmt: skip
    assert result.exit_code == 0, result.output
    given = {name: read_qrels(EXAMPLE / "judgments" / f"{name}.qrels").to_dict() for name in ("alice", "bob")}
    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        rows = store.read(
            lambda c: c.execute(
                "SELECT u.user_id, u.name, a.position, p.query_id, p.doc_id FROM assignments a "
                "JOIN users u USING (user_id) JOIN pairs p USING (pair_id) WHERE p.calibration = 1"
            ).fetchall()
        )
        for uid, name, pos, q, d in rows:
            grade = given[name].get(q, {}).get(d, 0)
            store.write(
                lambda c, uid=uid, pos=pos, grade=grade: g.record_grade(
                    c, uid, pos, grade, unsure=False, note=None, time_spent_ms=None, rubric=rubric
                )
            )
        (state,) = g.calibration_status(store, rubric)
        for name in ("alice", "bob"):
            g.export_labeller(store, name, tmp_path / f"{name}.qrels")
        g.export_final(store, rubric, tmp_path / "final.qrels", undecided="leave-out")
    app = state.to_dict()
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())["calibration"]
    out = invoke("agree", tmp_path / "alice.qrels", tmp_path / "bob.qrels", "--rubric", EXAMPLE / "rubric.toml",
                 "--min-kappa", 0.6, "-f", "json")  # fmt: skip
    assert out.exit_code in (0, 3), out.output
    agree = json.loads(out.stdout)["agreement"]
    assert app["n_pairs"] == manifest["n_pairs"] == agree["n_pairs"] > 100
    assert app["kappa"] == manifest["kappa"] == agree["kappa"]["kappa"]
    assert [app["ci_low"], app["ci_high"]] == [manifest["ci_low"], manifest["ci_high"]]
    assert [app["bootstrap_low"], app["bootstrap_high"]] == [
        manifest["bootstrap_low"],
        manifest["bootstrap_high"],
    ]
    assert [app["bootstrap_low"], app["bootstrap_high"]] == [
        agree["bootstrap"]["low"],
        agree["bootstrap"]["high"],
    ]
    assert (manifest["bootstrap_resamples"], manifest["bootstrap_seed"]) == (2000, 0)
    assert (agree["bootstrap"]["n_resamples"], agree["bootstrap"]["seed"]) == (2000, 0)
    assert manifest["gate"]["message"] == app["gate"]["message"]


# -- one run-naming rule --------------------------------------------------------------------------------


def _twin_runs(tmp_path: Path) -> list[Path]:
    text = (EXAMPLE / "runs" / "bm25.run").read_text()
    paths = []
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "bm25.run")
        paths[-1].write_text(text)
    return paths


def test_two_runs_with_one_name_are_refused_everywhere(tmp_path: Path) -> None:
    import qrelkit

    twins = _twin_runs(tmp_path)
    qrels = EXAMPLE / "qrels.txt"
    for args in (("eval", qrels, *twins), ("pool", *twins, "-o", tmp_path / "pool.jsonl")):
        result = invoke(*args)
        assert result.exit_code == 1, (args, result.output)
        assert "two runs are both named 'bm25'" in result.output and "Fix: give each run its own tag" in (
            result.output
        )
    runs = [Run.from_dict({"q": {"d": 1.0}}, name="same")] * 2
    with pytest.raises(ValidationError, match="two runs are both named 'same'"):
        qrelkit.evaluate(Qrels.from_dict({"q": {"d": 1}}), runs)
    with pytest.raises(ValidationError, match="two runs are both named 'bm25'"):
        from qrelkit.evaluation.files import evaluate_files

        evaluate_files(qrels, twins)
    pool = tmp_path / "pool.jsonl"
    assert invoke("pool", RUNS[0], "--depth", 2, "-o", pool).exit_code == 0
    result = invoke("judge", "init", tmp_path / "p.db", "--rubric", EXAMPLE / "rubric.toml", "--pool", pool,
                    "--docs", EXAMPLE / "docs.jsonl", "--queries", EXAMPLE / "queries.tsv",
                    "--labellers", "alice", "--runs", twins[0], "--runs", twins[1])  # fmt: skip
    assert result.exit_code == 1 and "two runs are both named 'bm25'" in result.output


def _third_labeller(tmp_path: Path) -> Path:
    """carol: alice's grades, one grade higher on every third document and one lower on every seventh."""
    lines = []
    for i, line in enumerate((EXAMPLE / "judgments" / "alice.qrels").read_text().splitlines()):
        q, it, d, g = line.split()
        grade = min(3, int(g) + 1) if i % 3 == 0 else max(0, int(g) - 1) if i % 7 == 0 else int(g)
        lines.append(f"{q} {it} {d} {grade}")
    path = tmp_path / "carol-given.qrels"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_three_labellers_the_app_the_manifest_agree_and_judge_kappa_give_the_same_numbers(
    tmp_path: Path,
) -> None:
    """Three labellers grade every calibration pair (blind to each other); the group's statistics, the
    pairwise matrix and the gate on the mean pairwise kappa are the same in the app, the manifest and
    `qrelkit agree` on the three exported files."""
    from qrelkit.app import grades as g
    from qrelkit.app.phases import ensure_gate
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store
    from qrelkit.formats import read_qrels
    from qrelkit.judgments.adjudication import group_calibration_fields

    pool = tmp_path / "pool.jsonl"
    result = invoke("pool", *RUNS, "--depth", 5, "--calibration", 12, "--seed", 2, "--labellers",
                    "alice,bob,carol", "--calibration-labellers", 3, "-o", pool)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pairs judged 3 times" in result.output
    db = tmp_path / "p.db"
    result = invoke("judge", "init", db, "--rubric", EXAMPLE / "rubric.toml", "--pool", pool,
                    "--docs", EXAMPLE / "docs.jsonl", "--queries", EXAMPLE / "queries.tsv", "--seed", 2)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3 labellers per calibration query; gate: mean pairwise weighted kappa, bootstrap_low >= 0.6" in (
        result.output
    )
    given = {name: read_qrels(EXAMPLE / "judgments" / f"{name}.qrels").to_dict() for name in ("alice", "bob")}
    given["carol"] = read_qrels(_third_labeller(tmp_path)).to_dict()
    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        rows = store.read(
            lambda c: c.execute(
                "SELECT u.user_id, u.name, a.position, p.query_id, p.doc_id FROM assignments a "
                "JOIN users u USING (user_id) JOIN pairs p USING (pair_id) WHERE p.calibration = 1"
            ).fetchall()
        )
        assert {r[1] for r in rows} == {"alice", "bob", "carol"}
        by_pair: dict[tuple[str, str], set[str]] = {}
        for _, name, _, q, d in rows:
            by_pair.setdefault((q, d), set()).add(name)
        assert all(names == {"alice", "bob", "carol"} for names in by_pair.values())
        for uid, name, pos, q, d in rows:
            grade = given[name].get(q, {}).get(d, 0)
            store.write(
                lambda c, uid=uid, pos=pos, grade=grade: g.record_grade(
                    c, uid, pos, grade, unsure=False, note=None, time_spent_ms=None, rubric=rubric
                )
            )
        phase = ensure_gate(store)
        app = group_calibration_fields(g.group_status(store))
        for name in ("alice", "bob", "carol"):
            g.export_labeller(store, name, tmp_path / f"{name}.qrels")
        g.export_final(store, rubric, tmp_path / "final.qrels", undecided="leave-out")
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())["calibration"]
    out = invoke("agree", *(tmp_path / f"{n}.qrels" for n in ("alice", "bob", "carol")),
                 "--rubric", EXAMPLE / "rubric.toml", "--min-kappa", 0.6, "-f", "json")  # fmt: skip
    assert out.exit_code in (0, 3), out.output
    agree = json.loads(out.stdout)["group"]
    assert (
        app is not None and app["statistic"] == "mean_kappa" and app["labellers"] == ["alice", "bob", "carol"]
    )
    assert app["n_units"] == len(by_pair) > 100
    assert app == manifest["group"] == agree
    assert manifest["statistic"] == "mean_kappa" and manifest["gate"] == app["gate"]
    assert phase.outcome == ("passed" if app["gate"]["passed"] else "failed")
    assert (app["bootstrap_resamples"], app["bootstrap_seed"]) == (2000, 0)
    # the pairwise matrix holds each two labellers' kappa as `qrelkit agree` gives it for the two files
    two = invoke("agree", tmp_path / "alice.qrels", tmp_path / "carol.qrels", "--rubric", EXAMPLE / "rubric.toml",
                 "-f", "json")  # fmt: skip
    assert app["kappa_matrix"][0][2] == json.loads(two.stdout)["agreement"]["kappa"]["kappa"]
    text = invoke("judge", "kappa", db)
    value = app["statistics"]["mean_kappa"]
    shown = f"{value['value']:.3f} [{value['bootstrap_low']:.3f}, {value['bootstrap_high']:.3f}]"
    assert shown in " ".join(text.output.split()) and app["gate"]["message"] in text.output
    # every result computed from the final qrels says so, and so does the HTML report
    evaluated = invoke(
        "eval", tmp_path / "final.qrels", RUNS[0], "--provenance", tmp_path / "provenance.json"
    )
    assert evaluated.exit_code == 0, evaluated.output
    carried = json.loads((tmp_path / "provenance.json").read_text())["judgments"]["group_agreement"]
    assert (carried["statistic"], carried["value"], carried["bootstrap_low"], carried["bootstrap_high"]) == (
        "mean_kappa", value["value"], value["bootstrap_low"], value["bootstrap_high"])  # fmt: skip
    page = tmp_path / "report.html"
    assert invoke("report", tmp_path / "final.qrels", *RUNS[:2], "-o", page).exit_code == 0
    low, high = value["bootstrap_low"], value["bootstrap_high"]
    shown = f"{value['value']:.3f}, query bootstrap [{low:.3f}, {high:.3f}], on {app['n_units']} pairs"
    assert (
        f'<td data-label="field">{app["name"]} of alice, bob, carol</td><td data-label="value">{shown}</td>'
        in (page.read_text())
    )


def test_three_labellers_disagree_when_any_two_differ_and_merge_as_two_do() -> None:
    agreed = [Vote("a", 2), Vote("b", 2), Vote("c", 2)]
    split = [Vote("a", 2), Vote("b", 2), Vote("c", 3)]
    assert pair_status(agreed) == "agreed" and pair_status(split) == "disputed"
    assert pair_status([Vote("a", 2), Vote("b", 2), Vote("c", None, unsure=True)]) == "disputed"
    votes = {("q", "d1"): agreed, ("q", "d2"): split}
    with pytest.raises(ValidationError, match=r"1 disputed pair\(s\) have no decision: \(q, d2\)"):
        merge(votes)
    assert merge(votes, undecided="max").grades == {("q", "d1"): 2, ("q", "d2"): 3}
    assert merge(votes, undecided="min").grades == {("q", "d1"): 2, ("q", "d2"): 2}
    decided = merge(votes, {("q", "d2"): 1})
    assert decided.grades == {("q", "d1"): 2, ("q", "d2"): 1}
    assert (decided.counts["agreed"], decided.counts["adjudicated"]) == (1, 1)


# -- the manifest's fields, one spelling of the calibration and of the gate -------------------------------


def _half_kappa() -> Any:
    from qrelkit.judgments.adjudication import calibration_agreement

    # A: 0 0 1 1, B: 0 1 1 1 on 0..1: p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2, kappa = 1/2
    a = {("q1", "d1"): 0, ("q1", "d2"): 0, ("q2", "d1"): 1, ("q2", "d2"): 1}
    b = {("q1", "d1"): 0, ("q1", "d2"): 1, ("q2", "d1"): 1, ("q2", "d2"): 1}
    return calibration_agreement(a, b, (0, 1), min_kappa=0.6, labellers=("alice", "bob"), use="kappa")


def test_calibration_fields_spell_the_interval_and_the_gate_one_way() -> None:
    from qrelkit.judgments.adjudication import CALIBRATION_KEYS, calibration_fields

    fields = calibration_fields(_half_kappa())
    assert tuple(fields) == CALIBRATION_KEYS
    assert fields["kappa"] == pytest.approx(0.5, abs=1e-12) and fields["n_pairs"] == 4
    assert fields["gate"] == {
        "passed": False,
        "threshold": 0.6,
        "value_used": pytest.approx(0.5, abs=1e-12),
        "use": "kappa",
        "message": "kappa 0.50, 95% CI "
        f"[{fields['ci_low']:.2f}, {fields['ci_high']:.2f}]; kappa 0.50 < 0.60: FAIL",
    }


def test_the_apps_calibration_state_uses_the_manifests_keys() -> None:
    from qrelkit.app.grades import Calibration
    from qrelkit.judgments.adjudication import calibration_fields

    found = _half_kappa()
    state = Calibration("alice", "bob", 4, 4, 4, found.report, found.gate, found).to_dict()
    assert "ci" not in state and "bootstrap_ci" not in state
    assert {k: state[k] for k in calibration_fields(found)} == calibration_fields(found)
    assert state["exact_agreement"] == 0.75 and state["scale"] == [0, 1] and state["finished"] is True


def test_manifest_fields_are_the_same_for_both_export_paths() -> None:
    from qrelkit.judgments.adjudication import manifest_fields
    from qrelkit.judgments.manifest import FIELDS
    from qrelkit.rubric import load_rubric

    rubric = load_rubric(EXAMPLE / "rubric.toml")
    fields = manifest_fields(rubric=rubric, scale=(0, 1, 2, 3), relevance_threshold=2, labellers=("a", "b"),
                             calibration=None, adjudication={"total": 3})  # fmt: skip
    assert tuple(fields) == FIELDS
    assert fields == {
        "rubric": {"name": "docsearch", "version": "1.0", "content_hash": rubric.content_hash},
        "scale": [0, 1, 2, 3],
        "relevance_threshold": 2,
        "labellers": ["a", "b"],
        "calibration": None,
        "adjudication": {"total": 3},
        "model_labellers": None,
        "prediction_powered": None,
        "design": None,
    }
