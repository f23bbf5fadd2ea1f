"""Every random draw over queries in qrelkit, and its defaults: the one resampling module.

Agreement (kappa's interval, the group statistics' intervals) and comparison (the paired bootstrap, the
randomisation test, the randomised Tukey HSD, the labeller-noise floor) draw their random numbers here and
nowhere else, and take their default counts, seeds and interval level from the constants below. The same
seed gives the same draws on any machine and in any chunking of the work.

Which seed drives which draw
----------------------------
agreement's query bootstrap (:func:`resample_counts`, :func:`query_bootstrap`)
    kappa's bootstrap interval (:func:`qrelkit.agreement.kappa.bootstrap_kappa_ci`), the intervals of
    the mean pairwise kappa, of alpha and of Fleiss' kappa (:func:`qrelkit.agreement.group.group_agreement`),
    hence ``qrelkit agree --seed``, the judging app's calibration and every manifest. One generator,
    ``numpy.random.default_rng(seed)``, draws the whole ``(n_resamples, n_queries)`` matrix of query
    indices at once, queries in sorted id order; defaults :data:`QUERY_BOOTSTRAP_RESAMPLES` resamples and
    seed :data:`QUERY_BOOTSTRAP_SEED`. Every statistic of one set of pairs gets the same draws.
compare's paired bootstrap (:func:`bootstrap_means`, stream :data:`STREAM_BOOTSTRAP`)
    the bootstrap interval of each mean difference and the shifted bootstrap test of ``qrelkit compare``:
    resample block ``b`` (:data:`BLOCK` resamples) from ``numpy.random.default_rng([seed, 2, b])``, seed
    ``compare --seed`` (default :data:`COMPARE_SEED`), :data:`PAIRED_BOOTSTRAP_RESAMPLES` resamples.
compare's randomisation test (:func:`sign_blocks`, stream :data:`STREAM_SIGNS`)
    Monte Carlo sign flips: block ``b`` of sign vectors from the bytes of
    ``numpy.random.default_rng([seed, 1, b])``, the same ``compare --seed``;
    :data:`MONTE_CARLO_PERMUTATIONS` vectors unless ``--permutations`` gives a number.
compare's randomised Tukey HSD (:func:`tukey_keys`, stream :data:`STREAM_TUKEY`)
    block ``b`` of trials from ``numpy.random.default_rng([seed, 3, b]).random``;
    :data:`RANDOMIZED_TUKEY_TRIALS` trials.
the noise floor (:func:`bootstrap_means` with :data:`STREAM_NOISE_BOOT`, :func:`relabel_uniforms`)
    the empirical floor resamples the calibration queries from ``default_rng([seed, 4, b])``, the same
    resample count as the paired bootstrap; the simulated floor draws relabelled copy ``r`` from
    ``default_rng([seed, 5, r])``, :data:`NOISE_REPLICATES` copies; the seed is ``compare --seed``.

Each use of comparison's seed has its own stream, so adding a statistic never changes another's draws.
Agreement's bootstrap and comparison's draws are seeded differently (one generator from the seed alone,
versus a generator per block from ``(seed, stream, block)``): they resample different things (calibration
pairs grouped by query, versus per-query differences of two runs) and are not meant to share draws; the
two schemes are kept as they were so that every interval already written reads back the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from qrelkit.errors import ValidationError
from qrelkit.provenance import json_number

__all__ = [
    "BLOCK",
    "COMPARE_SEED",
    "INTERVAL_LEVEL",
    "MAX_PAIRED_BOOTSTRAP_RESAMPLES",
    "MAX_PERMUTATIONS",
    "MAX_QUERY_BOOTSTRAP_RESAMPLES",
    "MONTE_CARLO_PERMUTATIONS",
    "NOISE_REPLICATES",
    "PAIRED_BOOTSTRAP_RESAMPLES",
    "QUERY_BOOTSTRAP_RESAMPLES",
    "QUERY_BOOTSTRAP_SEED",
    "RANDOMIZED_TUKEY_TRIALS",
    "STREAM_BOOTSTRAP",
    "STREAM_NOISE_BOOT",
    "STREAM_NOISE_SIM",
    "STREAM_SIGNS",
    "STREAM_TUKEY",
    "BootstrapInterval",
    "bootstrap_means",
    "check_count",
    "check_level",
    "query_bootstrap",
    "relabel_uniforms",
    "resample_counts",
    "resample_progress",
    "rng_for",
    "sign_blocks",
    "tukey_keys",
]

#: Agreement's query bootstrap: resamples and seed, wherever kappa's or a group statistic's interval is
#: computed (``qrelkit agree``, the judging app, every manifest).
QUERY_BOOTSTRAP_RESAMPLES = 2000
QUERY_BOOTSTRAP_SEED = 0
#: The confidence level of agreement's intervals (normal and bootstrap).
INTERVAL_LEVEL = 0.95

#: Comparison's seed (``qrelkit compare --seed``, ``qrelkit report --seed``): every draw of a comparison.
COMPARE_SEED = 0
#: Paired bootstrap resamples of a comparison (interval, bootstrap test, the noise floor's empirical floor).
PAIRED_BOOTSTRAP_RESAMPLES = 10_000
#: Random sign vectors of the randomisation test when it is not exact and no count is given.
MONTE_CARLO_PERMUTATIONS = 100_000
#: Trials of the randomised Tukey HSD unless a number of permutations is given.
RANDOMIZED_TUKEY_TRIALS = 10_000
#: Relabelled copies of the final qrels for the simulated noise floor.
NOISE_REPLICATES = 200

#: The largest resample counts accepted, each with its reason (a larger count is refused in one line, never
#: attempted). Agreement's query bootstrap holds its whole (resamples x queries) matrix of draw counts, so
#: 100,000 resamples of 100 calibration queries are 80 MB; its percentile endpoints are settled to well past
#: the printed digits long before that.
MAX_QUERY_BOOTSTRAP_RESAMPLES = 100_000
#: The paired bootstrap keeps one mean a resample for each compared column (8 bytes: 8 MB a column at
#: 1,000,000), drawn block by block; a million resamples pin an interval's endpoints to about a thousandth
#: of its width.
MAX_PAIRED_BOOTSTRAP_RESAMPLES = 1_000_000
#: Random sign vectors (and randomised Tukey trials) are drawn block by block in constant memory, so the
#: bound is time: 100,000,000 vectors resolve a p-value to 1e-8, far below any level a test is read at.
MAX_PERMUTATIONS = 100_000_000

#: Comparison's random draws come in blocks of this many permutations (or resamples), each seeded by
#: (seed, stream, block index), so a result never depends on how the work is chunked or threaded.
BLOCK = 1024
#: Streams of comparison's random numbers: one per use, so that adding a statistic never changes another's
#: draws.
STREAM_SIGNS, STREAM_BOOTSTRAP, STREAM_TUKEY, STREAM_NOISE_BOOT, STREAM_NOISE_SIM = 1, 2, 3, 4, 5


def _is_int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


#: Told ``(what, done, total)`` after each block of a draw, within :func:`resample_progress`.
_PROGRESS: ContextVar[Callable[[str, int, int], None] | None] = ContextVar("resample_progress", default=None)


@contextmanager
def resample_progress(callback: Callable[[str, int, int], None]) -> Iterator[None]:
    """Within this block (in this thread), ``callback(what, done, total)`` is called after each block of
    every draw (``what``: "sign vectors", "bootstrap resamples", "Tukey trials"): how a command shows the
    progress of a long resampling."""
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def _report(what: str, done: int, total: int) -> None:
    callback = _PROGRESS.get()
    if callback is not None:
        callback(what, done, total)


def check_count(value: object, what: str, maximum: int, reason: str, fix: str) -> int:
    """``value`` as an int between 1 and ``maximum``, else a one-line
    :class:`~qrelkit.errors.ValidationError` naming ``what``, the bound and its ``reason``."""
    if not _is_int(value) or not 1 <= int(value) <= maximum:  # type: ignore[call-overload]  # checked by _is_int
        raise ValidationError(
            f"{what} must be a whole number from 1 to {maximum:,} ({reason})",
            got=value,
            fix=fix,
        )
    return int(value)  # type: ignore[call-overload]  # checked by _is_int


def check_level(level: float) -> float:
    """``level`` as a float strictly between 0 and 1, else a :class:`~qrelkit.errors.ValidationError`."""
    if isinstance(level, bool) or not isinstance(level, Real) or not 0.0 < level < 1.0:
        raise ValidationError(
            "the confidence level must be strictly between 0 and 1",
            got=level,
            expected="e.g. 0.95",
            fix="pass level=0.95",
        )
    return float(level)


# -- agreement's query bootstrap -------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile bootstrap interval for kappa, resampling whole queries with replacement.

    ``n_undefined`` resamples had an undefined kappa (every resampled pair on one grade for both
    labellers) and are left out of the percentiles. ``low``/``high`` are NaN, with a ``note``, when
    there are fewer than two queries or no resample is defined.
    """

    low: float
    high: float
    level: float
    n_resamples: int
    seed: int
    n_queries: int
    n_undefined: int
    weights: Any  # qrelkit.agreement.kappa.Weighting
    note: str | None = None
    method: str = "percentile bootstrap over queries (clusters); numpy.quantile, linear interpolation"

    def to_dict(self) -> dict[str, Any]:
        return {
            "low": json_number(self.low),
            "high": json_number(self.high),
            "level": json_number(self.level),
            "n_resamples": int(self.n_resamples),
            "seed": int(self.seed),
            "n_queries": int(self.n_queries),
            "n_undefined": int(self.n_undefined),
            "weights": self.weights,
            "note": self.note,
            "method": self.method,
        }


def resample_counts(n_queries: int, n_resamples: int, seed: int) -> np.ndarray:
    """How often each query is drawn in each resample, shape ``(n_resamples, n_queries)``: the one draw
    of agreement's query bootstrap, ``numpy.random.default_rng(seed).integers(0, n_queries,
    size=(n_resamples, n_queries))``, queries in sorted id order."""
    check_count(
        n_resamples,
        "n_resamples",
        MAX_QUERY_BOOTSTRAP_RESAMPLES,
        "every resample's draw counts are held at once",
        f"e.g. {QUERY_BOOTSTRAP_RESAMPLES}",
    )
    if not _is_int(seed) or seed < 0:
        raise ValidationError(
            "seed must be a non-negative integer",
            got=seed,
            expected=f"e.g. {QUERY_BOOTSTRAP_SEED}",
            fix=f"pass seed={QUERY_BOOTSTRAP_SEED}",
        )
    r = int(n_resamples)
    draws = np.random.default_rng(int(seed)).integers(0, n_queries, size=(r, n_queries))
    offsets = (np.arange(r, dtype=np.int64) * n_queries)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=r * n_queries).reshape(r, n_queries)


def query_bootstrap(
    per_query: np.ndarray,
    statistic: Any,
    *,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
    weights: Any,
    what: str,
) -> BootstrapInterval:
    """Percentile interval of a statistic of sums over queries, by the cluster bootstrap over queries.

    ``per_query`` holds one row of additive pieces per query (sorted id order): confusion tables for
    kappa, coincidence matrices for Krippendorff's alpha, unit sums for Fleiss' kappa. Each resample's
    pieces are the draw-count-weighted sum of the rows (:func:`resample_counts`; one matrix product for
    all resamples), and ``statistic`` maps the ``(n_resamples, d)`` sums to one value per resample (NaN
    where undefined, left out and counted). The interval is the ``(1 - level)/2`` and ``(1 + level)/2``
    quantiles (``numpy.quantile``, linear interpolation).
    """
    level, n_q = check_level(level), per_query.shape[0]
    counts = resample_counts(max(n_q, 1), n_resamples, seed)
    base: dict[str, Any] = dict(level=level, n_resamples=int(n_resamples), seed=int(seed), n_queries=n_q,
                                weights=weights)  # fmt: skip
    if n_q < 2:
        return BootstrapInterval(math.nan, math.nan, n_undefined=0, **base,
                                 note="fewer than two queries: a query bootstrap cannot vary")  # fmt: skip
    resampled = counts.astype(np.float64) @ per_query.reshape(n_q, -1).astype(np.float64)
    values = np.asarray(statistic(resampled), dtype=np.float64)
    defined = values[~np.isnan(values)]
    n_undefined = int(n_resamples) - defined.size
    if defined.size == 0:
        return BootstrapInterval(math.nan, math.nan, n_undefined=n_undefined, **base,
                                 note=f"{what} is undefined in every resample")  # fmt: skip
    low, high = np.quantile(defined, [0.5 - level / 2.0, 0.5 + level / 2.0])
    note = f"{n_undefined} resample(s) with undefined {what} left out" if n_undefined else None
    return BootstrapInterval(float(low), float(high), n_undefined=n_undefined, note=note, **base)


# -- comparison's draws ----------------------------------------------------------------------------------


def rng_for(seed: int, stream: int, block: int) -> np.random.Generator:
    """The generator of one block of one stream (PCG64 seeded by the three numbers)."""
    return np.random.default_rng([int(seed), int(stream), int(block)])


def sign_blocks(seed: int, n_columns: int, permutations: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(rows, signs)``: ``permutations`` random sign vectors over ``n_columns`` queries as float64
    blocks of :data:`BLOCK` rows (the last one shorter), each block from its own seeded generator."""
    n_bytes = (n_columns + 7) // 8
    for block in range((permutations + BLOCK - 1) // BLOCK):
        rows = min(BLOCK, permutations - block * BLOCK)
        raw = np.frombuffer(rng_for(seed, STREAM_SIGNS, block).bytes(BLOCK * n_bytes), dtype=np.uint8)
        bits = np.unpackbits(raw.reshape(BLOCK, n_bytes), axis=1)[:rows, :n_columns]
        yield rows, 1.0 - 2.0 * bits.astype(np.float64)
        _report("sign vectors", block * BLOCK + rows, permutations)


def bootstrap_means(
    differences: np.ndarray, resamples: int, seed: int, stream: int = STREAM_BOOTSTRAP
) -> np.ndarray:
    """Means of ``resamples`` paired bootstrap samples (queries drawn with replacement), one column per
    column of ``differences`` (queries x columns): a (resamples x columns) array. The same draws serve
    every column, block by seeded block."""
    n, cols = differences.shape
    out = np.empty((resamples, cols))
    if n == 0:
        out.fill(math.nan)
        return out
    for block in range((resamples + BLOCK - 1) // BLOCK):
        rows = min(BLOCK, resamples - block * BLOCK)
        draws = rng_for(seed, stream, block).integers(0, n, size=(BLOCK, n))[:rows]
        offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
        weights = np.bincount((draws + offsets).ravel(), minlength=rows * n).reshape(rows, n)
        out[block * BLOCK : block * BLOCK + rows] = (weights.astype(np.float64) @ differences) / n
        _report("bootstrap resamples", block * BLOCK + rows, resamples)
    return out


def tukey_keys(seed: int, permutations: int, n: int, m: int, cells: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(start, keys)``: the random sort keys ``(trials, n, m)`` of the randomised Tukey HSD's
    trials ``start, start + 1, ...``, at most ``cells`` keys at a time (bounded memory). Block ``b`` of
    :data:`BLOCK` trials comes from one generator drawn in consecutive slices, which gives the same
    numbers as one draw of the whole block."""
    step = max(1, cells // max(n * m, 1))
    for block in range((permutations + BLOCK - 1) // BLOCK):
        rows = min(BLOCK, permutations - block * BLOCK)
        rng = rng_for(seed, STREAM_TUKEY, block)
        for lo in range(0, rows, step):
            hi = min(rows, lo + step)
            yield block * BLOCK + lo, rng.random((hi - lo, n, m))
        _report("Tukey trials", block * BLOCK + rows, permutations)


def relabel_uniforms(seed: int, replicate: int, size: int) -> np.ndarray:
    """The uniforms that relabel every judged pair in copy ``replicate`` of the simulated noise floor."""
    return rng_for(seed, STREAM_NOISE_SIM, replicate).random(size)
