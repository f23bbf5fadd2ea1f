"""Helpers for the judging tests: projects from the fixtures, servers (in a thread or a process),
and signed-in HTTP clients."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def make_project(tmp: Path, *, labellers: str = "alice,bob,carol", runs: bool = True, **kwargs: Any) -> Path:
    from qrelkit.app.project import init_project

    db = tmp / "project.db"
    init_project(
        db,
        rubric=FIXTURES / "rubric.toml",
        pool=kwargs.pop("pool", FIXTURES / "pool.jsonl"),
        docs=FIXTURES / "docs.jsonl",
        queries=FIXTURES / "queries.tsv",
        labellers=[n for n in labellers.split(",") if n],
        runs=[FIXTURES / "sysalpha.run", FIXTURES / "sysbeta.run"] if runs else [],
        seed=kwargs.pop("seed", 7),
        **kwargs,
    )
    return db


def grade_directly(db: Path, name: str, grades: dict[tuple[str, str], int]) -> None:
    """Write labeller ``name``'s grade events straight into the project ``db`` (under its current rubric),
    for tests that need a round graded without driving the app."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        for (q, d), grade in grades.items():
            conn.execute(
                "INSERT INTO grade_events (user_id, pair_id, grade, unsure, rubric_hash, created_at) "
                "SELECT u.user_id, p.pair_id, ?, 0, (SELECT value FROM meta WHERE key = 'rubric_hash'), "
                "'2026-01-01T00:00:00.000Z' FROM users u, pairs p "
                "WHERE u.name = ? AND p.query_id = ? AND p.doc_id = ?",
                (grade, name, q, d),
            )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadServer:
    """The app under uvicorn in a thread of the test process, on a free loopback port."""

    def __init__(self, app: Any, limits: Any = None) -> None:
        import uvicorn

        from qrelkit.app.web.server import ServerLimits, server_config

        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = server_config(app, limits or ServerLimits(), host="127.0.0.1", port=self.port,
                               log_level="warning", access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the judging server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


class ProcessServer:
    """``qrelkit judge serve`` in its own process (so that it can be killed with SIGKILL)."""

    def __init__(self, db: Path, *args: str) -> None:
        self.db = db
        self.args = args  # more options for `judge serve`
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ProcessServer:
        import httpx

        cmd = [sys.executable, "-m", "qrelkit", "judge", "serve", str(self.db), "--port", str(self.port),
               *self.args]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
                )
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the judging server did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def invite(db: Path, name: str) -> str:
    from qrelkit.app.project import create_invite
    from qrelkit.app.store import Store

    with Store(db) as store:
        return create_invite(store, name)


def sign_in(base_url: str, db: Path, name: str, **client_kwargs: Any) -> Any:
    """An httpx client signed in as ``name`` through a fresh invite link; ``client.csrf`` holds its token."""
    import httpx

    token = invite(db, name)
    client = httpx.Client(base_url=base_url, timeout=30, **client_kwargs)
    page = client.get(f"/invite/{token}")
    assert page.status_code == 200, page.text
    done = client.post(f"/invite/{token}", data={"csrf_token": CSRF_RE.search(page.text).group(1)})
    assert done.status_code == 303, done.text
    home = client.get("/", follow_redirects=True)
    client.csrf = CSRF_RE.search(home.text).group(1)  # type: ignore[attr-defined]
    return client


def position_of(db: Path, name: str, doc_id: str, query_id: str | None = None) -> int:
    sql = (
        "SELECT a.position FROM assignments a JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
        "WHERE u.name = ? AND p.doc_id = ?" + (" AND p.query_id = ?" if query_id else "")
    )
    with sqlite3.connect(db) as conn:
        args = (name, doc_id, query_id) if query_id else (name, doc_id)
        return int(conn.execute(sql, args).fetchone()[0])


def count_events(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0])


def chromium_or_skip() -> str:
    """Debian's chromium; its absence fails under CI (the test set-up installs it) and skips elsewhere."""
    path = os.environ.get("QRELKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    problem = None
    if not Path(path).exists():
        problem = f"chromium not found at {path} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "playwright for Python is not installed (pip install playwright)"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    return path


def grade_pairs(db: Path, name: str, grades: dict[tuple[str, str], int]) -> None:
    """``name`` grades each (query, doc) through the library, as the app does (phase rules apply)."""
    from qrelkit.app.grades import record_grade
    from qrelkit.app.project import find_user, load_rubric_from_store
    from qrelkit.app.store import Store

    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        uid = find_user(store, name)["user_id"]
        for (q, d), grade in grades.items():
            pos = position_of(db, name, d, q)
            store.write(lambda c, pos=pos, grade=grade: record_grade(
                c, uid, pos, grade, unsure=False, note=None, time_spent_ms=None, rubric=rubric))  # fmt: skip


def calibration_pairs(db: Path) -> dict[str, list[tuple[str, str]]]:
    """Each labeller's calibration pairs of the current round, by name."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT u.name, p.query_id, p.doc_id FROM round_pairs rp JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE rp.round = (SELECT MAX(round) FROM rounds) ORDER BY 1, 2, 3"
        ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for name, q, d in rows:
        out.setdefault(name, []).append((q, d))
    return out


def finish_calibration(db: Path, *, agree: bool) -> Any:
    """Grade every calibration pair of the current round for both of its labellers and decide the gate.

    ``agree``: both give each pair the same grade, cycling 3, 2, 1, 0 (kappa 1: the gate passes);
    otherwise the second labeller gives ``3 - grade`` (kappa below 0: it fails). Returns the phase after.
    """
    from qrelkit.app.phases import ensure_gate
    from qrelkit.app.store import Store

    pairs = calibration_pairs(db)
    shared = sorted({p for ps in pairs.values() for p in ps})
    first = {p: 3 - i % 4 for i, p in enumerate(shared)}
    seen: set[tuple[str, str]] = set()
    for name in sorted(pairs):
        mine = {}
        for p in pairs[name]:
            mine[p] = first[p] if agree or p not in seen else 3 - first[p]
            seen.add(p)
        grade_pairs(db, name, mine)
    with Store(db) as store:
        return ensure_gate(store)


def pass_gate(db: Path) -> Any:
    """Open full judging the honest way: calibration graded alike by every two labellers, the gate passes."""
    phase = finish_calibration(db, agree=True)
    assert phase.state == "open", phase
    return phase
