"""The slow, obviously correct oracle of the diversity measures (alpha_nDCG@k, ERR_IA@k), written from
Clarke et al. (2008), Chapelle et al. (2009) and ndeval's documented behaviour, sharing no code with
:mod:`qrelkit.engine.kernels.diversity`. It ranks with the oracle's own rules (:mod:`qrelkit.engine.oracles.reference`) and,
under averaged ties, enumerates every ordering of every tied block and averages the measure over them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...measures.conventions import Conventions
from ...measures.grammar import Measure
from .reference import _judgments, _orderings, _single

Subtopics = dict[str, dict[str, int]]  # doc_id -> {subtopic: grade}


def _relevant(docs: Subtopics, rel: int) -> dict[str, set[str]]:
    """doc -> the subtopics it is relevant to (grade >= rel), for documents relevant to some subtopic."""
    out = {d: {s for s, g in subs.items() if g >= rel} for d, subs in docs.items()}
    return {d: subs for d, subs in out.items() if subs}


def alpha_dcg(order: list[str], relevant: dict[str, set[str]], k: int, alpha: float) -> float:
    """sum over ranks i <= k of sum over the subtopics s of d_i of (1 - alpha)^(times s was seen above)
    / log2(i + 1)."""
    seen: dict[str, int] = {}
    total = 0.0
    for i, d in enumerate(order[:k]):
        gain = math.fsum((1 - alpha) ** seen.get(s, 0) for s in sorted(relevant.get(d, ())))
        total += gain / math.log2(i + 2)
        for s in relevant.get(d, ()):
            seen[s] = seen.get(s, 0) + 1
    return total


def greedy_ideal_order(relevant: dict[str, set[str]], k: int, alpha: float) -> list[str]:
    """ndeval's ideal: rank by rank, the document of greatest gain given what is covered above; scanning
    document ids from the greatest down, a later document must be strictly better to be taken."""
    seen: dict[str, int] = {}
    left = sorted(relevant, reverse=True)
    order: list[str] = []
    while left and len(order) < k:
        best, best_gain = None, 0.0
        for d in left:
            gain = math.fsum((1 - alpha) ** seen.get(s, 0) for s in sorted(relevant[d]))
            if gain > best_gain:
                best, best_gain = d, gain
        if best is None:
            break
        order.append(best)
        left.remove(best)
        for s in relevant[best]:
            seen[s] = seen.get(s, 0) + 1
    return order


def err_ia(order: list[str], relevant: dict[str, set[str]], k: int) -> float:
    """Per subtopic, ERR with binary grades (a relevant document stops the user with probability 1/2),
    divided by the ERR of a ranking relevant at every rank; averaged over the subtopics."""
    subtopics = sorted(set().union(*relevant.values()))
    best = math.fsum(0.5 * 0.5 ** (i - 1) / i for i in range(1, k + 1))
    per = []
    for s in subtopics:
        still, value = 1.0, 0.0
        for i, d in enumerate(order[:k]):
            if s in relevant.get(d, ()):
                value += still * 0.5 / (i + 1)
                still *= 0.5
        per.append(value / best)
    return math.fsum(per) / len(per)


#: A diversity measure on one fixed ordering, given the documents relevant to each subtopic (some).
DiversityDefinition = Callable[[Measure, list[str], dict[str, set[str]]], float]


def alpha_ndcg(measure: Measure, order: list[str], relevant: dict[str, set[str]]) -> float:
    k = measure.k
    assert k is not None
    alpha = float(measure.param("alpha"))
    ideal = alpha_dcg(greedy_ideal_order(relevant, k, alpha), relevant, k, alpha)
    return alpha_dcg(order, relevant, k, alpha) / ideal


def err_ia_at(measure: Measure, order: list[str], relevant: dict[str, set[str]]) -> float:
    k = measure.k
    assert k is not None
    return err_ia(order, relevant, k)


def diversity_reference_values(
    judgments: dict[str, Subtopics],
    run: dict[str, list[tuple[str, float, int]]],
    measure: Measure,
    conventions: Conventions,
    *,
    definition: DiversityDefinition,
) -> dict[str, float]:
    """Per-query values: ``judgments`` maps query -> doc -> {subtopic: grade}; ``run`` each query to its
    rows ``(doc_id, score, line)``; ``definition`` is the family's (:mod:`qrelkit.engine.registry`). NaN
    where the query has no relevant subtopic and it is skipped."""
    conv = measure.conventions(conventions)
    top = {q: {d: max(subs.values()) for d, subs in docs.items()} for q, docs in judgments.items()}
    judged = _judgments(top, conv)  # the negative-grade rule decides which documents count as judged
    scored = sorted(judgments) if conv.missing_queries == "zero" else sorted(set(judgments) & set(run))
    rel = measure.rel if measure.rel is not None else 1
    out: dict[str, float] = {}
    for q in scored:
        rows = list(run.get(q, []))
        if conv.unjudged == "drop":
            rows = [r for r in rows if r[0] in judged[q]]
        if conv.precision == "single":
            rows = [(d, _single(s), line) for d, s, line in rows]
        relevant = _relevant(judgments[q], rel)
        orders = _orderings(rows, judged[q], conv)
        values = [definition(measure, order, relevant) if relevant else math.nan for order in orders]
        value = math.nan if any(math.isnan(v) for v in values) else math.fsum(values) / len(values)
        if value == 0 and conv.no_relevant == "skip_unretrieved":
            value = math.nan
        if math.isnan(value) and conv.no_relevant == "zero":
            value = 0.0
        out[q] = value
    return out
