"""A judge that fails its gate can still predict: a model labeller with the role predictor grades the
calibration sample (its gate decided and reported), then every pooled pair whatever the outcome; its grades
never join the final merge, never reopen a pair, never count in progress; the export writes final.qrels
byte-identical to the export without it, plus its qrels and the people's sample, and `qrelkit eval` on them
gives the prediction-powered estimates of `qrelkit.estimate` with the line that it serves only as a predictor.

The project is a real SQLite database whose people grade through the app over HTTP (uvicorn in a thread on
the loopback interface). The model is a real HTTP server on the loopback interface speaking the chat
completions protocol (tests/app/models/helpers.py) that grades every document one grade higher than its true
grade (3 stays 3): lenient, so it fails non-inferiority against people who agree."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ..helpers import ThreadServer, position_of, sign_in
from ..test_browser import browser  # noqa: F401  (the chromium fixture)
from ..test_browser import sign_in as browser_sign_in
from .helpers import DOCS, QUERIES, ChatServer, make_synthetic, person, truth

ALL_PAIRS = [(q, d) for q in range(QUERIES) for d in range(DOCS)]


def lenient(q: int, d: int, prompt: str) -> int:
    """One grade higher than the pair's true grade, 3 staying 3."""
    return min(3, truth(q, d) + 1)


def _graded_through_the_app(tmp: Path) -> Path:
    """The synthetic project (8 calibration queries of 12, 5 documents each); alice and bob grade every pair of
    their plan by loading each pair's page and posting its form, as the browser does; their gate passes on the
    calibration."""
    from qrelkit.app.phases import ensure_gate, phase_of
    from qrelkit.app.store import Store
    from qrelkit.app.web import create_app

    db = make_synthetic(tmp)
    with sqlite3.connect(db) as conn:
        plan = conn.execute(
            "SELECT u.name, p.query_id, p.doc_id, EXISTS (SELECT 1 FROM round_pairs rp WHERE rp.pair_id = p.pair_id "
            "AND rp.user_id = u.user_id) FROM assignments a JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "ORDER BY 4 DESC, a.position"
        ).fetchall()
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        clients = {n: sign_in(srv.url, db, n) for n in ("alice", "bob")}
        for name, q, d, _ in plan:  # calibration first: the rest opens once the gate passed
            client = clients[name]
            pos = position_of(db, name, d, q)
            assert client.get(f"/label/{pos}").status_code == 200  # the page first, as a browser loads it
            done = client.post(
                f"/label/{pos}", data={"csrf_token": client.csrf, "grade": str(person(name, q, d))}
            )
            assert done.status_code == 303, done.text
    with Store(db) as store:
        ensure_gate(store)
        assert store.read(phase_of).outcome == "passed"
    return db


def _export(cli, db: Path, folder: Path) -> Path:
    folder.mkdir()
    out = folder / "final.qrels"
    done = cli("judge", "export", db, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert done.exit_code == 0, done.output
    return out


def _qrels(path: Path) -> dict[tuple[str, str], int]:
    return {(q, d): int(g) for q, _, d, g in (line.split() for line in path.read_text().splitlines())}


def _runs(tmp: Path) -> list[Path]:
    runs = []
    for name, shift in (("a", 0), ("b", 2), ("c", 4)):
        run = tmp / f"{name}.run"
        run.write_text("".join(f"q{q} Q0 d{q}-{(d + shift) % DOCS} {d + 1} {10 - d} {name}\n"
                               for q in range(QUERIES) for d in range(DOCS)))  # fmt: skip
        runs.append(run)
    return runs


def _check_estimates(cli, folder: Path, runs: list[Path], tmp: Path) -> str:
    """`qrelkit eval` on the predictor's qrels gives qrelkit.estimate's ppi++ on the same two files; returns the
    predictor's warning line."""
    import qrelkit

    predictor, human = folder / "final.predictor.qrels", folder / "final.human.qrels"
    # the lenient judge never gives 0: the rubric says both files are on the scale 0..3
    rubric = ("--rubric", tmp / "rubric.toml")
    found = cli("eval", predictor, *runs, "-m", "nDCG@10", "--format", "json", *rubric)
    assert found.exit_code == 0, found.output
    shown = json.loads(found.stdout)
    model = qrelkit.evaluate(qrelkit.read_qrels(predictor), [qrelkit.read_run(r) for r in runs], ["nDCG@10"])
    people = qrelkit.evaluate(qrelkit.read_qrels(human), [qrelkit.read_run(r) for r in runs], ["nDCG@10"])
    expected = qrelkit.estimate(model, people, "ppi++")
    assert [(e["run"], e["estimator"]) for e in shown["estimates"]] == [
        ("a", "ppi++"),
        ("b", "ppi++"),
        ("c", "ppi++"),
    ]
    assert [e["by_estimator"] for e in shown["estimates"]] == [
        r.to_dict()["by_estimator"] for r in expected.rows
    ]
    (line,) = [w for w in found.stderr.splitlines() if "serves only as a predictor" in w]
    assert line.startswith("warning: ")
    text = cli("eval", predictor, *runs, "-m", "nDCG@10", *rubric)
    assert text.exit_code == 0 and line in text.stderr
    compared = cli("compare", predictor, *runs, "-m", "nDCG@10", "--format", "json", *rubric)
    assert compared.exit_code == 0 and line in compared.stderr
    page = tmp / "report.html"
    reported = cli("report", predictor, *runs, "-o", page, "--permutations", "200", *rubric)
    assert reported.exit_code == 0, reported.output
    assert line in reported.stderr
    # once, though the people's qrels' choice and the estimates carry it
    for said in (text, compared, reported):
        assert said.stderr.count(line) == 1, said.stderr
    return line


@pytest.fixture
def people_only(tmp_path: Path, cli) -> tuple[Path, Path, dict[str, Any], list[Any]]:
    db = _graded_through_the_app(tmp_path)
    out = _export(cli, db, tmp_path / "without")
    status = json.loads(cli("judge", "status", db, "--json").stdout)
    queue = json.loads(cli("judge", "queue", db, "--json").stdout)["items"]
    return db, out, status, queue


def test_a_lenient_predictor_grades_every_pair_and_never_counts(people_only, cli, tmp_path: Path) -> None:
    db, without, status, queue = people_only
    with ChatServer(lenient) as srv:
        added = cli("judge", "model", "add", db, "lenient", "--endpoint", srv.url, "--model", "judge-1", "--role",
                    "predictor")  # fmt: skip
        assert added.exit_code == 0 and added.stdout.startswith("model predictor lenient")
        ran = cli("judge", "model", "run", db, "lenient")
        assert ran.exit_code == 0, ran.output
        assert cli("judge", "model", "probe", db, "lenient").exit_code == 0
        assert cli("judge", "model", "run", db, "lenient").exit_code == 0
        assert (
            len({json.dumps(b["messages"]) for b in srv.bodies if "Query:" in b["messages"][-1]["content"]})
            >= 60
        )
    shown = json.loads(cli("judge", "model", "status", db, "lenient", "--format", "json").stdout)
    assert shown["role"] == "predictor" and shown["gate_outcome"] == "failed"
    assert "non_inferiority" in shown["gate"]["failing"] and "people" not in shown["gate"]["failing"]
    assert shown["graded"] == 60 == len(ALL_PAIRS)  # every pooled pair, whatever the outcome
    # never in progress, never in the queue (its grades disagree with the people's everywhere but on 3s)
    assert json.loads(cli("judge", "status", db, "--json").stdout) | {"pace": None} == status | {"pace": None}
    assert json.loads(cli("judge", "queue", db, "--json").stdout)["items"] == queue
    folder = tmp_path / "with"
    out = _export(cli, db, folder)
    assert out.read_bytes() == without.read_bytes()  # byte-identical to the export without it
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "final.qrels",
            "final.qrels.manifest.json",
            "final.predictor.qrels",
            "final.predictor.qrels.manifest.json",
            "final.human.qrels",
        ]
    )
    # its qrels: one grade above the truth on all 60 pairs
    assert _qrels(folder / "final.predictor.qrels") == {
        (f"q{q}", f"d{q}-{d}"): lenient(q, d, "") for q, d in ALL_PAIRS
    }
    # the people's sample: on the 8 calibration queries, the grade alice and bob agree on
    human = {(f"q{q}", f"d{q}-{d}"): person("alice", f"q{q}", f"d{q}-{d}") for q in range(8) for d in range(DOCS)
             if person("alice", f"q{q}", f"d{q}-{d}") == person("bob", f"q{q}", f"d{q}-{d}")}  # fmt: skip
    assert _qrels(folder / "final.human.qrels") == human
    for name in ("final.qrels.manifest.json", "final.predictor.qrels.manifest.json"):
        data = json.loads((folder / name).read_text())
        (entry,) = data["prediction_powered"]["model_qrels"]
        assert (
            entry["role"] == "predictor"
            and entry["gate"] == "failed"
            and "non_inferiority" in entry["failing"]
        )
        (model,) = data["model_labellers"]
        assert model["role"] == "predictor" and not model["counted_in_final"]
    line = _check_estimates(cli, folder, _runs(tmp_path), tmp_path)
    assert line.startswith("warning: model lenient (model judge-1) failed its gate (non_inferiority")
    assert "serves only as a predictor, corrected by people's grades" in line
    # the final qrels' own evaluation says nothing of a predictor: its grades are not in them
    plain = json.loads(cli("eval", out, *_runs(tmp_path), "--format", "json").stdout)
    assert not any("predictor" in w for w in plain["judgments"]["warnings"]) and "estimates" not in plain


def test_a_labeller_turned_predictor_after_its_failed_gate(
    people_only,
    cli,
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    """The same lenient model added as a labeller: its gate fails and its pool stays closed; made a predictor
    (who, when, why recorded), it grades the rest, the export is the people's, and the manifest and the admin
    page (a real browser) show the decision."""
    from qrelkit.app.web import create_app

    db, without, _, _ = people_only
    with ChatServer(lenient) as srv:
        assert (
            cli("judge", "model", "add", db, "lenient", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        assert cli("judge", "model", "run", db, "lenient").exit_code == 0
        assert cli("judge", "model", "probe", db, "lenient").exit_code == 0
        closed = cli("judge", "model", "run", db, "lenient")
        assert "gate: failed (failing: non_inferiority" in closed.stdout
        shown = json.loads(cli("judge", "model", "status", db, "lenient", "--format", "json").stdout)
        assert shown["graded"] == 40 and not shown["full_pool_open"]  # the 40 calibration pairs only
        made = cli("judge", "model", "predict", db, "lenient", "--reason", "kappa below the people's; keep it "
                   "to correct", "--by", "ann")  # fmt: skip
        assert made.exit_code == 0 and "a predictor from now on (made so by ann at " in made.stdout
        assert cli("judge", "model", "run", db, "lenient").exit_code == 0
    refused = cli("judge", "model", "override", db, "lenient", "--reason", "count it", "--by", "ann")
    assert refused.exit_code == 1 and "is a predictor: an override would open nothing" in refused.stderr
    shown = json.loads(cli("judge", "model", "status", db, "lenient", "--format", "json").stdout)
    assert shown["role"] == "predictor" and shown["graded"] == 60 and shown["gate_outcome"] == "failed"
    (decision,) = shown["role_history"]
    assert decision["by"] == "ann" and decision["reason"] == "kappa below the people's; keep it to correct"
    folder = tmp_path / "turned"
    out = _export(cli, db, folder)
    assert out.read_bytes() == without.read_bytes()
    own = json.loads((folder / "final.predictor.qrels.manifest.json").read_text())
    (entry,) = own["prediction_powered"]["model_qrels"]
    assert entry["role"] == "predictor" and entry["gate"] == "failed"
    assert {k: entry["role_decision"][k] for k in ("by", "reason")} == {
        "by": "ann",
        "reason": decision["reason"],
    }
    assert entry["role_decision"]["at"] == decision["at"]
    (model,) = json.loads((folder / "final.qrels.manifest.json").read_text())["model_labellers"]
    assert model["role_decision"] == entry["role_decision"] and not model["counted_in_final"]
    line = _check_estimates(cli, folder, _runs(tmp_path), tmp_path)
    assert (
        f"; made a predictor by ann at {decision['at']}: kappa below the people's; keep it to correct" in line
    )
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0), admin_refresh=0)) as server:
        page = browser.new_page()
        browser_sign_in(page, server.url, db, "admin")
        page.goto(f"{server.url}/admin")
        row = page.inner_text("#model-role-lenient")
        gate = page.inner_text("#model-lenient .model-gate")
    assert row.startswith("Predictor: its grades only predict, corrected by the people's")
    assert f"Decided by ann at {decision['at']}: kappa below the people's; keep it to correct" in row
    assert gate.startswith("failed (failing: non_inferiority") and "full pool open" in gate


def test_a_predictor_whose_probes_never_ran_says_so_apart_from_failed_probes(
    gated: Path, cli, tmp_path: Path
) -> None:
    """A predictor grades its whole pool without `judge model probe`: its gate names ``probes not run`` (not
    ``probes``, which means probes that ran and failed) in the status, its table, the manifests and the line
    an estimate from its qrels carries. It grades every pair at its true grade, so nothing else fails."""
    with ChatServer(lambda q, d, prompt: truth(q, d)) as srv:
        added = cli("judge", "model", "add", gated, "exact", "--endpoint", srv.url, "--model", "judge-1",
                    "--role", "predictor")  # fmt: skip
        assert added.exit_code == 0, added.output
        ran = cli("judge", "model", "run", gated, "exact")
        assert ran.exit_code == 0, ran.output
    shown = json.loads(cli("judge", "model", "status", gated, "exact", "--format", "json").stdout)
    assert shown["graded"] == 60 and shown["gate"]["failing"] == ["probes not run"]
    assert "failing: probes not run" in cli("judge", "model", "status", gated, "exact").stdout
    folder = tmp_path / "out"
    _export(cli, gated, folder)
    data = json.loads((folder / "final.predictor.qrels.manifest.json").read_text())
    (entry,) = data["prediction_powered"]["model_qrels"]
    assert entry["failing"] == ["probes not run"]
    found = cli("eval", folder / "final.predictor.qrels", *_runs(tmp_path), "-m", "nDCG@10", "--format", "json",
                "--rubric", tmp_path / "rubric.toml")  # fmt: skip
    assert found.exit_code == 0, found.output
    (line,) = [w for w in found.stderr.splitlines() if "serves only as a predictor" in w]
    assert "failed its gate (probes not run)" in line


def test_estimates_from_a_predictors_export_say_its_line_and_use_the_recorded_scale(
    gated: Path, cli, tmp_path: Path
) -> None:
    """The lenient predictor never gives grade 0, so its qrels' grades run 1..3 and the people's 0..3; the
    manifest records the rubric's scale 0..3, so `qrelkit eval` without --rubric estimates (no "different
    grade scales"), and the predictor's line is in the JSON's estimation warnings and the table, and once
    on stderr."""
    with ChatServer(lenient) as srv:
        assert cli("judge", "model", "add", gated, "lenient", "--endpoint", srv.url, "--model", "judge-1",
                   "--role", "predictor").exit_code == 0  # fmt: skip
        assert cli("judge", "model", "run", gated, "lenient").exit_code == 0
    folder = tmp_path / "out"
    _export(cli, gated, folder)
    predictor = folder / "final.predictor.qrels"
    assert min(_qrels(predictor).values()) == 1  # never 0
    data = json.loads((folder / "final.predictor.qrels.manifest.json").read_text())
    assert data["scale"] == [0, 1, 2, 3]
    found = cli("eval", predictor, *_runs(tmp_path), "-m", "nDCG@10", "--format", "json")
    assert found.exit_code == 0, found.output
    warnings = json.loads(found.stdout)["estimation"]["warnings"]
    (line,) = [w for w in warnings if "serves only as a predictor" in w]
    assert line.startswith("model lenient (model judge-1) failed its gate (")
    assert len([w for w in found.stderr.splitlines() if "serves only as a predictor" in w]) == 1
    # the people's sample of this project was given, not drawn at random: the JSON says so too, stderr once
    (drawn,) = [w for w in warnings if "does not say the people's queries were drawn at random" in w]
    assert found.stderr.count(drawn) == 1
    table = cli("eval", predictor, *_runs(tmp_path), "-m", "nDCG@10", "--format", "table")
    assert table.exit_code == 0 and f"warning: {line}" in table.stdout
    # compare and the report read both files on the manifest's scale too, and say the line
    compared = cli("compare", predictor, *_runs(tmp_path), "-m", "nDCG@10", "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert line in json.loads(compared.stdout)["judgments"]["warnings"]
    page = tmp_path / "report.html"
    reported = cli("report", predictor, *_runs(tmp_path), "-m", "nDCG@10", "-o", page)
    assert reported.exit_code == 0, reported.output
    assert "serves only as a predictor" in page.read_text()
    # a people's file on another scale is still refused
    other = tmp_path / "other.human.qrels"
    other.write_text("".join(f"q{q} 0 d{q}-{d} {2 * truth(q, d)}\n" for q in range(8) for d in range(DOCS)))
    refused = cli("eval", predictor, *_runs(tmp_path), "-m", "nDCG@10", "--human", other, "--format", "json")
    assert refused.exit_code != 0 and "different grade scales" in refused.stderr
