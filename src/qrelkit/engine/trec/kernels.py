"""trec_eval 10's measures over ranked relevance lists, each written from its ``m_<name>.c`` definition.

A :class:`RelLists` holds, per scored query and in rank order, the relevance code of every returned
document as trec_eval's ``form_res_rels.c`` builds it: the judged grade (0 or more), ``-1`` for a
document not in the judgments ("not in the pool") and ``-2`` for one judged with a negative grade ("in
the pool, unjudged"), and per query the number of judged documents at each grade. Every kernel returns
one float64 per query, computed with the same arithmetic in the same order as the C code (sums run in
rank order), so that values printed to 4 decimals agree with trec_eval's byte for byte.

Ties: the lists are already in one order (trec_eval's: score descending, then document id descending).
The measures with an exact expectation over tied orderings are computed by
:mod:`qrelkit.engine.kernels.ranked` for qrelkit's grammar; these kernels see one ordering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...measures.conventions import IprecCutoff
from . import libm

NONPOOL = -1  # RELVALUE_NONPOOL: not in the judgments
UNJUDGED = -2  # RELVALUE_UNJUDGED: in the judgments with a negative grade
MIN_GEO_MEAN = 0.00001  # trec_eval.h: floor of a value entering a geometric mean
INFAP_EPSILON = 0.00001  # trec_eval.h


@dataclass(frozen=True)
class RelLists:
    """Ranked relevance codes grouped by query, and each query's count of judged documents per grade.

    ``offsets`` (Q + 1) delimit each query's rows of ``rel``; ``levels[q, g]`` counts query q's judged
    documents of grade g (g >= 0); ``rel_level`` is the threshold for the binary measures (``-l``)."""

    offsets: np.ndarray
    rel: np.ndarray
    levels: np.ndarray
    rel_level: int
    #: The sparse form (both set): ``rel`` lists only the returned documents that are in the judgments
    #: (codes 0 or more and ``UNJUDGED``), at the 0-based ranks ``ranks`` (ascending within each query);
    #: every other rank up to ``returned`` (documents returned per query) is ``NONPOOL``. Every kernel
    #: gives the same floats on both forms (the sums skip only terms that are 0).
    returned: np.ndarray | None = None
    ranks: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @property
    def sparse(self) -> bool:
        return self.ranks is not None

    @cached_property
    def rows_per_query(self) -> np.ndarray:
        return np.diff(self.offsets).astype(np.int64)

    @cached_property
    def qidx(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int64), self.rows_per_query)

    @cached_property
    def col(self) -> np.ndarray:
        """0-based index of every row among its query's rows (its rank in the dense form)."""
        return np.arange(len(self.rel), dtype=np.int64) - np.repeat(self.offsets[:-1], self.rows_per_query)

    @cached_property
    def pos(self) -> np.ndarray:
        """0-based rank of every row within its query."""
        return self.ranks if self.ranks is not None else self.col

    @cached_property
    def num_ret(self) -> np.ndarray:
        return self.returned.astype(np.int64) if self.returned is not None else self.rows_per_query

    def rows_before(self, k: int | np.ndarray, queries: np.ndarray | None = None) -> np.ndarray:
        """How many rows of each query (of ``queries``, default all) lie in its first k ranks (k may
        differ per query); in the dense form min(k, num_ret)."""
        held = self.__dict__.setdefault("_rows_before", {})
        if queries is None and isinstance(k, int) and k in held:  # the cutoffs recur across measures
            return held[k]
        q = np.arange(self.n, dtype=np.int64) if queries is None else queries
        j = np.minimum(np.maximum(k, 0), self.num_ret[q])
        if self.sparse:
            stride, keys = self._rank_keys
            j = np.searchsorted(keys, q * stride + j) - self.offsets[:-1][q]
        if queries is None and isinstance(k, int):
            held[k] = j
        return j

    @cached_property
    def _rank_keys(self) -> tuple[int, np.ndarray]:
        """(stride, query * stride + rank of every row): ascending, for :meth:`rows_before`."""
        stride = int(self.num_ret.max()) + 1 if self.n else 1
        return stride, self.qidx * stride + self.pos

    def sparsified(self) -> RelLists:
        """The sparse form of these lists (the rows of documents in the judgments, at their ranks); itself
        when a document outside the judgments counts as relevant (``-l`` below 0), which only the dense
        form can express."""
        if self.sparse or self.rel_level <= NONPOOL:
            return self
        keep = self.rel != NONPOOL
        counts = np.bincount(self.qidx[keep], minlength=self.n)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return RelLists(offsets, self.rel[keep], self.levels, self.rel_level, self.num_ret, self.pos[keep])

    def dense(self) -> RelLists:
        """The dense form of these lists (itself when dense)."""
        if not self.sparse:
            return self
        offsets = np.concatenate(([0], np.cumsum(self.num_ret))).astype(np.int64)
        rel = np.full(int(offsets[-1]), NONPOOL, dtype=np.int64)
        rel[offsets[:-1][self.qidx] + self.pos] = self.rel
        return RelLists(offsets, rel, self.levels, self.rel_level)

    @cached_property
    def is_rel(self) -> np.ndarray:
        return self.rel >= self.rel_level

    @cached_property
    def num_rel(self) -> np.ndarray:
        return self.levels[:, max(self.rel_level, 0) :].sum(axis=1).astype(np.int64)

    @cached_property
    def num_nonrel(self) -> np.ndarray:
        """Judged documents below the threshold (grades 0 .. rel_level - 1)."""
        return self.levels[:, : max(self.rel_level, 0)].sum(axis=1).astype(np.int64)

    @cached_property
    def num_rel_ret(self) -> np.ndarray:
        return self.count(self.is_rel)

    @cached_property
    def rel_so_far(self) -> np.ndarray:
        """Relevant rows at or above each row, within its query."""
        return self.running(self.is_rel)

    def count(self, mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.qidx[mask], minlength=self.n).astype(np.int64)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-query sum of ``weights`` (over ``mask``), added in rank order."""
        q = self.qidx if mask is None else self.qidx[mask]
        w = weights if mask is None else weights[mask]
        return np.bincount(q, weights=w, minlength=self.n).astype(np.float64, copy=False)

    def running(self, mask: np.ndarray) -> np.ndarray:
        """Per row: how many rows of its query up to and including it satisfy ``mask``."""
        c = np.cumsum(mask, dtype=np.int64)
        start = np.concatenate(([0], c))[self.offsets[:-1]]
        return c - np.repeat(start, np.diff(self.offsets))

    def in_top(self, mask: np.ndarray, k: int | np.ndarray) -> np.ndarray:
        """Rows satisfying ``mask`` among each query's first k (k may differ per query)."""
        if mask is self.is_rel:
            return self.upto(self.rel_so_far, k)
        return self.count(mask & (self.pos < (k[self.qidx] if isinstance(k, np.ndarray) else k)))

    def upto(self, running: np.ndarray, k: int | np.ndarray) -> np.ndarray:
        """A running per-row value (``running``, ``prefix``) read at each query's min(k, n)-th row (0 when
        that is row 0): per query, not per row."""
        j = self.rows_before(k)
        idx = self.offsets[:-1] + j - 1
        out = np.zeros(self.n, dtype=running.dtype)
        ok = j > 0
        out[ok] = running[idx[ok]]
        return out

    def prefix(self, values: np.ndarray) -> np.ndarray:
        """Per row: the sum of ``values`` over its query's rows up to it, added in rank order (on a
        query-by-rank grid, so each sum is formed as the C loop forms it; query by query when the grid would
        be much larger than the data: :func:`_segment_cumsum`)."""
        width = int(self.rows_per_query.max()) if self.n else 0
        if self.n * width <= 4 * len(values) + 1_000_000:
            grid = np.zeros((self.n, width))
            grid[self.qidx, self.col] = values
            np.cumsum(grid, axis=1, out=grid)
            return grid[self.qidx, self.col]
        return _segment_cumsum(values, self.offsets)

    @cached_property
    def log2_rank(self) -> np.ndarray:
        """log2(rank + 1) of every row (rank 1-based), the DCG discount's denominator."""
        return libm.log2(self.pos + 2)

    @cached_property
    def grades_as_gains(self) -> np.ndarray:
        return np.where(self.rel > 0, self.rel, 0).astype(np.float64)

    @cached_property
    def rel_rows(self) -> np.ndarray:
        return np.flatnonzero(self.is_rel)

    @cached_property
    def nonrel_so_far(self) -> np.ndarray:
        """Judged non-relevant rows at or above each row, within its query."""
        return self.running((self.rel >= 0) & ~self.is_rel)

    @cached_property
    def cut_ideal(self) -> _Ideal:
        """ndcg_cut's ideal ranking (the grades as gains)."""
        return _Ideal.of(self, Gains())

    def gains_of_rows(self, gains: Gains) -> np.ndarray:
        """Each row's gain under ``gains`` (computed once per gain table)."""
        held = self.__dict__.setdefault("_gain_rows", {})
        if gains not in held:
            held[gains] = gains.of_rows(self)
        return held[gains]

    @cached_property
    def ap_terms(self) -> np.ndarray:
        """rel_so_far / rank at relevant rows, 0 elsewhere (AP's terms)."""
        return np.where(self.is_rel, self.rel_so_far / (self.pos + 1.0), 0.0)

    @cached_property
    def ap_prefix(self) -> np.ndarray:
        return self.prefix(self.ap_terms)

    @cached_property
    def cut_dcg_prefix(self) -> np.ndarray:
        """Running DCG with the grades as gains (ndcg_cut's numerator)."""
        g = self.grades_as_gains
        return self.prefix(np.where(g > 0, g / self.log2_rank, 0.0))


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den != 0, else 0 (trec_eval leaves the value at 0)."""
    out = np.zeros(len(num), dtype=np.float64)
    ok = den != 0
    out[ok] = num[ok].astype(np.float64) / den[ok].astype(np.float64)
    return out


# ------------------------------------------------------------------------------------------- counts


def num_ret(rl: RelLists) -> np.ndarray:
    return rl.num_ret.astype(np.float64)


def num_rel(rl: RelLists) -> np.ndarray:
    return rl.num_rel.astype(np.float64)


def num_rel_ret(rl: RelLists) -> np.ndarray:
    return rl.num_rel_ret.astype(np.float64)


def num_nonrel_judged_ret(rl: RelLists) -> np.ndarray:
    """m_num_nonrel_judged_ret.c: returned documents judged below the threshold."""
    return rl.upto(rl.nonrel_so_far, rl.num_ret).astype(np.float64)


# ------------------------------------------------------------------------------------ ranked, binary


def ap(rl: RelLists, k: int | None = None) -> np.ndarray:
    """m_map.c / m_map_cut.c: sum of rel_so_far / rank over relevant rows (within k), / num_rel."""
    if k is None:
        return _div(rl.total(rl.ap_terms, rl.is_rel), rl.num_rel)
    return _div(rl.upto(rl.ap_prefix, k), rl.num_rel)


def gm_ap_log(rl: RelLists) -> np.ndarray:
    """m_gm_map.c: log(max(AP, MIN_GEO_MEAN)), averaged and exponentiated by the summary."""
    return libm.log(np.maximum(ap(rl), MIN_GEO_MEAN))


def rprec(rl: RelLists) -> np.ndarray:
    """m_Rprec.c: relevant in the top min(num_ret, R), / R."""
    look = np.minimum(rl.num_ret, rl.num_rel)
    hits = rl.upto(rl.rel_so_far, look)
    return _div(hits, np.where(look == 0, 0, rl.num_rel))


def recip_rank(rl: RelLists) -> np.ndarray:
    out = np.zeros(rl.n, dtype=np.float64)
    rows = np.flatnonzero(rl.is_rel)
    q, first = np.unique(rl.qidx[rows], return_index=True)
    out[q] = 1.0 / (rl.pos[rows[first]] + 1.0)
    return out


def precision(rl: RelLists, k: int) -> np.ndarray:
    return rl.in_top(rl.is_rel, k) / float(k)


def recall(rl: RelLists, k: int) -> np.ndarray:
    return _div(rl.in_top(rl.is_rel, k), rl.num_rel)


def relative_precision(rl: RelLists, k: int) -> np.ndarray:
    """m_rel_P.c: relevant in the top k / min(k, R); 0 when R = 0."""
    return _div(rl.in_top(rl.is_rel, k), np.minimum(rl.num_rel, k))


def success(rl: RelLists, k: int) -> np.ndarray:
    return (rl.in_top(rl.is_rel, k) > 0).astype(np.float64)


def unjudged(rl: RelLists, k: int) -> np.ndarray:
    """m_unjudged.c: documents not judged (codes -1 and -2) in the top k / k."""
    shown = np.minimum(max(k, 0), rl.num_ret)
    return (shown - rl.in_top(rl.rel >= 0, k)) / float(k)


def rprec_mult(rl: RelLists, mult: float) -> np.ndarray:
    """m_Rprec_mult.c: precision at cutoff c = (long)(mult * R + 0.9); beyond the returned documents the
    missing ones count as not relevant (num_rel_ret / c); c = 0 gives 0."""
    cut = np.floor(mult * rl.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    hits = rl.upto(rl.rel_so_far, cut)  # num_rel_ret when cut > num_ret
    return _div(hits, cut)


def bpref(rl: RelLists) -> np.ndarray:
    """m_bpref.c: for each relevant returned document, 1 - min(nonrel above, R) / min(N, R), / R, with N the
    judged non-relevant documents; documents not judged are skipped."""
    rows = rl.rel_rows
    above = rl.nonrel_so_far[rows].astype(np.float64)  # a relevant row is not itself non-relevant
    q = rl.qidx[rows]
    R = rl.num_rel[q].astype(np.float64)
    N = rl.num_nonrel[q].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(above > 0, 1.0 - np.minimum(above, R) / np.minimum(N, R), 1.0)
    return _div(np.bincount(q, weights=terms, minlength=rl.n), rl.num_rel)


def gm_bpref_log(rl: RelLists) -> np.ndarray:
    return libm.log(np.maximum(bpref(rl), MIN_GEO_MEAN))


def infap(rl: RelLists) -> np.ndarray:
    """m_infap.c (Yilmaz & Aslam): at a relevant document at 0-based rank j > 0,
    1/(j+1) + (j/(j+1)) * ((r + n + u) / j) * ((r + eps) / (r + n + 2 eps)), with r relevant, n judged
    non-relevant and u judged-negative ("in the pool, unjudged") documents above it; 1 at rank 0."""
    rows = rl.rel_rows
    r = rl.rel_so_far[rows] - 1
    n = rl.nonrel_so_far[rows]
    u = rl.running(rl.rel == UNJUDGED)[rows] if (rl.rel == UNJUDGED).any() else np.zeros(len(rows), np.int64)
    fj = rl.pos[rows].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((r + n + u) / fj) * (
            (r + INFAP_EPSILON) / ((r + n) + 2 * INFAP_EPSILON)
        )
    terms = np.where(fj == 0, 1.0, terms)
    return _div(np.bincount(rl.qidx[rows], weights=terms, minlength=rl.n), rl.num_rel)


def bin_g(rl: RelLists) -> np.ndarray:
    """m_binG.c: sum over relevant documents of 1 / log2(2 + non-relevant above), / R."""
    rows = rl.rel_rows
    terms = 1.0 / libm.log2((3 + rl.pos[rows] - rl.rel_so_far[rows]).astype(np.float64))
    total = np.bincount(rl.qidx[rows], weights=terms, minlength=rl.n)
    return _div(total, np.where(rl.num_rel_ret > 0, rl.num_rel, 0))


def _interpolated_at_relevant(rl: RelLists) -> np.ndarray:
    """Per relevant returned row (in row order): the interpolated precision at its rank, the highest
    precision at that rank or below. Precision rises only at relevant ranks, so that is the highest
    precision at this or a later relevant rank: a running maximum from the end of each query, taken on a
    query-by-rank grid (or query by query when the grid would be much larger than the data)."""
    rows = rl.rel_rows
    prec = rl.rel_so_far[rows] / (rl.pos[rows] + 1.0)
    q = rl.qidx[rows]
    counts = np.bincount(q, minlength=rl.n)
    width = int(counts.max()) if len(counts) else 0
    out = np.empty(len(rows), dtype=np.float64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    if rl.n * width <= 4 * len(rl.rel) + 1_000_000:
        col = np.arange(len(rows)) - starts[:-1][q]
        grid = np.full((rl.n, width), -1.0)
        grid[q, width - 1 - col] = prec  # each query's values reversed, left-aligned at the end
        acc = np.maximum.accumulate(grid, axis=1)
        out[:] = acc[q, width - 1 - col]
    else:
        for i in range(rl.n):
            a, b = starts[i], starts[i + 1]
            out[a:b] = np.maximum.accumulate(prec[a:b][::-1])[::-1]
    return out


def iprec_at_recall(rl: RelLists, levels: Sequence[float], cutoff: IprecCutoff = "round") -> list[np.ndarray]:
    """m_iprec_at_recall.c: interpolated precision at the rank of the t-th relevant document,
    t = lround(level * R) (trec_eval 10, line 71: ``cutoffs[i] = lround(cutoff_percents[i] * rr.num_rel)``),
    or under ``cutoff="truncate"`` t = (long)(level * R + 0.9) (trec_eval 9.0.x, line 65: ``cutoffs[i] =
    (long) (cutoff_percents[i] * rr.num_rel+0.9)``); 0 when t > num_rel_ret; t = 0 reads as the first
    relevant document (0 if none was returned)."""
    interp = _interpolated_at_relevant(rl)
    nrr, R = rl.num_rel_ret, rl.num_rel
    starts = np.concatenate(([0], np.cumsum(nrr)))[:-1]
    out = []
    for level in levels:
        x = level * R.astype(np.float64)  # the products C forms (level * num_rel, in double)
        if cutoff == "truncate":  # (long)(x + 0.9), the sum in double
            t = np.floor(x + 0.9).astype(np.int64)
        else:  # C's lround: to nearest, halves away from zero
            t = np.where(
                x >= 0, np.floor(x) + (x - np.floor(x) >= 0.5), -np.floor(-x) - (-x - np.floor(-x) >= 0.5)
            ).astype(np.int64)
        ok = (t <= nrr) & (nrr > 0)
        idx = starts + np.maximum(t, 1) - 1
        values = np.zeros(rl.n, dtype=np.float64)
        values[ok] = interp[idx[ok]]
        out.append(values)
    return out


def pt_avg(rl: RelLists, levels: Sequence[float], cutoff: IprecCutoff = "round") -> np.ndarray:
    """m_11pt_avg.c: the interpolated precisions at ``levels`` summed from the highest level down, / count
    (t rounded as :func:`iprec_at_recall`: trec_eval 10's line 81, trec_eval 9's line 74)."""
    values = iprec_at_recall(rl, sorted(levels), cutoff)
    total = np.zeros(rl.n, dtype=np.float64)
    for v in reversed(values):
        total = total + v
    return total / float(len(levels))


# ------------------------------------------------------------------------------------------ sets


def set_p(rl: RelLists) -> np.ndarray:
    return _div(rl.num_rel_ret, rl.num_ret)


def set_recall(rl: RelLists) -> np.ndarray:
    return _div(rl.num_rel_ret, rl.num_rel)


def set_relative_p(rl: RelLists) -> np.ndarray:
    den = np.where((rl.num_ret > 0) & (rl.num_rel > 0), np.minimum(rl.num_ret, rl.num_rel), 0)
    return _div(rl.num_rel_ret, den)


def set_map(rl: RelLists) -> np.ndarray:
    nrr = rl.num_rel_ret.astype(np.float64)
    return _div(nrr * nrr, rl.num_ret.astype(np.float64) * rl.num_rel.astype(np.float64))


def set_f(rl: RelLists, beta: float) -> np.ndarray:
    """m_set_F.c: (beta + 1) P R / (beta P + R), 0 when nothing relevant was returned."""
    out = np.zeros(rl.n, dtype=np.float64)
    ok = rl.num_rel_ret > 0
    P = rl.num_rel_ret[ok] / rl.num_ret[ok]
    R = rl.num_rel_ret[ok] / rl.num_rel[ok]
    out[ok] = (beta + 1.0) * P * R / (beta * P + R)
    return out


def utility(rl: RelLists, a: float, b: float, c: float, d: float, num_docs: int = 0) -> np.ndarray:
    """m_utility.c: a * relret + b * nonrelret + c * relnotret + d * nonrelnotret (collection size -N)."""
    nrr, nret, R = rl.num_rel_ret, rl.num_ret, rl.num_rel
    return a * nrr + b * (nret - nrr) + c * (R - nrr) + d * (num_docs + nrr - nret - R)


# ------------------------------------------------------------------------------------------- graded


@dataclass(frozen=True)
class Gains:
    """gain_init.c's setup_gains: a gain per grade, the grade itself unless ``pairs`` give one. A grade's
    gain does not depend on the query, so one table serves every query; a document that is not judged is
    worth 0."""

    pairs: tuple[tuple[int, float], ...] = ()

    def table(self, top: int) -> np.ndarray:
        """Gain of grades 0 .. top - 1."""
        out = np.arange(top, dtype=np.float64)
        for grade, gain in self.pairs:
            if 0 <= grade < top:
                out[grade] = gain
        return out

    def of_rows(self, rl: RelLists) -> np.ndarray:
        table = self.table(rl.levels.shape[1])
        return np.where(rl.rel >= 0, table[np.maximum(rl.rel, 0)], 0.0)


def gains_of(pairs: tuple[tuple[int, float], ...]) -> Gains:
    """A measure's ``grade=gain`` pairs as this module's kernels take them
    (:func:`qrelkit.engine.trec.registry.measure_values`)."""
    return Gains(tuple(pairs))


def nan_on_empty(rl: RelLists, values: np.ndarray, levels: Sequence[float]) -> np.ndarray:
    """NaN where nothing is returned (under -J, or -M 0) and a level's cutoff lround(level R) is 0:
    ``m_iprec_at_recall.c`` line 80 and ``m_11pt_avg.c`` line 90 start the interpolated precision at
    ``num_rel_ret / num_ret``, 0 / 0, and give it to every cutoff not above num_rel_ret (0); the other
    levels keep 0. The NaN is printed ``-nan`` and carried into 11pt_avg's sum and into the mean."""
    R = rl.num_rel.astype(np.float64)
    cut_at_zero = np.zeros(rl.n, dtype=bool)
    for level in levels:
        cut_at_zero |= float(level) * R < 0.5  # lround(x) == 0 for 0 <= x < 0.5
    return np.where((rl.num_ret == 0) & cut_at_zero, np.nan, values)


@dataclass(frozen=True, eq=False)
class _Ideal:
    """Every query's ideal ranking (its judged documents' positive gains, largest first) as flat arrays:
    ``gain`` grouped by query, delimited by ``offsets``; ``pos`` the 0-based rank within the query."""

    gain: np.ndarray
    offsets: np.ndarray
    pos: np.ndarray
    qidx: np.ndarray

    @classmethod
    def of(cls, rl: RelLists, gains: Gains) -> _Ideal:
        table = gains.table(rl.levels.shape[1])
        order = [g for g in np.argsort(-table, kind="stable").tolist() if table[g] > 0]
        counts = rl.levels[:, order] if order else np.zeros((rl.n, 0), dtype=np.int64)
        flat = np.repeat(np.tile(table[order], rl.n), counts.ravel())
        lengths = counts.sum(axis=1)
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        qidx = np.repeat(np.arange(rl.n, dtype=np.int64), lengths)
        pos = np.arange(len(flat), dtype=np.int64) - offsets[:-1][qidx]
        return cls(flat, offsets, pos, qidx)

    @property
    def length(self) -> np.ndarray:
        return np.diff(self.offsets)

    @cached_property
    def dcg_prefix(self) -> np.ndarray:
        """Running ideal DCG within each query (summed rank by rank)."""
        terms = self.gain / libm.log2(self.pos + 2)
        width = int(self.length.max()) if len(self.length) else 0
        n = len(self.length)
        if n * width <= 4 * len(terms) + 1_000_000:
            grid = np.zeros((n, width))
            grid[self.qidx, self.pos] = terms
            np.cumsum(grid, axis=1, out=grid)
            return grid[self.qidx, self.pos]
        return _segment_cumsum(terms, self.offsets)

    def upto(self, k: int) -> np.ndarray:
        """Ideal DCG of each query's first k ranks."""
        j = np.minimum(k, self.length)
        out = np.zeros(len(j))
        ok = j > 0
        out[ok] = self.dcg_prefix[(self.offsets[:-1] + j - 1)[ok]]
        return out


def _segment_cumsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Running sum within each segment, added left to right from its first value as trec_eval's C loops
    add (``sum += term``), so each is the C loop's double to the bit: on a segment-by-position grid when
    that is not much larger than the data, else segment by segment (never by difference of one running
    sum, whose rounding differs)."""
    lengths = np.diff(offsets)
    n = len(lengths)
    width = int(lengths.max()) if n else 0
    if n * width <= 4 * len(values) + 1_000_000:
        qidx = np.repeat(np.arange(n), lengths)
        col = np.arange(len(values)) - np.repeat(offsets[:-1], lengths)
        grid = np.zeros((n, width), dtype=np.result_type(values, np.float64))
        grid[qidx, col] = values
        np.cumsum(grid, axis=1, out=grid)
        return grid[qidx, col]
    out = np.empty(len(values), dtype=np.result_type(values, np.float64))
    for start, stop in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        np.cumsum(values[start:stop], out=out[start:stop])
    return out


def _at(prefix: np.ndarray, offsets: np.ndarray, q: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The running sum of query q through its first j ranks (0 for j = 0)."""
    idx = offsets[:-1][q] + j - 1
    return np.where(j > 0, prefix[np.maximum(idx, 0)] if len(prefix) else 0.0, 0.0)


def _dcg_terms(rl: RelLists, g: np.ndarray) -> np.ndarray:
    return np.where(g != 0, g / rl.log2_rank, 0.0)


def ndcg(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_ndcg.c: DCG over every returned document / DCG of the ideal (0 when the ideal is 0)."""
    ideal = _Ideal.of(rl, gains)
    num = rl.total(_dcg_terms(rl, rl.gains_of_rows(gains)))
    den = np.bincount(ideal.qidx, weights=ideal.gain / libm.log2(ideal.pos + 2), minlength=rl.n)
    return _div(num, den)


def ndcg_cut(rl: RelLists, k: int) -> np.ndarray:
    """m_ndcg_cut.c: gains are the grades themselves; the ideal runs over grades >= 1; a query whose ideal
    is 0 keeps its (zero) DCG."""
    num = rl.upto(rl.cut_dcg_prefix, k)
    den = rl.cut_ideal.upto(k)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), num)


def ndcg_rel(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_ndcg_rel.c: nDCG at the rank of each returned positive-gain document (the ideal's DCG stops
    growing when the ideal runs out), plus the final nDCG once for each positive-gain document of the
    ideal that was not returned, over the ideal's positive-gain documents."""
    ideal = _Ideal.of(rl, gains)
    g = rl.gains_of_rows(gains)
    dcg = _segment_cumsum(_dcg_terms(rl, g), rl.offsets)
    idcg = _segment_cumsum(ideal.gain / libm.log2(ideal.pos + 2), ideal.offsets)
    L = ideal.length
    hit = g > 0
    q = rl.qidx[hit]
    j = np.minimum(rl.pos[hit] + 1, L[q])
    with np.errstate(divide="ignore", invalid="ignore"):
        points = dcg[hit] / _at(idcg, ideal.offsets, q, j)
        total = np.bincount(q, weights=points, minlength=rl.n)
        last = _at(dcg, rl.offsets, np.arange(rl.n), rl.rows_per_query)
        full = _at(idcg, ideal.offsets, np.arange(rl.n), L)
        total = total + (L - np.bincount(q, minlength=rl.n)).astype(np.float64) * last / full
    return np.where(total > 0, total / np.where(L > 0, L, 1), 0.0)


def rndcg(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_Rndcg.c: nDCG at each rank j (1 .. L) where the ideal gain changes level (it is 0 after the L
    positive-gain documents), plus the final nDCG when more than L + 1 documents were returned (the C
    loop's bound), averaged; 0 when nothing is relevant at the threshold."""
    ideal = _Ideal.of(rl, gains)
    dcg = _segment_cumsum(_dcg_terms(rl, rl.gains_of_rows(gains)), rl.offsets)
    idcg = _segment_cumsum(ideal.gain / libm.log2(ideal.pos + 2), ideal.offsets)
    L = ideal.length
    nxt = np.append(ideal.gain[1:], 0.0)
    last_of_query = ideal.pos == L[ideal.qidx] - 1
    change = last_of_query | (nxt != ideal.gain)
    q = ideal.qidx[change]
    j = ideal.pos[change] + 1
    extra = np.flatnonzero(rl.num_ret > L + 1)
    qs = np.concatenate((q, extra))
    num = np.concatenate(
        (
            _at(dcg, rl.offsets, q, rl.rows_before(j, q)),
            _at(dcg, rl.offsets, extra, rl.rows_per_query[extra]),
        )
    )
    den = np.concatenate((_at(idcg, ideal.offsets, q, j), _at(idcg, ideal.offsets, extra, L[extra])))
    order = np.argsort(qs, kind="stable")
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 where the ideal is empty: NaN, as in C
        total = np.bincount(qs[order], weights=(num / den)[order], minlength=rl.n)
        value = total / np.bincount(qs, minlength=rl.n)
    return np.where(rl.num_rel == 0, 0.0, value)


def g_measure(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_G.c: sum of gain / log2(2 + cost - gain so far) over returned documents, the cost counting
    max(ideal gain, 1) per rank, over the ideal's total gain."""
    ideal = _Ideal.of(rl, gains)
    g = rl.gains_of_rows(gains)
    L = ideal.length
    if rl.sparse:
        table = gains.table(rl.levels.shape[1])
        if not np.array_equal(table, np.floor(table)):  # sums of fractions: formed rank by rank below
            return g_measure(rl.dense(), gains)
        # the cost through rank p: the ideal's costs through min(p, L - 1), then 1 per rank beyond; whole
        # numbers, so the same floats as the rank-by-rank sum
        icum = _segment_cumsum(np.maximum(ideal.gain, 1.0), ideal.offsets)
        Lq = L[rl.qidx]
        within = np.minimum(rl.pos, Lq - 1)
        cost = np.where(
            Lq > 0, icum[np.maximum(ideal.offsets[:-1][rl.qidx] + within, 0)] if len(icum) else 0.0, 0.0
        )
        cost = cost + np.maximum(rl.pos - Lq + 1, 0)
    else:
        inside = rl.pos < L[rl.qidx]
        at_rank = np.zeros(len(g))
        at_rank[inside] = ideal.gain[ideal.offsets[:-1][rl.qidx[inside]] + rl.pos[inside]]
        cost = _segment_cumsum(np.maximum(at_rank, 1.0), rl.offsets)
    got = _segment_cumsum(g, rl.offsets)
    terms = np.zeros(len(g))
    used = g != 0  # the logarithm only where a term is taken (fractional gains: math per distinct value)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms[used] = g[used] / libm.log2(2.0 + cost[used] - got[used])
    total = np.bincount(ideal.qidx, weights=ideal.gain, minlength=rl.n)
    return _div(rl.total(terms), total)


def rbp(rl: RelLists, p: float, gains: Gains) -> np.ndarray:
    """m_rbp.c: (1 - p) * sum of gain * p^i, the gains of a query (its grades 0 .. highest, and any given)
    scaled to 0..1 by their range when one lies outside it."""
    top = rl.levels.shape[1]
    table = gains.table(top)
    present = rl.levels > 0
    highest = np.where(present.any(axis=1), top - 1 - np.argmax(present[:, ::-1], axis=1), -1)
    extra = [gain for grade, gain in gains.pairs if not 0 <= grade < top]
    lo = np.full(rl.n, min(extra, default=np.inf))
    hi = np.full(rl.n, max(extra, default=-np.inf))
    for grade in range(top):  # a grade is in a query's table up to its highest judged grade, or if given
        inside = (highest >= grade) | any(grade == g for g, _ in gains.pairs)
        lo = np.where(inside, np.minimum(lo, table[grade]), lo)
        hi = np.where(inside, np.maximum(hi, table[grade]), hi)
    scale = (lo < 0) | (hi > 1)
    g = rl.gains_of_rows(gains)
    q = rl.qidx
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(scale[q] & (rl.rel >= 0), (g - lo[q]) / (hi[q] - lo[q]), g)
    weights = _powers(rl, p)[rl.pos]
    return (1.0 - p) * rl.total(np.where(g != 0, g * weights, 0.0))


def rbp_resid(rl: RelLists, p: float) -> np.ndarray:
    """m_rbp_resid.c: p^n + (1 - p) * sum over unjudged ranks of p^i (0 when every document is judged)."""
    powers = _powers(rl, p)
    unj = rl.rel < 0
    width = int(rl.num_ret.max()) if rl.n else 0
    if rl.sparse and rl.n * width <= 4 * int(rl.num_ret.sum()) + 1_000_000:
        # every rank of a stretch of queries on a grid, judged ranks 0, summed along each row in rank
        # order (as the C loop and the dense form's per-query sum add them)
        judged = ~unj
        s = np.zeros(rl.n)
        step = max(1, (1 << 19) // max(width, 1))
        grid = np.empty((min(step, rl.n), width))
        beyond = np.arange(width)
        for a in range(0, rl.n if width else 0, step):
            b = min(a + step, rl.n)
            g = grid[: b - a]
            g[:] = powers[:width]
            g[beyond >= rl.num_ret[a:b, None]] = 0.0
            rows = slice(rl.offsets[a], rl.offsets[b])
            hit = judged[rows]
            g[rl.qidx[rows][hit] - a, rl.pos[rows][hit]] = 0.0
            np.cumsum(g, axis=1, out=g)
            last = np.maximum(rl.num_ret[a:b] - 1, 0)
            s[a:b] = np.where(rl.num_ret[a:b] > 0, g[np.arange(b - a), last], 0.0)
        unjudged = rl.num_ret - rl.count(judged)
        return np.where(unjudged > 0, powers[rl.num_ret] + (1 - p) * s, 0.0)
    if rl.sparse:  # a grid much larger than the data: the dense form
        return rbp_resid(rl.dense(), p)
    s = rl.total(np.where(unj, powers[rl.pos], 0.0))
    return np.where(rl.count(unj) > 0, powers[rl.num_ret] + (1 - p) * s, 0.0)


def _powers(rl: RelLists, p: float) -> np.ndarray:
    """p^i for i = 0 .. longest ranking, by repeated multiplication as the C loop forms them."""
    top = int(rl.num_ret.max()) + 1 if rl.n else 1
    table = np.empty(top, dtype=np.float64)
    c = 1.0
    for i in range(top):
        table[i] = c
        c = c * p
    return table


def relstring(rl: RelLists, length: int) -> list[str]:
    """m_relstring.c: the grades of the top documents as characters: 0-9, '>' above 9, '-' not judged,
    '.' judged with a negative grade."""
    width = max(length, 0)
    codes = np.full((rl.n, width), NONPOOL, dtype=np.int64)
    top = rl.pos < width
    codes[rl.qidx[top], rl.pos[top]] = rl.rel[top]
    digits = np.array(list("0123456789"))[np.clip(codes, 0, 9)]
    chars = np.where(codes > 9, ">", np.where(codes >= 0, digits, "<"))
    chars = np.where(codes == NONPOOL, "-", np.where(codes == UNJUDGED, ".", chars))
    shown = np.minimum(rl.num_ret, width).tolist()
    return ["".join(row[:k]) for row, k in zip(chars.tolist(), shown, strict=True)]
