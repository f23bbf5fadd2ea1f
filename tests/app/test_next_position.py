"""The next pair a grade sends the labeller to: the first open position after it not graded under the
current rubric, else the first such position anywhere, else none (``grades.next_position``, as a grade
returns it in ``next``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from qrelkit.app.grades import next_position, record_grade
from qrelkit.app.project import find_user, load_rubric_from_store
from qrelkit.app.store import Store

from .helpers import FIXTURES


def _project(tmp: Path) -> Path:
    """One labeller, two queries of four documents each, judging open from the start."""
    from qrelkit.app.project import init_project

    docs = [f"d{i}" for i in range(4)]
    (tmp / "docs.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "title": d, "text": d}) + "\n" for d in docs)
    )
    (tmp / "queries.tsv").write_text("q1\tfirst\nq2\tsecond\n")
    (tmp / "pool.jsonl").write_text(
        "".join(
            json.dumps(
                {"query_id": q, "doc_id": d, "runs": {"r": r + 1}, "best_rank": r + 1, "judged": False}
            )
            + "\n"
            for q in ("q1", "q2")
            for r, d in enumerate(docs)
        )
    )
    db = tmp / "project.db"
    init_project(db, rubric=FIXTURES / "rubric.toml", pool=tmp / "pool.jsonl", docs=tmp / "docs.jsonl",
                 queries=tmp / "queries.tsv", labellers=["alice"], seed=3, no_calibration=True)  # fmt: skip
    return db


def _positions(db: Path, name: str) -> list[int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT position FROM assignments JOIN users USING (user_id) WHERE name = ? ORDER BY position",
            (name,),
        ).fetchall()
    return [int(r[0]) for r in rows]


def _grade(store: Store, uid: int, position: int) -> Any:
    rubric = load_rubric_from_store(store)
    return store.write(
        lambda c: record_grade(
            c, uid, position, 1, unsure=False, note=None, time_spent_ms=None, rubric=rubric
        )
    )["next"]


def test_the_next_position_after_a_grade_wraps_to_the_first_ungraded_and_ends_with_none(
    tmp_path: Path,
) -> None:
    db = _project(tmp_path)
    positions = _positions(db, "alice")
    assert positions == list(range(8))
    last = positions[-1]
    with Store(db) as store:
        uid = find_user(store, "alice")["user_id"]
        assert _grade(store, uid, 0) == 1
        assert _grade(store, uid, 2) == 3  # the next after the one graded, not the first ungraded (1)
        for p in range(3, last + 1):
            assert _grade(store, uid, p) == (p + 1 if p < last else 1)  # after the last: back to 1
        assert store.read(lambda c: next_position(c, uid, last)) == 1
        assert store.read(lambda c: next_position(c, uid, 1)) == 1  # only itself is left: itself
        assert store.read(lambda c: next_position(c, uid, 0)) == 1
        assert store.read(lambda c: next_position(c, uid)) == 1
        assert _grade(store, uid, 1) is None  # every pair graded
        assert _grade(store, uid, last) is None  # a re-grade: still none
        assert store.read(lambda c: next_position(c, uid, 2)) is None
