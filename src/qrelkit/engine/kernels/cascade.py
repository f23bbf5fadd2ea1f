"""Cascade measures: ERR@k and nERR@k (Chapelle et al. 2009, as gdeval.pl computes ERR), and RBP@k with
its residual (Moffat & Zobel 2008).

RBP is linear in per-position values, so its averaged ties take each position's weight p^(i-1) averaged
over its tied block (as trectools' ``average_ties`` does); the residual likewise.

A user scans the ranking top down and stops at a document of grade g with probability
R(g) = (2^g - 1) / 2^max_grade; ERR@k = sum over ranks i <= k of R_i / i * prod_{j < i} (1 - R_j). Unjudged
documents and grades <= 0 have R = 0. nERR@k divides by the ERR@k of the ideal ordering (every judged
document, or under ``ideal = "returned"`` the returned ones, by grade descending).

Averaged ties, exactly. Within a tied block of n rows (s rows before it, whose product of (1 - R) is P),
the row at block position t (1-based) contributes, in expectation over the n! orderings,
P / (s + t) * (1/n) * sum over rows x of R_x * M_{t-1}(the other rows),
where M_j(S) is the mean of prod_{y in T} (1 - R_y) over the j-element subsets T of S (the rows before x
within the block form a uniform random (t-1)-subset of the others). The product over the whole block, the
factor for every later row, does not depend on the order. M_j follows from the recurrence over the rows
of S, M_j(S + y) = ((|S| + 1 - j) M_j(S) + j (1 - R_y) M_{j-1}(S)) / (|S| + 1), a convex combination
(stable; no binomial coefficient is formed). Rows with equal R share one computation, so a block costs
O(distinct grades x n x min(n, k)).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ConventionError
from ...measures.conventions import Conventions
from ..encoding.encoded import Encoded, any_in_top, apply_no_relevant, block_mean, positions


def stop_probability(grade: np.ndarray, judged: np.ndarray | None, max_grade: int) -> np.ndarray:
    """R(g) = (2^g - 1) / 2^max_grade per row (0 for unjudged rows and grades <= 0)."""
    g = grade.astype(np.float64)
    live = g > 0 if judged is None else judged & (g > 0)
    if (g[live] > max_grade).any():
        bad = int(g[live][g[live] > max_grade][0])
        raise ConventionError(
            f"grade {bad} is above ERR's max_grade {max_grade}",
            fix=f"set max_grade to at least {bad} (--max-grade {bad}, or ERR(max_grade={bad})@k)",
        )
    return np.where(live, (np.exp2(np.where(live, g, 0.0)) - 1.0) / 2.0**max_grade, 0.0)


def _subset_means(values: np.ndarray, depth: int) -> np.ndarray:
    """M_j for j = 0..depth: the mean over j-subsets of ``values`` of the product of their members."""
    m = np.zeros(depth + 1)
    m[0] = 1.0
    j = np.arange(depth + 1, dtype=np.float64)
    for size, v in enumerate(values.tolist(), start=1):
        shifted = np.concatenate(([0.0], m[:-1]))
        m = np.where(j <= size, ((size - j) * m + j * v * shifted) / size, 0.0)
    return m


def _block_terms(r: np.ndarray, s: int, k: int | None) -> float:
    """Expected sum of R_x / rank * (product of (1 - R) of the block's earlier rows) over a tied block
    of stop probabilities ``r`` whose first row has rank s + 1 (the prefix product is applied outside)."""
    n = len(r)
    depth = n if k is None else min(n, k - s)
    if depth <= 0 or not (r > 0).any():
        return 0.0
    total = 0.0
    values, counts = np.unique(r, return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        if value == 0.0:
            continue
        rest = np.repeat(values, counts - (values == value))  # the block without one row of this value
        means = _subset_means(1.0 - rest, depth - 1)
        ranks = s + np.arange(1, depth + 1, dtype=np.float64)
        total += count * value * float(np.sum(means[:depth] / ranks))
    return total / n


def _running_products(keep: np.ndarray, offsets: np.ndarray, k: int | None) -> np.ndarray:
    """Per query, the product of ``keep`` over the rows ranked before each row (1 at the first), within
    the first k ranks (the rows beyond are left at 0): gdeval's running product ``p *= 1 - R``, one query
    at a time, so a query's value never depends on the queries beside it in the array (a sum of logs
    over the whole array did: the same query gave another last bit in another batch of queries). One
    vectorised step a rank."""
    decay = np.zeros(len(keep))
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    depth = int(lengths.max()) if len(lengths) else 0
    if k is not None:
        depth = min(depth, k)
    live = starts[lengths > 0]
    decay[live] = 1.0
    for j in range(1, depth):
        live = starts[lengths > j] + j
        decay[live] = decay[live - 1] * keep[live - 1]
    return decay


def _err_from_probabilities(enc: Encoded, r: np.ndarray, k: int | None) -> np.ndarray:
    qidx, pos = positions(enc)
    n_q = enc.n_queries
    if enc.block_starts is None:
        decay = _running_products(1.0 - r, enc.offsets, k)
        mask = np.ones(len(r), dtype=bool) if k is None else pos < k
        return np.bincount(qidx[mask], weights=(r * decay / (pos + 1.0))[mask], minlength=n_q).astype(float)
    out = np.zeros(n_q)
    starts = enc.block_starts
    ends = np.append(starts[1:], len(r))
    prefix = np.zeros(n_q)  # log of the product of (1 - R) over the blocks seen, per query
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        q = int(qidx[a])
        s = int(pos[a])
        if k is not None and s >= k:
            continue
        block = r[a:b]
        out[q] += math.exp(prefix[q]) * _block_terms(block, s, k)
        prefix[q] += float(np.sum(np.log1p(-block)))
    return out


def err(enc: Encoded, k: int | None, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(ERR@k per query, undefined mask: no judged document with grade > 0)."""
    r = stop_probability(enc.grade, enc.judged, conv.max_grade)
    values = _err_from_probabilities(enc, r, k)
    return apply_no_relevant(values, _nothing_relevant(enc, conv), conv)


def _nothing_relevant(enc: Encoded, conv: Conventions) -> np.ndarray:
    q_of = np.repeat(np.arange(enc.n_queries), np.diff(enc.judged_offsets))
    live = enc.judged_grade > 0
    stop_probability(enc.judged_grade, None, conv.max_grade)  # a grade above max_grade is an error
    return np.bincount(q_of[live], minlength=enc.n_queries) == 0


def ideal_err(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray:
    """ERR@k of the ideal ordering: grades descending (judged documents, or the returned ones)."""
    if conv.ideal == "judged":
        offsets, grade = enc.judged_offsets, enc.judged_grade
        r = stop_probability(grade, None, conv.max_grade)
    else:
        offsets, grade = enc.offsets, enc.grade
        r = stop_probability(grade, enc.judged, conv.max_grade)
    n = enc.n_queries
    q_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((-r, q_of))
    r_sorted = r[order]
    pos = np.arange(len(r_sorted), dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))
    decay = _running_products(1.0 - r_sorted, offsets, k)
    mask = np.ones(len(r_sorted), dtype=bool) if k is None else pos < k
    return np.bincount(q_of[mask], weights=(r_sorted * decay / (pos + 1.0))[mask], minlength=n).astype(float)


def nerr(enc: Encoded, k: int | None, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(nERR@k per query, undefined mask: the ideal ERR is 0)."""
    num = _err_from_probabilities(enc, stop_probability(enc.grade, enc.judged, conv.max_grade), k)
    den = ideal_err(enc, k, conv)
    undefined = den == 0
    values = np.where(undefined, 0.0, num / np.where(undefined, 1.0, den))
    return apply_no_relevant(values, undefined, conv)


def powers(p: float, exponent: np.ndarray) -> np.ndarray:
    """p^e for whole numbers e >= 0, by squaring, one multiplication after another exactly as numba's
    integer power (``p ** np.arange(n)`` in ranx's ``rank_biased_precision``) forms it:
    ``r = 1; while e: if e & 1: r *= a; e >>= 1; a *= a``."""
    e = np.asarray(exponent, dtype=np.int64)
    out = np.ones(len(e), dtype=np.float64)
    a = float(p)
    bit = 0
    top = int(e.max()) if len(e) else 0
    while top >> bit:
        odd = (e >> bit) & 1 == 1
        out[odd] *= a
        a *= a
        bit += 1
    return out


def _rbp_weights(enc: Encoded, k: int | None, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query of each row, p^(i-1) by :func:`powers`, rows within the cutoff); RBP multiplies the sum of
    its terms by (1 - p) once, as ranx's and trec_eval 10's code do."""
    qidx, pos = positions(enc)
    mask = np.ones(len(pos), dtype=bool) if k is None else pos < k
    return qidx, powers(p, pos), mask


def rbp(enc: Encoded, k: int | None, rel: int, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """(RBP@k per query, undefined mask: nothing judged relevant). A relevant document's gain follows
    ``rbp_gain``: 1, its grade, or (``scaled``, trec_eval 10's ``m_rbp.c``) its grade divided by the
    query's highest judged grade when that is above 1. m_rbp.c scales the gain table of grades 0 .. highest
    to 0..1 by its range when a gain lies outside it: (g - 0) / (highest - 0)."""
    qidx, weight, mask = _rbp_weights(enc, k, conv.persistence)
    hit = enc.judged & (enc.grade >= rel)
    q_of = np.repeat(np.arange(enc.n_queries), np.diff(enc.judged_offsets))
    if conv.rbp_gain == "binary":
        worth = np.ones(len(hit))
    elif conv.rbp_gain == "grade":
        worth = enc.grade.astype(np.float64)
    else:
        highest = np.ones(enc.n_queries)
        np.maximum.at(highest, q_of, enc.judged_grade.astype(np.float64))
        worth = enc.grade.astype(np.float64) / highest[qidx]
    value = block_mean(np.where(hit, worth, 0.0), enc) * weight
    values = (1.0 - conv.persistence) * np.bincount(
        qidx[mask], weights=value[mask], minlength=enc.n_queries
    ).astype(float)
    none = np.bincount(q_of[enc.judged_grade >= rel], minlength=enc.n_queries) == 0
    return apply_no_relevant(values, none, conv)


def rbp_resid(enc: Encoded, k: int | None, conv: Conventions) -> np.ndarray:
    """RBP's residual: the weight of the unjudged ranks within the depth, plus p^depth (depth: k, or
    without k the number of documents returned). Under ``rbp_residual=if_unjudged`` (trec_eval 10's
    ``m_rbp_resid.c``) p^depth is added only where a document within the depth is unjudged (the weight of
    the unjudged ranks is then 0 too); averaged ties take the probability of that (:func:`any_in_top`)."""
    p = conv.persistence
    qidx, weight, mask = _rbp_weights(enc, k, p)
    unjudged = block_mean((~enc.judged).astype(np.float64), enc) * weight
    out = (1.0 - p) * np.bincount(qidx[mask], weights=unjudged[mask], minlength=enc.n_queries).astype(float)
    depth = enc.counts if k is None else np.full(enc.n_queries, k)
    tail = powers(p, depth)
    if conv.rbp_residual == "if_unjudged":
        tail = tail * any_in_top(enc, ~enc.judged, k)
    return out + tail
