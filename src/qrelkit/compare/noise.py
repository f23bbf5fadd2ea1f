"""The labeller-noise floor: how far would a difference between two runs move if another labeller had
judged?

Two labellers judged the calibration queries blind. From their judgments qrelkit derives, per
(baseline, treatment) pair and measure:

empirical floor
    Per calibration query q, ``e_q = (t_A(q) - b_A(q)) - (t_B(q) - b_B(q))``: the pair's difference under
    A's grades minus under B's. The mean of ``e`` over K calibration queries is resampled (paired
    bootstrap over the queries, seeded) and rescaled to the N queries of the comparison: a resampled mean
    ``m*`` becomes ``e_bar + (m* - e_bar) * sqrt(K / N)``, keeping the systematic part ``e_bar`` (a
    labeller who favours one run does so at any N) and shrinking the random part as the standard
    deviation of a mean over N queries. The floor is the 95th percentile of the absolute rescaled mean.
    Identical labellers give ``e = 0`` and a floor of exactly 0.
simulated floor
    A relabelling channel ``P(g' | g)`` is estimated from the calibration confusion matrix ``C`` (A's
    grade in rows, B's in columns), symmetrised as ``S = C + C^T`` (both directions count, so the
    channel does not move grades towards one labeller's habits) and smoothed add-one (Laplace): row ``g``
    is ``(S[g] + s) / (sum(S[g]) + G s)`` with ``s = 1`` by default over the G grades of the scale. A
    grade neither labeller used in calibration keeps its value (there is no evidence about it). The
    channel is applied independently to every judged pair of the final qrels, R times (200 by default,
    seeded); all runs are re-evaluated on all R relabelled copies in batches (each copy's query ids
    prefixed by the copy's number), and the report gives the 2.5-97.5% range of the pair's mean
    difference and the probability that its sign differs from the observed difference's.

A pair's difference is *within labeller noise* when its absolute value is at most the empirical floor or
the simulated range contains 0. Kendall's tau between the runs' rankings by their means under A's and
under B's grades (``scipy.stats.kendalltau``, tau-b) says whether the labellers would order the runs alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..agreement.resample import (
    COMPARE_SEED,
    NOISE_REPLICATES,
    PAIRED_BOOTSTRAP_RESAMPLES,
    STREAM_NOISE_BOOT,
    bootstrap_means,
    relabel_uniforms,
)
from ..data.values import Qrels, Run
from ..errors import ValidationError
from ..evaluation.core import evaluate
from ..evaluation.results import Results
from ..provenance import json_number as _num
from . import stats

#: Which percentile of the absolute rescaled mean is the empirical floor.
FLOOR_LEVEL = 0.95
#: Rows of relabelled runs evaluated per batch of copies (bounds memory; the numbers do not depend on it).
BATCH_ROWS = 2_000_000
_SEP = "\x1f"


@dataclass(frozen=True)
class PairNoise:
    baseline: str
    treatment: str
    measure: str
    calibration_queries: int  # K
    queries: int  # N, the comparison's query count the floor is rescaled to
    mean_labeller_difference: float  # mean of e_q: the pair's difference under A minus under B
    empirical_floor: float
    simulated_low: float  # 2.5% of the pair's difference over relabelled copies
    simulated_high: float  # 97.5%
    sign_flip: float  # share of copies where the difference's sign differs from the observed one

    def within_noise(self, difference: float) -> bool:
        by_floor = not math.isnan(self.empirical_floor) and abs(difference) <= self.empirical_floor
        by_range = not math.isnan(self.simulated_low) and self.simulated_low <= 0.0 <= self.simulated_high
        return by_floor or by_range

    def to_dict(self) -> dict[str, Any]:
        return {
            "calibration_queries": self.calibration_queries,
            "rescaled_to_queries": self.queries,
            "mean_labeller_difference": _num(self.mean_labeller_difference),
            "empirical_floor": _num(self.empirical_floor),
            "simulated_range": [_num(self.simulated_low), _num(self.simulated_high)],
            "sign_flip_probability": _num(self.sign_flip),
        }


@dataclass(frozen=True)
class NoiseFloor:
    labellers: tuple[str, str]
    fingerprints: tuple[dict[str, str], dict[str, str]]
    calibration_queries: tuple[str, ...]
    scale: tuple[int, ...]
    confusion: np.ndarray  # A's grade in rows, B's in columns, over ``scale``
    channel: np.ndarray  # P(g' | g), rows over ``scale``
    smoothing: float
    replicates: int
    resamples: int
    seed: int
    pairs: tuple[PairNoise, ...]
    kendall_tau: dict[str, tuple[float, float]]  # measure -> (tau, p-value)
    # which labellers judged which calibration queries, when the two sides come from a project's every
    # pair (:func:`qrelkit.app.labeller_pairs.calibration_qrels`); empty for two labellers' files
    labeller_pairs: tuple[dict[str, Any], ...] = ()

    def pair(self, baseline: str, treatment: str, measure: str) -> PairNoise:
        for p in self.pairs:
            if (p.baseline, p.treatment, p.measure) == (baseline, treatment, measure):
                return p
        raise ValidationError(f"the noise floor has no entry for {treatment} vs {baseline} under {measure}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "labellers": list(self.labellers),
            "labeller_fingerprints": list(self.fingerprints),
            "calibration_queries": list(self.calibration_queries),
            "scale": list(self.scale),
            "confusion": self.confusion.astype(int).tolist(),
            "channel": self.channel.tolist(),
            "channel_estimate": "confusion + its transpose, add-s smoothing per observed row",
            "smoothing": self.smoothing,
            "replicates": self.replicates,
            "bootstrap_resamples": self.resamples,
            "seed": self.seed,
            "floor_percentile": FLOOR_LEVEL,
            "kendall_tau": {
                m: {"tau": _num(t), "p_value": _num(p)} for m, (t, p) in self.kendall_tau.items()
            },
            "pairs": [
                {"baseline": p.baseline, "treatment": p.treatment, "measure": p.measure} | p.to_dict()
                for p in self.pairs
            ],
        } | ({"labeller_pairs": list(self.labeller_pairs)} if self.labeller_pairs else {})


def _queries(qrels: Qrels) -> set[str]:
    return set(qrels.frame.get_column("query_id").unique().to_list())


def _restricted(qrels: Qrels, queries: set[str]) -> Qrels:
    frame = qrels.frame.filter(pl.col("query_id").is_in(sorted(queries)))
    return qrels.replace(frame=frame)


def calibration_queries(final: Qrels, a: Qrels, b: Qrels) -> list[str]:
    """The queries both labellers judged; an error when there are none or the final qrels lack them."""
    shared = _queries(a) & _queries(b)
    if not shared:
        raise ValidationError(
            f"the two labellers' judgments ({a.name}, {b.name}) share no query",
            fix="pass both labellers' judgments of the same calibration queries",
        )
    missing = sorted(shared - _queries(final))
    if missing:
        raise ValidationError(
            f"the qrels {final.name} lack {len(missing)} of the {len(shared)} calibration queries "
            f"(first: {missing[0]!r})",
            source=final.name,
            fix="compare with the final qrels of the project the labellers calibrated",
        )
    return sorted(shared)


def relabel_channel(
    a: Qrels, b: Qrels, scale: Sequence[int], smoothing: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(confusion, channel) over ``scale`` from the pairs both labellers judged (see the module docstring)."""
    from ..agreement.kappa import pair_grades

    paired = pair_grades(a.frame, b.frame)
    index = {g: i for i, g in enumerate(scale)}
    confusion = np.zeros((len(scale), len(scale)))
    np.add.at(
        confusion,
        ([index[int(g)] for g in paired.grades_a], [index[int(g)] for g in paired.grades_b]),
        1.0,
    )
    return confusion, channel_from_confusion(confusion, smoothing)


def channel_from_confusion(confusion: np.ndarray, smoothing: float = 1.0) -> np.ndarray:
    """Symmetrised, add-``smoothing`` channel; rows without observations keep their grade."""
    sym = confusion + confusion.T
    totals = sym.sum(axis=1)
    g = len(sym)
    channel = (sym + smoothing) / (totals + g * smoothing)[:, None] if g else sym
    channel[totals == 0] = np.eye(g)[totals == 0]
    return channel


def relabelled_grades(
    grades: np.ndarray, scale: Sequence[int], channel: np.ndarray, replicates: int, seed: int
) -> np.ndarray:
    """(replicates x pairs) grades drawn through ``channel``; replicate r from its own seeded generator."""
    values = np.asarray(scale, dtype=np.int64)
    codes = np.searchsorted(values, grades)
    cumulative = np.cumsum(channel, axis=1)[codes]  # pairs x G
    cumulative[:, -1] = np.inf
    out = np.empty((replicates, len(grades)), dtype=np.int64)
    for r in range(replicates):
        u = relabel_uniforms(seed, r, len(grades))
        out[r] = values[(u[:, None] >= cumulative).sum(axis=1)]
    return out


def _replicated_results(
    final: Qrels, runs: Sequence[Run], names: Sequence[str], grades: np.ndarray, results: Results
) -> list[Results]:
    """Evaluate every run on every relabelled copy, copies batched by prefixing their query ids."""
    judged = sorted(_queries(final))
    run_frames = [r.frame.filter(pl.col("query_id").is_in(judged)) for r in runs]
    per_copy = max(1, sum(f.height for f in run_frames))
    batch = max(1, BATCH_ROWS // per_copy)
    out = []
    for start in range(0, len(grades), batch):
        copies = range(start, min(start + batch, len(grades)))

        def tagged(frame: pl.DataFrame, r: int) -> pl.DataFrame:
            return frame.with_columns((pl.lit(f"{r:07d}{_SEP}") + pl.col("query_id")).alias("query_id"))

        qframe = pl.concat(
            [tagged(final.frame, r).with_columns(pl.Series("grade", grades[r])) for r in copies]
        )
        qrels = final.replace(frame=qframe, scale=None)
        copies_runs = [
            run.replace(frame=pl.concat([tagged(f, r) for r in copies]), name=name)
            for f, run, name in zip(run_frames, runs, names, strict=True)
        ]
        out.append(evaluate(qrels, copies_runs, results.measures, results.conventions))
    return out


def _copy_differences(parts: list[Results], baseline: str, treatment: str, measure: str) -> np.ndarray:
    """The pair's mean difference (over queries where both are defined) on each relabelled copy."""
    frames = []
    for res in parts:
        sides = []
        for name, col in ((baseline, "b"), (treatment, "t")):
            run = res._run(name)
            sides.append(pl.DataFrame({"id": run.queries.query_ids, col: run.values[measure]}))
        frames.append(sides[0].join(sides[1], on="id", how="inner"))
    joined = pl.concat(frames).filter(pl.col("b").is_not_nan() & pl.col("t").is_not_nan())
    per_copy = (
        joined.with_columns(pl.col("id").str.slice(0, 7).cast(pl.Int64).alias("copy"))
        .group_by("copy")
        .agg((pl.col("t") - pl.col("b")).mean().alias("d"))
        .sort("copy")
    )
    return per_copy.get_column("d").to_numpy()


def simulated_differences(
    final: Qrels,
    runs: Sequence[Run],
    results: Results,
    scale: Sequence[int],
    channel: np.ndarray,
    pairs: Sequence[tuple[str, str]],
    replicates: int,
    seed: int,
) -> dict[tuple[str, str, str], np.ndarray]:
    """Each pair's mean difference under each measure on ``replicates`` copies of ``final`` relabelled
    through ``channel`` (rows and columns over ``scale``): ``{(baseline, treatment, measure): array}``."""
    named = [r.replace(name=n) for r, n in zip(runs, results.run_names, strict=True)]
    drawn = relabelled_grades(final.frame.get_column("grade").to_numpy(), scale, channel, replicates, seed)
    parts = _replicated_results(final, named, results.run_names, drawn, results)
    return {(b, t, m): _copy_differences(parts, b, t, m) for b, t in pairs for m in results.measure_names}


def noise_floor(
    final: Qrels,
    runs: Sequence[Run],
    results: Results,
    labeller_a: Qrels,
    labeller_b: Qrels,
    pairs: Sequence[tuple[str, str]],
    *,
    replicates: int = NOISE_REPLICATES,
    resamples: int = PAIRED_BOOTSTRAP_RESAMPLES,
    seed: int = COMPARE_SEED,
    smoothing: float = 1.0,
) -> NoiseFloor:
    """The empirical and simulated noise floors of each pair and measure of ``results`` (which must be
    the evaluation of ``runs``, in their order, against ``final``)."""
    from scipy.stats import kendalltau

    if len(runs) != len(results.runs):
        raise ValidationError("the runs given are not the runs of the results", fix="pass the evaluated runs")
    names = results.run_names
    shared = calibration_queries(final, labeller_a, labeller_b)
    keep = set(shared)
    a, b = _restricted(labeller_a, keep), _restricted(labeller_b, keep)
    named = [r.replace(name=n) for r, n in zip(runs, names, strict=True)]
    res_a = evaluate(a, named, results.measures, results.conventions)
    res_b = evaluate(b, named, results.measures, results.conventions)

    grades_all = set(final.frame.get_column("grade").to_list())
    grades_all |= set(a.frame.get_column("grade").to_list()) | set(b.frame.get_column("grade").to_list())
    scale = tuple(sorted(int(g) for g in grades_all))
    confusion, channel = relabel_channel(a, b, scale, smoothing)
    simulated = simulated_differences(final, runs, results, scale, channel, pairs, replicates, seed)

    entries = []
    for base, treat in pairs:
        for m in results.measure_names:
            ids_a, xa = stats.aligned(res_a, (base, treat), m)
            ids_b, xb = stats.aligned(res_b, (base, treat), m)
            common = sorted(set(ids_a) & set(ids_b))
            ia = {q: i for i, q in enumerate(ids_a)}
            ib = {q: i for i, q in enumerate(ids_b)}
            ra = [ia[q] for q in common]
            rb = [ib[q] for q in common]
            e = (xa[ra, 1] - xa[ra, 0]) - (xb[rb, 1] - xb[rb, 0])
            ids_n, xn = stats.aligned(results, (base, treat), m)
            k, n = len(e), len(ids_n)
            if k and n:
                ebar = float(e.mean())
                means = bootstrap_means(e[:, None], resamples, seed, STREAM_NOISE_BOOT)[:, 0]
                scaled = ebar + (means - ebar) * math.sqrt(k / n)
                floor = float(np.quantile(np.abs(scaled), FLOOR_LEVEL))
            else:
                ebar = floor = math.nan
            observed = float((xn[:, 1] - xn[:, 0]).mean()) if n else math.nan
            diffs = simulated[base, treat, m]
            if len(diffs):
                low, high = (float(v) for v in np.quantile(diffs, [0.025, 0.975]))
                flip = float(np.mean(np.sign(diffs) != np.sign(observed)))
            else:
                low = high = flip = math.nan
            entries.append(PairNoise(base, treat, m, k, n, ebar, floor, low, high, flip))

    taus = {}
    for m in results.measure_names:
        ma = [res_a.mean(m, r) for r in names]
        mb = [res_b.mean(m, r) for r in names]
        tau = kendalltau(ma, mb)
        taus[m] = (float(tau.statistic), float(tau.pvalue))
    return NoiseFloor(
        labellers=(labeller_a.name, labeller_b.name),
        fingerprints=(labeller_a.fingerprint.to_dict(), labeller_b.fingerprint.to_dict()),
        calibration_queries=tuple(shared),
        scale=scale,
        confusion=confusion,
        channel=channel,
        smoothing=smoothing,
        replicates=replicates,
        resamples=resamples,
        seed=seed,
        pairs=tuple(entries),
        kendall_tau=taus,
        labeller_pairs=tuple(labeller_a.meta.get("labeller_pairs", ())),  # type: ignore[arg-type]
    )


def labeller_pairs_note(labeller_a: Qrels) -> str | None:
    """One line saying which labellers' calibration grades the noise floor pairs, when they come from a
    judging project (:func:`qrelkit.app.labeller_pairs.calibration_qrels`); ``None`` otherwise."""
    pairs: Any = labeller_a.meta.get("labeller_pairs")
    if not pairs:
        return None
    listed = "; ".join(
        f"{' & '.join(p['labellers'])} ({len(p['queries'])} quer{'y' if len(p['queries']) == 1 else 'ies'}: "
        f"{', '.join(p['queries'])})"
        for p in pairs
    )
    what = (
        "the labeller pair"
        if len(pairs) == 1
        else f"every labeller pair sharing calibration queries ({len(pairs)})"
    )
    left: Any = labeller_a.meta.get("left_out") or {}
    extra = (
        "; left out (a third labeller of a query): "
        + ", ".join(f"{q}: {', '.join(who)}" for q, who in sorted(left.items()))
        if left
        else ""
    )
    return f"noise floor from {what}: {listed}{extra}"
