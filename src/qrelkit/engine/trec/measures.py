"""trec_eval 10's measures in qrelkit's grammar: from an :class:`Encoded` ranking to per-query values.

The definitions are :mod:`qrelkit.engine.trec.kernels`' (one per ``m_<name>.c``); this module builds their
ranked relevance codes from an encoding (a returned document is judged at its grade, or not judged; under
``negative=unjudged`` a document listed with a negative grade is trec_eval's "in the pool, unjudged"
(``Encoded.pooled``), which ``infAP`` counts among the documents above a relevant one, as ``qrelkit
trec_eval`` does).

Averaged ties (``ties=average``): the expectation over every ordering of each tied block is exact where it
has a closed form:

- linear in per-rank values, computed with each rank's value replaced by its block's mean: ``RelP@k``,
  ``Unjudged@k``, ``NumNonRelJudgedRet@k``, ``Rprec(mult=...)`` (and trec_eval's rbp and rbp_resid, which
  are ``RBP`` and ``RBP_resid`` under their axes: :mod:`qrelkit.engine.kernels.cascade`);
- independent of the order within the returned list: ``SetP``, ``SetRelP``, ``SetAP``, ``SetF``,
  ``Utility`` and ``NumNonRelJudgedRet`` without a cutoff;
- ``Success@k``: 1 - C(n - m, t) / C(n, t) for the block of n documents (m relevant) that straddles k with t
  of its ranks within k, when nothing relevant ranks above it (:func:`~qrelkit.engine.encoding.encoded.any_in_top`).

``bpref``, ``infAP``, ``IPrec``, ``IPrecMean``, ``binG``, ``G``, ``nDCGRel`` and ``RnDCG`` depend on the
order through maxima, ratios of running counts or running costs; their expectation over all orderings of
a block has no closed form we know, and enumerating orderings grows as n!. They refuse ``ties=average``
when a query has tied scores (:class:`~qrelkit.errors.ConventionError`, naming the fix) rather than
approximate.
"""

from __future__ import annotations

import numpy as np

from ...errors import ConventionError
from ...measures.conventions import Conventions, GainMap
from ...measures.grammar import Measure
from ..encoding.encoded import Encoded, any_in_top, block_mean, positions
from ..kernels.ranked import rel_in_top
from . import kernels as tk

#: The measures that refuse ``ties=average`` on tied scores (the module docstring says why).
NOT_AVERAGEABLE = ("bpref", "infAP", "IPrec", "IPrecMean", "binG", "G", "nDCGRel", "RnDCG")


def rel_lists(enc: Encoded, rel: int) -> tk.RelLists:
    """trec_eval's relevance codes of an encoding: the grade of a judged document (a negative grade kept
    under ``negative=gain`` reads as 0), -2 for one in the pool with a negative grade (``negative=unjudged``),
    -1 for a document that is not judged."""
    codes = np.where(enc.judged, np.maximum(enc.grade, 0), tk.NONPOOL).astype(np.int64)
    if enc.pooled is not None:
        codes = np.where(enc.pooled, tk.UNJUDGED, codes)
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


# Each kernel below takes (encoding, measure, conventions) and gives the per-query values and the mask of
# undefined queries (none: trec_eval gives each of them a value, 0 where its definition divides by zero);
# :data:`qrelkit.engine.registry.REGISTRY` names each family's.

Values = tuple[np.ndarray, np.ndarray]


def _rel(measure: Measure) -> int:
    return measure.rel if measure.rel is not None else 1


def _none(enc: Encoded) -> np.ndarray:
    return np.zeros(enc.n_queries, dtype=bool)


def _lists(enc: Encoded, measure: Measure, conv: Conventions) -> tk.RelLists:
    """The measure's relevance lists; refused under ``ties=average`` on tied scores for the measures of
    :data:`NOT_AVERAGEABLE`."""
    if measure.name in NOT_AVERAGEABLE and conv.ties == "average":
        _refuse_average(enc, measure)
    return rel_lists(enc, _rel(measure))


def success(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return any_in_top(enc, enc.judged & (enc.grade >= _rel(measure)), measure.k), _none(enc)


def rel_p(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    k, rel = measure.k, _rel(measure)
    assert k is not None  # parse() requires the cutoff
    return tk._div(rel_in_top(enc, k, rel), np.minimum(rel_lists(enc, rel).num_rel, k)), _none(enc)


def unjudged(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    k = measure.k
    assert k is not None
    qidx, pos = positions(enc)
    unj = block_mean((~enc.judged).astype(np.float64), enc)
    return np.bincount(qidx[pos < k], weights=unj[pos < k], minlength=enc.n_queries) / float(k), _none(enc)


def num_nonrel_judged_ret(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    k = measure.k
    qidx, pos = positions(enc)
    nonrel = block_mean((enc.judged & (enc.grade < _rel(measure))).astype(np.float64), enc)
    mask = np.ones(len(pos), dtype=bool) if k is None else pos < k
    return np.bincount(qidx[mask], weights=nonrel[mask], minlength=enc.n_queries), _none(enc)


def set_p(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.set_p(_lists(enc, measure, conv)), _none(enc)


def set_rel_p(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.set_relative_p(_lists(enc, measure, conv)), _none(enc)


def set_ap(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.set_map(_lists(enc, measure, conv)), _none(enc)


def set_f(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.set_f(_lists(enc, measure, conv), float(measure.param("beta"))), _none(enc)


def utility(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    a, b, c, d = (float(measure.param(x)) for x in "abcd")
    docs = int(float(measure.param("docs")))
    return tk.utility(_lists(enc, measure, conv), a, b, c, d, docs).astype(np.float64), _none(enc)


def bpref(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.bpref(_lists(enc, measure, conv)), _none(enc)


def inf_ap(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.infap(_lists(enc, measure, conv)), _none(enc)


def bin_g(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    return tk.bin_g(_lists(enc, measure, conv)), _none(enc)


def iprec(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    rl = _lists(enc, measure, conv)
    return tk.iprec_at_recall(rl, [float(measure.param("recall"))], conv.iprec_cutoff)[0], _none(enc)


def iprec_mean(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    rl = _lists(enc, measure, conv)
    levels = [float(x) for x in measure.param("recall").strip("{}").split(",")]
    return tk.pt_avg(rl, levels, conv.iprec_cutoff), _none(enc)


def g(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    rl = _lists(enc, measure, conv)
    return tk.g_measure(rl, _trec_gains(measure, conv, rl.levels)), _none(enc)


def ndcg_rel(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    rl = _lists(enc, measure, conv)
    return tk.ndcg_rel(rl, _trec_gains(measure, conv, rl.levels)), _none(enc)


def rndcg(enc: Encoded, measure: Measure, conv: Conventions) -> Values:
    rl = _lists(enc, measure, conv)
    return tk.rndcg(rl, _trec_gains(measure, conv, rl.levels)), _none(enc)


def rprec_mult(enc: Encoded, rel: int, mult: float, conv: Conventions) -> np.ndarray:
    """trec_eval's Rprec_mult: relevant in the top c / c, c = (long)(mult * R + 0.9), 0 when c = 0 (exact
    under averaged ties: linear in the per-rank relevance); R per the ``ideal`` axis."""
    from ..kernels.ranked import relevant_count

    cut = np.floor(mult * relevant_count(enc, rel, conv) + 0.9).astype(np.int64)
    return tk._div(rel_in_top(enc, cut, rel), cut)
