"""The labeller-noise floor: identical labellers, a channel that swaps two grades, seeds, the bootstrap
arithmetic by hand, Kendall's tau by scipy, and refusals."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from qrelkit import Qrels, evaluate, read_qrels, read_run
from qrelkit.compare import VERDICT_EXCEEDS, VERDICT_NOT, VERDICT_WITHIN, compare, compare_runs, run_pairs
from qrelkit.compare import stats as cstats
from qrelkit.compare.noise import (
    FLOOR_LEVEL,
    calibration_queries,
    channel_from_confusion,
    noise_floor,
    simulated_differences,
)
from qrelkit.errors import ValidationError

from ..conftest import EXAMPLE

RUNS = ["bm25", "dense", "hybrid", "rerank"]
MEASURES = ["nDCG@10", "R(rel=1)@100"]


@pytest.fixture(scope="module")
def example():
    qrels = read_qrels(EXAMPLE / "qrels.txt")
    runs = [read_run(EXAMPLE / "runs" / f"{name}.run") for name in RUNS]
    alice = read_qrels(EXAMPLE / "judgments" / "alice.qrels")
    bob = read_qrels(EXAMPLE / "judgments" / "bob.qrels")
    results = evaluate(qrels, runs, MEASURES)
    return qrels, runs, alice, bob, results


def floor(example, a, b, **kw):
    qrels, runs, _, _, results = example
    kw = {"replicates": 20, "resamples": 2000, "seed": 3} | kw
    return noise_floor(qrels, runs, results, a, b, run_pairs(results), **kw)


def test_identical_labellers_give_a_floor_of_zero(example):
    _, _, alice, _, results = example
    nf = floor(example, alice, alice, smoothing=0.0)
    for p in nf.pairs:
        assert p.empirical_floor == 0.0 and p.mean_labeller_difference == 0.0
        observed = results.mean(p.measure, p.treatment) - results.mean(p.measure, p.baseline)
        # no disagreement and no smoothing: the channel is the identity, every copy is the final qrels
        assert p.simulated_low == pytest.approx(observed, abs=1e-12)
        assert p.simulated_high == pytest.approx(observed, abs=1e-12)
        assert p.sign_flip == 0.0
    assert np.array_equal(nf.channel, np.eye(len(nf.scale)))


def test_a_channel_swapping_grades_1_and_2_leaves_binary_recall_and_moves_ndcg(example):
    qrels, runs, _, _, results = example
    scale = (0, 1, 2, 3)
    channel = np.eye(4)
    channel[1] = [0, 0.5, 0.5, 0]
    channel[2] = [0, 0.5, 0.5, 0]
    pairs = run_pairs(results)
    diffs = simulated_differences(qrels, runs, results, scale, channel, pairs, replicates=30, seed=1)
    for b, t in pairs:
        recall = diffs[b, t, "R(rel=1)@100"]
        observed = results.mean("R(rel=1)@100", t) - results.mean("R(rel=1)@100", b)
        assert recall == pytest.approx(np.full(30, observed), abs=1e-12)
    moved = [np.ptp(diffs[b, t, "nDCG@10"]) for b, t in pairs]
    assert max(moved) > 1e-3


def test_the_same_seed_gives_the_same_floor(example):
    _, _, alice, bob, _ = example
    one = floor(example, alice, bob).to_dict()
    assert one == floor(example, alice, bob).to_dict()
    assert one != floor(example, alice, bob, seed=4).to_dict()


def test_empirical_floor_by_hand(example):
    """e_q from the runs' per-query values under each labeller; the bootstrap with the same seeded draws."""
    _, runs, alice, bob, _ = example
    nf = floor(example, alice, bob)
    cal = nf.calibration_queries
    under_a = evaluate(alice, runs, MEASURES)
    under_b = evaluate(bob, runs, MEASURES)
    p = nf.pair("bm25", "rerank", "nDCG@10")
    e = np.array(
        [
            (under_a.value("nDCG@10", q, "rerank") - under_a.value("nDCG@10", q, "bm25"))
            - (under_b.value("nDCG@10", q, "rerank") - under_b.value("nDCG@10", q, "bm25"))
            for q in cal
        ]
    )
    assert p.calibration_queries == len(cal) == 10 and p.queries == 30
    assert p.mean_labeller_difference == pytest.approx(e.mean(), abs=1e-12)
    means = []
    for block in range(2):
        draws = cstats.rng_for(3, cstats.STREAM_NOISE_BOOT, block).integers(0, 10, size=(cstats.BLOCK, 10))
        means += [e[row].mean() for row in draws[: min(cstats.BLOCK, 2000 - block * cstats.BLOCK)]]
    scaled = e.mean() + (np.array(means) - e.mean()) * math.sqrt(10 / 30)
    assert p.empirical_floor == pytest.approx(np.quantile(np.abs(scaled), FLOOR_LEVEL), rel=1e-9)


def test_kendall_tau_of_the_rankings_under_each_labeller(example):
    _, runs, alice, bob, _ = example
    nf = floor(example, alice, bob)
    cal = set(nf.calibration_queries)
    under_a = evaluate(alice, runs, MEASURES)
    under_b = evaluate(bob, runs, MEASURES)
    for m in MEASURES:
        ma = [np.mean([v for q, v in under_a.values(m, r).items() if q in cal]) for r in RUNS]
        mb = [np.mean([v for q, v in under_b.values(m, r).items() if q in cal]) for r in RUNS]
        assert nf.kendall_tau[m][0] == pytest.approx(sps.kendalltau(ma, mb).statistic)


def test_channel_is_symmetrised_and_smoothed():
    confusion = np.array([[5.0, 1.0, 0.0], [3.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    channel = channel_from_confusion(confusion, smoothing=1.0)
    # S = C + C^T = [[10, 4, 0], [4, 4, 0], [0, 0, 0]]; rows (S + 1) / (sum + 3); the unused grade stays
    assert channel[0] == pytest.approx([11 / 17, 5 / 17, 1 / 17])
    assert channel[1] == pytest.approx([5 / 11, 5 / 11, 1 / 11])
    assert channel[2].tolist() == [0.0, 0.0, 1.0]


def test_verdicts(example):
    qrels, runs, alice, bob, _ = example
    c = compare_runs(
        qrels, runs, MEASURES, labellers=(alice, bob), noise_replicates=20, bootstrap=2000, test="t"
    )
    for p in c.pairs:
        if not p.significant:
            assert p.verdict == VERDICT_NOT
        elif (
            abs(p.difference) <= p.noise.empirical_floor
            or p.noise.simulated_low <= 0 <= p.noise.simulated_high
        ):
            assert p.verdict == VERDICT_WITHIN
        else:
            assert p.verdict == VERDICT_EXCEEDS
    assert c.pair("bm25", "rerank", "nDCG@10").verdict == VERDICT_EXCEEDS
    assert "noise_floor" in c.to_dict()["comparison"]


def test_qrels_without_the_calibration_queries_is_a_one_line_error(example):
    qrels, runs, alice, bob, _ = example
    other = Qrels(qrels.frame.filter(pl.col("query_id") > "q10"), qrels.fingerprint, "later.qrels")
    with pytest.raises(ValidationError) as err:
        calibration_queries(other, alice, bob)
    assert "lack 10 of the 10 calibration queries (first: 'q01')" in str(err.value)
    assert "\n" not in str(err.value)
    no_overlap = Qrels(alice.frame.filter(pl.col("query_id") == "q01"), alice.fingerprint, "a")
    with pytest.raises(ValidationError, match="share no query"):
        calibration_queries(
            qrels, no_overlap, Qrels(bob.frame.filter(pl.col("query_id") == "q02"), bob.fingerprint, "b")
        )
    with pytest.raises(ValidationError, match="calibration queries"):
        compare(
            evaluate(other, runs, MEASURES),
            noise=floor((other, runs, alice, bob, evaluate(other, runs, MEASURES)), alice, bob),
        )
