"""The labeller's pages in Debian's chromium: the rubric's examples beside each level, the review list of
one's own grades, and what assistive technology needs (one h1 per page, a named progress bar, "saved"
announced in a live region, the keyboard).

The project grades the fixture pool under the example project's rubric (examples/docsearch), whose levels
carry examples; the texts expected on screen are read from that TOML file here, not from the app.
"""

from __future__ import annotations

import re
import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest

from qrelkit.app.project import init_project

from . import test_browser
from .helpers import FIXTURES, ROOT, ThreadServer, grade_pairs, pass_gate, position_of, sign_in
from .test_browser import press_and_wait, save_screenshot
from .test_browser import sign_in as browser_sign_in

browser = test_browser.browser  # the chromium fixture, with the same arguments

EXAMPLE_RUBRIC = ROOT / "examples" / "docsearch" / "rubric.toml"
LEVELS = {lv["grade"]: lv for lv in tomllib.loads(EXAMPLE_RUBRIC.read_text())["levels"]}
QUERY_IDS = {"how do I rotate an API key": "q1", "python sdk retry on 429": "q2",
             "verify webhook signature": "q3", "restore a deleted bucket": "q4"}  # fmt: skip


def project(tmp: Path) -> Path:
    db = tmp / "project.db"
    init_project(db, rubric=EXAMPLE_RUBRIC, pool=FIXTURES / "pool.jsonl", docs=FIXTURES / "docs.jsonl",
                 queries=FIXTURES / "queries.tsv", labellers=["alice", "bob"], seed=7)  # fmt: skip
    return db


def server(db: Path) -> ThreadServer:
    from qrelkit.app.web import create_app

    return ThreadServer(create_app(db, signin_limit=(1000, 60.0)))


def examples_open(page: Any) -> list[bool]:
    return page.eval_on_selector_all("details.examples", "els => els.map(e => e.open)")


def shown_pair(page: Any) -> tuple[str, str]:
    return QUERY_IDS[page.inner_text("#query-text")], page.inner_text(".docid")


def current(db: Path, name: str) -> dict[tuple[str, str], tuple[int | None, int]]:
    """A labeller's latest grade and unsure flag per pair, read from the event table."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, e.grade, e.unsure FROM grade_events e JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE u.name = ? ORDER BY e.event_id",
            (name,),
        ).fetchall()
    return {(q, d): (g, u) for q, d, g, u in rows}


def saved(page: Any) -> str:
    """The live region's text once the page has announced it (set again just after load)."""
    from playwright.sync_api import expect

    expect(page.locator("#status")).to_have_text(re.compile(r"\S"))
    return page.inner_text("#status")


def one_h1(page: Any) -> str:
    assert page.locator("h1").count() == 1, page.url
    return page.inner_text("h1")


def test_each_level_shows_its_examples_open_on_the_first_pairs_of_a_session(
    browser: Any, tmp_path: Path
) -> None:
    db = project(tmp_path)
    with server(db) as srv:
        page = browser.new_page()
        browser_sign_in(page, srv.url, db, "alice")
        # every level with examples shows them under its question, at and just below the level
        for grade, level in LEVELS.items():
            box = page.locator(f"#examples-{grade}")
            assert box.locator("summary").inner_text() == f"Examples for grade {grade}"
            assert box.locator("ul.at li").all_inner_texts() == level["examples_at"]
            assert box.locator("ul.below li").all_inner_texts() == level["examples_below"]
        assert page.locator("#examples-3 ul.at li").first.is_visible()
        save_screenshot(page, "labeller-examples.png")
        assert (
            examples_open(page) == [True] * 4
            and page.locator("details.instructions").get_attribute("open") == ""
        )
        for _ in range(5):  # the first five pairs of the session: open
            assert examples_open(page) == [True] * 4, page.url
            press_and_wait(page, "2")
        # the sixth pair: closed, one click away
        assert examples_open(page) == [False] * 4
        assert not page.locator("#examples-2 ul.at li").first.is_visible()
        page.click("#examples-2 summary")
        assert page.locator("#examples-2 ul.at li").first.is_visible()
        press_and_wait(page, "Backspace")  # a pair of the first five, seen again: open again
        assert examples_open(page) == [True] * 4

        fresh = browser.new_page()  # another browser session (tab): its first pairs show them again
        fresh.goto(f"{srv.url}/label")
        assert fresh.inner_text("#progress-text").startswith("5 of") and examples_open(fresh) == [True] * 4
        fresh.click("#examples-1 summary")  # closed by hand: they stay closed in this session
        with fresh.expect_navigation():
            fresh.keyboard.press("1")
        assert examples_open(fresh) == [False] * 4


def test_review_lists_own_grades_filters_them_and_returns_after_a_change(
    browser: Any, tmp_path: Path
) -> None:
    db = project(tmp_path)
    grade_pairs(db, "bob", {("q1", "keys/rotate"): 0})  # bob's grade never shows on alice's pages
    with server(db) as srv:
        page = browser.new_page()
        browser_sign_in(page, srv.url, db, "alice")
        given: dict[tuple[str, str], str] = {}
        for i in range(8):  # alice's 8 calibration pairs: grades 3, 2, 1, 0, ..., the sixth unsure
            key = "u" if i == 5 else str(3 - i % 4)
            given[shown_pair(page)] = key
            press_and_wait(page, key)
        assert one_h1(page) == "All 8 calibration pairs are graded"
        with page.expect_navigation():
            page.click("#review-link")
        assert one_h1(page) == "Your grades"
        rows = page.locator("#review-table tbody tr")
        assert rows.count() == 8 and "8 of 8 pairs graded" in page.inner_text("#review-count")
        save_screenshot(page, "review.png", full_page=True)
        assert "bob" not in page.content()  # and the grade shown for the pair bob graded 0 is alice's own
        mine = given["q1", "keys/rotate"]
        cell = page.inner_text("#review-table tr:has(code:text-is('keys/rotate')) td.grade-cell")
        assert cell == ("unsure" if mine == "u" else f"{mine}: {LEVELS[int(mine)]['label']}")

        # filter by query, by grade, by unsure: the rows are exactly those graded so
        page.select_option("#filter-query", "q1")
        with page.expect_navigation():
            page.click("#apply-filter")
        assert rows.count() == sum(q == "q1" for q, _ in given)
        page.select_option("#filter-query", "")
        page.select_option("#filter-grade", "3")
        with page.expect_navigation():
            page.click("#apply-filter")
        threes = sorted(d for (_, d), k in given.items() if k == "3")
        assert sorted(rows.locator("td code").all_inner_texts()) == threes and "grade=3" in page.url
        with page.expect_navigation():
            page.goto(f"{srv.url}/review?unsure=1")
        unsure_doc = next(d for (_, d), k in given.items() if k == "u")
        assert rows.count() == 1 and rows.locator("td code").inner_text() == unsure_doc

        # jump to a pair from the filtered list, change it, and come back to the same list
        page.goto(f"{srv.url}/review?grade=3")
        doc = threes[0]
        with page.expect_navigation():
            page.click(f"#review-table tr:has(code:text-is('{doc}')) a.open-pair")
        assert page.inner_text(".docid") == doc and page.locator("#to-list").count() == 1
        press_and_wait(page, "1")
        assert re.search(r"/review\?grade=3#pair-\d+$", page.url), page.url
        save_screenshot(page, "review-after-change.png")
        assert saved(page).startswith("Saved: grade 1")
        assert doc not in rows.locator("td code").all_inner_texts()  # no longer a 3
        assert current(db, "alice")[next(k for k in given if k[1] == doc)] == (1, 0)

        # re-grading after finishing, without the list: back to the list, not to "all graded"
        pos = position_of(db, "alice", unsure_doc)
        page.goto(f"{srv.url}/label/{pos}")
        assert page.locator("#to-list").get_attribute("href") == "/review"
        press_and_wait(page, "2")
        assert page.url.endswith(f"/review#pair-{pos}") and one_h1(page) == "Your grades"
        assert saved(page).startswith("Saved: grade 2")


def test_labeller_pages_have_one_h1_a_named_progress_bar_and_announce_saved(
    browser: Any, tmp_path: Path
) -> None:
    db = project(tmp_path)
    with server(db) as srv:
        page = browser.new_page()
        browser_sign_in(page, srv.url, db, "alice")
        assert one_h1(page) == "Pair 1 of 8 calibration, round 1"
        bar = page.get_by_role("progressbar", name="Pairs graded")
        assert bar.count() == 1
        assert (bar.get_attribute("value"), bar.get_attribute("max")) == ("0", "8")
        assert bar.get_attribute("aria-valuetext") == "0 of 8 graded"
        status = page.locator("[aria-live=polite]")
        assert status.count() == 1 and status.get_attribute("role") == "status" and status.inner_text() == ""

        press_and_wait(page, "2")  # the keyboard grades; the next page says so in the live region
        assert one_h1(page) == "Pair 2 of 8 calibration, round 1"
        assert saved(page) == f"Saved: grade 2, {LEVELS[2]['label']}."
        assert page.get_by_role("progressbar", name="Pairs graded").get_attribute("aria-valuetext") == (
            "1 of 8 graded"
        )
        press_and_wait(page, "u")
        assert saved(page) == "Saved: marked unsure."
        page.reload()  # said once: a reload does not claim a new save
        page.wait_for_timeout(400)
        assert page.inner_text("#status") == ""

        # the grade buttons are reachable and work with Tab and Enter, as well as by their keys
        page.focus("button.grade[value='3']")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert saved(page).startswith("Saved: grade 3")

        # the review list by keyboard: Tab to the first pair's link, Enter opens it
        page.goto(f"{srv.url}/review")
        one_h1(page)
        page.locator("a.open-pair").first.focus()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.locator("#query-text").count() == 1 and page.locator("#to-list").count() == 1

    # open judging; alice finishes her pairs: the "all done" page has its h1 and a named bar
    pass_gate(db)
    with sqlite3.connect(db) as conn:
        rest = conn.execute(
            "SELECT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
            "USING (pair_id) WHERE u.name = 'alice' AND NOT p.calibration"
        ).fetchall()
    grade_pairs(db, "alice", {(q, d): 1 for q, d in rest})
    with server(db) as srv:
        page = browser.new_page()
        browser_sign_in(page, srv.url, db, "alice")
        total = 8 + len(rest)
        assert one_h1(page) == f"All {total} pairs are graded"
        assert page.get_by_role("progressbar", name="Pairs graded").get_attribute("aria-valuetext") == (
            f"{total} of {total} graded"
        )
        assert page.locator("#review-link").get_attribute("href") == "/review"


@pytest.mark.parametrize(
    ("query", "problem"),
    [("grade=7", "not a grade of the rubric"), ("unsure=2", "must be 0 or 1"), ("page=0", "positive"),
     ("sort=grade", "unknown filter"), ("query=" + "q" * 600, "longer than a query id")],
)  # fmt: skip
def test_a_bad_review_filter_is_a_400_that_says_why(tmp_path: Path, query: str, problem: str) -> None:
    db = project(tmp_path)
    with server(db) as srv:
        alice = sign_in(srv.url, db, "alice")
        response = alice.get(f"/review?{query}")
        # the error page starts the message with a capital letter
        assert response.status_code == 400 and problem in response.text.lower()
        assert alice.get(f"/label/0?review=1&{query}").status_code == 400


@pytest.mark.parametrize(
    "return_to", ["https://example.org/review", "//example.org/review", "/admin", "/review?grade=9",
                  "/review#x", "/review?grade=1&grade=2"],
)  # fmt: skip
def test_a_grade_form_returns_only_to_the_labellers_own_list(tmp_path: Path, return_to: str) -> None:
    db = project(tmp_path)
    with server(db) as srv:
        alice = sign_in(srv.url, db, "alice")
        form = {"csrf_token": alice.csrf, "grade": "2", "return_to": return_to}
        assert alice.post("/label/0", data=form).status_code == 400
        assert current(db, "alice") == {}  # refused before anything was written
        form["return_to"] = "/review?grade=2&query=q1"
        done = alice.post("/label/0", data=form)
        assert done.status_code == 303 and done.headers["location"] == "/review?query=q1&grade=2#pair-0"


def test_the_review_list_pages_through_many_grades(tmp_path: Path, monkeypatch: Any) -> None:
    from qrelkit.app import review

    db = project(tmp_path)
    pass_gate(db)
    with sqlite3.connect(db) as conn:
        mine = conn.execute(
            "SELECT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
            "USING (pair_id) WHERE u.name = 'alice' ORDER BY a.position"
        ).fetchall()
    grade_pairs(db, "alice", {(q, d): 2 for q, d in mine})
    monkeypatch.setattr(review, "PAGE_SIZE", 3)
    pages = -(-len(mine) // 3)
    assert pages >= 3
    with server(db) as srv:
        alice = sign_in(srv.url, db, "alice")
        seen = []
        for n in range(1, pages + 1):
            text = alice.get(f"/review?grade=2&page={n}").text
            assert f"Page {n} of {pages}" in text
            seen += re.findall(r"<code>([^<]+)</code>", text)
        assert seen == [d for _, d in mine]  # every grade once, in the order of the list
        assert (
            f"Page {pages} of {pages}" in alice.get("/review?grade=2&page=99").text
        )  # past the end: the last
        assert "No grade matches this filter." in alice.get("/review?grade=0").text
