"""The admin page for daily use, over HTTP on real SQLite: the queue's order and pages, the confirmation
step before a decision, undoing a decision (an event; the merge and the export follow it), the labellers'
pace from their grade events' times, and the token the page polls."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .helpers import ThreadServer, make_project, position_of, sign_in


def grade(db: Path, name: str, q: str, d: str, value: int | None, *, unsure: bool = False) -> None:
    """``name`` grades (q, d) through the library, as the app does."""
    from qrelkit.app.grades import record_grade
    from qrelkit.app.project import find_user, load_rubric_from_store
    from qrelkit.app.store import Store

    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        uid = find_user(store, name)["user_id"]
        pos = position_of(db, name, d, q)
        store.write(lambda c: record_grade(c, uid, pos, value, unsure=unsure, note=None, time_spent_ms=None,
                                           rubric=rubric))  # fmt: skip


def disputes(db: Path) -> None:
    """Five disputed pairs (alice and bob share q1, alice and carol q2), two of them marked unsure, three
    pairs agreed; every calibration pair is graded, so the gate is decided (it fails: judging pauses) and
    the disputed calibration pairs can be decided."""
    grade(db, "alice", "q1", "keys/rotate", 3)
    grade(db, "bob", "q1", "keys/rotate", 0)  # distance 3
    grade(db, "alice", "q1", "keys/policy", 1)
    grade(db, "bob", "q1", "keys/policy", 2)  # distance 1
    grade(db, "alice", "q1", "security/advisory-4", None, unsure=True)
    grade(db, "bob", "q1", "security/advisory-4", 1)  # unsure
    grade(db, "alice", "q2", "sdk/retries", 2)
    grade(db, "carol", "q2", "sdk/retries", 0)  # distance 2
    grade(db, "alice", "q2", "limits/rate", None, unsure=True)
    grade(db, "carol", "q2", "limits/rate", 3)  # unsure
    grade(db, "alice", "q2", "sdk/timeouts", 1)
    grade(db, "carol", "q2", "sdk/timeouts", 1)  # agreed: not in the queue
    grade(db, "alice", "q1", "changelog/2026", 1)
    grade(db, "bob", "q1", "changelog/2026", 1)  # agreed
    grade(db, "alice", "q2", "security/advisory-4", 0)
    grade(db, "carol", "q2", "security/advisory-4", 0)  # agreed


# unsure first (both count as the whole scale, so the ids decide), then the grade distance
ORDER = [("q1", "security/advisory-4"), ("q2", "limits/rate"), ("q1", "keys/rotate"), ("q2", "sdk/retries"),
         ("q1", "keys/policy")]  # fmt: skip


def test_queue_puts_unsure_first_and_pages(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, runs=False)  # without runs the queue is ordered by grade distance
    disputes(db)
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin = sign_in(srv.url, db, "admin")
        whole = admin.get("/admin/api/queue").json()
        assert [(i["query_id"], i["doc_id"]) for i in whole["items"]] == ORDER
        assert (whole["total"], whole["page"], whole["pages"], whole["method"]) == (5, 1, 1, "grade distance")
        pages = [admin.get("/admin/api/queue", params={"per_page": 2, "page": n}).json() for n in (1, 2, 3)]
        assert [[(i["query_id"], i["doc_id"]) for i in p["items"]] for p in pages] == [
            ORDER[:2], ORDER[2:4], ORDER[4:]]  # fmt: skip
        assert [(p["first"], p["last"], p["pages"], p["total"]) for p in pages] == [
            (1, 2, 3, 5), (3, 4, 3, 5), (5, 5, 3, 5)]  # fmt: skip
        past = admin.get("/admin/api/queue", params={"per_page": 2, "page": 99}).json()
        assert past["page"] == 3 and past["items"] == pages[2]["items"]
        assert admin.get("/admin/api/queue", params={"per_page": "x"}).status_code == 400

        page = admin.get("/admin", params={"per_page": 2, "page": 2}).text
        flat = " ".join(page.split())
        assert "5 pairs to decide; showing 3–4 (page 2 of 3)." in flat
        assert (
            "keys/rotate" in page and "keys/policy" not in page.split('id="queue"')[1].split("</section>")[0]
        )
        assert (
            'href="/admin?page=3&amp;per_page=2#queue"' in page
            and 'href="/admin?page=1&amp;per_page=2#queue"' in page
        )
        # every final-grade button names its grade, level and pair for a screen reader
        assert 'aria-label="3: Answers the task: final grade for q1 / keys/rotate"' in page


def test_a_decision_is_confirmed_and_can_be_undone(tmp_path: Path) -> None:
    from qrelkit.app.grades import export_final, final_grades
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, runs=False)
    disputes(db)

    def decisions() -> tuple[int, int]:
        with sqlite3.connect(db) as conn:
            return (conn.execute("SELECT COUNT(*) FROM adjudications").fetchone()[0],
                    conn.execute("SELECT COUNT(*) FROM adjudication_undos").fetchone()[0])  # fmt: skip

    def final() -> dict[tuple[str, str], int]:
        with Store(db) as store:
            return final_grades(store)[0]  # adjudication.merge over every pair, undecided left out

    pair = {"query_id": "q1", "doc_id": "keys/rotate"}
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin = sign_in(srv.url, db, "admin")
        # the queue's buttons lead to a confirmation page; nothing is recorded by it
        ask = admin.get("/admin/adjudicate/confirm", params={**pair, "grade": 2, "page": 1})
        flat = " ".join(ask.text.split())
        assert ask.status_code == 200 and "Record final grade 2 (Gives a step the user needs)?" in flat
        assert "<td>alice</td><td>3</td>" in ask.text and "<td>bob</td><td>0</td>" in ask.text
        assert decisions() == (0, 0) and ("q1", "keys/rotate") not in final()
        assert admin.get("/admin/adjudicate/confirm", params={**pair, "grade": 7}).status_code == 400
        assert (
            admin.get("/admin/adjudicate/confirm", params={**pair, "doc_id": "nope", "grade": 1}).status_code
            == 404
        )

        form = {**pair, "csrf_token": admin.csrf, "page": "1"}
        first = admin.post("/admin/adjudicate", data={**form, "grade": "2"})
        assert first.status_code == 303 and "decided=" in first.headers["location"]
        first_id = int(first.headers["location"].split("decided=")[1].split("#")[0])
        shown = admin.get(first.headers["location"]).text
        assert (
            'id="undo-last"' in shown
            and "Final grade <strong>2</strong> recorded for q1 / keys/rotate" in shown
        )
        assert final()[("q1", "keys/rotate")] == 2
        replacing = " ".join(admin.get("/admin/adjudicate/confirm", params={**pair, "grade": 3}).text.split())
        assert "It replaces the decision 2 by admin at " in replacing
        second = admin.post("/admin/adjudicate", data={**form, "grade": "3"})
        second_id = int(second.headers["location"].split("decided=")[1].split("#")[0])
        assert final()[("q1", "keys/rotate")] == 3

        undo = {"csrf_token": admin.csrf, "page": "1"}
        replaced = admin.post("/admin/undo", data={**undo, "event_id": str(first_id)})
        assert replaced.status_code == 400 and f"replaced by decision {second_id}" in replaced.text
        assert admin.post("/admin/undo", data={**undo, "event_id": "999"}).status_code == 400
        # undoing the current decision brings back the one before it
        assert admin.post("/admin/undo", data={**undo, "event_id": str(second_id)}).status_code == 303
        assert final()[("q1", "keys/rotate")] == 2 and decisions() == (2, 1)
        # undoing that one leaves the pair undecided: back in the queue, out of the export
        assert admin.post("/admin/undo", data={**undo, "event_id": str(first_id)}).status_code == 303
        again = admin.post("/admin/undo", data={**undo, "event_id": str(first_id)})
        assert again.status_code == 400 and "undone already" in again.text
        assert decisions() == (2, 2) and ("q1", "keys/rotate") not in final()
        queue = admin.get("/admin/api/queue").json()
        assert [(i["query_id"], i["doc_id"]) for i in queue["items"]] == ORDER
        manifest = json.loads(
            admin.get("/admin/export/final/manifest", params={"unresolved": "leave-out"}).text
        )
        assert (
            manifest["adjudication"]["adjudicated"] == 0
            and manifest["adjudication"]["unresolved_left_out"] == 5
        )
        assert "keys/rotate" not in admin.get("/admin/export/final", params={"unresolved": "leave-out"}).text
        history = admin.get("/admin/pair", params=pair).text
        assert history.count("(undone by admin at ") == 2
        recent = admin.get("/admin").text
        assert recent.count("undone by admin") == 2

        # decided once more: the export has it again
        admin.post("/admin/adjudicate", data={**form, "grade": "1"})
        assert (
            "q1 0 keys/rotate 1\n"
            in admin.get("/admin/export/final", params={"unresolved": "leave-out"}).text
        )

    with Store(db) as store:  # the command line's export reads the same events
        out = export_final(
            store, load_rubric_from_store(store), tmp_path / "final.qrels", undecided="leave-out"
        )
        assert (
            out["counts"]["adjudicated"] == 1
            and "q1 0 keys/rotate 1\n" in (tmp_path / "final.qrels").read_text()
        )
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM adjudication_undos")


def test_pace_from_the_grade_events_times() -> None:
    from qrelkit.app.pace import BREAK_SECONDS, pace

    assert BREAK_SECONDS == 600
    times = ["2026-03-02T09:00:00.000Z", "2026-03-02T09:00:30.000Z", "2026-03-02T09:01:30.000Z",
             "2026-03-02T09:20:00.000Z",  # 18 min 30 s later: a break
             "2026-03-02T09:20:45.000Z", "2026-03-02T09:21:00.000Z",
             "2026-03-02T09:31:00.000Z"]  # exactly 10 minutes later: still work  # fmt: skip
    p = pace(times)
    # timed gaps 30, 60, 45, 15, 600 s: 750 s of work for 5 pairs
    assert (p.events, p.timed, p.sittings, p.working_seconds) == (7, 5, 2, 750.0)
    assert p.per_hour == pytest.approx(5 * 3600 / 750)  # 24 pairs per hour
    assert p.median_seconds == 45.0
    even = pace(times[:6])  # gaps 30, 60, 45, 15: the median is the mean of 30 and 45
    assert (even.median_seconds, even.per_hour) == (37.5, pytest.approx(4 * 3600 / 150))
    assert pace([]).per_hour is None and pace(times[:1]).median_seconds is None
    assert pace(times[2:4]).per_hour is None  # one gap, and it was a break


def test_pace_on_the_admin_page_and_api(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, runs=False)
    pairs = [("q1", "keys/rotate"), ("q1", "keys/policy"), ("q1", "security/advisory-4")]
    stamps = ["2026-03-02T09:00:00.000Z", "2026-03-02T09:01:12.000Z", "2026-03-02T09:02:00.000Z"]
    with sqlite3.connect(db) as conn:  # events at set times, as the writer records them
        (uid,) = conn.execute("SELECT user_id FROM users WHERE name = 'bob'").fetchone()
        (rubric,) = conn.execute("SELECT value FROM meta WHERE key = 'rubric_hash'").fetchone()
        for (q, d), at in zip(pairs, stamps, strict=True):
            (pid,) = conn.execute(
                "SELECT pair_id FROM pairs WHERE query_id = ? AND doc_id = ?", (q, d)
            ).fetchone()
            conn.execute("INSERT INTO grade_events (user_id, pair_id, grade, unsure, rubric_hash, created_at) "
                         "VALUES (?, ?, 1, 0, ?, ?)", (uid, pid, rubric, at))  # fmt: skip
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin = sign_in(srv.url, db, "admin")
        got = admin.get("/admin/api/pace").json()["labellers"]
        # gaps 72 s and 48 s: 2 pairs in 120 s = 60 per hour; median (72 + 48) / 2 = 60 s
        assert (
            got["bob"]["pairs_per_hour"] == pytest.approx(60.0)
            and got["bob"]["median_seconds_per_pair"] == 60.0
        )
        assert got["alice"]["pairs_per_hour"] is None and got["alice"]["events"] == 0
        page = admin.get("/admin").text
        row = page.split('id="labeller-bob"')[1].split("</tr>")[0]
        assert '<td class="per-hour">60.0</td>' in row and '<td class="median">1 min</td>' in row

        before = admin.get("/admin/api/changes").json()["token"]
        assert admin.get("/admin/api/changes").json()["token"] == before
        grade(db, "alice", "q1", "keys/rotate", 2)
        assert admin.get("/admin/api/changes").json()["token"] != before


def test_a_database_of_schema_3_gains_the_undo_and_keeps_its_decisions(tmp_path: Path) -> None:
    from qrelkit.app.decisions import undo_adjudication
    from qrelkit.app.grades import adjudicate, final_grades
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import SCHEMA_VERSION, Store

    db = make_project(tmp_path, runs=False)
    disputes(db)
    with Store(db) as store:
        adjudicate(store, load_rubric_from_store(store), "q1", "keys/rotate", 2, by="admin", note=None)
    with sqlite3.connect(db) as conn:  # back to schema 3, as the previous qrelkit left it
        conn.executescript(
            "DROP TABLE adjudication_undos; DROP VIEW current_adjudications; "
            "CREATE VIEW current_adjudications AS SELECT a.* FROM adjudications AS a JOIN (SELECT MAX(event_id) "
            "AS event_id FROM adjudications GROUP BY pair_id) AS last USING (event_id); "
            "DROP TABLE model_labellers; DROP TABLE model_grades; DROP TABLE model_answers; "
            "DROP TABLE model_attempts; DROP TABLE model_gate_events; DROP TABLE model_audit; DROP TABLE probe_pairs; "
            "DELETE FROM meta WHERE key = 'manifest_key'; "
            "DELETE FROM schema_migrations WHERE version >= 4; PRAGMA user_version = 3;"
        )
    with Store(db) as store:
        assert store.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION
        assert final_grades(store)[0][("q1", "keys/rotate")] == 2
        assert store.read(lambda c: c.execute("SELECT grade FROM current_adjudications").fetchone()[0]) == 2
        undo_adjudication(store, 1, by="admin")
        assert ("q1", "keys/rotate") not in final_grades(store)[0]
        assert (
            store.read(lambda c: c.execute("SELECT COUNT(*) FROM current_adjudications").fetchone()[0]) == 0
        )
