"""Which queries' values follow torchmetrics' order of tied scores, against every ordering by brute force.

The independent side: each family as torchmetrics computes it on one ordering (binary targets grade >=
rel, unjudged 0; recall, precision, AP and RR count a document scored <= 0 as not retrieved; recall,
R-precision and fall-out divide by the documents passed in), in exact fractions, over every ordering of
every tied block of a query. A query's value depends on the order exactly where two orderings give
different values; :class:`qrelkit.engine.tie_order.TieOrder` must name exactly those queries.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from qrelkit import Qrels, Run
from qrelkit.engine.tie_order import FAMILIES, TieOrder, order_dependent
from qrelkit.evaluation.core import evaluate_run
from qrelkit.measures.grammar import parse
from qrelkit.measures.profiles import PROFILES

CONV = PROFILES["torchmetrics"].conventions

Doc = tuple[int | None, float]  # (grade or None for unjudged, score)


def _one_ordering(family: str, k: int | None, rel: int, docs: list[Doc]) -> Fraction:
    """torchmetrics' value of one ranked list (docs in rank order), exactly."""
    target = [g is not None and g >= rel for g, _ in docs]
    retrieved = [t and s > 0 for t, (_, s) in zip(target, docs, strict=True)]  # preds > 0
    top = len(docs) if k is None else min(k, len(docs))
    n_rel = sum(target)
    if family == "P":
        return Fraction(sum(retrieved[:top]), k if k is not None else max(len(docs), 1))
    if family == "R":
        return Fraction(sum(retrieved[:top]), n_rel) if n_rel else Fraction(0)
    if family == "FallOut":
        n_other = len(docs) - n_rel
        return Fraction(sum(not t for t in target[:top]), n_other) if n_other else Fraction(1)
    if family == "Success":
        return Fraction(int(any(target[:top])))
    if family == "Rprec":
        return Fraction(sum(target[:n_rel]), n_rel) if n_rel else Fraction(0)
    if family == "RR":
        first = next((i for i, r in enumerate(retrieved[:top]) if r), None)
        return Fraction(0) if first is None else Fraction(1, first + 1)
    assert family == "AP"  # positions.mean(): the mean precision at each relevant document found
    found = [i for i, r in enumerate(retrieved[:top]) if r]
    if not found:
        return Fraction(0)
    return sum((Fraction(j, i + 1) for j, i in enumerate(found, start=1)), Fraction(0)) / len(found)


def _depends(family: str, k: int | None, rel: int, docs: list[Doc]) -> bool:
    ranked = sorted(docs, key=lambda d: -d[1])
    blocks = [list(g) for _, g in itertools.groupby(ranked, key=lambda d: d[1])]
    values = {
        _one_ordering(family, k, rel, [d for block in order for d in block])
        for order in itertools.product(*(itertools.permutations(b) for b in blocks))
    }
    return len(values) > 1


def _random_queries(seed: int, n: int) -> dict[str, list[Doc]]:
    rng = np.random.default_rng(seed)
    out = {}
    for q in range(n):
        size = int(rng.integers(1, 7))
        grades = rng.choice([-9, 0, 1, 2], size=size, p=[0.25, 0.3, 0.3, 0.15])  # -9: unjudged
        scores = rng.choice([-1.0, 0.0, 1.0, 2.0, 3.0], size=size)
        out[f"q{q:03d}"] = [
            (None if g == -9 else int(g), float(s))
            for g, s in zip(grades.tolist(), scores.tolist(), strict=True)
        ]
    return out


def _values(queries: dict[str, list[Doc]]) -> tuple[Qrels, Run]:
    judged = {
        q: {f"d{i}": g for i, (g, _) in enumerate(docs) if g is not None} for q, docs in queries.items()
    }
    judged = {q: grades for q, grades in judged.items() if grades}
    run = {q: {f"d{i}": s for i, (_, s) in enumerate(docs)} for q, docs in queries.items() if q in judged}
    return Qrels.from_dict(judged), Run.from_dict(run)


MEASURES = [
    "P@1", "P@2", "P@3", "R@2", "R(rel=2)@3", "FallOut@2", "FallOut@4", "Success@1", "Success@3",
    "Rprec", "Rprec(rel=2)", "RR", "RR@2", "AP", "AP@1", "AP@2", "AP@3", "AP(rel=2)@4", "P", "R",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_the_queries_found_are_those_where_some_ordering_changes_the_value(seed):
    queries = _random_queries(seed, 120)
    qrels, run = _values(queries)
    ties = TieOrder(FAMILIES)
    evaluate_run(qrels, run, [parse(m) for m in MEASURES], CONV, tie_order=ties)
    found = ties.queries()
    flagged = 0
    for name in MEASURES:
        m = parse(name)
        expected = sorted(q for q in run.frame.get_column("query_id").unique().to_list()
                          if _depends(m.name, m.k, m.rel or 1, queries[q]))  # fmt: skip
        assert list(found.get(str(m), ())) == expected, name
        flagged += len(expected)
    assert flagged > 50  # the draw has ties that matter, and many that do not


def test_ap_at_k_whose_mean_cannot_change_is_not_flagged():
    """Relevant at rank 1, then a tied block at rank 2 holding one relevant and one non-relevant document:
    AP@2 over the relevant documents found is 1 either way ((1 + 2/2) / 2 or 1 / 1), AP over the whole
    ranking is 1 or (1 + 2/3) / 2 = 5/6, and R@2 is 1 or 1/2."""
    qrels = Qrels.from_dict({"1": {"a": 1, "b": 1, "c": 0}})
    run = Run.from_dict({"1": {"a": 3.0, "b": 2.0, "c": 2.0}})
    ties = TieOrder(FAMILIES)
    evaluate_run(qrels, run, [parse(m) for m in ("AP@2", "AP", "R@2")], CONV, tie_order=ties)
    assert ties.queries() == {"AP(rel=1)": ("1",), "R(rel=1)@2": ("1",)}


def test_a_tied_block_of_documents_scored_at_most_zero_does_not_count_for_recall_but_does_for_fallout():
    """b (relevant) and c (not) tie at score 0 across rank 2: torchmetrics' recall zeroes the target of a
    document scored <= 0, so the order cannot change R@2 (1/2 either way); fall-out counts c or not."""
    qrels = Qrels.from_dict({"1": {"a": 1, "b": 1, "c": 0}})
    run = Run.from_dict({"1": {"a": 3.0, "b": 0.0, "c": 0.0}})
    ties = TieOrder(FAMILIES)
    evaluate_run(qrels, run, [parse(m) for m in ("R@2", "FallOut@2")], CONV, tie_order=ties)
    assert ties.queries() == {"FallOut(rel=1)@2": ("1",)}


def test_order_dependent_reads_the_tied_blocks_under_every_tie_convention():
    """Under ties=docid_asc the encoding has no blocks of its own; the scores still tie."""
    from qrelkit.engine.encoding.encode import encode

    qrels = Qrels.from_dict({"1": {"a": 1, "b": 0}, "2": {"x": 1, "y": 0}})
    run = Run.from_dict({"1": {"a": 1.0, "b": 1.0}, "2": {"x": 2.0, "y": 1.0}})
    for ties in ("average", "docid_asc", "file_order"):
        conv = CONV.with_(ties=ties)
        enc = encode(qrels, run, conv)
        assert order_dependent(enc, parse("P@1"), conv).tolist() == [True, False], ties


#: measures whose value moves one way as relevant documents move up: their value depends on the order of
#: tied scores exactly where qrelkit's pessimistic and optimistic orders give different values
MONOTONE = ["P@10", "R@10", "R(rel=2)@100", "FallOut@10", "Success@5", "Rprec", "RR", "RR@10", "AP"]


def test_on_real_judgments_the_queries_found_are_where_the_extreme_orders_differ(tmp_path):
    """The TREC DL 2019 passage judgments, a run with scores on a 0.1 grid (many ties, many <= 0)."""
    from qrelkit import evaluate, read_qrels

    from ..conftest import data_path

    qrels = read_qrels(data_path("trec", "qrels.dl19-passage.txt"))
    rng = np.random.default_rng(7)
    rows = {}
    for qid, docs in qrels.frame.group_by("query_id", maintain_order=True).agg("doc_id").iter_rows():
        chosen = list(rng.choice(docs, size=min(len(docs), 60), replace=False)) + [f"U{i}" for i in range(20)]
        scores = np.round(rng.normal(1, 1, len(chosen)), 1).tolist()
        rows[qid] = {str(d): float(s) for d, s in zip(chosen, scores, strict=True)}
    run = Run.from_dict(rows)
    measures = [parse(m) for m in MONOTONE]
    ties = TieOrder(FAMILIES)
    evaluate_run(qrels, run, measures, CONV, tie_order=ties)
    low = evaluate(qrels, run, MONOTONE, CONV.with_(ties="pessimistic"))
    high = evaluate(qrels, run, MONOTONE, CONV.with_(ties="optimistic"))
    some = 0
    for m in measures:
        lo, hi = low.values(m), high.values(m)
        differ = sorted(q for q in lo if abs(lo[q] - hi[q]) > 1e-12)
        assert list(ties.queries().get(str(m), ())) == differ, m
        some += 0 < len(differ) < len(lo)
    assert some >= 6  # most measures have queries of both kinds
