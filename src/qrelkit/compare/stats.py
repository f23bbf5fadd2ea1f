"""The statistics behind ``qrelkit compare``: paired tests, intervals, corrections, ANOVA and Tukey HSD.

Everything here works on arrays of per-query values; nothing reads files or knows about runs.

Deciding ties exactly
---------------------
Per-query values are discrete (a recall is k/R, an nDCG a ratio of sums of gains over logarithms), so the
statistic of a permuted sample often equals the observed one in exact arithmetic while the two float
sums differ in the last bits: 1/3 - 0 is 0.3333333333333333 but 2/3 - 1/3 is 0.33333333333333337. A bare
float ``>=`` then decides such ties by rounding noise, and the p-value moves with the order of a sum.

qrelkit compares with a tolerance derived from error bounds, never a bare ``>=``. For per-query values
``a_i`` and ``b_i`` with differences ``d_i = b_i - a_i``, every signed sum ``T = sum_i s_i d_i`` is
computed, in any summation order (BLAS, meet-in-the-middle halves, a plain loop), with an error of at
most ``gamma_(n+2) * sum_i |d_i|`` (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
eq. 4.4; ``gamma_k = k u / (1 - k u)``, ``u = 2^-53``), and the values themselves carry an error of at most
``rho * max(|a_i|, |b_i|)`` each, with ``rho = 2^-40`` (:data:`VALUE_ACCURACY`: the kernels' values are
sums of at most a few thousand terms, accurate to about 1e-13; 2^-40 is about 9e-13). Two statistics
whose exact values are equal therefore differ by at most::

    tol = 2 gamma_(n+2) sum_i |d_i| + 2 rho sum_i max(|a_i|, |b_i|)

and a permuted statistic counts as at least as extreme as the observed one when
``|T_perm| >= |T_obs| - tol``. A genuine tie is never missed; a permuted statistic that is smaller by
less than ``tol`` (far below any difference two measure values can show) is counted as a tie, which can
only raise the p-value. The same tolerance decides which differences are zero (``|d_i| <= tol_i`` with
``tol_i = 2 u |d_i| + 2 rho max(|a_i|, |b_i|)``), which absolute differences tie in the Wilcoxon ranks,
and the ties of the bootstrap and randomised Tukey tests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

# the random draws live in the one resampling module; re-exported here for the callers of this module
from ..agreement.resample import (  # noqa: F401
    BLOCK,
    STREAM_BOOTSTRAP,
    STREAM_NOISE_BOOT,
    STREAM_NOISE_SIM,
    STREAM_SIGNS,
    STREAM_TUKEY,
    bootstrap_means,
    rng_for,
    sign_blocks,
    tukey_keys,
)

U = 2.0**-53
#: Relative accuracy assumed of each per-query value (see the module docstring).
VALUE_ACCURACY = 2.0**-40
#: Cells (trials x queries x systems) of random keys the randomised Tukey HSD holds at once.
TUKEY_CELLS = 4_000_000
#: Largest number of non-zero differences enumerated exactly (2^40 sign vectors, met in the middle).
EXACT_LIMIT = 40

Correction = Literal["holm", "bonferroni", "bh", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def _gamma(k: int) -> float:
    return k * U / (1.0 - k * U)


def sum_tolerance(a: np.ndarray, b: np.ndarray) -> float:
    """``tol`` of the module docstring for the signed sums of ``b - a``."""
    d = b - a
    return 2.0 * _gamma(len(d) + 2) * float(np.abs(d).sum()) + 2.0 * VALUE_ACCURACY * float(
        np.maximum(np.abs(a), np.abs(b)).sum()
    )


def value_tolerance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per query: below this, ``b - a`` is zero (the two values are equal up to their error bounds)."""
    return 2.0 * U * np.abs(b - a) + 2.0 * VALUE_ACCURACY * np.maximum(np.abs(a), np.abs(b))


def snapped_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b - a`` with the differences that are zero up to their error bounds set to exactly 0."""
    d = b - a
    return np.where(np.abs(d) <= value_tolerance(a, b), 0.0, d)


# -- paired t --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedT:
    """The paired t-test of mean(d) = 0 and the t-interval of the mean difference."""

    statistic: float
    p_value: float
    df: int
    mean: float
    sd: float  # of the per-query differences (n - 1 in the denominator)
    ci_low: float
    ci_high: float
    effect_size: float  # mean / sd (Cohen's d_z; Sakai's standardised mean difference for paired data)


def paired_t(d: np.ndarray, level: float = 0.95) -> PairedT:
    """``scipy.stats.ttest_rel(b, a)`` for ``d = b - a``, with the ``level`` t-interval of the mean.

    With every difference zero the statistic is undefined and the p-value is 1 (scipy returns NaN); with
    a constant non-zero difference it is infinite and the p-value 0, as in scipy."""
    from scipy import stats

    n = len(d)
    mean = float(np.mean(d)) if n else math.nan
    if n < 2:
        return PairedT(math.nan, math.nan, max(n - 1, 0), mean, math.nan, math.nan, math.nan, math.nan)
    sd = float(np.std(d, ddof=1))
    df = n - 1
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * sd / math.sqrt(n)
    if sd == 0.0:
        stat = math.nan if mean == 0.0 else math.copysign(math.inf, mean)
        p = 1.0 if mean == 0.0 else 0.0
        es = math.nan if mean == 0.0 else math.copysign(math.inf, mean)
        return PairedT(stat, p, df, mean, sd, mean, mean, es)
    stat = mean / (sd / math.sqrt(n))
    p = float(2.0 * stats.t.sf(abs(stat), df))
    return PairedT(stat, min(p, 1.0), df, mean, sd, mean - half, mean + half, mean / sd)


# -- Wilcoxon signed-rank ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wilcoxon:
    """The Wilcoxon signed-rank test as ``scipy.stats.wilcoxon(d, zero_method="wilcox",
    correction=False, method=method)``: zeros dropped, no continuity correction; ``method`` is
    ``"exact"`` when at most 50 non-zero differences remain and no absolute differences tie, else
    ``"asymptotic"`` (the normal approximation with the tie-corrected variance)."""

    statistic: float  # min(R+, R-)
    p_value: float
    method: str
    n_nonzero: int
    r_plus: float
    r_minus: float


def _tie_groups(sorted_abs: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Group ids for ascending values, a new group where the gap exceeds both values' tolerances."""
    if len(sorted_abs) == 0:
        return np.zeros(0, dtype=np.int64)
    gaps = np.diff(sorted_abs) > (tol[1:] + tol[:-1])
    return np.concatenate([[0], np.cumsum(gaps)])


def _wilcoxon_exact_counts(n: int) -> np.ndarray:
    """Number of subsets of {1..n} with each sum 0..n(n+1)/2 (the null distribution of R+)."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.float64)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return counts


def wilcoxon(a: np.ndarray, b: np.ndarray) -> Wilcoxon:
    """Wilcoxon signed-rank test of ``b - a`` (see :class:`Wilcoxon` for the options it follows)."""
    from scipy import stats

    d = b - a
    tol = value_tolerance(a, b)
    keep = np.abs(d) > tol
    d, tol = d[keep], tol[keep]
    n = len(d)
    if n == 0:
        return Wilcoxon(math.nan, 1.0, "none", 0, 0.0, 0.0)
    order = np.argsort(np.abs(d), kind="stable")
    groups = _tie_groups(np.abs(d)[order], (tol + 2.0 * U * np.abs(d))[order])
    positions = np.arange(1, n + 1, dtype=np.float64)
    sums = np.bincount(groups, weights=positions)
    sizes = np.bincount(groups).astype(np.float64)
    ranks = np.empty(n)
    ranks[order] = (sums / sizes)[groups]
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    ties = bool((sizes > 1).any())
    if n <= 50 and not ties:
        counts = _wilcoxon_exact_counts(n)
        total = 2.0**n
        k = round(r_plus)
        p = 2.0 * min(counts[k:].sum(), counts[: k + 1].sum()) / total
        return Wilcoxon(min(r_plus, r_minus), float(min(p, 1.0)), "exact", n, r_plus, r_minus)
    mean = n * (n + 1) / 4.0
    var = (n * (n + 1) * (2 * n + 1) - float((sizes**3 - sizes).sum()) / 2.0) / 24.0
    z = (r_plus - mean) / math.sqrt(var)
    p = float(2.0 * stats.norm.sf(abs(z)))
    return Wilcoxon(min(r_plus, r_minus), min(p, 1.0), "asymptotic", n, r_plus, r_minus)


# -- randomisation (sign-flip) test ----------------------------------------------------------------------


def _signed_sums(x: np.ndarray) -> np.ndarray:
    """All 2^k sums sum_i s_i x_i, s in {+1, -1}^k."""
    sums = np.zeros(1)
    for v in x:
        sums = np.concatenate([sums + v, sums - v])
    return sums


def sign_flip_exact(d: np.ndarray, tol: float) -> tuple[int, int]:
    """(sign vectors at least as extreme as the observed one, 2^k) over the k non-zero differences of
    ``d``, by meeting in the middle: the signed sums of each half, one half sorted, counted with
    ``searchsorted``. Two-sided: ``|T| >= |T_obs| - tol``."""
    x = d[d != 0.0]
    k = len(x)
    total = 1 << k
    threshold = abs(float(x.sum())) - tol
    if threshold <= 0.0:
        return total, total
    h = k // 2
    left = _signed_sums(x[:h])
    right = np.sort(_signed_sums(x[h:]))
    upper = len(right) - np.searchsorted(right, threshold - left, side="left")
    lower = np.searchsorted(right, -threshold - left, side="right")
    return int(upper.sum() + lower.sum()), total


def sign_flip_monte_carlo(
    differences: np.ndarray, tolerances: np.ndarray, permutations: int, seed: int
) -> np.ndarray:
    """Monte Carlo sign-flip p-values, one per column of ``differences`` (queries x columns; a query not
    in a column's pair has difference 0 there, which no sign changes). The same sign vectors serve every
    column: each column's test is a valid randomisation test on its own. p = (c + 1) / (B + 1)."""
    n, cols = differences.shape
    threshold = np.abs(differences.sum(axis=0)) - tolerances
    counts = np.zeros(cols, dtype=np.int64)
    for _rows, signs in sign_blocks(seed, n, permutations):
        counts += (np.abs(signs @ differences) >= threshold).sum(axis=0)
    return (counts + 1.0) / (permutations + 1.0)


# -- paired bootstrap ------------------------------------------------------------------------------------


def percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval (numpy's default linear interpolation) of bootstrap means."""
    lo, hi = np.quantile(means, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return float(lo), float(hi)


def bootstrap_p(means: np.ndarray, observed: float, tol: float) -> float:
    """Two-sided p-value of the shifted bootstrap test of mean(d) = 0 (Efron & Tibshirani 1993, 16.4):
    the share of resampled means, centred on the observed mean, at least as far from 0 as the observed
    mean. p = (c + 1) / (B + 1)."""
    centred = np.abs(means - observed)
    count = int((centred >= abs(observed) - tol).sum())
    return (count + 1.0) / (len(means) + 1.0)


# -- multiple-comparison corrections ----------------------------------------------------------------------


def adjust(p_values: np.ndarray, method: Correction) -> np.ndarray:
    """Adjusted p-values over one family, as ``statsmodels.stats.multitest.multipletests`` gives them
    (``holm``, ``bonferroni``, ``fdr_bh`` for ``bh``); NaN p-values stay NaN and are not in the family."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, math.nan)
    ok = ~np.isnan(p)
    x = p[ok]
    m = len(x)
    if m == 0:
        return out
    if method == "none":
        adj = x.copy()
    elif method == "bonferroni":
        adj = np.minimum(x * m, 1.0)
    elif method == "holm":
        order = np.argsort(x, kind="stable")
        stepped = np.minimum(np.maximum.accumulate(x[order] * (m - np.arange(m))), 1.0)
        adj = np.empty(m)
        adj[order] = stepped
    elif method == "bh":
        order = np.argsort(x, kind="stable")
        scaled = x[order] * m / np.arange(1, m + 1)
        stepped = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
        adj = np.empty(m)
        adj[order] = stepped
    else:
        raise ValueError(method)
    out[ok] = adj
    return out


# -- two-way ANOVA without replication, Tukey HSD, randomised Tukey HSD ----------------------------------


@dataclass(frozen=True)
class Anova:
    """Two-way ANOVA without replication of a (queries x systems) matrix: systems and queries as factors,
    their interaction as the error (one observation per cell)."""

    n_queries: int
    n_systems: int
    ss_systems: float
    ss_queries: float
    ss_error: float
    df_systems: int
    df_queries: int
    df_error: int
    f_systems: float
    p_systems: float
    f_queries: float
    p_queries: float

    @property
    def ms_error(self) -> float:
        return self.ss_error / self.df_error if self.df_error else math.nan


def anova_two_way(x: np.ndarray) -> Anova:
    """ANOVA of ``x`` (n queries x m systems), as ``ols('v ~ C(system) + C(query)')`` and ``anova_lm``."""
    from scipy import stats

    n, m = x.shape
    grand = x.mean()
    sys_means, q_means = x.mean(axis=0), x.mean(axis=1)
    ss_sys = float(n * ((sys_means - grand) ** 2).sum())
    ss_q = float(m * ((q_means - grand) ** 2).sum())
    ss_err = float(((x - sys_means[None, :] - q_means[:, None] + grand) ** 2).sum())
    df_sys, df_q, df_err = m - 1, n - 1, (m - 1) * (n - 1)
    ms_err = ss_err / df_err if df_err else math.nan
    f_sys = (ss_sys / df_sys) / ms_err if df_err and ms_err > 0 else math.nan
    f_q = (ss_q / df_q) / ms_err if df_err and ms_err > 0 else math.nan
    p_sys = float(stats.f.sf(f_sys, df_sys, df_err)) if not math.isnan(f_sys) else math.nan
    p_q = float(stats.f.sf(f_q, df_q, df_err)) if not math.isnan(f_q) else math.nan
    return Anova(n, m, ss_sys, ss_q, ss_err, df_sys, df_q, df_err, f_sys, p_sys, f_q, p_q)


@dataclass(frozen=True)
class TukeyPair:
    """One pair of Tukey's HSD with the residual variance of the two-way ANOVA (queries as blocks)."""

    first: int  # column index of the baseline system
    second: int
    difference: float  # mean of second - mean of first
    q: float  # studentised range statistic |difference| / sqrt(MSE / n)
    p_value: float  # from the studentised range distribution with m systems and (m-1)(n-1) df
    ci_low: float  # simultaneous interval of the difference
    ci_high: float
    effect_size: float  # difference / sqrt(MSE) (Sakai's ES_E)


@functools.lru_cache(maxsize=64)
def _studentized_range_quantile(level: float, m: int, df: int) -> float:
    """``studentized_range.ppf`` (a numerical integration of about 0.3 s), once per (level, m, df)."""
    from scipy import stats

    return float(stats.studentized_range.ppf(level, m, df))


def tukey_hsd(x: np.ndarray, level: float = 0.95) -> list[TukeyPair]:
    """Tukey HSD over every pair of columns of ``x`` (n queries x m systems) using the ANOVA's MSE."""
    from scipy import stats

    n, m = x.shape
    anova = anova_two_way(x)
    mse = anova.ms_error
    se = math.sqrt(mse / n) if mse > 0 else math.nan
    crit = _studentized_range_quantile(level, m, anova.df_error) if anova.df_error else math.nan
    means = x.mean(axis=0)
    out = []
    for i in range(m):
        for j in range(i + 1, m):
            diff = float(means[j] - means[i])
            q = abs(diff) / se if se > 0 else math.nan
            p = float(stats.studentized_range.sf(q, m, anova.df_error)) if not math.isnan(q) else math.nan
            half = crit * se
            es = diff / math.sqrt(mse) if mse > 0 else math.nan
            out.append(TukeyPair(i, j, diff, q, min(p, 1.0), diff - half, diff + half, es))
    return out


def randomized_tukey(x: np.ndarray, permutations: int, seed: int) -> np.ndarray:
    """Randomised Tukey HSD (Carterette 2012; Sakai 2018, 4.5): in each trial the m systems' values are
    permuted within each query and the largest minus the smallest system sum is kept; the p-value of a
    pair is (c + 1) / (B + 1), c the trials whose range reaches the pair's observed |sum difference|
    (less the tie tolerance). Returns an (m x m) matrix of p-values (NaN on the diagonal)."""
    n, m = x.shape
    sums = x.sum(axis=0)
    tol = 2.0 * (_gamma(n + 2) + VALUE_ACCURACY) * float(np.abs(x).sum(axis=0).max()) * 2.0
    observed = np.abs(sums[None, :] - sums[:, None])
    ranges = np.empty(permutations)
    for start, keys in tukey_keys(seed, permutations, n, m, TUKEY_CELLS):
        trials = len(keys)
        order = np.argsort(keys, axis=2)
        permuted = np.take_along_axis(np.broadcast_to(x, (trials, n, m)), order, axis=2).sum(axis=1)
        ranges[start : start + trials] = permuted.max(axis=1) - permuted.min(axis=1)
    ranges.sort()
    counts = len(ranges) - np.searchsorted(ranges, (observed - tol).ravel(), side="left")
    p = (counts.reshape(m, m) + 1.0) / (permutations + 1.0)
    np.fill_diagonal(p, math.nan)
    return p


def aligned(results: Any, run_names: Sequence[str], measure: str) -> tuple[list[str], np.ndarray]:
    """Queries every named run scored with a defined value, and the (queries x runs) matrix of values."""
    runs = [results._run(name) for name in run_names]
    common = set(runs[0].queries.query_ids)
    for r in runs[1:]:
        common &= set(r.queries.query_ids)
    ids = sorted(common)
    cols = []
    for r in runs:
        index = {q: i for i, q in enumerate(r.queries.query_ids)}
        cols.append(r.values[measure][[index[q] for q in ids]] if ids else np.zeros(0))
    x = np.column_stack(cols) if ids else np.zeros((0, len(runs)))
    ok = ~np.isnan(x).any(axis=1)
    return [q for q, keep in zip(ids, ok, strict=True) if keep], x[ok]
