"""A run after the pool closed (which pairs it adds) and reusability (leave-one-out), on tiny runs worked out
by hand, on the bundled example and on the TREC DL 2019 passage judgments (checked with pytrec_eval)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from qrelkit import read_qrels, read_run
from qrelkit.data.values import Qrels, Run
from qrelkit.errors import ValidationError
from qrelkit.pool import extend_pool, judged_of_qrels, leave_one_out

from ..conftest import EXAMPLE, data_path

# -- which pairs a new run adds ---------------------------------------------------------------------------------

QRELS = Qrels.from_dict(
    {
        "q1": {"d1": 2, "d2": 0, "d3": -1},  # d3: in the pool, unjudged (a negative grade)
        "q2": {"d4": 1},
    }
)


def test_a_new_run_adds_only_its_unjudged_pairs_within_the_depth() -> None:
    """By hand, depth 3. New run n, ranked by score desc then doc id desc:
    q1: d9 (1), d1 (2), d3 (3) | d2 (4, below the depth)   -> d9 new, d1 judged, d3 graded -1: to judge
    q2: d5 (1) and d4 (2) tie at 0.5; doc id descending puts d5 first; d6 (3) -> d5, d6 new
    q7: d1 (1): a query the judgments never held -> left out, counted
    """
    new = Run.from_dict(
        {"q1": {"d9": 0.9, "d1": 0.8, "d3": 0.7, "d2": 0.6}, "q2": {"d4": 0.5, "d5": 0.5, "d6": 0.1},
         "q7": {"d1": 1.0}},
        name="n",
    )  # fmt: skip
    pool = extend_pool([new], 3, judged=judged_of_qrels(QRELS), seconds_per_judgment=36)
    got = {(q, d): dict(zip(r, k, strict=True)) for q, d, r, k in pool.pairs.select("query_id", "doc_id", "runs", "ranks").iter_rows()}  # fmt: skip
    assert got == {
        ("q1", "d3"): {"n": 3},
        ("q1", "d9"): {"n": 1},
        ("q2", "d5"): {"n": 1},
        ("q2", "d6"): {"n": 3},
    }
    assert not pool.pairs.get_column("calibration").any() and not pool.pairs.get_column("judged").any()
    cost = pool.cost()
    assert cost["pairs_to_judge"] == 4 and cost["judgments"] == 4 and cost["hours"] == 4 * 36 / 3600
    ext = pool.meta()["extends"]
    assert ext["kind"] == "qrels" and ext["judged_pairs"] == 3 and ext["judged_queries"] == 2
    assert ext["pairs_in_depth"] == 7 and ext["already_judged"] == 2
    assert ext["left_out_queries"] == ["q7"] and ext["left_out_pairs"] == 1
    assert len(pool.notes) == 1 and "q7" in pool.notes[0] and "pool every run" in pool.notes[0]
    assert [r["name"] for r in pool.meta()["runs"]] == ["n"]


def test_two_new_runs_share_a_pair_and_the_provenance_names_both(tmp_path: Path) -> None:
    a = Run.from_dict({"q2": {"d8": 2.0, "d4": 1.0}}, name="a")
    b = Run.from_dict({"q2": {"d8": 1.0, "d9": 3.0}}, name="b")
    pool = extend_pool([a, b], 2, judged=judged_of_qrels(QRELS))
    lines = pool.jsonl_lines()
    assert lines == [
        '{"query_id": "q2", "doc_id": "d8", "runs": {"a": 1, "b": 2}, "best_rank": 1, "judged": false, '
        '"calibration": false}',
        '{"query_id": "q2", "doc_id": "d9", "runs": {"b": 1}, "best_rank": 1, "judged": false, "calibration": false}',
    ]
    pool.write(tmp_path / "new.jsonl")  # the pool file format: judge init's reader takes it
    from qrelkit.app.project import read_pool

    assert [(e.query_id, e.doc_id, e.runs) for e in read_pool(tmp_path / "new.jsonl")] == [
        ("q2", "d8", {"a": 1, "b": 2}),
        ("q2", "d9", {"b": 1}),
    ]


def test_a_run_that_brings_nothing_new_gives_an_empty_extension() -> None:
    old = Run.from_dict({"q1": {"d1": 1.0, "d2": 0.5}}, name="old")
    pool = extend_pool([old], 10, judged=judged_of_qrels(QRELS))
    assert pool.pairs.height == 0 and pool.cost()["judgments"] == 0 and pool.notes == ()


def test_extend_refuses_a_bad_depth() -> None:
    with pytest.raises(ValidationError, match="depth"):
        extend_pool([Run.from_dict({"q1": {"d1": 1.0}}, name="x")], 0, judged=judged_of_qrels(QRELS))


def test_the_bundled_example_top_up_of_one_run_is_its_pairs_outside_the_qrels() -> None:
    """Independently: every (query, doc) of rerank.run in its top 30 by (score desc, doc desc), minus the
    pairs of qrels.txt with a grade >= 0 (the example's queries are all in the qrels)."""
    judged = set()
    for line in (EXAMPLE / "qrels.txt").read_text().splitlines():
        q, _, d, g = line.split()
        if int(g) >= 0:
            judged.add((q, d))
    per_query: dict[str, list[tuple[float, str]]] = {}
    for line in (EXAMPLE / "runs" / "rerank.run").read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        per_query.setdefault(q, []).append((float(s), d))
    expected = set()
    for q, rows in per_query.items():
        for _, d in sorted(rows, reverse=True)[:30]:
            if (q, d) not in judged:
                expected.add((q, d))
    pool = extend_pool([read_run(EXAMPLE / "runs" / "rerank.run")], 30,
                       judged=judged_of_qrels(read_qrels(EXAMPLE / "qrels.txt")))  # fmt: skip
    assert set(pool.pairs.select("query_id", "doc_id").iter_rows()) == expected
    assert len(expected) > 0


# -- leave-one-out --------------------------------------------------------------------------------------------


def _three_runs() -> tuple[list[Run], Qrels]:
    """Depth 2, P@2. The pools: q1: a {d1, d2}, b {d2, d3}, c {d4, d5}; q2: a {d6, d7}, b and c {d6, d8}.
    Judgments: q1 d1 1, d2 0, d3 1, d4 1, d5 1; q2 d6 1, d7 0, d8 1."""
    runs = [
        Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d6": 2.0, "d7": 1.0}}, name="a"),
        Run.from_dict({"q1": {"d2": 2.0, "d3": 1.0}, "q2": {"d6": 2.0, "d8": 1.0}}, name="b"),
        Run.from_dict({"q1": {"d4": 2.0, "d5": 1.0}, "q2": {"d6": 2.0, "d8": 1.0}}, name="c"),
    ]
    qrels = Qrels.from_dict(
        {"q1": {"d1": 1, "d2": 0, "d3": 1, "d4": 1, "d5": 1}, "q2": {"d6": 1, "d7": 0, "d8": 1}}
    )
    return runs, qrels


def test_leave_one_out_by_hand_on_two_queries() -> None:
    """By hand. Pairs only one run contributed: a (q1 d1, q2 d7), b (q1 d3), c (q1 d4, q1 d5).
    Full P@2: a (1/2 + 1/2)/2 = 0.5; b (1/2 + 1)/2 = 0.75; c (1 + 1)/2 = 1.
    Without a: q1 d1 unjudged -> 0, q2 1/2 -> 0.25. Without b: q1 0, q2 1 -> 0.5. Without c: q1 0, q2 1 -> 0.5.
    Ranks (others at their full values, ties share the better rank): a 3 -> 3, b 2 -> 2 (a's 0.5 ties), c 1 -> 2.
    Kendall's tau-b of [0.5, 0.75, 1] and [0.25, 0.5, 0.5]: 2 concordant, 0 discordant, one tie in the
    second: 2 / sqrt(3 * 2)."""
    runs, qrels = _three_runs()
    result = leave_one_out(runs, qrels, depth=2, measures=["P@2"])
    got = {r["run"]: r for r in result.rows}
    assert {n: (r["full"], r["left_out"]) for n, r in got.items()} == {
        "a": (0.5, 0.25),
        "b": (0.75, 0.5),
        "c": (1.0, 0.5),
    }
    assert {n: (r["rank_full"], r["rank_left_out"]) for n, r in got.items()} == {
        "a": (3, 3),
        "b": (2, 2),
        "c": (1, 2),
    }
    assert {n: (r["removed_pairs"], r["removed_relevant"]) for n, r in got.items()} == {
        "a": (2, 1), "b": (1, 1), "c": (2, 2),
    }  # fmt: skip
    assert got["c"]["change"] == -0.5
    assert result.tau["P(rel=1)@2"] == pytest.approx(2 / math.sqrt(6), abs=1e-12)
    data = result.to_dict()
    assert data["depth"] == 2 and data["runs"] == ["a", "b", "c"] and len(data["rows"]) == 3


def test_leave_one_out_of_one_run_has_no_tau() -> None:
    runs, qrels = _three_runs()
    result = leave_one_out(runs[:1], qrels, depth=2, measures=["P@2"])
    # alone, every judged pair of its pool is its own: q1 d1, d2 and q2 d6, d7 removed, nothing relevant left
    assert result.rows[0]["left_out"] == 0.0 and result.rows[0]["removed_pairs"] == 4
    assert result.tau == {"P(rel=1)@2": None}


def _independent_loo(runs: dict[str, dict[str, dict[str, float]]], qrels: dict[str, dict[str, int]],
                     depth: int, k: int) -> dict[str, tuple[float, float, int]]:  # fmt: skip
    """Leave-one-out with pytrec_eval's P_k: (full, left out, judged pairs removed) per run."""
    import pytrec_eval

    tops = {
        name: {q: {d for _, d in sorted(((s, d) for d, s in docs.items()), reverse=True)[:depth]}
               for q, docs in run.items()}
        for name, run in runs.items()
    }  # fmt: skip

    def mean_p(qr: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> float:
        ev = pytrec_eval.RelevanceEvaluator(qr, {f"P_{k}"}).evaluate(run)
        return sum(v[f"P_{k}"] for v in ev.values()) / len(ev)

    out = {}
    for name, run in runs.items():
        others = [t for n, t in tops.items() if n != name]
        alone = {
            (q, d) for q, ds in tops[name].items() for d in ds if not any(d in o.get(q, ()) for o in others)
        }
        reduced = {q: {d: g for d, g in docs.items() if (q, d) not in alone} for q, docs in qrels.items()}
        removed = sum(1 for q, docs in qrels.items() for d, g in docs.items() if (q, d) in alone and g >= 0)
        out[name] = (mean_p(qrels, run), mean_p(reduced, run), removed)
    return out


def test_leave_one_out_on_trec_dl_2019_matches_pytrec_eval() -> None:
    """Three runs generated from the TREC DL 2019 passage judgments (each query's judged passages and ten
    unjudged ones, scored by a different hash per run, all scores distinct), pooled at depth 10."""
    import hashlib

    qrels: dict[str, dict[str, int]] = {}
    for line in data_path("trec", "qrels.dl19-passage.txt").read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    queries = sorted(qrels)[:20]
    qrels = {q: qrels[q] for q in queries}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for name in ("alpha", "beta", "gamma"):
        runs[name] = {}
        for q in queries:
            docs = sorted(qrels[q]) + [f"unjudged-{q}-{i}" for i in range(10)]
            scored = sorted(docs, key=lambda d: hashlib.sha256(f"{name}:{q}:{d}".encode()).digest())
            runs[name][q] = {d: float(len(scored) - i) for i, d in enumerate(scored[:60])}
    qrels_obj = Qrels.from_dict(qrels)
    run_objs = [Run.from_dict(runs[n], name=n) for n in runs]
    result = leave_one_out(run_objs, qrels_obj, depth=10, measures=["P@10"])
    expected = _independent_loo(runs, qrels, 10, 10)
    for row in result.rows:
        full, left, removed = expected[row["run"]]
        assert row["full"] == pytest.approx(full, abs=1e-12)
        assert row["left_out"] == pytest.approx(left, abs=1e-12)
        assert row["removed_pairs"] == removed
    assert any(row["removed_pairs"] > 0 for row in result.rows)


def test_leave_one_out_on_the_bundled_example() -> None:
    """The four bundled runs at depth 10: the judged pairs each run alone brought, counted independently;
    removing judgments never raises precision (a removed document counts as not relevant)."""
    names = ["bm25", "dense", "hybrid", "rerank"]
    runs = [read_run(EXAMPLE / "runs" / f"{n}.run") for n in names]
    result = leave_one_out(runs, read_qrels(EXAMPLE / "qrels.txt"), depth=10, measures=["P@10"])
    tops: dict[str, set[tuple[str, str]]] = {}
    for n in names:
        per_query: dict[str, list[tuple[float, str]]] = {}
        for line in (EXAMPLE / "runs" / f"{n}.run").read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            per_query.setdefault(q, []).append((float(s), d))
        tops[n] = {(q, d) for q, rows in per_query.items() for _, d in sorted(rows, reverse=True)[:10]}
    judged = {tuple(line.split()[0:3:2]) for line in (EXAMPLE / "qrels.txt").read_text().splitlines()
              if int(line.split()[3]) >= 0}  # fmt: skip
    for row in result.rows:
        others = set().union(*(tops[n] for n in names if n != row["run"]))
        assert row["removed_pairs"] == len((tops[row["run"]] - others) & judged)
        assert row["left_out"] <= row["full"]


def test_a_top_up_against_the_trec_dl_2019_judgments(tmp_path: Path) -> None:
    """A run generated over the first 10 queries of the DL 2019 passage judgments (half judged passages,
    half unjudged ones, interleaved), plus a query DL 2019 did not judge: at depth 10 the new pairs are
    exactly its unjudged passages in its top 10, and the extra query is left out."""
    qrels_path = data_path("trec", "qrels.dl19-passage.txt")
    judged: dict[str, set[str]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, g = line.split()
        if int(g) >= 0:
            judged.setdefault(q, set()).add(d)
    queries = sorted(judged)[:10]
    lines, expected = [], set()
    for q in queries:
        docs = [d for pair in zip(sorted(judged[q])[:10], (f"new-{q}-{i}" for i in range(10)), strict=False)
                for d in pair]  # fmt: skip
        for rank, d in enumerate(docs, start=1):
            lines.append(f"{q} Q0 {d} {rank} {100 - rank} fresh")
            if rank <= 10 and d not in judged[q]:
                expected.add((q, d))
    lines.append("999999999 Q0 new-x 1 1 fresh")
    run_path = tmp_path / "fresh.run"
    run_path.write_text("\n".join(lines) + "\n")
    pool = extend_pool([read_run(run_path)], 10, judged=judged_of_qrels(read_qrels(qrels_path)))
    assert set(pool.pairs.select("query_id", "doc_id").iter_rows()) == expected and len(expected) == 50
    assert pool.meta()["extends"]["left_out_queries"] == ["999999999"]


def test_extend_refuses_a_run_already_pooled_at_any_depth() -> None:
    """A project's Judged names the runs it pooled; a run of that name is refused (its pairs are in), while
    a qrels file names none."""
    import polars as pl

    from qrelkit.pool import Judged

    run = Run.from_dict({"q1": {"d1": 2.0, "d9": 1.0}}, name="old")
    pairs = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]})
    pooled = Judged(pairs, frozenset({"q1"}), {"kind": "project", "path": "p.db"}, frozenset({"old"}))
    for depth in (1, 5):
        with pytest.raises(ValidationError, match="'old' was pooled into this project already"):
            extend_pool([run], depth, judged=pooled)
    fresh = extend_pool([run], 5, judged=judged_of_qrels(QRELS))
    assert fresh.pairs.select("query_id", "doc_id").rows() == [("q1", "d9")]
