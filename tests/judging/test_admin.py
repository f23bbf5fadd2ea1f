"""The admin side over HTTP: invites, adjudication, the pair page, exports and the JSON API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from .helpers import CSRF_RE, ThreadServer, position_of, sign_in


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
    bad = {"csrf_token": admin.csrf, "query_id": "q1", "doc_id": "keys/policy", "grade": "9"}
    assert admin.post("/admin/adjudicate", data=bad).status_code == 400
    done = admin.post("/admin/adjudicate", data={**bad, "grade": "2", "note": "policy only"})
    assert done.status_code == 303 and admin.get("/admin/api/queue").json()["items"] == []

    final = admin.get("/admin/export/final")
    assert final.status_code == 200 and final.text == "q1 0 keys/policy 2\n"
    assert 'filename="project.final.qrels"' in final.headers["content-disposition"]
    manifest = json.loads(admin.get("/admin/export/final/manifest").text)
    assert manifest["qrels"]["judgments"] == 1 and manifest["adjudication"]["adjudicated"] == 1
    assert admin.get("/admin/export/labeller/bob").text == "q1 0 keys/policy 3\n"
    assert admin.get("/admin/export/labeller/zed").status_code == 404
    assert admin.get("/admin/api/labellers/alice/grades").json()["grades"][0]["grade"] == 1
    assert admin.get("/admin/api/status").json()["events"] == 2

    made = admin.post("/admin/invite", data={"csrf_token": admin.csrf, "name": "carol"})
    url = re.search(r'value="(http://[^"]+/invite/[^"]+)"', made.text).group(1)
    carol = httpx.Client()
    confirm = carol.get(url)
    assert confirm.status_code == 200 and "Sign in as carol" in confirm.text
    assert carol.post(url, data={"csrf_token": CSRF_RE.search(confirm.text).group(1)}).status_code == 303
    assert carol.get(f"{server.url}/api/me/progress").json() == {"total": 8, "done": 0}
    assert admin.post("/admin/invite", data={"csrf_token": admin.csrf, "name": "nobody"}).status_code == 400
