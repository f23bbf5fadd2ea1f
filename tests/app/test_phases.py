"""Phases: calibration first, full judging only after the gate; the revision loop; the override; the
defaults that follow the method; grades, kappa and exports per rubric version."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from qrelkit.app import grades as g
from qrelkit.app.phases import ensure_gate, override_gate, revise, rounds_history, rubric_by_hash
from qrelkit.app.project import find_user, init_project, load_rubric_from_store
from qrelkit.app.store import Store
from qrelkit.cli import main
from qrelkit.errors import ValidationError

from .helpers import FIXTURES, calibration_pairs, finish_calibration, grade_pairs, make_project, position_of

V2 = FIXTURES / "rubric-v2.toml"


def _hash(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT value FROM meta WHERE key = 'rubric_hash'").fetchone()[0]


def _events(db: Path, name: str, rubric_hash: str) -> dict[tuple[str, str], int]:
    """A labeller's latest grade per pair under one rubric hash, read straight from the event table."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, e.grade FROM grade_events e JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE u.name = ? AND e.rubric_hash = ? ORDER BY e.event_id",
            (name, rubric_hash),
        ).fetchall()
    return {(q, d): grade for q, d, grade in rows}


def test_labellers_reach_only_their_calibration_pairs_until_the_gate_passes(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    assert calibration_pairs(db)["alice"] == [("q1", d) for d in sorted(
        ["keys/rotate", "keys/policy", "security/advisory-4", "changelog/2026"])] + [
        ("q2", d) for d in sorted(["sdk/retries", "limits/rate", "sdk/timeouts", "security/advisory-4"])]  # fmt: skip
    with pytest.raises(g.PairClosed, match="opens when the calibration gate of round 1 passes"):
        grade_pairs(db, "alice", {("q3", "webhooks/verify"): 2})
    with Store(db) as store:
        uid = find_user(store, "alice")["user_id"]
        closed = position_of(db, "alice", "webhooks/verify", "q3")
        with pytest.raises(g.PairClosed):
            store.read(lambda c: g.pair_view(c, uid, closed))
        assert store.read(lambda c: g.labeller_progress(c, uid))["total"] == 8

    # a failed gate pauses everything, calibration pairs included
    assert finish_calibration(db, agree=False).state == "paused"
    with pytest.raises(g.PairClosed, match="paused for a rubric revision"):
        grade_pairs(db, "alice", {("q1", "keys/rotate"): 2})

    # revise: a new version, fresh queries drawn from those no round used, seed from the project seed and round
    with Store(db) as store:
        done = revise(store, V2, calibration=1, by="admin", note="grade 1 reworded")
    seed = int(hashlib.sha256(b"7:round 2").hexdigest()[:8], 16)
    expected = ["q3", "q4"][int(np.random.default_rng(seed).choice(2, size=1, replace=False)[0])]
    assert (done["round"], done["seed"], done["queries"], done["query_rule"]) == (
        2,
        seed,
        [expected],
        "drawn",
    )
    other = "q4" if expected == "q3" else "q3"
    open_doc = {"q3": "webhooks/verify", "q4": "keys/scopes"}
    with pytest.raises(g.PairClosed):  # round 1's pairs are not round 2's calibration
        grade_pairs(db, "alice", {("q1", "keys/rotate"): 2})
    with pytest.raises(g.PairClosed):
        grade_pairs(db, "bob", {(other, open_doc[other]): 2})
    assert set(calibration_pairs(db)) == {"alice", "bob"}  # both judge the new query (plan_assignments)

    assert finish_calibration(db, agree=True).state == "open"
    grade_pairs(db, "bob", {("q1", "keys/rotate"): 2})  # open now, and graded under version 2.0
    with Store(db) as store:
        history = store.read(rounds_history)
    assert [(r["round"], r["rubric"]["version"], r["status"]) for r in history] == [
        (1, "1.0", "failed"), (2, "2.0", "passed")]  # fmt: skip
    assert history[1]["started_by"] == "admin" and history[1]["note"] == "grade 1 reworded"


def test_grades_kappa_and_exports_never_mix_rubric_versions(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    v1 = _hash(db)
    finish_calibration(db, agree=False)
    with Store(db) as store:
        revise(store, V2, same_queries=True)
    v2 = _hash(db)
    assert v2 != v1
    finish_calibration(db, agree=True)

    with Store(db) as store:
        rubric2 = load_rubric_from_store(store)
        rubric1 = store.read(lambda c: rubric_by_hash(c, v1))
        # kappa per round, each on its own version's grades only; checked against scikit-learn
        (round1,) = g.calibration_status(store, round=1)
        (round2,) = g.calibration_status(store, round=2)
        for state, version in ((round1, v1), (round2, v2)):
            a, b = _events(db, "alice", version), _events(db, "bob", version)
            keys = sorted(a)
            want = cohen_kappa_score(
                [a[k] for k in keys], [b[k] for k in keys], weights="linear", labels=[0, 1, 2, 3]
            )
            assert state.report.kappa.n == 8 and state.report.kappa.kappa == pytest.approx(want, abs=1e-12)
        assert round1.gate.passed is False and round2.report.kappa.kappa == pytest.approx(1.0)

        # labeller exports per version
        texts = {h: g.labeller_qrels_text(store, "bob", rubric_hash=h) for h in (v1, v2)}
        for h, text in texts.items():
            got = {(q, d): int(x) for q, _, d, x in (line.split() for line in text.splitlines())}
            assert got == _events(db, "bob", h)
        assert texts[v1] != texts[v2]

        # final qrels per version: round 1's disagreements stay unresolved under 1.0, round 2 agrees under 2.0
        q2, m2, counts2 = g.final_qrels_text(store, rubric2, undecided="leave-out")
        _, m1, counts1 = g.final_qrels_text(store, rubric1, undecided="leave-out")
    assert counts2["agreed"] == 8 and counts1["agreed"] == 0
    assert {(q, d): int(x) for q, _, d, x in (line.split() for line in q2.splitlines())} == _events(
        db, "alice", v2
    )
    man1, man2 = json.loads(m1), json.loads(m2)
    assert (man1["rubric"]["content_hash"], man1["calibration"]["status"], man1["calibration"]["round"]) == (
        v1, "failed", 1)  # fmt: skip
    assert (man2["rubric"]["content_hash"], man2["calibration"]["status"], man2["calibration"]["round"]) == (
        v2, "passed", 2)  # fmt: skip
    assert man2["calibration"]["kappa"] == pytest.approx(1.0)
    assert [(r["round"], r["rubric"]["content_hash"], r["query_rule"], r["status"])
            for r in man2["calibration"]["rounds"]] == [(1, v1, "initial", "failed"), (2, v2, "same", "passed")]  # fmt: skip
    assert man2["calibration"]["rounds"][0]["agreement"][0]["kappa"] == pytest.approx(
        round1.report.kappa.kappa
    )


def test_an_override_needs_a_reason_and_every_result_shows_it(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    with Store(db) as store, pytest.raises(ValidationError, match="has not failed"):
        override_gate(store, reason="deadline", by="admin")
    finish_calibration(db, agree=False)
    runner = CliRunner()
    assert (
        runner.invoke(main, ["judge", "override", str(db), "--reason", "  ", "--by", "admin"]).exit_code == 1
    )
    out = runner.invoke(main, ["judge", "override", str(db), "--reason", "deadline for the launch review",
                               "--by", "admin"])  # fmt: skip
    assert out.exit_code == 0 and "full judging opened by admin" in out.output
    grade_pairs(db, "alice", {("q3", "webhooks/verify"): 2})  # open now
    final = tmp_path / "final.qrels"
    out = runner.invoke(main, ["judge", "export", str(db), "--final", "-o", str(final),
                               "--allow-unresolved", "leave-out"])  # fmt: skip
    assert out.exit_code == 0, out.output
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())["calibration"]
    assert manifest["status"] == "overridden" and manifest["gate"]["passed"] is False
    assert (manifest["override"]["reason"], manifest["override"]["by"]) == (
        "deadline for the launch review",
        "admin",
    )
    assert manifest["override"]["at"].endswith("Z")
    result = runner.invoke(main, ["eval", str(final), str(FIXTURES / "sysalpha.run")])
    assert result.exit_code == 0, result.output
    assert "overridden by admin" in result.output and "deadline for the launch review" in result.output
    assert "the calibration gate failed" in result.output


def test_init_refuses_a_project_without_calibration_unless_asked(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (FIXTURES / "pool.jsonl").read_text().splitlines()]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({**x, "calibration": False}) + "\n" for x in lines))
    with pytest.raises(ValidationError, match="marks no calibration queries"):
        make_project(tmp_path, pool=bare)
    assert not (tmp_path / "project.db").exists()
    with pytest.raises(ValidationError, match="but the pool marks 2 calibration queries"):
        make_project(tmp_path, no_calibration=True)
    db = make_project(tmp_path, pool=bare, no_calibration=True)
    with Store(db) as store:
        assert ensure_gate(store).state == "open"
        (entry,) = store.read(rounds_history)
    assert entry["status"] == "not measured" and "--no-calibration" in entry["not_measured"]
    with sqlite3.connect(db) as conn:
        (holder,) = conn.execute(
            "SELECT u.name FROM assignments a JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "WHERE p.query_id = 'q3' AND p.doc_id = 'webhooks/verify'"
        ).fetchone()
    grade_pairs(db, holder, {("q3", "webhooks/verify"): 2})
    final = tmp_path / "final.qrels"
    assert CliRunner().invoke(main, ["judge", "export", str(db), "--final", "-o", str(final)]).exit_code == 0
    result = CliRunner().invoke(main, ["eval", str(final), str(FIXTURES / "sysalpha.run")])
    assert "agreement was not measured on these judgments" in result.output


def test_revise_refuses_a_rubric_that_fails_lint_or_is_not_new(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    finish_calibration(db, agree=False)
    runner = CliRunner()
    same = runner.invoke(main, ["judge", "revise", str(db), "--rubric", str(FIXTURES / "rubric.toml")])
    assert same.exit_code == 1 and "one the project has used already" in same.output
    bumped = tmp_path / "reworded.toml"
    bumped.write_text(V2.read_text().replace('version = "2.0"', 'version = "1.0"'))
    out = runner.invoke(main, ["judge", "revise", str(db), "--rubric", str(bumped)])
    assert out.exit_code == 1 and "version '1.0' was used by an earlier round" in out.output
    bad = Path(__file__).resolve().parents[1] / "fixtures" / "rubrics" / "best-answer.toml"
    out = runner.invoke(main, ["judge", "revise", str(db), "--rubric", str(bad)])
    assert out.exit_code == 1 and "lint error" in out.output
    out = runner.invoke(main, ["judge", "revise", str(db), "--rubric", str(V2), "--by", "admin"])
    assert out.exit_code == 0 and out.output.startswith("round 2: rubric judging-fixture 2.0"), out.output
    kappa = json.loads(runner.invoke(main, ["judge", "kappa", str(db), "--json"]).output)
    assert kappa["phase"]["state"] == "calibration" and kappa["phase"]["round"] == 2
    assert [r["status"] for r in kappa["rounds"]] == ["failed", "measuring"]


def test_a_project_made_before_phases_gets_round_one_from_its_calibration_pairs(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    with sqlite3.connect(db) as conn:  # back to schema 1, as an older qrelkit left it
        for table in ("adjudication_undos", "round_pairs", "gate_events", "rounds", "rubrics", "sessions",
                      "model_labellers", "model_grades", "model_answers", "model_attempts", "model_gate_events",
                      "probe_pairs", "model_audit"):  # fmt: skip
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 2")
        conn.execute("PRAGMA user_version = 1")
    with Store(db) as store:
        phase = ensure_gate(store)
        assert (phase.round, phase.state, phase.rubric_hash) == (1, "calibration", store.meta("rubric_hash"))
    assert {n: len(p) for n, p in calibration_pairs(db).items()} == {"alice": 8, "bob": 8}


def test_pool_and_init_defaults_follow_the_method(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    runs = [str(FIXTURES / "sysalpha.run"), str(FIXTURES / "sysbeta.run")]
    out = CliRunner().invoke(
        main, ["pool", *runs, "--depth", "4", "--labellers", "alice,bob", "-o", str(pool)]
    )
    assert out.exit_code == 0, out.output
    assert "warning: asked for 30 calibration queries, but only 4 queries have pairs to judge" in out.output
    assert "warning: only 4 calibration queries" in out.output
    db = tmp_path / "p.db"
    summary = init_project(db, rubric=FIXTURES / "rubric.toml", pool=pool, docs=FIXTURES / "docs.jsonl",
                           queries=FIXTURES / "queries.tsv", seed=3)  # fmt: skip
    assert summary["calibration_queries"] == ["q1", "q2", "q3", "q4"]


def test_the_admin_page_revises_and_overrides_over_http(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    from .helpers import ThreadServer, sign_in

    db = make_project(tmp_path, labellers="alice,bob")
    finish_calibration(db, agree=False)
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin, alice = sign_in(srv.url, db, "admin"), sign_in(srv.url, db, "alice")
        closed = position_of(db, "alice", "webhooks/verify", "q3")
        assert "Judging is paused for a rubric revision" in alice.get("/label").text
        assert alice.get(f"/label/{closed}").status_code == 403
        page = admin.get("/admin").text
        assert "paused for a rubric revision" in page and 'id="override-form"' in page
        assert 'id="confusion-alice-bob"' in page
        lint_fails = (
            Path(__file__).resolve().parents[1] / "fixtures" / "rubrics" / "best-answer.toml"
        ).read_text()
        bad = admin.post("/admin/revise", data={"csrf_token": admin.csrf, "rubric": lint_fails})
        assert bad.status_code == 400 and "lint error" in bad.text
        empty = admin.post("/admin/override", data={"csrf_token": admin.csrf, "reason": " "})
        assert empty.status_code == 400 and "written reason" in empty.text
        assert admin.get("/admin/api/rounds").json()["phase"]["state"] == "paused"
        done = admin.post("/admin/override", data={"csrf_token": admin.csrf, "reason": "pilot only"})
        assert done.status_code == 303
        rounds = admin.get("/admin/api/rounds").json()
        assert rounds["phase"]["state"] == "open" and rounds["rounds"][0]["override"]["by"] == "admin"
        assert "webhooks/verify" in alice.get(f"/label/{closed}").text
        assert (
            alice.post(f"/label/{closed}", data={"csrf_token": alice.csrf, "grade": "2"}).status_code == 303
        )
        revised = admin.post("/admin/revise", data={"csrf_token": admin.csrf, "rubric": V2.read_text(),
                                                    "same_queries": "1"})  # fmt: skip
        assert revised.status_code == 303
        assert alice.get(f"/label/{closed}").status_code == 403  # a new round: calibration again
        assert alice.get("/api/me/progress").json() == {
            "total": 8,
            "done": 0,
            "phase": "calibration",
            "round": 2,
        }


def test_calibration_sample_says_how_each_rounds_queries_were_drawn(tmp_path: Path) -> None:
    from qrelkit.app.phases import calibration_sample

    db = make_project(tmp_path, labellers="alice,bob")
    v1 = _hash(db)
    finish_calibration(db, agree=False)
    with Store(db) as store:
        revise(store, V2, calibration=1, by="admin")
        v2 = _hash(db)
        first = store.read(lambda c: calibration_sample(c, v1))
        second = store.read(lambda c: calibration_sample(c, v2))
    with sqlite3.connect(db) as conn:
        queries = sorted(q for (q,) in conn.execute("SELECT DISTINCT query_id FROM pairs"))
    # round 1: the pool file marked q1 and q2; "random" only if the project seed's draw gives them too
    own_draw = sorted(
        queries[int(i)] for i in np.random.default_rng(7).choice(len(queries), 2, replace=False)
    )
    assert first["queries"] == ["q1", "q2"] and first["seed"] == 7 and first["candidates"] == len(queries)
    assert first["drawn"] == ("random" if own_draw == ["q1", "q2"] else "given")
    # round 2: one of the two queries no round used, drawn with the round's seed
    seed = int(hashlib.sha256(b"7:round 2").hexdigest()[:8], 16)
    unused = [q for q in queries if q not in ("q1", "q2")]
    expected = unused[int(np.random.default_rng(seed).choice(len(unused), size=1, replace=False)[0])]
    assert second == {"round": 2, "queries": [expected], "count": 1, "drawn": "random", "seed": seed,
                      "candidates": len(unused)}  # fmt: skip

    (tmp_path / "same").mkdir()
    same = make_project(tmp_path / "same", labellers="alice,bob")
    finish_calibration(same, agree=False)
    with Store(same) as store:
        revise(store, V2, same_queries=True)
        kept = store.read(lambda c: calibration_sample(c, _hash(same)))
    assert kept["round"] == 1 and kept["queries"] == ["q1", "q2"]  # the round whose queries it kept
