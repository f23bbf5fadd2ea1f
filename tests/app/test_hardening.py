"""Server hardening: slow clients, private database files, sessions that end, the sign-in limit under
concurrency and behind proxies, labellers' event ids, and one server per database.

Every server here is real (uvicorn on loopback, a real SQLite file); loops are bounded and waits have
generous deadlines, and no assertion depends on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from qrelkit.app.store import Store
from qrelkit.cli import main

from .helpers import CSRF_RE, ProcessServer, ThreadServer, free_port, invite, sign_in

ATTACKER = "127.0.0.2"  # Linux answers the whole of 127.0.0.0/8 on loopback: a second client address
HALF_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "  # headers never finished


def open_half_requests(port: int, n: int, *, source: str = ATTACKER) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(10)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        with contextlib.suppress(OSError):  # already closed by the server: counted as closed below
            s.sendall(HALF_REQUEST)
        socks.append(s)
    return socks


def wait_closed(socks: list[socket.socket], deadline: float) -> int:
    """How many of ``socks`` the server closed (EOF or reset) before ``deadline`` (monotonic seconds)."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    while closed < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            try:
                data = s.recv(4096)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                closed += 1
    sel.close()
    return closed


def limit_open_files(n: int) -> None:
    """For the server process: the common default of 1,024 open files."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


# 1. slow clients


def test_half_open_requests_from_one_client_do_not_starve_others(project: Path, tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1500:  # the test itself holds 1,100 sockets
        if hard != resource.RLIM_INFINITY and hard < 1500:
            pytest.skip(f"this test needs 1,500 open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1500, hard))
    port = free_port()
    cmd = [sys.executable, "-m", "qrelkit", "judge", "serve", str(project), "--port", str(port),
           "--request-timeout", "3"]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as err:  # a file, not a pipe: a full pipe would stop the server
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=lambda: limit_open_files(1024)
        )
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        socks = open_half_requests(port, 1100)
        # another client is answered while the 1,100 half-open requests are held
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).json()["ok"] is True
        # and the server closes every one of them: past the per-client limit at once, the rest after the
        # request timeout (3 s); 60 s is a bound for a loaded machine, not a measurement
        assert wait_closed(socks, time.monotonic() + 60) == 1100
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
        printed = log.read_text()
        assert "at most 448 connections instead of 512" in printed  # 1,024 files - 4 x 128 - 64
        assert "Too many open files" not in printed  # the server never ran out of files
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_a_full_server_makes_room_by_closing_the_longest_waiting_connection(project: Path) -> None:
    from qrelkit.app.web import create_app
    from qrelkit.app.web.server import ServerLimits

    limits = ServerLimits(max_connections=20, per_client=1000, request_timeout=600)
    with ThreadServer(create_app(project), limits) as srv:
        socks = open_half_requests(srv.port, 40, source="127.0.0.1")
        try:
            assert httpx.get(f"{srv.url}/healthz", timeout=30).status_code == 200
            # the request timeout (600 s) closed none: the limit did; 20 open at most, one of them ours
            assert wait_closed(socks, time.monotonic() + 30) >= 21
        finally:
            for s in socks:
                s.close()


def test_a_request_sent_a_byte_at_a_time_is_closed_at_the_request_timeout(project: Path) -> None:
    from qrelkit.app.web import create_app
    from qrelkit.app.web.server import ServerLimits

    with ThreadServer(create_app(project), ServerLimits(request_timeout=1)) as srv, socket.socket() as s:
        s.connect(("127.0.0.1", srv.port))
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 200
        sent = 0
        for byte in request:  # 200 bytes at 0.1 s each would take 20 s; the timeout is 1 s
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
            time.sleep(0.1)
        else:
            s.settimeout(30)
            assert s.recv(1) == b"", "the connection outlived the whole trickle"
        assert sent < len(request)


def test_serve_prints_its_limits_and_refuses_a_bad_proxy(project: Path) -> None:
    bad = CliRunner().invoke(main, ["judge", "serve", str(project), "--trusted-proxy", "proxy.example"])
    assert bad.exit_code == 2 and "'proxy.example'" in bad.output and "serving" not in bad.output
    os.chmod(project, 0o640)
    server = ProcessServer(project, "--trusted-proxy", "10.0.0.0/8", "--idle-timeout", "30m")
    try:
        server.start()
    finally:
        server.stop()
    assert server.proc is not None and server.proc.stderr is not None
    printed = server.proc.stderr.read().decode()
    assert (
        "limits: a request must arrive within 10 s; at most 512 connections, 128 per client address; "
        "idle connections close after 5 s; X-Forwarded-For trusted from: 10.0.0.0/8; "
        "sessions end after 30m unused\n"
    ) in printed
    assert f"{project} was mode 0640 (others could read the session secret): now 0600\n" in printed


# 2. private files


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_database_and_its_wal_and_shm_are_private(tmp_path: Path) -> None:
    from .helpers import make_project

    old = os.umask(0o000)  # a permissive umask: the modes come from qrelkit, not from the umask
    try:
        db = make_project(tmp_path)
        with Store(db) as store:
            store.set_meta("probe", "1")
            assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
            assert [mode(db), mode(f"{db}-wal"), mode(f"{db}-shm")] == [0o600, 0o600, 0o600]
    finally:
        os.umask(old)


def test_an_existing_database_readable_by_others_is_tightened(project: Path) -> None:
    os.chmod(project, 0o644)
    with Store(project) as store:
        assert mode(project) == 0o600
        assert store.notes == [f"{project} was mode 0644 (others could read the session secret): now 0600"]
    with Store(project) as store:
        assert store.notes == []


# 3. sessions


def test_a_session_signed_out_is_refused_when_its_cookie_is_replayed(
    server: ThreadServer, project: Path
) -> None:
    alice = sign_in(server.url, project, "alice")
    phone = sign_in(server.url, project, "alice")  # another session of the same person
    cookie = alice.cookies["qrelkit_session"]
    assert alice.post("/signout", data={"csrf_token": alice.csrf}).status_code == 303
    replay = httpx.Client(base_url=server.url, cookies={"qrelkit_session": cookie})
    assert replay.get("/api/me/progress").status_code == 401
    assert replay.get("/label").status_code == 401
    assert phone.get("/api/me/progress").status_code == 200  # only the session signed out ends


class Clock:
    """A clock the test moves: seconds since the epoch."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def test_a_session_unused_past_the_idle_timeout_is_refused(project: Path) -> None:
    from qrelkit.app.web import create_app

    clock = Clock()
    with ThreadServer(create_app(project, idle_timeout=100, clock=clock)) as srv:
        alice = sign_in(srv.url, project, "alice")
        for _ in range(3):  # use keeps it alive: 95 s apart each time, 285 s in all
            clock.t += 95
            assert alice.get("/api/me/progress").status_code == 200
        clock.t += 101
        assert alice.get("/api/me/progress").status_code == 401
        assert sign_in(srv.url, project, "alice").get("/api/me/progress").status_code == 200


# 4. the sign-in limit


def test_concurrent_failed_sign_ins_cannot_pass_the_limit(project: Path) -> None:
    from qrelkit.app.web import create_app

    with ThreadServer(create_app(project, signin_limit=(5, 60.0))) as srv:
        page = httpx.get(f"{srv.url}/invite/{invite(project, 'alice')}")  # a success: not counted
        csrf, cookies = CSRF_RE.search(page.text).group(1), dict(page.cookies)  # type: ignore[union-attr]
        n = 40
        barrier, codes = threading.Barrier(n), []

        def attempt(i: int) -> None:
            with httpx.Client(base_url=srv.url, cookies=cookies, timeout=60) as client:
                barrier.wait(timeout=60)
                codes.append(client.post(f"/invite/{'x' * 42}{i:02d}", data={"csrf_token": csrf}).status_code)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert sorted(codes) == [403] * 5 + [429] * 35


def test_concurrent_good_sign_ins_from_one_address_all_pass(project: Path) -> None:
    """Twenty labellers behind one address use their links at once, with a limit of 1: attempts in flight
    (each waits for the database) fill the limit, and the others wait for their answers instead of being
    refused for failures nobody made (an attempt counts from its start and is taken back on success)."""
    from qrelkit.app.web import create_app

    with ThreadServer(create_app(project, signin_limit=(1, 60.0))) as srv:
        n = 20
        links = [f"/invite/{invite(project, 'alice')}" for _ in range(n)]
        barrier, codes = threading.Barrier(n), []

        def use_link(link: str) -> None:
            with httpx.Client(base_url=srv.url, timeout=60) as client:
                page = client.get(link)
                csrf = CSRF_RE.search(page.text).group(1)  # type: ignore[union-attr]
                barrier.wait(timeout=60)
                codes.append(client.post(link, data={"csrf_token": csrf}).status_code)

        threads = [threading.Thread(target=use_link, args=(link,)) for link in links]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert codes == [303] * n
        assert httpx.get(f"{srv.url}/invite/{'x' * 44}").status_code == 403  # one failure fills the limit
        assert httpx.get(f"{srv.url}/invite/{'y' * 44}").status_code == 429  # then nobody waits: refused


def bad_sign_ins(url: str, n: int, **client_kwargs: object) -> list[int]:
    """``n`` made-up links, each claiming another client address in ``X-Forwarded-For``."""
    with httpx.Client(base_url=url, **client_kwargs) as client:  # type: ignore[arg-type]
        return [
            client.get(f"/invite/{'x' * 43}{i}", headers={"x-forwarded-for": f"203.0.113.{i}"}).status_code
            for i in range(n)
        ]


def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(project: Path) -> None:
    from qrelkit.app.web import create_app
    from qrelkit.app.web.server import ServerLimits

    with ThreadServer(create_app(project, signin_limit=(3, 60.0))) as srv:  # no proxy trusted: the default
        assert bad_sign_ins(srv.url, 5) == [403, 403, 403, 429, 429]
    limits = ServerLimits(trusted_proxies=("127.0.0.1",))
    with ThreadServer(create_app(project, signin_limit=(3, 60.0)), limits) as srv:
        # from another address, the header is still ignored
        other = httpx.HTTPTransport(local_address=ATTACKER)
        assert bad_sign_ins(srv.url, 5, transport=other) == [403, 403, 403, 429, 429]
        # from the proxy, each forwarded address is a client of its own
        assert bad_sign_ins(srv.url, 5) == [403] * 5


# 5. event ids


def test_event_ids_shown_to_a_labeller_count_only_their_own_grades(
    server: ThreadServer, project: Path
) -> None:
    alice, bob = sign_in(server.url, project, "alice"), sign_in(server.url, project, "bob")

    def grade_next(client: httpx.Client) -> int:
        location = client.get("/label").headers["location"]
        r = client.post(location, data={"csrf_token": client.csrf, "grade": "1"},  # type: ignore[attr-defined]
                         headers={"accept": "application/json"})  # fmt: skip
        assert r.status_code == 200, r.text
        return int(r.json()["event_id"])

    order = [alice, bob, bob, alice, bob, bob, alice]
    ids = [(c is alice, grade_next(c)) for c in order]
    assert [i for a, i in ids if a] == [1, 2, 3]
    assert [i for a, i in ids if not a] == [1, 2, 3, 4]
    with sqlite3.connect(project) as conn:  # the store keeps its global ids: 7 events in all
        assert conn.execute("SELECT MAX(event_id) FROM grade_events").fetchone()[0] == 7


# 6. one server per database


def test_a_second_server_on_the_same_database_is_refused(project: Path) -> None:
    first = ProcessServer(project)
    try:
        first.start()
        assert first.proc is not None
        port = free_port()
        second = subprocess.run(
            [sys.executable, "-m", "qrelkit", "judge", "serve", str(project), "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        assert second.stdout == ""
        assert second.stderr == (
            f"qrelkit: error: {project} is already being served (pid {first.proc.pid}, {first.url}); "
            "one `qrelkit judge serve` per database: stop that one first, or use its address\n"
        )
        with socket.socket() as s:  # it stopped before binding its port
            s.bind(("127.0.0.1", port))
        first.kill()  # SIGKILL: the kernel releases the lock
        again = ProcessServer(project).start()
        again.stop()
    finally:
        first.stop()
