"""Topic-set size for the paired t-test (Sakai 2016, "Topic set size design", Information Retrieval
Journal 19(3), 256-283; Sakai 2018, "Laboratory Experiments in Information Retrieval", chapter 6).

How many queries are needed so that the two-sided paired t-test at level ``alpha`` detects a true mean
difference ``delta`` with probability ``power``, when the per-query differences have standard deviation
``sd``? With ``n`` queries the statistic follows a noncentral t distribution with ``n - 1`` degrees of
freedom and noncentrality ``sqrt(n) * delta / sd``, so the power is::

    P(T > t_(1 - alpha/2, n-1)) + P(T < -t_(1 - alpha/2, n-1)),   T ~ nct(n - 1, sqrt(n) delta / sd)

and the topic-set size is the smallest ``n >= 2`` where it reaches ``power``. statsmodels'
``TTestPower().solve_power`` solves the same equation for a real ``n``; its ceiling is this ``n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Topic-set sizes above this are reported as not reachable (the difference is too small to detect).
MAX_QUERIES = 10_000_000


def power_at(n: int, effect_size: float, alpha: float) -> float:
    """The power of the two-sided paired t-test with ``n`` queries at standardised effect ``delta/sd``."""
    from scipy import stats

    if n < 2:
        return math.nan
    df = n - 1
    crit = float(stats.t.ppf(1.0 - alpha / 2.0, df))
    ncp = abs(effect_size) * math.sqrt(n)
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp))


def topic_set_size(effect_size: float, alpha: float, power: float = 0.8) -> int | None:
    """Smallest ``n >= 2`` with :func:`power_at` >= ``power``; ``None`` when the effect is 0, undefined,
    or needs more than :data:`MAX_QUERIES` queries."""
    if not math.isfinite(effect_size) or effect_size == 0.0:
        return None
    lo, hi = 1, 2
    while power_at(hi, effect_size, alpha) < power:
        lo, hi = hi, hi * 2
        if hi > MAX_QUERIES:
            return None
    while hi - lo > 1:  # power grows with n: lo fails (or is 1), hi succeeds
        mid = (lo + hi) // 2
        if power_at(mid, effect_size, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Power:
    """Topic-set size for one pair and measure."""

    delta: float  # the difference to detect: the observed one, or the one asked for
    delta_source: str  # "observed" or "given"
    sd: float  # standard deviation of the per-query differences
    alpha: float
    power: float  # the power asked for
    queries_needed: int | None
    queries_now: int
    power_now: float  # power of the test with the queries at hand

    def to_dict(self) -> dict[str, object]:
        from ..provenance import json_number as num

        return {
            "delta": num(self.delta),
            "delta_source": self.delta_source,
            "sd_of_differences": num(self.sd),
            "alpha": self.alpha,
            "power": self.power,
            "queries_needed": self.queries_needed,
            "queries_now": self.queries_now,
            "power_now": num(self.power_now),
        }


def power_analysis(
    delta: float, sd: float, n_now: int, alpha: float, power: float = 0.8, source: str = "observed"
) -> Power:
    es = delta / sd if sd > 0 else math.nan
    needed = topic_set_size(es, alpha, power) if math.isfinite(es) else None
    now = power_at(n_now, es, alpha) if math.isfinite(es) and es != 0 else math.nan
    return Power(delta, source, sd, alpha, power, needed, n_now, now)
