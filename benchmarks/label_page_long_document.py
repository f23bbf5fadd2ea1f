"""The labeller's page in Debian's chromium with one long single-token document: time to ``load`` of the
first view (the first ``DOC_SHOWN`` characters) beside "Show all" (``?full=1``, every character).

    python benchmarks/label_page_long_document.py --chars 2097152 --repeat 3

Makes a judging project from the judging tests' fixture files with document ``keys/rotate`` replaced by
``--chars`` characters without a space, serves it on loopback, signs in as a labeller and loads the pair's
page ``--repeat`` times each way; prints the median seconds, the characters shown and the ratio. Other work
on the machine distorts the times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "app" / "fixtures"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=2 * 1024 * 1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    import uvicorn
    from playwright.sync_api import sync_playwright

    from qrelkit.app.project import create_invite, init_project
    from qrelkit.app.store import Store
    from qrelkit.app.web import create_app

    tmp = Path(tempfile.mkdtemp(prefix="qrelkit-bench-"))
    rows = [json.loads(line) for line in (FIXTURES / "docs.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        if row["doc_id"] == "keys/rotate":
            row["text"] = "".join("abcdefghij"[i % 10] for i in range(args.chars))
    (tmp / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp / "project.db"
    init_project(db, rubric=FIXTURES / "rubric.toml", pool=FIXTURES / "pool.jsonl", docs=tmp / "docs.jsonl",
                 queries=FIXTURES / "queries.tsv", labellers=["alice", "bob"], runs=[], seed=7)  # fmt: skip
    with Store(db) as store:
        token = create_invite(store, "alice")
        pos = store.read(lambda c: c.execute(
            "SELECT a.position FROM assignments a JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "WHERE u.name = 'alice' AND p.doc_id = 'keys/rotate'").fetchone()[0])  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(create_app(db), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True,
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            page.set_default_timeout(600_000)
            page.goto(f"{url}/invite/{token}")
            page.click("#signin")
            results = {}
            for name, suffix in (("first view", ""), ("show all", "?full=1")):
                times = []
                for _ in range(args.repeat):
                    start = time.monotonic()
                    page.goto(f"{url}/label/{pos}{suffix}", wait_until="load")
                    times.append(time.monotonic() - start)
                shown = page.evaluate("document.getElementById('doc-text').textContent.length")
                results[name] = statistics.median(times)
                print(f"{name:<11} {results[name]:7.2f} s  {shown:>9} characters shown")
            print(f"show all / first view: {results['show all'] / results['first view']:.1f}x")
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=15)


if __name__ == "__main__":
    main()
