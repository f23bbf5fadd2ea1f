"""The admin page's rounds card in chromium: the rounds table fits its box at 1280 px with a long outcome
(the Outcome column is not clipped), a revision whose rubric fails shows its errors beside the form with
the pasted text kept, and a calibration pair's final grade waits for the gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import FIXTURES, ThreadServer, finish_calibration, make_project, position_of
from .test_admin_daily import grade
from .test_browser import browser, sign_in  # noqa: F401  (the chromium fixture)

REASON = (
    "the labellers read grade 1 differently on the security advisories; both were briefed again on 3 March "
    "and the advisories were checked by hand by the security team before full judging"
)

# The rounds table against the box that holds it, and the Outcome cells against the window.
FIT_JS = """
() => {
  const table = document.getElementById("history");
  const box = table.closest(".table-wrap");
  const cells = [...table.querySelectorAll("td.outcome, th:last-child")].map(c => c.getBoundingClientRect().right);
  return {table: table.scrollWidth, box: box.clientWidth, boxScroll: box.scrollWidth,
          right: Math.max(...cells), window: document.documentElement.clientWidth};
}
"""


def test_the_rounds_table_fits_at_1280_px_with_a_long_outcome(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    from qrelkit.app.phases import override_gate
    from qrelkit.app.store import Store
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob,carol")
    assert finish_calibration(db, agree=False).state == "paused"
    with Store(db) as store:
        override_gate(store, reason=REASON, by="admin")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as srv:
        page = browser.new_page()
        page.set_viewport_size({"width": 1280, "height": 820})
        sign_in(page, srv.url, db, "admin")
        page.goto(f"{srv.url}/admin")
        assert REASON in page.inner_text("#round-1 .outcome")
        fit = page.evaluate(FIT_JS)
        assert fit["table"] <= fit["box"] and fit["boxScroll"] <= fit["box"], fit  # nothing to scroll to
        assert fit["right"] <= fit["window"], fit


def test_a_failed_revision_shows_its_errors_beside_the_form_and_keeps_the_text(
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    assert finish_calibration(db, agree=False).state == "paused"
    lint_fails = (FIXTURES.parents[1] / "fixtures" / "rubrics" / "best-answer.toml").read_text()
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0.3)) as srv:
        page = browser.new_page()
        sign_in(page, srv.url, db, "admin")
        page.goto(f"{srv.url}/admin")
        page.fill("#revise-form textarea[name=rubric]", lint_fails)
        page.fill("#revise-form input[name=note]", "grade 3 reworded")
        page.check("#revise-form input[name=same_queries]")
        with page.expect_navigation() as nav:
            page.click("#revise")
        assert nav.value.status == 400
        errors = page.inner_text("#revise-errors")
        assert "lint error(s)" in errors and "the pasted rubric: level" in errors
        assert (
            "rubric-from-the-admin-page" not in errors
            and "/tmp" not in errors
            and "qrelkit-rubric-" not in errors
        )
        # the errors sit in the form, and what was typed is all still there
        assert page.locator("#revise-form #revise-errors").count() == 1
        assert page.input_value("#revise-form textarea[name=rubric]") == lint_fails
        assert page.input_value("#revise-form input[name=note]") == "grade 3 reworded"
        assert page.is_checked("#revise-form input[name=same_queries]")
        assert page.inner_text("#phase-state") == "paused for a rubric revision"  # nothing was recorded

        half = '[rubric]\nname = "half typed'
        page.fill("#revise-form textarea[name=rubric]", half)
        with page.expect_navigation():
            page.click("#revise")
        errors = page.inner_text("#revise-errors")
        assert "the pasted rubric: is not valid TOML" in errors and "/tmp" not in errors
        assert page.input_value("#revise-form textarea[name=rubric]") == half

        # corrected, it goes through: round 2 starts
        page.fill("#revise-form textarea[name=rubric]", (FIXTURES / "rubric-v2.toml").read_text())
        with page.expect_navigation():
            page.click("#revise")
        assert page.inner_text("#phase-state") == "calibration, round 2"
        assert page.locator("#revise-errors").count() == 0


def test_the_queue_offers_no_final_grade_on_a_calibration_pair_before_the_gate(
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob", runs=False)
    grade(db, "alice", "q1", "keys/rotate", 3)
    grade(db, "bob", "q1", "keys/rotate", 0)  # disputed; the rest of the calibration is not graded yet
    assert position_of(db, "alice", "keys/rotate", "q1") >= 0
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as srv:
        page = browser.new_page()
        sign_in(page, srv.url, db, "admin")
        page.goto(f"{srv.url}/admin")
        row = page.locator("#queue-table tbody tr")
        assert row.count() == 1 and "keys/rotate" in row.inner_text()
        assert row.locator("button").count() == 0
        assert "after the gate of round 1 is decided" in row.inner_text()
