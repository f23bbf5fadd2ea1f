"""Leverage, metric-level agreement and the adjudication merge, checked against hand arithmetic.

``ref_ndcg`` is the chapter's own five-line nDCG (gain 2^g - 1, discount 1/log2(rank + 1), ideal from
every judged document), applied to runs without tied scores: an implementation independent of qrelkit's
engine.
"""

from __future__ import annotations

from math import log2

import polars as pl
import pytest

from qrelkit import Qrels, Run, read_qrels, read_run
from qrelkit.errors import ValidationError
from qrelkit.judgments.leverage import (
    disagreement_leverage,
    metric_agreement,
    regrade_leverage,
    retrieval_ranks,
)

from ..conftest import FIXTURES

Q = "key-rotation"


def ref_ndcg(ranked: list[str], grades: dict[str, int], k: int = 10) -> float:
    def dcg(gains: list[float]) -> float:
        return sum(g / log2(i + 2) for i, g in enumerate(gains))

    run = [2 ** grades.get(d, 0) - 1 for d in ranked[:k]]
    ideal = sorted((2**g - 1 for g in grades.values()), reverse=True)[:k]
    return dcg(run) / dcg(ideal) if dcg(ideal) else 0.0


@pytest.fixture(scope="module")
def chapter():
    a = read_qrels(FIXTURES / "chapter" / "qrels.txt")
    run = read_run(FIXTURES / "chapter" / "run.txt")
    grades_b = a.to_dict()
    grades_b[Q] |= {"policy/key-lifetime": 3, "api-keys/rotation": 2}
    return a, Qrels.from_dict(grades_b, name="B"), run


def ranked_docs(run: Run, query: str) -> list[str]:
    rows = run.frame.filter(pl.col("query_id") == query).sort("score", descending=True)
    return rows.get_column("doc_id").to_list()


def test_disagreement_leverage_chapter_by_hand(chapter):
    a, b, run = chapter
    table = disagreement_leverage(a, b, [run], k=10)
    assert table.columns == ["query_id", "doc_id", "grade_a", "grade_b", "leverage_max", "leverage_mean"]
    base = (1 + 7 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)) / (
        7 + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 1 / log2(6)
    )
    # policy 1 -> 3, rotation stays 3: ranks 1 and 2 both worth 7; ideal 3, 3, 2, 2, 1
    policy = (7 + 7 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)) / (
        7 + 7 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6)
    )
    # rotation 3 -> 2, policy stays 1: ideal 2, 2, 2, 1, 1
    rotation = (1 + 3 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)) / (
        3 + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 1 / log2(6)
    )
    rows = table.rows(named=True)
    assert [(r["doc_id"], r["grade_a"], r["grade_b"]) for r in rows] == [
        ("policy/key-lifetime", 1, 3),
        ("api-keys/rotation", 3, 2),
    ]
    assert rows[0]["leverage_max"] == pytest.approx(policy - base, abs=1e-12)
    # demoting the top document raises nDCG here: the ideal loses more than the ranking does
    assert rotation > base
    assert rows[1]["leverage_max"] == pytest.approx(rotation - base, abs=1e-12)
    assert rows[0]["leverage_mean"] == rows[0]["leverage_max"]  # one run


def test_leverage_over_several_runs_and_queries():
    grades_a = {
        "q1": {"x": 3, "y": 0, "z": 1},
        "q2": {"u": 2, "v": 0},  # agreed throughout: must not appear, must not matter
    }
    grades_b = {"q1": {"x": 3, "y": 2, "z": 1}, "q2": {"u": 2, "v": 0}}
    runs_scores = {
        "top": {"q1": {"y": 3.0, "x": 2.0, "z": 1.0}, "q2": {"v": 2.0, "u": 1.0}},
        "deep": {"q1": {"x": 3.0, "z": 2.0, "w": 1.5, "y": 1.0}, "q2": {"u": 1.0}},
        "miss": {"q1": {"x": 1.0}, "q2": {"u": 1.0}},  # never retrieves y: only the ideal moves
    }
    runs = [Run.from_dict(s, name=n) for n, s in runs_scores.items()]
    table = disagreement_leverage(Qrels.from_dict(grades_a), Qrels.from_dict(grades_b), runs, k=3)
    assert table.height == 1
    swings = []
    for scores in runs_scores.values():
        ranked = sorted(scores["q1"], key=lambda d: -scores["q1"][d])
        swings.append(abs(ref_ndcg(ranked, grades_b["q1"], 3) - ref_ndcg(ranked, grades_a["q1"], 3)))
    assert table.item(0, "leverage_max") == pytest.approx(max(swings), abs=1e-12)
    assert table.item(0, "leverage_mean") == pytest.approx(sum(swings) / 3, abs=1e-12)
    assert min(swings) > 0  # the run that missed y still moves, through the ideal


def test_leverage_orders_by_max_then_mean():
    # Two disagreements in different queries, one retrieved at rank 1, one at rank 3.
    a = Qrels.from_dict({"q1": {"d1": 0, "e": 2}, "q2": {"d3": 0, "e": 2}})
    b = Qrels.from_dict({"q1": {"d1": 1, "e": 2}, "q2": {"d3": 1, "e": 2}})
    run = Run.from_dict(
        {"q1": {"d1": 3.0, "x": 2.0, "e": 1.0}, "q2": {"x": 3.0, "y": 2.0, "d3": 1.0, "e": 0.5}}
    )
    table = disagreement_leverage(a, b, [run], k=10)
    expected = {}
    for q in ("q1", "q2"):
        ranked = ranked_docs(run, q)
        expected[q] = abs(ref_ndcg(ranked, b.to_dict()[q]) - ref_ndcg(ranked, a.to_dict()[q]))
    assert table.get_column("query_id").to_list() == sorted(expected, key=lambda q: -expected[q])
    assert table.get_column("leverage_max").to_list() == pytest.approx(
        sorted(expected.values(), reverse=True)
    )


def test_no_disagreement_gives_an_empty_frame(chapter):
    a, _, run = chapter
    table = disagreement_leverage(a, a, [run])
    assert table.height == 0
    assert table.columns == ["query_id", "doc_id", "grade_a", "grade_b", "leverage_max", "leverage_mean"]


def test_regrade_leverage_matches_hand_computation(chapter):
    a, _, run = chapter
    table = regrade_leverage(a, [run], k=10, scale=[0, 1, 2, 3])
    grades = a.to_dict()[Q]
    ranked = ranked_docs(run, Q)
    base = ref_ndcg(ranked, grades)
    expected = {}
    for doc, g in grades.items():
        best = max(
            (abs(ref_ndcg(ranked, grades | {doc: to}) - base), -to) for to in (g - 1, g + 1) if 0 <= to <= 3
        )
        expected[doc] = (best[0], -best[1])
    got = {r["doc_id"]: (r["leverage_max"], r["regrade"]) for r in table.iter_rows(named=True)}
    assert set(got) == set(expected)
    for doc, (value, to) in expected.items():
        assert got[doc][0] == pytest.approx(value, abs=1e-12)
        assert got[doc][1] == to
    values = table.get_column("leverage_max").to_list()
    assert values == sorted(values, reverse=True)
    assert table.item(0, "doc_id") == "policy/key-lifetime"  # rank 1, grade 1 -> 2


def test_regrade_outside_scale_is_an_error(chapter):
    a, _, run = chapter
    with pytest.raises(ValidationError, match="not on the scale"):
        regrade_leverage(a, [run], scale=[0, 1, 2])


def test_metric_agreement_chapter(chapter):
    a, b, run = chapter
    frame = metric_agreement(a, b, [run], k=10)
    row = frame.row(0, named=True)
    assert row["ndcg_a"] == pytest.approx(0.7134, abs=5e-5)
    exact = (7 + 3 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)) / (
        7 + 3 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6)
    )
    assert row["ndcg_b"] == pytest.approx(exact, abs=1e-12)
    assert round(exact, 5) == 0.95048
    assert row["recall_a"] == row["recall_b"] == 1.0
    assert row["recall_identical"] and row["ndcg_moves_recall_not"]


def test_retrieval_ranks(chapter):
    _, _, run = chapter
    other = Run.from_dict({Q: {"api-keys/rotation": 1.0, "x": 2.0}}, name="other")
    pairs = pl.DataFrame({"query_id": [Q, Q], "doc_id": ["api-keys/rotation", "blog/launch"]})
    got = dict(retrieval_ranks([run, other], pairs).select("doc_id", "retrieved").iter_rows())
    assert got == {"api-keys/rotation": "chapter:2, other:2", "blog/launch": "chapter:5"}


# -- merge --------------------------------------------------------------------------------------------


def _labellers():
    a = Qrels.from_dict({"q1": {"d1": 3, "d2": 0, "d3": 1, "d4": 2}, "q2": {"d5": 1}}, name="alice")
    b = Qrels.from_dict({"q1": {"d1": 3, "d2": 2, "d3": 0, "d4": 2}, "q2": {"d6": 0}}, name="bob")
    return a, b


def test_chunked_evaluation_gives_the_same_values(chapter, monkeypatch):
    import qrelkit.judgments.leverage as leverage

    a, _, run = chapter
    other = Run.from_dict({Q: {"blog/launch": 3.0, "api-keys/rotation": 2.0, "x": 1.0}}, name="other")
    whole = regrade_leverage(a, [run, other], k=5)
    monkeypatch.setattr(leverage, "_CHUNK", 3)  # copies of one query land in different batches
    assert regrade_leverage(a, [run, other], k=5).equals(whole)
