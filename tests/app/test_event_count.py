"""Each labeller's own count of events, carried by the writer instead of counted at every grade.

The count a grade returns (``labeller_event``, what the labeller is shown) must equal the number of that
labeller's rows in ``grade_events`` once it is committed, whatever happened in between: another
labeller's grades, a grade recorded by another connection to the same file, a job rolled back.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from qrelkit.app.grades import record_grade
from qrelkit.app.project import find_user, load_rubric_from_store
from qrelkit.app.store import Store


def rows_of(db: Path, name: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM grade_events JOIN users USING (user_id) WHERE name = ?", (name,)
            ).fetchone()[0]
        )


def grader(store: Store) -> Any:
    rubric = load_rubric_from_store(store)

    def grade(name: str, position: int, value: int = 2) -> int:
        uid = find_user(store, name)["user_id"]

        def job(c: sqlite3.Connection) -> dict[str, Any]:
            return record_grade(
                c, uid, position, value, unsure=False, note=None, time_spent_ms=None, rubric=rubric
            )

        saved = store.write(job)
        return int(saved["labeller_event"])

    return grade


def test_counts_are_each_labellers_own(project: Path) -> None:
    with Store(project) as store:
        grade = grader(store)
        assert [grade("alice", 0), grade("alice", 1), grade("bob", 0), grade("alice", 0), grade("bob", 1)] == [
            1, 2, 1, 3, 2,
        ]  # fmt: skip
    assert (rows_of(project, "alice"), rows_of(project, "bob")) == (3, 2)


def test_a_grade_committed_by_another_connection_is_counted(project: Path) -> None:
    with Store(project) as first, Store(project) as second:
        grade, other = grader(first), grader(second)
        assert [grade("alice", 0), grade("alice", 1)] == [1, 2]
        assert other("alice", 2) == 3  # another writer on the same file
        assert grade("alice", 3) == 4
    assert rows_of(project, "alice") == 4


def test_a_rolled_back_grade_is_not_counted(project: Path) -> None:
    with Store(project) as store:
        grade = grader(store)
        rubric = load_rubric_from_store(store)
        uid = find_user(store, "alice")["user_id"]
        assert grade("alice", 0) == 1

        def grade_then_fail(conn: sqlite3.Connection) -> None:
            record_grade(conn, uid, 1, 3, unsure=False, note=None, time_spent_ms=None, rubric=rubric)
            raise RuntimeError("after the insert")

        with pytest.raises(RuntimeError, match="after the insert"):
            store.write(grade_then_fail)
        assert grade("alice", 1) == 2
    assert rows_of(project, "alice") == 2


def test_a_plain_connection_counts_the_rows(project: Path) -> None:
    with Store(project) as store:
        grader(store)("alice", 0)
        rubric = load_rubric_from_store(store)
        uid = find_user(store, "alice")["user_id"]
    with sqlite3.connect(project, isolation_level=None) as conn:
        saved = record_grade(conn, uid, 1, 1, unsure=False, note=None, time_spent_ms=None, rubric=rubric)
    assert saved["labeller_event"] == 2 == rows_of(project, "alice")
