"""The real pages in a real browser: Playwright driving Debian's chromium, headless.

A project walks through a failed calibration round, a rubric revision on the admin page and a passed
second round: before the gate passes a labeller reaches no other pair by page, URL or API, and right
after it they do; the rounds' history is on the admin page and in the manifest. A labeller signs in
through an invite link, grades with the keyboard, goes back with Backspace, marks a
pair unsure with U, reloads and finds the progress kept; a document carrying ``<script>`` and
``onerror=`` payloads shows them as text and no dialog ever opens; once both labellers finished the
calibration sample the admin page shows the kappa, its interval and the gate. Screenshots of both pages
go to ``test-artifacts/`` (and to ``docs/img/`` when ``QRELKIT_UPDATE_DOCS_IMG=1``).

Without chromium these tests fail when ``CI`` is set and are skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    ARTIFACTS,
    FIXTURES,
    ROOT,
    ThreadServer,
    chromium_or_skip,
    invite,
    make_project,
    position_of,
)

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

# The grades each labeller gives, by (query text, doc id); bob disagrees on a few pairs.
QUERY_IDS = {"how do I rotate an API key": "q1", "python sdk retry on 429": "q2",
             "verify webhook signature": "q3", "restore a deleted bucket": "q4"}  # fmt: skip
ALICE = {
    ("q1", "keys/rotate"): 3, ("q1", "keys/policy"): 1, ("q1", "security/advisory-4"): 0,
    ("q1", "changelog/2026"): 1, ("q2", "sdk/retries"): 3, ("q2", "limits/rate"): 2,
    ("q2", "sdk/timeouts"): 1, ("q2", "security/advisory-4"): 0,
}  # fmt: skip
BOB = {**ALICE, ("q1", "keys/policy"): 3, ("q2", "limits/rate"): 1}


@pytest.fixture
def browser() -> Iterator[Any]:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="qrelkit-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=executable, headless=True, args=ARGS,
                viewport={"width": 1280, "height": 820}, device_scale_factor=1,
            )  # fmt: skip
            context.set_default_timeout(15_000)
            yield context
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def sign_in(page: Any, url: str, db: Path, name: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{url}/invite/{invite(db, name)}")
    with page.expect_navigation():
        page.click("#signin")


def progress_text(page: Any) -> str:
    return page.inner_text("#progress-text")


def press_and_wait(page: Any, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def pair_on_screen(page: Any) -> tuple[str, str]:
    return QUERY_IDS.get(page.inner_text("#query-text"), "?"), page.inner_text(".docid")


def grade_calibration(page: Any, grades: dict[tuple[str, str], int]) -> None:
    """Grade by keyboard until every calibration pair of this labeller has a grade (or no pair is shown:
    judging paused, or waiting for the other labeller)."""
    page.goto(page.url.split("/label")[0] + "/label")
    while True:
        if page.locator("#query-text").count() == 0:
            return
        key = pair_on_screen(page)
        if key not in grades:
            return
        press_and_wait(page, str(grades[key]))


def save_screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=full_page)
    if os.environ.get("QRELKIT_UPDATE_DOCS_IMG") == "1":
        (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, ROOT / "docs" / "img" / name)
    return path


def events(db: Path, name: str) -> list[tuple[int, int | None, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT a.position, e.grade, e.unsure FROM grade_events e JOIN users u USING (user_id) "
            "JOIN assignments a ON a.user_id = e.user_id AND a.pair_id = e.pair_id WHERE u.name = ? "
            "ORDER BY e.event_id",
            (name,),
        ).fetchall()


def test_labeller_grades_by_keyboard_and_admin_sees_kappa(browser: Any, tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob", name="ferrite-docs")
    dialogs: list[str] = []
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        page = browser.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

        sign_in(page, srv.url, db, "alice")
        assert page.url.endswith("/label/0")
        total = int(re.search(r"of (\d+)", progress_text(page)).group(1))
        assert progress_text(page) == f"0 of {total} graded"

        press_and_wait(page, "2")
        assert page.url.endswith("/label/1") and progress_text(page) == f"1 of {total} graded"
        press_and_wait(page, "3")
        assert page.url.endswith("/label/2") and progress_text(page) == f"2 of {total} graded"
        press_and_wait(page, "Backspace")  # back one: the pair graded 3, with its grade shown
        assert page.url.endswith("/label/1")
        assert "Your grade: 3" in page.inner_text("#current")
        press_and_wait(page, "1")  # change it; the history keeps both
        assert page.url.endswith("/label/2")
        press_and_wait(page, "u")
        assert page.url.endswith("/label/3") and progress_text(page) == f"3 of {total} graded"
        assert events(db, "alice") == [(0, 2, 0), (1, 3, 0), (1, 1, 0), (2, None, 1)]
        with sqlite3.connect(db) as conn:  # the page measured the time spent on each pair
            spent = [r[0] for r in conn.execute("SELECT time_spent_ms FROM grade_events")]
        assert all(isinstance(ms, int) and 0 < ms < 60_000 for ms in spent), spent

        page.reload()
        assert page.url.endswith("/label/3") and progress_text(page) == f"3 of {total} graded"
        page.goto(f"{srv.url}/label")
        assert page.url.endswith("/label/3")
        page.goto(f"{srv.url}/label/2")
        assert "unsure" in page.inner_text("#current")

        # The document quoting an XSS report shows the payloads as text; nothing runs.
        page.goto(f"{srv.url}/label/{position_of(db, 'alice', 'security/advisory-4', 'q1')}")
        text = page.inner_text("#doc-text")
        assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(1)>" in text
        assert page.locator("#doc-text script, #doc-text img").count() == 0
        assert page.evaluate("document.querySelectorAll('img').length") == 0

        # Finish the calibration sample as both labellers (alice redoes her first pairs properly).
        for position in range(3):
            page.goto(f"{srv.url}/label/{position}")
            press_and_wait(page, str(ALICE[pair_on_screen(page)]))
        grade_calibration(page, ALICE)
        page.goto(f"{srv.url}/label/{position_of(db, 'alice', 'keys/rotate')}")
        save_screenshot(page, "labeller.png")

        sign_in(page, srv.url, db, "bob")
        grade_calibration(page, BOB)

        sign_in(page, srv.url, db, "admin")
        assert page.url.endswith("/admin")
        kappa = page.inner_text("#kappa-alice-bob")
        assert re.fullmatch(r"κ = -?\d\.\d\d", kappa), kappa
        from qrelkit.app.grades import calibration_status
        from qrelkit.app.project import load_rubric_from_store
        from qrelkit.app.store import Store

        with Store(db) as store:
            (state,) = calibration_status(store, load_rubric_from_store(store))
        assert state.finished and kappa == f"κ = {state.report.kappa.kappa:.2f}"
        assert re.search(r"95% interval \[-?\d\.\d\d, -?\d\.\d\d\]", page.inner_text("#calibration"))
        assert page.inner_text("#gate").startswith(("Gate: PASS", "Gate: FAIL"))
        assert "keys/policy" in page.inner_text("#queue")  # the disagreements wait for adjudication
        save_screenshot(page, "admin.png", full_page=True)
    assert dialogs == []


def test_pending_kappa_is_explained_before_calibration_ends(browser: Any, tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        page = browser.new_page()
        sign_in(page, srv.url, db, "alice")
        press_and_wait(page, "2")
        sign_in(page, srv.url, db, "admin")
        assert "Waiting for calibration: alice 1/8, bob 0/8" in page.inner_text("#kappa-pending")


# Round 2 (after the revision): both labellers give the same grades, so the gate passes.
ROUND2 = {
    ("q3", "webhooks/verify"): 3, ("q3", "webhooks/overview"): 2, ("q3", "changelog/2026"): 1,
    ("q3", "faq/general"): 0, ("q4", "buckets/trash"): 3, ("q4", "backups/restore"): 2,
    ("q4", "faq/general"): 0, ("q4", "keys/scopes"): 1,
}  # fmt: skip


def closed_by_url_and_api(page: Any, url: str, db: Path, name: str, doc: str, query: str) -> str:
    """Try a pair that is not open: by URL (the page says why, 403, nothing of the pair shown) and by the
    grade API (403); return the page's heading."""
    position = position_of(db, name, doc, query)
    token = page.get_attribute("input[name=csrf_token]", "value")
    response = page.goto(f"{url}/label/{position}")
    assert response.status == 403 and page.locator("#doc-text, #query-text").count() == 0
    heading = page.inner_text("#phase h1")
    api = page.request.post(f"{url}/label/{position}", form={"csrf_token": token, "grade": "2"},
                            headers={"accept": "application/json"})  # fmt: skip
    assert api.status == 403 and "gate" in api.json()["error"], api.text()
    assert all(g["query_id"] != query for g in page.request.get(f"{url}/api/me/grades").json()["grades"])
    return heading


def test_a_failed_round_a_revision_and_a_passed_round(browser: Any, tmp_path: Path) -> None:
    import json

    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        page = browser.new_page()
        sign_in(page, srv.url, db, "alice")
        assert progress_text(page) == "0 of 8 graded" and "calibration, round 1" in page.inner_text(
            "#phase-tag"
        )
        heading = closed_by_url_and_api(page, srv.url, db, "alice", "webhooks/verify", "q3")
        assert heading == "This pair opens after calibration"
        grade_calibration(page, ALICE)
        assert page.inner_text("#waiting") == "All 8 calibration pairs are graded"  # bob has not finished

        sign_in(page, srv.url, db, "bob")
        grade_calibration(page, {k: 3 - v for k, v in ALICE.items()})  # the opposite reading: the gate fails
        assert page.inner_text("#paused") == "Judging is paused for a rubric revision"
        assert closed_by_url_and_api(page, srv.url, db, "bob", "keys/rotate", "q1") == page.inner_text(
            "#paused"
        )

        sign_in(page, srv.url, db, "admin")
        assert page.inner_text("#phase-state") == "paused for a rubric revision"
        assert page.inner_text("#round-1 .outcome") == "failed"
        confusion = page.inner_text("#confusion-alice-bob")
        assert confusion.split()[:6] == ["alice", "↓", "/", "bob", "→", "0"]
        assert "Grades they split on most: grade 0: 100%" in page.inner_text("#material")
        assert "keys/rotate" in page.inner_text("#material .driving")  # 3 against 0: the largest swing
        save_screenshot(page, "admin-failed-round.png", full_page=True)
        page.fill("#revise-form textarea[name=rubric]", (FIXTURES / "rubric-v2.toml").read_text())
        page.fill("#revise-form input[name=note]", "grade 1 reworded")
        with page.expect_navigation():
            page.click("#revise")
        assert page.inner_text("#phase-state") == "calibration, round 2"
        assert "measuring" in page.inner_text("#round-2 .outcome")
        assert "2.0" in page.inner_text("#round-2")

        for name in ("alice", "bob"):
            sign_in(page, srv.url, db, name)
            assert "calibration, round 2" in page.inner_text("#phase-tag")
            assert pair_on_screen(page)[0] in ("q3", "q4")
            closed_by_url_and_api(page, srv.url, db, name, "keys/rotate", "q1")
            grade_calibration(page, ROUND2)
        # bob finished last: right after his last calibration grade, the gate passed and the rest opened
        assert pair_on_screen(page)[0] in ("q1", "q2") and page.locator("#phase-tag").count() == 0
        press_and_wait(page, "2")  # and it takes a grade

        sign_in(page, srv.url, db, "admin")
        assert page.inner_text("#phase-state") == "full judging open"
        assert [page.inner_text(f"#round-{n} .outcome") for n in (1, 2)] == ["failed", "passed"]
        manifest = json.loads(
            page.request.get(f"{srv.url}/admin/export/final/manifest?unresolved=leave-out").text()
        )
    cal = manifest["calibration"]
    assert (cal["status"], cal["round"], manifest["rubric"]["version"]) == ("passed", 2, "2.0")
    assert [(r["round"], r["rubric"]["version"], r["query_rule"], r["status"]) for r in cal["rounds"]] == [
        (1, "1.0", "initial", "failed"), (2, "2.0", "drawn", "passed")]  # fmt: skip
    assert cal["rounds"][1]["queries"] == ["q3", "q4"] and cal["rounds"][1]["note"] == "grade 1 reworded"
