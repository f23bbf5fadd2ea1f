"""Rank correlations (qrelkit.agreement.ranking) against hand arithmetic, scipy.stats.kendalltau, a slow
tau_AP written from Yilmaz, Aslam & Robertson's definition, and the values published with Urbano &
Marrero's implementation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qrelkit.agreement.ranking import (
    MAX_ITEMS,
    order_flips,
    rank_agreement,
    tau_ap,
    tau_ap_symmetric,
    tau_b,
)
from qrelkit.errors import ValidationError

from .ranking_oracle import n_orders, paper_tau_ap, slow_tau_ap

# -- hand arithmetic ---------------------------------------------------------------------------------------


def test_tau_ap_weights_the_top():
    # truth A > B > C > D. Swapping the top two: rank 2 (A) has B above it, which the truth puts below:
    # C(2) = 0; C(3) = 2, C(4) = 3: 2/3 (0/1 + 2/2 + 3/3) - 1 = 1/3. Swapping the bottom two: 1/1 + 2/2 + 2/3,
    # so 2/3 * 8/3 - 1 = 7/9. tau-b is (5 - 1) / 6 = 2/3 for both.
    truth = [4, 3, 2, 1]
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3, abs=1e-15)
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9, abs=1e-15)
    assert tau_b(truth, [3, 4, 2, 1]) == pytest.approx(2 / 3, abs=1e-15)
    assert tau_b(truth, [4, 3, 1, 2]) == pytest.approx(2 / 3, abs=1e-15)
    assert tau_ap(truth, truth) == 1.0 and tau_ap(truth, truth[::-1]) == -1.0


def test_tau_ap_with_a_tie_is_the_mean_over_its_orders():
    # truth A > B > C; the other ties B and C below A. Order A, B, C: 1. Order A, C, B: C(2) = 1 (A),
    # C(3) = 1 (A above B, C not): 2/2 (1/1 + 1/2) - 1 = 1/2. The mean: 3/4.
    assert tau_ap([3, 2, 1], [2, 1, 1]) == pytest.approx(0.75, abs=1e-15)
    # a tied truth: the pair is right half of the time
    assert tau_ap([1, 1], [2, 1]) == 0.0
    assert tau_ap([1, 1, 1], [1, 1, 1]) == 0.0
    # tau-b reads the same ties as agreement
    assert tau_b([2, 1, 1], [2, 1, 1]) == 1.0


def test_tau_ap_is_asymmetric_and_the_symmetric_one_is_the_mean():
    a, b = [4, 3, 2, 1], [3, 4, 2, 1]
    assert tau_ap(b, a) == pytest.approx(1 / 3, abs=1e-15)  # the same swap seen from the other side
    c = [4, 2, 3, 1]
    # walking c against a: C(2) = 1, C(3) = 1 (A above C; B is not), C(4) = 3: 2/3 (1 + 1/2 + 1) - 1 = 2/3
    assert tau_ap(a, c) == pytest.approx(2 / 3, abs=1e-15)
    assert tau_ap_symmetric(a, c) == pytest.approx((tau_ap(a, c) + tau_ap(c, a)) / 2, abs=1e-15)


# Urbano & Marrero's implementation (pyircor, the tests of its tauap module) publishes these values to four
# decimals: tau_AP without ties, their tau_AP,a with ties in the estimated order (our definition there),
# and tau_AP,b without ties (the mean of both directions).
SET1 = dict(
    x=[0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
    y=[0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
    y_ties=[0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
)
SET2 = dict(
    x=[0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
    y=[0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
    y_ties=[0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
)
SET3 = dict(
    x=[0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
    y=[0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
    y_ties=[0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
)


@pytest.mark.parametrize(
    ("data", "plain", "ties", "symmetric"),
    [(SET1, 0.8519, 0.7454, 0.8333), (SET2, 0.2504, 0.2692, 0.2880), (SET3, -0.6971, -0.5558, -0.668)],
)
def test_published_values(data, plain, ties, symmetric):
    assert tau_ap(data["x"], data["y"]) == pytest.approx(plain, abs=5e-5)
    assert tau_ap(data["x"], data["y_ties"]) == pytest.approx(ties, abs=5e-5)
    assert tau_ap_symmetric(data["x"], data["y"]) == pytest.approx(symmetric, abs=5e-4)


# -- properties --------------------------------------------------------------------------------------------

SCORES = st.integers(2, 7).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 4), min_size=n, max_size=n),
                        st.lists(st.integers(0, 4), min_size=n, max_size=n))
)  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(SCORES)
def test_property_tau_b_is_scipys(pair):
    x, y = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input, and answers NaN
        expected = scipy.stats.kendalltau(x, y, variant="b").statistic
    got = tau_b(x, y)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)
    assert tau_b(y, x) == got or (math.isnan(got) and math.isnan(tau_b(y, x)))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(SCORES)
def test_property_tau_ap_is_the_papers_over_every_tie_order(pair):
    truth, other = pair
    assume(n_orders(truth) * n_orders(other) <= 5000)
    expected = slow_tau_ap(truth, other)
    assert tau_ap(truth, other) == pytest.approx(float(expected), abs=1e-12)
    assert tau_ap_symmetric(truth, other) == pytest.approx(float((expected + slow_tau_ap(other, truth)) / 2),
                                                           abs=1e-12)  # fmt: skip


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.permutations(list(range(7))), st.permutations(list(range(7))))
def test_property_without_ties_tau_ap_is_the_papers(truth, other):
    truth_order = sorted(range(7), key=lambda i: -truth[i])
    other_order = sorted(range(7), key=lambda i: -other[i])
    assert tau_ap(truth, other) == pytest.approx(float(paper_tau_ap(truth_order, other_order)), abs=1e-13)


# -- the query bootstrap -----------------------------------------------------------------------------------


def independent_interval(x, y, statistic, n_resamples, seed, level=0.95):
    """Agreement's query bootstrap written out: numpy's generator draws the queries, each resample's run
    means are taken over the drawn queries, ``statistic`` orders them."""
    draws = np.random.default_rng(seed).integers(0, x.shape[0], size=(n_resamples, x.shape[0]))
    values = np.array([statistic(x[d].sum(axis=0), y[d].sum(axis=0)) for d in draws])
    values = values[~np.isnan(values)]
    return tuple(np.quantile(values, [0.5 - level / 2, 0.5 + level / 2]))


def scipy_tau_b(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return scipy.stats.kendalltau(a, b, variant="b").statistic


def test_rank_agreement_intervals_are_the_query_bootstrap():
    rng = np.random.default_rng(7)
    x = rng.random((12, 6))
    y = np.clip(x + rng.normal(0, 0.15, x.shape), 0, 1)
    found = rank_agreement(x, y, n_resamples=300, seed=3)
    assert found.kendall_tau.value == pytest.approx(scipy_tau_b(x.sum(0), y.sum(0)), abs=1e-12)
    assert found.n_items == 6 and found.tied_groups == (0, 0)
    low, high = independent_interval(x, y, scipy_tau_b, 300, 3)
    assert found.kendall_tau.interval.low == pytest.approx(low, abs=1e-12)
    assert found.kendall_tau.interval.high == pytest.approx(high, abs=1e-12)

    def slow_ap(a, b):
        return float(slow_tau_ap(a.tolist(), b.tolist()))

    low, high = independent_interval(x, y, slow_ap, 300, 3)
    assert (found.tau_ap.interval.low, found.tau_ap.interval.high) == pytest.approx((low, high), abs=1e-12)
    assert found.tau_ap_reverse.value == pytest.approx(slow_ap(y.sum(0), x.sum(0)), abs=1e-12)
    sym = found.tau_ap_symmetric
    assert sym.value == pytest.approx((found.tau_ap.value + found.tau_ap_reverse.value) / 2, abs=1e-15)
    doc = found.to_dict()
    assert set(doc["kendall_tau"]) >= {"value", "interval"} and len(doc["tau_ap"]["interval"]) == 2
    assert doc["tau_ap_symmetric"]["n_resamples"] == 300 and doc["tau_ap_symmetric"]["seed"] == 3


def test_rank_agreement_of_identical_grades_is_one_everywhere():
    x = np.arange(30, dtype=float).reshape(10, 3) % 7 / 7
    found = rank_agreement(x, x.copy(), n_resamples=200, seed=0)
    assert found.kendall_tau.value == 1.0
    assert (found.kendall_tau.interval.low, found.kendall_tau.interval.high) == (1.0, 1.0)


def test_one_query_has_no_interval():
    found = rank_agreement(np.array([[0.1, 0.5, 0.3]]), np.array([[0.2, 0.4, 0.1]]), n_resamples=50)
    assert found.kendall_tau.value == pytest.approx(1 / 3)
    assert (
        math.isnan(found.kendall_tau.interval.low)
        and "fewer than two queries" in found.kendall_tau.interval.note
    )


# -- flips and bad input -----------------------------------------------------------------------------------


def test_order_flips():
    flips = order_flips(["a", "b", "c", "d"], [0.4, 0.3, 0.2, 0.2], [0.3, 0.4, 0.1, 0.3])
    # a/b swap; c/d tie under the truth (no flip); b/d and a/d: d goes above a (0.3 = 0.3: tied, no flip)
    assert [(f.first, f.second) for f in flips] == [("a", "b")]
    assert flips[0].to_dict() == {"above_under_truth": "a", "below_under_truth": "b", "truth": [0.4, 0.3],
                                  "other": [0.3, 0.4]}  # fmt: skip


def test_bad_input_is_one_line():
    with pytest.raises(ValidationError, match="NaN"):
        tau_b([0.1, math.nan], [0.1, 0.2])
    with pytest.raises(ValidationError, match="different numbers of items"):
        tau_ap([1, 2, 3], [1, 2])
    with pytest.raises(ValidationError, match=f"at most {MAX_ITEMS:,} items"):
        tau_b(np.zeros(MAX_ITEMS + 1), np.zeros(MAX_ITEMS + 1))
    with pytest.raises(ValidationError, match="one shape"):
        rank_agreement(np.zeros((3, 2)), np.zeros((3, 3)))
    assert math.isnan(tau_ap([1.0], [1.0])) and math.isnan(tau_b([1.0], [1.0]))


def test_resampled_sums_are_bounded():
    from qrelkit.agreement.ranking import MAX_RESAMPLED_CELLS

    x = np.zeros((3, 200))
    with pytest.raises(ValidationError, match=f"more than {MAX_RESAMPLED_CELLS:,}"):
        rank_agreement(x, x, n_resamples=100_000)
