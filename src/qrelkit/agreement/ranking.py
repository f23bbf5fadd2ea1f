"""Rank correlations of two orders of the same items: Kendall's tau-b, tau_AP, and their query bootstrap.

The items are scored, higher first (runs by a measure's mean under two sets of grades); an order is the
scores sorted descending. Two scores tie when they are equal as floats.

Kendall's tau-b (Kendall 1945; ``scipy.stats.kendalltau``'s default variant) of scores ``x`` and ``y``::

    tau_b = (C - D) / sqrt((P - T_x) (P - T_y))

``P = n (n - 1) / 2`` pairs, ``C`` and ``D`` the pairs ordered alike and oppositely, ``T_x`` and ``T_y``
the pairs tied in ``x`` and in ``y`` (a pair tied in either is neither concordant nor discordant).
Symmetric; identical orders give 1, ties included. Undefined (NaN) when either order ties every item
or there are fewer than two items.

tau_AP (Yilmaz, Aslam & Robertson 2008, "A new rank correlation coefficient for information retrieval",
SIGIR): one order is the truth, the other is walked from the top, and a mistake near the top costs more::

    tau_AP = 2 / (n - 1) * sum_{i=2..n} C(i) / (i - 1) - 1

``C(i)`` is the number of items above rank ``i`` in the walked order that the truth also puts above the
item at rank ``i``. It is not symmetric: :func:`tau_ap` ``(truth, other)`` scores ``other``'s order
against ``truth``'s, and :func:`tau_ap_symmetric` is the mean of both directions. Undefined (NaN) with
fewer than two items.

Ties in tau_AP. The paper assumes none. Here a tie is an order that is not known: tau_AP of scores with
ties is the mean of the paper's tau_AP over every way of ordering each tied group, in both orders, all
equally likely (its expectation under random tie-breaking). In closed form, for the item ``j`` with
``a_j`` items strictly above it in the walked order and ``t_j`` items in its tied group there (itself
included), its position is ``a_j + k`` with ``k`` uniform on ``1..t_j`` and the ``k - 1`` tied items
above it a random subset of the others; a pair tied in the truth is correct half the time. So::

    sum_{i} C(i) / (i - 1)  has expectation  sum_j [A_j H1_j + M_j H2_j / (t_j - 1)] / t_j
    H1_j = sum_{m} 1 / m,   H2_j = sum_{m} (m - a_j) / m,   m over max(a_j, 1) .. a_j + t_j - 1

with ``A_j`` the items strictly above ``j`` in the walked order and ``M_j`` its tied mates there, each
counted 1 if the truth puts it above ``j``, 1/2 if the truth ties them (the ``M_j`` term is 0 when
``t_j = 1``). Without ties this is the paper's formula term by term. With ties in the walked order only, it
is Urbano & Marrero's tau_AP,a (2017, "The treatment of ties in AP correlation", ICTIR). Unlike tau-b,
tau_AP does not read a tie as agreement: two identical orders with ties score below 1 (every item tied:
0), because each tied pair is ordered rightly only half of the time.

The intervals: :func:`rank_agreement` draws queries with replacement (agreement's query bootstrap,
:func:`qrelkit.agreement.resample.query_bootstrap`: ``numpy.random.default_rng(seed)``, queries in the
order given), sums each item's per-query values under both sets of grades over the drawn queries, and
takes the statistic of the two orders of the sums; the percentile interval of the resamples where it is
defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.errors import ValidationError
from qrelkit.provenance import json_number

from .resample import (
    INTERVAL_LEVEL,
    QUERY_BOOTSTRAP_RESAMPLES,
    QUERY_BOOTSTRAP_SEED,
    BootstrapInterval,
    query_bootstrap,
)

__all__ = [
    "MAX_ITEMS",
    "MAX_RESAMPLED_CELLS",
    "Flip",
    "RankAgreement",
    "RankCorrelation",
    "order_flips",
    "rank_agreement",
    "tau_ap",
    "tau_ap_batch",
    "tau_ap_symmetric",
    "tau_b",
    "tau_b_batch",
]

#: The most items (runs) ordered at once: every statistic looks at every pair, in each resample
#: (2,000 resamples of 1,000 items are two billion pair comparisons per statistic).
MAX_ITEMS = 1000
#: The most resampled sums held at once (resamples x items x 2, float64: 200 MB): ``--bootstrap`` times twice
#: the runs.
MAX_RESAMPLED_CELLS = 25_000_000
#: Pair comparisons held at once by the batched statistics (boolean arrays of this many cells, a few alive
#: at a time: small enough to stay in the processor's cache).
_CELLS = 1 << 20


def _check_scores(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValidationError(f"{what} must be one score per item", got=a.shape, fix="pass a 1-D sequence")
    if a.size > MAX_ITEMS:
        raise ValidationError(
            f"{what}: at most {MAX_ITEMS:,} items are ordered at once (every pair is compared in each "
            "resample)",
            got=a.size,
            fix=f"order at most {MAX_ITEMS:,} runs",
        )
    if np.isnan(a).any():
        raise ValidationError(f"{what} has an undefined (NaN) score", fix="score every item")
    return a


def _pair(x: Any, y: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    a, b = _check_scores(x, names[0]), _check_scores(y, names[1])
    if a.shape != b.shape:
        raise ValidationError(
            f"{names[0]} and {names[1]} score different numbers of items",
            got=(a.size, b.size),
            fix="one score per item in each, in the same item order",
        )
    return a, b


def _chunks(rows: int, n: int) -> list[slice]:
    step = max(1, _CELLS // max(n * n, 1))
    return [slice(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


def _above(x: np.ndarray) -> np.ndarray:
    """``x_u > x_j`` for each row: boolean, shape ``(rows, n, n)`` indexed ``[r, u, j]``."""
    return x[:, :, None] > x[:, None, :]


def _count(mask: np.ndarray, axis: Any) -> np.ndarray:
    return np.count_nonzero(mask, axis=axis)


def tau_b_batch(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``x`` with the same row of ``y`` (``(rows, n)`` arrays); NaN where
    undefined. Pair counts are integers; one division and one square root per row."""
    x, y = np.atleast_2d(np.asarray(x, np.float64)), np.atleast_2d(np.asarray(y, np.float64))
    rows, n = x.shape
    out = np.full(rows, math.nan)
    if n < 2:
        return out
    for part in _chunks(rows, n):
        gx, gy = _above(x[part]), _above(y[part])
        concordant = _count(gx & gy, (1, 2))  # x and y both put u above j: C
        discordant = _count(gx & gy.transpose(0, 2, 1), (1, 2))  # x puts u above j, y below: D
        nx, ny = _count(gx, (1, 2)), _count(gy, (1, 2))  # P - T_x, P - T_y
        with np.errstate(invalid="ignore", divide="ignore"):
            value = (concordant - discordant) / np.sqrt(nx.astype(np.float64) * ny)
        out[part] = np.where((nx > 0) & (ny > 0), value, math.nan)
    return out


def tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of two score vectors over the same items (module docstring); NaN when undefined."""
    a, b = _pair(x, y, ("x", "y"))
    return float(tau_b_batch(a[None], b[None])[0])


def _harmonic(n: int) -> np.ndarray:
    """``H[m] = sum_{i=1..m} 1/i`` for ``m = 0..n`` (``H[0] = 0``), summed once in order."""
    out = np.zeros(n + 1)
    np.cumsum(1.0 / np.arange(1, n + 1), out=out[1:])
    return out


def tau_ap_batch(truth: np.ndarray, other: np.ndarray) -> np.ndarray:
    """tau_AP of each row of ``other`` against the same row of ``truth`` (``(rows, n)`` arrays), ties as
    the module docstring says; NaN with fewer than two items."""
    truth, other = np.atleast_2d(np.asarray(truth, np.float64)), np.atleast_2d(np.asarray(other, np.float64))
    rows, n = truth.shape
    out = np.full(rows, math.nan)
    if n < 2:
        return out
    h = _harmonic(n)
    off_diagonal = ~np.eye(n, dtype=bool)
    for part in _chunks(rows, n):
        o, tr = other[part], truth[part]
        above = _above(o)  # [r, u, j]: u strictly above j in the walked order
        mates = (o[:, :, None] == o[:, None, :]) & off_diagonal  # u tied with j there
        truth_above = _above(tr)  # the truth puts u above j (credit 1)
        truth_tied = (tr[:, :, None] == tr[:, None, :]) & off_diagonal  # the truth ties them (credit 1/2)
        a = _count(above, 1)  # (r, n): items strictly above j
        t = _count(mates, 1) + 1
        a2 = 2 * _count(above & truth_above, 1) + _count(above & truth_tied, 1)  # 2 A_j
        m2 = 2 * _count(mates & truth_above, 1) + _count(mates & truth_tied, 1)  # 2 M_j
        start = np.maximum(a, 1)
        last = a + t - 1
        h1 = np.where(t == 1, np.where(a > 0, 1.0 / start, 0.0), h[last] - h[start - 1])
        h2 = (last - start + 1) - a * h1
        with np.errstate(invalid="ignore", divide="ignore"):
            tied = np.where(t > 1, m2 * h2 / np.maximum(t - 1, 1), 0.0)
        expected = ((a2 * h1 + tied) / (2.0 * t)).sum(axis=1)
        out[part] = 2.0 / (n - 1) * expected - 1.0
    return out


def tau_ap(truth: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray) -> float:
    """tau_AP of ``other``'s order scored against ``truth``'s (Yilmaz, Aslam & Robertson 2008), ties
    as the module docstring says; NaN with fewer than two items."""
    a, b = _pair(truth, other, ("truth", "other"))
    return float(tau_ap_batch(a[None], b[None])[0])


def tau_ap_symmetric(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """The mean of tau_AP in both directions: ``(tau_ap(x, y) + tau_ap(y, x)) / 2``."""
    a, b = _pair(x, y, ("x", "y"))
    return float((tau_ap_batch(a[None], b[None])[0] + tau_ap_batch(b[None], a[None])[0]) / 2.0)


# -- with intervals --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankCorrelation:
    """One rank correlation of two orders, with its query-bootstrap interval."""

    value: float
    interval: BootstrapInterval

    def to_dict(self) -> dict[str, Any]:
        b = self.interval
        return {
            "value": json_number(self.value),
            "interval": [json_number(b.low), json_number(b.high)],
            "level": b.level,
            "n_resamples": b.n_resamples,
            "seed": b.seed,
            "n_queries": b.n_queries,
            "n_undefined": b.n_undefined,
            "note": b.note,
            "method": b.method,
        }


@dataclass(frozen=True)
class RankAgreement:
    """Two orders of the same items (``truth``'s and ``other``'s): Kendall's tau-b, tau_AP of ``other``
    against ``truth`` and of ``truth`` against ``other``, and their mean, each with its interval; the
    number of items and of tied groups (of two or more items) in each order."""

    n_items: int
    kendall_tau: RankCorrelation
    tau_ap: RankCorrelation
    tau_ap_reverse: RankCorrelation
    tau_ap_symmetric: RankCorrelation
    tied_groups: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.n_items,
            "kendall_tau": self.kendall_tau.to_dict(),
            "tau_ap": self.tau_ap.to_dict(),
            "tau_ap_reverse": self.tau_ap_reverse.to_dict(),
            "tau_ap_symmetric": self.tau_ap_symmetric.to_dict(),
            "tied_groups": {"truth": self.tied_groups[0], "other": self.tied_groups[1]},
            "ties": "tau-b: a tie is neither concordant nor discordant; tau_AP: the mean over every "
            "ordering of the tied items (a tied pair is right half of the time)",
        }


def _tied_groups(x: np.ndarray) -> int:
    _, counts = np.unique(x, return_counts=True)
    return int((counts > 1).sum())


def rank_agreement(
    per_query_truth: np.ndarray,
    per_query_other: np.ndarray,
    *,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> RankAgreement:
    """The rank correlations of the items' orders by their sums over queries under two sets of grades.

    ``per_query_truth`` and ``per_query_other`` are ``(queries, items)`` arrays, the same queries and
    items in the same order: each item's value on each query (a run's nDCG@10) under the truth's grades
    and under the other's. The values are the statistics of the column sums (ordered as the means are;
    summed exactly, :func:`math.fsum`); each interval is the query bootstrap's, the same draws for every
    statistic (module docstring)."""
    x = np.asarray(per_query_truth, dtype=np.float64)
    y = np.asarray(per_query_other, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape:
        raise ValidationError(
            "the per-query values must be two (queries x items) arrays of one shape",
            got=(x.shape, y.shape),
            fix="align both on the same queries and items",
        )
    n_q, n = x.shape
    if n_resamples * 2 * n > MAX_RESAMPLED_CELLS:
        raise ValidationError(
            f"{n_resamples:,} resamples of {n:,} items hold {n_resamples * 2 * n:,} sums at once, more than "
            f"{MAX_RESAMPLED_CELLS:,}",
            got=n_resamples,
            fix=f"use at most {MAX_RESAMPLED_CELLS // (2 * max(n, 1)):,} resamples (--bootstrap), or fewer runs",
        )
    sums_x = _check_scores([math.fsum(c) for c in x.T.tolist()], "truth")
    sums_y = _check_scores([math.fsum(c) for c in y.T.tolist()], "other")
    pieces = np.concatenate([x, y], axis=1)

    def bootstrapped(
        statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], what: str
    ) -> BootstrapInterval:
        return query_bootstrap(
            pieces, lambda s: statistic(s[:, :n], s[:, n:]), n_resamples=n_resamples, seed=seed, level=level,
            weights=None, what=what,
        )  # fmt: skip

    def symmetric(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (tau_ap_batch(a, b) + tau_ap_batch(b, a)) / 2.0

    def reverse(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return tau_ap_batch(b, a)

    def one(statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], what: str) -> RankCorrelation:
        value = float(statistic(sums_x[None], sums_y[None])[0]) if n_q else math.nan
        return RankCorrelation(value, bootstrapped(statistic, what))

    return RankAgreement(
        n_items=n,
        kendall_tau=one(tau_b_batch, "Kendall's tau-b"),
        tau_ap=one(tau_ap_batch, "tau_AP"),
        tau_ap_reverse=one(reverse, "tau_AP"),
        tau_ap_symmetric=one(symmetric, "tau_AP"),
        tied_groups=(_tied_groups(sums_x), _tied_groups(sums_y)),
    )


# -- the pairs that change order -------------------------------------------------------------------------


@dataclass(frozen=True)
class Flip:
    """Two items ordered one way by the truth and the other way by the other order: ``first`` above
    ``second`` under the truth, below it under the other."""

    first: str
    second: str
    truth: tuple[float, float]
    other: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "above_under_truth": self.first,
            "below_under_truth": self.second,
            "truth": [json_number(v) for v in self.truth],
            "other": [json_number(v) for v in self.other],
        }


def order_flips(
    names: Sequence[str], truth: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray
) -> list[Flip]:
    """Every pair of items the two orders put strictly the opposite way round (a pair tied in either is
    no flip), the truth's higher item first; by the truth's order of the first item, then the second."""
    a, b = _pair(truth, other, ("truth", "other"))
    if len(names) != a.size:
        raise ValidationError("one name per item", got=(len(names), a.size), fix="name every item once")
    order = sorted(range(a.size), key=lambda i: (-a[i], names[i]))
    out = []
    for pos, i in enumerate(order):
        for j in order[pos + 1 :]:
            if a[i] > a[j] and b[i] < b[j]:
                out.append(Flip(names[i], names[j], (float(a[i]), float(a[j])), (float(b[i]), float(b[j]))))
    return out
