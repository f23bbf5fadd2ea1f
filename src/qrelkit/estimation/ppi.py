"""The four estimators of a mean from a model's per-query values and people's values on a random sample.

Notation: ``y`` the people's values on the sampled queries H (n of them), ``yhat`` the model's values on
the same queries, ``yhat_u`` the model's values on the other scored queries U (N of them).

- ``model``: the mean of the model's values over H and U, with its t-interval (biased by whatever bias
  the model's grades carry; shown for contrast);
- ``human``: the mean of ``y`` with its t-interval (``scipy.stats.t.interval``);
- ``ppi`` (Angelopoulos et al., Science 2023): ``mean(yhat_u) + mean(y - yhat)``, with the normal
  interval of the two independent parts, ``var(yhat_u)/N + var(y - yhat)/n``;
- ``ppi++`` (Angelopoulos, Duchi and Zrnic 2023): ``lam * mean(yhat_u) + mean(y - lam * yhat)``, with
  the power-tuning ``lam = cov(y, yhat) / ((1 + n/N) var(yhat over H and U))`` clipped to [0, 1], and
  the normal interval of ``lam^2 var(yhat_u)/N + var(y - lam yhat)/n``.

The variances of ``ppi`` and ``ppi++`` divide by the count (numpy's ``std``), ``cov(y, yhat)`` too and
``var(yhat over H and U)`` by the count less one, as ``ppi_py`` (``ppi_mean_ci``,
``ppi_mean_pointestimate``, ``ppi_mean_pval``) computes them: ``tests/crosscheck/test_ppi.py`` holds the
two to 1e-10. Where the model's values do not vary at all, ``lam`` is 0 (the model then carries no
information) instead of ``ppi_py``'s NaN.

The effective number of human-judged queries of an interval is how many queries a people-only estimate
would need for an interval as narrow: ``var(y) / se^2`` (``n`` itself for ``human``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._typing import DEFAULT_ESTIMATOR as _DEFAULT_ESTIMATOR
from .._typing import ESTIMATOR_CHOICES, Estimator

ESTIMATORS: tuple[str, ...] = ESTIMATOR_CHOICES
#: The estimator used when none is named.
DEFAULT_ESTIMATOR: Estimator = _DEFAULT_ESTIMATOR

#: ppi_py's floor on a standard error before a z statistic divides by it.
MIN_SE = 1e-16


@dataclass(frozen=True)
class Interval:
    """One estimator's estimate of a mean, with its interval and what it rests on."""

    estimator: str
    value: float
    low: float
    high: float
    se: float
    p_value: float  # of the null "the mean is 0" (two-sided): a difference's test
    lam: float | None  # the weight of the model's values (1 for ppi, tuned for ppi++)
    human_queries: int  # n = |H|
    unlabeled_queries: int  # N = |U|
    effective_human_queries: float | None  # var(y) / se^2; None for the model's mean

    def to_dict(self) -> dict[str, object]:
        from ..provenance import json_number as num

        return {
            "estimator": self.estimator,
            "value": num(self.value),
            "interval": [num(self.low), num(self.high)],
            "se": num(self.se),
            "p_value": num(self.p_value),
            "lambda": num(self.lam),
            "human_queries": self.human_queries,
            "unlabeled_queries": self.unlabeled_queries,
            "effective_human_queries": num(self.effective_human_queries),
        }


def power_lambda(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> float:
    """PPI++'s optimal ``lam`` for a mean, clipped to [0, 1] (0 when the model's values are constant)."""
    n, big_n = len(y), len(yhat_u)
    if big_n == 0:
        return 0.0
    cov = float(np.dot(y - y.mean(), yhat - yhat.mean())) / n
    var = float(np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    if not var > 0.0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _t_interval(values: np.ndarray, alpha: float) -> tuple[float, float, float, float, float]:
    """(mean, low, high, se, p of mean 0) of the t-interval."""
    from scipy import stats

    n = len(values)
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1)) / math.sqrt(n)
    if se == 0.0:
        return mean, mean, mean, 0.0, (1.0 if mean == 0.0 else 0.0)
    half = float(stats.t.ppf(1.0 - alpha / 2.0, n - 1)) * se
    p = float(2.0 * stats.t.sf(abs(mean / se), n - 1))
    return mean, mean - half, mean + half, se, min(p, 1.0)


def interval(
    estimator: str, y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, alpha: float = 0.05
) -> Interval:
    """One estimator's estimate of the people's mean over H and U (see the module docstring). ``y`` and
    ``yhat`` are aligned (one value per sampled query, in the same order) and hold at least two values."""
    from scipy import stats

    y, yhat, yhat_u = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_u))
    n, big_n = len(y), len(yhat_u)
    var_y = float(np.var(y))
    if estimator == "model":
        mean, low, high, se, p = _t_interval(np.concatenate([yhat, yhat_u]), alpha)
        return Interval("model", mean, low, high, se, p, None, n, big_n, None)
    if estimator == "human" or big_n == 0:
        mean, low, high, se, p = _t_interval(y, alpha)
        lam = None if estimator == "human" else 0.0
        return Interval(estimator, mean, low, high, se, p, lam, n, big_n, float(n))
    lam = 1.0 if estimator == "ppi" else power_lambda(y, yhat, yhat_u)
    rectifier = y - lam * yhat
    value = float((lam * yhat_u).mean() + rectifier.mean())
    se = math.sqrt(float((lam * yhat_u).std()) ** 2 / big_n + float(rectifier.std()) ** 2 / n)
    half = float(stats.norm.isf(alpha / 2.0)) * se
    p = float(2.0 * stats.norm.sf(abs(value) / max(se, MIN_SE)))
    effective = var_y / se**2 if se > 0.0 else math.inf
    return Interval(estimator, value, value - half, value + half, se, p, lam, n, big_n, effective)


@dataclass(frozen=True)
class HumanPower:
    """How many human-judged queries (of ``total`` scored ones) the estimator needs for its two-sided test
    at ``alpha`` to detect ``delta`` with probability ``power`` (normal approximation)."""

    estimator: str
    delta: float
    alpha: float
    power: float
    total: int  # |H| + |U|: the queries a sample can be drawn from
    correlation: float | None  # of people's and model's values on H (ppi++), capped at 1 - 1/n
    classical_queries: float | None  # n0: what a people-only estimate needs, unrounded
    needed_exact: float | None  # the unrounded number for the estimator (ppi++), None when unreachable
    queries_needed: int | None  # None: not reachable even by judging every query
    queries_now: int

    def to_dict(self) -> dict[str, object]:
        from ..provenance import json_number as num

        return {
            "estimator": self.estimator,
            "delta": num(self.delta),
            "alpha": self.alpha,
            "power": self.power,
            "queries_available": self.total,
            "correlation": num(self.correlation),
            "people_only_queries": num(self.classical_queries),
            "human_queries_needed": self.queries_needed,
            "human_queries_now": self.queries_now,
        }


def human_queries_needed(
    estimator: str,
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_u: np.ndarray,
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> HumanPower:
    """The human-judged queries the estimator needs to detect ``delta`` (see :class:`HumanPower`): the
    standard error must reach ``|delta| / (z_(1-alpha/2) + z_power)``.

    ``human``: ``n0 = var(y) / se*^2``. ``ppi++``: with the correlation ``rho`` of ``y`` and ``yhat`` (capped
    at ``1 - 1/n``, as ``ppi_py``), judging ``k`` of ``M`` queries gives the people-only precision of
    ``k M / (rho^2 k + (1 - rho^2) M)`` queries, so ``k = n0 M (1 - rho^2) / (M - rho^2 n0)``
    (``ppi_py.ppi_mean_power`` with ``n_max = M`` and free predictions). ``ppi``: the smallest ``k`` with
    ``var(y - yhat)/k + var(yhat_u)/(M - k)`` within reach. ``model``: none (its bias is not measured)."""
    from scipy import stats

    y, yhat, yhat_u = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_u))
    n, total = len(y), len(y) + len(yhat_u)
    target = abs(delta) / float(stats.norm.isf(alpha / 2.0) + stats.norm.ppf(power))
    unreachable = HumanPower(estimator, delta, alpha, power, total, None, None, None, None, n)
    if estimator == "model" or not target > 0.0 or not math.isfinite(target):
        return unreachable
    n0 = float(np.var(y)) / target**2
    if estimator == "human":
        k = max(2, math.ceil(n0))
        return HumanPower(estimator, delta, alpha, power, total, None, n0, n0, k if k <= total else None, n)
    if estimator == "ppi":
        var_r, var_u = float(np.var(y - yhat)), float(np.var(yhat_u))
        sizes = np.arange(2, total)
        fits = np.flatnonzero(var_r / sizes + var_u / (total - sizes) <= target**2)
        if not len(fits):
            return unreachable
        first = int(sizes[fits[0]])
        return HumanPower(estimator, delta, alpha, power, total, None, n0, float(first), first, n)
    sd_y, sd_hat = float(np.std(y)), float(np.std(yhat))
    rho = float(np.mean((y - y.mean()) * (yhat - yhat.mean()))) / (sd_y * sd_hat) if sd_y and sd_hat else 0.0
    rho = min(rho, 1.0 - 1.0 / n)
    if n0 > total:
        return HumanPower(estimator, delta, alpha, power, total, rho, n0, None, None, n)
    exact = n0 * total * (1.0 - rho**2) / (total - rho**2 * n0)
    k = max(2, math.ceil(exact))
    return HumanPower(estimator, delta, alpha, power, total, rho, n0, exact, k, n)
