"""Is a new run better than the one it replaced, by more than statistical noise and by more than swapping
one labeller for another would move it?

:func:`compare` takes a :class:`~qrelkit.evaluation.results.Results` and returns a frozen :class:`Comparison`: per
(baseline, treatment) pair and measure the means, the difference, win/tie/loss counts, the t-interval and
the paired bootstrap interval of the mean difference, the effect size, the chosen test's statistic and
p-value, and the p-value adjusted over the chosen family; with three or more runs the two-way ANOVA
(queries as blocks) and Tukey's HSD; optionally the topic-set size and the labeller-noise floor
(:mod:`qrelkit.compare.noise`). :func:`compare_runs` evaluates and compares in one call.

See ``docs/compare.md`` for when to use which test. The statistics live in :mod:`qrelkit.compare.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from ..agreement.resample import (
    COMPARE_SEED,
    MAX_PAIRED_BOOTSTRAP_RESAMPLES,
    MAX_PERMUTATIONS,
    MONTE_CARLO_PERMUTATIONS,
    NOISE_REPLICATES,
    PAIRED_BOOTSTRAP_RESAMPLES,
    RANDOMIZED_TUKEY_TRIALS,
    check_count,
)
from ..errors import IncomparableError, QueryNotFoundError, ValidationError, did_you_mean
from ..estimation.ppi import DEFAULT_ESTIMATOR, DEFAULT_INTERVAL
from ..evaluation.results import Results
from ..provenance import json_number
from . import stats
from .power import Power, power_analysis

__all__ = [
    "Comparison",
    "MultiComparison",
    "Options",
    "PairComparison",
    "combine",
    "compare",
    "compare_files",
    "compare_runs",
    "run_pairs",
]

Test = Literal["randomization", "t", "wilcoxon", "bootstrap"]
Family = Literal["pairs", "pairs-x-measures"]
Multi = Literal["tukey", "randomized-tukey"]
TESTS: tuple[str, ...] = get_args(Test)
FAMILIES: tuple[str, ...] = get_args(Family)
MULTI: tuple[str, ...] = get_args(Multi)

#: With ``permutations="auto"``: enumerate every sign vector when at most this many queries have a
#: non-zero difference, else draw :data:`MONTE_CARLO_PERMUTATIONS` random ones.
EXACT_AUTO_LIMIT = 24
#: The counts and the seed of every random draw, from the one resampling module.
BOOTSTRAP_RESAMPLES = PAIRED_BOOTSTRAP_RESAMPLES

VERDICT_EXCEEDS = "exceeds the noise floor and significant"
VERDICT_WITHIN = "significant but within labeller noise"
VERDICT_NOT = "not significant"


def _num(x: Any) -> Any:
    """Whole numbers and text as they are; other numbers by :func:`qrelkit.provenance.json_number`."""
    if isinstance(x, bool | int | str):
        return x
    return json_number(x)


def _choice(value: Any, choices: Sequence[str], what: str) -> Any:
    if value not in choices:
        raise ValidationError(
            f"unknown {what} {value!r}{did_you_mean(str(value), choices)}",
            expected="one of " + ", ".join(choices),
        )
    return value


@dataclass(frozen=True)
class Options:
    """Every choice behind a comparison; written into every output beside the Results' provenance."""

    test: Test = "randomization"
    permutations: int | Literal["auto", "exact"] = "auto"
    seed: int = COMPARE_SEED
    correction: stats.Correction = "holm"
    family: Family = "pairs-x-measures"
    alpha: float = 0.05
    multi: Multi | None = None
    bootstrap: int = BOOTSTRAP_RESAMPLES
    power: bool = False
    power_delta: float | None = None
    power_target: float = 0.8

    def __post_init__(self) -> None:
        _choice(self.test, TESTS, "test")
        _choice(self.correction, stats.CORRECTIONS, "correction")
        _choice(self.family, FAMILIES, "family")
        if self.multi is not None:
            _choice(self.multi, MULTI, "multiple-comparison procedure")
        if isinstance(self.permutations, str):
            _choice(self.permutations, ("auto", "exact"), "permutations")
        else:
            check_count(
                self.permutations,
                "permutations (when not 'exact' or 'auto')",
                MAX_PERMUTATIONS,
                "drawn in constant memory, bounded by time: a p-value is resolved to 1e-8 at the bound",
                "e.g. --permutations 100000",
            )
        if not 0.0 < self.alpha < 1.0:
            raise ValidationError("alpha must be strictly between 0 and 1", got=self.alpha, fix="e.g. 0.05")
        check_count(
            self.bootstrap,
            "bootstrap resamples",
            MAX_PAIRED_BOOTSTRAP_RESAMPLES,
            "one mean a resample is held for each compared column",
            f"e.g. --bootstrap {BOOTSTRAP_RESAMPLES}",
        )
        if self.power_delta is not None and not math.isfinite(self.power_delta):
            raise ValidationError(
                "the power analysis' difference to detect must be a finite number",
                got=self.power_delta,
                fix="e.g. --power-delta 0.02, or leave it out to use the observed difference",
            )

    @property
    def level(self) -> float:
        """The confidence level of every interval: 1 - alpha."""
        return 1.0 - self.alpha

    @property
    def monte_carlo_permutations(self) -> int:
        return self.permutations if isinstance(self.permutations, int) else MONTE_CARLO_PERMUTATIONS

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "permutations": self.permutations,
            "monte_carlo_permutations": self.monte_carlo_permutations,
            "exact_when_nonzero_at_most": EXACT_AUTO_LIMIT if self.permutations == "auto" else None,
            "seed": self.seed,
            "correction": self.correction,
            "family": self.family,
            "alpha": self.alpha,
            "interval_level": self.level,
            "multi": self.multi,
            "bootstrap_resamples": self.bootstrap,
            "power": self.power,
            "power_delta": self.power_delta,
            "power_target": self.power_target,
            "tie_rule": (
                "|T_perm| >= |T_obs| - tol, tol from float error bounds "
                f"(values accurate to {stats.VALUE_ACCURACY:.3g} relative); see docs/compare.md"
            ),
            "wilcoxon": {
                "zero_method": "wilcox",
                "correction": False,
                "method": "exact if n<=50 and no ties",
            },
        }


@dataclass(frozen=True)
class PairComparison:
    """One (baseline, treatment) pair under one measure, over the queries both runs scored."""

    baseline: str
    treatment: str
    measure: str
    queries: int
    mean_baseline: float
    mean_treatment: float
    difference: float  # treatment - baseline
    wins: int  # queries where the treatment is higher
    ties: int
    losses: int
    sd: float  # of the per-query differences
    t_interval: tuple[float, float]
    bootstrap_interval: tuple[float, float]
    effect_size: float  # difference / sd
    test: str
    method: str  # "exact" or "monte carlo" (randomisation), "exact"/"asymptotic" (Wilcoxon), ...
    permutations: int | None  # sign vectors enumerated or drawn (randomisation), resamples (bootstrap)
    statistic: float
    p_value: float
    p_adjusted: float = math.nan
    significant: bool = False
    power: Power | None = None
    noise: Any = None  # qrelkit.compare.noise.PairNoise
    verdict: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "baseline": self.baseline,
            "treatment": self.treatment,
            "measure": self.measure,
            "queries": self.queries,
            "mean_baseline": _num(self.mean_baseline),
            "mean_treatment": _num(self.mean_treatment),
            "difference": _num(self.difference),
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "sd_of_differences": _num(self.sd),
            "t_interval": [_num(v) for v in self.t_interval],
            "bootstrap_interval": [_num(v) for v in self.bootstrap_interval],
            "effect_size": _num(self.effect_size),
            "test": self.test,
            "method": self.method,
            "permutations": self.permutations,
            "statistic": _num(self.statistic),
            "p_value": _num(self.p_value),
            "p_adjusted": _num(self.p_adjusted),
            "significant": self.significant,
        }
        if self.power is not None:
            out["power"] = self.power.to_dict()
        if self.noise is not None:
            out["noise"] = self.noise.to_dict()
            out["verdict"] = self.verdict
        return out


@dataclass(frozen=True)
class MultiComparison:
    """Three or more runs under one measure, over the queries every run scored: the two-way ANOVA without
    replication and every pair by Tukey's HSD with its residual variance (and, asked for, the randomised
    Tukey HSD p-values)."""

    measure: str
    runs: tuple[str, ...]
    queries: int
    means: tuple[float, ...]
    anova: stats.Anova
    pairs: tuple[stats.TukeyPair, ...]
    randomized_p: tuple[float, ...] | None = None  # one per pair, in the order of ``pairs``
    permutations: int | None = None

    def to_dict(self) -> dict[str, Any]:
        a = self.anova
        pairs = []
        for i, p in enumerate(self.pairs):
            row = {
                "baseline": self.runs[p.first],
                "treatment": self.runs[p.second],
                "difference": _num(p.difference),
                "q": _num(p.q),
                "p_value": _num(p.p_value),
                "simultaneous_interval": [_num(p.ci_low), _num(p.ci_high)],
                "effect_size": _num(p.effect_size),
            }
            if self.randomized_p is not None:
                row["p_randomized"] = _num(self.randomized_p[i])
            pairs.append(row)
        return {
            "measure": self.measure,
            "runs": list(self.runs),
            "queries": self.queries,
            "means": [_num(m) for m in self.means],
            "anova": {
                "model": "value ~ C(system) + C(query), one value per cell",
                "systems": {
                    "ss": _num(a.ss_systems),
                    "df": a.df_systems,
                    "f": _num(a.f_systems),
                    "p_value": _num(a.p_systems),
                },
                "queries": {
                    "ss": _num(a.ss_queries),
                    "df": a.df_queries,
                    "f": _num(a.f_queries),
                    "p_value": _num(a.p_queries),
                },
                "residual": {"ss": _num(a.ss_error), "df": a.df_error, "ms": _num(a.ms_error)},
            },
            "tukey_hsd": pairs,
            "randomized_tukey_permutations": self.permutations,
        }


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found, with the Results it came from and every choice it made."""

    results: Results = field(repr=False)
    options: Options
    pairs: tuple[PairComparison, ...]
    multi: tuple[MultiComparison, ...] = ()
    noise: Any = None  # qrelkit.compare.noise.NoiseFloor
    human: Results | None = field(default=None, repr=False)
    """The people's evaluation of a random sample of queries, when the differences were estimated."""
    estimator: str | None = None
    estimated: tuple[Any, ...] = ()  # qrelkit.estimation.PairEstimate, one per pair and measure
    interval: str = DEFAULT_INTERVAL  # of the estimates (ppi and ppi++): "t" or "normal"
    estimation_warnings: tuple[str, ...] = ()  # the estimate's own (e.g. an empty correction)

    def pair(self, baseline: str, treatment: str, measure: str) -> PairComparison:
        for p in self.pairs:
            if (p.baseline, p.treatment, p.measure) == (baseline, treatment, measure):
                return p
        raise QueryNotFoundError(f"no comparison of {treatment!r} with {baseline!r} under {measure}")

    def to_dict(self) -> dict[str, Any]:
        """The Results' provenance (tool version, conventions, measures, fingerprints) and the comparison,
        JSON-serialisable."""
        out = self.results.provenance()
        out["comparison"] = {
            "options": self.options.to_dict(),
            "pairs": [p.to_dict() for p in self.pairs],
            "multi": [m.to_dict() for m in self.multi],
        }
        out["comparison"]["run_means"] = [
            {"run": r["run"], "measure": r["measure"], "mean": _num(r["mean"]), "queries": r["queries"]}
            for r in self.results.summary_rows()
        ]
        if self.results.bounds is not None:  # each run's mean, not the differences
            out["judgment_bounds"] = self.results.bounds.to_dict()
        if self.noise is not None:
            out["comparison"]["noise_floor"] = self.noise.to_dict()
        if self.human is not None:
            out["comparison"]["estimation"] = {
                **self.estimation_settings(),
                "pairs": [p.to_dict() for p in self.estimated],
            }
        return out

    def estimation_settings(self) -> dict[str, Any]:
        """The estimator, its level and both judgments' fingerprints (with ``human``)."""
        from ..estimation import settings

        assert self.human is not None and self.estimator is not None
        out = settings(self.results, self.human, self.estimator, self.options.alpha, self.interval)
        if self.estimation_warnings:
            out["warnings"] = list(self.estimation_warnings)
        return out


# -- combining evaluations -----------------------------------------------------------------------------


def combine(results: Results | Sequence[Results]) -> Results:
    """One Results from several evaluations (a baseline evaluated last month, the new run today): refused,
    naming the differing axis, when conventions or judgments differ (:meth:`Results.check_comparable`)
    or the measures differ."""
    if isinstance(results, Results):
        return results
    parts = list(results)
    if not parts:
        raise ValidationError("no results to compare", fix="pass at least one Results")
    first = parts[0]
    runs = list(first.runs)
    for other in parts[1:]:
        first.check_comparable(other)
        if other.measure_names != first.measure_names:
            raise IncomparableError(
                "results were computed for different measures: "
                f"{', '.join(first.measure_names)} vs {', '.join(other.measure_names)}",
                fix="evaluate every run with the same -m measures",
            )
        for run in other.runs:
            if run.name in {r.name for r in runs}:
                raise ValidationError(
                    f"two runs are both named {run.name!r}", fix="give each run its own name"
                )
            runs.append(run)
    from dataclasses import replace

    return replace(first, runs=tuple(runs))


# -- choosing pairs -------------------------------------------------------------------------------------


def run_pairs(
    results: Results, baseline: str | Sequence[str] | None = None, all_pairs: bool = False
) -> list[tuple[str, str]]:
    """The (baseline, treatment) pairs to compare: each baseline (default: the first run) against every
    other run, or with ``all_pairs`` every two runs (the earlier one as baseline). Each pair once."""
    names = results.run_names
    if len(names) < 2:
        raise ValidationError(
            f"compare needs at least two runs, got {len(names)}",
            fix="pass the baseline run and at least one other",
        )
    if all_pairs:
        return [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
    bases = [names[0]] if baseline is None else [baseline] if isinstance(baseline, str) else list(baseline)
    for b in bases:
        if b not in names:
            raise ValidationError(
                f"no run named {b!r}{did_you_mean(b, names)}",
                expected="one of " + ", ".join(names),
                fix="name the baseline as eval prints the run",
            )
    out: list[tuple[str, str]] = []
    for b in bases:
        for t in names:
            if t != b and (b, t) not in out and (t, b) not in out:
                out.append((b, t))
    return out


# -- aligning per-query values ---------------------------------------------------------------------------


# -- the comparison -------------------------------------------------------------------------------------


def compare(
    results: Results | Sequence[Results],
    baseline: str | Sequence[str] | None = None,
    *,
    all_pairs: bool = False,
    measures: Sequence[str] | None = None,
    test: Test = "randomization",
    permutations: int | Literal["auto", "exact"] = "auto",
    seed: int = COMPARE_SEED,
    correction: stats.Correction = "holm",
    family: Family = "pairs-x-measures",
    alpha: float = 0.05,
    multi: Multi | None = None,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
    power: bool = False,
    power_delta: float | None = None,
    noise: Any = None,
    options: Options | None = None,
    human: Results | Sequence[Results] | None = None,
    estimator: str = DEFAULT_ESTIMATOR,
    interval: str = DEFAULT_INTERVAL,
) -> Comparison:
    """Compare runs of one evaluation (see the module docstring). ``measures`` default to every measure
    of ``results``; ``noise`` is a :class:`~qrelkit.compare.noise.NoiseFloor` from
    :func:`~qrelkit.compare.noise.noise_floor` over the same pairs, which adds a verdict per pair.
    Several Results are combined first (see :func:`combine`). A ``power_delta`` asks for the power
    analysis whether or not ``power`` is set.

    With ``human`` (the same runs evaluated against people's judgments of a random sample of queries;
    ``results`` are then the model's), each pair's per-query differences are also estimated by
    ``estimator`` (:func:`qrelkit.estimation.pair_estimates`): the difference, its interval and p-value,
    corrected across the family as the paired tests are, and the verdict beside the noise floor; with
    ``power``, the human-judged queries the estimator needs. ``interval``: that of ``ppi`` and ``ppi++``,
    ``t`` (small-sample, the default) or ``normal`` (ppi_py's)."""
    results = combine(results)
    opts = options or Options(
        test, permutations, seed, correction, family, alpha, multi, bootstrap, power or power_delta is not None,
        power_delta,
    )  # fmt: skip
    pairs = run_pairs(results, baseline, all_pairs)
    names = [results._measure_name(m) for m in measures] if measures else results.measure_names
    work = []  # (pair, measure, query ids, a, b)
    for b, t in pairs:
        for m in names:
            ids, x = stats.aligned(results, (b, t), m)
            work.append((b, t, m, ids, x[:, 0], x[:, 1]))
    rows = _pair_statistics(work, opts)
    rows = _adjusted(rows, opts)
    if noise is not None:
        rows = [_with_noise(r, noise) for r in rows]
    multi_rows = tuple(_multi(results, names, opts)) if len(results.runs) >= 3 else ()
    if human is None:
        return Comparison(results, opts, tuple(rows), multi_rows, noise)
    from ..estimation import check_pair

    people = combine(human)
    warned = tuple(check_pair(results, people))
    estimated = _estimated(results, people, pairs, names, estimator, opts, noise, interval)
    return Comparison(
        results, opts, tuple(rows), multi_rows, noise, people, estimator, estimated, interval, warned
    )


def _family_adjusted(measures: Sequence[str], p_values: Sequence[float], opts: Options) -> list[float]:
    """Each p-value adjusted over its family (each measure's pairs, or all) by the chosen correction."""
    families: dict[str, list[int]] = {}
    for i, m in enumerate(measures):
        families.setdefault(m if opts.family == "pairs" else "", []).append(i)
    adjusted = [math.nan] * len(p_values)
    for members in families.values():
        adj = stats.adjust(np.array([p_values[i] for i in members]), opts.correction)
        for i, v in zip(members, adj.tolist(), strict=True):
            adjusted[i] = v
    return adjusted


def _verdict(significant: bool, difference: float, entry: Any) -> str:
    if not significant:
        return VERDICT_NOT
    return VERDICT_WITHIN if entry.within_noise(difference) else VERDICT_EXCEEDS


def _estimated(
    results: Results,
    human: Results,
    pairs: Any,
    names: Sequence[str],
    estimator: str,
    opts: Options,
    noise: Any,
    interval: str = DEFAULT_INTERVAL,
) -> tuple[Any, ...]:
    """The estimator over each pair's differences, its p-values corrected across the family, and the
    verdicts against the noise floor."""
    from dataclasses import replace

    from ..estimation import pair_estimates

    found = pair_estimates(results, human, pairs, names, estimator, alpha=opts.alpha, power=opts.power,
                           power_delta=opts.power_delta, power_target=opts.power_target, interval=interval)  # fmt: skip
    adjusted = _family_adjusted([e.measure for e in found], [e.estimate.p_value for e in found], opts)
    out = []
    for e, p in zip(found, adjusted, strict=True):
        significant = bool(not math.isnan(p) and p < opts.alpha)
        verdict = None
        if noise is not None:
            verdict = _verdict(significant, e.estimate.value, noise.pair(e.baseline, e.treatment, e.measure))
        out.append(replace(e, p_adjusted=p, significant=significant, verdict=verdict))
    return tuple(out)


def _pair_statistics(work: list[Any], opts: Options) -> list[PairComparison]:
    """Every statistic of every (pair, measure), the Monte Carlo ones computed for all columns at once."""
    union = sorted({q for w in work for q in w[3]})
    position = {q: i for i, q in enumerate(union)}
    snapped = [stats.snapped_differences(a, b) for *_, a, b in work]
    tolerances = np.array([stats.sum_tolerance(a, b) for *_, a, b in work])

    def full(i: int) -> np.ndarray:
        column = np.zeros(len(union))
        column[[position[q] for q in work[i][3]]] = snapped[i]
        return column

    # bootstrap means: one batch of draws per distinct query set
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, w in enumerate(work):
        groups.setdefault(tuple(w[3]), []).append(i)
    boot: dict[int, np.ndarray] = {}
    for ids, members in groups.items():
        d = (
            np.column_stack([work[i][5] - work[i][4] for i in members])
            if ids
            else np.zeros((0, len(members)))
        )
        means = stats.bootstrap_means(d, opts.bootstrap, opts.seed)
        for k, i in enumerate(members):
            boot[i] = means[:, k]

    exact_p: dict[int, tuple[float, int]] = {}
    mc_columns: list[int] = []
    if opts.test == "randomization":
        for i in range(len(work)):
            nonzero = int(np.count_nonzero(snapped[i]))
            if opts.permutations == "exact" or (opts.permutations == "auto" and nonzero <= EXACT_AUTO_LIMIT):
                if nonzero > stats.EXACT_LIMIT:
                    raise ValidationError(
                        f"{work[i][1]} vs {work[i][0]} under {work[i][2]}: {nonzero} queries differ, too many "
                        f"to enumerate all 2^{nonzero} sign vectors",
                        expected=f"at most {stats.EXACT_LIMIT} for --permutations exact",
                        fix="use --permutations N (e.g. 100000) for a Monte Carlo test",
                    )
                count, total = stats.sign_flip_exact(snapped[i], tolerances[i])
                exact_p[i] = (count / total, total)
            else:
                mc_columns.append(i)
    mc_p: dict[int, float] = {}
    if mc_columns:
        d = np.column_stack([full(i) for i in mc_columns])
        p = stats.sign_flip_monte_carlo(d, tolerances[mc_columns], opts.monte_carlo_permutations, opts.seed)
        mc_p = dict(zip(mc_columns, p.tolist(), strict=True))

    rows = []
    for i, (b, t, m, ids, a, bv) in enumerate(work):
        n = len(ids)
        d = bv - a
        tt = stats.paired_t(d, opts.level)
        nz = snapped[i]
        interval = stats.percentile_interval(boot[i], opts.level) if n else (math.nan, math.nan)
        if opts.test == "t":
            statistic, p, method, count = tt.statistic, tt.p_value, "paired t", None
        elif opts.test == "wilcoxon":
            w = stats.wilcoxon(a, bv)
            statistic, p, method, count = w.statistic, w.p_value, w.method, None
        elif opts.test == "bootstrap":
            statistic = tt.mean
            p = stats.bootstrap_p(boot[i], tt.mean, tolerances[i] / max(n, 1)) if n else math.nan
            method, count = "shifted bootstrap", opts.bootstrap
        elif i in exact_p:
            statistic, (p, count), method = tt.mean, exact_p[i], "exact"
        else:
            statistic, p, method, count = tt.mean, mc_p[i], "monte carlo", opts.monte_carlo_permutations
        pw = None
        if opts.power:
            delta, source = (
                (opts.power_delta, "given") if opts.power_delta is not None else (tt.mean, "observed")
            )
            pw = power_analysis(delta, tt.sd, n, opts.alpha, opts.power_target, source)
        rows.append(
            PairComparison(
                baseline=b,
                treatment=t,
                measure=m,
                queries=n,
                mean_baseline=float(np.mean(a)) if n else math.nan,
                mean_treatment=float(np.mean(bv)) if n else math.nan,
                difference=tt.mean,
                wins=int((nz > 0).sum()),
                ties=int((nz == 0).sum()),
                losses=int((nz < 0).sum()),
                sd=tt.sd,
                t_interval=(tt.ci_low, tt.ci_high),
                bootstrap_interval=interval,
                effect_size=tt.effect_size,
                test=opts.test,
                method=method,
                permutations=count,
                statistic=statistic,
                p_value=p,
                power=pw,
            )
        )
    return rows


def _adjusted(rows: list[PairComparison], opts: Options) -> list[PairComparison]:
    from dataclasses import replace

    adjusted = _family_adjusted([r.measure for r in rows], [r.p_value for r in rows], opts)
    return [
        replace(r, p_adjusted=p, significant=bool(not math.isnan(p) and p < opts.alpha))
        for r, p in zip(rows, adjusted, strict=True)
    ]


def _with_noise(row: PairComparison, noise: Any) -> PairComparison:
    from dataclasses import replace

    entry = noise.pair(row.baseline, row.treatment, row.measure)
    return replace(row, noise=entry, verdict=_verdict(row.significant, row.difference, entry))


def _multi(results: Results, measures: Sequence[str], opts: Options) -> list[MultiComparison]:
    out = []
    names = tuple(results.run_names)
    for m in measures:
        ids, x = stats.aligned(results, names, m)
        if len(ids) < 2:
            continue
        anova = stats.anova_two_way(x)
        tukey = tuple(stats.tukey_hsd(x, opts.level))
        randomized = None
        count = None
        if opts.multi == "randomized-tukey":
            count = opts.permutations if isinstance(opts.permutations, int) else RANDOMIZED_TUKEY_TRIALS
            p = stats.randomized_tukey(x, count, opts.seed)
            randomized = tuple(float(p[t.first, t.second]) for t in tukey)
        out.append(
            MultiComparison(
                m, names, len(ids), tuple(x.mean(axis=0).tolist()), anova, tukey, randomized, count
            )
        )
    return out


def compare_runs(
    qrels: Any,
    runs: Sequence[Any],
    measures: Sequence[Any] | None = None,
    conventions: Any = None,
    *,
    labellers: tuple[Any, Any] | None = None,
    noise_replicates: int = NOISE_REPLICATES,
    noise_smoothing: float = 1.0,
    human_qrels: Any = None,
    **options: Any,
) -> Comparison:
    """Evaluate ``runs`` against ``qrels`` with :func:`qrelkit.evaluate` and :func:`compare` them; with
    ``labellers`` (two :class:`~qrelkit.data.values.Qrels` of the calibration queries) also the noise floor;
    with ``human_qrels`` (people's judgments of a random sample of queries; ``qrels`` are then the model's,
    on the same grade scale) also the estimated differences (``estimator=``, default ``ppi++``)."""
    from ..evaluation.core import evaluate

    results = evaluate(qrels, runs, measures, conventions)
    if human_qrels is not None:
        from ..estimation import check_scales

        check_scales(qrels, human_qrels)
        options["human"] = evaluate(human_qrels, runs, measures, conventions)
    noise = None
    if labellers is not None:
        from .noise import noise_floor

        pairs = run_pairs(results, options.get("baseline"), options.get("all_pairs", False))
        noise = noise_floor(
            qrels,
            runs,
            results,
            labellers[0],
            labellers[1],
            pairs,
            replicates=noise_replicates,
            resamples=options.get("bootstrap", BOOTSTRAP_RESAMPLES),
            seed=options.get("seed", COMPARE_SEED),
            smoothing=noise_smoothing,
        )
    return compare(results, noise=noise, **options)


#: The reader options :func:`compare_files` takes as one ``reader`` value (refused as separate keywords).
READER_KEYWORDS = frozenset({"input_format", "on_duplicate", "comments", "scale", "rubric_hash"})


def compare_files(
    qrels_path: Any,
    run_paths: Sequence[Any],
    measures: Sequence[Any] | None = None,
    conventions: Any = None,
    reader: Any = None,
    *,
    bounds: bool = False,
    labellers: Any = None,
    human: Any = None,
    noise_replicates: int = NOISE_REPLICATES,
    noise_smoothing: float = 1.0,
    **options: Any,
) -> Comparison:
    """Evaluate run files and :func:`compare` them. ``reader``: the reader options (a
    :class:`qrelkit.evaluation.plan.ReaderOptions`). Read as ``eval`` reads them
    (:func:`qrelkit.evaluation.files.evaluate_planned_on`: only as deep as the measures need; with ``bounds``,
    whole once and each run's judgment bounds attached), unless the comparison needs every row of every
    run: the noise floor (``labellers``: two labellers' :class:`~qrelkit.data.values.Qrels`, or a callable
    that reads them, called after the runs are read) and the estimates (``human``: the people's qrels,
    read as the model's are) read the judgments and runs whole once, by the plan for every row, and
    :func:`compare_runs` compares them, the bounds taken from the same values."""
    from ..evaluation.files import evaluate_planned_on
    from ..evaluation.plan import Inputs, plan_reading
    from ..measures.conventions import DEFAULT
    from ..measures.grammar import parse_measures

    given = sorted(READER_KEYWORDS & options.keys())
    if given:
        raise ValidationError(
            f"compare_files takes the reader options as one value, not as {', '.join(given)}",
            fix="pass reader=ReaderOptions.given("
            + ", ".join(f"{k}=..." for k in given)
            + ") (qrelkit.evaluation.plan.ReaderOptions)",
        )
    conv = conventions or DEFAULT
    if labellers is not None or human is not None:
        from ..evaluation.bounds import judgment_bounds
        from ..evaluation.plan import read_judgments, read_whole, whole_plan

        plan = whole_plan(qrels_path, run_paths, conv, reader)
        qrels, runs = read_whole(plan)
        found = (
            judgment_bounds(qrels, runs, measures, conv) if bounds else None
        )  # the runs as read, not again
        pair = labellers() if callable(labellers) else labellers
        comparison = compare_runs(
            qrels, runs, measures, conv, labellers=pair,
            human_qrels=read_judgments(plan, human) if human is not None else None,
            noise_replicates=noise_replicates, noise_smoothing=noise_smoothing, **options,
        )  # fmt: skip
        return replace(comparison, results=comparison.results.with_bounds(found))
    # as evaluate_files plans: files read here, a folder the reader's error
    plan = plan_reading(Inputs.build(qrels_path, run_paths, parse_measures(measures), conv, reader))
    return compare(evaluate_planned_on(plan, bounds=bounds), **options)
