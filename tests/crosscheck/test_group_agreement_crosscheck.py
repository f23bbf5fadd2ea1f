"""qrelkit.agreement.group (n labellers) against statsmodels, irrCAC, krippendorff and scikit-learn, and its
query bootstrap against resampling done here by hand, each resample scored by the reference library."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

krippendorff = pytest.importorskip("krippendorff")
irr_raw = pytest.importorskip("irrCAC.raw")
sk_metrics = pytest.importorskip("sklearn.metrics")
sm_inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")

from qrelkit.agreement.group import fleiss_kappa, group_agreement, group_grades  # noqa: E402
from qrelkit.judgments.adjudication import calibration_agreement, group_calibration  # noqa: E402

SCALE = (0, 1, 2, 3)
SEEDS = [0, 1, 2]


def ratings(seed: int, labellers: int, units: int, missing: float = 0.0) -> np.ndarray:
    """Seeded grades: a true grade per unit, each labeller mostly on it, sometimes a grade off."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, size=units, p=[0.4, 0.3, 0.2, 0.1])
    out = np.vstack(
        [
            np.clip(truth + rng.choice([-1, 0, 1], size=units, p=[0.15, 0.7, 0.15]), 0, 3)
            for _ in range(labellers)
        ]
    ).astype(float)
    out[rng.random(out.shape) < missing] = np.nan
    return out


def as_grades(data: np.ndarray, per_query: int = 7) -> dict[str, dict[tuple[str, str], int]]:
    """Labeller name -> {(query, doc): grade}; unit j belongs to query j // per_query."""
    return {
        f"l{i}": {(f"q{j // per_query:03d}", f"d{j:04d}"): int(v) for j, v in enumerate(row) if v == v}
        for i, row in enumerate(data)
    }


@pytest.mark.parametrize("labellers", [3, 4, 6])
@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_against_statsmodels(seed, labellers):
    data = ratings(seed, labellers, 250)
    table, _ = sm_inter_rater.aggregate_raters(data.T.astype(int), n_cat=4)
    expected = sm_inter_rater.fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(data, SCALE).kappa == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("weights", "irr"), [("unweighted", "identity"), ("linear", "linear"),
                                              ("quadratic", "quadratic")])  # fmt: skip
@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_with_missing_ratings_against_irrcac(seed, weights, irr):
    data = ratings(seed, 4, 300, missing=0.3)
    frame = pd.DataFrame(data.T)
    est = irr_raw.CAC(frame, weights=irr, categories=list(SCALE), digits=15).fleiss()["est"]
    ours = fleiss_kappa(data, SCALE, weights)
    assert ours.kappa == pytest.approx(est["coefficient_value"], abs=1e-12)
    assert ours.observed == pytest.approx(est["pa"], abs=1e-12)
    assert ours.expected == pytest.approx(est["pe"], abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_group_report_against_krippendorff_and_sklearn(seed):
    data = ratings(seed, 4, 280, missing=0.25)
    report = group_agreement(group_grades(as_grades(data)), SCALE)
    kept = (~np.isnan(data)).sum(axis=0) >= 2
    for level in ("interval", "ordinal"):
        expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=list(SCALE))
        assert report.alpha[level].alpha == pytest.approx(expected, abs=1e-12)
    # units graded by one labeller take no part: irrCAC is given the others
    est = irr_raw.CAC(pd.DataFrame(data[:, kept].T), categories=list(SCALE), digits=15).fleiss()["est"]
    assert report.fleiss.kappa == pytest.approx(est["coefficient_value"], abs=1e-12)
    assert report.n_units == kept.sum() and report.n_single == (~np.isnan(data)).sum(axis=0).__eq__(1).sum()
    kappas = []
    for i, j in itertools.combinations(range(4), 2):
        both = ~np.isnan(data[i]) & ~np.isnan(data[j])
        k = sk_metrics.cohen_kappa_score(data[i][both], data[j][both], labels=list(SCALE), weights="linear")
        assert report.kappa_matrix[i, j] == report.kappa_matrix[j, i] == pytest.approx(k, abs=1e-12)
        assert report.pairs_matrix[i, j] == both.sum()
        kappas.append(k)
    assert report.mean_kappa == pytest.approx(np.mean(kappas), abs=1e-12)


def _by_hand(data: np.ndarray, per_query: int, resamples: int, seed: int, statistic) -> tuple[float, float]:
    """The query bootstrap written out: draw queries with replacement, stack their units, score."""
    queries = np.arange(data.shape[1]) // per_query
    n_q = int(queries.max()) + 1
    draws = np.random.default_rng(seed).integers(0, n_q, size=(resamples, n_q))
    values = []
    for row in draws:
        units = np.concatenate([np.flatnonzero(queries == q) for q in row])
        values.append(statistic(data[:, units]))
    return tuple(np.quantile(values, [0.025, 0.975]))


def _sk_mean_kappa(data: np.ndarray) -> float:
    ks = []
    for i, j in itertools.combinations(range(data.shape[0]), 2):
        both = ~np.isnan(data[i]) & ~np.isnan(data[j])
        ks.append(
            sk_metrics.cohen_kappa_score(data[i][both], data[j][both], labels=list(SCALE), weights="linear")
        )
    return float(np.mean(ks))


@pytest.mark.parametrize("seed", [0, 1])
def test_query_bootstrap_of_each_statistic_against_resampling_by_hand(seed):
    data = ratings(seed, 3, 140)
    report = group_agreement(group_grades(as_grades(data)), SCALE, n_resamples=40, seed=seed)
    for level in ("interval", "ordinal"):
        low, high = _by_hand(data, 7, 40, seed, lambda d, lvl=level: krippendorff.alpha(
            d, level_of_measurement=lvl, value_domain=list(SCALE)))  # fmt: skip
        b = report.intervals[f"alpha_{level}"]
        assert (b.low, b.high) == pytest.approx((low, high), abs=1e-12)
    low, high = _by_hand(data, 7, 40, seed, lambda d: sm_inter_rater.fleiss_kappa(
        sm_inter_rater.aggregate_raters(d.T.astype(int), n_cat=4)[0]))  # fmt: skip
    assert (report.intervals["fleiss"].low, report.intervals["fleiss"].high) == pytest.approx(
        (low, high), abs=1e-12
    )
    low, high = _by_hand(data, 7, 40, seed, _sk_mean_kappa)
    b = report.intervals["mean_kappa"]
    assert (b.low, b.high) == pytest.approx((low, high), abs=1e-12)


def test_two_labellers_mean_kappa_is_their_kappa_with_the_same_interval():
    data = ratings(5, 2, 210)
    grades = as_grades(data)
    pair = calibration_agreement(grades["l0"], grades["l1"], SCALE, min_kappa=0.6, labellers=("l0", "l1"))
    group = group_calibration(grades, SCALE, statistic="mean_kappa", min_kappa=0.6)
    assert group.report.mean_kappa == pair.report.kappa.kappa
    b = group.report.intervals["mean_kappa"]
    assert (b.low, b.high) == (pair.report.bootstrap.low, pair.report.bootstrap.high)
    default = group_calibration(grades, SCALE, min_kappa=0.6)  # two labellers: kappa, as before
    assert default.statistic == "kappa"
    assert default.gate.message == pair.gate.message
    assert default.pairs[0].report.kappa.kappa == pair.report.kappa.kappa
