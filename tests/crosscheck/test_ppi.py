"""The estimators against ppi_py (the ppi-python package, Angelopoulos et al.'s own implementation) and
scipy's t interval, on per-query values computed from the TREC DL 2019 passage judgments and on seeded
samples of the shapes an evaluation gives (values in [0, 1], many ties, constant columns)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

ppi = pytest.importorskip("ppi_py")

from qrelkit.estimation.ppi import human_queries_needed, interval, power_lambda  # noqa: E402

TOL = 1e-10


def _samples():
    rng = np.random.default_rng(27)
    out = []
    for n, big_n, noise, bias in [
        (30, 70, 0.1, 0.05),
        (10, 200, 0.3, 0.1),
        (50, 50, 0.02, -0.03),
        (5, 12, 0.5, 0),
    ]:
        truth = rng.beta(2, 3, n + big_n)
        model = np.clip(truth + bias + rng.normal(0, noise, n + big_n), 0, 1)
        out.append((truth[:n], model[:n], model[n:]))
    # an evaluation's shape: rounded values with ties, and a model that is a shifted copy
    truth = np.round(rng.uniform(0, 1, 60), 2)
    out.append((truth[:20], np.round(truth[:20] * 0.8 + 0.1, 2), np.round(truth[20:] * 0.8 + 0.1, 2)))
    return out


SAMPLES = _samples()


@pytest.mark.parametrize("k", range(len(SAMPLES)))
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_ppi_and_ppi_plus_plus_with_the_normal_interval_equal_ppi_py(k, alpha):
    y, yhat, yhat_u = SAMPLES[k]
    for estimator, lam in (("ppi", 1), ("ppi++", None)):
        ours = interval(estimator, y, yhat, yhat_u, alpha, kind="normal")
        point = ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
        low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
        assert ours.value == pytest.approx(float(np.ravel(point)[0]), abs=TOL)
        assert ours.low == pytest.approx(float(np.ravel(low)[0]), abs=TOL)
        assert ours.high == pytest.approx(float(np.ravel(high)[0]), abs=TOL)
        # ppi_mean_pval tunes lam without clipping it; with the clipped lam passed in it is the same test
        used = 1 if lam == 1 else ours.lam
        p = ppi.ppi_mean_pval(y, yhat, yhat_u, null=0, lam=used)
        assert ours.p_value == pytest.approx(float(np.ravel(p)[0]), abs=TOL)


def test_the_tuned_lambda_is_ppi_py_s_when_it_needs_no_clipping():
    y, yhat, yhat_u = SAMPLES[0]
    lam = power_lambda(y, yhat, yhat_u)
    assert 0 < lam < 1
    # unclipped, ppi_mean_pval's own tuning gives the same p-value
    ours = interval("ppi++", y, yhat, yhat_u, kind="normal")
    assert ours.p_value == pytest.approx(float(np.ravel(ppi.ppi_mean_pval(y, yhat, yhat_u))[0]), abs=TOL)
    # lam = 0 is the classical mean: ppi_py's normal interval of y alone
    low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=0)
    se = np.std(y) / np.sqrt(len(y))
    assert float(np.ravel(high)[0] - np.ravel(low)[0]) == pytest.approx(
        2 * stats.norm.isf(0.025) * se, abs=TOL
    )


@pytest.mark.parametrize("k", range(len(SAMPLES)))
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_the_default_interval_is_scipy_s_t_over_ppi_py_s_estimate_with_ddof_1(k, alpha):
    """The small-sample interval: ppi_py's point estimate and lambda, both variances divided by the count
    less one, and scipy's t quantile with |H| - 1 degrees of freedom; the p-value from the same t."""
    y, yhat, yhat_u = SAMPLES[k]
    n, big_n = len(y), len(yhat_u)
    for estimator, lam in (("ppi", 1.0), ("ppi++", None)):
        ours = interval(estimator, y, yhat, yhat_u, alpha)
        used = 1.0 if lam == 1.0 else ours.lam
        point = float(np.ravel(ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=used))[0])
        se = np.sqrt(used**2 * np.var(yhat_u, ddof=1) / big_n + np.var(y - used * yhat, ddof=1) / n)
        low, high = stats.t.interval(1 - alpha, n - 1, loc=point, scale=se)
        assert (ours.value, ours.low, ours.high) == pytest.approx((point, low, high), abs=TOL)
        assert ours.p_value == pytest.approx(2 * stats.t.sf(abs(point) / se, n - 1), abs=TOL)
        assert ours.kind == "t"
        # wider than ppi_py's by t_(n-1) / z times the ddof factor of the two parts
        normal = interval(estimator, y, yhat, yhat_u, alpha, kind="normal")
        assert ours.high - ours.low > normal.high - normal.low


def test_not_measurable_when_nothing_varies_by_hand():
    """People's values all 1 on H (Judged@10 of a run every query of which is judged): no interval, the reason
    says why, the point estimate stays; residuals that do not vary (the model's values the people's plus
    a constant) leave ppi without an interval; the model's values all equal leave it without one."""
    ones = np.ones(6)
    varying = np.array([0.2, 0.4, 0.5, 0.9, 1.0, 0.7])
    for estimator in ("ppi++", "ppi", "human"):
        i = interval(estimator, ones, varying, varying)
        assert i.reason is not None and "people's values are all 1" in i.reason
        assert np.isnan(i.low) and np.isnan(i.high) and np.isnan(i.p_value)
        assert i.to_dict()["interval"] is None and i.to_dict()["reason"] == i.reason
    # ppi: value = mean(U) + mean(y - yhat) = 0.6167 + 0.1 by hand
    shifted = interval("ppi", varying + 0.1, varying, varying)
    assert shifted.reason is not None and "residuals" in shifted.reason
    assert shifted.value == pytest.approx(np.mean(varying) + 0.1, abs=TOL)
    assert interval("model", varying, ones, ones).reason is not None
    assert interval("model", varying, varying, varying).reason is None


@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_human_is_scipy_s_t_interval(k):
    y, yhat, yhat_u = SAMPLES[k]
    ours = interval("human", y, yhat, yhat_u, 0.05)
    low, high = stats.t.interval(0.95, len(y) - 1, loc=np.mean(y), scale=stats.sem(y))
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=TOL)
    assert ours.p_value == pytest.approx(stats.ttest_1samp(y, 0).pvalue, abs=TOL)
    assert ours.effective_human_queries == len(y)
    model = interval("model", y, yhat, yhat_u, 0.05)
    both = np.concatenate([yhat, yhat_u])
    low, high = stats.t.interval(0.95, len(both) - 1, loc=np.mean(both), scale=stats.sem(both))
    assert (model.low, model.high) == pytest.approx((low, high), abs=TOL)


@pytest.mark.parametrize("k", range(4))
def test_human_queries_needed_is_ppi_mean_power_s(k):
    """ppi_mean_power's cheapest pair for a people-only precision of n0 queries, with predictions almost
    free and at most M queries in all, judges round(n0 M (1 - rho^2) / (M - rho^2 n0)) of them."""
    y, yhat, yhat_u = SAMPLES[k]
    total = len(y) + len(yhat_u)
    delta = 3.0 * np.std(y) / np.sqrt(total)  # reachable within the M queries
    ours = human_queries_needed("ppi++", y, yhat, yhat_u, delta)
    assert ours.needed_exact is not None
    theirs = ppi.ppi_mean_power(
        y, yhat, cost_Y=1.0, cost_Yhat=1e-9, effective_n=ours.classical_queries, n_max=total
    )
    assert theirs["ppi_corr"] == pytest.approx(ours.correlation, abs=TOL)
    assert theirs["n"] == round(ours.needed_exact)
    assert ours.queries_needed == max(2, int(np.ceil(ours.needed_exact)))
    # n0 by hand: var(y) (z_0.975 + z_0.8)^2 / delta^2
    z = stats.norm.isf(0.025) + stats.norm.ppf(0.8)
    assert ours.classical_queries == pytest.approx(np.var(y) * z**2 / delta**2, rel=1e-12)
