"""Tests of qrelkit.agreement.kappa against hand arithmetic, published values and slow reference code.

Expected numbers come from the arithmetic written out in the comments, from published output (SAS PROC
FREQ, Krippendorff 2011), or from the slow pure-Python reference below; never from the module itself.
Cross-checks against scikit-learn, statsmodels, krippendorff and irrCAC live in tests/crosscheck/.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from qrelkit.agreement.kappa import (
    NOTE_NO_CHANCE_DISAGREEMENT,
    NOTE_NO_PAIRS,
    PairedGrades,
    agreement_report,
    bootstrap_kappa_ci,
    cohen_kappa,
    gate,
    krippendorff_alpha,
    pair_grades,
    weight_matrix,
)
from qrelkit.errors import QrelkitError, ValidationError

# --------------------------------------------------------------------------------------------------------
# slow reference


def slow_kappa(a: list[int], b: list[int], scale: tuple[int, ...], weights: str = "linear") -> float:
    """Weighted kappa from the definition, as a double loop over grades (no tables, no numpy).

    D_o is the mean disagreement over the n actual pairs; D_e the mean over all n*n (A-grade, B-grade)
    combinations, which is sum_ij v_ij p_i. p_.j written without marginals.
    """
    span = max(scale) - min(scale)

    def v(x: int, y: int) -> float:
        if weights == "unweighted":
            return 0.0 if x == y else 1.0
        d = abs(x - y) / span
        return d if weights == "linear" else d * d

    n = len(a)
    d_o = sum(v(x, y) for x, y in zip(a, b, strict=True)) / n
    d_e = sum(v(x, y) for x in a for y in b) / (n * n)
    return 1.0 - d_o / d_e


def grades_from_table(table: list[list[int]], scale: tuple[int, ...]) -> tuple[list[int], list[int]]:
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [scale[i]] * count
            b += [scale[j]] * count
    return a, b


# --------------------------------------------------------------------------------------------------------
# the hand-computed example

# Ten pairs on the scale (0, 1, 2). Rows are labeller A, columns labeller B:
#
#            B=0  B=1  B=2 | A total
#     A=0     3    1    0  |   4
#     A=1     0    2    1  |   3
#     A=2     1    0    2  |   3
#     B tot   4    3    3  |  10
#
# p_A = p_B = (0.4, 0.3, 0.3).
# Linear disagreement v_ij = |g_i - g_j| / 2: v01 = v12 = 1/2, v02 = 1.
#   D_o = (1 * 1/2 + 1 * 1/2 + 1 * 1) / 10 = 0.2
#   D_e = 1/2 * (.4*.3 + .3*.4 + .3*.3 + .3*.3) + 1 * (.4*.3 + .3*.4) = 1/2 * .42 + .24 = 0.45
#   kappa = 1 - 0.2 / 0.45 = 5/9
# Quadratic v_ij = (g_i - g_j)^2 / 4: v01 = v12 = 1/4, v02 = 1.
#   D_o = (1/4 + 1/4 + 1) / 10 = 0.15;  D_e = 1/4 * .42 + .24 = 0.345;  kappa = 1 - .15/.345 = 13/23
# Unweighted: D_o = 3/10;  D_e = 1 - (.4*.4 + .3*.3 + .3*.3) = 0.66;  kappa = 1 - .3/.66 = 6/11
HAND_A = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
HAND_B = [0, 0, 0, 1, 1, 1, 2, 0, 2, 2]
HAND_CONFUSION = [[3, 1, 0], [0, 2, 1], [1, 0, 2]]


@pytest.mark.parametrize(
    ("weights", "d_o", "d_e", "kappa"),
    [
        ("linear", 0.2, 0.45, 5 / 9),
        ("quadratic", 0.15, 0.345, 13 / 23),
        ("unweighted", 0.3, 0.66, 6 / 11),
    ],
)
def test_hand_example(weights, d_o, d_e, kappa):
    r = cohen_kappa(HAND_A, HAND_B, (0, 1, 2), weights)
    assert r.confusion.tolist() == HAND_CONFUSION
    assert r.marginal_a.tolist() == [4, 3, 3]
    assert r.marginal_b.tolist() == [4, 3, 3]
    assert r.n == 10
    assert r.exact_agreement == pytest.approx(0.7, abs=1e-12)
    assert r.observed == pytest.approx(d_o, abs=1e-12)
    assert r.expected == pytest.approx(d_e, abs=1e-12)
    assert r.kappa == pytest.approx(kappa, abs=1e-12)
    assert r.note is None
    assert r.ci_low < r.kappa < r.ci_high


def test_weight_matrix_uses_grade_values():
    # scale (0, 1, 3): range 3, so 1 and 3 are 2/3 apart and 0 and 1 are 1/3 apart.
    w = weight_matrix((0, 1, 3), "linear")
    np.testing.assert_allclose(w, [[1, 2 / 3, 0], [2 / 3, 1, 1 / 3], [0, 1 / 3, 1]], atol=1e-15)
    q = weight_matrix((0, 1, 3), "quadratic")
    np.testing.assert_allclose(q, [[1, 8 / 9, 0], [8 / 9, 1, 5 / 9], [0, 5 / 9, 1]], atol=1e-15)
    assert weight_matrix((0, 1, 3), "unweighted").tolist() == np.eye(3).tolist()


def test_published_sas_example():
    # SAS PROC FREQ documentation example (printed to 4 decimals; reproduced in statsmodels' test suite):
    # table [[0, 4, 1], [0, 8, 0], [0, 1, 5]], scores 0, 1, 2.
    # Simple kappa 0.4842, ASE 0.1380, 95% CI [0.2137, 0.7547];
    # weighted (Cicchetti-Allison = linear) kappa 0.4701, ASE 0.1457, 95% CI [0.1845, 0.7558].
    a, b = grades_from_table([[0, 4, 1], [0, 8, 0], [0, 1, 5]], (0, 1, 2))
    simple = cohen_kappa(a, b, (0, 1, 2), "unweighted")
    linear = cohen_kappa(a, b, (0, 1, 2), "linear")
    for r, expected in (
        (simple, (0.4842, 0.1380, 0.2137, 0.7547)),
        (linear, (0.4701, 0.1457, 0.1845, 0.7558)),
    ):
        got = (r.kappa, r.std_error, r.ci_low, r.ci_high)
        assert got == pytest.approx(expected, abs=5.1e-5)


def test_interval_level_is_configurable():
    r95 = cohen_kappa(HAND_A, HAND_B, (0, 1, 2), level=0.95)
    r80 = cohen_kappa(HAND_A, HAND_B, (0, 1, 2), level=0.80)
    # z for 95% = 1.959963984540054, for 80% = 1.2815515655446004 (standard normal tables)
    assert r95.ci_high - r95.kappa == pytest.approx(1.959963984540054 * r95.std_error, abs=1e-12)
    assert r80.ci_high - r80.kappa == pytest.approx(1.2815515655446004 * r80.std_error, abs=1e-12)
    assert r80.std_error == r95.std_error


# --------------------------------------------------------------------------------------------------------
# the unused-grade trap

# Scale (0, 1, 2, 3); nobody uses grade 1. Ten pairs:
#
#            B=0  B=2  B=3 | A total         (B=1 and A=1 are all zero)
#     A=0     3    2    0  |   5
#     A=2     1    2    0  |   3
#     A=3     0    0    2  |   2
#     B tot   4    4    2  |  10
#
# p_A = (.5, .3, .2), p_B = (.4, .4, .2) over grades (0, 2, 3). Off-diagonal chance products:
#   (0,2) .20  (2,0) .12  (0,3) .10  (3,0) .08  (2,3) .06  (3,2) .08
# Weights from VALUES (range 3): v02 = 2/3, v03 = 1, v23 = 1/3.
#   D_o = 3 * 2/3 / 10 = 0.2
#   D_e = (.20 + .12) * 2/3 + (.10 + .08) * 1 + (.06 + .08) * 1/3 = .78/3 + .18 = 0.44
#   kappa = 1 - 0.2 / 0.44 = 6/11 = 0.5455
# Weights from POSITIONS among the labels present (0, 2, 3 -> 0, 1, 2; range 2): v02 = 1/2, v03 = 1,
# v23 = 1/2, i.e. 0 and 2 become neighbours:
#   D_o = 3 * 1/2 / 10 = 0.15
#   D_e = (.20 + .12) * 1/2 + (.10 + .08) * 1 + (.06 + .08) * 1/2 = .16 + .18 + .07 = 0.41
#   kappa = 1 - 0.15 / 0.41 = 26/41 = 0.6341   (inflated: the 0-vs-2 disagreements look mild)
TRAP_A = [0, 0, 0, 0, 0, 2, 2, 2, 3, 3]
TRAP_B = [0, 0, 0, 2, 2, 0, 2, 2, 3, 3]


def test_unused_grade_values_not_positions():
    r = cohen_kappa(TRAP_A, TRAP_B, (0, 1, 2, 3), "linear")
    assert r.confusion.tolist() == [[3, 0, 2, 0], [0, 0, 0, 0], [1, 0, 2, 0], [0, 0, 0, 2]]
    assert r.marginal_a.tolist() == [5, 0, 3, 2]
    assert r.observed == pytest.approx(0.2, abs=1e-12)
    assert r.expected == pytest.approx(0.44, abs=1e-12)
    assert r.kappa == pytest.approx(6 / 11, abs=1e-12)

    naive_positions = 26 / 41  # the hand value above, from positions among present labels
    assert naive_positions == pytest.approx(0.634146, abs=1e-6)
    assert abs(r.kappa - naive_positions) > 0.08
    # The positional kappa is what you get by (wrongly) relabelling the present grades 0, 1, 2.
    relabel = {0: 0, 2: 1, 3: 2}
    relabelled = cohen_kappa([relabel[g] for g in TRAP_A], [relabel[g] for g in TRAP_B], (0, 1, 2))
    assert relabelled.kappa == pytest.approx(naive_positions, abs=1e-12)


def test_value_weights_do_not_depend_on_listing_unused_grades():
    # Kappa is a ratio of disagreements, so the 1/(g_max - g_min) factor cancels and an unused grade only
    # changes the confusion matrix's shape, not kappa: (0, 2, 3) and (0, 1, 2, 3) give the same 6/11.
    for scale in ((0, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3, 4)):
        assert cohen_kappa(TRAP_A, TRAP_B, scale).kappa == pytest.approx(6 / 11, abs=1e-12)


# --------------------------------------------------------------------------------------------------------
# degenerate cases and bad input


def test_no_pairs_is_named_not_an_exception():
    r = cohen_kappa([], [], (0, 1, 2, 3))
    assert r.n == 0
    assert math.isnan(r.kappa) and math.isnan(r.std_error) and math.isnan(r.ci_low)
    assert r.note == NOTE_NO_PAIRS
    assert r.confusion.shape == (4, 4)


def test_both_constant_on_same_grade_is_named():
    r = cohen_kappa([2, 2, 2], [2, 2, 2], (0, 1, 2, 3))
    assert math.isnan(r.kappa) and math.isnan(r.ci_high)
    assert r.observed == 0.0 and r.expected == 0.0
    assert r.exact_agreement == 1.0
    assert r.note == NOTE_NO_CHANCE_DISAGREEMENT


def test_constant_on_different_grades_is_zero():
    # A always 0, B always 3: D_o = D_e = 1, so kappa = 0 (defined; chance explains everything).
    r = cohen_kappa([0, 0, 0], [3, 3, 3], (0, 1, 2, 3))
    assert r.kappa == pytest.approx(0.0, abs=1e-15)
    assert r.note is None


def test_perfect_agreement_has_zero_standard_error():
    # kappa = 1: only diagonal p_ii, where w_ii = 1 and (1 - kappa) = 0, so the FCE bracket is
    # sum_i p_ii * 1^2 - (1 - P_e * 0)^2 = 1 - 1 = 0: the standard error is 0 up to rounding.
    r = cohen_kappa([0, 1, 2, 3, 3], [0, 1, 2, 3, 3], (0, 1, 2, 3))
    assert r.kappa == 1.0
    assert r.std_error == pytest.approx(0.0, abs=1e-7)
    assert r.ci_low == pytest.approx(1.0, abs=1e-6)


def test_grade_outside_scale():
    with pytest.raises(ValidationError) as info:
        cohen_kappa([0, 1, 4], [0, 1, 2], (0, 1, 2, 3))
    message = str(info.value)
    assert "grade 4" in message and "(0, 1, 2, 3)" in message and "Fix:" in message
    assert "labeller A" in message


def test_grade_outside_scale_names_the_pair():
    paired = pair_grades({("q1", "d1"): 0, ("q1", "d2"): 7}, {("q1", "d1"): 0, ("q1", "d2"): 1})
    with pytest.raises(ValidationError, match=r"grade 7 for pair \('q1', 'd2'\)"):
        agreement_report(paired, (0, 1, 2, 3))


@pytest.mark.parametrize(
    "scale", [(3, 2, 1, 0), (1,), (0, 0, 1), (0.0, 1.0, 2.0), (True, False), "0123", None, (0, 1, 1, 2)]
)
def test_bad_scale(scale):
    with pytest.raises(ValidationError, match="scale"):
        cohen_kappa([0], [0], scale)


def test_bad_inputs():
    with pytest.raises(ValidationError, match="did you mean 'linear'"):
        cohen_kappa([0], [0], (0, 1), "Linear")
    with pytest.raises(ValidationError, match="integers"):
        cohen_kappa([0.5, 1.0], [0, 1], (0, 1))
    with pytest.raises(ValidationError, match="differ in length"):
        cohen_kappa([0, 1], [0], (0, 1))
    with pytest.raises(ValidationError, match="level"):
        cohen_kappa([0, 1], [0, 1], (0, 1), level=95)
    with pytest.raises(ValidationError, match="n_resamples"):
        bootstrap_kappa_ci(PairedGrades.from_arrays(["q"], [0], [0]), (0, 1), n_resamples=0)
    with pytest.raises(ValidationError, match="seed"):
        bootstrap_kappa_ci(PairedGrades.from_arrays(["q"], [0], [0]), (0, 1), seed=-1)
    with pytest.raises(ValidationError, match="same length"):
        PairedGrades.from_arrays(["q", "q"], [0], [0, 1])
    assert issubclass(ValidationError, QrelkitError)


# --------------------------------------------------------------------------------------------------------
# pairing


def test_pair_grades_from_mappings():
    a = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d1"): 3, ("q2", "d9"): 1}
    b = {("q2", "d1"): 2, ("q1", "d1"): 2, ("q1", "d2"): 1, ("q3", "d4"): 0, ("q3", "d5"): 0}
    p = pair_grades(a, b)
    assert p.n == 3
    assert list(zip(p.query_ids, p.doc_ids, strict=True)) == [("q1", "d1"), ("q1", "d2"), ("q2", "d1")]
    assert p.grades_a.tolist() == [2, 0, 3]
    assert p.grades_b.tolist() == [2, 1, 2]
    assert p.only_a == (("q2", "d9"),)
    assert p.only_b == (("q3", "d4"), ("q3", "d5"))
    with pytest.raises(ValueError):
        p.grades_a[0] = 1  # read-only: a PairedGrades is a value


def test_pair_grades_from_polars():
    a = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d1"], "grade": [2, 0, 3]})
    b = pl.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["d2", "d1", "d3"], "grade": [1, 3, 0]})
    p = pair_grades(a, b)
    assert list(zip(p.query_ids, p.doc_ids, strict=True)) == [("q1", "d2"), ("q2", "d1")]
    assert p.grades_a.tolist() == [0, 3] and p.grades_b.tolist() == [1, 3]
    assert len(p.only_a) == 1 and len(p.only_b) == 1


def test_pair_grades_rejects_bad_frames_and_mappings():
    dup = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "grade": [1, 2]})
    with pytest.raises(ValidationError, match=r"pair \('q1', 'd1'\) more than once"):
        pair_grades(dup, dup)
    floats = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "grade": [1.5]})
    with pytest.raises(ValidationError, match="integer grade"):
        pair_grades(floats, floats)
    with pytest.raises(ValidationError, match="integer grade"):
        pair_grades({("q1", "d1"): 1.0}, {("q1", "d1"): 1})
    with pytest.raises(ValidationError, match="neither a mapping nor a frame"):
        pair_grades([("q1", "d1", 1)], {})
    with pytest.raises(ValidationError, match="neither a mapping nor a frame"):
        pair_grades(dup.rename({"grade": "label"}), dup)
    nulls = pl.DataFrame(
        {"query_id": ["q1"], "doc_id": ["d1"], "grade": [None]}, schema_overrides={"grade": pl.Int64}
    )
    with pytest.raises(ValidationError, match="integer grade"):
        pair_grades(nulls, nulls)


# --------------------------------------------------------------------------------------------------------
# Krippendorff's alpha


def test_alpha_hand_example():
    # Two labellers, four units: (0,0), (1,1), (0,1), (1,1). Each unit has m_u = 2, so each ordered
    # pair of its ratings adds 1/(m_u - 1) = 1 to the coincidence matrix:
    #   o = [[2, 1], [1, 4]];  n_0 = 3, n_1 = 5, n = 8
    # Nominal: alpha = 1 - (n - 1) * (o_01 + o_10) / (n_0 n_1 + n_1 n_0) = 1 - 7 * 2 / 30 = 8/15.
    # Interval with values 0, 1 has delta_01 = 1 as well; ordinal has delta_01 = (n_0 + n_1 - 8/2)^2 = 16
    # in numerator and denominator alike, so all three levels give 8/15.
    ratings = [[0, 1, 0, 1], [0, 1, 1, 1]]
    for level in ("nominal", "ordinal", "interval"):
        r = krippendorff_alpha(ratings, level)
        assert r.alpha == pytest.approx(8 / 15, abs=1e-12)
        assert r.n_units == 4 and r.n_pairable == 8
    # an unused grade in the domain changes nothing (its n_g is 0), a unit with one rating is dropped
    r = krippendorff_alpha([[0, 1, 0, 1, np.nan], [0, 1, 1, 1, 2]], "ordinal", value_domain=(0, 1, 2, 3))
    assert r.alpha == pytest.approx(8 / 15, abs=1e-12)
    assert r.n_units == 4


def test_alpha_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: four observers, twelve
    # units, missing values. Published: nominal 0.743, ordinal 0.815, interval 0.849.
    nan = np.nan
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    for level, published in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        assert krippendorff_alpha(data, level).alpha == pytest.approx(published, abs=5e-4)
    assert krippendorff_alpha(data, "nominal").n_units == 11  # the last unit has one rating


def test_alpha_degenerate_and_bad_input():
    same = krippendorff_alpha([[2, 2, 2], [2, 2, 2]], "ordinal", value_domain=(0, 1, 2, 3))
    assert math.isnan(same.alpha) and "same value" in same.note
    lonely = krippendorff_alpha([[1, np.nan], [np.nan, 2]], "ordinal")
    assert math.isnan(lonely.alpha) and lonely.n_units == 0 and lonely.note
    with pytest.raises(ValidationError, match="value domain"):
        krippendorff_alpha([[0, 4], [0, 1]], "ordinal", value_domain=(0, 1, 2, 3))
    with pytest.raises(ValidationError, match="two labellers"):
        krippendorff_alpha([[0, 1, 2]], "ordinal")
    with pytest.raises(ValidationError, match="did you mean 'ordinal'"):
        krippendorff_alpha([[0, 1], [0, 1]], "ordnal")


# --------------------------------------------------------------------------------------------------------
# report


def test_report_per_query_and_disagreements():
    a = {("q1", "d1"): 0, ("q1", "d2"): 1, ("q1", "d3"): 0, ("q2", "d1"): 2, ("q2", "d2"): 2, ("q3", "d1"): 3}
    b = {("q1", "d1"): 0, ("q1", "d2"): 1, ("q1", "d3"): 1, ("q2", "d1"): 2, ("q2", "d2"): 2, ("q3", "d1"): 0}
    b[("q4", "d1")] = 1
    rep = agreement_report(pair_grades(a, b), (0, 1, 2, 3), n_resamples=200)
    # q1: A = (0, 1, 0), B = (0, 1, 1); linear v01 = 1/3 on the 0-3 scale.
    #   D_o = (1/3) / 3 = 1/9;  p_A = (2/3, 1/3), p_B = (1/3, 2/3) on grades 0, 1
    #   D_e = 1/3 * (2/3 * 2/3 + 1/3 * 1/3) = 5/27;  kappa = 1 - (1/9) / (5/27) = 2/5;  exact 2/3
    # q2: both always 2 -> undefined (NaN); exact 1.   q3: one pair, 3 vs 0 -> D_o = D_e = 1, kappa 0.
    q = {x.query_id: x for x in rep.per_query}
    assert [x.query_id for x in rep.per_query] == ["q1", "q2", "q3"]
    assert (q["q1"].n_pairs, q["q2"].n_pairs, q["q3"].n_pairs) == (3, 2, 1)
    assert q["q1"].kappa == pytest.approx(2 / 5, abs=1e-12)
    assert q["q1"].exact_agreement == pytest.approx(2 / 3, abs=1e-12)
    assert math.isnan(q["q2"].kappa) and q["q2"].exact_agreement == 1.0
    assert q["q3"].kappa == pytest.approx(0.0, abs=1e-12)
    # disagreements: largest distance first
    assert [(d.query_id, d.doc_id, d.grade_a, d.grade_b, d.distance) for d in rep.disagreements] == [
        ("q3", "d1", 3, 0, 3),
        ("q1", "d3", 0, 1, 1),
    ]
    assert rep.n_only_a == 0 and rep.n_only_b == 1
    assert rep.marginals == {0: (2, 2), 1: (1, 2), 2: (2, 2), 3: (1, 0)}
    assert rep.kappa.weights == "linear" and rep.alpha.level == "ordinal"


def test_report_without_common_pairs():
    rep = agreement_report(pair_grades({("q1", "d1"): 1}, {("q2", "d1"): 2}), (0, 1, 2, 3))
    assert rep.kappa.n == 0 and rep.kappa.note == NOTE_NO_PAIRS
    assert math.isnan(rep.bootstrap.low) and math.isnan(rep.alpha.alpha)
    assert rep.per_query == () and rep.disagreements == ()
    assert (rep.n_only_a, rep.n_only_b) == (1, 1)
    json.dumps(rep.to_dict(), allow_nan=False)
    assert not gate(rep).passed


def test_report_to_dict_is_plain_json():
    rng = np.random.default_rng(3)
    qids, ga, gb = realistic_pairs(rng, n_queries=5, per_query=8)
    rep = agreement_report(PairedGrades.from_arrays(qids, ga, gb), (0, 1, 2, 3), n_resamples=100)
    d = rep.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["scale"] == [0, 1, 2, 3] and back["weights"] == "linear"
    assert isinstance(back["kappa"]["kappa"], float) and isinstance(back["kappa"]["std_error"], float)
    assert back["kappa"]["confusion"] == rep.confusion.tolist()
    assert back["kappa"]["weight_matrix"][0][1] == pytest.approx(2 / 3)
    assert back["bootstrap"]["n_resamples"] == 100 and back["bootstrap"]["seed"] == 0
    assert back["n_pairs"] == 40
    # NaN becomes null in the dict
    undefined = cohen_kappa([1, 1], [1, 1], (0, 1, 2)).to_dict()
    assert undefined["kappa"] is None and undefined["note"] == NOTE_NO_CHANCE_DISAGREEMENT
    json.dumps(undefined, allow_nan=False)


# --------------------------------------------------------------------------------------------------------
# gate


def _kappa_with(kappa: float, low: float, high: float):
    base = cohen_kappa(HAND_A, HAND_B, (0, 1, 2))
    return dataclasses.replace(base, kappa=kappa, ci_low=low, ci_high=high)


def test_gate_pass_message():
    g = gate(_kappa_with(0.71, 0.62, 0.80), 0.6)
    assert g.passed and g.threshold == 0.6 and g.value_used == 0.62 and g.use == "ci_low"
    assert g.message == "kappa 0.71, 95% CI [0.62, 0.80]; lower bound 0.62 >= 0.60: PASS"


def test_gate_fail_uses_the_lower_bound_not_the_estimate():
    g = gate(_kappa_with(0.65, 0.52, 0.78), 0.6)
    assert not g.passed
    assert g.message == "kappa 0.65, 95% CI [0.52, 0.78]; lower bound 0.52 < 0.60: FAIL"
    assert gate(_kappa_with(0.65, 0.52, 0.78), 0.6, use="kappa").passed


def test_gate_boundary():
    assert gate(_kappa_with(0.7, 0.6, 0.8), 0.6).passed  # equal to the threshold passes
    g = gate(_kappa_with(0.7, 0.59999, 0.8), 0.6)
    assert not g.passed
    assert g.message.endswith("lower bound 0.599990 < 0.600000: FAIL")
    assert "0.60 < 0.60" not in g.message  # never print a comparison that reads as false


def test_gate_undefined_and_bad_use():
    g = gate(cohen_kappa([1, 1], [1, 1], (0, 1, 2)), 0.6)
    assert not g.passed and "FAIL" in g.message and "same single grade" in g.message
    with pytest.raises(ValidationError, match="AgreementReport"):
        gate(_kappa_with(0.7, 0.6, 0.8), use="bootstrap_low")
    with pytest.raises(ValidationError, match="did you mean"):
        gate(_kappa_with(0.7, 0.6, 0.8), use="ci_lo")
    with pytest.raises(ValidationError, match="min_kappa"):
        gate(_kappa_with(0.7, 0.6, 0.8), 60)


def test_gate_on_report_bootstrap():
    rng = np.random.default_rng(11)
    qids, ga, gb = realistic_pairs(rng, n_queries=30, per_query=30)
    rep = agreement_report(PairedGrades.from_arrays(qids, ga, gb), (0, 1, 2, 3))
    g = gate(rep, 0.3, use="bootstrap_low")
    assert g.passed and g.value_used == rep.bootstrap.low
    assert "query-bootstrap CI" in g.message and g.message.endswith("PASS")


# --------------------------------------------------------------------------------------------------------
# bootstrap


def realistic_pairs(rng: np.random.Generator, n_queries: int, per_query: int):
    """Two labellers on a 0-3 scale: each query has its own grade mix; disagreements mostly one grade."""
    qids, ga, gb = [], [], []
    for q in range(n_queries):
        mix = rng.dirichlet([3.0, 2.0, 1.5, 1.0])
        a = rng.choice(4, size=per_query, p=mix)
        step = rng.choice([-2, -1, 0, 1, 2], size=per_query, p=[0.03, 0.14, 0.66, 0.14, 0.03])
        b = np.clip(a + step, 0, 3)
        qids += [f"q{q:03d}"] * per_query
        ga += a.tolist()
        gb += b.tolist()
    return qids, ga, gb


def test_bootstrap_matches_a_slow_loop_over_the_same_draws():
    rng = np.random.default_rng(5)
    qids, ga, gb = realistic_pairs(rng, n_queries=6, per_query=7)
    got = bootstrap_kappa_ci(PairedGrades.from_arrays(qids, ga, gb), (0, 1, 2, 3), n_resamples=50, seed=9)
    # documented scheme: queries in sorted id order, draws = default_rng(seed).integers(0, Q, (R, Q))
    order = sorted(set(qids))
    by_query = {q: [(x, y) for qq, x, y in zip(qids, ga, gb, strict=True) if qq == q] for q in order}
    draws = np.random.default_rng(9).integers(0, len(order), size=(50, len(order)))
    kappas = []
    for row in draws:
        pairs = [p for i in row for p in by_query[order[i]]]
        kappas.append(slow_kappa([p[0] for p in pairs], [p[1] for p in pairs], (0, 1, 2, 3)))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)


def test_bootstrap_deterministic_and_order_free():
    rng = np.random.default_rng(7)
    qids, ga, gb = realistic_pairs(rng, n_queries=30, per_query=30)
    paired = PairedGrades.from_arrays(qids, ga, gb)
    first = bootstrap_kappa_ci(paired, (0, 1, 2, 3), seed=42)
    again = bootstrap_kappa_ci(paired, (0, 1, 2, 3), seed=42)
    assert first == again
    other = bootstrap_kappa_ci(paired, (0, 1, 2, 3), seed=43)
    assert (other.low, other.high) != (first.low, first.high)
    perm = rng.permutation(len(qids))
    shuffled = PairedGrades.from_arrays([qids[i] for i in perm], np.array(ga)[perm], np.array(gb)[perm])
    assert bootstrap_kappa_ci(shuffled, (0, 1, 2, 3), seed=42) == first


def test_bootstrap_contains_estimate_and_is_fast():
    rng = np.random.default_rng(2026)
    qids, ga, gb = realistic_pairs(rng, n_queries=30, per_query=30)  # the chapter's 900 pairs
    paired = PairedGrades.from_arrays(qids, ga, gb)
    estimate = slow_kappa(ga, gb, (0, 1, 2, 3))
    start = time.perf_counter()
    ci = bootstrap_kappa_ci(paired, (0, 1, 2, 3), n_resamples=2000, seed=0)
    elapsed = time.perf_counter() - start
    assert ci.low < estimate < ci.high
    assert 0.0 < ci.high - ci.low < 0.5
    assert ci.n_queries == 30 and ci.n_undefined == 0 and ci.note is None
    assert elapsed < 1.0


def test_bootstrap_single_query_is_named():
    ci = bootstrap_kappa_ci(PairedGrades.from_arrays(["q"] * 3, [0, 1, 2], [0, 1, 1]), (0, 1, 2))
    assert math.isnan(ci.low) and math.isnan(ci.high) and "fewer than two queries" in ci.note


# --------------------------------------------------------------------------------------------------------
# properties

SCALES = st.lists(st.integers(-3, 9), min_size=2, max_size=6, unique=True).map(lambda s: tuple(sorted(s)))
WEIGHTS = st.sampled_from(["linear", "quadratic", "unweighted"])


@st.composite
def two_labellers(draw, min_size=1):
    scale = draw(SCALES)
    n = draw(st.integers(min_size, 60))
    grade = st.sampled_from(scale)
    a = draw(st.lists(grade, min_size=n, max_size=n))
    b = draw(st.lists(grade, min_size=n, max_size=n))
    return scale, a, b


@settings(max_examples=150, deadline=None)
@given(two_labellers(), WEIGHTS)
@example(((0, 3, 7), [0, 0, 7], [3, 3, 3]), "linear")  # the variance's terms cancel exactly
def test_property_symmetric_in_labellers(data, weights):
    scale, a, b = data
    ab, ba = cohen_kappa(a, b, scale, weights), cohen_kappa(b, a, scale, weights)
    assume(not math.isnan(ab.kappa))
    assert ba.kappa == pytest.approx(ab.kappa, abs=1e-12)
    assert ba.std_error == ab.std_error  # exact integer arithmetic: the same either way
    assert ba.confusion.tolist() == ab.confusion.T.tolist()


def test_std_error_zero_when_the_variance_cancels():
    # B gives 3 to every pair, so p_.3 = 1: wbar_i. = w_i3 and D_o = D_e, kappa = 0. On the pairs seen
    # (j = 3), x_i3 = w_i3 - (w_i3 + wbar_.3)(1 - 0) = -wbar_.3, the same for both rows: the variance of
    # x is 0 exactly. Computed in floats, the two terms of the variance left 8e-17 one way and 0 the other
    # (std_error 9.03e-09 against 0.0).
    for a, b in (([0, 0, 7], [3, 3, 3]), ([3, 3, 3], [0, 0, 7])):
        r = cohen_kappa(a, b, (0, 3, 7), "linear")
        assert r.kappa == 0.0
        assert r.std_error == 0.0
        assert (r.ci_low, r.ci_high) == (0.0, 0.0)


@settings(max_examples=150, deadline=None)
@given(two_labellers(), WEIGHTS)
def test_property_identical_ratings_give_one(data, weights):
    scale, a, _ = data
    assume(len(set(a)) > 1)
    r = cohen_kappa(a, a, scale, weights)
    assert r.kappa == pytest.approx(1.0, abs=1e-12)
    assert r.observed == 0.0


@settings(max_examples=100, deadline=None)
@given(two_labellers(), WEIGHTS, st.randoms(use_true_random=False), st.integers(1, 8))
def test_property_invariant_to_query_order(data, weights, random, n_queries):
    scale, a, b = data
    qids = [f"q{i % n_queries}" for i in range(len(a))]
    blocks = sorted(set(qids))
    random.shuffle(blocks)
    order = [i for q in blocks for i in range(len(a)) if qids[i] == q]
    r1 = cohen_kappa(a, b, scale, weights)
    r2 = cohen_kappa([a[i] for i in order], [b[i] for i in order], scale, weights)
    assert r2.confusion.tolist() == r1.confusion.tolist()
    if not math.isnan(r1.kappa):
        assert r2.kappa == pytest.approx(r1.kappa, abs=1e-12)
        assert r2.std_error == pytest.approx(r1.std_error, abs=1e-12)
    p1 = PairedGrades.from_arrays(qids, a, b)
    p2 = PairedGrades.from_arrays([qids[i] for i in order], [a[i] for i in order], [b[i] for i in order])
    b1 = bootstrap_kappa_ci(p1, scale, weights, n_resamples=50)
    b2 = bootstrap_kappa_ci(p2, scale, weights, n_resamples=50)
    np.testing.assert_array_equal([b1.low, b1.high, b1.n_undefined], [b2.low, b2.high, b2.n_undefined])


@settings(max_examples=200, deadline=None)
@given(two_labellers(), WEIGHTS)
def test_property_matches_slow_reference(data, weights):
    scale, a, b = data
    r = cohen_kappa(a, b, scale, weights)
    assume(not math.isnan(r.kappa))
    assert r.kappa == pytest.approx(slow_kappa(a, b, scale, weights), abs=1e-12)
