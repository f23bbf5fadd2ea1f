"""qrelkit.app.labeller_pairs.calibration_qrels: two labellers' calibration grades of a project as Qrels."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.app.labeller_pairs import calibration_qrels
from qrelkit.errors import ValidationError

from .helpers import calibration_pairs, grade_pairs, make_project


def test_the_two_labellers_calibration_grades_sorted_and_named_by_the_project(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    pairs = calibration_pairs(db)
    shared = sorted(set(pairs["alice"]) & set(pairs["bob"]))
    assert shared
    given = {p: i % 4 for i, p in enumerate(reversed(shared))}  # graded in reverse order
    grade_pairs(db, "bob", given)
    grade_pairs(db, "alice", {p: 3 - g for p, g in given.items()})
    alice, bob = calibration_qrels(db)
    assert (alice.name, bob.name) == (f"{db}:alice", f"{db}:bob")
    assert bob.frame.select("query_id", "doc_id", "grade").rows() == [(q, d, given[q, d]) for q, d in shared]
    assert alice.frame.select("query_id", "doc_id", "grade").rows() == [
        (q, d, 3 - given[q, d]) for q, d in shared
    ]
    named = calibration_qrels(db, ["bob", "alice"])
    assert [q.name for q in named] == [f"{db}:bob", f"{db}:alice"]


def test_no_two_labellers_to_pick_is_an_error_naming_those_with_grades(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    pairs = calibration_pairs(db)
    grade_pairs(db, "alice", {p: 1 for p in pairs["alice"]})
    with pytest.raises(
        ValidationError, match=r"calibration grades from 1 labeller\(s\) \(alice\); cannot pick two"
    ):
        calibration_qrels(db)
    grade_pairs(db, "bob", {p: 1 for p in pairs["bob"]})
    with pytest.raises(ValidationError, match="cannot pick two"):
        calibration_qrels(db, ["alice", "alice"])  # one labeller twice is not two
    with pytest.raises(ValidationError, match="cannot pick two"):
        calibration_qrels(db, ["alice", "carol"])
