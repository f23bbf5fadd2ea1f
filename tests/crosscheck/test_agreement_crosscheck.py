"""qrelkit.agreement.kappa against the reference libraries: scikit-learn, statsmodels, krippendorff, irrCAC.

Each library is given the full grade scale explicitly, because scikit-learn and statsmodels build their
weights from label positions (the labels passed, or the table's rows) rather than grade values. With an
equally spaced scale and every grade listed, positions and values give the same kappa.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

krippendorff = pytest.importorskip("krippendorff")
irr_raw = pytest.importorskip("irrCAC.raw")
sk_metrics = pytest.importorskip("sklearn.metrics")
sm_inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")

from qrelkit.agreement.kappa import cohen_kappa, krippendorff_alpha  # noqa: E402

SCALE = (0, 1, 2, 3)
WEIGHTS = ["linear", "quadratic", "unweighted"]
SIZES = [12, 60, 300, 900]
SEEDS = [0, 1, 2]


def labellers(seed: int, n: int, scale: tuple[int, ...] = SCALE, unused: int | None = None):
    """Seeded two-labeller grades with realistic disagreement: mostly exact, mostly one grade off."""
    rng = np.random.default_rng(seed)
    grades = [g for g in scale if g != unused]
    prevalence = np.linspace(2.0, 1.0, len(grades))  # low grades more common, as in real pools
    a = rng.choice(len(grades), size=n, p=prevalence / prevalence.sum())
    step = rng.choice([-2, -1, 0, 1, 2], size=n, p=[0.03, 0.15, 0.64, 0.15, 0.03])
    b = np.clip(a + step, 0, len(grades) - 1)
    return np.asarray(grades)[a], np.asarray(grades)[b]


CASES = [(seed, n, None) for seed in SEEDS for n in SIZES] + [
    (seed, n, 1) for seed in SEEDS for n in (40, 900)
]


def full_table(a, b, scale):
    k = len(scale)
    index = {g: i for i, g in enumerate(scale)}
    table = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        table[index[x], index[y]] += 1
    return table


# --------------------------------------------------------------------------------------------------------
# scikit-learn


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize(("seed", "n", "unused"), CASES)
def test_sklearn_kappa(seed, n, unused, weights):
    a, b = labellers(seed, n, unused=unused)
    expected = sk_metrics.cohen_kappa_score(
        a, b, labels=list(SCALE), weights=None if weights == "unweighted" else weights
    )
    assert cohen_kappa(a, b, SCALE, weights).kappa == pytest.approx(expected, abs=1e-12)


def test_sklearn_without_labels_shows_the_unused_grade_trap():
    # The hand example of tests/agreement/test_kappa.py: nobody uses grade 1. Without labels scikit-learn
    # weights by position among (0, 2, 3) and reports 26/41; with the full scale it agrees with us (6/11).
    a = [0, 0, 0, 0, 0, 2, 2, 2, 3, 3]
    b = [0, 0, 0, 2, 2, 0, 2, 2, 3, 3]
    assert sk_metrics.cohen_kappa_score(a, b, weights="linear") == pytest.approx(26 / 41, abs=1e-12)
    assert sk_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="linear") == pytest.approx(
        6 / 11, abs=1e-12
    )
    assert cohen_kappa(a, b, SCALE).kappa == pytest.approx(6 / 11, abs=1e-12)


# --------------------------------------------------------------------------------------------------------
# statsmodels: kappa, the Fleiss-Cohen-Everitt standard error and the normal interval


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize(("seed", "n", "unused"), CASES)
def test_statsmodels_kappa_and_standard_error(seed, n, unused, weights):
    a, b = labellers(seed, n, unused=unused)
    ours = cohen_kappa(a, b, SCALE, weights)
    # The full 4x4 table (empty row/column for an unused grade) with scores 0..3 = the grade values.
    res = sm_inter_rater.cohens_kappa(
        full_table(a, b, SCALE), wt=None if weights == "unweighted" else weights
    )
    assert ours.kappa == pytest.approx(res.kappa, abs=1e-10)
    assert ours.std_error == pytest.approx(res.std_kappa, abs=1e-10)
    assert ours.ci_low == pytest.approx(res.kappa_low, abs=1e-10)
    assert ours.ci_high == pytest.approx(res.kappa_upp, abs=1e-10)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_statsmodels_unevenly_spaced_scale(weights):
    # Scale (0, 1, 2, 4): statsmodels' default scores are positions 0..3, so pass the grade values as
    # scores (its `weights=` argument) to compare value-based weights.
    scale = (0, 1, 2, 4)
    a, b = labellers(7, 250, scale)
    ours = cohen_kappa(a, b, scale, weights)
    res = sm_inter_rater.cohens_kappa(full_table(a, b, scale), weights=np.array(scale, float), wt=weights)
    assert ours.kappa == pytest.approx(res.kappa, abs=1e-10)
    assert ours.std_error == pytest.approx(res.std_kappa, abs=1e-10)
    positional = sm_inter_rater.cohens_kappa(full_table(a, b, scale), wt=weights)
    assert abs(positional.kappa - ours.kappa) > 1e-3  # positions are not values on this scale
    # scikit-learn has no way to take values: with labels it still weights by position
    sk = sk_metrics.cohen_kappa_score(a, b, labels=list(scale), weights=weights)
    assert sk == pytest.approx(positional.kappa, abs=1e-12)


@pytest.mark.parametrize("level", [0.80, 0.90, 0.99])
def test_interval_level_against_scipy_quantile(level):
    a, b = labellers(3, 200)
    ours = cohen_kappa(a, b, SCALE, level=level)
    res = sm_inter_rater.cohens_kappa(full_table(a, b, SCALE), wt="linear")
    z = stats.norm.ppf(0.5 + level / 2)
    assert ours.ci_low == pytest.approx(res.kappa - z * res.std_kappa, abs=1e-10)
    assert ours.ci_high == pytest.approx(res.kappa + z * res.std_kappa, abs=1e-10)


# --------------------------------------------------------------------------------------------------------
# irrCAC: Conger's kappa (Cohen's kappa for two raters) and Gwet's variance


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize(("seed", "n", "unused"), [c for c in CASES if c[1] <= 300])
def test_irrcac_conger(seed, n, unused, weights):
    a, b = labellers(seed, n, unused=unused)
    ours = cohen_kappa(a, b, SCALE, weights)
    names = {"linear": "linear", "quadratic": "quadratic", "unweighted": "identity"}
    frame = pd.DataFrame({"a": a.tolist(), "b": b.tolist()})
    est = irr_raw.CAC(frame, weights=names[weights], categories=list(SCALE), digits=15).conger()["est"]
    # irrCAC rounds its outputs to `digits` decimals, hence 1e-12 rather than machine precision.
    assert est["coefficient_value"] == pytest.approx(ours.kappa, abs=1e-12)
    assert est["pa"] == pytest.approx(1 - ours.observed, abs=1e-12)
    assert est["pe"] == pytest.approx(1 - ours.expected, abs=1e-12)
    # Different by design: irrCAC reports Gwet's linearisation variance,
    #   var = (1 - f) / (n (n - 1)) * sum_i (kappa*_i - kappa)^2     (f = n/N = 0 by default)
    # whose sum, for two raters, is n / (1 - P_e)^2 times the Fleiss-Cohen-Everitt bracket. So its
    # variance is the FCE variance times n / (n - 1): an unbiased-style divisor instead of n. Its interval
    # is a Student t interval with n - 1 degrees of freedom, with the upper bound capped at 1.
    assert est["se"] == pytest.approx(ours.std_error * np.sqrt(n / (n - 1)), abs=1e-12)
    low, high = stats.t.interval(0.95, df=n - 1, loc=ours.kappa, scale=est["se"])
    assert est["confidence_interval"][0] == pytest.approx(low, abs=1e-12)
    assert est["confidence_interval"][1] == pytest.approx(min(1.0, high), abs=1e-12)


# --------------------------------------------------------------------------------------------------------
# krippendorff


@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal"])
@pytest.mark.parametrize(("seed", "n", "unused"), CASES)
def test_krippendorff_two_labellers(seed, n, unused, level):
    a, b = labellers(seed, n, unused=unused)
    data = np.vstack([a, b]).astype(float)
    expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=list(SCALE))
    assert krippendorff_alpha(data, level, value_domain=SCALE).alpha == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal"])
@pytest.mark.parametrize("seed", SEEDS)
def test_krippendorff_three_labellers_with_missing(seed, level):
    rng = np.random.default_rng(100 + seed)
    a, b = labellers(seed, 400)
    c = np.clip(a + rng.choice([-1, 0, 1], size=400, p=[0.2, 0.6, 0.2]), 0, 3)
    data = np.vstack([a, b, c]).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan  # some units end with 0 or 1 ratings and are dropped
    data[:, :3] = [[0, np.nan, np.nan], [np.nan, np.nan, np.nan], [np.nan, np.nan, 3]]
    expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=list(SCALE))
    assert krippendorff_alpha(data, level, value_domain=SCALE).alpha == pytest.approx(expected, abs=1e-12)


def test_krippendorff_value_domain_with_unused_grades():
    # Nobody uses 1 or 4; the package and we both give the same alpha with and without them listed.
    a, b = labellers(4, 300, unused=1)
    data = np.vstack([a, b]).astype(float)
    for level in ("ordinal", "interval"):
        wide = krippendorff.alpha(data, level_of_measurement=level, value_domain=[0, 1, 2, 3, 4])
        narrow = krippendorff.alpha(data, level_of_measurement=level)
        assert wide == pytest.approx(narrow, abs=1e-12)
        assert krippendorff_alpha(data, level, value_domain=(0, 1, 2, 3, 4)).alpha == pytest.approx(
            wide, abs=1e-12
        )
