"""The gate's "not measurable" outcome: one labeller marking every calibration pair unsure, every grade
the same, a labeller with no grades, a round with one labeller. No page or command fails; each shows the
outcome and its reason; the admin can revise or override it. Real SQLite, the app over HTTP on a real
loopback server, and the command line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from qrelkit.app.phases import ensure_gate, override_gate, revise
from qrelkit.app.project import find_user, load_rubric_from_store
from qrelkit.app.store import Store

from .helpers import (
    FIXTURES,
    ThreadServer,
    calibration_pairs,
    grade_pairs,
    make_project,
    position_of,
    sign_in,
)


def _unsure(db: Path, name: str) -> None:
    """``name`` marks every calibration pair of the round "unsure", without a grade."""
    from qrelkit.app.grades import record_grade

    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        uid = find_user(store, name)["user_id"]
        for q, d in calibration_pairs(db)[name]:
            pos = position_of(db, name, d, q)
            store.write(lambda c, pos=pos: record_grade(c, uid, pos, None, unsure=True, note=None,
                                                        time_spent_ms=None, rubric=rubric))  # fmt: skip


def _gate(db: Path):
    with Store(db) as store:
        return ensure_gate(store)


def _one_unsure(tmp: Path) -> Path:
    db = make_project(tmp, labellers="alice,bob")
    _unsure(db, "alice")
    grade_pairs(db, "bob", {p: i % 4 for i, p in enumerate(calibration_pairs(db)["bob"])})
    return db


def test_one_labeller_unsure_on_every_pair_makes_the_gate_not_measurable(tmp_path: Path) -> None:
    db = _one_unsure(tmp_path)
    phase = _gate(db)
    assert (phase.state, phase.outcome) == ("paused", "unmeasurable")
    # the fixture pool gives each labeller 8 calibration pairs, all shared
    assert (
        phase.reason
        == "no calibration pair was graded by two labellers: alice graded 0 of 8 calibration pairs; bob 8"
    )
    with sqlite3.connect(db) as conn:
        outcome, reason, detail = conn.execute("SELECT outcome, reason, detail FROM gate_events").fetchone()
    assert outcome == "unmeasurable" and reason == phase.reason
    assert json.loads(detail)["unmeasurable"] == {"reason": phase.reason, "graded": {"alice": 0, "bob": 8},
                                                  "assigned": {"alice": 8, "bob": 8}}  # fmt: skip


def test_every_grade_the_same_is_not_measurable(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    for name, pairs in calibration_pairs(db).items():
        grade_pairs(db, name, dict.fromkeys(pairs, 2))
    phase = _gate(db)
    assert phase.outcome == "unmeasurable"
    assert phase.reason.startswith("alice and bob: both labellers gave every pair the same single grade")
    assert phase.reason.endswith("; alice graded 8 of 8 calibration pairs; bob 8")


def test_a_labeller_with_no_grades_among_three_is_not_measurable(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob,carol", calibration_labellers=3)
    pairs = calibration_pairs(db)
    _unsure(db, "carol")
    for name in ("alice", "bob"):  # alice and bob agree exactly: their kappa passes on its own
        grade_pairs(db, name, {p: i % 4 for i, p in enumerate(pairs[name])})
    phase = _gate(db)
    n = len(pairs["carol"])
    assert phase.outcome == "unmeasurable"
    assert phase.reason.endswith(f"alice graded {n} of {n} calibration pairs; bob {n}; carol 0")


def test_a_round_with_one_labeller_is_not_measurable(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    with sqlite3.connect(db) as conn:  # as a project from before rounds could be: one labeller's calibration
        conn.execute("DELETE FROM round_pairs WHERE user_id = (SELECT user_id FROM users WHERE name = 'bob')")
    grade_pairs(db, "alice", {p: i % 4 for i, p in enumerate(calibration_pairs(db)["alice"])})
    phase = _gate(db)
    assert phase.outcome == "unmeasurable"
    assert (
        phase.reason
        == "the round has 1 labeller (alice): agreement needs two; alice graded 8 of 8 calibration pairs"
    )


def test_every_page_and_api_shows_the_outcome_and_none_fails(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = _one_unsure(tmp_path)
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        alice, bob, admin = (sign_in(srv.url, db, n) for n in ("alice", "bob", "admin"))
        for client in (alice, bob):
            for path in ("/label", "/label/0", "/review", "/api/me/grades"):
                response = client.get(path, follow_redirects=True)
                assert response.status_code in (200, 403), (path, response.status_code, response.text)
                if path != "/api/me/grades":
                    assert "could not be measured" in response.text, path
        page = admin.get("/admin")
        assert page.status_code == 200
        assert "alice graded 0 of 8 calibration pairs; bob 8" in page.text
        assert "agreement not measurable" in page.text and 'id="override-form"' in page.text
        for path in ("/admin/api/kappa", "/admin/api/rounds", "/admin/api/status", "/admin/api/queue",
                     "/admin/api/pace", "/admin/api/changes", "/admin/export/labeller/bob"):  # fmt: skip
            assert admin.get(path).status_code == 200, path
        # the final export refuses undecided pairs, as for any round: an answer, not a failure
        assert admin.get("/admin/export/final").status_code == 409
        assert admin.get("/admin/api/rounds").json()["rounds"][0]["status"] == "not measurable"
        kappa = admin.get("/admin/api/kappa").json()["phase"]
        assert kappa["outcome"] == "unmeasurable" and kappa["reason"].endswith(
            "alice graded 0 of 8 calibration pairs; bob 8"
        )
        assert admin.get("/admin/api/status").json()["phase"]["outcome"] == "unmeasurable"
        # the admin overrides with a reason: judging opens
        done = admin.post(
            "/admin/override",
            data={"csrf_token": admin.csrf, "reason": "alice was unsure of the new rubric; checked by hand"},
        )
        assert done.status_code in (200, 303), done.text
        assert alice.get("/label").status_code in (200, 303)
    assert _gate(db).state == "open"


def test_commands_show_the_outcome_and_the_admin_can_act(tmp_path: Path, cli) -> None:
    db = _one_unsure(tmp_path)
    kappa = cli("judge", "kappa", db)
    assert kappa.exit_code == 3, kappa.output  # the gate did not pass: agree's exit status
    assert kappa.stderr == "gate: round 1 did not pass (not measurable); exit status 3\n"
    assert (
        "gate: not measurable: no calibration pair was graded by two labellers: alice graded 0 of 8"
        in kappa.output
    )
    as_json = json.loads(cli("judge", "kappa", db, "--json").stdout)
    assert (
        as_json["phase"]["outcome"] == "unmeasurable" and as_json["rounds"][0]["status"] == "not measurable"
    )
    status = cli("judge", "status", db)
    assert status.exit_code == 0 and "gate: not measurable" in status.stdout
    queue = cli("judge", "queue", db)
    assert queue.exit_code == 0, queue.output
    # revising the rubric starts a new round (on the same pairs here)
    with Store(db) as store:
        assert revise(store, FIXTURES / "rubric-v2.toml", same_queries=True)["round"] == 2
    assert _gate(db).state == "calibration"


def test_an_override_is_allowed_on_a_not_measurable_gate_and_reaches_the_manifest(
    tmp_path: Path, cli
) -> None:
    db = _one_unsure(tmp_path)
    _gate(db)
    done = cli("judge", "override", db, "--reason", "alice abstained; bob's grades reviewed", "--by", "admin")
    assert done.exit_code == 0, done.output
    out = tmp_path / "final.qrels"
    export = cli("judge", "export", db, "--final", "--allow-unresolved", "leave-out", "-o", out)
    assert export.exit_code == 0, export.output
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    cal = manifest["calibration"]
    assert cal["status"] == "overridden"
    assert cal["override"]["reason"] == "alice abstained; bob's grades reviewed"
    assert cal["rounds"][0]["not_measurable"].endswith("alice graded 0 of 8 calibration pairs; bob 8")


def test_an_override_still_needs_a_failed_or_unmeasurable_gate(tmp_path: Path) -> None:
    from qrelkit.errors import ValidationError

    db = make_project(tmp_path, labellers="alice,bob")
    with Store(db) as store, pytest.raises(ValidationError, match="failed or not measurable"):
        override_gate(store, reason="no", by="admin")


def test_the_admin_reassigns_the_unsure_labellers_pairs_and_the_round_measures_again(
    tmp_path: Path, cli
) -> None:
    db = make_project(tmp_path, labellers="alice,bob,carol")
    pairs = calibration_pairs(db)
    # the fixture's plan: alice shares q1 with bob and q2 with carol; she marks all of hers unsure
    assert {q for q, _ in pairs["alice"]} == {"q1", "q2"}
    _unsure(db, "alice")
    given = {p: i % 4 for name in ("bob", "carol") for i, p in enumerate(pairs[name])}
    for name in ("bob", "carol"):
        grade_pairs(db, name, {p: given[p] for p in pairs[name]})
    assert _gate(db).outcome == "unmeasurable"
    refused = cli("judge", "reassign", db, "--from", "alice", "--to", "bob", "--by", "admin")
    assert refused.exit_code == 1 and "every labeller given already grades (q1," in refused.stderr
    assert cli("judge", "reassign", db, "--from", "alice", "--to", "nobody", "--by", "admin").exit_code == 1
    done = cli("judge", "reassign", db, "--from", "alice", "--to", "bob", "--to", "carol", "--by", "admin")
    assert done.exit_code == 0, done.output
    assert "alice's 8 calibration pairs of round 1 given to others: 4 to bob, 4 to carol" in done.stdout
    assert _gate(db).state == "calibration" and "alice" not in calibration_pairs(db)
    # carol now grades alice's q1 pairs (shared with bob), bob alice's q2 pairs (shared with carol), as the
    # other labeller did: kappa 1 for (bob, carol), the gate passes
    grade_pairs(db, "carol", {p: given[p] for p in pairs["alice"] if p[0] == "q1"})
    grade_pairs(db, "bob", {p: given[p] for p in pairs["alice"] if p[0] == "q2"})
    assert _gate(db).outcome == "passed"
    history = json.loads(cli("judge", "kappa", db, "--json").stdout)["rounds"][0]
    assert history["status"] == "passed" and history["reassigned"][0]["by"] == "admin"


@pytest.mark.parametrize("statistic", ["mean_kappa", "fleiss", "alpha_interval"])
def test_every_grade_the_same_is_not_measurable_on_a_group_statistic(tmp_path: Path, statistic: str) -> None:
    db = make_project(tmp_path, labellers="alice,bob", gate_statistic=statistic)
    for name, pairs in calibration_pairs(db).items():
        grade_pairs(db, name, dict.fromkeys(pairs, 2))
    phase = _gate(db)
    assert phase.outcome == "unmeasurable" and phase.state == "paused"
    assert "undefined or without interval" in phase.reason and "FAIL" not in phase.reason
    assert phase.reason.endswith("; alice graded 8 of 8 calibration pairs; bob 8")
