"""A run after the pool closed, in a real project: init, calibration graded by two labellers, the gate passes,
then `extend` adds the new run's pairs as a segment, assigned by the plan, without a new round.

The fixture project (tests/app/fixtures) pools q1..q4; the new run sysgamma, at depth 2 (ranked by
score desc, doc id desc):
    q1: keys/scopes (1, new to q1), keys/rotate (2, in the pool)
    q2: webhooks/verify (1, new to q2), sdk/pagination (2, a document the project has no text for)
    q9: keys/rotate (1): a query the project never held, left out
So three new pairs: one in q1, two in q2. The plan (each query whole to one labeller, largest first, to
the labeller with the fewest new pairs, ties to the earlier): q2 -> alice, q1 -> bob.
"""

from __future__ import annotations

import json
import sqlite3
from itertools import pairwise
from pathlib import Path

import pytest

from qrelkit.errors import ValidationError

from .helpers import grade_pairs, make_project, pass_gate

GAMMA = """\
q1 Q0 keys/scopes 1 9.0 sysgamma
q1 Q0 keys/rotate 2 8.0 sysgamma
q1 Q0 faq/general 3 1.0 sysgamma
q2 Q0 webhooks/verify 1 9.0 sysgamma
q2 Q0 sdk/pagination 2 8.0 sysgamma
q9 Q0 keys/rotate 1 5.0 sysgamma
"""
NEW_DOC = {"doc_id": "sdk/pagination", "title": "Paging through results", "text": "Pass the cursor back."}


def _files(tmp: Path) -> tuple[Path, Path]:
    run = tmp / "sysgamma.run"
    run.write_text(GAMMA)
    docs = tmp / "new-docs.jsonl"
    docs.write_text(json.dumps(NEW_DOC) + "\n")
    return run, docs


def _rows(db: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return [tuple(r) for r in conn.execute(sql, args)]


def test_extend_after_the_gate_adds_a_segment_to_the_labellers_queues_without_a_round(tmp_path: Path) -> None:
    from qrelkit.app.extend import extend_project
    from qrelkit.app.grades import labeller_progress, next_position, pair_view
    from qrelkit.app.phases import phase_of
    from qrelkit.app.store import Store

    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    run, docs = _files(tmp_path)
    rounds_before = _rows(db, "SELECT COUNT(*) FROM rounds")
    round_pairs_before = _rows(db, "SELECT COUNT(*) FROM round_pairs")
    last = {n: _rows(db, "SELECT MAX(position) FROM assignments JOIN users USING (user_id) WHERE name = ?", n)[0][0]
            for n in ("alice", "bob")}  # fmt: skip
    with Store(db) as store:
        before = {
            n: store.read(lambda c, n=n: labeller_progress(c, _uid(db, n))["total"]) for n in ("alice", "bob")
        }

    summary = extend_project(db, [run], depth=2, docs=docs, by="admin", note="a month later")

    assert summary["segment"] == 2 and summary["pairs"] == 3 and summary["queries"] == 2
    assert summary["labellers"] == {"alice": 2, "bob": 1}
    assert summary["docs_added"] == 1 and summary["queries_added"] == 0
    assert any("q9" in n for n in summary["notes"])
    # no new calibration round; judging stays open under the same rubric
    assert _rows(db, "SELECT COUNT(*) FROM rounds") == rounds_before
    assert _rows(db, "SELECT COUNT(*) FROM round_pairs") == round_pairs_before
    with Store(db) as store:
        assert store.read(phase_of).state == "open"
    # the new pairs, after each labeller's others, one query's pairs together
    added = _rows(db, "SELECT u.name, a.position, p.query_id, p.doc_id, p.calibration FROM assignments a "
                  "JOIN users u USING (user_id) JOIN pairs p USING (pair_id) JOIN segment_pairs s USING (pair_id) "
                  "ORDER BY u.name, a.position")  # fmt: skip
    alice = [r for r in added if r[0] == "alice"]
    bob = [r for r in added if r[0] == "bob"]
    assert {(q, d) for _, _, q, d, _ in alice} == {("q2", "webhooks/verify"), ("q2", "sdk/pagination")}
    assert [r[1] for r in alice] == [last["alice"] + 1, last["alice"] + 2]
    assert [(r[1], r[2], r[3]) for r in bob] == [(last["bob"] + 1, "q1", "keys/scopes")]
    assert not any(r[4] for r in added)
    with Store(db) as store:
        after = {
            n: store.read(lambda c, n=n: labeller_progress(c, _uid(db, n))["total"]) for n in ("alice", "bob")
        }
        view = store.read(lambda c: pair_view(c, _uid(db, "alice"), last["alice"] + 1))
        following = store.read(lambda c: next_position(c, _uid(db, "alice"), last["alice"]))
    assert after == {"alice": before["alice"] + 2, "bob": before["bob"] + 1}
    assert view["query"] == "python sdk retry on 429"  # q2's text, as the labeller's page shows it
    assert view["doc_id"] in {"webhooks/verify", "sdk/pagination"} and following == last["alice"] + 1
    # the segment is recorded, with the run, the round and the gate's outcome
    seg = _rows(db, "SELECT segment, round, gate, depth, created_by, note, runs FROM segments")
    assert [s[:6] for s in seg] == [(2, 1, "passed", 2, "admin", "a month later")]
    assert [r["name"] for r in json.loads(seg[0][6])] == ["sysgamma"]
    assert _rows(db, "SELECT title FROM docs WHERE doc_id = 'sdk/pagination'") == [
        ("Paging through results",)
    ]
    prov = dict(_rows(db, "SELECT p.doc_id, v.runs FROM pool_provenance v JOIN pairs p USING (pair_id) "
                         "JOIN segment_pairs USING (pair_id)"))  # fmt: skip
    assert json.loads(prov["keys/scopes"]) == {"sysgamma": 1}
    assert _rows(db, "SELECT COUNT(*) FROM run_rows WHERE run = 'sysgamma'") == [(6,)]


def test_the_new_pairs_reach_the_final_export_once_graded(tmp_path: Path) -> None:
    from qrelkit.app.extend import extend_project
    from qrelkit.app.grades import final_grades
    from qrelkit.app.store import Store

    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    run, docs = _files(tmp_path)
    extend_project(db, [run], depth=2, docs=docs)
    grade_pairs(db, "alice", {("q2", "webhooks/verify"): 0, ("q2", "sdk/pagination"): 3})
    grade_pairs(db, "bob", {("q1", "keys/scopes"): 1})
    with Store(db) as store:
        grades, _ = final_grades(store)
    assert grades[("q2", "webhooks/verify")] == 0 and grades[("q2", "sdk/pagination")] == 3
    assert grades[("q1", "keys/scopes")] == 1


def test_extend_is_refused_before_the_gate_and_writes_nothing(tmp_path: Path) -> None:
    from qrelkit.app.extend import extend_project

    db = make_project(tmp_path, labellers="alice,bob")
    run, docs = _files(tmp_path)
    pairs = _rows(db, "SELECT COUNT(*) FROM pairs")
    with pytest.raises(ValidationError, match="still in calibration") as info:
        extend_project(db, [run], depth=2, docs=docs)
    assert "finish the round" in str(info.value)
    assert _rows(db, "SELECT COUNT(*) FROM pairs") == pairs
    assert _rows(db, "SELECT COUNT(*) FROM segments") == [(0,)]


def test_extend_is_refused_after_a_failed_gate_and_allowed_after_an_override(tmp_path: Path) -> None:
    from qrelkit.app.extend import extend_project
    from qrelkit.app.phases import override_gate
    from qrelkit.app.store import Store

    from .helpers import finish_calibration

    db = make_project(tmp_path, labellers="alice,bob")
    assert finish_calibration(db, agree=False).state == "paused"
    run, docs = _files(tmp_path)
    with pytest.raises(ValidationError, match="failed") as info:
        extend_project(db, [run], depth=2, docs=docs)
    assert "judge revise" in str(info.value) and "override" in str(info.value)
    with Store(db) as store:
        override_gate(store, reason="the disagreement is on one ambiguous query", by="admin")
    assert extend_project(db, [run], depth=2, docs=docs)["gate"] == "override"


def test_extend_needs_the_text_of_new_documents_and_refuses_a_pooled_run(tmp_path: Path) -> None:
    from qrelkit.app.extend import extend_project

    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    run, docs = _files(tmp_path)
    with pytest.raises(ValidationError, match="sdk/pagination") as info:
        extend_project(db, [run], depth=2)
    assert "--docs" in str(info.value)
    assert _rows(db, "SELECT COUNT(*) FROM segments") == [(0,)]
    extend_project(db, [run], depth=2, docs=docs)
    with pytest.raises(ValidationError, match="pooled into this project already"):
        extend_project(db, [run], depth=2, docs=docs)
    old = tmp_path / "alpha.run"
    old.write_text((Path(__file__).parent / "fixtures" / "sysalpha.run").read_text())
    with pytest.raises(ValidationError, match="'sysalpha' was pooled"):
        extend_project(db, [old], depth=2)


def test_project_judged_holds_the_pool_and_the_prejudged_pairs_and_reads_only(tmp_path: Path) -> None:
    import hashlib

    from qrelkit.app.extend import judged_of

    db = make_project(tmp_path, labellers="alice,bob")
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    judged = judged_of(db)
    # the fixture pool: 17 pairs, one judged before pooling (q4 keys/rotate)
    assert judged.pairs.height == 17 and judged.queries == {"q1", "q2", "q3", "q4"}
    assert judged.source["kind"] == "project"
    assert judged.runs == {"sysalpha", "sysbeta"}  # the two runs `judge init --runs` stored
    assert judged.source["phase"]["state"] == "calibration" and judged.source["phase"]["round"] == 1
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


def _uid(db: Path, name: str) -> int:
    return int(_rows(db, "SELECT user_id FROM users WHERE name = ?", name)[0][0])


def test_a_project_without_calibration_extends_and_a_query_without_text_needs_queries(tmp_path: Path) -> None:
    """A pool whose q4 pairs were all judged before pooling: the project stores no text for q4, so a new
    run's q4 pair needs --queries. Without calibration, judging is open from the start (agreement not
    measured), and extending is allowed under that outcome."""
    from qrelkit.app.extend import extend_project

    fixtures = Path(__file__).parent / "fixtures"
    pool = tmp_path / "pool.jsonl"
    lines = []
    for line in (fixtures / "pool.jsonl").read_text().splitlines():
        entry = json.loads(line)
        entry["calibration"] = False
        entry["judged"] = entry["judged"] or entry["query_id"] == "q4"
        lines.append(json.dumps(entry))
    pool.write_text("\n".join(lines) + "\n")
    db = make_project(tmp_path, labellers="alice", pool=pool, no_calibration=True)
    assert _rows(db, "SELECT COUNT(*) FROM queries WHERE query_id = 'q4'") == [(0,)]
    run = tmp_path / "new.run"
    run.write_text("q4 Q0 keys/policy 1 3.0 fresh\n")
    with pytest.raises(ValidationError, match="'q4'") as info:
        extend_project(db, [run], depth=1)
    assert "--queries" in str(info.value)
    summary = extend_project(db, [run], depth=1, queries=fixtures / "queries.tsv")
    assert summary["gate"] == "not-measured" and summary["labellers"] == {"alice": 1}
    assert summary["queries_added"] == 1 and summary["docs_added"] == 0
    assert _rows(db, "SELECT text FROM queries WHERE query_id = 'q4'") == [("restore a deleted bucket",)]


def test_the_bundled_example_extended_with_its_fourth_run(tmp_path: Path) -> None:
    """examples/docsearch: three runs pooled at depth 10 with 3 calibration queries, two labellers; the gate
    passes; rerank then adds exactly its top-10 pairs that no other run pooled (counted here from the files)."""
    from qrelkit.app.extend import extend_project
    from qrelkit.app.project import init_project

    from ..conftest import CLI, EXAMPLE

    runs = [EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "dense", "hybrid")]
    out = CLI(
        "pool",
        *runs,
        "--depth",
        10,
        "--calibration",
        3,
        "--labellers",
        "alice,bob",
        "-o",
        tmp_path / "pool.jsonl",
    )
    assert out.exit_code == 0, out.output
    db = tmp_path / "docsearch.db"
    init_project(db, rubric=EXAMPLE / "rubric.toml", pool=tmp_path / "pool.jsonl", docs=EXAMPLE / "docs.jsonl",
                 queries=EXAMPLE / "queries.tsv", seed=0)  # fmt: skip
    pass_gate(db)

    def top(name: str) -> set[tuple[str, str]]:
        per_query: dict[str, list[tuple[float, str]]] = {}
        for line in (EXAMPLE / "runs" / f"{name}.run").read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            per_query.setdefault(q, []).append((float(s), d))
        return {(q, d) for q, rows in per_query.items() for _, d in sorted(rows, reverse=True)[:10]}

    expected = top("rerank") - top("bm25") - top("dense") - top("hybrid")
    summary = extend_project(db, [EXAMPLE / "runs" / "rerank.run"], depth=10, docs=EXAMPLE / "docs.jsonl")
    added = set(_rows(db, "SELECT p.query_id, p.doc_id FROM pairs p JOIN segment_pairs USING (pair_id)"))
    assert added == expected and summary["pairs"] == len(expected) > 0
    assert sum(summary["labellers"].values()) == len(expected)
    # every query's new pairs went whole to one labeller
    owners = _rows(db, "SELECT p.query_id, COUNT(DISTINCT a.user_id) FROM assignments a JOIN pairs p USING (pair_id) "
                       "JOIN segment_pairs USING (pair_id) GROUP BY p.query_id")  # fmt: skip
    assert all(n == 1 for _, n in owners)
    # and each labeller meets one query's new pairs together, after all their other pairs
    for name in ("alice", "bob"):
        seq = _rows(db, "SELECT a.position, p.query_id, s.segment FROM assignments a JOIN users u USING (user_id) "
                        "JOIN pairs p USING (pair_id) LEFT JOIN segment_pairs s USING (pair_id) WHERE u.name = ? "
                        "ORDER BY a.position", name)  # fmt: skip
        segment = [q for _, q, s in seq if s == 2]
        assert [s for _, _, s in seq] == [None] * (len(seq) - len(segment)) + [2] * len(segment)
        changes = sum(1 for a, b in pairwise(segment) if a != b)
        assert changes == len(set(segment)) - 1


def test_a_labeller_meets_the_new_pairs_in_the_app_after_her_others_blind(tmp_path: Path) -> None:
    """Over HTTP (the app under uvicorn on loopback): alice grades every pair she has, then the segment is
    added; /label takes her to the first new pair, q2's, and neither page names the run that brought it."""
    from qrelkit.app.extend import extend_project
    from qrelkit.app.web import create_app

    from .helpers import ThreadServer, sign_in

    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    mine = _rows(db, "SELECT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
                     "USING (pair_id) WHERE u.name = 'alice' AND NOT EXISTS (SELECT 1 FROM grade_events e "
                     "WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id)")  # fmt: skip
    grade_pairs(db, "alice", {(q, d): 1 for q, d in mine})
    run, docs = _files(tmp_path)
    extend_project(db, [run], depth=2, docs=docs)
    last = _rows(
        db, "SELECT MAX(a.position) FROM assignments a JOIN users u USING (user_id) WHERE u.name = 'alice'"
    )
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        client = sign_in(srv.url, db, "alice")
        first = client.get("/label")
        assert first.status_code == 303 and first.headers["location"] == f"/label/{last[0][0] - 1}"
        pages = [client.get(f"/label/{p}").text for p in (last[0][0] - 1, last[0][0])]
        progress = client.get("/api/me/progress").json()
    for page in pages:
        assert "python sdk retry on 429" in page and "sysgamma" not in page
    assert "Paging through results" in "".join(pages)
    assert progress["total"] - progress["done"] == 2
