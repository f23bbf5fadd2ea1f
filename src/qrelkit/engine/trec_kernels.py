"""trec_eval 10's measures over ranked relevance lists, each written from its ``m_<name>.c`` definition.

A :class:`RelLists` holds, per scored query and in rank order, the relevance code of every returned
document as trec_eval's ``form_res_rels.c`` builds it: the judged grade (0 or more), ``-1`` for a
document not in the judgments ("not in the pool") and ``-2`` for one judged with a negative grade ("in
the pool, unjudged"), and per query the number of judged documents at each grade. Every kernel returns
one float64 per query, computed with the same arithmetic in the same order as the C code (sums run in
rank order), so that values printed to 4 decimals agree with trec_eval's byte for byte.

Ties: the lists are already in one order (trec_eval's: score descending, then document id descending).
The measures with an exact expectation over tied orderings are computed by
:mod:`qrelkit.engine.kernels` for qrelkit's grammar; these kernels see one ordering.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

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

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @cached_property
    def qidx(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.offsets))

    @cached_property
    def pos(self) -> np.ndarray:
        """0-based rank of every row within its query."""
        return np.arange(len(self.rel), dtype=np.int64) - np.repeat(self.offsets[:-1], np.diff(self.offsets))

    @cached_property
    def num_ret(self) -> np.ndarray:
        return np.diff(self.offsets).astype(np.int64)

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

    def in_top(self, mask: np.ndarray, k: int) -> np.ndarray:
        return self.count(mask & (self.pos < k))

    def query(self, q: int) -> np.ndarray:
        return self.rel[self.offsets[q] : self.offsets[q + 1]]


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
    return rl.count((rl.rel >= 0) & ~rl.is_rel).astype(np.float64)


# ------------------------------------------------------------------------------------ ranked, binary


def ap(rl: RelLists, k: int | None = None) -> np.ndarray:
    """m_map.c / m_map_cut.c: sum of rel_so_far / rank over relevant rows (within k), / num_rel."""
    mask = rl.is_rel if k is None else rl.is_rel & (rl.pos < k)
    terms = rl.rel_so_far.astype(np.float64) / (rl.pos + 1.0)
    return _div(rl.total(terms, mask), rl.num_rel)


def gm_ap_log(rl: RelLists) -> np.ndarray:
    """m_gm_map.c: log(max(AP, MIN_GEO_MEAN)), averaged and exponentiated by the summary."""
    return np.log(np.maximum(ap(rl), MIN_GEO_MEAN))


def rprec(rl: RelLists) -> np.ndarray:
    """m_Rprec.c: relevant in the top min(num_ret, R), / R."""
    look = np.minimum(rl.num_ret, rl.num_rel)
    hits = rl.count(rl.is_rel & (rl.pos < look[rl.qidx]))
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
    return rl.in_top(rl.rel < 0, k) / float(k)


def rprec_mult(rl: RelLists, mult: float) -> np.ndarray:
    """m_Rprec_mult.c: precision at cutoff c = (long)(mult * R + 0.9); beyond the returned documents the
    missing ones count as not relevant (num_rel_ret / c); c = 0 gives 0."""
    cut = np.floor(mult * rl.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    hits = rl.count(rl.is_rel & (rl.pos < cut[rl.qidx]))
    hits = np.where(cut > rl.num_ret, rl.num_rel_ret, hits)
    return _div(hits, cut)


def bpref(rl: RelLists) -> np.ndarray:
    """m_bpref.c: for each relevant returned document, 1 - min(nonrel above, R) / min(N, R), / R, with N the
    judged non-relevant documents; documents not judged are skipped."""
    nonrel = (rl.rel >= 0) & ~rl.is_rel
    above = (rl.running(nonrel) - nonrel).astype(np.float64)
    R = rl.num_rel[rl.qidx].astype(np.float64)
    N = rl.num_nonrel[rl.qidx].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(above > 0, 1.0 - np.minimum(above, R) / np.minimum(N, R), 1.0)
    return _div(rl.total(terms, rl.is_rel), rl.num_rel)


def gm_bpref_log(rl: RelLists) -> np.ndarray:
    return np.log(np.maximum(bpref(rl), MIN_GEO_MEAN))


def infap(rl: RelLists) -> np.ndarray:
    """m_infap.c (Yilmaz & Aslam): at a relevant document at 0-based rank j > 0,
    1/(j+1) + (j/(j+1)) * ((r + n + u) / j) * ((r + eps) / (r + n + 2 eps)), with r relevant, n judged
    non-relevant and u judged-negative ("in the pool, unjudged") documents above it; 1 at rank 0."""
    nonrel = (rl.rel >= 0) & ~rl.is_rel
    pool_unj = rl.rel == UNJUDGED
    r = rl.rel_so_far - 1
    n = rl.running(nonrel) - nonrel
    u = rl.running(pool_unj) - pool_unj
    fj = rl.pos.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((r + n + u) / fj) * (
            (r + INFAP_EPSILON) / ((r + n) + 2 * INFAP_EPSILON)
        )
    terms = np.where(rl.pos == 0, 1.0, terms)
    return _div(rl.total(terms, rl.is_rel), rl.num_rel)


def bin_g(rl: RelLists) -> np.ndarray:
    """m_binG.c: sum over relevant documents of 1 / log2(2 + non-relevant above), / R."""
    terms = 1.0 / np.log2((3 + rl.pos - rl.rel_so_far).astype(np.float64))
    return _div(rl.total(terms, rl.is_rel), np.where(rl.num_rel_ret > 0, rl.num_rel, 0))


def _interpolated(rl: RelLists, q: int) -> tuple[np.ndarray, np.ndarray]:
    """(interpolated precision at each relevant row's rank, in rank order; precision at every rank)."""
    rel = rl.query(q) >= rl.rel_level
    prec = np.cumsum(rel) / np.arange(1.0, len(rel) + 1.0)
    interp = np.maximum.accumulate(prec[::-1])[::-1]
    return interp[rel], prec


def iprec_at_recall(rl: RelLists, levels: Sequence[float]) -> list[np.ndarray]:
    """m_iprec_at_recall.c: interpolated precision (max precision at this rank or below) at the rank of the
    t-th relevant document, t = lround(level * R); 0 when t > num_rel_ret; at t = 0, the precision the
    interpolation reaches at the first relevant document (0 if none was returned)."""
    out = [np.zeros(rl.n, dtype=np.float64) for _ in levels]
    for q in range(rl.n):
        nrr, R = int(rl.num_rel_ret[q]), int(rl.num_rel[q])
        if rl.num_ret[q] == 0:
            continue
        at_rel, _ = _interpolated(rl, q) if nrr else (np.zeros(0), None)
        for i, level in enumerate(levels):
            t = _lround(level * R)
            if t > nrr:
                continue
            out[i][q] = float(at_rel[max(t, 1) - 1]) if nrr else 0.0
    return out


def pt_avg(rl: RelLists, levels: Sequence[float]) -> np.ndarray:
    """m_11pt_avg.c: the interpolated precisions at ``levels`` summed from the highest level down, / count."""
    values = iprec_at_recall(rl, sorted(levels))
    total = np.zeros(rl.n, dtype=np.float64)
    for v in reversed(values):
        total = total + v
    return total / float(len(levels))


def _lround(x: float) -> int:
    """C's lround: to nearest, halves away from zero."""
    if x < 0:
        return -_lround(-x)
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


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
    """gain_init.c's setup_gains: a gain per grade (the grade itself unless ``pairs`` give one)."""

    pairs: tuple[tuple[int, float], ...] = ()

    def table(self, levels_row: np.ndarray) -> tuple[dict[int, float], list[tuple[float, int]]]:
        """(gain of each grade, every (gain, count) by gain ascending, as setup_gains sorts them)."""
        gains = dict(self.pairs)
        present = np.flatnonzero(levels_row)
        top = int(present[-1]) + 1 if len(present) else 0
        counts = {g: int(levels_row[g]) for g in range(top)}
        for g in range(top):
            gains.setdefault(g, float(g))
        ordered = sorted(((gain, counts.get(g, 0)) for g, gain in gains.items()), key=lambda t: t[0])
        return gains, ordered

    def row_gains(self, rel: np.ndarray, gains: dict[int, float]) -> list[float]:
        return [gains.get(r, 0.0) if r >= 0 else 0.0 for r in rel.tolist()]


class _Ideal:
    """The ideal ranking's gain rank by rank, as the C loops step through the sorted levels."""

    def __init__(self, levels: list[tuple[float, int]]):
        self.levels = levels
        self.cur = len(levels) - 1
        self.at = 0
        self.gain = levels[self.cur][0] if self.cur >= 0 else 0.0

    def step(self) -> float:
        self.at += 1
        while self.cur >= 0 and self.at > self.levels[self.cur][1]:
            self.at = 1
            self.cur -= 1
            self.gain = self.levels[self.cur][0] if self.cur >= 0 else 0.0
        return self.gain


def _log2(i: int) -> float:
    return math.log2(float(i + 2))


def ndcg(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_ndcg.c: DCG over every returned document / DCG of the ideal (0 when the ideal is 0)."""
    out = np.zeros(rl.n, dtype=np.float64)
    for q in range(rl.n):
        table, levels = gains.table(rl.levels[q])
        g = gains.row_gains(rl.query(q), table)
        ideal = _Ideal(levels)
        rd = idg = 0.0
        i = 0
        while i < len(g) and ideal.gain > 0.0:
            if g[i] != 0:
                rd += g[i] / _log2(i)
            if ideal.step() > 0.0:
                idg += ideal.gain / _log2(i)
            i += 1
        while i < len(g):
            if g[i] != 0:
                rd += g[i] / _log2(i)
            i += 1
        while ideal.gain > 0.0:
            if ideal.step() > 0.0:
                idg += ideal.gain / _log2(i)
            i += 1
        out[q] = rd / idg if idg > 0.0 else 0.0
    return out


def ndcg_cut(rl: RelLists, k: int) -> np.ndarray:
    """m_ndcg_cut.c: gains are the grades themselves; the ideal runs over grades >= 1."""
    g = np.where(rl.rel > 0, rl.rel, 0).astype(np.float64)
    terms = np.where(g > 0, g / np.log2(rl.pos + 2.0), 0.0)
    num = rl.total(terms, rl.pos < k)
    out = np.zeros(rl.n, dtype=np.float64)
    for q in range(rl.n):
        row = rl.levels[q]
        present = np.flatnonzero(row)
        cur = int(present[-1]) if len(present) else 0
        count = 0
        idg = 0.0
        i = 0
        while i < k:
            count += 1
            while cur > 0 and count > row[cur]:
                cur -= 1
                count = 1
            if cur == 0:
                break
            idg += float(cur) / math.log2(float(i + 2))
            i += 1
        out[q] = num[q] / idg if idg > 0.0 else num[q]
    return out


def ndcg_rel(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_ndcg_rel.c: nDCG averaged over the ranks of relevant (positive-gain) documents, each relevant
    document of the ideal that was not returned adding the final nDCG."""
    out = np.zeros(rl.n, dtype=np.float64)
    for q in range(rl.n):
        table, levels = gains.table(rl.levels[q])
        g = gains.row_gains(rl.query(q), table)
        ideal = _Ideal(levels)
        rd = idg = s = 0.0
        n_rel = n_rel_ret = 0
        i = 0
        while i < len(g) and ideal.gain > 0.0:
            if g[i] != 0:
                rd += g[i] / _log2(i)
            if ideal.step() > 0.0:
                n_rel += 1
                idg += ideal.gain / _log2(i)
            if g[i] > 0:
                s += rd / idg
                n_rel_ret += 1
            i += 1
        while i < len(g):
            if g[i] != 0:
                rd += g[i] / _log2(i)
            if g[i] > 0:
                s += rd / idg
                n_rel_ret += 1
            i += 1
        while ideal.gain > 0.0:
            if ideal.step() > 0.0:
                n_rel += 1
                idg += ideal.gain / _log2(i)
            i += 1
        with np.errstate(all="ignore"):
            s += float(n_rel - n_rel_ret) * rd / idg if idg != 0 else math.nan
        out[q] = s / n_rel if s > 0.0 else 0.0
    return out


def rndcg(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_Rndcg.c: nDCG taken where the ideal gain changes level (and at the end), averaged."""
    out = np.zeros(rl.n, dtype=np.float64)
    for q in range(rl.n):
        if rl.num_rel[q] == 0:
            continue
        table, levels = gains.table(rl.levels[q])
        g = gains.row_gains(rl.query(q), table)
        ideal = _Ideal(levels)
        old = ideal.gain
        rd = idg = s = 0.0
        changes = 0
        i = 0
        while i < len(g) and ideal.gain > 0.0:
            ideal.step()
            if old != ideal.gain:
                if idg > 0.0:
                    s += rd / idg
                    changes += 1
                old = ideal.gain
            if g[i] != 0:
                rd += g[i] / _log2(i)
            if ideal.gain > 0.0:
                idg += ideal.gain / _log2(i)
            i += 1
        if i < len(g):
            while i < len(g):
                if g[i] != 0:
                    rd += g[i] / _log2(i)
                i += 1
            if idg > 0.0:
                s += rd / idg
                changes += 1
        while ideal.gain > 0.0:
            ideal.step()
            if old != ideal.gain:
                if idg > 0.0:
                    s += rd / idg
                    changes += 1
                old = ideal.gain
            if ideal.gain > 0.0:
                idg += ideal.gain / _log2(i)
            i += 1
        out[q] = s / changes if changes else math.nan
    return out


def g_measure(rl: RelLists, gains: Gains) -> np.ndarray:
    """m_G.c: sum of gain / log2(2 + cost - gain so far), the cost counting max(ideal gain, 1) per rank,
    over the ideal's total gain."""
    out = np.zeros(rl.n, dtype=np.float64)
    for q in range(rl.n):
        table, levels = gains.table(rl.levels[q])
        g = gains.row_gains(rl.query(q), table)
        ideal = _Ideal(levels)
        res_g = got = ideal_sum = cost = 0.0
        i = 0
        while i < len(g) and ideal.gain > 0.0:
            got += g[i]
            if ideal.step() > 0.0:
                ideal_sum += ideal.gain
            cost += ideal.gain if ideal.gain >= 1.0 else 1.0
            if g[i] != 0:
                res_g += g[i] / math.log2(2 + cost - got)
            i += 1
        while i < len(g):
            got += g[i]
            cost += 1.0
            if g[i] != 0:
                res_g += g[i] / math.log2(2 + cost - got)
            i += 1
        while ideal.gain > 0.0:
            if ideal.step() > 0.0:
                ideal_sum += ideal.gain
            i += 1
        out[q] = res_g / ideal_sum if ideal_sum > 0.0 else 0.0
    return out


def rbp(rl: RelLists, p: float, gains: Gains) -> np.ndarray:
    """m_rbp.c: (1 - p) * sum of gain * p^i, gains scaled to 0..1 when any lies outside it."""
    out = np.zeros(rl.n, dtype=np.float64)
    weights = _powers(rl, p)
    for q in range(rl.n):
        table, _ = gains.table(rl.levels[q])
        lo, hi = min(table.values(), default=0.0), max(table.values(), default=0.0)
        if lo < 0 or hi > 1:
            table = {k: (v - lo) / (hi - lo) for k, v in table.items()}
        g = gains.row_gains(rl.query(q), table)
        w = weights[rl.offsets[q] : rl.offsets[q + 1]].tolist()
        total = 0.0
        for gi, wi in zip(g, w, strict=True):
            if gi != 0:
                total += gi * wi
        out[q] = (1.0 - p) * total
    return out


def rbp_resid(rl: RelLists, p: float) -> np.ndarray:
    """m_rbp_resid.c: p^n + (1 - p) * sum over unjudged ranks of p^i (0 when every document is judged)."""
    w = _powers(rl, p)
    unj = rl.rel < 0
    s = rl.total(np.where(unj, w, 0.0))
    tail = np.array([p**0] * rl.n, dtype=np.float64)
    for q in range(rl.n):
        c = 1.0
        for _ in range(int(rl.num_ret[q])):
            c = c * p
        tail[q] = c
    return np.where(rl.count(unj) > 0, tail + (1 - p) * s, 0.0)


def _powers(rl: RelLists, p: float) -> np.ndarray:
    """p^rank by repeated multiplication, as the C loop forms it."""
    top = int(rl.num_ret.max()) if rl.n else 0
    table = np.empty(top, dtype=np.float64)
    c = 1.0
    for i in range(top):
        table[i] = c
        c = c * p
    return table[rl.pos]


def relstring(rl: RelLists, length: int) -> list[str]:
    """m_relstring.c: the grades of the top documents as characters: 0-9, '>' above 9, '-' not judged,
    '.' judged with a negative grade."""
    out = []
    for q in range(rl.n):
        chars = []
        for r in rl.query(q)[: max(length, 0)].tolist():
            if r > 9:
                chars.append(">")
            elif r >= 0:
                chars.append(chr(48 + r))
            elif r == NONPOOL:
                chars.append("-")
            elif r == UNJUDGED:
                chars.append(".")
            else:
                chars.append("<")
        out.append("".join(chars))
    return out
