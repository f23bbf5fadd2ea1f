"""``qrelkit judge serve`` and ``invite``: a busy port is one line, and invites use the URL serve recorded."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from click.testing import CliRunner

from qrelkit.cli import main

from .helpers import ProcessServer

INVITE = r"/invite/[A-Za-z0-9_-]{43}"


def recorded(db: Path) -> str | None:
    from qrelkit.app.project import recorded_base_url
    from qrelkit.app.store import Store

    with Store(db) as store:
        return recorded_base_url(store)


def test_serve_on_a_busy_port_fails_in_one_line_before_announcing(project: Path) -> None:
    with socket.socket() as held:  # a real listener holding the port
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = CliRunner().invoke(main, ["judge", "serve", str(project), "--port", str(port)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"qrelkit: error: port {port} on 127.0.0.1 is in use; pass --port N\n"
    assert recorded(project) is None


def test_serve_refuses_a_port_out_of_range(project: Path) -> None:
    result = CliRunner().invoke(main, ["judge", "serve", str(project), "--port", "99999"])
    assert result.exit_code == 2 and "99999" in result.output and "serving" not in result.output


def test_invite_without_a_recorded_url_uses_the_default_and_says_so(project: Path) -> None:
    result = CliRunner().invoke(main, ["judge", "invite", str(project), "alice"])
    assert result.exit_code == 0, result.output
    assert re.fullmatch(r"http://127\.0\.0\.1:8000" + INVITE + "\n", result.stdout)
    assert "no server URL recorded" in result.stderr and "http://127.0.0.1:8000" in result.stderr


def test_invite_uses_the_url_serve_recorded(project: Path) -> None:
    server = ProcessServer(project, "--base-url", "https://judge.example.org/")
    try:
        server.start()
        assert recorded(project) == "https://judge.example.org"
    finally:
        server.stop()
    result = CliRunner().invoke(main, ["judge", "invite", str(project), "alice"])
    assert result.exit_code == 0, result.output
    assert re.fullmatch(r"https://judge\.example\.org" + INVITE + "\n", result.stdout)
    assert "recorded by `qrelkit judge serve`: https://judge.example.org" in result.stderr

    server = ProcessServer(project)  # host and port alone: the URL they make is recorded
    try:
        server.start()
    finally:
        server.stop()
    result = CliRunner().invoke(main, ["judge", "invite", str(project), "bob"])
    assert re.fullmatch(re.escape(server.url) + INVITE + "\n", result.stdout)
    explicit = CliRunner().invoke(
        main, ["judge", "invite", str(project), "bob", "--base-url", "http://x.test"]
    )
    assert re.fullmatch(r"http://x\.test" + INVITE + "\n", explicit.stdout) and explicit.stderr == ""


def test_server_url_names_an_address_a_browser_can_open() -> None:
    from qrelkit.app.web import server_url

    assert server_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert server_url("::1", 8080) == "http://[::1]:8080"
    assert server_url("0.0.0.0", 8000) is None and server_url("::", 8000) is None
