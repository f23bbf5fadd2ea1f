"""Numeric kernels over encoded arrays: no strings, no defaults, no I/O.

Each kernel takes an :class:`~qrelkit.engine.encoding.encode.Encoded` (rankings in rank order, grouped by query) and
the measure's parameters, and returns one float64 per scored query. ``NaN`` marks a value that is undefined
under ``no_relevant = "skip"``.

Averaged ties (McSherry & Najork 2008): when ``block_starts`` is set, each tied block stands for all
orderings of its members, and every kernel returns the exact expectation over those orderings. For measures
that are linear in per-position values (DCG, recall, precision, Judged, counts) that is the value computed
with each position's value replaced by its block's mean. AP and RR are not linear; their closed forms are
derived where they are computed.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ConventionError
from ...measures.conventions import Conventions, GainMap
from ..encoding.encoded import Encoded, apply_no_relevant, block_mean, positions
from ..trec import libm

# ------------------------------------------------------------------------------------------------ helpers


#: The highest grade the exponential gain 2^g - 1 takes: beyond 2^1000 a few million such gains would sum
#: past the largest double (2^1024) and nDCG would become inf/inf = NaN. A higher grade is refused with
#: its file and line (:func:`qrelkit.evaluation.core.evaluate`); linear gains and gain maps have no such bound.
MAX_EXPONENTIAL_GRADE = 1000


def gain_overflows(grade: np.ndarray, gain: str | GainMap) -> np.ndarray:
    """Which grades have a gain too large to sum under ``gain`` (see :data:`MAX_EXPONENTIAL_GRADE`)."""
    if gain != "exponential":
        return np.zeros(len(grade), dtype=bool)
    return np.asarray(grade) > MAX_EXPONENTIAL_GRADE


def gains(grade: np.ndarray, judged: np.ndarray | None, gain: str | GainMap) -> np.ndarray:
    """Gain per row; unjudged rows (``judged`` False) are worth 0 whatever the gain convention."""
    if isinstance(gain, GainMap):
        keys = np.array([g for g, _ in gain.items], dtype=np.int64)
        values = np.array([v for _, v in gain.items], dtype=np.float64)
        idx = np.searchsorted(keys, grade)
        idx_clipped = np.minimum(idx, len(keys) - 1)
        known = keys[idx_clipped] == grade
        if gain.unmapped == "grade":  # a grade not listed is worth itself (ir_measures' gains=)
            out = np.where(known, values[idx_clipped], grade.astype(np.float64))
        else:
            if judged is not None:
                known |= ~judged
            if not known.all():
                bad = int(grade[~known][0])
                raise ConventionError(
                    f"grade {bad} is not in the gain map {gain}", fix="add a gain for that grade to the map"
                )
            out = values[idx_clipped]
    elif gain == "linear":
        out = grade.astype(np.float64)
    else:
        out = np.exp2(grade.astype(np.float64)) - 1.0
    if judged is not None:
        out = np.where(judged, out, 0.0)
    return out


def log_ranks(pos: np.ndarray, base: float) -> np.ndarray:
    """log_base(rank + 1) for 0-based positions: what a gain is divided by. The logarithms are the C
    library's (:mod:`qrelkit.engine.trec.libm`), as trec_eval, pytrec_eval, ranx (numba's ``np.log2``) and
    gdeval.pl (perl's ``log``) take them; base 2 is ``log2`` itself, base e ``log`` itself, another base
    ``log(rank + 1) / log(base)``."""
    ranks = np.asarray(pos, dtype=np.int64) + 2
    if base == 2.0:
        return libm.log2(ranks)
    if base == math.e:
        return libm.log(ranks)
    out: np.ndarray = libm.log(ranks) / math.log(base)
    return out


def discounts(pos: np.ndarray, base: float) -> np.ndarray:
    """1 / log_base(rank + 1) for 0-based positions (what ``explain`` shows; the kernels divide by
    :func:`log_ranks`)."""
    out: np.ndarray = 1.0 / log_ranks(pos, base)
    return out


def per_query_sum(qidx: np.ndarray, weights: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(qidx[mask], weights=weights[mask], minlength=n).astype(np.float64, copy=False)


def _cut(pos: np.ndarray, k: int | None) -> np.ndarray:
    return np.ones(len(pos), dtype=bool) if k is None else pos < k


def relevant(enc: Encoded, rel: int, conv: Conventions | None = None) -> np.ndarray:
    """1.0 for each ranked row that counts as a relevant document retrieved; under ``nonpositive =
    "not_retrieved"`` a row scored <= 0 never does (a tied block shares one score, so averaging stays exact)."""
    hit = enc.judged & (enc.grade >= rel)
    if conv is not None and conv.nonpositive == "not_retrieved":
        hit &= enc.score > 0
    return hit.astype(np.float64)


def num_relevant(enc: Encoded, rel: int) -> np.ndarray:
    """Judged documents with grade >= rel, per query (after the negative-grade convention)."""
    q_of = np.repeat(np.arange(enc.n_queries), np.diff(enc.judged_offsets))
    hit = enc.judged_grade >= rel
    return np.bincount(q_of[hit], minlength=enc.n_queries).astype(np.float64)


def relevant_count(enc: Encoded, rel: int, conv: Conventions) -> np.ndarray:
    """R, what recall, R-precision and AP divide by: every relevant judged document (``ideal =
    "judged"``), or the relevant documents the run returned, whatever their score (``ideal = "returned"``)."""
    if conv.ideal == "judged":
        return num_relevant(enc, rel)
    qidx, _ = positions(enc)
    hit = enc.judged & (enc.grade >= rel)
    return np.bincount(qidx[hit], minlength=enc.n_queries).astype(np.float64)


# ------------------------------------------------------------------------------------------------ kernels


def _discounted_sum(
    qidx: np.ndarray, g: np.ndarray, pos: np.ndarray, k: int | None, base: float, n: int
) -> np.ndarray:
    """Per query, the sum over the rows within ``k`` of ``g / log_base(rank + 1)``, added rank by rank
    (``np.bincount`` adds its weights in order): trec_eval's ``sum += gain / log2(i + 2)`` to the bit, a
    division (not a product with the reciprocal) by the C library's logarithm (:func:`log_ranks`)."""
    if k is not None:
        mask = pos < k
        qidx, g, pos = qidx[mask], g[mask], pos[mask]
    return np.bincount(qidx, weights=g / log_ranks(pos, base), minlength=n).astype(np.float64, copy=False)


def dcg(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray:
    qidx, pos = positions(enc)
    g = block_mean(gains(enc.grade, enc.judged, conv.gain), enc)
    return _discounted_sum(qidx, g, pos, k, conv.discount, enc.n_queries)


def idcg(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray:
    """DCG of the ideal ordering: every judged document (``ideal = "judged"``) or only the returned ones
    (``ideal = "returned"``), by gain descending, truncated at k. Only positive gains enter the ideal,
    except under ``negative = "gain"``, where every gain does (negative ones at the bottom)."""
    q_of, g, pos = _ideal(enc, conv)
    return _discounted_sum(q_of, g, pos, k, conv.discount, enc.n_queries)


def ncg(enc: Encoded, k: int | None, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(NCG@k per query, undefined mask: the ideal's gain is 0): the gains within k, added rank by rank,
    over the ideal ordering's (:func:`idcg`'s, undiscounted). Linear in the per-rank gains, so averaged
    ties take each block's mean gain, exact as DCG's."""
    n = enc.n_queries
    qidx, pos = positions(enc)
    g = block_mean(gains(enc.grade, enc.judged, conv.gain), enc)
    num = per_query_sum(qidx, g, _cut(pos, k), n)
    q_of, ideal_g, ideal_pos = _ideal(enc, conv)
    den = per_query_sum(q_of, ideal_g, _cut(ideal_pos, k), n)
    undefined = den == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(undefined, 0.0, num / np.where(undefined, 1.0, den))
    return apply_no_relevant(values, undefined, conv)


def _ideal(enc: Encoded, conv: Conventions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ideal ordering's rows (query, gain, 0-based position), by gain descending within each query."""
    if conv.ideal == "judged":
        offsets, g = enc.judged_offsets, gains(enc.judged_grade, None, conv.gain)
    else:
        offsets, g = enc.offsets, gains(enc.grade, enc.judged, conv.gain)
    n = enc.n_queries
    q_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    # under negative = "gain" the ideal is the literal best ordering of every gain (zero gains included,
    # since they hold positions above the negative ones); otherwise only positive gains count
    keep = np.ones(len(g), dtype=bool) if conv.negative == "gain" else g > 0
    q_of, g = q_of[keep], g[keep]
    if ((q_of[1:] == q_of[:-1]) & (g[1:] > g[:-1])).any():  # else already by gain (as Judgments orders them)
        order = np.lexsort((-g, q_of))
        q_of, g = q_of[order], g[order]
    counts = np.bincount(q_of, minlength=n)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    pos = np.arange(len(g), dtype=np.int64) - np.repeat(starts[:-1], counts)
    return q_of, g, pos


def ndcg(enc: Encoded, k: int | None, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(nDCG per query, undefined mask: IDCG == 0)."""
    num, den = dcg(enc, k, conv), idcg(enc, k, conv)
    undefined = den == 0  # negative only under negative = "gain", where the ratio is still taken
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(undefined, 0.0, num / np.where(undefined, 1.0, den))
    return apply_no_relevant(values, undefined, conv)


def rel_in_top(
    enc: Encoded, k: int | np.ndarray | None, rel: int, conv: Conventions | None = None
) -> np.ndarray:
    """Expected number of relevant documents in the top k (k may vary per query)."""
    qidx, pos = positions(enc)
    r = block_mean(relevant(enc, rel, conv), enc)
    if k is None:
        mask = np.ones(len(pos), dtype=bool)
    elif isinstance(k, np.ndarray):
        mask = pos < k[qidx]
    else:
        mask = pos < k
    return per_query_sum(qidx, r, mask, enc.n_queries)


def recall(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    nrel = relevant_count(enc, rel, conv)
    undefined = nrel == 0
    values = rel_in_top(enc, k, rel, conv) / np.where(undefined, 1.0, nrel)
    return apply_no_relevant(values, undefined, conv)


def _cutoff_denominator(enc: Encoded, k: int, conv: Conventions) -> np.ndarray | float:
    """k, or under ``cutoff_denominator = "returned"`` min(k, returned) (1 where nothing was returned:
    the numerator is 0 there)."""
    if conv.cutoff_denominator == "k":
        return float(k)
    out: np.ndarray = np.maximum(np.minimum(enc.counts, k), 1).astype(np.float64)
    return out


def _denominator_of(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray | float:
    """What P@k divides by; without a cutoff, the documents returned (1 where none was: the numerator is
    0 there)."""
    if k is None:
        out: np.ndarray = np.maximum(enc.counts, 1).astype(np.float64)
        return out
    return _cutoff_denominator(enc, k, conv)


def precision(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> np.ndarray:
    """P@k; without a cutoff, the relevant share of every returned document (ranx's ``precision``)."""
    out: np.ndarray = rel_in_top(enc, k, rel, conv) / _denominator_of(enc, k, conv)
    return out


def f1(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """F1@k = 2 P R / (P + R) with P = h / D and R = h / R_q, which is 2 h / (D + R_q) (0 where h = 0): linear
    in h, the relevant documents in the top k, so exact under averaged ties. Undefined where nothing is
    relevant (ranx: 0, ``no_relevant=zero``)."""
    nrel = relevant_count(enc, rel, conv)
    undefined = nrel == 0
    values = (
        2.0 * rel_in_top(enc, k, rel, conv) / (_denominator_of(enc, k, conv) + np.where(undefined, 1.0, nrel))
    )
    return apply_no_relevant(values, undefined, conv)


def rprec(enc: Encoded, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    nrel = relevant_count(enc, rel, conv)
    undefined = nrel == 0
    values = rel_in_top(enc, nrel.astype(np.int64), rel) / np.where(undefined, 1.0, nrel)
    return apply_no_relevant(values, undefined, conv)


def fallout(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """FallOut@k: the non-relevant documents in the top k over N, the non-relevant documents known: every
    returned document that is not relevant (unjudged ones too), plus under ``ideal = "judged"`` the judged
    non-relevant ones the run missed. Undefined where N = 0 (torchmetrics: 1, ``no_relevant = "one"``).
    Linear in the per-rank values, so exact under averaged ties."""
    qidx, pos = positions(enc)
    other = 1.0 - relevant(enc, rel)
    found = per_query_sum(qidx, block_mean(other, enc), _cut(pos, k), enc.n_queries)
    known = per_query_sum(qidx, other, np.ones(len(other), dtype=bool), enc.n_queries)
    if conv.ideal == "judged":  # judged non-relevant documents not returned
        q_of = np.repeat(np.arange(enc.n_queries), np.diff(enc.judged_offsets))
        judged_other = np.bincount(q_of[enc.judged_grade < rel], minlength=enc.n_queries)
        returned_judged_other = per_query_sum(qidx, other, enc.judged, enc.n_queries)
        known = known + judged_other - returned_judged_other
    undefined = known == 0
    return apply_no_relevant(found / np.where(undefined, 1.0, known), undefined, conv)


def judged_at(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray:
    """Judged@k: the judged documents in the top k over :func:`_denominator_of` (without a cutoff, the
    share of every returned document that is judged, 0 where nothing was returned)."""
    qidx, pos = positions(enc)
    j = block_mean(enc.judged.astype(np.float64), enc)
    out: np.ndarray = per_query_sum(qidx, j, _cut(pos, k), enc.n_queries) / _denominator_of(enc, k, conv)
    return out


def accuracy(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(Accuracy@k per query, undefined mask: no relevant or no non-relevant document in the top k).

    1 - S / (N R) over the returned documents in the top k (ir_measures' ``accuracy_provider.py``): R
    relevant, N not, S the non-relevant documents ranked above each relevant one, summed. S, N and R are
    whole numbers, so the value is ir_measures' ``1. - sum(nonrels[:-1]) / (float(nonrels[-1]) * R)`` to
    the bit. Under averaged ties the exact expectation: two documents of one tied block are in either
    order with probability 1/2 (S gains r n / 2 for a block of r relevant and n non-relevant documents),
    and the block that straddles k puts h of its relevant documents within k with the hypergeometric
    probability C(r, h) C(n, t - h) / C(r + n, t) (t of its ranks within k); where some h leaves R or N at
    0 the value is undefined, as for the orderings that do."""
    from math import comb

    qidx, pos = positions(enc)
    nq = enc.n_queries
    hit = relevant(enc, rel, conv)
    if not len(hit):
        return apply_no_relevant(np.zeros(nq), np.ones(nq, dtype=bool), conv)
    starts = enc.block_starts if enc.block_starts is not None else np.arange(len(hit), dtype=np.int64)
    sizes = np.diff(np.append(starts, len(hit)))
    r_b = np.add.reduceat(hit, starts)
    n_b = sizes - r_b
    bq, bpos = qidx[starts], pos[starts]
    inside = np.ones(len(starts), dtype=bool) if k is None else bpos + sizes <= k
    rb_in, nb_in = np.where(inside, r_b, 0.0), np.where(inside, n_b, 0.0)
    # the non-relevant documents of the query's earlier blocks within k, before each block (whole numbers:
    # exact as one running sum minus the query's start)
    running = np.cumsum(nb_in) - nb_in
    first_block = np.flatnonzero(np.r_[True, bq[1:] != bq[:-1]])
    running -= np.repeat(running[first_block], np.diff(np.append(first_block, len(bq))))
    S = np.bincount(bq, weights=rb_in * running + rb_in * nb_in / 2, minlength=nq)
    N = np.bincount(bq, weights=nb_in, minlength=nq)
    R = np.bincount(bq, weights=rb_in, minlength=nq)
    undefined = N * R == 0
    values = np.where(undefined, 0.0, 1.0 - S / np.where(undefined, 1.0, N * R))
    if k is not None:
        for b in np.flatnonzero((bpos < k) & (bpos + sizes > k)).tolist():  # at most one block a query
            q, r, n, t = int(bq[b]), int(r_b[b]), int(n_b[b]), int(k - bpos[b])
            expected, defined = 0.0, True
            for h in range(max(0, t - n), min(r, t) + 1):
                wrong, non, hits = S[q] + N[q] * h + h * (t - h) / 2, N[q] + t - h, R[q] + h
                if non * hits == 0:
                    defined = False
                    break
                expected += comb(r, h) * comb(n, t - h) / comb(r + n, t) * (1.0 - wrong / (non * hits))
            values[q], undefined[q] = (expected, False) if defined else (0.0, True)
    return apply_no_relevant(values, undefined, conv)


def num_ret(enc: Encoded, k: int | None) -> np.ndarray:
    counts = enc.counts.astype(np.float64)
    return counts if k is None else np.minimum(counts, float(k))


def _blocks(enc: Encoded, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: block size n, block sum m of ``values``, 1-based index j within the block, and the sum of
    ``values`` over earlier blocks of the same query."""
    total = len(values)
    starts = enc.block_starts if enc.block_starts is not None else np.arange(total, dtype=np.int64)
    sizes = np.diff(np.append(starts, total))
    sums = np.add.reduceat(values, starts) if total else np.zeros(0)
    n = np.repeat(sizes, sizes).astype(np.float64)
    m = np.repeat(sums, sizes)
    j = (np.arange(total) - np.repeat(starts, sizes) + 1).astype(np.float64)
    # relevant documents before each block, within its query: global exclusive prefix minus query's start
    block_prefix = np.concatenate(([0.0], np.cumsum(sums)[:-1])) if total else np.zeros(0)
    qidx, _ = positions(enc)
    row_prefix = np.concatenate(([0.0], np.cumsum(values)))
    before = np.repeat(block_prefix, sizes) - row_prefix[enc.offsets[:-1]][qidx]
    return n, m, j, before


def average_precision(
    enc: Encoded, k: int | None, rel: int, conv: Conventions
) -> tuple[np.ndarray, np.ndarray]:
    """AP@k = (1/R) * sum over ranks r <= k of rel(r) * C(r) / r, C(r) = relevant documents in the top r.

    Under averaged ties, for the row at index j (1-based) of a block of n rows holding m relevant
    documents, with c relevant documents ranked before the block:
    E[rel(r) * C(r)] = (m/n) * (c + 1) + (j - 1) * m(m - 1) / (n(n - 1)),
    since E[rel_j] = m/n and E[rel_i rel_j] = m(m - 1)/(n(n - 1)) for i != j. With n = 1 this is rel * C(r).

    ``ap_denominator = "retrieved"`` divides by H, the relevant documents retrieved within k, instead of R
    (0 where H = 0). H is fixed by the ordering except where a tied block straddles k: see
    :func:`_ap_over_retrieved`.
    """
    qidx, pos = positions(enc)
    r = relevant(enc, rel, conv)
    n, m, j, before = _blocks(enc, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        pair = np.where(n > 1, m * (m - 1.0) / (n * (n - 1.0)), 0.0)
    expected = (m / n) * (before + 1.0) + (j - 1.0) * pair
    terms = expected / (pos + 1.0)
    total = per_query_sum(qidx, terms, _cut(pos, k), enc.n_queries)
    nrel = relevant_count(enc, rel, conv)
    undefined = nrel == 0
    if conv.ap_denominator == "retrieved":
        found = rel_in_top(enc, k, rel, conv)
        values = np.where(found == 0, 0.0, total / np.where(found == 0, 1.0, found))
        if k is not None and enc.block_starts is not None:
            _ap_over_retrieved(enc, k, r, terms, values)
        return apply_no_relevant(values, undefined, conv)
    return apply_no_relevant(total / np.where(undefined, 1.0, nrel), undefined, conv)


def _ap_over_retrieved(enc: Encoded, k: int, r: np.ndarray, terms: np.ndarray, values: np.ndarray) -> None:
    """Exact E[S / H] for each query whose tied block straddles k, in place in ``values``.

    The block holds n rows from position s (0-based), t = k - s of them within k, m relevant; c relevant
    rows and an expected sum S0 lie above it. The orderings of earlier blocks are independent of this one,
    so E[S / H] = sum over x of P(X = x) (S0 + E[S_B | X = x]) / (c + x), X hypergeometric (n, m, t): the
    relevant rows among the t. Given x of them at a uniformly drawn set of the t positions, position i
    (1-based) holds one with probability x / t, and then (x - 1)(i - 1)/(t - 1) of the others lie above it:
    E[S_B | X = x] = sum over i of (x / t)(c + 1 + (i - 1)(x - 1)/(t - 1)) / (s + i).
    """
    from math import comb

    starts = enc.block_starts
    assert starts is not None
    sizes = np.diff(np.append(starts, len(r)))
    for q in range(enc.n_queries):
        lo, hi = int(enc.offsets[q]), int(enc.offsets[q + 1])
        if hi - lo <= k:
            continue
        b = int(np.searchsorted(starts, lo + k - 1, side="right") - 1)  # the block holding rank k
        start, n = int(starts[b]), int(sizes[b])
        if start + n <= lo + k or n == 1:
            continue
        s, t = start - lo, lo + k - start
        m = int(r[start : start + n].sum())
        c = float(r[lo:start].sum())
        s0 = float(terms[lo:start].sum())
        total_ways = comb(n, t)
        expected = 0.0
        for x in range(max(0, t - (n - m)), min(m, t) + 1):
            if c + x == 0:
                continue
            p = comb(m, x) * comb(n - m, t - x) / total_ways
            spread = (x - 1.0) / (t - 1.0) if t > 1 else 0.0
            sb = sum((x / t) * (c + 1.0 + (i - 1.0) * spread) / (s + i) for i in range(1, t + 1))
            expected += p * (s0 + sb) / (c + x)
        values[q] = expected


def reciprocal_rank(
    enc: Encoded, k: int | None, rel: int, conv: Conventions
) -> tuple[np.ndarray, np.ndarray]:
    """RR@k = 1 / rank of the first relevant document within k (0 if none).

    Under averaged ties only the first block holding a relevant document matters. If it starts after s rows
    and holds m relevant among n, the first relevant row is its j-th with probability
    P(j) = [prod_{i=0}^{j-2} (n - m - i) / (n - i)] * m / (n - j + 1), and E[RR@k] = sum_{s + j <= k} P(j)/(s + j).
    """
    qidx, pos = positions(enc)
    r = relevant(enc, rel, conv)
    values = np.zeros(enc.n_queries, dtype=np.float64)
    hits = np.flatnonzero(r > 0)
    # the first relevant row of each query in rank order (ignoring k: a tied block may straddle it)
    first_q, first_idx = np.unique(qidx[hits], return_index=True)
    first_rows = hits[first_idx]
    first_pos = pos[first_rows]
    within = np.ones(len(first_rows), dtype=bool) if k is None else first_pos < k
    values[first_q[within]] = 1.0 / (first_pos[within] + 1.0)
    if enc.block_starts is not None and len(first_rows):
        starts = enc.block_starts
        sizes = np.diff(np.append(starts, len(r)))
        block_of = np.searchsorted(starts, first_rows, side="right") - 1
        for q, b in zip(first_q.tolist(), block_of.tolist(), strict=True):
            size = int(sizes[b])
            if size == 1:
                continue
            start_row = int(starts[b])
            s = start_row - int(enc.offsets[q])  # rows ranked before the block
            m = float(r[start_row : start_row + size].sum())
            none_before = 1.0  # P(no relevant row among the block's first j - 1)
            expected = 0.0
            for jj in range(1, size + 1):
                if k is not None and s + jj > k:
                    break
                expected += none_before * m / (size - jj + 1.0) / (s + jj)
                none_before *= (size - m - (jj - 1.0)) / (size - (jj - 1.0))
                if none_before <= 0.0:
                    break
            values[q] = expected
    nrel = relevant_count(enc, rel, conv)
    undefined = nrel == 0
    return apply_no_relevant(values, undefined, conv)
