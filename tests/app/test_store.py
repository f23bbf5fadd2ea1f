"""The project store: migrations, durability settings, one writer, append-only events, project creation."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from qrelkit.app import grades as g
from qrelkit.app.project import init_project, load_rubric_from_store, read_pool
from qrelkit.app.store import SCHEMA_VERSION, Store, StoreError
from qrelkit.errors import InputFormatError, QrelkitError, ValidationError

from .helpers import FIXTURES, make_project


def test_new_store_is_migrated_in_wal_mode_with_full_sync(project: Path) -> None:
    with Store(project) as store:
        assert store.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION
        assert store.read(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"
        assert store.write(lambda c: c.execute("PRAGMA synchronous").fetchone()[0]) == 2  # FULL
        applied = store.read(lambda c: c.execute("SELECT version, name FROM schema_migrations").fetchall())
        assert [tuple(r) for r in applied] == [
            (1, "initial schema"),
            (2, "calibration rounds, rubric versions and the gate"),
            (3, "server-side sessions"),
            (4, "undoing an adjudication is an event"),
            (5, "model labellers"),
            (6, "the gate's not measurable outcome and reassigned calibration pairs"),
            (7, "the project's key for signing manifests"),
            (8, "segments: pairs added after the pool closed"),
            (9, "model labellers' roles: predictor, retired"),
            (10, "model labellers' grade probabilities"),
            (11, "the live queue's designs: a judging budget spent by a strategy"),
            (12, "the live queue's focused rounds"),
        ]
        assert store.integrity_check() == "ok"


def test_version_5_gate_events_survive_the_rebuild_of_version_6(tmp_path: Path) -> None:
    from qrelkit.app.store import MIGRATIONS, _split_sql

    db = make_project(tmp_path, labellers="alice,bob")
    with sqlite3.connect(db) as conn:  # the same project as version 5 wrote it: the v2 table, one event
        conn.execute("PRAGMA foreign_keys = OFF")
        rows = conn.execute("SELECT * FROM gate_events").fetchall()
        conn.execute("DROP TABLE gate_events")
        v2 = _split_sql(MIGRATIONS[1][2])
        for statement in v2:
            if "gate_events" in statement and not statement.startswith("INSERT"):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO gate_events (round, outcome, reason, created_at) VALUES (1, 'failed', 'x', 't')"
        )
        conn.execute("DELETE FROM schema_migrations WHERE version >= 6")
        conn.execute("PRAGMA user_version = 5")
    assert rows == []
    with Store(db) as store:
        events = store.read(
            lambda c: [tuple(r) for r in c.execute("SELECT event_id, outcome, reason FROM gate_events")]
        )
        assert events == [(1, "failed", "x")]
        store.write(
            lambda c: c.execute(
                "INSERT INTO gate_events (round, outcome, reason, created_at) VALUES (1, 'unmeasurable', 'y', 't')"
            )
        )
        assert store.read(lambda c: c.execute("SELECT MAX(event_id) FROM gate_events").fetchone()[0]) == 2
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.write(lambda c: c.execute("DELETE FROM gate_events"))


def test_a_newer_schema_is_refused(project: Path) -> None:
    with sqlite3.connect(project) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this qrelkit"):
        Store(project)


def test_a_newer_schema_is_refused_by_a_command_that_only_reads(project: Path, cli) -> None:
    with sqlite3.connect(project) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = project.read_bytes()
    with pytest.raises(StoreError, match="newer than this qrelkit"):
        Store(project, read_only=True)
    for command in (("judge", "status", project), ("judge", "model", "status", project, "judge")):
        result = cli(*command)
        assert result.exit_code == 1 and "Traceback" not in result.output
        (line,) = result.stderr.strip().splitlines()
        assert f"schema version {SCHEMA_VERSION + 1}, newer than this qrelkit knows" in line
        assert "upgrade qrelkit" in line
    assert project.read_bytes() == before


def test_missing_and_existing_files(tmp_path: Path, project: Path) -> None:
    with pytest.raises(StoreError, match="judge init"):
        Store(tmp_path / "nope.db")
    with pytest.raises(StoreError, match="already exists"):
        Store(project, create=True)


def test_grade_events_are_append_only_and_the_current_grade_is_the_latest(project: Path) -> None:
    with Store(project) as store:
        rubric = load_rubric_from_store(store)
        alice = store.read(lambda c: c.execute("SELECT user_id FROM users WHERE name='alice'").fetchone()[0])
        for grade in (1, 3, None):
            store.write(
                lambda c, grade=grade: g.record_grade(c, alice, 0, grade, unsure=grade is None, note="n",
                                                      time_spent_ms=5, rubric=rubric)
            )  # fmt: skip
        store.write(
            lambda c: g.record_grade(
                c, alice, 0, 2, unsure=False, note=None, time_spent_ms=None, rubric=rubric
            )
        )
        history = store.read(
            lambda c: c.execute("SELECT grade, unsure FROM grade_events ORDER BY event_id").fetchall()
        )
        assert [tuple(r) for r in history] == [(1, 0), (3, 0), (None, 1), (2, 0)]
        assert store.read(lambda c: g.pair_view(c, alice, 0))["grade"] == 2
        for sql in ("UPDATE grade_events SET grade = 0", "DELETE FROM grade_events"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                store.write(lambda c, sql=sql: c.execute(sql))
        with pytest.raises(g.NotAssigned):
            store.write(lambda c: g.record_grade(c, alice, 99, 1, unsure=False, note=None, time_spent_ms=None,
                                                 rubric=rubric))  # fmt: skip
        with pytest.raises(ValidationError, match="give a grade"):  # a grade or the unsure flag
            store.write(lambda c: g.record_grade(c, alice, 1, None, unsure=False, note=None, time_spent_ms=None,
                                                 rubric=rubric))  # fmt: skip
        with pytest.raises(
            ValidationError, match="not on the scale"
        ):  # the library checks, not only the page
            store.write(lambda c: g.record_grade(c, alice, 1, 7, unsure=False, note=None, time_spent_ms=None,
                                                 rubric=rubric))  # fmt: skip
        assert store.read(lambda c: c.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]) == 4


def test_a_failing_job_rolls_back_alone_within_a_group_commit(project: Path) -> None:
    with Store(project) as store:
        started = threading.Event()

        def slow(c: sqlite3.Connection) -> None:
            started.set()
            time.sleep(0.2)  # the jobs below queue up meanwhile and commit together

        def insert(value: str) -> object:
            return lambda c: c.execute("INSERT INTO meta VALUES (?, ?)", (value, value))

        def broken(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO meta VALUES ('broken', 'x')")
            raise RuntimeError("job failed")

        first = store.submit(slow)
        started.wait()
        futures = [store.submit(insert("a")), store.submit(broken), store.submit(insert("b"))]
        first.result()
        futures[0].result()
        futures[2].result()
        with pytest.raises(RuntimeError, match="job failed"):
            futures[1].result()
        keys = store.read(lambda c: {r[0] for r in c.execute("SELECT key FROM meta")})
        assert {"a", "b"} <= keys and "broken" not in keys


def test_assignment_calibration_to_labeller_pairs_in_turn_rest_by_whole_queries(project: Path) -> None:
    with sqlite3.connect(project) as conn:
        rows = conn.execute(
            "SELECT u.name, p.query_id, p.calibration, a.position FROM assignments a JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) ORDER BY u.name, a.position"
        ).fetchall()
    by_name: dict[str, list[tuple[str, int]]] = {}
    for name, q, cal, _ in rows:
        by_name.setdefault(name, []).append((q, cal))
    # pool.plan_assignments: calibration queries take the pairs of labellers in turn, (alice, bob) for
    # q1, then (alice, carol) for q2, as `qrelkit pool --labellers` plans them
    calibration = {name: {q for q, cal in pairs if cal} for name, pairs in by_name.items()}
    assert calibration == {"alice": {"q1", "q2"}, "bob": {"q1"}, "carol": {"q2"}}
    # Calibration first, then the rest; whole queries: each non-calibration query has one labeller.
    for pairs in by_name.values():
        flags = [cal for _, cal in pairs]
        assert flags == sorted(flags, reverse=True)
    owners = {}
    for name, pairs in by_name.items():
        for q, cal in pairs:
            if not cal:
                owners.setdefault(q, set()).add(name)
    assert all(len(v) == 1 for v in owners.values()) and set(owners) == {"q3", "q4"}


def test_order_is_deterministic_per_labeller_and_differs_between_them(tmp_path: Path) -> None:
    def order(db: Path, name: str) -> list[int]:
        with sqlite3.connect(db) as conn:
            return [r[0] for r in conn.execute(
                "SELECT pair_id FROM assignments JOIN users USING (user_id) WHERE name = ? ORDER BY position", (name,)
            )]  # fmt: skip

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # two labellers: both judge every calibration pair, each in their own order
    one, two = (
        make_project(tmp_path / "a", labellers="alice,bob"),
        make_project(tmp_path / "b", labellers="alice,bob"),
    )
    assert order(one, "alice") == order(two, "alice")
    assert order(one, "alice")[:8] != order(one, "bob")[:8]
    assert sorted(order(one, "alice")[:8]) == sorted(order(one, "bob")[:8])


def test_prejudged_pairs_are_left_out(project: Path) -> None:
    with sqlite3.connect(project) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pairs").fetchone()[0] == 16
        assert conn.execute("SELECT * FROM prejudged").fetchall() == [("q4", "keys/rotate")]


def test_the_pools_own_plan_is_used(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (FIXTURES / "pool.jsonl").read_text().splitlines()]
    for i, line in enumerate(lines):
        line["labellers"] = ["dora", "emil"] if line["calibration"] else [["dora"], ["emil"]][i % 2]
    pool = tmp_path / "planned.jsonl"
    pool.write_text("".join(json.dumps(x) + "\n" for x in lines))
    db = make_project(tmp_path, labellers="", pool=pool)
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute(
            "SELECT name, COUNT(*) FROM assignments JOIN users USING (user_id) GROUP BY name"
        ).fetchall())  # fmt: skip
    assert counts == {"dora": 12, "emil": 12}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "pool.jsonl:2: line is not valid JSON"),
        ('{"query_id": "q1"}', "field 'doc_id' is missing"),
        ('{"query_id": "q1", "doc_id": "x", "rnus": {}}', "unknown field 'rnus' (did you mean 'runs'?)"),
        ('{"query_id": "q1", "doc_id": "x", "judged": "no"}', "field 'judged' must be true or false"),
        ('{"query_id": "q1", "doc_id": "keys/rotate"}', "listed twice"),
    ],
)
def test_bad_pool_lines_are_reported_with_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"query_id": "q1", "doc_id": "keys/rotate"}\n' + line + "\n")
    with pytest.raises(
        InputFormatError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")
    ):
        read_pool(pool)


def test_inputs_that_do_not_match_leave_no_database(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"query_id": "q1", "doc_id": "keys/rotat"}\n')
    db = tmp_path / "p.db"
    with pytest.raises(ValidationError, match="did you mean 'keys/rotate'"):
        make_project(tmp_path, pool=pool)
    assert not db.exists()
    with pytest.raises(QrelkitError, match="calibration needs two labellers"):
        init_project(db, rubric=FIXTURES / "rubric.toml", pool=FIXTURES / "pool.jsonl",
                     docs=FIXTURES / "docs.jsonl", queries=FIXTURES / "queries.tsv", labellers=["solo"])  # fmt: skip
    assert not db.exists()
    with pytest.raises(QrelkitError, match="--calibration 1 conflicts with the pool, which marks 2"):
        init_project(db, rubric=FIXTURES / "rubric.toml", pool=FIXTURES / "pool.jsonl",
                     docs=FIXTURES / "docs.jsonl", queries=FIXTURES / "queries.tsv", labellers=["a", "b"],
                     calibration=1)  # fmt: skip
    assert not db.exists()


def test_calibration_sample_is_chosen_when_the_pool_marks_none(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (FIXTURES / "pool.jsonl").read_text().splitlines()]
    pool = tmp_path / "unmarked.jsonl"
    pool.write_text(
        "".join(json.dumps({k: v for k, v in x.items() if k != "calibration"}) + "\n" for x in lines)
    )
    db = make_project(tmp_path, pool=pool, calibration=3)
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT COUNT(DISTINCT query_id) FROM pairs WHERE calibration = 1").fetchone()[0]
            == 3
        )


def test_final_grades_agreed_single_adjudicated_unresolved(project: Path) -> None:
    with Store(project) as store:
        rubric = load_rubric_from_store(store)
        ids = dict(store.read(lambda c: c.execute("SELECT name, user_id FROM users").fetchall()))

        def grade_pair(name: str, query: str, doc: str, grade: int | None) -> None:
            pos = store.read(
                lambda c: c.execute(
                    "SELECT position FROM assignments a JOIN pairs p USING (pair_id) "
                    "WHERE a.user_id = ? AND p.query_id = ? AND p.doc_id = ?",
                    (ids[name], query, doc),
                ).fetchone()[0]
            )
            store.write(lambda c: g.record_grade(c, ids[name], pos, grade, unsure=grade is None, note=None,
                                                 time_spent_ms=None, rubric=rubric))  # fmt: skip

        grade_pair("alice", "q1", "keys/rotate", 3)
        grade_pair("bob", "q1", "keys/rotate", 3)  # agreed
        grade_pair("alice", "q1", "keys/policy", 1)
        grade_pair("bob", "q1", "keys/policy", 3)  # disagreement, then adjudicated
        grade_pair("alice", "q2", "sdk/retries", 3)
        grade_pair("carol", "q2", "sdk/retries", None)  # unsure: unresolved
        grade_pair("alice", "q2", "limits/rate", 3)  # carol has not graded it yet: the round still measures
        queue = g.adjudication_queue(store, rubric)
        assert {(i["query_id"], i["doc_id"]) for i in queue["items"]} == {
            ("q1", "keys/policy"),
            ("q2", "sdk/retries"),
        }
        assert (
            queue["method"] == "leverage"
        )  # the project has runs, and qrelkit.judgments.leverage ranks the pairs
        with pytest.raises(
            ValidationError, match="whose gate is not decided yet"
        ):  # a calibration pair waits
            g.adjudicate(store, rubric, "q1", "keys/policy", 2, by="admin", note="gives the policy only")
        # the rest of round 1 graded alike: its gate is decided (one split and one unsure: it fails) ...
        for name, query, doc in (("alice", "q1", "security/advisory-4"), ("bob", "q1", "security/advisory-4"),
                                 ("alice", "q1", "changelog/2026"), ("bob", "q1", "changelog/2026"),
                                 ("alice", "q2", "sdk/timeouts"), ("carol", "q2", "sdk/timeouts"),
                                 ("alice", "q2", "security/advisory-4"), ("carol", "q2", "security/advisory-4"),
                                 ("carol", "q2", "limits/rate")):  # fmt: skip
            grade_pair(name, query, doc, 1 if doc != "limits/rate" else 3)
        from qrelkit.app.phases import ensure_gate, override_gate

        assert ensure_gate(store).state == "paused"
        override_gate(store, reason="pilot", by="admin")  # ... and judging opens, so that one labeller
        grade_pair("bob", "q3", "webhooks/verify", 2)  # grades a pair nobody else is given
        g.adjudicate(store, rubric, "q1", "keys/policy", 2, by="admin", note="gives the policy only")
        final, counts = g.final_grades(store)
        agreed = {("q1", "keys/rotate"): 3, ("q1", "security/advisory-4"): 1, ("q1", "changelog/2026"): 1,
                  ("q2", "sdk/timeouts"): 1, ("q2", "security/advisory-4"): 1, ("q2", "limits/rate"): 3}  # fmt: skip
        assert final == {**agreed, ("q1", "keys/policy"): 2, ("q3", "webhooks/verify"): 2}
        assert counts == {"pairs": 16, "adjudicated": 1, "agreed": 6, "single_labeller": 1,
                          "unresolved_left_out": 1, "ungraded_left_out": 7, "overridden": 0, "defaulted": 0,
                          "total": 8, "undecided_policy": "leave-out", "override_allowed": True,
                          "judged_before_pooling_left_out": 1}  # fmt: skip
        assert [(i["query_id"], i["doc_id"]) for i in g.adjudication_queue(store, rubric)["items"]] == [
            ("q2", "sdk/retries")
        ]
        with pytest.raises(ValidationError, match="not on the scale"):
            g.adjudicate(store, rubric, "q1", "keys/policy", 9, by=None, note=None)


def test_a_new_migration_is_applied_once_and_recorded(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qrelkit.app import store as store_module

    extra = (SCHEMA_VERSION + 1, "add a column", "ALTER TABLE users ADD COLUMN email TEXT;")
    monkeypatch.setattr(store_module, "MIGRATIONS", (*store_module.MIGRATIONS, extra))
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):  # opening again does not re-apply it
        with Store(project) as store:
            assert store.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION + 1
            names = store.read(lambda c: [r[1] for r in c.execute("PRAGMA table_info(users)")])
            assert "email" in names
            applied = store.read(lambda c: [r[0] for r in c.execute("SELECT version FROM schema_migrations")])
            assert applied == [*range(1, SCHEMA_VERSION + 1), SCHEMA_VERSION + 1]


def test_a_failing_migration_leaves_the_file_as_it_was(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qrelkit.app import store as store_module

    broken = (SCHEMA_VERSION + 1, "broken", "ALTER TABLE users ADD COLUMN email TEXT; SELECT * FROM nowhere;")
    monkeypatch.setattr(store_module, "MIGRATIONS", (*store_module.MIGRATIONS, broken))
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        Store(project)
    with sqlite3.connect(project) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "email" not in [r[1] for r in conn.execute("PRAGMA table_info(users)")]
