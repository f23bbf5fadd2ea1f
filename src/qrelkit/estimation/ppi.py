"""The four estimators of a mean from a model's per-query values and people's values on a random sample.

Notation: ``y`` the people's values on the sampled queries H (n of them), ``yhat`` the model's values on
the same queries, ``yhat_u`` the model's values on the other scored queries U (N of them).

- ``model``: the mean of the model's values over H and U, with its t-interval (biased by whatever bias
  the model's grades carry; shown for contrast);
- ``human``: the mean of ``y`` with its t-interval (``scipy.stats.t.interval``);
- ``ppi`` (Angelopoulos et al., Science 2023): ``mean(yhat_u) + mean(y - yhat)``, with the interval of
  the two independent parts, ``var(yhat_u)/N + var(y - yhat)/n``;
- ``ppi++`` (Angelopoulos, Duchi and Zrnic 2023): ``lam * mean(yhat_u) + mean(y - lam * yhat)``, with
  the power-tuning ``lam = cov(y, yhat) / ((1 + n/N) var(yhat over H and U))`` clipped to [0, 1], and
  the interval of ``lam^2 var(yhat_u)/N + var(y - lam yhat)/n``.

Two intervals for ``ppi`` and ``ppi++`` (``kind``):

- ``t`` (the default), the small-sample one: both variances divided by the count less one and the t
  quantile with n - 1 degrees of freedom (its p-value from the same t distribution). At the sizes people
  judge (10 to 30 queries) it covers at its level where ``normal`` falls short
  (``benchmarks/ppi_validity.py``, docs/prediction-powered.md);
- ``normal``, ``ppi_py``'s (``ppi_mean_ci``, ``ppi_mean_pointestimate``, ``ppi_mean_pval``): variances
  divided by the count (numpy's ``std``) and the normal quantile; ``tests/crosscheck/test_ppi.py`` holds
  the two to 1e-10.

Both share the point estimate and lambda: ``cov(y, yhat)`` divided by the count and ``var(yhat over H and
U)`` by the count less one, as ``ppi_py``. Where the model's values do not vary at all, ``lam`` is 0 (the
model then carries no information) instead of ``ppi_py``'s NaN.

An interval needs values that vary: when the people's values on H are all equal, or the residuals
``y - lam yhat`` the correction rests on are, the estimate is *not measurable* (``reason`` says why; the point
estimate is kept, the interval, standard error and p-value are NaN), never a zero-width interval; the same for ``human`` when ``y`` does not vary and for
``model`` when the model's values do not.

The effective number of human-judged queries of an interval is how many queries a people-only estimate
would need for an interval as narrow: ``var(y) / se^2`` (``n`` itself for ``human``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._typing import DEFAULT_ESTIMATOR as _DEFAULT_ESTIMATOR
from .._typing import DEFAULT_INTERVAL as _DEFAULT_INTERVAL
from .._typing import ESTIMATOR_CHOICES, INTERVAL_CHOICES, Estimator, IntervalKind

ESTIMATORS: tuple[str, ...] = ESTIMATOR_CHOICES
#: The estimator used when none is named.
DEFAULT_ESTIMATOR: Estimator = _DEFAULT_ESTIMATOR
INTERVALS: tuple[str, ...] = INTERVAL_CHOICES
#: The interval of ppi and ppi++ used when none is named.
DEFAULT_INTERVAL: IntervalKind = _DEFAULT_INTERVAL
#: What each interval is, in words (every output names the one used).
INTERVAL_NAMES = {
    "t": "small-sample: t quantile with |H| - 1 degrees of freedom, variances with ddof 1",
    "normal": "ppi_py's: normal quantile, variances with ddof 0",
}

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
    kind: str = DEFAULT_INTERVAL  # the interval of ppi and ppi++: "t" or "normal" (human and model: t)
    reason: str | None = None  # why the interval is not measurable (low, high, se, p NaN), else None

    @property
    def measurable(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, object]:
        from ..provenance import json_number as num

        return {
            "estimator": self.estimator,
            "value": num(self.value),
            "interval": None if self.reason else [num(self.low), num(self.high)],
            "interval_kind": self.kind if self.estimator in ("ppi", "ppi++") else "t",
            "reason": self.reason,
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


def _t_ppf(q: float, df: int) -> float:
    """``scipy.stats.t.ppf(q, df)`` (the same function, ``scipy.special.stdtrit``, without the distribution
    object's argument handling, which cost each interval 0.15 ms where a replay asks for thousands)."""
    from scipy import special

    return float(special.stdtrit(df, q))


def _t_sf(x: float, df: int) -> float:
    """``scipy.stats.t.sf(x, df)``: ``scipy.special.stdtr(df, -x)``, as scipy computes it."""
    from scipy import special

    return float(special.stdtr(df, -x))


def _t_interval(values: np.ndarray, alpha: float) -> tuple[float, float, float, float, float]:
    """(mean, low, high, se, p of mean 0) of the t-interval (``se`` > 0: the caller checks the values vary)."""
    n = len(values)
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1)) / math.sqrt(n)
    half = _t_ppf(1.0 - alpha / 2.0, n - 1) * se
    p = 2.0 * _t_sf(abs(mean / se), n - 1)
    return mean, mean - half, mean + half, se, min(p, 1.0)


def _varies(values: np.ndarray) -> bool:
    """Whether the values differ by more than the rounding of floating-point arithmetic."""
    if len(values) < 2:
        return False
    spread = float(np.max(values) - np.min(values))
    return spread > 1e-12 * max(1.0, float(np.max(np.abs(values))))


def _same(values: np.ndarray) -> str:
    return f"{float(values[0]):.4g}"


def not_measurable_reason(
    estimator: str, y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, lam: float | None
) -> str | None:
    """Why ``estimator`` has no interval on these values (see the module docstring), or None."""
    n = len(y)
    if estimator == "model":
        both = np.concatenate([yhat, yhat_u])
        if not _varies(both):
            return f"the model's values are all {_same(both)} on the {len(both)} queries: nothing varies to build an interval from"
        return None
    if not _varies(y):
        return f"the people's values are all {_same(y)} on the {n} human-judged queries: nothing varies to build an interval from"
    if estimator in ("ppi", "ppi++") and lam and not _varies(y - lam * yhat):
        return (f"the residuals (people's - {'' if lam == 1 else f'{lam:.3g} x '}model's values) do not vary on the "
                f"{n} human-judged queries: the correction's uncertainty cannot be estimated")  # fmt: skip
    return None


def interval(
    estimator: str,
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_u: np.ndarray,
    alpha: float = 0.05,
    kind: str = DEFAULT_INTERVAL,
) -> Interval:
    """One estimator's estimate of the people's mean over H and U (see the module docstring). ``y`` and
    ``yhat`` are aligned (one value per sampled query, in the same order) and hold at least two values.
    ``kind``: the interval of ``ppi`` and ``ppi++``, ``t`` (small-sample, the default) or ``normal``
    (``ppi_py``'s); ``human`` and ``model`` always take the t-interval."""
    from scipy import stats

    if kind not in INTERVALS:
        raise ValueError(f"interval kind {kind!r}: one of {', '.join(INTERVALS)}")
    y, yhat, yhat_u = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_u))
    n, big_n = len(y), len(yhat_u)
    var_y = float(np.var(y))
    nan = math.nan
    if estimator == "model":
        both = np.concatenate([yhat, yhat_u])
        reason = not_measurable_reason("model", y, yhat, yhat_u, None)
        if reason:
            return Interval(
                "model", float(both.mean()), nan, nan, nan, nan, None, n, big_n, None, kind, reason
            )
        mean, low, high, se, p = _t_interval(both, alpha)
        return Interval("model", mean, low, high, se, p, None, n, big_n, None, kind)
    if estimator == "human" or big_n == 0:
        lam0 = None if estimator == "human" else 0.0
        reason = not_measurable_reason("human", y, yhat, yhat_u, None)
        if reason:
            return Interval(
                estimator, float(y.mean()), nan, nan, nan, nan, lam0, n, big_n, None, kind, reason
            )
        mean, low, high, se, p = _t_interval(y, alpha)
        return Interval(estimator, mean, low, high, se, p, lam0, n, big_n, float(n), kind)
    lam = 1.0 if estimator == "ppi" else power_lambda(y, yhat, yhat_u)
    rectifier = y - lam * yhat
    value = float((lam * yhat_u).mean() + rectifier.mean())
    reason = not_measurable_reason(estimator, y, yhat, yhat_u, lam)
    if reason:
        return Interval(estimator, value, nan, nan, nan, nan, lam, n, big_n, None, kind, reason)
    ddof = 1 if kind == "t" else 0
    var_u = float(np.var(yhat_u, ddof=ddof)) if big_n > ddof else 0.0
    se = math.sqrt(lam**2 * var_u / big_n + float(np.var(rectifier, ddof=ddof)) / n)
    if kind == "t":
        half = _t_ppf(1.0 - alpha / 2.0, n - 1) * se
        p = 2.0 * _t_sf(abs(value) / max(se, MIN_SE), n - 1)
    else:
        half = float(stats.norm.isf(alpha / 2.0)) * se
        p = float(2.0 * stats.norm.sf(abs(value) / max(se, MIN_SE)))
    effective = var_y / se**2 if se > 0.0 else math.inf
    return Interval(
        estimator, value, value - half, value + half, se, min(p, 1.0), lam, n, big_n, effective, kind
    )


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
