"""The admin side over HTTP: invites, adjudication, the pair page, exports and the JSON API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from .helpers import CSRF_RE, ThreadServer, calibration_pairs, grade_pairs, make_project, position_of, sign_in


def test_admin_actions_over_http(server: ThreadServer, project: Path) -> None:
    admin = sign_in(server.url, project, "admin")
    alice, bob = sign_in(server.url, project, "alice"), sign_in(server.url, project, "bob")
    for name, client, value in (("alice", alice, "1"), ("bob", bob, "3")):
        pos = position_of(project, name, "keys/policy", "q1")
        data = {"csrf_token": client.csrf, "grade": value, "note": "<b>bold</b> claim"}
        assert client.post(f"/label/{pos}", data=data).status_code == 303

    page = admin.get("/admin")
    assert page.status_code == 200 and "keys/policy" in page.text
    # alice and bob share q1 (4 calibration pairs); alice and carol share q2 (pool.plan_assignments)
    assert "Waiting for calibration: alice 1/4, bob 1/4" in " ".join(page.text.split())

    pair = admin.get("/admin/pair", params={"query_id": "q1", "doc_id": "keys/policy"})
    assert pair.status_code == 200 and "&lt;b&gt;bold&lt;/b&gt; claim" in pair.text
    assert admin.get("/admin/pair", params={"query_id": "q1", "doc_id": "nope"}).status_code == 404

    queue = admin.get("/admin/api/queue").json()
    assert [(i["query_id"], i["doc_id"], i["grades"]) for i in queue["items"]] == [
        ("q1", "keys/policy", {"alice": 1, "bob": 3})
    ]
    made = admin.post("/admin/invite", data={"csrf_token": admin.csrf, "name": "carol"})
    url = re.search(r'value="(http://[^"]+/invite/[^"]+)"', made.text).group(1)
    carol = httpx.Client()
    confirm = carol.get(url)
    assert confirm.status_code == 200 and "Sign in as carol" in confirm.text
    assert carol.post(url, data={"csrf_token": CSRF_RE.search(confirm.text).group(1)}).status_code == 303
    # in calibration, carol's open pairs are her 4 calibration pairs of q2 (q4 opens after the gate)
    assert carol.get(f"{server.url}/api/me/progress").json() == {
        "total": 4,
        "done": 0,
        "phase": "calibration",
        "round": 1,
    }
    assert admin.post("/admin/invite", data={"csrf_token": admin.csrf, "name": "nobody"}).status_code == 400
    # while the disputed pair has no decision, the final export is refused, naming it, unless asked to
    # leave it out (counted in the manifest): the rule of qrelkit.judgments.adjudication.merge, as on the command line
    refused = admin.get("/admin/export/final")
    assert refused.status_code == 409 and "(q1, keys/policy)" in refused.text
    left = json.loads(admin.get("/admin/export/final/manifest", params={"unresolved": "leave-out"}).text)
    assert left["adjudication"]["unresolved_left_out"] == 1 and left["qrels"]["judgments"] == 0
    bad = {"csrf_token": admin.csrf, "query_id": "q1", "doc_id": "keys/policy", "grade": "9"}
    assert admin.post("/admin/adjudicate", data=bad).status_code == 400
    # a calibration pair's final grade waits for its round's gate: no grade buttons, and a decision refused
    assert (
        queue["items"][0]["waits_for_gate"]
        and 'action="/admin/adjudicate/confirm"' not in admin.get("/admin").text
    )
    waiting = admin.post("/admin/adjudicate", data={**bad, "grade": "2"})
    assert waiting.status_code == 400 and "whose gate is not decided yet" in waiting.text
    # the rest of round 1's calibration graded 0 by everyone: the gate is decided, the pair can be decided
    for name, pairs in calibration_pairs(project).items():
        grade_pairs(project, name, {p: 0 for p in pairs if p != ("q1", "keys/policy")})
    assert admin.get("/admin").status_code == 200  # decides the gate
    assert not admin.get("/admin/api/queue").json()["items"][0]["waits_for_gate"]
    done = admin.post("/admin/adjudicate", data={**bad, "grade": "2", "note": "policy only"})
    assert done.status_code == 303 and admin.get("/admin/api/queue").json()["items"] == []

    final = admin.get("/admin/export/final")
    others = ["q1 0 changelog/2026 0", "q1 0 keys/rotate 0", "q1 0 security/advisory-4 0", "q2 0 limits/rate 0",
              "q2 0 sdk/retries 0", "q2 0 sdk/timeouts 0", "q2 0 security/advisory-4 0"]  # fmt: skip
    assert final.status_code == 200 and sorted(final.text.splitlines()) == sorted(
        ["q1 0 keys/policy 2", *others]
    )
    assert 'filename="project.final.qrels"' in final.headers["content-disposition"]
    manifest = json.loads(admin.get("/admin/export/final/manifest").text)
    assert manifest["qrels"]["judgments"] == 8 and manifest["adjudication"]["adjudicated"] == 1
    assert "q1 0 keys/policy 3" in admin.get("/admin/export/labeller/bob").text.splitlines()
    # a pair nobody disputed is decided only with the override box ticked, and the override is counted
    plain = {"csrf_token": admin.csrf, "query_id": "q1", "doc_id": "keys/rotate", "grade": "1"}
    assert admin.post("/admin/adjudicate", data=plain).status_code == 400
    assert admin.post("/admin/adjudicate", data={**plain, "override": "1"}).status_code == 303
    manifest = json.loads(admin.get("/admin/export/final/manifest").text)
    assert manifest["adjudication"]["overridden"] == 1 and manifest["qrels"]["judgments"] == 8
    assert admin.get("/admin/export/labeller/zed").status_code == 404
    # one split in four pairs: alice and bob fail the gate, judging pauses, and no pair is open to alice
    assert admin.get("/admin/api/status").json()["phase"]["state"] == "paused"
    assert admin.get("/admin/api/labellers/alice/grades").json()["grades"] == []
    assert admin.get("/admin/api/status").json()["events"] == 2 + 7 + 3 + 4  # alice 8, bob 4, carol 4


def test_download_names_follow_rfc_6266(tmp_path: Path) -> None:
    """A project name outside Latin-1 and holding quotes still gives a valid Content-Disposition header."""
    from email.message import Message
    from email.utils import collapse_rfc2231_value

    from qrelkit.app.web import create_app
    from qrelkit.app.web.exports import content_disposition

    assert content_disposition("project.final.qrels") == (
        "attachment; filename=\"project.final.qrels\"; filename*=UTF-8''project.final.qrels"
    )
    name = 'Łódź "judging" – №1'
    db = make_project(tmp_path, name=name)
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        admin = sign_in(srv.url, db, "admin")
        for path, filename in (
            ("/admin/export/final", f"{name}.final.qrels"),
            ("/admin/export/labeller/alice", f"{name}.alice.qrels"),
        ):
            response = admin.get(path)
            assert response.status_code == 200, response.text
            message = Message()  # the standard library's RFC 2231 parser reads the header back
            message["content-disposition"] = response.headers["content-disposition"]
            params = message.get_params(header="content-disposition")
            assert params[0] == ("attachment", "")
            plain = [v for k, v in params if k == "filename" and isinstance(v, str)]
            extended = [v for k, v in params if k == "filename" and isinstance(v, tuple)]
            assert [collapse_rfc2231_value(v) for v in extended] == [filename]
            # Ł ó ź " – № become "_" in the ASCII stand-in; the rest is kept.
            assert plain == [filename.replace(name, "__d_ _judging_ _ _1")]


def test_unknown_admin_paths_ask_for_sign_in_first(server: ThreadServer, project: Path) -> None:
    anon = httpx.Client(base_url=server.url)
    for path in ("/admin/export/nothing", "/admin/export/labeller/a/b", "/admin/api/nothing"):
        assert anon.get(path).status_code == 401, path
    admin = sign_in(server.url, project, "admin")
    for path in ("/admin/export/nothing", "/admin/export/labeller/a/b", "/admin/api/nothing",
                 "/admin/api/labellers/zed/grades"):  # fmt: skip
        assert admin.get(path).status_code == 404, path
