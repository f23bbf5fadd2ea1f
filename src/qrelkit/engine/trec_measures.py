"""trec_eval 10's measures in qrelkit's grammar: from an :class:`Encoded` ranking to per-query values.

The definitions are :mod:`qrelkit.engine.trec_kernels`' (one per ``m_<name>.c``); this module builds their
ranked relevance codes from an encoding (a returned document is judged at its grade, or not judged:
``negative=unjudged`` makes a negative grade "not judged", so ``infAP`` counts it as outside the pool, not
as trec_eval's "in the pool, unjudged"; ``qrelkit trec_eval`` keeps that distinction).

Averaged ties (``ties=average``): the expectation over every ordering of each tied block is exact where it
has a closed form:

- linear in per-rank values, computed with each rank's value replaced by its block's mean: ``RelP@k``,
  ``Unjudged@k``, ``NumNonRelJudgedRet@k``, ``Rprec(mult=...)`` (and trec_eval's rbp and rbp_resid, which
  are ``RBP`` and ``RBP_resid`` under their axes: :mod:`qrelkit.engine.cascade`);
- independent of the order within the returned list: ``SetP``, ``SetRelP``, ``SetAP``, ``SetF``,
  ``Utility`` and ``NumNonRelJudgedRet`` without a cutoff;
- ``Success@k``: 1 - C(n - m, t) / C(n, t) for the block of n documents (m relevant) that straddles k with t
  of its ranks within k, when nothing relevant ranks above it (:func:`~qrelkit.engine.encoded.any_in_top`).

``bpref``, ``infAP``, ``IPrec``, ``IPrecMean``, ``binG``, ``G``, ``nDCGRel`` and ``RnDCG`` depend on the
order through maxima, ratios of running counts or running costs; their expectation over all orderings of
a block has no closed form we know, and enumerating orderings grows as n!. They refuse ``ties=average``
when a query has tied scores (:class:`~qrelkit.errors.ConventionError`, naming the fix) rather than
approximate.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConventionError
from ..measures.conventions import Conventions, GainMap
from ..measures.grammar import TREC_INFO, Measure
from . import trec_kernels as tk
from .encoded import Encoded, any_in_top, block_mean, positions
from .kernels import rel_in_top

NAMES = frozenset(info.name for info in TREC_INFO)
NOT_AVERAGEABLE = ("bpref", "infAP", "IPrec", "IPrecMean", "binG", "G", "nDCGRel", "RnDCG")


def rel_lists(enc: Encoded, rel: int) -> tk.RelLists:
    """trec_eval's relevance codes of an encoding: the grade of a judged document (a negative grade kept
    under ``negative=gain`` reads as 0), -1 for a document that is not judged."""
    codes = np.where(enc.judged, np.maximum(enc.grade, 0), tk.NONPOOL).astype(np.int64)
    judged = np.maximum(enc.judged_grade, 0)
    q_of = np.repeat(np.arange(enc.n_queries, dtype=np.int64), np.diff(enc.judged_offsets))
    top = int(judged.max()) + 1 if len(judged) else 1
    levels = np.zeros((enc.n_queries, top), dtype=np.int64)
    np.add.at(levels, (q_of, judged), 1)
    return tk.RelLists(enc.offsets.astype(np.int64), codes, levels, rel)


def _refuse_average(enc: Encoded, measure: Measure) -> None:
    if enc.block_starts is None:
        return
    sizes = np.diff(np.append(enc.block_starts, len(enc.grade)))
    big = int(np.argmax(sizes))
    qidx, _ = positions(enc)
    query = enc.queries.query_ids[int(qidx[enc.block_starts[big]])]
    raise ConventionError(
        f"{measure.name} cannot average tied scores exactly (query {query!r} has {int(sizes[big])} documents "
        "with one score): its value depends on the order through maxima or running ratios, with no closed "
        "form over all orderings",
        fix=f"choose a tie order for it, e.g. {measure.name}(ties=docid_desc) or --ties docid_desc",
    )


def _trec_gains(measure: Measure, conv: Conventions, levels: np.ndarray) -> tk.Gains:
    """The measure's gain convention as trec_eval's per-grade gains."""
    gain = conv.gain
    if gain == "linear":
        return tk.Gains()
    if isinstance(gain, GainMap):
        return tk.Gains(tuple(gain.items))
    return tk.Gains(tuple((g, float(2**g - 1)) for g in range(levels.shape[1])))


def compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one of trec_eval's measures and the mask of undefined queries (none: trec_eval
    gives each of them a value, 0 where its definition divides by zero)."""
    name, k = measure.name, measure.k
    rel = measure.rel if measure.rel is not None else 1
    none = np.zeros(enc.n_queries, dtype=bool)
    if name in NOT_AVERAGEABLE and conv.ties == "average":
        _refuse_average(enc, measure)
    rl = rel_lists(enc, rel)
    if name == "Success":
        return any_in_top(enc, enc.judged & (enc.grade >= rel), k), none
    if name == "RelP":
        assert k is not None  # parse() requires the cutoff
        return tk._div(rel_in_top(enc, k, rel), np.minimum(rl.num_rel, k)), none
    if name == "Unjudged":
        assert k is not None
        _, pos = positions(enc)
        unj = block_mean((~enc.judged).astype(np.float64), enc)
        qidx, _ = positions(enc)
        return np.bincount(qidx[pos < k], weights=unj[pos < k], minlength=enc.n_queries) / float(k), none
    if name == "NumNonRelJudgedRet":
        qidx, pos = positions(enc)
        nonrel = block_mean((enc.judged & (enc.grade < rel)).astype(np.float64), enc)
        mask = np.ones(len(pos), dtype=bool) if k is None else pos < k
        return np.bincount(qidx[mask], weights=nonrel[mask], minlength=enc.n_queries), none
    simple = {"SetP": tk.set_p, "SetRelP": tk.set_relative_p, "SetAP": tk.set_map, "bpref": tk.bpref,
              "infAP": tk.infap, "binG": tk.bin_g}  # fmt: skip
    if name in simple:
        return simple[name](rl), none
    if name == "SetF":
        return tk.set_f(rl, float(measure.param("beta"))), none
    if name == "Utility":
        a, b, c, d = (float(measure.param(x)) for x in "abcd")
        return tk.utility(rl, a, b, c, d, int(float(measure.param("docs")))).astype(np.float64), none
    if name == "IPrec":
        return tk.iprec_at_recall(rl, [float(measure.param("recall"))], conv.iprec_cutoff)[0], none
    if name == "IPrecMean":
        levels = [float(x) for x in measure.param("recall").strip("{}").split(",")]
        return tk.pt_avg(rl, levels, conv.iprec_cutoff), none
    graded = {"G": tk.g_measure, "nDCGRel": tk.ndcg_rel, "RnDCG": tk.rndcg}
    if name in graded:
        return graded[name](rl, _trec_gains(measure, conv, rl.levels)), none
    raise AssertionError(f"no kernel for {name}")  # parse() admits only the measures of TREC_INFO


def rprec_mult(enc: Encoded, rel: int, mult: float, conv: Conventions) -> np.ndarray:
    """trec_eval's Rprec_mult: relevant in the top c / c, c = (long)(mult * R + 0.9), 0 when c = 0 (exact
    under averaged ties: linear in the per-rank relevance); R per the ``ideal`` axis."""
    from .kernels import relevant_count

    cut = np.floor(mult * relevant_count(enc, rel, conv) + 0.9).astype(np.int64)
    return tk._div(rel_in_top(enc, cut, rel), cut)
