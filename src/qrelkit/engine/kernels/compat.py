"""Compatibility (Clarke, Vtyurina & Smucker 2020): the rank-biased overlap of a run with the ideal
ranking most compatible with it, as ir_measures' ``Compat(p=0.95)`` computes it.

The ideal ranking holds every judged document of grade > 0, by grade descending; within a grade, the
documents the run returned come first, in the run's order, then the others (the ideal consistent with the
judgments that overlaps the run most). With depth D = max(documents ranked, relevant documents) and
overlap_i = |top i of the run & top i of the ideal|,

    S(run) = sum over i = 1..D of p^(i-1) overlap_i / i,

RBO = S(run) / sum over i = 1..D of p^(i-1), and Compat (``normalize=True``, the default) = S(run) / S(ideal),
S(ideal) = sum over i = 1..D of p^(i-1) min(i, R) / i with R relevant documents. A query with no relevant
document has no ideal: ``no_relevant`` decides (ir_measures reports 0).

A returned relevant document of grade g at run position r sits in the ideal at (relevant documents of
higher grades) + (returned relevant documents of grade g above r); it counts in every overlap_i with
i >= 1 + max(r, its ideal position). Unreturned relevant documents never overlap, so no document identity
is needed beyond the encoding's.

ir_measures gives an unreturned document the run score 0.0 when it orders a grade's documents, so a
returned relevant document scored below 0 (or at 0, after it in the file) falls behind the unreturned ones
in its ideal; here every returned document comes first. The two agree for runs whose relevant documents
score above 0.

Averaged ties have no closed form we know (the ideal follows each ordering of a tied block): Compat
refuses ``ties=average`` when a query has tied scores, as bpref and infAP do.
"""

from __future__ import annotations

import numpy as np

from ...measures.conventions import Conventions
from ...measures.grammar import Measure
from ..encoding.encoded import Encoded, apply_no_relevant
from ..trec.measures import _refuse_average


def _weights(p: float, depth: int) -> np.ndarray:
    """p^(i-1) / i for i = 1..depth."""
    i = np.arange(1, depth + 1, dtype=np.float64)
    return np.power(p, i - 1.0) / i


def compat(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(Compat per query, undefined mask: no judged document of grade > 0)."""
    if conv.ties == "average":
        _refuse_average(enc, measure)
    p = float(measure.param("p"))
    normalize = measure.param("normalize") == "True"
    n = enc.n_queries
    values = np.zeros(n)
    undefined = np.zeros(n, dtype=bool)
    for q in range(n):
        judged = enc.judged_grade[enc.judged_offsets[q] : enc.judged_offsets[q + 1]]
        relevant = judged[judged > 0]
        lo, hi = int(enc.offsets[q]), int(enc.offsets[q + 1])
        depth = max(hi - lo, len(relevant))
        if len(relevant) == 0:
            undefined[q] = True
            continue
        grade = enc.grade[lo:hi]
        hit = enc.judged[lo:hi] & (grade > 0)
        run_pos = np.flatnonzero(hit)
        g = grade[run_pos]
        # ideal position: relevant documents of higher grade, then the returned ones of this grade above
        ranked = np.sort(relevant)
        higher = len(ranked) - np.searchsorted(ranked, g, side="right")
        by_grade = np.argsort(g, kind="stable")  # within a grade, run order
        same_above = np.empty(len(g), dtype=np.int64)
        same_above[by_grade] = np.arange(len(g)) - np.searchsorted(g[by_grade], g[by_grade], side="left")
        first = np.maximum(run_pos, higher + same_above)  # 0-based depth from which the document overlaps
        overlap = np.cumsum(np.bincount(first, minlength=depth)[:depth])
        w = _weights(p, depth)
        score = float(np.sum(w * overlap))
        if normalize:
            best = float(np.sum(w * np.minimum(np.arange(1, depth + 1), len(relevant))))
            values[q] = score / best
        else:
            values[q] = score / float(np.sum(np.power(p, np.arange(depth, dtype=np.float64))))
    return apply_no_relevant(values, undefined, conv)
