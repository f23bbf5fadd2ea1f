"""Every page of the judging app in chromium, at 1280 px and at a phone's 390 px: an axe-core audit (no
violation of impact "serious" or "critical"), nothing wider than the window (tables scroll inside their
own box), one ``h1``, and a screenshot of each kept under ``test-artifacts/pages/``. And the admin page
keeping itself current: a labeller's grade appears without a reload while the admin's scroll position,
open details and half-typed text stay as they were.

The audit is axe-core as bundled by ``axe-playwright-python`` (the ``test`` extra), run in the page.
Without chromium these tests fail when ``CI`` is set and are skipped otherwise.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    ARTIFACTS,
    ThreadServer,
    calibration_pairs,
    finish_calibration,
    grade_pairs,
    invite,
    make_project,
    pass_gate,
    position_of,
)
from .test_admin_daily import grade
from .test_browser import browser, sign_in  # noqa: F401  (the chromium fixture)

WIDTHS = {"desktop": (1280, 820), "phone": (390, 844)}
SHOTS = ARTIFACTS / "pages"

# Every element's box must lie inside the window unless an ancestor clips or scrolls it sideways.
OVERFLOW_JS = """
() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > vw) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    let inside = false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") { inside = true; break; }
    }
    if (!inside && (r.right > vw + 0.5 || r.left < -0.5)) {
      out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${el.className} spans ${Math.round(r.left)}..${Math.round(r.right)} of ${vw}`);
    }
  }
  return out;
}
"""


def audit(page: Any, name: str) -> list[str]:
    """Run axe, the overflow check and the h1 count at both widths, and keep a screenshot of each; return
    what failed (empty when the page passes)."""
    from axe_playwright_python.sync_playwright import Axe

    problems = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    for label, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(50)  # one layout at the new width
        found = Axe().run(page).response["violations"]
        for v in found:
            if v["impact"] in ("serious", "critical"):
                nodes = "; ".join(n["target"][0] if isinstance(n["target"][0], str) else str(n["target"])
                                  for n in v["nodes"][:3])  # fmt: skip
                problems.append(f"{name} at {width}px: axe {v['id']} ({v['impact']}): {v['help']}: {nodes}")
        problems += [f"{name} at {width}px: {x}" for x in page.evaluate(OVERFLOW_JS)]
        if page.locator("h1").count() != 1:
            problems.append(f"{name} at {width}px: {page.locator('h1').count()} h1 elements")
        page.screenshot(path=str(SHOTS / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 820})
    return problems


def test_every_page_passes_the_audit_at_both_widths(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    from qrelkit.app.web import create_app

    problems: list[str] = []
    seen: list[str] = []

    def check(page: Any, name: str, *, status: int | None = None, response: Any = None) -> None:
        if status is not None:
            assert response is not None and response.status == status, (name, response and response.status)
        seen.append(name)
        problems.extend(audit(page, name))

    # A project through calibration (passed), with unsure pairs waiting for a decision and one decided.
    (tmp_path / "open").mkdir()
    (tmp_path / "paused").mkdir()
    db = make_project(tmp_path / "open", labellers="alice,bob")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as srv:
        page = browser.new_page()
        check(page, "signin", status=200, response=page.goto(f"{srv.url}/"))
        check(page, "invite-invalid", status=403, response=page.goto(f"{srv.url}/invite/not-a-token"))
        check(page, "invite", status=200, response=page.goto(f"{srv.url}/invite/{invite(db, 'alice')}"))
        with page.expect_navigation():
            page.click("#signin")
        check(page, "label", status=200, response=page.goto(f"{srv.url}/label/0"))
        closed = position_of(db, "alice", "webhooks/verify", "q3")  # not a calibration pair: closed for now
        check(page, "phase-calibration-only", status=403, response=page.goto(f"{srv.url}/label/{closed}"))
        check(page, "error-404", status=404, response=page.goto(f"{srv.url}/label/99999"))

        pass_gate(db)
        grade(db, "alice", "q2", "sdk/timeouts", None, unsure=True)
        grade(db, "alice", "q2", "limits/rate", None, unsure=True)
        sign_in(page, srv.url, db, "admin")
        page.goto(f"{srv.url}/admin/adjudicate/confirm?query_id=q2&doc_id=limits/rate&grade=2&page=1")
        check(page, "confirm")
        with page.expect_navigation():
            page.click("#confirm-decision")
        page.click("#recent-decisions summary")
        check(page, "admin")
        page.set_viewport_size({"width": 390, "height": 844})  # on a phone the queue's buttons are in sight
        buttons = [page.locator("#queue-table button").nth(i).bounding_box() for i in range(4)]
        assert all(b is not None and b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in buttons), buttons
        page.set_viewport_size({"width": 1280, "height": 820})
        check(
            page,
            "pair",
            status=200,
            response=page.goto(f"{srv.url}/admin/pair?query_id=q2&doc_id=sdk/timeouts"),
        )
        page.goto(f"{srv.url}/admin")
        with page.expect_navigation():
            page.click("#actions button[type=submit]")
        check(page, "admin-invite")

        with sqlite3.connect(db) as conn:
            mine = conn.execute(
                "SELECT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
                "USING (pair_id) WHERE u.name = 'alice'"
            ).fetchall()
        grade_pairs(db, "alice", {(q, d): 1 for q, d in mine})
        sign_in(page, srv.url, db, "alice")
        page.goto(f"{srv.url}/label")
        check(page, "done")
        check(page, "review", status=200, response=page.goto(f"{srv.url}/review"))

    # A project whose first round failed: the material on the admin page, "paused" for the labellers;
    # and the phase pages before the gate.
    db = make_project(tmp_path / "paused", labellers="alice,bob,carol")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as srv:
        page = browser.new_page()
        cal = calibration_pairs(db)
        grade_pairs(db, "alice", {p: 2 for p in cal["alice"]})
        sign_in(page, srv.url, db, "alice")
        page.goto(f"{srv.url}/label")
        check(page, "phase-waiting")
        finish_calibration(db, agree=False)
        page.goto(f"{srv.url}/label")
        check(page, "phase-paused")
        sign_in(page, srv.url, db, "admin")
        check(page, "admin-failed-round")

    # A project whose gate cannot be measured: alice marked every calibration pair unsure.
    (tmp_path / "unmeasurable").mkdir()
    db = make_project(tmp_path / "unmeasurable", labellers="alice,bob")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as srv:
        page = browser.new_page()
        cal = calibration_pairs(db)
        for q, d in cal["alice"]:
            grade(db, "alice", q, d, None, unsure=True)
        grade_pairs(db, "bob", {p: 2 for p in cal["bob"]})
        sign_in(page, srv.url, db, "alice")
        check(page, "phase-unmeasurable", status=200, response=page.goto(f"{srv.url}/label"))
        assert page.locator("#unmeasurable").is_visible()
        sign_in(page, srv.url, db, "admin")
        check(page, "admin-unmeasurable")
        assert "alice graded 0 of 8 calibration pairs; bob 8" in (
            page.text_content("#unmeasurable-note") or ""
        )

    assert not problems, "\n".join(problems)
    assert len(seen) == 17
    print(f"\nscreenshots of {len(seen)} pages at 1280 px and 390 px: {SHOTS}")


@pytest.fixture
def admin_project(tmp_path: Path) -> Iterator[tuple[Path, ThreadServer]]:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    grade(db, "alice", "q2", "sdk/timeouts", None, unsure=True)
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0.3)) as srv:
        yield db, srv


def test_the_admin_page_updates_itself_and_keeps_the_admins_place(browser: Any, admin_project: Any) -> None:  # noqa: F811
    db, srv = admin_project
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 500})  # short: the page scrolls
    sign_in(page, srv.url, db, "admin")
    page.goto(f"{srv.url}/admin/adjudicate/confirm?query_id=q2&doc_id=sdk/timeouts&grade=1&page=1")
    with page.expect_navigation():
        page.click("#confirm-decision")
    page.evaluate("window.stillTheSamePage = true")
    before = page.inner_text("#labeller-bob .count")
    events = page.inner_text("#event-count")

    page.click("#recent-decisions summary")
    page.fill("#revise-form textarea[name=rubric]", '[rubric]\nname = "half typed')
    page.fill("#revise-form input[name=note]", "a note")
    page.evaluate("document.getElementById('queries').scrollIntoView()")
    page.focus("#revise-form input[name=note]")
    page.evaluate("document.getElementById('queries').scrollIntoView()")
    scrolled = page.evaluate("window.scrollY")
    where = page.evaluate("document.getElementById('queries').getBoundingClientRect().top")
    assert scrolled > 100 and page.locator("#queue-table tbody tr").count() == 0

    with sqlite3.connect(db) as conn:
        (q, d), (q2, d2) = conn.execute(
            "SELECT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
            "USING (pair_id) WHERE u.name = 'bob' AND NOT EXISTS (SELECT 1 FROM grade_events e "
            "WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id) ORDER BY a.position LIMIT 2"
        ).fetchall()
    grade(db, "bob", q, d, None, unsure=True)  # a labeller asks for a decision while the admin page is open
    done, total = (int(x) for x in before.split(" / "))
    from playwright.sync_api import expect

    expect(page.locator("#labeller-bob .count")).to_have_text(f"{done + 1} / {total}", timeout=20_000)
    assert page.inner_text("#event-count") == str(int(events) + 1)
    assert page.evaluate("window.stillTheSamePage") is True  # no reload
    # the queue above grew by a row, and what the admin was looking at stayed where it was
    assert page.locator("#queue-table tbody tr").count() == 1 and d in page.inner_text("#queue-table tbody")
    assert page.evaluate("window.scrollY") > scrolled
    assert abs(page.evaluate("document.getElementById('queries').getBoundingClientRect().top") - where) <= 1
    assert page.input_value("#revise-form textarea[name=rubric]") == '[rubric]\nname = "half typed'
    assert page.input_value("#revise-form input[name=note]") == "a note"
    assert page.evaluate("document.activeElement.name") == "note"
    assert page.evaluate("document.getElementById('recent-decisions').open") is True
    assert "Updated at" in page.inner_text("#refresh-status")

    # on a phone: a table scrolled sideways inside its box stays scrolled when the page updates
    page.set_viewport_size({"width": 390, "height": 700})
    box = "document.querySelector('#labellers .table-wrap')"
    page.evaluate(f"{box}.scrollLeft = 150")
    left = page.evaluate(f"{box}.scrollLeft")
    assert left > 0
    grade(db, "bob", q2, d2, 1)
    expect(page.locator("#labeller-bob .count")).to_have_text(f"{done + 2} / {total}", timeout=20_000)
    assert page.evaluate(f"{box}.scrollLeft") == left

    # the decision made at the start is undone from its notice: the pair is back in the queue
    with page.expect_navigation():
        page.click("#undo-last")
    assert "was undone" in page.inner_text("#notice")
    assert (
        "sdk/timeouts" in page.inner_text("#queue-table")
        and page.locator("#queue-table tbody tr").count() == 2
    )


def test_the_audit_finds_what_it_should(browser: Any) -> None:  # noqa: F811
    """The audit itself works: a button without a name and an image without a text alternative are
    reported at the levels the page test fails on, and a box wider than a phone is caught."""
    from axe_playwright_python.sync_playwright import Axe

    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.set_content('<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
                     '<img src="data:,"><button></button><div id="wide">x</div></main></body></html>')  # fmt: skip
    page.evaluate("document.getElementById('wide').style.width = '600px'")
    found = {v["id"]: v["impact"] for v in Axe().run(page).response["violations"]}
    assert found.get("button-name") == "critical" and found.get("image-alt") == "critical"
    assert any("div#wide" in x for x in page.evaluate(OVERFLOW_JS))
