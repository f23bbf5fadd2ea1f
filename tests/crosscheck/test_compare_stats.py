"""qrelkit.compare's statistics against independent implementations: scipy (t-test, Wilcoxon), statsmodels
(multiple-testing corrections, OLS two-way ANOVA, power), brute-force enumeration with exact fractions
(the randomisation test), and plain loops over the same seeded draws (bootstrap).

No published table with per-topic scores of several systems was available to reproduce here, so every
statistic is checked against these libraries, on seeded synthetic scores and on the bundled example's
per-query values (tests/compare/test_compare.py runs the example end to end).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from qrelkit.compare import stats
from qrelkit.compare.power import power_at, topic_set_size

multitest = pytest.importorskip("statsmodels.stats.multitest")
smf = pytest.importorskip("statsmodels.formula.api")
sm_anova = pytest.importorskip("statsmodels.stats.anova")
sm_power = pytest.importorskip("statsmodels.stats.power")

SEEDS = [0, 1, 2, 3]


def scores(seed: int, n: int, m: int = 2, grid: int | None = None) -> np.ndarray:
    """Seeded per-query scores in [0, 1] of m systems that differ a little; on a grid of 1/grid if given."""
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 2, size=n)
    x = np.clip(base[:, None] + rng.normal(0.03, 0.12, size=(n, m)) * np.arange(m), 0, 1)
    x[:, 0] = base
    return np.round(x * grid) / grid if grid else x


# -- paired t ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [2, 5, 30, 400])
def test_paired_t_equals_scipy(seed, n):
    x = scores(seed, n)
    ours = stats.paired_t(x[:, 1] - x[:, 0], 0.95)
    ref = sps.ttest_rel(x[:, 1], x[:, 0])
    ci = ref.confidence_interval(0.95)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert (ours.ci_low, ours.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert ours.df == ref.df


def test_paired_t_all_differences_zero():
    ours = stats.paired_t(np.zeros(10))
    assert np.isnan(ours.statistic) and ours.p_value == 1.0


# -- Wilcoxon ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [6, 20, 50])
def test_wilcoxon_exact_equals_scipy(seed, n):
    x = scores(seed, n)  # continuous: no ties, no zeros
    ours = stats.wilcoxon(x[:, 0], x[:, 1])
    ref = sps.wilcoxon(x[:, 1], x[:, 0], zero_method="wilcox", correction=False, method="exact")
    assert ours.method == "exact"
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [30, 51, 300])
def test_wilcoxon_asymptotic_with_ties_and_zeros_equals_scipy(seed, n):
    x = scores(seed, n, grid=10)  # on a grid: tied absolute differences and zero differences
    ours = stats.wilcoxon(x[:, 0], x[:, 1])
    d = x[:, 1] - x[:, 0]
    # the same zeros and ties as qrelkit finds, in exact arithmetic: snap the float noise of the grid
    d = np.round(d * 10) / 10
    ref = sps.wilcoxon(d, zero_method="wilcox", correction=False, method="asymptotic")
    assert ours.method == "asymptotic"
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_ties_decided_by_value_not_by_float_noise():
    """0.3 - 0.1, 0.2 - 0 and 0.5 - 0.7 are the same absolute difference; floats make them differ."""
    a = np.array([0.1, 0.0, 0.7, 0.2, 0.0, 0.5])
    b = np.array([0.3, 0.2, 0.5, 0.7, 0.25, 0.4])
    assert len(set(np.abs(b - a)[:3].tolist())) == 3  # the float trap this guards against
    ours = stats.wilcoxon(a, b)
    exact = np.array([0.2, 0.2, -0.2, 0.5, 0.25, -0.1])
    ref = sps.wilcoxon(exact, zero_method="wilcox", correction=False, method="asymptotic")
    assert ours.method == "asymptotic"  # a tie was found
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


# -- randomisation test -----------------------------------------------------------------------------------


def brute_force_p(d: list[Fraction]) -> Fraction:
    """Two-sided sign-flip p-value by enumerating every sign vector in exact rational arithmetic."""
    observed = abs(sum(d))
    hits = sum(
        1
        for s in itertools.product((1, -1), repeat=len(d))
        if abs(sum(x * y for x, y in zip(s, d, strict=True))) >= observed
    )
    return Fraction(hits, 2 ** len(d))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n", [1, 4, 9, 13])
def test_exact_sign_flip_equals_brute_force_on_a_grid(seed, n):
    """Differences on a grid of 1/8 are exact in binary: many genuine ties, no rounding."""
    rng = np.random.default_rng(seed)
    d = rng.integers(-6, 7, size=n) / 8.0
    count, total = stats.sign_flip_exact(d, stats.sum_tolerance(np.zeros(n), d))
    nonzero = [Fraction(x) for x in d if x != 0]
    assert Fraction(count, total) == brute_force_p(nonzero)


@pytest.mark.parametrize("seed", range(6))
def test_exact_sign_flip_decides_ties_as_exact_arithmetic_does(seed):
    """Values that are ratios k/R (recall): the float differences carry rounding noise, the exact
    rationals tie; the p-value must be the exact one."""
    rng = np.random.default_rng(seed)
    n = 11
    denominators = rng.integers(1, 7, size=n)
    ka = np.array([rng.integers(0, r + 1) for r in denominators])
    kb = np.array([rng.integers(0, r + 1) for r in denominators])
    a = ka / denominators
    b = kb / denominators
    exact = [
        Fraction(int(y), int(r)) - Fraction(int(x), int(r))
        for x, y, r in zip(ka, kb, denominators, strict=True)
    ]
    count, total = stats.sign_flip_exact(stats.snapped_differences(a, b), stats.sum_tolerance(a, b))
    nonzero = [x for x in exact if x != 0]
    assert Fraction(count, total) == brute_force_p(nonzero)


def test_a_bare_float_comparison_would_get_this_wrong():
    """Differences 0.3 - 0.1, 0.2 - 0 and 0.5 - 0.7 are exactly 0.2, 0.2 and -0.2: every sign vector gives
    |T| of 0.2 or 0.6, at least the observed 0.2, so p = 1. Bare float comparisons count 4 of 8."""
    a = np.array([0.1, 0.0, 0.7])
    b = np.array([0.3, 0.2, 0.5])
    d = b - a
    naive = sum(abs(np.dot(s, d)) >= abs(d.sum()) for s in itertools.product((1, -1), repeat=3))
    assert naive == 4
    count, total = stats.sign_flip_exact(d, stats.sum_tolerance(a, b))
    assert Fraction(count, total) == 1
    p = stats.sign_flip_monte_carlo(d[:, None], np.array([stats.sum_tolerance(a, b)]), 999, seed=0)
    assert p[0] == 1.0


@pytest.mark.parametrize("seed", [0, 1])
def test_monte_carlo_sign_flip_agrees_with_exact(seed):
    x = scores(seed, 18)
    d = x[:, 1] - x[:, 0]
    tol = stats.sum_tolerance(x[:, 0], x[:, 1])
    count, total = stats.sign_flip_exact(d, tol)
    exact = count / total
    b = 40_000
    mc = stats.sign_flip_monte_carlo(d[:, None], np.array([tol]), b, seed)[0]
    assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / b) + 1 / b


def test_monte_carlo_is_the_same_alone_or_beside_other_columns():
    x = scores(5, 40, m=4)
    d = x[:, 1:] - x[:, :1]
    tol = np.array([stats.sum_tolerance(x[:, 0], x[:, j]) for j in (1, 2, 3)])
    together = stats.sign_flip_monte_carlo(d, tol, 3000, seed=9)
    alone = [stats.sign_flip_monte_carlo(d[:, [j]], tol[[j]], 3000, seed=9)[0] for j in range(3)]
    assert together.tolist() == alone
    # p = (c + 1) / (B + 1): a whole count
    assert all(float(p * 3001).is_integer() or abs(p * 3001 - round(p * 3001)) < 1e-9 for p in together)


def test_monte_carlo_does_not_depend_on_the_block_size(monkeypatch):
    x = scores(6, 50)
    d = (x[:, 1] - x[:, 0])[:, None]
    tol = np.array([stats.sum_tolerance(x[:, 0], x[:, 1])])
    first = stats.sign_flip_monte_carlo(d, tol, 2500, seed=3)
    # the draws are fixed per block of BLOCK rows: the same sign vectors drawn one block at a time by hand
    signs = np.vstack([s for _, s in stats.sign_blocks(3, 50, 2500)])
    assert signs.shape == (2500, 50)
    by_hand = (np.abs(signs @ d[:, 0]) >= abs(d.sum()) - tol[0]).sum()
    assert first[0] == (by_hand + 1) / 2501


# -- paired bootstrap -------------------------------------------------------------------------------------


def test_bootstrap_means_equal_a_plain_loop_over_the_same_draws():
    x = scores(2, 23, m=3)
    d = x[:, 1:] - x[:, :1]
    means = stats.bootstrap_means(d, 1500, seed=4)
    expected = []
    for block in range(2):
        draws = stats.rng_for(4, stats.STREAM_BOOTSTRAP, block).integers(0, 23, size=(stats.BLOCK, 23))
        for row in draws[: min(stats.BLOCK, 1500 - block * stats.BLOCK)]:
            expected.append([np.mean(d[row, 0]), np.mean(d[row, 1])])
    assert means == pytest.approx(np.array(expected), rel=1e-12, abs=1e-15)


# -- corrections ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs"), [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")]
)
@pytest.mark.parametrize("seed", SEEDS)
def test_corrections_equal_statsmodels(ours, theirs, seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.05, 5), rng.uniform(0, 1, 12), [0.03, 0.03]])
    expected = multitest.multipletests(p, method=theirs)[1]
    assert stats.adjust(p, ours) == pytest.approx(expected, rel=1e-12)


def test_correction_none_and_nan():
    p = np.array([0.01, np.nan, 0.2])
    assert stats.adjust(p, "none")[[0, 2]].tolist() == [0.01, 0.2]
    assert np.isnan(stats.adjust(p, "holm")[1])
    assert stats.adjust(p, "holm")[[0, 2]] == pytest.approx(
        multitest.multipletests([0.01, 0.2], method="holm")[1]
    )


# -- two-way ANOVA and Tukey HSD --------------------------------------------------------------------------


def long_frame(x: np.ndarray) -> pd.DataFrame:
    n, m = x.shape
    return pd.DataFrame(
        {
            "v": x.ravel(),
            "query": np.repeat(np.arange(n), m).astype(str),
            "system": np.tile(np.arange(m), n).astype(str),
        }
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("n", "m"), [(10, 3), (30, 4), (50, 6)])
def test_two_way_anova_equals_statsmodels_ols(seed, n, m):
    x = scores(seed, n, m)
    model = smf.ols("v ~ C(system) + C(query)", data=long_frame(x)).fit()
    table = sm_anova.anova_lm(model, typ=2)
    a = stats.anova_two_way(x)
    assert a.ss_systems == pytest.approx(table.loc["C(system)", "sum_sq"], rel=1e-9)
    assert a.ss_queries == pytest.approx(table.loc["C(query)", "sum_sq"], rel=1e-9)
    assert a.ss_error == pytest.approx(table.loc["Residual", "sum_sq"], rel=1e-9)
    assert a.df_error == table.loc["Residual", "df"]
    assert a.f_systems == pytest.approx(table.loc["C(system)", "F"], rel=1e-9)
    assert a.p_systems == pytest.approx(table.loc["C(system)", "PR(>F)"], rel=1e-7)
    assert a.ms_error == pytest.approx(model.mse_resid, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_tukey_uses_the_residual_variance_of_the_two_way_model(seed):
    x = scores(seed, 25, 4)
    model = smf.ols("v ~ C(system) + C(query)", data=long_frame(x)).fit()
    mse, df = model.mse_resid, model.df_resid
    for pair in stats.tukey_hsd(x, 0.95):
        diff = x[:, pair.second].mean() - x[:, pair.first].mean()
        q = abs(diff) / np.sqrt(mse / 25)
        assert pair.q == pytest.approx(q, rel=1e-9)
        assert pair.p_value == pytest.approx(sps.studentized_range.sf(q, 4, df), rel=1e-7)
        half = sps.studentized_range.ppf(0.95, 4, df) * np.sqrt(mse / 25)
        assert (pair.ci_low, pair.ci_high) == pytest.approx((diff - half, diff + half), rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_tukey_with_two_systems_is_the_paired_t_test(seed):
    """With two systems the two-way ANOVA's F is t^2 and Tukey's p is the paired t-test's p."""
    x = scores(seed, 40, 2)
    ref = sps.ttest_rel(x[:, 1], x[:, 0])
    (pair,) = stats.tukey_hsd(x)
    assert stats.anova_two_way(x).f_systems == pytest.approx(ref.statistic**2, rel=1e-9)
    assert pair.p_value == pytest.approx(ref.pvalue, rel=1e-6)


def test_randomized_tukey_converges_to_the_exact_permutation_distribution():
    """3 queries x 3 systems: all (3!)^3 = 216 within-query permutations enumerated by hand."""
    x = np.array([[0.1, 0.5, 0.9], [0.2, 0.4, 0.8], [0.0, 0.6, 0.7]])
    perms = list(itertools.permutations(range(3)))
    ranges = []
    for p0, p1, p2 in itertools.product(perms, repeat=3):
        sums = x[0, list(p0)] + x[1, list(p1)] + x[2, list(p2)]
        ranges.append(sums.max() - sums.min())
    ranges = np.array(ranges)
    sums = x.sum(axis=0)
    b = 30_000
    p = stats.randomized_tukey(x, b, seed=1)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        exact = np.mean(ranges >= abs(sums[j] - sums[i]) - 1e-12)
        assert abs(p[i, j] - exact) < 4 * np.sqrt(exact * (1 - exact) / b) + 2 / b


# -- topic-set size ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("es", [0.1, 0.25, 0.5, 0.8, 1.5])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_topic_set_size_equals_statsmodels(es, alpha):
    solver = sm_power.TTestPower()
    real = solver.solve_power(effect_size=es, alpha=alpha, power=0.8, alternative="two-sided")
    n = topic_set_size(es, alpha, 0.8)
    assert n == int(np.ceil(real - 1e-9))
    assert power_at(n, es, alpha) == pytest.approx(solver.power(es, n, alpha), rel=1e-9)
    assert power_at(n - 1, es, alpha) < 0.8 <= power_at(n, es, alpha)


def test_topic_set_size_of_no_difference_is_none():
    assert topic_set_size(0.0, 0.05) is None


def test_randomized_tukey_does_not_depend_on_how_a_block_is_sliced(monkeypatch):
    x = scores(4, 40, 5)
    whole = stats.randomized_tukey(x, 2500, seed=2)
    monkeypatch.setattr(stats, "TUKEY_CELLS", 700)  # a few trials at a time
    assert np.array_equal(stats.randomized_tukey(x, 2500, seed=2), whole, equal_nan=True)
