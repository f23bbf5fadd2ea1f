"""Model labellers a team can live with: `judge model add --check`, `judge model retire`, a run that refuses to
spend while the people's own gate failed, the warning a gate measured against overridden people carries, and
the status line of a non-inferiority failure on a wide interval.

Real SQLite projects; model labellers grade over a real HTTP server on the loopback interface speaking the chat
completions protocol (tests/app/models/helpers.py), or as a real local program."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from sklearn.metrics import cohen_kappa_score

from .helpers import DOCS, ChatServer, free_port_closed, grade_calibration, make_synthetic, person, scripted


def _users(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [n for (n,) in conn.execute("SELECT name FROM users ORDER BY user_id")]


def test_check_refuses_a_typod_model_id_a_dead_endpoint_and_a_dead_program(gated: Path, cli) -> None:
    before = _users(gated)
    with ChatServer(scripted(0)) as srv:
        typo = cli(
            "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-l", "--check"
        )
        assert len(srv.bodies) == 1  # one request, no retry
    assert typo.exit_code == 1 and "Traceback" not in typo.output
    (line,) = typo.stderr.strip().splitlines()
    assert "--check: the endpoint answered 404 for model 'judge-l'" in line and "was not added" in line
    dead = f"http://127.0.0.1:{free_port_closed()}/v1"
    refused = cli(
        "judge", "model", "add", gated, "judge", "--endpoint", dead, "--model", "judge-1", "--check"
    )
    assert refused.exit_code == 1 and "--check: cannot reach the endpoint" in refused.stderr
    program = f"{sys.executable} -c 'import sys; sys.exit(2)'"
    gone = cli("judge", "model", "add", gated, "judge", "--command", program, "--check")
    assert gone.exit_code == 1 and "--check: the command" in gone.stderr and "exited (code 2)" in gone.stderr
    assert _users(gated) == before  # nothing was recorded
    # without --check the typo is recorded, as before
    assert (
        cli("judge", "model", "add", gated, "judge", "--endpoint", dead, "--model", "judge-l").exit_code == 0
    )


def test_a_checked_reply_is_cached_so_the_run_does_not_pay_for_it_again(gated: Path, cli) -> None:
    with ChatServer(scripted(0)) as srv:
        done = cli(
            "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1", "--check"
        )
        assert done.exit_code == 0, done.output
        assert "checked: graded the first calibration pair" in done.stdout and len(srv.bodies) == 1
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
        # 8 calibration queries x 5 documents = 40 pairs: the checked one came from the cache
        assert len(srv.bodies) == 40
    status = json.loads(cli("judge", "model", "status", gated, "judge", "--format", "json").stdout)
    assert status["calibration_graded"] == 40


def _gate_events(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM model_gate_events").fetchone()[0])


def _counts(cli, db: Path) -> dict[str, tuple[int, int]]:
    status = json.loads(cli("judge", "status", db, "--json").stdout)
    return {q["query_id"]: (q["assigned"], q["done"]) for q in status["queries"]}


def test_a_retired_model_leaves_the_counts_the_queue_and_the_export(gated: Path, cli, tmp_path: Path) -> None:
    people_counts = _counts(cli, gated)
    queue = json.loads(cli("judge", "queue", gated, "--json").stdout)["items"]
    people = tmp_path / "people" / "final.qrels"
    people.parent.mkdir()
    assert (
        cli("judge", "export", gated, "--final", "-o", people, "--allow-unresolved", "leave-out").exit_code
        == 0
    )
    with ChatServer(scripted(0, flip_every=10**9)) as srv:  # grades every pair at its true grade: it passes
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        assert cli("judge", "model", "run", gated, "judge", "--audit-share", "0").exit_code == 0
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        assert (
            cli("judge", "model", "run", gated, "judge", "--audit-share", "0").exit_code == 0
        )  # people's plan kept
    status = json.loads(cli("judge", "model", "status", gated, "judge", "--format", "json").stdout)
    assert status["gate_outcome"] == "passed" and status["graded"] == 60
    # counted: each of the 12 queries has its 5 pairs assigned to the model as well, all graded
    assert _counts(cli, gated) == {q: (a + 5, d + 5) for q, (a, d) in people_counts.items()}
    with sqlite3.connect(gated) as conn:
        events = conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]
    retired = cli("judge", "model", "retire", gated, "judge", "--reason", "replaced by a newer prompt")
    assert retired.exit_code == 0, retired.output
    assert "retired by admin" in retired.stdout
    with sqlite3.connect(gated) as conn:
        assert conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0] == events  # its events stay
    assert _counts(cli, gated) == people_counts
    assert json.loads(cli("judge", "queue", gated, "--json").stdout)["items"] == queue
    out = tmp_path / "out" / "final.qrels"
    out.parent.mkdir()
    done = cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert done.exit_code == 0, done.output
    assert out.read_bytes() == people.read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "final.qrels",
        "final.qrels.manifest.json",
    ]
    (entry,) = json.loads((out.parent / "final.qrels.manifest.json").read_text())["model_labellers"]
    assert entry["role"] == "retired" and not entry["counted_in_final"]
    assert (
        entry["role_decision"]["reason"] == "replaced by a newer prompt"
        and entry["role_decision"]["by"] == "admin"
    )
    again = cli("judge", "model", "run", gated, "judge")
    assert again.exit_code == 3 and "is retired" in again.stderr
    decided = _gate_events(gated)
    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        for command in ("run", "probe"):  # a retired model asks for nothing and records no decision
            refused = cli("judge", "model", command, gated, "judge")
            assert refused.exit_code == 3 and srv.bodies == [], refused.output
            (line,) = refused.stderr.strip().splitlines()
            assert "model labeller 'judge' is retired" in line
    assert _gate_events(gated) == decided
    twice = cli("judge", "model", "retire", gated, "judge", "--reason", "again")
    assert twice.exit_code == 1 and "is retired" in twice.stderr


def test_a_run_refuses_to_spend_while_the_peoples_gate_failed(tmp_path: Path, cli) -> None:
    db = make_synthetic(tmp_path, min_kappa=0.95)  # bob moves one pair in seven: the people fail 0.95
    grade_calibration(db, person)
    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        refused = cli("judge", "model", "run", db, "judge")
        assert refused.exit_code == 3 and srv.bodies == []
        (line,) = refused.stderr.strip().splitlines()
        assert "the people's calibration gate of round 1 failed and was not overridden" in line
        probed = cli("judge", "model", "probe", db, "judge")  # probes spend requests too: refused alike
        assert probed.exit_code == 3 and srv.bodies == [] and _gate_events(db) == 0
        (line,) = probed.stderr.strip().splitlines()
        assert "the people's calibration gate of round 1 failed and was not overridden" in line
        overridden = cli("judge", "override", db, "--reason", "deadline", "--by", "ann")
        assert overridden.exit_code == 0, overridden.output
        ran = cli("judge", "model", "run", db, "judge")
        assert ran.exit_code == 0, ran.output
        assert cli("judge", "model", "probe", db, "judge").exit_code == 0
        assert cli("judge", "model", "run", db, "judge").exit_code == 0
    warning = "the people's own calibration gate of round 1 failed and was overridden by ann"
    assert warning in ran.stdout
    status = json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)
    assert status["gate_outcome"] == "passed"
    with sqlite3.connect(db) as conn:  # every decision recorded as passed carries the warning
        passed = [
            json.loads(d)
            for (d,) in conn.execute("SELECT detail FROM model_gate_events WHERE outcome = 'passed'")
        ]
    assert passed and all(warning in " ".join(d["warnings"]) for d in passed)
    assert warning in cli("judge", "model", "status", db, "judge").stdout
    out = tmp_path / "final.qrels"
    assert cli("judge", "export", db, "--final", "-o", out, "--allow-unresolved", "leave-out").exit_code == 0
    run = tmp_path / "a.run"
    run.write_text("".join(f"q{q} Q0 d{q}-{d} {d + 1} {10 - d} a\n" for q in range(12) for d in range(DOCS)))
    found = json.loads(cli("eval", out, run, "--format", "json").stdout)
    assert any(
        w.startswith(
            "model judge was measured against people whose own calibration gate failed: overridden by ann"
        )
        for w in found["judgments"]["warnings"]
    )


def test_a_failure_on_a_wide_interval_says_what_it_rests_on(tmp_path: Path, cli) -> None:
    db = make_synthetic(tmp_path, calibration=2)  # 2 calibration queries x 5 documents
    grade_calibration(db, person)
    answer = scripted(2, flip_every=4)
    with ChatServer(answer) as srv:
        added = cli(
            "judge",
            "model",
            "add",
            db,
            "judge",
            "--endpoint",
            srv.url,
            "--model",
            "judge-1",
            "--margin",
            "0.3",
        )
        assert added.exit_code == 0
        ran = cli("judge", "model", "run", db, "judge", "--calibration-only")
    pairs = [(q, d) for q in range(2) for d in range(DOCS)]
    alice = [person("alice", f"q{q}", f"d{q}-{d}") for q, d in pairs]
    bob = [person("bob", f"q{q}", f"d{q}-{d}") for q, d in pairs]
    people = cohen_kappa_score(alice, bob, labels=[0, 1, 2, 3], weights="linear")
    agreed = [i for i in range(len(pairs)) if alice[i] == bob[i]]  # no decisions: the agreed grades
    model = cohen_kappa_score([answer(*pairs[i], "") for i in agreed], [alice[i] for i in agreed],
                              labels=[0, 1, 2, 3], weights="linear")  # fmt: skip
    assert model >= people - 0.3  # kappa itself clears the threshold ...
    status = cli("judge", "model", "status", db, "judge").stdout
    line = next(ln for ln in status.splitlines() if "non_inferiority" in ln and not ln.startswith("gate:"))
    assert line.lstrip().startswith("FAIL")  # ... yet the interval's lower end does not
    assert (f"kappa itself is {model:.4f}: the interval is wide, resting on 2 calibration queries, and more "
            "calibration queries would narrow it") in line  # fmt: skip
    assert (
        "non-inferiority rests on 2 calibration queries: more calibration queries would narrow its interval"
        in (ran.stdout)
    )


def test_which_model_votes_take_no_part_in_a_pairs_merge() -> None:
    from qrelkit.app.models.access import overruled_model_votes

    votes = [
        ("p1", "alice", 2, False), ("p1", "bob", 2, False), ("p1", "m", 3, False),  # people agree, m differs
        ("p2", "alice", 2, False), ("p2", "bob", 2, False), ("p2", "m", 2, False),  # m agrees: its vote stays
        ("p3", "alice", 2, False), ("p3", "m", 3, False),  # one person: a dispute, as before
        ("p4", "alice", 2, False), ("p4", "bob", 1, False), ("p4", "m", 3, False),  # people split
        ("p5", "alice", None, True), ("p5", "bob", 2, False), ("p5", "m", 3, False),  # a person unsure
        ("p6", "alice", 2, False), ("p6", "bob", 2, False), ("p6", "m", None, True),  # m unsure
    ]  # fmt: skip
    assert overruled_model_votes(votes, {"m"}) == {("p1", "m"), ("p6", "m")}


def test_a_models_disagreement_with_agreed_pairs_does_not_block_the_export(tmp_path: Path, cli) -> None:
    from .helpers import truth

    db = make_synthetic(tmp_path)
    grade_calibration(db, lambda name, q, d: truth(*(int(x) for x in (q[1:], d.split("-")[1]))))  # they agree
    with ChatServer(scripted(3)) as srv:  # lenient on about one pair in five
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        assert cli("judge", "model", "run", db, "judge", "--audit-share", "0").exit_code == 0
        assert cli("judge", "model", "probe", db, "judge").exit_code == 0
        if (
            json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)[
                "gate_outcome"
            ]
            != "passed"
        ):
            assert (
                cli("judge", "model", "override", db, "judge", "--reason", "r", "--by", "ann").exit_code == 0
            )
        assert cli("judge", "model", "run", db, "judge", "--audit-share", "0").exit_code == 0
    status = json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)
    answer = scripted(3)
    differ = sum(answer(q, d, "") != truth(q, d) for q in range(8) for d in range(DOCS))
    assert differ > 0 and status["agreed_disagreements"]["disagreements"] == differ
    assert json.loads(cli("judge", "queue", db, "--json").stdout)["items"] == []
    out = tmp_path / "final.qrels"
    done = cli("judge", "export", db, "--final", "-o", out)  # no --allow-unresolved: nothing is disputed
    assert done.exit_code == 0, done.output
    final = {(q, d): int(g) for q, _, d, g in (ln.split() for ln in out.read_text().splitlines())}
    # the people's grade on the 40 calibration pairs, the model's alone on the 20 others
    assert final == {(f"q{q}", f"d{q}-{d}"): truth(q, d) if q < 8 else answer(q, d, "")
                     for q in range(12) for d in range(DOCS)}  # fmt: skip


def _people_assignments(db: Path) -> set[tuple[str, int, int]]:
    with sqlite3.connect(db) as conn:
        return {tuple(r) for r in conn.execute(
            "SELECT u.name, a.pair_id, a.position FROM assignments a JOIN users u USING (user_id) "
            "WHERE u.role = 'labeller'")}  # fmt: skip


def test_retiring_takes_back_the_audit_pairs_no_one_graded_and_keeps_its_events(gated: Path, cli) -> None:
    """The model's audit (share 1: every pair it graded outside calibration) adds pairs to alice's and bob's
    plans; one of them is graded by its person. Retiring the model takes the other added pairs out of the
    plans, keeps the graded one, the people's own plan, the audit sample's rows and every grade event."""
    from qrelkit.app.grades import record_grade
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        assert cli("judge", "model", "run", gated, "judge", "--audit-share", "0").exit_code == 0
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        own = _people_assignments(gated)
        assert cli("judge", "model", "run", gated, "judge", "--audit-share", "1").exit_code == 0
    added = _people_assignments(gated) - own
    assert len(added) >= 2
    name, pair_id, position = min(added)
    with Store(gated) as store:
        rubric = load_rubric_from_store(store)
        uid = store.read(
            lambda c: c.execute("SELECT user_id FROM users WHERE name = ?", (name,)).fetchone()[0]
        )
        store.write(lambda c: record_grade(c, uid, position, 2, unsure=False, note=None, time_spent_ms=1000,
                                           rubric=rubric))  # fmt: skip
    with sqlite3.connect(gated) as conn:
        before = [
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("grade_events", "model_audit")
        ]
    retired = cli("judge", "model", "retire", gated, "judge", "--reason", "replaced", "--by", "ann")
    assert retired.exit_code == 0, retired.output
    assert _people_assignments(gated) == own | {(name, pair_id, position)}
    with sqlite3.connect(gated) as conn:
        after = [
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("grade_events", "model_audit")
        ]
    assert after == before


def test_a_model_added_as_a_predictor_records_who_made_it_one(gated: Path, cli) -> None:
    for name, by, shown in (("p1", (), "admin"), ("p2", ("--by", "ann"), "ann")):
        added = cli("judge", "model", "add", gated, name, "--endpoint", "http://127.0.0.1:9/v1", "--model",
                    "judge-1", "--role", "predictor", *by)  # fmt: skip
        assert added.exit_code == 0, added.output
        status = json.loads(cli("judge", "model", "status", gated, name, "--format", "json").stdout)
        (event,) = status["role_history"]
        assert event["by"] == shown and event["role"] == "predictor"
        assert "(by None)" not in cli("judge", "model", "status", gated, name).stdout
        refused = cli("judge", "model", "override", gated, name, "--reason", "r", "--by", "ann")
        assert refused.exit_code == 1 and f"model labeller '{name}' is a predictor:" in refused.stderr
    assert cli("judge", "model", "retire", gated, "p1", "--reason", "done").exit_code == 0
    refused = cli("judge", "model", "override", gated, "p1", "--reason", "r", "--by", "ann")
    (line,) = refused.stderr.strip().splitlines()
    assert "model labeller 'p1' is retired: an override would open nothing" in line
