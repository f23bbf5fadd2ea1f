"""The bottom line: one sentence per measure from a comparison, for every wording (better, worse, not
distinguishable, more than / less than / within the labeller-noise floor, no floor, estimates). The
comparisons are built by hand (the numbers in the sentences are the numbers put in, rounded as the
docstring says), and one goes through compare() on runs whose statistics are worked out by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import stats as sps

from qrelkit import Qrels, Run, evaluate
from qrelkit.compare import Comparison, Options, PairComparison, compare
from qrelkit.compare.bottom_line import bottom_line
from qrelkit.compare.noise import NoiseFloor, PairNoise
from qrelkit.estimation import PairEstimate
from qrelkit.estimation.ppi import Interval


def pair(
    treatment: str, measure: str, diff: float, low: float, high: float, p_adj: float, **kw
) -> PairComparison:
    return PairComparison(
        baseline=kw.pop("baseline", "bm25"), treatment=treatment, measure=measure, queries=30,
        mean_baseline=0.5, mean_treatment=0.5 + diff, difference=diff, wins=0, ties=0, losses=0, sd=0.1,
        t_interval=(low, high), bootstrap_interval=(low, high), effect_size=0.0, test="randomization",
        method="exact", permutations=None, statistic=diff, p_value=p_adj, p_adjusted=p_adj,
        significant=p_adj < 0.05, **kw,
    )  # fmt: skip


def noise(treatment: str, measure: str, floor: float, low: float, high: float) -> PairNoise:
    return PairNoise("bm25", treatment, measure, 10, 30, 0.0, floor, low, high, 0.0)


def floor(entries: list[PairNoise]) -> NoiseFloor:
    return NoiseFloor(("alice", "bob"), ({}, {}), tuple(f"c{i}" for i in range(10)), (0, 1), np.eye(2), np.eye(2),
                      1.0, 200, 1000, 0, tuple(entries), {})  # fmt: skip


def comparison(
    pairs: list[PairComparison], noise_floor: NoiseFloor | None = None, alpha: float = 0.05
) -> Comparison:
    return Comparison(results=None, options=Options(alpha=alpha), pairs=tuple(pairs), noise=noise_floor)  # type: ignore[arg-type]


def test_more_than_the_floor_and_not_distinguishable() -> None:
    entries = [
        noise("rerank", "nDCG@10", 0.0767, 0.0722, 0.1669),
        noise("dense", "nDCG@10", 0.0574, -0.06, 0.03),
    ]
    pairs = [
        pair("dense", "nDCG@10", 0.0032, -0.0963, 0.1026, 1.0, noise=entries[1]),
        pair("rerank", "nDCG@10", 0.1560, 0.08451, 0.2276, 0.00043, noise=entries[0]),
    ]
    assert bottom_line(comparison(pairs, floor(entries))) == [
        "rerank beats bm25 on nDCG@10 by +0.156 (95% interval [0.085, 0.228], adjusted p 0.0004), more than "
        "the labeller-noise floor (0.077); dense is not distinguishable from bm25."
    ]


def test_worse_and_below_the_floor_and_within_the_relabelled_range() -> None:
    entries = [
        noise("dense", "R@100", 0.2, -0.25, -0.1),  # |diff| 0.172 <= floor 0.2: by less than the floor
        noise("hybrid", "R@100", 0.01, -0.01, 0.09),  # above the floor, but the simulated range holds 0
    ]
    pairs = [
        pair("dense", "R@100", -0.1722, -0.2784, -0.0659, 0.0123, noise=entries[0]),
        pair("hybrid", "R@100", 0.05, 0.01, 0.09, 0.00001, noise=entries[1]),
    ]
    assert bottom_line(comparison(pairs, floor(entries))) == [
        "hybrid beats bm25 on R@100 by +0.050 (95% interval [0.010, 0.090], adjusted p 1.0e-05), but within "
        "labeller noise: relabelled copies put the difference between -0.010 and +0.090; dense is worse than "
        "bm25 on R@100 by -0.172 (95% interval [-0.278, -0.066], adjusted p 0.0123), but by less than the "
        "labeller-noise floor (0.200)."
    ]


def test_no_floor_one_sentence_per_measure_and_groups_of_runs() -> None:
    pairs = [
        pair("dense", "nDCG@10", 0.01, -0.02, 0.04, 0.5),
        pair("hybrid", "nDCG@10", 0.0002, -0.02, 0.02, 0.9),
        pair("rerank", "nDCG@10", 0.1, 0.05, 0.15, 0.01),
        pair("dense", "AP", 0.0, -0.01, 0.01, 1.0),
        pair("hybrid", "AP", 0.01, -0.01, 0.03, 0.2),
        pair("rerank", "AP", 0.02, -0.01, 0.05, 0.06),
    ]
    assert bottom_line(comparison(pairs)) == [
        "rerank beats bm25 on nDCG@10 by +0.100 (95% interval [0.050, 0.150], adjusted p 0.0100); dense and "
        "hybrid are not distinguishable from bm25; no labeller-noise floor was measured.",
        "On AP, dense, hybrid and rerank are not distinguishable from bm25.",
    ]


def test_two_baselines_the_level_from_alpha_and_no_common_query() -> None:
    pairs = [
        pair("dense", "P@10", 0.0003, 0.0001, 0.0005, 0.001),
        pair("rerank", "P@10", -0.2, -0.3, -0.1, 0.2, baseline="dense"),
        pair("hybrid", "P@10", math.nan, math.nan, math.nan, math.nan, baseline="dense"),
    ]
    assert bottom_line(comparison(pairs, alpha=0.1)) == [
        "dense beats bm25 on P@10 by +0.0003 (90% interval [0.000, 0.001], adjusted p 0.0010); rerank is not "
        "distinguishable from dense; hybrid and dense have no query scored by both; no labeller-noise floor "
        "was measured."
    ]


def test_estimates_speak_of_the_estimate() -> None:
    def interval(value: float, low: float, high: float) -> Interval:
        return Interval("ppi++", value, low, high, 0.01, 0.001, 0.8, 12, 18, 20.0)

    entries = [noise("rerank", "nDCG@10", 0.05, 0.08, 0.2), noise("dense", "nDCG@10", 0.05, -0.05, 0.07)]
    estimated = (
        PairEstimate("bm25", "rerank", "nDCG@10", interval(0.14, 0.09, 0.19), 0.16, 0.13, p_adjusted=0.003,
                     significant=True),
        PairEstimate("bm25", "dense", "nDCG@10", interval(0.01, -0.04, 0.06), 0.0, 0.02, p_adjusted=0.7),
    )  # fmt: skip
    c = replace(comparison([], floor(entries)), human="people", estimator="ppi++", estimated=estimated)
    assert bottom_line(c) == [
        "rerank beats bm25 on nDCG@10 by an estimated +0.140 (ppi++ from 12 people-judged queries, 95% "
        "interval [0.090, 0.190], adjusted p 0.0030), more than the labeller-noise floor (0.050); dense is "
        "not distinguishable from bm25."
    ]


def test_too_few_queries_for_the_power_analysis_are_said_instead_of_a_bare_not_distinguishable() -> None:
    from qrelkit.compare.power import Power
    from qrelkit.estimation.ppi import HumanPower

    def interval(value: float, low: float, high: float, reason: str | None = None) -> Interval:
        return Interval("ppi++", value, low, high, 0.01, 0.3, 0.8, 8, 22, 9.0, "t", reason)

    short = HumanPower("ppi++", 0.05, 0.05, 0.8, 30, 0.6, 40.0, 25.2, 26, 8)
    unreachable = HumanPower("ppi++", 0.01, 0.05, 0.8, 30, 0.6, 900.0, None, None, 8)
    enough = HumanPower("ppi++", 0.3, 0.05, 0.8, 30, 0.6, 5.0, 4.1, 5, 8)
    estimated = (
        PairEstimate("bm25", "dense", "nDCG@10", interval(0.05, -0.05, 0.15), 0.0, 0.0, short, p_adjusted=0.3),
        PairEstimate("bm25", "hybrid", "nDCG@10", interval(0.01, -0.1, 0.12), 0.0, 0.0, unreachable,
                     p_adjusted=0.8),
        PairEstimate("bm25", "rerank", "nDCG@10", interval(0.3, -0.2, 0.8), 0.0, 0.0, enough, p_adjusted=0.2),
        PairEstimate("bm25", "sparse", "nDCG@10",
                     interval(1.0, math.nan, math.nan, "the people's values are all 1"), 0.0, 0.0),
    )  # fmt: skip
    c = replace(comparison([]), human="people", estimator="ppi++", estimated=estimated)
    assert bottom_line(c) == [
        "On nDCG@10, sparse against bm25: not measurable (the people's values are all 1); dense is not "
        "distinguishable from bm25 (8 people-judged queries: too few to detect a difference of 0.050 at power "
        "0.8; 26 needed); hybrid is not distinguishable from bm25 (8 people-judged queries: too few to detect a "
        "difference of 0.010 at power 0.8; not reachable with all 30 queries judged); rerank is not "
        "distinguishable from bm25."
    ]
    # the paired test's power analysis: the same words, in queries
    pw = Power(0.02, "given", 0.1, 0.05, 0.8, 199, 30, 0.2)
    assert bottom_line(comparison([pair("dense", "P@10", 0.02, -0.01, 0.05, 0.2, power=pw)])) == [
        "On P@10, dense is not distinguishable from bm25 (30 queries: too few to detect a difference of 0.020 "
        "at power 0.8; 199 needed)."
    ]


def test_through_compare_on_runs_worked_out_by_hand() -> None:
    """Eight queries; the new run puts the relevant document first on seven of them, the base run on none
    (the eighth: neither). P@1 differences: seven 1s and a 0: mean 7/8, sample sd sqrt(1/8), exact
    randomisation p = 2/2^7 (seven non-zero differences, only the all-positive and all-negative sign
    vectors are as extreme), one measure and one pair so Holm leaves it as it is."""
    qrels = Qrels.from_dict({f"q{i}": {"rel": 1, "non": 0} for i in range(8)})
    base = Run.from_dict({f"q{i}": {"non": 2.0, "rel": 1.0} for i in range(8)}, name="base")
    new = Run.from_dict({**{f"q{i}": {"rel": 2.0, "non": 1.0} for i in range(7)}, "q7": {"non": 2.0, "rel": 1.0}},
                        name="new")  # fmt: skip
    c = compare(evaluate(qrels, [base, new], ["P@1"]))
    half = sps.t.ppf(0.975, 7) * math.sqrt(1 / 8) / math.sqrt(8)
    low, high = 7 / 8 - half, 7 / 8 + half
    assert (f"{low:.3f}", f"{high:.3f}") == ("0.579", "1.171")
    assert bottom_line(c) == [
        "new beats base on P(rel=1)@1 by +0.875 (95% interval [0.579, 1.171], adjusted p 0.0156); no labeller-noise "
        "floor was measured."
    ]
