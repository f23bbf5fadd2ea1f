"""The live queue is blind: in a real browser (Playwright driving Debian's chromium, headless), a labeller whose
queue beyond calibration a strategy chose grades it with the keyboard, and nothing of the strategy reaches them:
not its name, the budget, the seed, the measure, the estimator, an inclusion probability, nor a word about why a
pair was chosen, in any page, script, stylesheet or API response the browser fetched.

Without chromium these tests fail when ``CI`` is set and are skipped otherwise."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path
from typing import Any

from .helpers import ThreadServer
from .test_browser import browser, press_and_wait, sign_in  # noqa: F401 - the browser fixture
from .test_live_queue import planned  # noqa: F401 - the planned project fixture

#: What would tell a labeller why a pair is in their queue.
TELLING = re.compile(r"active|design|strateg|budget|probabilit|inclusion|horvitz|estimat|ndcg|live queue|"
                     r"chosen for|plan", re.IGNORECASE)  # fmt: skip


def _chosen(db: Path, name: str) -> list[tuple[str, str, float]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT p.query_id, p.doc_id, x.probability FROM design_pairs x JOIN pairs p USING (pair_id) "
            "JOIN users u ON u.user_id = x.user_id WHERE u.name = ? AND CAST(substr(p.query_id, 2) AS INTEGER) >= 8 "
            "ORDER BY x.position",
            (name,),
        ).fetchall()


def test_the_labeller_s_pages_show_nothing_of_the_strategy(browser: Any, planned: Path) -> None:  # noqa: F811
    from qrelkit.app.web import create_app

    chosen = _chosen(planned, "alice")
    assert chosen  # the design gave alice pairs beyond calibration
    bodies: list[tuple[str, str]] = []
    with ThreadServer(create_app(planned, signin_limit=(1000, 60.0))) as srv:
        page = browser.new_page()

        def keep(response: Any) -> None:
            if (
                response.url.startswith(srv.url)
                and response.request.method == "GET"
                and response.status == 200
            ):
                with contextlib.suppress(Exception):  # a redirect's body, or a response gone with its page
                    bodies.append((response.url, response.text()))

        page.on("response", keep)
        sign_in(page, srv.url, planned, "alice")
        page.goto(f"{srv.url}/label")
        seen = []
        while page.locator("#query-text").count():
            seen.append(page.inner_text(".docid"))
            assert not TELLING.search(page.inner_text("body")), page.inner_text("body")
            press_and_wait(page, "1")
        page.goto(f"{srv.url}/api/me/grades")
        page.goto(f"{srv.url}/review")
    # alice met exactly her chosen pairs, in the design's order, with nothing around them
    assert seen == [d for _, d, _ in chosen]
    assert bodies and any("/label/" in url for url, _ in bodies)
    for url, text in bodies:
        found = TELLING.search(text)
        assert found is None, f"{url} says {found.group()!r}"
        for _, _, p in chosen:  # as a number of its own, not the tail of a time stamp's seconds (01.056)
            for shown in (repr(p), f"{p:.3f}"):
                assert not re.search(rf"(?<![\d.]){re.escape(shown)}(?!\d)", text), (url, shown)
