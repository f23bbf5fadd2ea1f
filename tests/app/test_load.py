"""Load and crash: 20 labellers submit 10,000 grades to a real server on loopback; nothing acknowledged is lost.

The server runs as ``qrelkit judge serve`` in its own process. Every grade the server acknowledged
(HTTP 200 with an event id) must be in the database afterwards with the labeller, pair and grade that
were sent; the 99th-percentile latency of a grade is reported (printed and written to
``test-artifacts/load.json``), not asserted. In the crash test the server is killed with SIGKILL in the
middle of the load, restarted, and the same check plus ``PRAGMA integrity_check`` must pass.

Phases are in place: the project is made with ``no_calibration`` (judging open from the start, agreement
not measured), and every grade is still checked against the project's phase and rubric in the writer.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .helpers import ARTIFACTS, CSRF_RE, FIXTURES, ProcessServer, invite

LABELLERS = 20
TOTAL_GRADES = 10_000
QUERIES = 100
DOCS_PER_QUERY = 25

pytestmark = pytest.mark.slow


def load_project(tmp: Path) -> Path:
    """100 queries x 25 documents, spread by whole queries over 20 labellers (125 pairs each)."""
    from qrelkit.app.project import init_project

    docs = [f"doc{i:02d}" for i in range(DOCS_PER_QUERY)]
    (tmp / "docs.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": d, "title": f"Title {d}", "text": f"Text of {d}. " * 20}) + "\n"
            for d in docs
        )
    )
    (tmp / "queries.tsv").write_text("".join(f"q{i:03d}\tquery number {i}\n" for i in range(QUERIES)))
    lines = [
        json.dumps(
            {"query_id": f"q{i:03d}", "doc_id": d, "runs": {"r": r + 1}, "best_rank": r + 1, "judged": False}
        )
        for i in range(QUERIES)
        for r, d in enumerate(docs)
    ]
    (tmp / "pool.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp / "load.db"
    names = [f"labeller{i:02d}" for i in range(LABELLERS)]
    init_project(
        db, rubric=FIXTURES / "rubric.toml", pool=tmp / "pool.jsonl", docs=tmp / "docs.jsonl",
        queries=tmp / "queries.tsv", labellers=names, seed=11, no_calibration=True,
    )  # fmt: skip
    return db


class Labeller(threading.Thread):
    """Signs in with an invite link, then posts grades as fast as the server answers."""

    def __init__(
        self, url: str, name: str, token: str, n: int, stop: threading.Event, counter: list[int]
    ) -> None:
        super().__init__(daemon=True)
        self.url, self.name, self.token, self.n = url, name, token, n
        self.stop, self.counter = stop, counter
        self.acked: list[tuple[str, int, int, int]] = []  # (labeller, position, grade, event_id)
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.ready = threading.Event()
        self.go = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            try:
                page = client.get(f"/invite/{self.token}")
                client.post(f"/invite/{self.token}", data={"csrf_token": CSRF_RE.search(page.text).group(1)})
                csrf = CSRF_RE.search(client.get("/label", follow_redirects=True).text).group(1)
            except Exception as exc:  # reported by the test
                self.errors.append(f"sign-in: {exc!r}")
                self.ready.set()
                return
            self.ready.set()
            self.go.wait()
            seed = int(self.name[-2:])
            for i in range(self.n):
                if self.stop.is_set():
                    return
                position, grade = i % 125, (i * 7 + seed) % 4
                data = {"csrf_token": csrf, "grade": str(grade), "elapsed_ms": str(1000 + i)}
                start = time.perf_counter()
                try:
                    r = client.post(f"/label/{position}", data=data, headers={"accept": "application/json"})
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))
                    return
                elapsed = time.perf_counter() - start
                if r.status_code != 200:
                    self.errors.append(f"{r.status_code}: {r.text[:200]}")
                    return
                self.latencies.append(elapsed)
                self.acked.append((self.name, position, grade, int(r.json()["event_id"])))
                self.counter[0] += 1  # a benign race: only used to decide when to kill the server


def run_load(
    server: ProcessServer, db: Path, *, kill_after: int | None = None
) -> tuple[list[Labeller], float]:
    names = [f"labeller{i:02d}" for i in range(LABELLERS)]
    tokens = {n: invite(db, n) for n in names}
    server.start()
    stop, counter = threading.Event(), [0]
    workers = [Labeller(server.url, n, tokens[n], TOTAL_GRADES // LABELLERS, stop, counter) for n in names]
    for w in workers:
        w.start()
    for w in workers:
        w.ready.wait(timeout=60)
    start = time.perf_counter()
    for w in workers:
        w.go.set()
    if kill_after is not None:
        while counter[0] < kill_after and any(w.is_alive() for w in workers):
            time.sleep(0.005)
        server.kill()  # SIGKILL, mid-load
    for w in workers:
        w.join(timeout=120)
    return workers, time.perf_counter() - start


def assert_all_acknowledged_present(db: Path, workers: list[Labeller]) -> int:
    acked = [a for w in workers for a in w.acked]
    with sqlite3.connect(db) as conn:
        rows = conn.execute(  # the event id a labeller is told counts their own events: 1, 2, 3, ...
            "SELECT ROW_NUMBER() OVER (PARTITION BY e.user_id ORDER BY e.event_id), u.name, a.position, e.grade "
            "FROM grade_events e JOIN users u USING (user_id) "
            "JOIN assignments a ON a.user_id = e.user_id AND a.pair_id = e.pair_id"
        ).fetchall()
    stored = {(name, number): (name, position, grade) for number, name, position, grade in rows}
    missing = [a for a in acked if stored.get((a[0], a[3])) != a[:3]]
    assert not missing, f"{len(missing)} acknowledged grades are missing or wrong, e.g. {missing[:3]}"
    return len(acked)


def test_twenty_labellers_ten_thousand_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = load_project(tmp_path)
    server = ProcessServer(db)
    try:
        workers, wall = run_load(server, db)
    finally:
        server.stop()
    errors = [e for w in workers for e in w.errors]
    assert not errors, errors[:5]
    n = assert_all_acknowledged_present(db, workers)
    assert n == TOTAL_GRADES
    latencies = sorted(x for w in workers for x in w.latencies)
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    figures = {
        "labellers": LABELLERS,
        "grades_acknowledged": n,
        "wall_seconds": round(wall, 3),
        "grades_per_second": round(n / wall, 1),
        "latency_ms": {
            "p50": round(q[49] * 1000, 2),
            "p90": round(q[89] * 1000, 2),
            "p99": round(q[98] * 1000, 2),
            "max": round(latencies[-1] * 1000, 2),
        },
        "durability": "WAL, synchronous=FULL, acknowledged after COMMIT (group commit in one writer)",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "load.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():  # shown in every run, not only with -s
        print(f"\nload test: {json.dumps(figures)}")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_sigkill_mid_load_loses_no_acknowledged_grade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = load_project(tmp_path)
    server = ProcessServer(db)
    try:
        workers, _ = run_load(server, db, kill_after=TOTAL_GRADES // 4)
        acked = sum(len(w.acked) for w in workers)
        assert TOTAL_GRADES // 4 <= acked < TOTAL_GRADES, (
            "the server was not killed in the middle of the load"
        )
        server.start()  # restart on the same file: SQLite recovers from the WAL
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/healthz").json()["ok"] is True
        assert assert_all_acknowledged_present(db, workers) == acked
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]
        # A request in flight at the kill may have been committed without being acknowledged.
        assert acked <= stored <= acked + LABELLERS
        info: dict[str, Any] = {"acknowledged_before_kill": acked, "stored_after_restart": stored,
                                "integrity_check": "ok"}  # fmt: skip
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "crash.json").write_text(json.dumps(info, indent=2) + "\n")
        with capsys.disabled():
            print(f"\ncrash test: {json.dumps(info)}")
    finally:
        server.stop()
