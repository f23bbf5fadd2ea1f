"""A project whose final grades mix people and a model labeller: `qrelkit judge export --final` also writes the
model's qrels and the people's qrels of the calibration queries, with a manifest naming both, and `qrelkit eval`
given the model's qrels estimates with them without `--human`.

The model labeller grades over a real HTTP server on the loopback interface speaking the chat completions
protocol (tests/app/models/helpers.py); the project is a real SQLite database."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from .helpers import QUERIES, ChatServer, grade_calibration, make_synthetic, person, scripted


def _lenient_model(cli, db: Path) -> None:
    """A model labeller that is one grade lenient on about one pair in five, passing its gate."""
    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        assert cli("judge", "model", "run", db, "judge").exit_code == 0
        assert cli("judge", "model", "probe", db, "judge").exit_code == 0
        assert cli("judge", "model", "run", db, "judge").exit_code == 0


def _drawn_project(tmp: Path) -> Path:
    """The synthetic project, its 8 calibration queries drawn by `judge init` with seed 11 (not marked by
    the pool), the people's calibration graded and passed."""
    from qrelkit.app.project import init_project

    make_synthetic(tmp)  # writes the rubric, queries, documents and pool; its project is replaced
    pool = [json.loads(line) for line in (tmp / "pool.jsonl").read_text().splitlines()]
    (tmp / "pool.jsonl").write_text("".join(json.dumps({k: v for k, v in e.items() if k != "calibration"}) + "\n"
                                            for e in pool))  # fmt: skip
    db = tmp / "drawn.db"
    init_project(db, rubric=tmp / "rubric.toml", pool=tmp / "pool.jsonl", docs=tmp / "docs.jsonl",
                 queries=tmp / "queries.tsv", labellers=["alice", "bob"], seed=11, min_kappa=0.3,
                 calibration=8)  # fmt: skip
    grade_calibration(db, person)
    return db


def _latest(conn: sqlite3.Connection, where: str) -> dict[tuple[str, str], dict[str, int]]:
    """Each pair's latest non-empty grade per labeller, read from the grade events."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    rows = conn.execute(
        "SELECT p.query_id, p.doc_id, u.name, e.grade FROM grade_events e JOIN users u USING (user_id) "
        f"JOIN pairs p USING (pair_id) WHERE {where} ORDER BY e.event_id"
    ).fetchall()
    for q, d, name, g in rows:
        if g is not None:
            out.setdefault((q, d), {})[name] = int(g)
    return out


def _qrels(path: Path) -> dict[tuple[str, str], int]:
    return {(q, d): int(g) for q, _, d, g in (line.split() for line in path.read_text().splitlines())}


@pytest.fixture
def exported(tmp_path: Path, cli) -> tuple[Path, Path]:
    db = _drawn_project(tmp_path)
    _lenient_model(cli, db)
    out = tmp_path / "out" / "final.qrels"
    out.parent.mkdir()
    result = cli("judge", "export", db, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert result.exit_code == 0, result.output
    assert "also wrote the model's and the people's calibration qrels" in result.output
    return db, out


def _run(tmp: Path, name: str, shift: int) -> Path:
    run = tmp / f"{name}.run"
    run.write_text("".join(f"q{q} Q0 d{q}-{(d + shift) % 5} {d + 1} {10 - d} {name}\n"
                           for q in range(QUERIES) for d in range(5)))  # fmt: skip
    return run


def test_the_export_writes_the_models_and_the_peoples_qrels_and_names_both(exported) -> None:
    db, out = exported
    folder = out.parent
    model, human = folder / "final.model.qrels", folder / "final.human.qrels"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "final.qrels",
            "final.qrels.manifest.json",
            "final.model.qrels",
            "final.model.qrels.manifest.json",
            "final.human.qrels",
        ]
    )
    with sqlite3.connect(db) as conn:
        rubric = conn.execute("SELECT value FROM meta WHERE key = 'rubric_hash'").fetchone()[0]
        events = _latest(conn, f"e.rubric_hash = '{rubric}'")
        roles = dict(conn.execute("SELECT name, role FROM users"))
        calibration = sorted({q for (q,) in conn.execute("SELECT query_id FROM pairs WHERE calibration = 1")})
        queries = sorted({q for (q,) in conn.execute("SELECT query_id FROM pairs")})
    # the model's qrels: its latest grade of every pair it graded (all 60)
    expected_model = {k: v["judge"] for k, v in events.items() if "judge" in v}
    assert len(expected_model) == 60 and _qrels(model) == expected_model
    # the people's qrels: on the calibration queries, the grade the two people agree on (no decisions were made,
    # so the pairs they split on are left out); the model's grade takes no part
    expected_human = {}
    for (q, d), by in events.items():
        people = {g for n, g in by.items() if roles[n] == "labeller"}
        if q in calibration and len(people) == 1:
            expected_human[q, d] = people.pop()
    assert 0 < len(expected_human) < 40 and _qrels(human) == expected_human
    # the calibration sample: numpy's default_rng(seed).choice of 8 of the sorted queries, without replacement
    picked = np.random.default_rng(11).choice(len(queries), size=8, replace=False)
    assert sorted(queries[int(i)] for i in picked) == calibration
    for manifest_file in ("final.qrels.manifest.json", "final.model.qrels.manifest.json"):
        pp = json.loads((folder / manifest_file).read_text())["prediction_powered"]
        assert pp["sample"]["drawn"] == "random" and pp["sample"]["seed"] == 11 and pp["sample"]["count"] == 8
        assert pp["sample"]["queries"] == calibration
        assert pp["human_qrels"]["path"] == "final.human.qrels"
        assert pp["human_qrels"]["sha256"] == hashlib.sha256(human.read_bytes()).hexdigest()
        (entry,) = pp["model_qrels"]
        assert entry["path"] == "final.model.qrels" and entry["model_id"] == "judge-1"
        assert entry["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    own = json.loads((folder / "final.model.qrels.manifest.json").read_text())
    assert own["qrels"]["path"] == "final.model.qrels" and own["qrels"]["judgments"] == 60
    assert "signature" in own  # signed with the project's key, as the final manifest is


def test_eval_of_the_models_qrels_estimates_as_eval_with_human_does(exported, cli, tmp_path: Path) -> None:
    _, out = exported
    model, human = out.parent / "final.model.qrels", out.parent / "final.human.qrels"
    runs = [_run(tmp_path, "a", 0), _run(tmp_path, "b", 2)]
    found = cli("eval", model, *runs, "--format", "json")
    assert found.exit_code == 0, found.output
    assert ("estimator ppi++: people's qrels final.human.qrels (8 calibration queries, drawn at random with "
            "seed 11) and model judge's qrels final.model.qrels (model judge-1)") in found.stderr  # fmt: skip
    assert "random" not in "".join(line for line in found.stderr.splitlines() if line.startswith("warning"))
    given = cli("eval", model, *runs, "--format", "json", "--human", human)
    assert given.exit_code == 0, given.output
    assert "--human" in given.stderr and "wins over the people's qrels final.human.qrels" in given.stderr

    def numbers(text: str) -> list:
        return json.loads(text)["estimates"]

    assert numbers(found.stdout) == numbers(given.stdout)
    assert json.loads(found.stdout)["estimation"]["human_qrels"]["name"].endswith("final.human.qrels")
    assert json.loads(found.stdout)["estimation"]["interval"] == "t"  # the interval is named, as with --human
    normal = cli("eval", model, *runs, "--format", "json", "--interval", "normal")
    assert normal.exit_code == 0 and json.loads(normal.stdout)["estimation"]["interval"] == "normal"
    other = cli("eval", model, *runs, "--format", "json", "--estimator", "human")
    assert other.exit_code == 0 and "estimator human:" in other.stderr
    assert {r["estimator"] for r in numbers(other.stdout)} == {"human"}
    compared = cli("compare", model, *runs, "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert "estimator ppi++: people's qrels final.human.qrels" in compared.stderr
    with_human = cli("compare", model, *runs, "--format", "json", "--human", human)
    pairs = json.loads(compared.stdout)["comparison"]["estimation"]["pairs"]
    assert pairs and pairs == json.loads(with_human.stdout)["comparison"]["estimation"]["pairs"]
    page = cli("report", model, *runs, "-o", tmp_path / "report.html", "--permutations", "200")
    assert page.exit_code == 0, page.output
    assert "estimator ppi++: people's qrels final.human.qrels" in page.stderr
    html = (tmp_path / "report.html").read_text()
    assert (
        "Summary: estimated means and differences (ppi++)" in html and "95% interval t (small-sample" in html
    )
    # the final qrels' own manifest describes people's and the model's grades merged: no estimate
    plain = cli("eval", out, *runs, "--format", "json")
    assert (
        plain.exit_code == 0
        and "estimator" not in plain.stderr
        and "estimates" not in json.loads(plain.stdout)
    )


def test_a_sample_not_drawn_at_random_gets_a_warning(gated: Path, cli, tmp_path: Path) -> None:
    # the fixture's pool marks queries q0..q7 as calibration: not the project's seeded draw
    _lenient_model(cli, gated)
    out = tmp_path / "final.qrels"
    assert (
        cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out").exit_code == 0
    )
    pp = json.loads((tmp_path / "final.model.qrels.manifest.json").read_text())["prediction_powered"]
    assert pp["sample"]["drawn"] == "given" and pp["sample"]["queries"] == [f"q{q}" for q in range(8)]
    result = cli("eval", tmp_path / "final.model.qrels", _run(tmp_path, "a", 0), "--format", "json")
    assert result.exit_code == 0, result.output
    assert ("warning: the manifest final.model.qrels.manifest.json does not say the people's queries were drawn "
            "at random (drawn: given): the interval's validity rests on their being a random sample of the "
            "queries") in result.stderr  # fmt: skip


def _errors(stderr: str) -> list[str]:
    """The error lines (a note that the manifest's signature was not checked comes only after a result)."""
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and all(
        ln.startswith(("qrelkit: error", "manifest signed")) for ln in lines
    )
    return [ln for ln in lines if ln.startswith("qrelkit: error")]


def test_a_missing_or_altered_peoples_file_is_a_one_line_error(exported, cli, tmp_path: Path) -> None:
    _, out = exported
    model, human = out.parent / "final.model.qrels", out.parent / "final.human.qrels"
    run = _run(tmp_path, "a", 0)
    text = human.read_text()
    human.write_text(text.replace(text.split("\n")[0], text.split("\n")[0][:-1] + "9"))
    altered = cli("eval", model, run)
    assert altered.exit_code != 0 and "Traceback" not in altered.output
    (line,) = _errors(altered.stderr)
    assert "final.human.qrels" in line and "the people's qrels no longer match the manifest" in line
    assert "re-export with `qrelkit judge export --final`" in line
    human.unlink()
    missing = cli("eval", model, run)
    assert missing.exit_code != 0
    (line,) = _errors(missing.stderr)
    assert "names the people's qrels final.human.qrels, which is not beside it" in line and "--human" in line
    # --human given explicitly does not need the manifest's people's file
    human.write_text(text)
    assert cli("eval", model, run, "--human", human, "--format", "json").exit_code == 0
