"""The torchmetrics profile against torchmetrics' retrieval metrics, on the real TREC judgments (``-m torch``).

Each test feeds torchmetrics' metric classes (``RetrievalRecall``, ``RetrievalPrecision``, ...) as a user
would: one query index per query in both the qrels and the run, its returned documents with ``preds`` = the
score and ``target`` = the grade (nDCG) or grade >= rel (the binary measures; unjudged documents 0), the
default ``empty_target_action``. The per-query values are the tensor ``compute`` hands to ``aggregation``,
the mean is what ``compute`` returns. torchmetrics works in float32 (``preds.float()``, float32 discounts
and sums): agreement is to 1e-6, above the float32 rounding of values in [0, 1] (6e-8 each) accumulated
over a ranking or a mean of a few dozen queries.

Runs: one without ties (scores 0.37 apart, a fifth of them <= 0, one exactly 0) and one tie-heavy (scores on
a 0.1 grid around 1, many <= 0, some 1e-9 apart, which float32 merges). nDCG averages ties in torchmetrics
as in the profile. The other measures order equal scores by ``torch.argsort``/``topk``, which are not stable
and follow no documented rule; on the tie-heavy run they are checked exactly on every query where the order
of equal scores cannot change the value (qrelkit's optimistic and pessimistic orders agree), and otherwise
to lie between the two.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qrelkit import read_qrels

from ..conftest import data_path
from .test_profile_parity import as_dicts, ours, write_run

pytestmark = pytest.mark.torch

TOL = 1e-6  # float32 arithmetic in torchmetrics
QRELS = ["qrels.dl19-passage.txt", "qrels.dl20-doc.txt", "qrels.covid-complete.txt", "qrels.covid-round1.txt"]


def torch_run(qrels_path: Path, seed: int, *, ties: bool) -> list[tuple[str, str, float]]:
    """(query, document, score): per judged query a mix of judged and unjudged documents, about one
    judged query in ten left out, one run query nobody judged; scores <= 0 in every query."""
    rng = np.random.default_rng(seed)
    by_query = read_qrels(qrels_path).frame.group_by("query_id", maintain_order=True).agg("doc_id")
    rows: list[tuple[str, str, float]] = []
    for qid, docs in by_query.iter_rows():
        if rng.random() < 0.1:
            continue
        n = int(rng.integers(2, 150))
        judged = list(rng.choice(docs, size=min(len(docs), int(n * rng.uniform(0.3, 0.9))), replace=False))
        chosen = judged + [f"U{qid}x{i}" for i in range(n - len(judged))]
        rng.shuffle(chosen)
        if ties:
            scores = np.round(rng.normal(1.0, 1.0, n), 1)
            scores[rng.random(n) < 0.05] += 1e-9
        else:
            scores = (rng.permutation(n) - n // 5) * 0.37  # distinct in float32; one score is exactly 0
        rows += [(qid, str(d), float(s)) for d, s in zip(chosen, scores, strict=True)]
    rows += [("77777", f"orphan{i}", float(i + 1)) for i in range(5)]
    return rows


#: qrelkit's measure -> (torchmetrics class, its arguments, the threshold of a binary target or None)
MEASURES = {
    "nDCG@10": ("RetrievalNormalizedDCG", {"top_k": 10}, None),
    "nDCG": ("RetrievalNormalizedDCG", {}, None),
    "R@10": ("RetrievalRecall", {"top_k": 10}, 1),
    "R@100": ("RetrievalRecall", {"top_k": 100}, 1),
    "R(rel=2)@100": ("RetrievalRecall", {"top_k": 100}, 2),
    "P@10": ("RetrievalPrecision", {"top_k": 10}, 1),
    "P(rel=2)@5": ("RetrievalPrecision", {"top_k": 5}, 2),
    "P(cutoff_denominator=returned)@100": ("RetrievalPrecision", {"top_k": 100, "adaptive_k": True}, 1),
    "AP": ("RetrievalMAP", {}, 1),
    "AP@10": ("RetrievalMAP", {"top_k": 10}, 1),
    "AP(rel=2)@100": ("RetrievalMAP", {"top_k": 100}, 2),
    "RR": ("RetrievalMRR", {}, 1),
    "RR@10": ("RetrievalMRR", {"top_k": 10}, 1),
    "Success@10": ("RetrievalHitRate", {"top_k": 10}, 1),
    "Success(rel=2)@5": ("RetrievalHitRate", {"top_k": 5}, 2),
    "Rprec": ("RetrievalRPrecision", {}, 1),
    "Rprec(rel=2)": ("RetrievalRPrecision", {}, 2),
    "FallOut@10": ("RetrievalFallOut", {"top_k": 10}, 1),
    "FallOut(rel=2)@100": ("RetrievalFallOut", {"top_k": 100}, 2),
}

#: measures whose value only moves one way as relevant documents move up (so any tie order lies between
#: the pessimistic and the optimistic one); AP@k over the relevant documents found is not one of them
MONOTONE = {m for m in MEASURES if not (m.startswith("AP") and "@" in m)}


def theirs(qrels_path: Path, rows, measure: str) -> tuple[dict[str, float], float]:
    """torchmetrics' per-query values and mean for one measure (its class, fed every query at once)."""
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.retrieval")
    cls, kwargs, rel = MEASURES[measure]
    qd, rd = as_dicts(qrels_path, rows)
    queries = sorted(set(qd) & set(rd))
    indexes, preds, target = [], [], []
    for i, q in enumerate(queries):
        for d, s in rd[q].items():
            grade = qd[q].get(d, 0)
            indexes.append(i)
            preds.append(s)
            target.append(grade if rel is None else int(grade >= rel))
    captured = []

    def keep(values, dim=None):
        captured.append(values.clone())
        return values.mean()

    metric = getattr(retrieval, cls)(aggregation=keep, **kwargs)
    mean = metric(
        torch.tensor(preds, dtype=torch.float32), torch.tensor(target), indexes=torch.tensor(indexes)
    )
    (values,) = captured
    assert len(values) == len(queries)  # every query has a value under empty_target_action="neg"
    return dict(zip(queries, (float(v) for v in values), strict=True)), float(mean)


def _close(got: dict[str, float], expected: dict[str, float], what: str) -> None:
    assert set(got) == set(expected), (what, sorted(set(got) ^ set(expected))[:5])
    for q, value in expected.items():
        assert abs(got[q] - value) <= TOL, (what, q, got[q], value)


@pytest.mark.parametrize("name", QRELS)
def test_every_measure_without_ties(name, tmp_path):
    qp = data_path("trec", name)
    rows = torch_run(qp, seed=len(name), ties=False)
    assert any(s < 0 for _, _, s in rows) and any(s == 0 for _, _, s in rows)
    res = ours(qp, write_run(tmp_path / "run.txt", rows), "torchmetrics", list(MEASURES))
    for measure in MEASURES:
        per_query, mean = theirs(qp, rows, measure)
        _close(res.values(measure), per_query, measure)
        assert abs(res.mean(measure) - mean) <= TOL, measure


@pytest.mark.parametrize("name", QRELS)
def test_every_measure_with_heavy_ties(name, tmp_path):
    qp = data_path("trec", name)
    rows = torch_run(qp, seed=len(name) + 1, ties=True)
    rp = write_run(tmp_path / "run.txt", rows)
    res = ours(qp, rp, "torchmetrics", list(MEASURES))
    pessimistic = _with_ties(qp, rp, "pessimistic")
    optimistic = _with_ties(qp, rp, "optimistic")
    order_free = 0
    for measure in MEASURES:
        per_query, mean = theirs(qp, rows, measure)
        if measure.startswith("nDCG"):  # averaged ties, as the profile
            _close(res.values(measure), per_query, measure)
            assert abs(res.mean(measure) - mean) <= TOL, measure
            continue
        lo, hi = pessimistic.values(measure), optimistic.values(measure)
        assert set(per_query) == set(lo) == set(hi), measure
        for q, value in per_query.items():
            if abs(lo[q] - hi[q]) <= 1e-12:  # the order of equal scores cannot change this query's value
                order_free += 1
                assert abs(res.value(measure, q) - value) <= TOL, (measure, q, value)
            elif measure in MONOTONE:
                assert min(lo[q], hi[q]) - TOL <= value <= max(lo[q], hi[q]) + TOL, (measure, q, value)
        if measure in MONOTONE:
            means = sorted((pessimistic.mean(measure), optimistic.mean(measure)))
            assert means[0] - TOL <= mean <= means[1] + TOL, measure
    assert order_free > 100


def _with_ties(qrels_path: Path, run_path: Path, ties: str):
    from qrelkit import evaluate, read_run
    from qrelkit.measures.profiles import PROFILES

    conv = PROFILES["torchmetrics"].conventions.with_(ties=ties)
    return evaluate(read_qrels(qrels_path), read_run(run_path), list(MEASURES), conv)


def test_by_hand_and_by_torchmetrics(tmp_path):
    """Query 1: a (1), b (0), d (unjudged) and c (1) scored -1. Query 2 returns only relevant documents.
    R = 1/2 (R counts a and c, returned; c, scored <= 0, is not retrieved); AP = 1 (a at rank 1 is the one
    relevant document found); FallOut@2 = 1/2 (b of b and d); query 2 has nothing non-relevant: FallOut 1
    (empty_target_action="pos"), R and AP 1."""
    qp = tmp_path / "qrels.txt"
    qp.write_text("1 0 a 1\n1 0 b 0\n1 0 c 1\n2 0 x 1\n2 0 y 2\n")
    rows = [
        ("1", "a", 3.0),
        ("1", "b", 2.0),
        ("1", "d", 1.0),
        ("1", "c", -1.0),
        ("2", "x", 2.0),
        ("2", "y", 1.0),
    ]
    res = ours(qp, write_run(tmp_path / "run.txt", rows), "torchmetrics", ["R@10", "AP", "FallOut@2"])
    expected = {"R@10": {"1": 0.5, "2": 1.0}, "AP": {"1": 1.0, "2": 1.0}, "FallOut@2": {"1": 0.5, "2": 1.0}}
    names = {"R@10": "R@100", "AP": "AP", "FallOut@2": "FallOut@10"}
    for measure, values in expected.items():
        assert res.values(measure) == pytest.approx(values, abs=1e-15)
    for measure in ("R@10", "AP"):
        assert theirs(qp, rows, names[measure])[0] == pytest.approx(expected[measure], abs=TOL)
    assert theirs(qp, rows, "FallOut@10")[0] == pytest.approx({"1": 1.0, "2": 1.0}, abs=TOL)  # b, d in 10


def test_ndcg_class_scores_targets_summing_to_zero_as_empty_which_the_profile_does_not():
    """RetrievalNormalizedDCG.compute tests ``not target.sum()`` for "no positive target": grades 2, -1, -1
    sum to 0 and the class gives 0 (empty_target_action="neg"), where retrieval_normalized_dcg, which the
    class calls otherwise, gives 1. The profile follows the function (negative grades are rare: two in the
    TREC qrels here); this test notices a change in torchmetrics."""
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.retrieval")
    functional = pytest.importorskip("torchmetrics.functional.retrieval")
    from qrelkit import Qrels, Run, evaluate
    from qrelkit.measures.profiles import PROFILES

    preds, target = torch.tensor([3.0, 2.0, 1.0]), torch.tensor([2, -1, -1])
    assert (
        float(retrieval.RetrievalNormalizedDCG()(preds, target, indexes=torch.zeros(3, dtype=torch.long)))
        == 0
    )
    assert float(functional.retrieval_normalized_dcg(preds, target)) == pytest.approx(1.0)
    qrels = Qrels.from_dict({"1": {"a": 2, "b": -1, "c": -1}})
    run = Run.from_dict({"1": {"a": 3.0, "b": 2.0, "c": 1.0}})
    assert evaluate(qrels, run, ["nDCG"], PROFILES["torchmetrics"].conventions).values("nDCG") == {"1": 1.0}
