"""Security: roles, CSRF, invites, rate limiting, bounded input, blind judging and inert documents."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import httpx
import pytest

from .helpers import CSRF_RE, ThreadServer, count_events, invite, position_of, sign_in


def grade(client: httpx.Client, position: int, value: str = "2", **extra: str) -> httpx.Response:
    data = {"csrf_token": client.csrf, "grade": value, **extra}
    return client.post(f"/label/{position}", data=data, headers={"accept": "application/json"})


def test_labeller_cannot_reach_admin_pages_or_other_grades(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    bob = sign_in(server.url, project, "bob")
    assert grade(bob, 0, "3").status_code == 200
    for path in ("/admin", "/admin/api/status", "/admin/api/kappa", "/admin/api/queue",
                 "/admin/api/labellers/bob/grades", "/admin/export/final", "/admin/export/labeller/bob",
                 "/admin/pair?query_id=q1&doc_id=keys/rotate"):  # fmt: skip
        assert alice.get(path).status_code == 403, path
    before = count_events(project)
    adjudicate = {"csrf_token": alice.csrf, "query_id": "q1", "doc_id": "keys/rotate", "grade": "0"}
    assert alice.post("/admin/adjudicate", data=adjudicate).status_code == 403
    assert alice.post("/admin/invite", data={"csrf_token": alice.csrf, "name": "bob"}).status_code == 403
    # Positions are per labeller: alice cannot address a pair outside her own list.
    assert grade(alice, 999).status_code == 403
    assert count_events(project) == before
    mine = alice.get("/api/me/grades").json()["grades"]
    assert mine == []  # bob's grade of a shared calibration pair is not alice's
    assert bob.get("/api/me/grades").json()["grades"][0]["grade"] == 3


def test_anonymous_requests_are_refused(server: ThreadServer, project: Path) -> None:
    anon = httpx.Client(base_url=server.url)
    assert anon.get("/label").status_code == 401
    assert anon.get("/admin").status_code == 401
    assert anon.get("/api/me/grades").status_code == 401
    assert anon.post("/label/0", data={"grade": "1"}).status_code == 401
    forged = anon.cookies.set("qrelkit_session", "eyJ1IjoyLCJlIjowLCJuIjoieCJ9.AAAAAA.forged")
    assert forged is None and anon.get("/label").status_code == 401
    assert count_events(project) == 0


def test_admin_reaches_admin_pages(server: ThreadServer, project: Path) -> None:
    admin = sign_in(server.url, project, "admin")
    assert admin.get("/admin").status_code == 200
    assert admin.get("/admin/api/status").json()["labellers"][0]["name"] == "alice"
    assert admin.get("/label").status_code == 403  # the admin role does not grade


def test_requests_without_a_valid_csrf_token_are_refused(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    headers = {"accept": "application/json"}
    assert alice.post("/label/0", data={"grade": "1"}, headers=headers).status_code == 403
    assert (
        alice.post("/label/0", data={"grade": "1", "csrf_token": "0" * 64}, headers=headers).status_code
        == 403
    )
    bob = sign_in(server.url, project, "bob")  # a real token, of another session
    assert (
        alice.post("/label/0", data={"grade": "1", "csrf_token": bob.csrf}, headers=headers).status_code
        == 403
    )
    cross = alice.post(
        "/label/0",
        data={"grade": "1", "csrf_token": alice.csrf},
        headers={**headers, "origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    opaque = alice.post(
        "/label/0", data={"grade": "1", "csrf_token": alice.csrf}, headers={**headers, "origin": "null"}
    )
    assert opaque.status_code == 403
    assert alice.post("/signout", data={"to": "/"}).status_code == 403
    assert count_events(project) == 0
    ok = alice.post("/label/0", data={"grade": "1"}, headers={**headers, "x-csrf-token": alice.csrf})
    assert ok.status_code == 200 and count_events(project) == 1


def test_used_forged_and_expired_invites_are_refused(server: ThreadServer, project: Path) -> None:
    token = invite(project, "alice")
    client = httpx.Client(base_url=server.url)
    page = client.get(f"/invite/{token}")
    csrf = CSRF_RE.search(page.text).group(1)
    assert client.post(f"/invite/{token}", data={"csrf_token": csrf}).status_code == 303
    other = httpx.Client(base_url=server.url)
    assert other.get(f"/invite/{token}").status_code == 403  # used
    page = other.get(f"/invite/{invite(project, 'bob')}")  # a valid form gives this client a CSRF token
    csrf = CSRF_RE.search(page.text).group(1)
    assert other.post(f"/invite/{token}", data={"csrf_token": csrf}).status_code == 403
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert other.get(f"/invite/{forged}").status_code == 403
    assert other.post(f"/invite/{forged}", data={"csrf_token": csrf}).status_code == 403
    assert other.get("/invite/x").status_code == 403
    assert other.get("/label").status_code == 401
    with sqlite3.connect(project) as conn:
        conn.execute("UPDATE invites SET expires_at = '2000-01-01T00:00:00.000Z' WHERE used_at IS NULL")
    expired = invite(project, "bob")
    with sqlite3.connect(project) as conn:
        conn.execute("UPDATE invites SET expires_at = '2000-01-01T00:00:00.000Z' WHERE used_at IS NULL")
    assert other.get(f"/invite/{expired}").status_code == 403


def test_failed_sign_ins_are_rate_limited(project: Path) -> None:
    from qrelkit.app.web import create_app

    with ThreadServer(create_app(project, signin_limit=(3, 60.0))) as srv:
        for _ in range(5):  # successful sign-ins do not count: a whole office can sign in at once
            assert sign_in(srv.url, project, "alice").get("/api/me/progress").status_code == 200
        client = httpx.Client(base_url=srv.url)
        codes = [client.get(f"/invite/{'x' * 43}{i}").status_code for i in range(5)]
        assert codes == [403, 403, 403, 429, 429]
        assert "retry-after" in client.get(f"/invite/{'x' * 43}9").headers
        token = invite(project, "alice")
        assert client.get(f"/invite/{token}").status_code == 200  # a good link always passes


@pytest.mark.parametrize(
    ("data", "status"),
    [
        ({"grade": "7"}, 400),  # off the scale
        ({"grade": "two"}, 400),
        ({"grade": ""}, 400),  # neither a grade nor unsure
        ({"grade": "1", "unsure": "maybe"}, 400),
        ({"grade": "1", "elapsed_ms": "soon"}, 400),
        ({"grade": "1", "admin": "1"}, 400),  # unknown field
        ({"grade": "1", "note": "x" * 2001}, 400),
        ({"grade": "1", "note": "x" * 20_000}, 413),  # larger than a form may be
    ],
)
def test_bad_form_input_gets_a_4xx_and_changes_nothing(
    server: ThreadServer, project: Path, data: dict[str, str], status: int
) -> None:
    alice = sign_in(server.url, project, "alice")
    response = alice.post("/label/0", data={"csrf_token": alice.csrf, **data})
    assert response.status_code == status, response.text
    assert count_events(project) == 0


def test_malformed_bodies_get_a_4xx_and_change_nothing(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    form = {"content-type": "application/x-www-form-urlencoded"}
    bad = [
        (b"grade=1&grade=2&csrf_token=" + alice.csrf.encode(), form, 400),  # repeated field
        (b"grade=%ff&csrf_token=" + alice.csrf.encode(), form, 400),  # not UTF-8
        (
            b"grade=1&csrf_token=" + alice.csrf.encode() + b"&" + b"&".join(b"f%d=1" % i for i in range(40)),
            form,
            400,
        ),
        (b'{"grade": 1}', {"content-type": "application/json"}, 415),
        (b"x" * 100_000, form, 413),
    ]
    for body, headers, status in bad:
        assert alice.post("/label/0", content=body, headers=headers).status_code == status, body[:40]
    assert count_events(project) == 0
    assert alice.post("/label/-1", data={"csrf_token": alice.csrf, "grade": "1"}).status_code == 404
    assert count_events(project) == 0


def test_positions_beyond_64_bits_are_not_found(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    for position in ("99999999999999999999", str(2**63)):
        assert alice.get(f"/label/{position}").status_code == 404
        data = {"csrf_token": alice.csrf, "grade": "1"}
        assert alice.post(f"/label/{position}", data=data).status_code == 404
    assert alice.get(f"/label/{2**63 - 1}").status_code == 404  # the largest SQLite integer: not hers
    assert grade(alice, 2**63 - 1).status_code == 403
    assert count_events(project) == 0


def test_documents_are_shown_as_text_and_judging_is_blind(server: ThreadServer, project: Path) -> None:
    alice = sign_in(server.url, project, "alice")
    pos = position_of(project, "alice", "security/advisory-4", "q1")
    page = alice.get(f"/label/{pos}")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    # Blind: nothing about the systems, their ranks, or anyone else's grades.
    bob = sign_in(server.url, project, "bob")
    assert grade(bob, position_of(project, "bob", "security/advisory-4", "q1"), "3").status_code == 200
    for text in (
        alice.get(f"/label/{pos}").text,
        alice.get("/api/me/grades").text,
        alice.get("/api/me/progress").text,
    ):
        assert not re.search(r"sysalpha|sysbeta|best_rank|\"runs\"|bob", text)
        assert "Your grade" not in text


def test_session_cookie_is_http_only_and_same_site(server: ThreadServer, project: Path) -> None:
    token = invite(project, "alice")
    client = httpx.Client(base_url=server.url)
    page = client.get(f"/invite/{token}")
    response = client.post(f"/invite/{token}", data={"csrf_token": CSRF_RE.search(page.text).group(1)})
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    assert response.headers["referrer-policy"] == "same-origin"


def test_revoke_ends_sessions_and_cancels_invites(server: ThreadServer, project: Path) -> None:
    from click.testing import CliRunner

    from qrelkit.cli import main

    alice = sign_in(server.url, project, "alice")
    assert grade(alice, 0).status_code == 200
    pending = invite(project, "alice")
    result = CliRunner().invoke(main, ["judge", "revoke", str(project), "alice"])
    assert result.exit_code == 0 and "1 unused invite link(s) cancelled" in result.output
    assert alice.get("/api/me/progress").status_code == 401
    assert grade(alice, 1).status_code == 401
    assert httpx.get(f"{server.url}/invite/{pending}").status_code == 403
    again = sign_in(server.url, project, "alice")  # a new invite lets her back in, grades intact
    assert again.get("/api/me/progress").json() == {"total": 8, "done": 1, "phase": "calibration", "round": 1}


def test_every_response_carries_the_security_headers_and_no_server_banner(
    server: ThreadServer, project: Path
) -> None:
    alice = sign_in(server.url, project, "alice")
    pos = position_of(project, "alice", "security/advisory-4", "q1")
    page, saved, static = alice.get(f"/label/{pos}"), grade(alice, pos), alice.get("/static/app.css")
    refused = alice.get("/label/999999")
    assert (page.status_code, saved.status_code, static.status_code, refused.status_code) == (
        200,
        200,
        200,
        404,
    )
    for response in (page, saved, static, refused):
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["x-frame-options"] == "DENY"
        assert "server" not in response.headers  # the software is not named
        assert "date" in response.headers
    assert [r.headers["cache-control"] for r in (page, saved, refused)] == ["no-store"] * 3
    assert static.headers["cache-control"] == "public, max-age=300"
    wrong = alice.put(f"/label/{pos}", content=b"")  # a method no route of the path has
    assert wrong.status_code == 405 and "script-src 'self'" in wrong.headers["content-security-policy"]
