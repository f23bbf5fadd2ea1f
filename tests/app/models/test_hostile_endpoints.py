"""Endpoints and programs that misbehave on purpose: a real TCP server on 127.0.0.1 (socketserver in a thread,
started by the tests) that speaks HTTP badly, and real subprocesses as command labellers. None of them may
hang a run, stop it with a traceback, receive the key at another address, or see the key stored or printed."""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qrelkit.app.models.client import AttemptFailed, ChatClient, CommandClient, EndpointError

SCALE = (0, 1, 2, 3)
KEY = "sk-secret-0123456789abcdef"


class RawServer:
    """A TCP server on 127.0.0.1 whose ``speak(sock, request)`` writes whatever bytes it likes in answer to
    one HTTP request (read up to its body): a loopback endpoint that speaks the protocol badly."""

    def __init__(self, speak: Callable[[Any, bytes], None]) -> None:
        self.requests: list[bytes] = []
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
                while len(body) < length:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                server.requests.append(head + b"\r\n\r\n" + body)
                with contextlib.suppress(OSError):
                    speak(self.request, head)

        socketserver.ThreadingTCPServer.daemon_threads = True
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.tcp.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.tcp.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.tcp.shutdown()
        self.tcp.server_close()


def _completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


def _http(status: str, body: bytes, headers: tuple[str, ...] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _finishes(call: Callable[[], Any], within: float = 20.0) -> Any:
    """``call()`` in a thread; the test fails (instead of hanging the suite) when it has not returned
    ``within`` seconds, a bound far above the attempt's deadline."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(("value", call()))
        except BaseException as exc:
            out.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), "the attempt never ended"
    return out[0]


def _ask(url: str, *, key: str | None = None, timeout: float = 1.0) -> tuple[str, Any]:
    client = ChatClient(url, "judge-1", scale=SCALE, api_key=key, api_key_env="JUDGE_KEY" if key else None,
                        timeout=timeout)  # fmt: skip
    return _finishes(lambda: client.ask("1", "prompt", {}))


# --- redirects ---------------------------------------------------------------------------------------------


def test_a_redirect_to_another_origin_is_a_failed_attempt_and_the_key_never_leaves() -> None:
    with RawServer(
        lambda s, h: s.sendall(_http("200 OK", _completion('{"grade": 3, "reason": "x"}')))
    ) as other:
        target = other.url + "/chat/completions"
        for status in ("302 Found", "307 Temporary Redirect", "308 Permanent Redirect"):
            with RawServer(
                lambda s, h, st=status: s.sendall(_http(st, b"", (f"Location: {target}",)))
            ) as srv:
                kind, value = _ask(srv.url, key=KEY)
            assert kind == "error" and isinstance(value, AttemptFailed), value
            assert "redirect" in value.error and target in value.error
        assert other.requests == []  # neither the request nor the key reached the other address


# --- the deadline --------------------------------------------------------------------------------------------


def _trickle(sock: Any, head: bytes) -> None:
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
    for _ in range(200):  # one byte every 0.2 s: each read is quick, the whole never ends
        time.sleep(0.2)
        sock.sendall(b" ")


def _trickle_headers(sock: Any, head: bytes) -> None:
    sock.sendall(b"HTTP/1.1 200 OK\r\n")
    for i in range(200):
        time.sleep(0.2)
        sock.sendall(f"X-{i}: a\r\n".encode())


@pytest.mark.parametrize("speak", [_trickle, _trickle_headers], ids=["body", "headers"])
def test_the_timeout_is_a_deadline_for_the_whole_attempt(speak: Callable[[Any, bytes], None]) -> None:
    with RawServer(speak) as srv:
        kind, value = _ask(srv.url, timeout=1.0)
    assert kind == "error" and isinstance(value, AttemptFailed), value
    assert "no reply within 1 s (--timeout)" in value.error
    assert value.latency_ms is not None and value.latency_ms < 10_000


# --- malformed HTTP ----------------------------------------------------------------------------------------------


def _bad_chunk(sock: Any, head: bytes) -> None:
    sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")


def _nested(sock: Any, head: bytes) -> None:
    sock.sendall(_http("200 OK", b"[" * 100_000 + b"]" * 100_000))


def _nested_content(sock: Any, head: bytes) -> None:
    sock.sendall(_http("200 OK", _completion("[" * 100_000 + "]" * 100_000)))


@pytest.mark.parametrize(
    ("speak", "problem"),
    [
        (lambda s, h: s.sendall(b"GARBAGE STATUS LINE\r\n\r\n"), "not valid HTTP"),
        (
            lambda s, h: s.sendall(
                b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: a\r\n" % i for i in range(150)) + b"\r\n{}"
            ),
            "not valid HTTP",
        ),
        (
            lambda s, h: s.sendall(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n"),
            "not valid HTTP",
        ),
        (_bad_chunk, "not valid HTTP"),
        (lambda s, h: s.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{"cho'), "not valid HTTP"),
        (_nested, "not a chat completion"),
        (_nested_content, "not a JSON object"),
    ],
    ids=[
        "status-line",
        "150-headers",
        "long-header",
        "chunk-size",
        "cut-short",
        "nested-reply",
        "nested-content",
    ],
)
def test_malformed_http_is_one_failed_attempt(speak: Callable[[Any, bytes], None], problem: str) -> None:
    with RawServer(speak) as srv:
        kind, value = _ask(srv.url)
    assert kind == "error" and isinstance(value, AttemptFailed), repr(value)
    assert problem in value.error


def test_malformed_http_in_a_run_is_retried_counted_and_no_traceback(gated: Path, cli) -> None:
    with RawServer(lambda s, h: s.sendall(b"GARBAGE STATUS LINE\r\n\r\n")) as srv:
        assert cli("judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1",
                   "--timeout", "1", "--max-retries", "1").exit_code == 0  # fmt: skip
        result = cli("judge", "model", "run", gated, "judge", "--calibration-only", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    with sqlite3.connect(gated) as conn:
        errors = [r[0] for r in conn.execute("SELECT error FROM model_attempts")]
    assert len(errors) == 4 and all("not valid HTTP" in e for e in errors)  # 2 pairs x (1 + 1 retry)


# --- the key echoed ---------------------------------------------------------------------------------------------


def _echo(status: str) -> Callable[[Any, bytes], None]:
    def speak(sock: Any, head: bytes) -> None:
        auth = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"authorization"))
        sock.sendall(_http(status, b'{"error": "bad request, you sent ' + auth + b'"}'))

    return speak


def test_an_echoed_key_is_replaced_in_the_failed_attempt_and_the_error_line() -> None:
    with RawServer(_echo("500 Internal Server Error")) as srv:
        kind, value = _ask(srv.url, key=KEY)
    assert isinstance(value, AttemptFailed) and value.raw is not None
    assert KEY not in value.raw and "[key]" in value.raw
    with RawServer(_echo("400 Bad Request")) as srv:
        kind, value = _ask(srv.url, key=KEY)
    assert isinstance(value, EndpointError)
    assert KEY not in str(value) and "[key]" in str(value)
    echoed = _completion(json.dumps({"grade": 1, "reason": f"the key is {KEY}"}))
    with RawServer(lambda s, h: s.sendall(_http("200 OK", echoed))) as srv:
        kind, value = _ask(srv.url, key=KEY)
    assert kind == "value" and KEY not in value.reason and "[key]" in value.reason
    # echoed in another letter case: replaced all the same
    shouted = _completion(json.dumps({"grade": 1, "reason": f"k={KEY.upper()} and {KEY.lower()}"}))
    with RawServer(lambda s, h: s.sendall(_http("200 OK", shouted))) as srv:
        kind, value = _ask(srv.url, key=KEY)
    assert kind == "value" and value.reason == "k=[key] and [key]"


@pytest.mark.parametrize("status", ["500 Internal Server Error", "400 Bad Request", "302 Found"])
def test_a_key_echoed_across_the_cut_leaves_none_of_itself(status: str) -> None:
    """The endpoint echoes the key starting 10 characters before the 4,000-character cut of the stored
    text: the key is replaced before the text is cut, so not even its first 10 characters remain."""
    body = ("x" * 3990 + KEY + "y" * 50).encode()
    headers = ("Location: http://127.0.0.1:9/elsewhere",) if status.startswith("302") else ()
    with RawServer(lambda s, h: s.sendall(_http(status, body, headers))) as srv:
        _kind, value = _ask(srv.url, key=KEY)
    text = value.raw if isinstance(value, AttemptFailed) else str(value)
    assert text is not None and KEY[:10] not in text
    if isinstance(value, AttemptFailed):
        assert text == "x" * 3990 + "[key]" + "y" * 5  # 3990 + 5 + 5 = 4000 characters


def test_an_echoed_key_reaches_neither_the_database_nor_stderr(gated: Path, cli, monkeypatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", KEY)
    with RawServer(_echo("500 Internal Server Error")) as srv:
        assert cli("judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1",
                   "--api-key-env", "JUDGE_KEY", "--max-retries", "0").exit_code == 0  # fmt: skip
        cli("judge", "model", "run", gated, "judge", "--calibration-only", "--limit", "1")
    with RawServer(_echo("400 Bad Request")) as srv:
        assert cli("judge", "model", "add", gated, "judge2", "--endpoint", srv.url, "--model", "judge-1",
                   "--api-key-env", "JUDGE_KEY").exit_code == 0  # fmt: skip
        result = cli("judge", "model", "run", gated, "judge2", "--calibration-only", "--limit", "1")
    assert result.exit_code == 1 and KEY not in result.output and "[key]" in result.stderr
    assert KEY.encode() not in gated.read_bytes()
    with sqlite3.connect(gated) as conn:
        raws = [r[0] for r in conn.execute("SELECT raw FROM model_attempts")]
    assert raws and all(KEY not in r and "[key]" in r for r in raws)


# --- command labellers ---------------------------------------------------------------------------------------


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "judge_program.py"
    path.write_text(body)
    return f"{sys.executable} {path}"


def test_a_program_that_stops_reading_cannot_hang_the_run(tmp_path: Path) -> None:
    command = _program(tmp_path, "import time\ntime.sleep(120)\n")  # never reads its input
    client = CommandClient(command, scale=SCALE, timeout=1.0)
    document = "word " * 60_000  # 300 KB: past any pipe's buffer
    try:
        for _ in range(2):
            kind, value = _finishes(lambda: client.ask("1", "prompt", {"document": document}))
            assert kind == "error" and isinstance(value, AttemptFailed), value
            assert "did not read the request within 1 s" in value.error
    finally:
        client.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


FORKING = """\
import os, sys, time
pids = sys.argv[1]
child = os.fork()
if child == 0:
    time.sleep(120)
    os._exit(0)
with open(pids, "a") as f:
    f.write(f"{child}\\n")
for line in sys.stdin:
    time.sleep(120)  # never answers
"""


def test_a_programs_children_end_with_it_on_timeout_and_close(tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    command = _program(tmp_path, FORKING) + f" {pids}"
    client = CommandClient(command, scale=SCALE, timeout=1.0)
    try:
        for pair in ("1", "2"):
            _kind, value = _finishes(lambda pair=pair: client.ask(pair, "prompt", {}))
            assert isinstance(value, AttemptFailed) and "no reply within 1 s" in value.error
    finally:
        client.close()
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in children)


EXITING = """\
import os, sys, time
if os.fork() == 0:  # a child holding the program's output open
    time.sleep(120)
    os._exit(0)
sys.stdin.readline()
print("bye", file=sys.stderr)
sys.exit(3)
"""


def test_the_programs_exit_is_noticed_while_a_child_holds_its_output(tmp_path: Path) -> None:
    client = CommandClient(_program(tmp_path, EXITING), scale=SCALE, timeout=2.0)
    try:
        _kind, value = _finishes(lambda: client.ask("1", "prompt", {}))
    finally:
        client.close()
    assert isinstance(value, EndpointError), value  # not a timeout: the exit is seen, with its code
    assert "exited (code 3)" in str(value) and "bye" in str(value)


def test_a_program_that_closes_its_output_and_runs_on_cannot_hang_the_run(tmp_path: Path) -> None:
    """The program closes its output and sleeps for 120 s: the client sees the end of the output, ends the
    program's group after a short grace and says so, well within the bound (20 s) of :func:`_finishes`."""
    command = _program(tmp_path, "import os, time\nos.close(1)\ntime.sleep(120)\n")
    client = CommandClient(command, scale=SCALE, timeout=2.0)
    try:
        _kind, value = _finishes(lambda: client.ask("1", "prompt", {}))
        proc = client._proc
    finally:
        client.close()
    assert isinstance(value, EndpointError), value
    assert "closed its output and kept running" in str(value) and len(str(value).splitlines()) == 1
    assert proc is not None and not _alive(proc.pid)


@pytest.fixture(autouse=True)
def _no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    assert os.environ.get("JUDGE_KEY") is None


# --- two runs at once ------------------------------------------------------------------------------------------


def test_two_runs_of_one_labeller_at_once_pay_for_no_pair_twice(gated: Path, cli) -> None:
    """Two real processes run the same labeller against one loopback chat server: one runs, the other is
    refused with one line; each of the 10 pairs is asked once and graded once."""
    from .helpers import ChatServer, scripted

    with ChatServer(scripted(2), delay=0.3) as srv:  # each run lasts ~1.5 s: the two overlap
        assert cli("judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1",
                   "--max-concurrency", "2").exit_code == 0  # fmt: skip
        import subprocess

        command = [
            sys.executable,
            "-m",
            "qrelkit",
            "judge",
            "model",
            "run",
            str(gated),
            "judge",
            "--calibration-only",
            "--limit",
            "10",
        ]
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]  # fmt: skip
        outs = [p.communicate(timeout=60) for p in procs]
        codes = sorted(p.returncode for p in procs)
        asked = sum(srv.asked.values())
    refused = [err for (_, err), p in zip(outs, procs, strict=True) if p.returncode == 1]
    assert codes == [0, 1], outs
    assert "already running" in refused[0] and len(refused[0].strip().splitlines()) == 1
    with sqlite3.connect(gated) as conn:
        events = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT pair_id) FROM grade_events JOIN users USING (user_id) WHERE name = 'judge'"
        ).fetchone()
    assert asked == 10 and tuple(events) == (10, 10)


def test_the_run_lock_holds_between_two_openings_in_one_process(gated: Path, cli) -> None:
    from qrelkit.app.models.register import load_model
    from qrelkit.app.models.runner import run_lock
    from qrelkit.app.store import Store
    from qrelkit.errors import QrelkitError

    assert cli("judge", "model", "add", gated, "judge", "--endpoint", "http://127.0.0.1:9/v1",
               "--model", "judge-1").exit_code == 0  # fmt: skip
    with Store(gated) as store:
        model = store.read(lambda c: load_model(c, "judge"))
    with run_lock(gated, model), pytest.raises(QrelkitError, match="already running"), run_lock(gated, model):
        pass
    with run_lock(gated, model):  # released by the first
        pass


def test_the_run_lock_leaves_the_database_files_locks_alone(gated: Path, cli, tmp_path: Path) -> None:
    """A POSIX lock this process holds on the database (as SQLite holds its own) is still held, as another
    process sees it, after a run lock was taken and released: the run lock never opens or closes the
    database file itself but locks ``<db>.run-lock``."""
    import fcntl
    import subprocess

    from qrelkit.app.models.register import load_model
    from qrelkit.app.models.runner import run_lock
    from qrelkit.app.store import Store

    assert cli("judge", "model", "add", gated, "judge", "--endpoint", "http://127.0.0.1:9/v1",
               "--model", "judge-1").exit_code == 0  # fmt: skip
    with Store(gated) as store:
        model = store.read(lambda c: load_model(c, "judge"))
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 100)\n    print('free')\n"
        "except OSError:\n    print('held')\n"
    )
    held = os.open(gated, os.O_RDWR)
    try:
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 100)  # a byte SQLite never uses
        with run_lock(gated, model):
            pass
        seen = subprocess.run([sys.executable, "-c", probe, str(gated)], capture_output=True, text=True)
        assert seen.stdout.strip() == "held"
    finally:
        os.close(held)
    assert Path(str(gated) + ".run-lock").exists()
    # between processes: a run lock held here refuses a run lock taken by another process
    code = (
        "import sys\n"
        "from qrelkit.app.models.register import load_model\n"
        "from qrelkit.app.models.runner import run_lock\n"
        "from qrelkit.app.store import Store\n"
        "from qrelkit.errors import QrelkitError\n"
        "with Store(sys.argv[1]) as s:\n    m = s.read(lambda c: load_model(c, 'judge'))\n"
        "try:\n    with run_lock(sys.argv[1], m):\n        print('got it')\n"
        "except QrelkitError as e:\n    print('refused')\n"
    )
    with run_lock(gated, model):
        other = subprocess.run([sys.executable, "-c", code, str(gated)], capture_output=True, text=True)
    assert other.stdout.strip() == "refused", other.stderr
    again = subprocess.run([sys.executable, "-c", code, str(gated)], capture_output=True, text=True)
    assert again.stdout.strip() == "got it", again.stderr


# --- the prompt template's one bound ------------------------------------------------------------------------


def test_the_prompt_template_has_one_bound_stated_once(gated: Path, cli, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    rows = [
        line for line in (root / "docs" / "limits.md").read_text().splitlines() if line.startswith("| prompt")
    ]
    assert len(rows) == 1 and "| 400,000 bytes |" in rows[0], rows
    template = tmp_path / "prompt.j2"
    body = "Query: {{ query }}\nDocument: {{ document }}\n"
    template.write_text(body + "#" * (400_000 - len(body)))  # 400,000 bytes, 400,000 characters: taken
    added = cli("judge", "model", "add", gated, "judge", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                "--prompt", template)  # fmt: skip
    assert added.exit_code == 0, added.output
    template.write_text(body + "#" * (400_001 - len(body)))
    refused = cli("judge", "model", "add", gated, "judge2", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                  "--prompt", template)  # fmt: skip
    assert refused.exit_code == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.output
    assert "prompt file is 400,001 bytes, larger than the bound of 400,000 bytes" in refused.stderr


def test_the_proxy_the_environment_names_is_used_as_urllib_used_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback server standing for an HTTP proxy: the request reaches it with the endpoint's absolute URL
    (urllib's behaviour, kept now that the client speaks http.client itself)."""
    answer = _completion('{"grade": 2, "reason": "via the proxy"}')
    with RawServer(lambda s, h: s.sendall(_http("200 OK", answer))) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        kind, value = _ask("http://judge.invalid:8000/v1")
    assert kind == "value" and value.grade == 2, value
    assert proxy.requests[0].startswith(b"POST http://judge.invalid:8000/v1/chat/completions HTTP/1.1")
