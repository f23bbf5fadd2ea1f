"""A document of one 2 MB token on the labeller's page, in Debian's chromium: the page loads with the first
characters shown, wrapped to the column (nothing runs off the side), and "Show all" shows every character,
wrapped too. Without chromium these tests fail when ``CI`` is set and are skipped otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from qrelkit.app.web.labeller import DOC_SHOWN

from .helpers import FIXTURES, ThreadServer, position_of
from .test_browser import browser, sign_in  # noqa: F401 (the chromium fixture)

SIZE = 2 * 1024 * 1024


def _project(tmp: Path) -> Path:
    from qrelkit.app.project import init_project

    docs = tmp / "docs.jsonl"
    rows = [json.loads(line) for line in (FIXTURES / "docs.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        if row["doc_id"] == "keys/rotate":
            row["text"] = "".join("abcdefghij"[i % 10] for i in range(SIZE))  # one token, no space
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp / "project.db"
    init_project(db, rubric=FIXTURES / "rubric.toml", pool=FIXTURES / "pool.jsonl", docs=docs,
                 queries=FIXTURES / "queries.tsv", labellers=["alice", "bob"], runs=[], seed=7)  # fmt: skip
    return db


def _overflow(page: Any) -> dict[str, int]:
    return page.evaluate(
        "() => { const t = document.getElementById('doc-text');"
        " return {length: t.textContent.length, scroll: t.scrollWidth, client: t.clientWidth,"
        " page: document.documentElement.scrollWidth, view: window.innerWidth}; }"
    )


def test_a_two_megabyte_single_token_document_is_cut_wrapped_and_shown_whole_on_request(
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    from qrelkit.app.web import create_app

    db = _project(tmp_path)
    pos = position_of(db, "alice", "keys/rotate", "q1")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        page = browser.new_page()
        sign_in(page, srv.url, db, "alice")
        response = page.goto(f"{srv.url}/label/{pos}", wait_until="load")  # the fixture's 15 s timeout
        assert response is not None and response.status == 200
        first = _overflow(page)
        assert first["length"] == DOC_SHOWN
        assert first["scroll"] <= first["client"] and first["page"] <= first["view"]  # wrapped in its column
        more = page.text_content("#doc-more")
        assert more is not None and f"of {SIZE:,} characters" in more
        with page.expect_navigation(wait_until="load", timeout=120_000):
            page.click("#show-all")
        whole = _overflow(page)
        assert whole["length"] == SIZE
        assert whole["scroll"] <= whole["client"] and whole["page"] <= whole["view"]
        assert page.query_selector("#doc-more") is None
        # grading still works from the whole view
        with page.expect_navigation():
            page.keyboard.press("2")
        assert "/label/" in page.url
