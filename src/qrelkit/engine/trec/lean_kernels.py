"""trec_eval 10's measures in plain Python: the lean engine of :mod:`qrelkit.engine.trec.registry`, beside
:mod:`qrelkit.engine.trec.kernels` (the numpy engine), kernel for kernel under the same names.

Each kernel computes over :class:`Lists` (the sparse ranked lists of
:class:`~qrelkit.engine.trec.kernels.RelLists`, a Python list per query, built by
:mod:`qrelkit.evaluation.trec_lean` from the native scanner's arrays) the arithmetic of its numpy namesake in
the same order (every sum in rank order, and the running sums of ``RelLists.prefix`` formed the way its grid
or its difference of one running sum forms them), so the floats are the same and so are the printed bytes.
Logarithms are ``math``'s here and the C library's on the numpy path too (:mod:`qrelkit.engine.trec.libm`), on
every machine. ``tests/property/test_trec_lean.py`` compares the two engines' floats and bytes.

Imports no numpy: ``qrelkit trec_eval``'s start-up on small files runs it.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from ...errors import StepAside

TYPE_CHECKING = False  # typing costs the lean path's start-up a few milliseconds
if TYPE_CHECKING:
    from typing import Any

NONPOOL, UNJUDGED, MIN_GEO_MEAN = -1, -2, 0.00001  # as engine/trec/kernels.py


# ------------------------------------------------------------------------------------------ the lists


class Lists:
    """The sparse lists of :class:`qrelkit.engine.trec.kernels.RelLists`, a list per query: ``pos`` (0-based
    ranks, ascending) and ``rel`` (codes) of the returned documents in the judgments."""

    def __init__(self, *, query_ids, name, ranked, num_ret, levels, rel_level, stand_in):
        self.query_ids, self.name, self.stand_in = query_ids, name, stand_in
        self.n = len(query_ids)
        self.pos = [[p for p, _ in rows] for rows in ranked]
        self.rel = [[r for _, r in rows] for rows in ranked]
        self.num_ret, self.levels, self.rel_level = num_ret, levels, rel_level
        cut = max(rel_level, 0)
        self.num_rel = [sum(row[cut:]) for row in levels]
        self.num_nonrel = [sum(row[:cut]) for row in levels]
        self.is_rel = [[r >= rel_level for r in rels] for rels in self.rel]
        self.rel_so_far = [_running(flags) for flags in self.is_rel]
        nonrel = [[r >= 0 and r < rel_level for r in rels] for rels in self.rel]
        self.nonrel_so_far = [_running(flags) for flags in nonrel]
        self.num_rel_ret = [run[-1] if run else 0 for run in self.rel_so_far]
        self.rows = sum(len(p) for p in self.pos)
        self._held: dict[Any, Any] = {}

    def rows_before(self, q: int, k: int) -> int:
        """Rows of query q in its first k ranks (RelLists.rows_before)."""
        return bisect_left(self.pos[q], min(max(k, 0), self.num_ret[q]))

    def hits(self, q: int, k: int) -> int:
        """Relevant rows in query q's first k ranks (``in_top(is_rel, k)``)."""
        j = self.rows_before(q, k)
        return self.rel_so_far[q][j - 1] if j > 0 else 0

    def prefix(self, terms: list[list[float]]) -> list[list[float]]:
        """RelLists.prefix: each query's running sums, added rank by rank within the query."""
        return _prefix(terms)

    def held(self, key: Any, make: Any) -> Any:
        if key not in self._held:
            self._held[key] = make()
        return self._held[key]

    @property
    def ap_prefix(self) -> list[list[float]]:
        return self.held("ap", lambda: self.prefix(self.ap_terms))

    @property
    def ap_terms(self) -> list[list[float]]:
        def terms(q: int) -> list[float]:
            return [
                s / (p + 1.0) if r else 0.0
                for s, p, r in zip(self.rel_so_far[q], self.pos[q], self.is_rel[q], strict=True)
            ]

        return self.held("ap_terms", lambda: [terms(q) for q in range(self.n)])

    @property
    def cut_dcg_prefix(self) -> list[list[float]]:
        def terms(q: int) -> list[float]:
            return [
                (float(r) / math.log2(p + 2.0)) if r > 0 else 0.0
                for r, p in zip(self.rel[q], self.pos[q], strict=True)
            ]

        return self.held("dcg", lambda: self.prefix([terms(q) for q in range(self.n)]))

    @property
    def cut_ideal(self) -> list[list[float]]:
        """ndcg_cut's ideal DCG prefix per query (_Ideal.dcg_prefix with the grades as gains)."""

        def make() -> list[list[float]]:
            top = len(self.levels[0])
            table = [float(g) for g in range(top)]
            return _ideal_prefix(self, table)

        return self.held("ideal", make)


def _running(flags: list[bool]) -> list[int]:
    out, c = [], 0
    for f in flags:
        c += f
        out.append(c)
    return out


def _prefix(terms: list[list[float]]) -> list[list[float]]:
    """Each query's running sum, added left to right from its first term (trec_kernels' prefix and
    _segment_cumsum: the C loop's ``sum += term``)."""
    out = []
    for t in terms:
        s, row = 0.0, list[float]()
        for v in t:
            s = s + v if row else v
            row.append(s)
        out.append(row)
    return out


def _ideal_order(table: list[float]) -> list[int]:
    return [g for g in sorted(range(len(table)), key=lambda g: -table[g]) if table[g] > 0]


def _ideal_gains(lists: Lists, table: list[float]) -> list[list[float]]:
    order = _ideal_order(table)
    return [[table[g] for g in order for _ in range(lists.levels[q][g])] for q in range(lists.n)]


def _ideal_prefix(lists: Lists, table: list[float]) -> list[list[float]]:
    gains = _ideal_gains(lists, table)
    terms = [[g / math.log2(p + 2.0) for p, g in enumerate(row)] for row in gains]
    return _prefix(terms)


def _div(num: float, den: float) -> float:
    return float(num) / float(den) if den != 0 else 0.0


def _at(prefix: list[float], j: int) -> float:
    return prefix[j - 1] if j > 0 else 0.0


# ------------------------------------------------------------------------------------------ measures


def num_ret(L: Lists) -> list[float]:
    return [float(v) for v in L.num_ret]


def num_rel(L: Lists) -> list[float]:
    return [float(v) for v in L.num_rel]


def num_rel_ret(L: Lists) -> list[float]:
    return [float(v) for v in L.num_rel_ret]


def num_nonrel_judged_ret(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        j = L.rows_before(q, L.num_ret[q])
        out.append(float(_at(L.nonrel_so_far[q], j)))
    return out


def ap(L: Lists, k: int | None = None) -> list[float]:
    """m_map.c (every relevant row's term, added in rank order) / m_map_cut.c (the running sum within k)."""
    if k is not None:
        return [_div(_at(L.ap_prefix[q], L.rows_before(q, k)), L.num_rel[q]) for q in range(L.n)]
    out = []
    for q in range(L.n):
        total = 0.0
        for t, r in zip(L.ap_terms[q], L.is_rel[q], strict=True):
            if r:
                total += t
        out.append(_div(total, L.num_rel[q]))
    return out


def gm_ap_log(L: Lists) -> list[float]:
    return [math.log(max(v, MIN_GEO_MEAN)) for v in ap(L)]


def rprec(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        look = min(L.num_ret[q], L.num_rel[q])
        out.append(_div(L.hits(q, look), 0 if look == 0 else L.num_rel[q]))
    return out


def recip_rank(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        first = next((p for p, r in zip(L.pos[q], L.is_rel[q], strict=True) if r), None)
        out.append(0.0 if first is None else 1.0 / (first + 1.0))
    return out


def precision(L: Lists, k: int) -> list[float]:
    return [L.hits(q, k) / float(k) for q in range(L.n)]


def recall(L: Lists, k: int) -> list[float]:
    return [_div(L.hits(q, k), L.num_rel[q]) for q in range(L.n)]


def relative_precision(L: Lists, k: int) -> list[float]:
    return [_div(L.hits(q, k), min(L.num_rel[q], k)) for q in range(L.n)]


def success(L: Lists, k: int) -> list[float]:
    return [1.0 if L.hits(q, k) > 0 else 0.0 for q in range(L.n)]


def unjudged(L: Lists, k: int) -> list[float]:
    out = []
    for q in range(L.n):
        shown = min(max(k, 0), L.num_ret[q])
        judged = sum(1 for p, r in zip(L.pos[q], L.rel[q], strict=True) if r >= 0 and p < k)
        out.append((shown - judged) / float(k))
    return out


def rprec_mult(L: Lists, mult: float) -> list[float]:
    out = []
    for q in range(L.n):
        cut = math.floor(mult * float(L.num_rel[q]) + 0.9)
        out.append(_div(L.hits(q, cut), cut))
    return out


def bpref(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        R, N = float(L.num_rel[q]), float(L.num_nonrel[q])
        total = 0.0
        for r, above in zip(L.is_rel[q], L.nonrel_so_far[q], strict=True):
            if r:
                total += 1.0 - min(float(above), R) / min(N, R) if above > 0 else 1.0
        out.append(_div(total, L.num_rel[q]))
    return out


def gm_bpref_log(L: Lists) -> list[float]:
    return [math.log(max(v, MIN_GEO_MEAN)) for v in bpref(L)]


def _interpolated(L: Lists, q: int) -> list[float]:
    """trec_kernels._interpolated_at_relevant for one query: the highest precision at or below each
    relevant rank."""
    prec = [s / (p + 1.0) for s, p, r in zip(L.rel_so_far[q], L.pos[q], L.is_rel[q], strict=True) if r]
    best = -1.0
    for i in range(len(prec) - 1, -1, -1):
        best = prec[i] if prec[i] > best else best
        prec[i] = best
    return prec


def _lround(x: float) -> int:
    if x >= 0:
        f = math.floor(x)
        return f + (x - f >= 0.5)
    f = math.floor(-x)
    return -f - (-x - f >= 0.5)


def iprec_at_recall(L: Lists, levels: list[float]) -> list[list[float]]:
    interp = [_interpolated(L, q) for q in range(L.n)]
    out = []
    for level in levels:
        values = []
        for q in range(L.n):
            nrr = L.num_rel_ret[q]
            t = _lround(level * float(L.num_rel[q]))
            values.append(interp[q][max(t, 1) - 1] if t <= nrr and nrr > 0 else 0.0)
        out.append(values)
    return out


def pt_avg(L: Lists, levels: list[float]) -> list[float]:
    values = iprec_at_recall(L, sorted(levels))
    out = []
    for q in range(L.n):
        total = 0.0
        for v in reversed(values):
            total = total + v[q]
        out.append(total / float(len(levels)))
    return out


def nan_on_empty(L: Lists, values: list[float], levels: list[float]) -> list[float]:
    """trec_kernels.nan_on_empty: NaN where nothing is returned and a level's cutoff rounds to 0."""
    out = []
    for q, v in enumerate(values):
        R = float(L.num_rel[q])
        empty = L.num_ret[q] == 0 and any(float(level) * R < 0.5 for level in levels)
        out.append(math.nan if empty else v)
    return out


def set_p(L: Lists) -> list[float]:
    return [_div(L.num_rel_ret[q], L.num_ret[q]) for q in range(L.n)]


def set_recall(L: Lists) -> list[float]:
    return [_div(L.num_rel_ret[q], L.num_rel[q]) for q in range(L.n)]


def set_relative_p(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        ret, rel = L.num_ret[q], L.num_rel[q]
        out.append(_div(L.num_rel_ret[q], min(ret, rel) if ret > 0 and rel > 0 else 0))
    return out


def set_map(L: Lists) -> list[float]:
    out = []
    for q in range(L.n):
        nrr = float(L.num_rel_ret[q])
        out.append(_div(nrr * nrr, float(L.num_ret[q]) * float(L.num_rel[q])))
    return out


def set_f(L: Lists, beta: float) -> list[float]:
    out = []
    for q in range(L.n):
        nrr = L.num_rel_ret[q]
        if nrr > 0:
            P = nrr / L.num_ret[q]
            R = nrr / L.num_rel[q]
            out.append((beta + 1.0) * P * R / (beta * P + R))
        else:
            out.append(0.0)
    return out


def utility(L: Lists, a: float, b: float, c: float, d: float, num_docs: int) -> list[float]:
    out = []
    for q in range(L.n):
        nrr, nret, R = L.num_rel_ret[q], L.num_ret[q], L.num_rel[q]
        out.append(a * nrr + b * (nret - nrr) + c * (R - nrr) + d * (num_docs + nrr - nret - R))
    return out


def ndcg_cut(L: Lists, k: int) -> list[float]:
    out = []
    for q in range(L.n):
        num = _at(L.cut_dcg_prefix[q], L.rows_before(q, k))
        ideal = L.cut_ideal[q]
        den = _at(ideal, min(k, len(ideal)))
        out.append(num / den if den > 0 else num)
    return out


def gains_of(pairs: tuple[tuple[int, float], ...]) -> tuple[tuple[int, float], ...]:
    """A measure's ``grade=gain`` pairs as this module's kernels take them (trec_kernels.Gains there)."""
    return pairs


def ndcg(L: Lists, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """m_ndcg.c with gain_init.c's gains (the grades, and any ``grade=gain`` given); a gain that is not
    finite steps aside."""
    table = _gain_table(L, gains)
    ideal = _ideal_gains(L, table)
    out = []
    for q in range(L.n):
        num = 0.0
        for r, p in zip(L.rel[q], L.pos[q], strict=True):
            g = table[r] if r >= 0 else 0.0
            num += g / math.log2(p + 2.0) if g != 0 else 0.0
        den = 0.0
        for p, g in enumerate(ideal[q]):
            den += g / math.log2(p + 2.0)
        out.append(_div(num, den))
    return out


def relstring(L: Lists, length: int) -> list[str]:
    width = max(length, 0)
    out = []
    for q in range(L.n):
        chars = ["-"] * min(L.num_ret[q], width)
        for p, r in zip(L.pos[q], L.rel[q], strict=True):
            if p < len(chars):
                chars[p] = ">" if r > 9 else str(r) if r >= 0 else "." if r == UNJUDGED else "<"
        out.append("".join(chars))
    return out


# ------------------------------------------------------------------ measures of the graded and inferred kind


def _quotient(num: float, den: float) -> float:
    """num / den where numpy's division gives a finite number; a division by 0 (numpy's inf or NaN) steps
    aside to the numpy engine, which carries it as C does."""
    if den == 0:
        raise StepAside
    return num / den


def _running_sums(terms: list[list[float]]) -> list[list[float]]:
    """trec_kernels._segment_cumsum: each query's running sum."""
    return _prefix(terms)


def _gain_table(L: Lists, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """trec_kernels.Gains.table over grades 0 .. the highest judged; a gain that is not finite steps aside."""
    top = len(L.levels[0])
    table = [float(g) for g in range(top)]
    for grade, value in gains:
        if not math.isfinite(value):
            raise StepAside
        if 0 <= grade < top:
            table[grade] = value
    return table


def _row_gains(L: Lists, table: list[float]) -> list[list[float]]:
    """trec_kernels.Gains.of_rows: each row's gain (0 for a document judged with a negative grade)."""
    return [[table[r] if r >= 0 else 0.0 for r in rels] for rels in L.rel]


def _dcg_terms(L: Lists, rows: list[list[float]]) -> list[list[float]]:
    return [
        [g / math.log2(p + 2.0) if g != 0 else 0.0 for g, p in zip(gs, L.pos[q], strict=True)]
        for q, gs in enumerate(rows)
    ]


def _ideal_terms(ideal: list[list[float]]) -> list[list[float]]:
    return [[g / math.log2(p + 2.0) for p, g in enumerate(row)] for row in ideal]


def infap(L: Lists) -> list[float]:
    """m_infap.c, as trec_kernels.infap: a term per relevant row, from the relevant, judged non-relevant
    and judged-negative rows above it."""
    eps = 0.00001  # trec_eval.h's INFAP_EPSILON
    out = []
    for q in range(L.n):
        total, unj = 0.0, 0
        for p, code, r, above, nonrel in zip(
            L.pos[q], L.rel[q], L.is_rel[q], L.rel_so_far[q], L.nonrel_so_far[q], strict=True
        ):
            if code == UNJUDGED:
                unj += 1
            if not r:
                continue
            if p == 0:
                total += 1.0
                continue
            fj = float(p)
            rr = above - 1
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rr + nonrel + unj) / fj) * (
                (rr + eps) / ((rr + nonrel) + 2 * eps)
            )
        out.append(_div(total, L.num_rel[q]))
    return out


def bin_g(L: Lists) -> list[float]:
    """m_binG.c: 1 / log2(2 + non-relevant above) per relevant row, / R (0 when none was returned)."""
    out = []
    for q in range(L.n):
        total = 0.0
        for p, r, above in zip(L.pos[q], L.is_rel[q], L.rel_so_far[q], strict=True):
            if r:
                total += 1.0 / math.log2(3 + p - above)
        out.append(_div(total, L.num_rel[q] if L.num_rel_ret[q] > 0 else 0))
    return out


def g_measure(L: Lists, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """m_G.c, as trec_kernels.g_measure on the sparse lists (the cost through a rank from the ideal's running
    costs); gains that are not whole numbers step aside (the numpy engine sums them rank by rank)."""
    table = _gain_table(L, gains)
    if any(v != math.floor(v) for v in table):
        raise StepAside
    ideal = _ideal_gains(L, table)
    icum = _running_sums([[max(g, 1.0) for g in row] for row in ideal])
    got = _running_sums(_row_gains(L, table))
    out = []
    for q in range(L.n):
        length = len(ideal[q])
        total = 0.0
        for p, r, have in zip(L.pos[q], L.rel[q], got[q], strict=True):
            g = table[r] if r >= 0 else 0.0
            if g == 0:
                continue
            cost = icum[q][min(p, length - 1)] if length > 0 else 0.0
            cost = cost + max(p - length + 1, 0)
            x = 2.0 + cost - have
            if not x > 1.0:
                raise StepAside  # a logarithm of 0 or below, or a division by 0: the numpy engine's
            total += g / math.log2(x)
        whole = 0.0
        for g in ideal[q]:
            whole += g
        out.append(_div(total, whole))
    return out


def ndcg_rel(L: Lists, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """m_ndcg_rel.c, as trec_kernels.ndcg_rel: nDCG at each returned positive-gain row, plus the final nDCG
    once per positive-gain document of the ideal that was not returned, over the ideal's length."""
    table = _gain_table(L, gains)
    rows = _row_gains(L, table)
    ideal = _ideal_gains(L, table)
    dcg = _running_sums(_dcg_terms(L, rows))
    idcg = _running_sums(_ideal_terms(ideal))
    out = []
    for q in range(L.n):
        length = len(ideal[q])
        total, hits = 0.0, 0
        for p, g, d in zip(L.pos[q], rows[q], dcg[q], strict=True):
            if g > 0:
                hits += 1
                j = min(p + 1, length)
                total += _quotient(d, _at(idcg[q], j))
        missed = float(length - hits) * _at(dcg[q], len(dcg[q]))
        if length == 0 and missed == 0:  # numpy's 0 / 0: NaN, which is not above 0
            out.append(0.0)
            continue
        total = total + _quotient(missed, _at(idcg[q], length))
        out.append(total / (length if length > 0 else 1) if total > 0 else 0.0)
    return out


def rndcg(L: Lists, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """m_Rndcg.c, as trec_kernels.rndcg: nDCG at each rank where the ideal gain changes level, plus the final
    nDCG when more than L + 1 documents were returned, averaged; 0 when nothing is relevant."""
    table = _gain_table(L, gains)
    ideal = _ideal_gains(L, table)
    dcg = _running_sums(_dcg_terms(L, _row_gains(L, table)))
    idcg = _running_sums(_ideal_terms(ideal))
    out = []
    for q in range(L.n):
        if L.num_rel[q] == 0:
            out.append(0.0)
            continue
        row, length = ideal[q], len(ideal[q])
        total, count = 0.0, 0
        for i, g in enumerate(row):
            if i == length - 1 or row[i + 1] != g:
                j = i + 1
                total += _quotient(_at(dcg[q], L.rows_before(q, j)), _at(idcg[q], j))
                count += 1
        if L.num_ret[q] > length + 1:
            total += _quotient(_at(dcg[q], len(dcg[q])), _at(idcg[q], length))
            count += 1
        out.append(_quotient(total, count))
    return out


def _powers(L: Lists, p: float) -> list[float]:
    """p^i for i = 0 .. the longest ranking, by repeated multiplication (trec_kernels._powers)."""
    top = max(L.num_ret, default=0) + 1
    out, c = [], 1.0
    for _ in range(top):
        out.append(c)
        c = c * p
    return out


def rbp(L: Lists, p: float, gains: tuple[tuple[int, float], ...]) -> list[float]:
    """m_rbp.c as trec_kernels.rbp: (1 - p) * the sum of gain * p^rank, the gains scaled to 0..1 by their
    range on a query whose gains lie outside it."""
    table = _gain_table(L, gains)
    top = len(table)
    given = {g for g, _ in gains}
    extra = [v for g, v in gains if not 0 <= g < top]
    powers = _powers(L, p)
    out = []
    for q in range(L.n):
        highest = max((g for g in range(top) if L.levels[q][g] > 0), default=-1)
        lo = min(extra, default=math.inf)
        hi = max(extra, default=-math.inf)
        for grade in range(top):
            if highest >= grade or grade in given:
                lo = min(lo, table[grade])
                hi = max(hi, table[grade])
        scale = lo < 0 or hi > 1
        total = 0.0
        for r, pos in zip(L.rel[q], L.pos[q], strict=True):
            g = table[r] if r >= 0 else 0.0
            if scale and r >= 0:
                g = _quotient(g - lo, hi - lo)
            if g != 0:
                total += g * powers[pos]
        out.append((1.0 - p) * total)
    return out


def rbp_resid(L: Lists, p: float) -> list[float]:
    """m_rbp_resid.c as trec_kernels.rbp_resid: p^n + (1 - p) * the sum of p^rank over the ranks not judged
    (added in rank order); 0 when every returned document is judged."""
    powers = _powers(L, p)
    out = []
    for q in range(L.n):
        n = L.num_ret[q]
        judged = [pos for pos, r in zip(L.pos[q], L.rel[q], strict=True) if r >= 0 and pos < n]
        if len(judged) >= n:
            out.append(0.0)
            continue
        s, started, start = 0.0, False, 0
        for stop in [*judged, n]:
            for v in powers[start:stop]:
                s = s + v if started else v
                started = True
            start = stop + 1
        out.append(powers[n] + (1 - p) * s)
    return out
