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
from typing import Any, Literal

import numpy as np

from ..agreement.resample import (
    COMPARE_SEED,
    NOISE_REPLICATES,
    RANDOMIZED_TUKEY_TRIALS,
)
from ..errors import IncomparableError, QueryNotFoundError, ValidationError, did_you_mean
from ..estimation.ppi import DEFAULT_ESTIMATOR, DEFAULT_INTERVAL
from ..evaluation.results import Results
from . import stats
from .power import power_analysis

__all__ = [
    "FAMILIES",
    "MULTI",
    "TESTS",
    "Comparison",
    "MultiComparison",
    "Options",
    "PairComparison",
    "combine",
    "compare",
    "compare_files",
    "compare_runs",
    "pair_tests",
    "run_pairs",
]

from .values import (
    BOOTSTRAP_COLUMNS,
    BOOTSTRAP_RESAMPLES,
    EXACT_AUTO_LIMIT,
    FAMILIES,
    MULTI,
    TESTS,
    VERDICT_EXCEEDS,
    VERDICT_NOT,
    VERDICT_WITHIN,
    Family,
    Multi,
    MultiComparison,
    Options,
    PairComparison,
    Test,
    _num,
)


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

    def rows(self, model_alone: bool = False) -> list[dict[str, Any]]:
        """One flat row per pair and measure, what ``compare -f tsv`` writes: with ``human``, the estimated
        differences (as :meth:`bottom_line` and the repr), the model's grades alone (biased) only with
        ``model_alone=True`` (:func:`qrelkit.compare.frames.frame_rows`)."""
        from .frames import frame_rows

        return frame_rows(self, model_alone)[0]

    def to_polars(self, model_alone: bool = False) -> Any:
        """The rows of :meth:`rows` as a polars frame, one row per pair and measure."""
        from .frames import to_polars

        return to_polars(self, model_alone)

    def to_pandas(self, model_alone: bool = False) -> Any:
        """The rows of :meth:`rows` as a pandas frame (pandas is not a dependency: ``pip install pandas``)."""
        from .frames import to_pandas

        return to_pandas(self, model_alone)

    def bottom_line(self) -> list[str]:
        """One sentence per measure, the report's own (:func:`qrelkit.compare.bottom_line.bottom_line`)."""
        from .bottom_line import bottom_line

        return bottom_line(self)

    def __repr__(self) -> str:
        from .frames import text_repr

        return text_repr(self)

    def _repr_html_(self) -> str:
        from .frames import html_repr

        return html_repr(self)

    def provenance(self) -> dict[str, Any]:
        """The Results' provenance (tool version, conventions, measures, fingerprints) with the comparison's
        options: what ``--provenance FILE`` writes."""
        return self.results.provenance() | {"comparison": {"options": self.options.to_dict()}}

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
    rows = pair_tests(results, pairs, names, opts)
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


def pair_tests(
    results: Results, pairs: Sequence[tuple[str, str]], measures: Sequence[str], options: Options
) -> list[PairComparison]:
    """Each (baseline, treatment) pair under each measure (names as ``results`` spells them): the
    statistics, the chosen paired test and its p-value adjusted over the family, and whether it is
    significant; what :func:`compare` reports per pair, without the multiple-run procedures, the noise
    floor or the estimates."""
    work = []  # (pair, measure, query ids, a, b)
    for b, t in pairs:
        for m in measures:
            ids, x = stats.aligned(results, (b, t), m)
            work.append((b, t, m, ids, x[:, 0], x[:, 1]))
    rows = [replace(row, mean_baseline=_run_mean(results, row.baseline, row.measure, w[3], row.mean_baseline),
                    mean_treatment=_run_mean(results, row.treatment, row.measure, w[3], row.mean_treatment))
            for row, w in zip(_pair_statistics(work, options), work, strict=True)]  # fmt: skip
    return _adjusted(rows, options)


def _run_mean(results: Results, run: str, measure: str, ids: Sequence[str], paired: float) -> float:
    """A run's mean beside a pair: the Results' own (:meth:`Results.mean`, under its conventions' summation,
    so compare and eval print the same number to the bit) when the pair covers every query the run has a
    value for and that mean is the mean of those values; otherwise ``paired``, the mean over the pair's
    queries."""
    values = results.values(measure, run)
    if set(ids) != {q for q, v in values.items() if not math.isnan(v)}:
        return paired
    own = results.mean(measure, run)
    return own if math.isclose(own, paired, rel_tol=1e-12, abs_tol=1e-15) else paired


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

    # bootstrap means: the same draws for every column of a query set, BOOTSTRAP_COLUMNS columns at a time
    # (each column's interval and p-value kept, not its means)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, w in enumerate(work):
        groups.setdefault(tuple(w[3]), []).append(i)
    boot_interval: dict[int, tuple[float, float]] = {}
    boot_p: dict[int, float] = {}
    for ids, members in groups.items():
        n_ids = len(ids)
        for lo in range(0, len(members), BOOTSTRAP_COLUMNS):
            part = members[lo : lo + BOOTSTRAP_COLUMNS]
            d = np.column_stack([work[i][5] - work[i][4] for i in part]) if ids else np.zeros((0, len(part)))
            means = stats.bootstrap_means(d, opts.bootstrap, opts.seed)
            for k, i in enumerate(part):
                if not n_ids:
                    boot_interval[i], boot_p[i] = (math.nan, math.nan), math.nan
                    continue
                boot_interval[i] = stats.percentile_interval(means[:, k], opts.level)
                if opts.test == "bootstrap":
                    observed = float(np.mean(d[:, k]))
                    boot_p[i] = stats.bootstrap_p(means[:, k], observed, tolerances[i] / n_ids)

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
        interval = boot_interval[i]
        if opts.test == "t":
            statistic, p, method, count = tt.statistic, tt.p_value, "paired t", None
        elif opts.test == "wilcoxon":
            w = stats.wilcoxon(a, bv)
            statistic, p, method, count = w.statistic, w.p_value, w.method, None
        elif opts.test == "bootstrap":
            statistic = tt.mean
            p = boot_p[i]
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
