"""Everything a report shows, computed once, as one value: the :class:`Dossier`.

``qrelkit report`` computes the dossier here and :mod:`qrelkit.report.page` renders it; the page computes
nothing. A dossier holds the comparison (with the Results it came from and, given two labellers, the
noise floor, and each mean's judgment bounds), where each run's missing gain is (ordered badly versus never retrieved), the conventions
sweep of the first measure for the baseline and up to :data:`SWEEP_RUNS` other runs, the explanation of
the queries that moved most, and what the judgments mean (their manifest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .._typing import DEFAULT_ESTIMATOR
from ..compare import Comparison, compare_runs
from ..data.values import Qrels, Run
from ..errors import ValidationError
from ..evaluation.bounds import judgment_bounds
from ..evaluation.diagnose import Explanation, MissingGain, Variant, explain, missing_gain, sweep
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import Measure

__all__ = ["EXPLAINED_QUERIES", "SWEEP_ROWS", "SWEEP_RUNS", "Dossier", "build_dossier"]

SWEEP_RUNS = 8
"""Pairs whose per-query differences are drawn and explained, and the most runs besides the baseline(s)
whose conventions sweep is shown. The rest are left out, and the page says which."""
SWEEP_ROWS = 300_000
"""The sweep evaluates a run about 30 times (every profile and single-axis change): runs are swept,
baselines first, while their rows add up to at most this many (the baseline is always swept)."""
EXPLAINED_QUERIES = 5
"""Queries that moved most (per compared pair, on the first measure) explained rank by rank."""


@dataclass(frozen=True, eq=False)
class Dossier:
    comparison: Comparison
    measure: Measure  # the first measure: the one the per-query, sweep and explain sections use
    k: int
    missing: tuple[MissingGain, ...]
    sweeps: dict[str, tuple[Variant, ...]]
    sweep_left_out: tuple[str, ...]
    moved: tuple[tuple[str, str, str, float], ...]  # (baseline, treatment, query, difference), largest first
    explanations: dict[tuple[str, str], Explanation]  # (run, query) -> explanation
    judgments: dict[str, Any] | None
    labellers: tuple[Qrels, Qrels] | None
    command: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    estimates: Any = None  # qrelkit.estimation.Estimates, with people's judgments of a sample of queries

    @property
    def results(self) -> Any:
        return self.comparison.results


def _first_ranked(measures: Sequence[Measure]) -> Measure:
    for m in measures:
        if m.name in ("nDCG", "DCG"):
            return m
    return measures[0]


def build_dossier(
    qrels: Qrels,
    runs: Sequence[Run],
    measures: Sequence[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    labellers: tuple[Qrels, Qrels] | None = None,
    judgments: dict[str, Any] | None = None,
    command: str = "",
    human_qrels: Qrels | None = None,
    **options: Any,
) -> Dossier:
    """Compute every value the report shows. ``options`` go to :func:`qrelkit.compare.compare`
    (baseline, test, seed, correction, estimator, ...). With ``human_qrels`` (people's judgments of a random
    sample of queries; ``qrels`` are then a model's), every mean and difference is also estimated
    (:mod:`qrelkit.estimation`)."""
    conv = conventions or DEFAULT
    if len(runs) < 2:
        raise ValidationError(
            "a report compares runs: it needs at least two",
            fix="pass the baseline run and the run(s) to compare",
        )
    comparison = compare_runs(
        qrels, runs, measures, conv, labellers=labellers, human_qrels=human_qrels, **options
    )
    results = comparison.results.with_judgments(judgments)
    results = results.with_bounds(judgment_bounds(qrels, runs, results.measures, conv))
    comparison = replace(comparison, results=results)
    estimates = None
    if comparison.human is not None:
        from ..estimation import estimate

        estimates = estimate(
            results,
            comparison.human,
            comparison.estimator or DEFAULT_ESTIMATOR,
            alpha=comparison.options.alpha,
            interval=comparison.interval,
        )
    measure = _first_ranked(list(results.measures))
    k = measure.k or 10
    by_name = {r.name: r for r in runs}
    missing = tuple(
        missing_gain(qrels, by_name[name], k, measure.conventions(conv)) for name in results.run_names
    )

    baselines = list(dict.fromkeys(p.baseline for p in comparison.pairs))
    order = baselines + [n for n in results.run_names if n not in baselines]
    swept: list[str] = []
    rows = 0
    for name in order[: SWEEP_RUNS + len(baselines)]:
        rows += by_name[name].frame.height
        if swept and rows > SWEEP_ROWS:
            break
        swept.append(name)
    left_out = tuple(n for n in order if n not in swept)
    sweeps = {name: tuple(sweep(qrels, by_name[name], measure, conv)) for name in swept}

    moved: list[tuple[str, str, str, float]] = []
    for p in [p for p in comparison.pairs if p.measure == str(measure)][:SWEEP_RUNS]:
        a, b = results.values(measure, p.baseline), results.values(measure, p.treatment)
        diffs = [(q, b[q] - a[q]) for q in a if q in b and not (math.isnan(a[q]) or math.isnan(b[q]))]
        diffs.sort(key=lambda x: (-abs(x[1]), x[0]))
        moved += [(p.baseline, p.treatment, q, d) for q, d in diffs[:EXPLAINED_QUERIES] if d != 0]
    explanations: dict[tuple[str, str], Explanation] = {}
    if measure.name in ("nDCG", "DCG"):
        for baseline, treatment, q, _ in moved:
            for name in (baseline, treatment):
                if (name, q) not in explanations:
                    explanations[name, q] = explain(qrels, by_name[name], q, measure, conv)
    return Dossier(
        comparison=comparison,
        measure=measure,
        k=k,
        missing=missing,
        sweeps=sweeps,
        sweep_left_out=left_out,
        moved=tuple(moved),
        explanations=explanations,
        judgments=judgments,
        labellers=labellers,
        command=command,
        estimates=estimates,
    )
