"""Pooling: union, provenance, sizes, overlap, cost, calibration picks and the assignment plan.

The expected values below were worked out by hand from tests/fixtures/pool/{a,b}.run at depth 3:

    run a, ranked by score desc then doc id desc (the rank column is ignored):
        q1: d1 (1), d2 (2), d3 (3) | d4 (4, below the depth)
        q2: d5 (1) and d1 (2) tie at 1.0, so doc id descending puts d5 first; d6 (3)
        q3: d7 (1)
    run b:
        q1: d3 (1), d9 (2), d1 (3) | d2 (4, below the depth)
        q2: d6 (1), d7 (2)
        q3: d7 (1), d8 (2), d9 (3)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from qrelkit import read_qrels, read_run
from qrelkit.cli import main
from qrelkit.errors import ValidationError
from qrelkit.pool import TIE_RULE, build_pool, meta_path

from ..conftest import EXAMPLE, FIXTURES

POOL = FIXTURES / "pool"

EXPECTED = {
    ("q1", "d1"): {"a": 1, "b": 3},
    ("q1", "d2"): {"a": 2},
    ("q1", "d3"): {"a": 3, "b": 1},
    ("q1", "d9"): {"b": 2},
    ("q2", "d1"): {"a": 2},
    ("q2", "d5"): {"a": 1},
    ("q2", "d6"): {"a": 3, "b": 1},
    ("q2", "d7"): {"b": 2},
    ("q3", "d7"): {"a": 1, "b": 1},
    ("q3", "d8"): {"b": 2},
    ("q3", "d9"): {"b": 3},
}


@pytest.fixture(scope="module")
def runs():
    return [read_run(POOL / "a.run"), read_run(POOL / "b.run")]


@pytest.fixture(scope="module")
def existing():
    return read_qrels(POOL / "existing.qrels")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_union_provenance_and_order(runs):
    pool = build_pool(runs, depth=3, calibration=0)
    lines = [json.loads(s) for s in pool.jsonl_lines()]
    assert [(x["query_id"], x["doc_id"]) for x in lines] == sorted(EXPECTED)
    for x in lines:
        assert x["runs"] == EXPECTED[x["query_id"], x["doc_id"]]
        assert x["best_rank"] == min(x["runs"].values())
        assert x["judged"] is False and x["calibration"] is False
        assert "labellers" not in x
        assert list(x) == ["query_id", "doc_id", "runs", "best_rank", "judged", "calibration"]


def test_sizes_overlap_and_cost_by_hand(runs, existing):
    pool = build_pool(runs, depth=3, qrels=existing, seconds_per_judgment=30, calibration=0)
    meta = pool.meta()
    assert meta["pool_size"]["per_query"] == {
        # q1 d1 judged 2; q2 d7 has grade -1 ("in the pool, unjudged"); q3 d8 judged 0; q1 d4 is not pooled
        "q1": {"pooled": 4, "judged": 1, "to_judge": 3},
        "q2": {"pooled": 4, "judged": 0, "to_judge": 4},
        "q3": {"pooled": 3, "judged": 1, "to_judge": 2},
    }
    assert meta["pool_size"]["mean"] == pytest.approx(11 / 3)
    assert meta["counts"] == {
        "queries": 3,
        "pooled_pairs": 11,
        "already_judged": 2,
        "pairs_to_judge": 9,
        "calibration_pairs": 0,
        "calibration_queries": 0,
        "judgments": 9,
    }
    overlap = meta["overlap"]
    assert overlap["pooled_per_run"] == {"a": 7, "b": 8}
    # unique to a: q1 d2, q2 d1, q2 d5; to b: q1 d9, q2 d7, q3 d8, q3 d9
    assert overlap["unique_per_run"] == {"a": 3, "b": 4}
    # both: q1 d1, q1 d3, q2 d6, q3 d7 = 4 of 11
    (jac,) = overlap["jaccard"]
    assert (jac["a"], jac["b"], jac["intersection"], jac["union"]) == ("a", "b", 4, 11)
    assert jac["jaccard"] == pytest.approx(4 / 11)
    # 9 judgments x 30 s = 270 s = 0.075 h
    assert meta["cost"]["judgments"] == 9
    assert meta["cost"]["hours"] == pytest.approx(0.075)
    judged = {(x["query_id"], x["doc_id"]) for x in map(json.loads, pool.jsonl_lines()) if x["judged"]}
    assert judged == {("q1", "d1"), ("q3", "d8")}


def test_calibration_pairs_count_twice_and_rotate_labeller_pairs(runs):
    pool = build_pool(
        runs, depth=3, calibration=3, seed=5, labellers=["a", "b", "c"], seconds_per_judgment=40
    )
    meta = pool.meta()
    assert meta["calibration"]["queries"] == ["q1", "q2", "q3"]
    # 11 pairs, all in calibration queries: 22 judgments x 40 s = 880 s
    assert meta["counts"]["calibration_pairs"] == 11
    assert meta["cost"]["judgments"] == 22
    assert meta["cost"]["hours"] == pytest.approx(880 / 3600)
    plan = {x["query_id"]: x["labellers"] for x in map(json.loads, pool.jsonl_lines())}
    assert plan == {"q1": ["a", "b"], "q2": ["a", "c"], "q3": ["b", "c"]}
    # a: q1 (4) + q2 (4); b: q1 (4) + q3 (3); c: q2 (4) + q3 (3)
    assert meta["pairs_per_labeller"] == {"a": 8, "b": 7, "c": 7}


def test_three_labellers_per_calibration_query_count_three_times_and_rotate_groups(runs):
    pool = build_pool(runs, depth=3, calibration=3, seed=5, labellers=["a", "b", "c", "d"],
                      calibration_labellers=3, seconds_per_judgment=40)  # fmt: skip
    meta = pool.meta()
    # 11 pairs, all in calibration queries, each judged by three labellers: 33 judgments x 40 s = 1320 s
    assert meta["counts"]["calibration_pairs"] == 11
    assert meta["cost"]["judgments"] == 33 and meta["cost"]["calibration_labellers"] == 3
    assert meta["cost"]["hours"] == pytest.approx(1320 / 3600)
    assert meta["calibration"]["labellers_per_query"] == 3
    plan = {x["query_id"]: x["labellers"] for x in map(json.loads, pool.jsonl_lines())}
    # the groups of three in itertools.combinations order, taken in turn
    assert plan == {"q1": ["a", "b", "c"], "q2": ["a", "b", "d"], "q3": ["a", "c", "d"]}
    # a: 4 + 4 + 3; b: 4 + 4; c: 4 + 3; d: 4 + 3
    assert meta["pairs_per_labeller"] == {"a": 11, "b": 8, "c": 7, "d": 7}
    every = build_pool(
        runs, depth=3, calibration=3, seed=5, labellers=["a", "b", "c"], calibration_labellers=3
    )
    assert {tuple(x["labellers"]) for x in map(json.loads, every.jsonl_lines())} == {("a", "b", "c")}
    with pytest.raises(ValidationError, match="at least two labellers, and no more than there are"):
        build_pool(runs, depth=3, calibration=3, labellers=["a", "b"], calibration_labellers=3)


def test_even_assignment_whole_queries(runs, existing):
    pool = build_pool(runs, depth=3, qrels=existing, labellers=["x", "y"], calibration=0)
    lines = [json.loads(s) for s in pool.jsonl_lines()]
    # to judge: q2 4, q1 3, q3 2. Largest first to the least loaded: q2 -> x, q1 -> y, q3 -> y (3 < 4)
    for x in lines:
        if x["judged"]:
            assert x["labellers"] == []
        else:
            assert x["labellers"] == {"q1": ["y"], "q2": ["x"], "q3": ["y"]}[x["query_id"]]
    assert pool.meta()["pairs_per_labeller"] == {"x": 4, "y": 5}


def test_even_assignment_on_many_queries():
    rng = np.random.default_rng(7)
    scores = {}
    for q in range(40):
        n = int(rng.integers(3, 30))
        scores[f"q{q:02d}"] = {f"d{i}": float(n - i) for i in range(n)}
    from qrelkit import Run

    pool = build_pool(
        [Run.from_dict(scores, name="only")], depth=50, labellers=["a", "b", "c"], calibration=0
    )
    counts = pool.meta()["pairs_per_labeller"]
    assert sum(counts.values()) == sum(len(v) for v in scores.values())
    assert max(counts.values()) - min(counts.values()) <= max(len(v) for v in scores.values())
    per_query = {}
    for x in map(json.loads, pool.jsonl_lines()):
        per_query.setdefault(x["query_id"], set()).add(tuple(x["labellers"]))
    assert all(len(v) == 1 for v in per_query.values())  # whole queries per labeller


def test_calibration_pick_is_reproducible_and_follows_the_documented_draw(runs):
    picks = {build_pool(runs, depth=3, calibration=2, seed=s).calibration_queries for s in range(6)}
    again = {build_pool(runs, depth=3, calibration=2, seed=s).calibration_queries for s in range(6)}
    assert picks == again
    for s in range(6):
        chosen = np.random.default_rng(s).choice(3, size=2, replace=False)
        expected = tuple(sorted(["q1", "q2", "q3"][i] for i in chosen))
        assert build_pool(runs, depth=3, calibration=2, seed=s).calibration_queries == expected


def test_more_calibration_queries_than_the_pool_has_takes_all_of_them_and_says_so(runs):
    pool = build_pool(runs, depth=3, calibration=4)
    assert pool.calibration_queries == ("q1", "q2", "q3")
    assert pool.meta()["calibration"]["notes"] == list(pool.notes)
    asked, few = pool.notes
    assert "asked for 4 calibration queries, but only 3 queries have pairs to judge: all 3" in asked
    assert "only 3 calibration queries" in few
    assert build_pool(runs, depth=3, calibration=2).notes == (few.replace("only 3", "only 2"),)


def test_the_default_is_thirty_calibration_queries():
    from qrelkit import Run

    scores = {f"q{q:02d}": {f"d{i}": float(5 - i) for i in range(5)} for q in range(40)}
    pool = build_pool([Run.from_dict(scores, name="only")], depth=5, labellers=["a", "b"])
    assert len(pool.calibration_queries) == 30 and pool.notes == ()


def test_calibration_needs_two_labellers(runs):
    with pytest.raises(ValidationError, match="two labellers"):
        build_pool(runs, depth=3, calibration=1, labellers=["solo"])


def test_cli_writes_pool_and_meta(tmp_path, runs):
    out = tmp_path / "pool.jsonl"
    args = ["pool", str(POOL / "a.run"), str(POOL / "b.run"), "--depth", "3", "-o", str(out)]
    args += ["--qrels", str(POOL / "existing.qrels"), "--calibration", "1", "--seed", "2"]
    args += ["--labellers", "alice,bob"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert meta_path(out) == tmp_path / "pool.meta.json"
    meta = json.loads((tmp_path / "pool.meta.json").read_text())
    assert meta["depth"] == 3
    assert meta["tie_rule"] == TIE_RULE
    assert [r["name"] for r in meta["runs"]] == ["a", "b"]
    assert meta["runs"][0]["fingerprint"]["sha256"] == runs[0].fingerprint.sha256
    assert meta["calibration"]["seed"] == 2
    assert meta["labellers"] == ["alice", "bob"]
    assert "formula" in meta["cost"] and meta["tool"]["name"] == "qrelkit"
    lines = _lines(out)
    assert len(lines) == 11
    calib = meta["calibration"]["queries"]
    assert len(calib) == 1
    for x in lines:
        assert x["calibration"] == (x["query_id"] in calib)
        if x["calibration"] and not x["judged"]:
            assert x["labellers"] == ["alice", "bob"]
    assert "pooled pairs: 11" in result.stderr
    assert "default" in result.stderr  # seconds per judgment was left at its default


def test_cli_errors(tmp_path):
    out = str(tmp_path / "p.jsonl")
    r = CliRunner().invoke(main, ["pool", str(POOL / "a.run"), "-o", out, "--calibration", "9"])
    assert r.exit_code == 0  # all 3 queries, with a warning naming both numbers
    assert "warning: asked for 9 calibration queries, but only 3 queries" in r.stderr
    assert "warning: only 3 calibration queries" in r.stderr
    r = CliRunner().invoke(main, ["pool", str(POOL / "a.run"), "-o", out, "--labellers", "solo"])
    assert r.exit_code == 1 and "--calibration 0" in r.stderr and "Traceback" not in r.stderr
    r = CliRunner().invoke(main, ["pool", str(POOL / "a.run"), "-o", out, "--depth", "0"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["pool", str(POOL / "a.run"), str(POOL / "a.run"), "-o", out])
    assert r.exit_code == 1 and "both named" in r.stderr


def test_bundled_example_pool(tmp_path):
    runs_dir = EXAMPLE / "runs"
    if not (runs_dir / "bm25.run").exists():
        pytest.skip("the bundled example is not present")
    names = ["bm25", "dense", "hybrid", "rerank"]
    out = tmp_path / "pool.jsonl"
    args = ["pool", *[str(runs_dir / f"{n}.run") for n in names], "--depth", "10", "-o", str(out)]
    result = CliRunner().invoke(
        main, [*args, "--calibration", "10", "--seed", "0", "--labellers", "alice,bob"]
    )
    assert result.exit_code == 0, result.output
    lines = _lines(out)
    # Independent union: each run's top 10 by (score desc, doc id desc), read with plain Python.
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for n in names:
        rows: dict[str, list[tuple[float, str]]] = {}
        for line in (runs_dir / f"{n}.run").read_text().split("\n"):
            if line.strip():
                q, _, d, _, s, _ = line.split()
                rows.setdefault(q, []).append((float(s), d))
        for q, docs in rows.items():
            for rank, (_, d) in enumerate(sorted(docs, reverse=True)[:10], start=1):
                expected.setdefault((q, d), {})[n] = rank
    assert {(x["query_id"], x["doc_id"]): x["runs"] for x in lines} == expected
    meta = json.loads(meta_path(out).read_text())
    assert meta["counts"]["queries"] == 30
    assert meta["counts"]["pooled_pairs"] == len(expected)
    calib_pairs = sum(1 for x in lines if x["calibration"])
    assert meta["cost"]["judgments"] == len(expected) + calib_pairs
    assert sum(meta["pairs_per_labeller"].values()) == len(expected) + calib_pairs
