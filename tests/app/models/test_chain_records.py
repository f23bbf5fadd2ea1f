"""The chain records what it did: `qrelkit pool --calibration N --seed S` draws the calibration queries at
random and `judge init --pool` carries that draw into the project, so the final export's manifest says
"drawn": "random" with the pool's seed; and two labellers sharing fewer than five calibration queries are
warned about in the manifest, and from it in `eval`, `compare` and the report's Judgments section.

Real SQLite projects; the model labeller grades over a real HTTP server on the loopback interface speaking
the chat completions protocol (tests/app/models/helpers.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

from ..helpers import make_project
from .helpers import DOCS, QUERIES, ChatServer, grade_calibration, make_synthetic, person, scripted


def _pooled(tmp: Path, cli, *, seed: int) -> Path:
    """The synthetic collection pooled by `qrelkit pool` from one run (every document at depth 5), with 8
    calibration queries drawn with ``seed``; the people's calibration graded and passed."""
    make_synthetic(tmp)  # the rubric, queries and documents; its pool and project are replaced
    run = tmp / "sys.run"
    run.write_text(
        "".join(f"q{q} Q0 d{q}-{d} {d + 1} {10 - d} sys\n" for q in range(QUERIES) for d in range(DOCS))
    )
    pool = tmp / "drawn.jsonl"
    done = cli("pool", run, "--depth", "5", "--calibration", "8", "--seed", seed, "-o", pool)
    assert done.exit_code == 0, done.output
    db = tmp / "pooled.db"
    made = cli("judge", "init", db, "--rubric", tmp / "rubric.toml", "--pool", pool, "--docs",
               tmp / "docs.jsonl", "--queries", tmp / "queries.tsv", "--labellers", "alice,bob",
               "--min-kappa", "0.3")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "recorded as given" not in made.output
    grade_calibration(db, person)
    return db


def test_the_pools_random_draw_reaches_the_final_manifest(tmp_path: Path, cli) -> None:
    db = _pooled(tmp_path, cli, seed=23)
    # the draw by hand: numpy's default_rng(23).choice of 8 of the 12 sorted query ids, without replacement
    ids = sorted(f"q{q}" for q in range(QUERIES))
    expected = sorted(ids[int(i)] for i in np.random.default_rng(23).choice(12, size=8, replace=False))
    with sqlite3.connect(db) as conn:
        marked = sorted({q for (q,) in conn.execute("SELECT query_id FROM pairs WHERE calibration = 1")})
        assert conn.execute("SELECT seed FROM rounds WHERE round = 1").fetchone()[0] == 23
    assert marked == expected
    with ChatServer(scripted(0, flip_every=10**9)) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        assert cli("judge", "model", "run", db, "judge").exit_code == 0
        assert cli("judge", "model", "probe", db, "judge").exit_code == 0
        assert cli("judge", "model", "run", db, "judge").exit_code == 0
    out = tmp_path / "final.qrels"
    done = cli("judge", "export", db, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert done.exit_code == 0, done.output
    for name in ("final.qrels.manifest.json", "final.model.qrels.manifest.json"):
        sample = json.loads((tmp_path / name).read_text())["prediction_powered"]["sample"]
        assert (sample["drawn"], sample["seed"], sample["queries"]) == ("random", 23, expected)


def test_a_pool_whose_sidecar_is_gone_is_recorded_as_given_and_init_says_so(tmp_path: Path, cli) -> None:
    make_synthetic(tmp_path)
    run = tmp_path / "sys.run"
    run.write_text(
        "".join(f"q{q} Q0 d{q}-{d} {d + 1} {10 - d} sys\n" for q in range(QUERIES) for d in range(DOCS))
    )
    pool = tmp_path / "drawn.jsonl"
    assert cli("pool", run, "--depth", "5", "--calibration", "8", "--seed", "23", "-o", pool).exit_code == 0
    (tmp_path / "drawn.meta.json").unlink()
    made = cli("judge", "init", tmp_path / "p.db", "--rubric", tmp_path / "rubric.toml", "--pool", pool,
               "--docs", tmp_path / "docs.jsonl", "--queries", tmp_path / "queries.tsv", "--labellers",
               "alice,bob", "--seed", "5")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "the calibration queries are recorded as given, not drawn at random: the pool's sidecar " \
        "drawn.meta.json is not beside it" in made.output  # fmt: skip
    with sqlite3.connect(tmp_path / "p.db") as conn:
        assert conn.execute("SELECT seed FROM rounds WHERE round = 1").fetchone()[0] == 5


def test_few_shared_queries_reach_the_manifest_eval_compare_and_the_report(tmp_path: Path, cli) -> None:
    from ..helpers import FIXTURES, finish_calibration

    db = make_project(tmp_path, labellers="alice,bob")  # alice and bob share 2 calibration queries
    assert finish_calibration(db, agree=True).state == "open"
    out = tmp_path / "final.qrels"
    done = cli("judge", "export", db, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    (warning,) = manifest["calibration"]["warnings"]
    assert warning.startswith("alice and bob share only 2 calibration queries (fewer than 5)")
    runs = [FIXTURES / "sysalpha.run", FIXTURES / "sysbeta.run"]
    found = cli("eval", out, *runs, "--format", "json")
    assert found.exit_code == 0, found.output
    assert warning in json.loads(found.stdout)["judgments"]["warnings"]
    assert "share only 2 calibration queries" in cli("eval", out, *runs).output
    compared = cli("compare", out, *runs, "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert "share only 2 calibration queries" in compared.stdout
    page = tmp_path / "report.html"
    reported = cli("report", out, *runs, "-o", page, "--permutations", "200")
    assert reported.exit_code == 0, reported.output
    assert "alice and bob share only 2 calibration queries" in page.read_text()
