"""The one resampling module (qrelkit.agreement.resample): every draw against an independent loop over
numpy's generators, and every caller's defaults against the module's named ones."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from qrelkit.agreement import resample as rs


def test_resample_counts_are_the_bincount_of_one_generator_seeded_by_the_seed_alone():
    counts = rs.resample_counts(5, 7, 11)
    draws = np.random.default_rng(11).integers(0, 5, size=(7, 5))
    assert counts.shape == (7, 5)
    for r in range(7):
        assert counts[r].tolist() == [int((draws[r] == q).sum()) for q in range(5)]
    assert (counts.sum(axis=1) == 5).all()  # each resample draws as many queries as there are


def test_query_bootstrap_is_the_percentile_interval_of_a_plain_loop():
    # per query: (pairs agreed, pairs) -> the statistic is the share of pairs agreed over the resample
    per_query = np.array([[3.0, 4.0], [1.0, 4.0], [0.0, 2.0], [5.0, 5.0]])
    found = rs.query_bootstrap(per_query, lambda s: s[:, 0] / s[:, 1], n_resamples=500, seed=3, level=0.9,
                               weights="linear", what="share")  # fmt: skip
    rng = np.random.default_rng(3)
    draws = rng.integers(0, 4, size=(500, 4))
    values = [sum(per_query[i, 0] for i in row) / sum(per_query[i, 1] for i in row) for row in draws]
    low, high = np.quantile(values, [0.05, 0.95])
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-12)
    assert (found.n_resamples, found.seed, found.level, found.n_queries, found.n_undefined) == (
        500,
        3,
        0.9,
        4,
        0,
    )


def test_query_bootstrap_of_one_query_cannot_vary_and_writes_null():
    found = rs.query_bootstrap(np.ones((1, 2)), lambda s: s[:, 0], weights="linear", what="x")
    assert math.isnan(found.low) and "fewer than two queries" in found.note
    d = found.to_dict()
    assert d["low"] is None and d["high"] is None and d["n_resamples"] == 2000 and d["seed"] == 0


def test_a_statistic_undefined_in_some_resamples_is_left_out_and_counted():
    # query 0 contributes (1, 0): a resample of query 0 only has 0 pairs, so the share is undefined
    per_query = np.array([[1.0, 0.0], [1.0, 2.0]])
    with np.errstate(invalid="ignore", divide="ignore"):
        found = rs.query_bootstrap(per_query, lambda s: np.where(s[:, 1] > 0, s[:, 0] / s[:, 1], np.nan),
                                   n_resamples=400, seed=1, weights="linear", what="share")  # fmt: skip
    draws = np.random.default_rng(1).integers(0, 2, size=(400, 2))
    only_first = int((draws == 0).all(axis=1).sum())  # both draws are query 0
    assert found.n_undefined == only_first > 0
    assert found.note == f"{only_first} resample(s) with undefined share left out"


def test_paired_bootstrap_blocks_are_seeded_by_seed_stream_and_block():
    d = np.arange(6, dtype=np.float64)[:, None]
    means = rs.bootstrap_means(d, rs.BLOCK + 3, seed=9)
    first = np.random.default_rng([9, 2, 0]).integers(0, 6, size=(rs.BLOCK, 6))
    second = np.random.default_rng([9, 2, 1]).integers(0, 6, size=(rs.BLOCK, 6))[:3]
    expected = np.concatenate([first.mean(axis=1), second.mean(axis=1)])  # d[i] == i
    assert means[:, 0] == pytest.approx(expected, abs=1e-12)
    noise = rs.bootstrap_means(d, 10, seed=9, stream=rs.STREAM_NOISE_BOOT)[:, 0]
    assert noise == pytest.approx(np.random.default_rng([9, 4, 0]).integers(0, 6, size=(rs.BLOCK, 6))[:10]
                                  .mean(axis=1), abs=1e-12)  # fmt: skip


def test_sign_blocks_are_the_bits_of_each_blocks_generator():
    ((rows, signs),) = list(rs.sign_blocks(5, 3, 4))
    raw = np.frombuffer(np.random.default_rng([5, 1, 0]).bytes(rs.BLOCK), dtype=np.uint8)
    bits = np.unpackbits(raw.reshape(rs.BLOCK, 1), axis=1)[:4, :3]
    assert rows == 4 and signs.tolist() == (1.0 - 2.0 * bits.astype(float)).tolist()


@pytest.mark.parametrize("cells", [1, 7, 10_000_000])
def test_tukey_keys_in_slices_are_the_draw_of_the_whole_block(cells):
    n, m, trials = 2, 3, rs.BLOCK + 5
    got = np.concatenate([keys for _, keys in rs.tukey_keys(4, trials, n, m, cells)])
    starts = [start for start, _ in rs.tukey_keys(4, trials, n, m, cells)]
    whole = np.concatenate([np.random.default_rng([4, 3, 0]).random((rs.BLOCK, n, m)),
                            np.random.default_rng([4, 3, 1]).random((5, n, m))])  # fmt: skip
    assert got.shape == (trials, n, m) and np.array_equal(got, whole)
    assert starts[0] == 0 and starts == sorted(starts)


def test_relabel_uniforms_are_the_fifth_stream():
    assert rs.relabel_uniforms(2, 7, 4).tolist() == np.random.default_rng([2, 5, 7]).random(4).tolist()


def test_the_named_defaults():
    assert (rs.QUERY_BOOTSTRAP_RESAMPLES, rs.QUERY_BOOTSTRAP_SEED, rs.INTERVAL_LEVEL) == (2000, 0, 0.95)
    assert (rs.COMPARE_SEED, rs.PAIRED_BOOTSTRAP_RESAMPLES, rs.MONTE_CARLO_PERMUTATIONS) == (
        0,
        10_000,
        100_000,
    )
    assert (rs.RANDOMIZED_TUKEY_TRIALS, rs.NOISE_REPLICATES) == (10_000, 200)


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_every_caller_takes_its_defaults_from_the_module():
    from qrelkit.agreement.group import group_agreement
    from qrelkit.agreement.kappa import agreement_report, bootstrap_kappa_ci, cohen_kappa
    from qrelkit.compare import Options, compare, compare_runs
    from qrelkit.compare.noise import noise_floor
    from qrelkit.judgments.adjudication import calibration_agreement, group_calibration

    for f in (
        agreement_report,
        bootstrap_kappa_ci,
        group_agreement,
        calibration_agreement,
        group_calibration,
    ):
        assert _default(f, "n_resamples") == 2000 and _default(f, "seed") == 0, f.__name__
    for f in (agreement_report, bootstrap_kappa_ci, group_agreement, cohen_kappa):
        assert _default(f, "level") == 0.95, f.__name__
    assert (_default(compare, "seed"), _default(compare, "bootstrap")) == (0, 10_000)
    assert (Options().seed, Options().bootstrap, Options().monte_carlo_permutations) == (0, 10_000, 100_000)
    assert _default(compare_runs, "noise_replicates") == 200
    assert (_default(noise_floor, "replicates"), _default(noise_floor, "resamples"), _default(noise_floor, "seed")) == (
        200, 10_000, 0)  # fmt: skip


def test_the_command_line_defaults_are_the_modules():
    from qrelkit.cli.agree import command as agree
    from qrelkit.cli.compare import command as compare
    from qrelkit.cli.report import command as report

    def option(command, name):
        return next(p for p in command.params if p.name == name).default

    assert (option(agree, "bootstrap"), option(agree, "seed")) == (2000, 0)
    assert (option(compare, "resamples"), option(compare, "seed"), option(compare, "replicates")) == (
        10_000,
        0,
        200,
    )
    assert option(report, "seed") == 0


def test_a_bad_count_or_seed_is_refused_naming_the_default():
    from qrelkit.errors import ValidationError

    with pytest.raises(ValidationError, match="n_resamples must be a whole number from 1 to"):
        rs.resample_counts(3, 0, 0)
    with pytest.raises(ValidationError, match="seed must be a non-negative integer"):
        rs.resample_counts(3, 10, -1)
    with pytest.raises(ValidationError, match="strictly between 0 and 1"):
        rs.check_level(1.0)
