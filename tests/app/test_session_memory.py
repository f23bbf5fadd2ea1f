"""Live sessions kept in memory by the server, with their rows as the record (real SQLite, real servers).

The server remembers verified cookies and live sessions; these tests check that memory changes nothing a
labeller or an admin can see: revocation from another process refuses the very next request, a sign-out
stays final across a restart, a restarted server (even one killed with SIGKILL) reads sessions back from
their rows, and ``last_seen`` reaches the row before it counts, so a restart keeps the idle clock.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx

from .helpers import ProcessServer, ThreadServer, sign_in
from .test_hardening import Clock


def grade(client: httpx.Client, position: int, value: str = "2") -> httpx.Response:
    data = {"csrf_token": client.csrf, "grade": value}  # type: ignore[attr-defined]
    return client.post(f"/label/{position}", data=data, headers={"accept": "application/json"})


def last_seen(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT last_seen FROM sessions WHERE ended_at IS NULL")]


def test_revoke_from_another_process_refuses_the_next_request(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    for _ in range(3):  # the session is in the server's memory by now
        assert alice.get("/api/me/progress").status_code == 200
    assert grade(alice, 0).status_code == 200
    revoke = subprocess.run(
        [sys.executable, "-m", "qrelkit", "judge", "revoke", str(project), "alice"],
        capture_output=True, text=True, env={**os.environ}, check=False,
    )  # fmt: skip
    assert revoke.returncode == 0, revoke.stderr
    assert grade(alice, 1).status_code == 401
    assert alice.get("/api/me/progress").status_code == 401


def test_a_restarted_server_reads_sessions_back_even_after_sigkill(project: Path) -> None:
    server = ProcessServer(project)
    try:
        server.start()
        alice = sign_in(server.url, project, "alice")
        assert grade(alice, 0).json()["event_id"] == 1
        assert grade(alice, 1).json()["event_id"] == 2
        server.kill()
        server.start()  # same file, same port: nothing of the session is in memory now
        assert alice.get("/api/me/progress").status_code == 200
        assert grade(alice, 2).json()["event_id"] == 3  # her own count goes on from the rows
        assert grade(alice, 0, "1").json()["event_id"] == 4
    finally:
        server.stop()


def test_a_signed_out_session_stays_refused_after_a_restart(project: Path) -> None:
    from qrelkit.app.web import create_app

    with ThreadServer(create_app(project)) as srv:
        alice = sign_in(srv.url, project, "alice")
        assert alice.get("/api/me/progress").status_code == 200
        cookie = alice.cookies["qrelkit_session"]
        assert alice.post("/signout", data={"csrf_token": alice.csrf}).status_code == 303
        assert httpx.get(f"{srv.url}/api/me/progress", cookies={"qrelkit_session": cookie}).status_code == 401
    with ThreadServer(create_app(project)) as srv:
        assert httpx.get(f"{srv.url}/api/me/progress", cookies={"qrelkit_session": cookie}).status_code == 401


def test_last_seen_reaches_the_row_before_a_restart_needs_it(project: Path) -> None:
    """Idle timeout 100 s, so ``last_seen`` moves on after 10 s of use. After 60 s the row says the new
    time (to the millisecond, as the store writes times); a server started afresh then counts idleness
    from it: 95 s later the session is live (95 < 100), where the sign-in time would give 155 s."""
    from qrelkit.app.web import create_app

    clock = Clock()
    with ThreadServer(create_app(project, idle_timeout=100, clock=clock)) as srv:
        alice = sign_in(srv.url, project, "alice")
        clock.t += 60
        assert alice.get("/api/me/progress").status_code == 200
        used = dt.datetime.fromtimestamp(clock.t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        assert last_seen(project) == [used]
    clock.t += 95
    with ThreadServer(create_app(project, idle_timeout=100, clock=clock)) as srv:
        alice.base_url = httpx.URL(srv.url)
        assert alice.get("/api/me/progress").status_code == 200
        clock.t += 101
        assert alice.get("/api/me/progress").status_code == 401
