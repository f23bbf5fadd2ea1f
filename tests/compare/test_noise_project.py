"""The labeller-noise floor from a judging project of three labellers: every pair of labellers sharing
calibration queries is used, the command says which, and the floor equals the one from two qrels files
written by hand with the same grades (alice's on one side; bob's on q1 and carol's on q2 on the other)."""

from __future__ import annotations

import json
from pathlib import Path

from ..app.helpers import FIXTURES, calibration_pairs, grade_directly, make_project
from ..conftest import CLI

ALICE = {
    ("q1", "keys/rotate"): 3, ("q1", "keys/policy"): 1, ("q1", "security/advisory-4"): 0, ("q1", "changelog/2026"): 1,
    ("q2", "sdk/retries"): 3, ("q2", "limits/rate"): 2, ("q2", "sdk/timeouts"): 1, ("q2", "security/advisory-4"): 0,
}  # fmt: skip
BOB = {k: g for k, g in ALICE.items() if k[0] == "q1"} | {("q1", "keys/policy"): 3}
CAROL = {k: g for k, g in ALICE.items() if k[0] == "q2"} | {("q2", "limits/rate"): 0}


def test_a_three_labeller_project_gives_every_pair_and_says_which(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob,carol", runs=False)
    pairs = calibration_pairs(db)  # the plan: alice and bob share q1, alice and carol share q2
    assert {q for q, _ in pairs["bob"]} == {"q1"} and {q for q, _ in pairs["carol"]} == {"q2"}
    for name, grades in (("alice", ALICE), ("bob", BOB), ("carol", CAROL)):
        grade_directly(db, name, grades)
    final = tmp_path / "final.qrels"
    pool = [json.loads(line) for line in (FIXTURES / "pool.jsonl").read_text().splitlines() if line.strip()]
    final.write_text("".join(f"{p['query_id']} 0 {p['doc_id']} {ALICE.get((p['query_id'], p['doc_id']), 1)}\n"
                             for p in pool))  # fmt: skip
    one, other = tmp_path / "first.qrels", tmp_path / "second.qrels"
    one.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(ALICE.items())))
    other.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted((BOB | CAROL).items())))

    runs = [FIXTURES / "sysalpha.run", FIXTURES / "sysbeta.run"]
    common = [final, *runs, "-m", "nDCG@10", "--replicates", "5", "--test", "t", "-f", "json"]
    from_db = CLI("compare", *common, "--noise-floor", db)
    from_files = CLI("compare", *common, "--noise-floor", one, other)
    assert from_db.exit_code == 0, from_db.output
    assert from_files.exit_code == 0, from_files.output
    assert (
        "noise floor from every labeller pair sharing calibration queries (2): alice & bob (1 query: q1); "
        "alice & carol (1 query: q2)"
    ) in from_db.stderr
    db_floor = json.loads(from_db.stdout)["comparison"]["noise_floor"]
    file_floor = json.loads(from_files.stdout)["comparison"]["noise_floor"]
    assert db_floor["labellers"] == [f"{db}:alice", f"{db}:bob+carol"]
    assert db_floor["labeller_pairs"] == [
        {"labellers": ["alice", "bob"], "queries": ["q1"]},
        {"labellers": ["alice", "carol"], "queries": ["q2"]},
    ]
    assert db_floor["calibration_queries"] == ["q1", "q2"]
    # two splits by hand: keys/policy alice 1 / bob 3, limits/rate alice 2 / carol 0
    confusion = db_floor["confusion"]
    assert confusion[1][3] == 1 and confusion[2][0] == 1 and sum(map(sum, confusion)) == 8
    assert confusion == file_floor["confusion"] and db_floor["pairs"] == file_floor["pairs"]

    # two named labellers: that pair only, and the note names it
    named = CLI("compare", *common, "--noise-floor", db, "--labellers", "alice,bob")
    assert named.exit_code == 0, named.output
    assert "noise floor from the labeller pair: alice & bob (1 query: q1)" in named.stderr
    assert json.loads(named.stdout)["comparison"]["noise_floor"]["calibration_queries"] == ["q1"]
