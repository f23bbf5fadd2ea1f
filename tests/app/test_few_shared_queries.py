"""Two labellers who share fewer than five calibration queries are warned about wherever their gate is
shown: `judge kappa` (text and JSON) and the admin page, on a real project."""

from __future__ import annotations

import json
from pathlib import Path

from qrelkit.judgments.adjudication import MIN_SHARED_QUERIES, few_shared_queries

from ..conftest import CLI
from .helpers import ThreadServer, calibration_pairs, finish_calibration, make_project, sign_in


def test_the_threshold() -> None:
    assert MIN_SHARED_QUERIES == 5  # docs/judging.md states it
    assert few_shared_queries(("a", "b"), 5) is None and few_shared_queries(("a", "b"), 30) is None
    assert few_shared_queries(("a", "b"), 0) is None  # nothing shared: the gate is not measurable instead
    assert few_shared_queries(("a", "b"), 1).startswith(
        "a and b share only 1 calibration query (fewer than 5)"
    )
    assert few_shared_queries(("a", "b"), 4).startswith(
        "a and b share only 4 calibration queries (fewer than 5)"
    )


def test_two_shared_queries_are_warned_about_in_judge_kappa_and_on_the_admin_page(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    pairs = calibration_pairs(db)
    assert {q for q, _ in pairs["alice"]} == {q for q, _ in pairs["bob"]} == {"q1", "q2"}  # 2 queries
    assert finish_calibration(db, agree=True).state == "open"  # the gate passed: the warning stays
    kappa = CLI("judge", "kappa", db)
    assert kappa.exit_code == 0, kappa.output
    assert "  warning: alice and bob share only 2 calibration queries (fewer than 5)" in kappa.stdout
    as_json = json.loads(CLI("judge", "kappa", db, "--json").stdout)
    assert as_json["calibration"][0]["warning"].startswith("alice and bob share only 2 calibration queries")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin = sign_in(srv.url, db, "admin")
        page = admin.get("/admin").text
        assert 'id="few-queries-alice-bob"' in page and "share only 2 calibration queries" in page
        api = admin.get("/admin/api/kappa").json()
        assert "share only 2" in json.dumps(api)


def test_each_pair_of_three_labellers_is_counted_on_its_own_queries(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob,carol")  # alice & bob share q1, alice & carol q2
    kappa = CLI("judge", "kappa", db)  # waiting: the warning shows before anyone grades
    assert "warning: alice and bob share only 1 calibration query" in kappa.stdout
    assert "warning: alice and carol share only 1 calibration query" in kappa.stdout
