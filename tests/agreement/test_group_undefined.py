"""Group agreement with nothing to measure returns undefined values with their reasons, never raises: one
labeller who graded nothing, or no pair graded by two."""

from __future__ import annotations

import math

from qrelkit.agreement.group import group_agreement, group_gate, group_grades

SCALE = [0, 1, 2, 3]


def test_no_pair_graded_by_two_labellers_is_undefined_not_an_error() -> None:
    bob = {("q1", f"d{i}"): i % 4 for i in range(10)}
    report = group_agreement(group_grades({"alice": {}, "bob": bob}), SCALE)
    assert report.n_units == 0 and report.n_single == 10
    assert math.isnan(report.mean_kappa)
    assert math.isnan(report.alpha["interval"].alpha) and math.isnan(report.fleiss.kappa)
    for statistic in ("mean_kappa", "alpha_interval", "alpha_ordinal", "fleiss"):
        verdict = group_gate(report, 0.6, statistic)
        assert not verdict.passed and math.isnan(verdict.value_used)
        assert "(no pair was graded by two labellers)" in verdict.message


def test_three_labellers_one_with_no_shared_pair() -> None:
    alice = {("q1", "d1"): 0, ("q1", "d2"): 3, ("q2", "d1"): 1, ("q2", "d2"): 2}
    report = group_agreement(group_grades({"alice": alice, "bob": dict(alice), "carol": {}}), SCALE)
    # alice and bob agree on every pair: weighted kappa 1 by hand (observed disagreement 0)
    assert report.pairwise["alice", "bob"].kappa == 1.0
    assert report.pairwise["alice", "carol"].n == 0 and math.isnan(report.pairwise["alice", "carol"].kappa)
    assert report.mean_kappa == 1.0
