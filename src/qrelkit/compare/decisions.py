"""Decision-level agreement of two sets of grades: do they order the runs alike, and do they find the same
differences?

Label-level agreement (kappa) is not what a team decides on. :func:`decision_agreement` evaluates the same
runs under two sets of grades (A, taken as the truth, and B), on the queries both judged, and reports:

- the rank correlations of the runs ordered by the measure's mean: Kendall's tau-b, tau_AP of B's order
  against A's, of A's against B's, and their mean, each with agreement's query-bootstrap interval
  (:func:`qrelkit.agreement.ranking.rank_agreement`, where ties are defined);
- the pairs of runs whose order flips (:func:`qrelkit.agreement.ranking.order_flips`);
- over every pair of runs, the paired test of :func:`qrelkit.compare.compare` under A and under B
  (:func:`qrelkit.compare.pair_tests`, with
  its :class:`~qrelkit.compare.Options`: the test, the correction over the family of pairs, ``alpha``): of the
  differences significant under A, how many B finds significant the same way (kept), significant the other
  way (reversed), or not significant (lost); and how many B finds that A did not (gained).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..agreement.ranking import Flip, RankAgreement, order_flips, rank_agreement
from ..agreement.resample import INTERVAL_LEVEL, QUERY_BOOTSTRAP_RESAMPLES, QUERY_BOOTSTRAP_SEED
from ..errors import ValidationError
from ..provenance import json_number
from . import Options, pair_tests, run_pairs, stats

__all__ = [
    "DEFAULT_MEASURE",
    "MAX_RUNS",
    "DecisionAgreement",
    "PairDecision",
    "Significance",
    "decision_agreement",
    "model_ranking",
    "ranking_gate",
]

#: The measure runs are ordered by unless another is named.
DEFAULT_MEASURE = "nDCG@10"
#: The most runs compared at once: every pair is tested under both sets of grades, each with compare's
#: statistics (19,900 pairs at the bound; the 1,953 pairs of 63 runs take tens of seconds).
MAX_RUNS = 200


@dataclass(frozen=True)
class PairDecision:
    """One pair of runs: the difference (``second`` minus ``first``) and its significance under A and B."""

    first: str
    second: str
    difference_a: float
    p_adjusted_a: float
    significant_a: bool
    difference_b: float
    p_adjusted_b: float
    significant_b: bool

    @property
    def outcome(self) -> str | None:
        """For a difference significant under A: ``kept``, ``reversed`` or ``lost`` under B; ``gained`` for
        one only B finds; ``None`` for one neither finds."""
        if not self.significant_a:
            return "gained" if self.significant_b else None
        if not self.significant_b:
            return "lost"
        return "kept" if (self.difference_a > 0) == (self.difference_b > 0) else "reversed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "second": self.second,
            "difference_a": json_number(self.difference_a),
            "p_adjusted_a": json_number(self.p_adjusted_a),
            "significant_a": self.significant_a,
            "difference_b": json_number(self.difference_b),
            "p_adjusted_b": json_number(self.p_adjusted_b),
            "significant_b": self.significant_b,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class Significance:
    """The paired test over every pair of runs under A and under B, and the counts it comes to."""

    options: Options
    pairs: tuple[PairDecision, ...]

    def count(self, outcome: str) -> int:
        return sum(1 for p in self.pairs if p.outcome == outcome)

    @property
    def significant_a(self) -> int:
        return sum(1 for p in self.pairs if p.significant_a)

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.options.to_dict(),
            "significant": "p-value adjusted over the family of pairs below alpha (compare's rule)",
            "pairs": len(self.pairs),
            "significant_under_a": self.significant_a,
            "kept": self.count("kept"),
            "reversed": self.count("reversed"),
            "lost": self.count("lost"),
            "gained": self.count("gained"),
            "changed_pairs": [p.to_dict() for p in self.pairs if p.outcome not in (None, "kept")],
        }


@dataclass(frozen=True)
class DecisionAgreement:
    """What :func:`decision_agreement` found (the module docstring)."""

    measure: str
    labellers: tuple[str, str]
    runs: tuple[str, ...]
    queries: tuple[str, ...]
    means_a: tuple[float, ...]
    means_b: tuple[float, ...]
    ranking: RankAgreement
    flips: tuple[Flip, ...]
    significance: Significance
    conventions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        r = self.ranking.to_dict()
        rank_a, rank_b = _ranks(self.means_a), _ranks(self.means_b)
        return {
            "measure": self.measure,
            "conventions": self.conventions,
            "truth": "a",
            "labellers": {"a": self.labellers[0], "b": self.labellers[1]},
            "queries": len(self.queries),
            "query_set": "the queries both judged",
            "runs": [
                {"run": name, "mean_a": json_number(a), "mean_b": json_number(b), "rank_a": ra, "rank_b": rb}
                for name, a, b, ra, rb in zip(
                    self.runs, self.means_a, self.means_b, rank_a, rank_b, strict=True
                )
            ],
            "kendall_tau": r["kendall_tau"],
            "tau_ap": r["tau_ap"],
            "tau_ap_reverse": r["tau_ap_reverse"],
            "tau_ap_symmetric": r["tau_ap_symmetric"],
            "tau_ap_direction": "tau_ap: B's order scored against A's as the truth; tau_ap_reverse: A's "
            "against B's; tau_ap_symmetric: their mean",
            "tied_groups": {"a": self.ranking.tied_groups[0], "b": self.ranking.tied_groups[1]},
            "ties": r["ties"],
            "flips": [f.to_dict() for f in self.flips],
            "significance": self.significance.to_dict(),
        }


def _ranks(means: Sequence[float]) -> list[int]:
    """Each run's rank by mean, 1 the highest; tied means share the best rank of their group."""
    return [1 + sum(1 for other in means if other > m) for m in means]


def _on_common_queries(qrels_a: Any, qrels_b: Any) -> tuple[Any, Any]:
    from ..data.values import on_common_queries

    return on_common_queries(qrels_a, qrels_b, who="the two sets of grades", expected="grades of the same queries",
                             fix="check that both files grade the same (calibration) queries")  # fmt: skip


def decision_agreement(
    qrels_a: Any,
    qrels_b: Any,
    runs: Sequence[Any],
    measure: str = DEFAULT_MEASURE,
    conventions: Any = None,
    *,
    labellers: tuple[str, str] = ("A", "B"),
    options: Options | None = None,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> DecisionAgreement:
    """Evaluate ``runs`` under ``qrels_a`` (the truth) and ``qrels_b`` on the queries both judge, and say
    how far B's grades lead to A's decisions (the module docstring). ``options``: the paired test's
    (:class:`~qrelkit.compare.Options`, default: compare's, alpha 0.05); ``n_resamples``, ``seed`` and
    ``level``: the rank correlations' query bootstrap."""
    from ..evaluation.core import evaluate
    from ..measures.grammar import parse

    runs = list(runs)
    if not 2 <= len(runs) <= MAX_RUNS:
        raise ValidationError(
            f"decision-level agreement compares from 2 to {MAX_RUNS} runs (every pair is tested under both "
            "sets of grades)",
            got=len(runs),
            fix="pass at least two runs (--runs R1 R2 ...)"
            if len(runs) < 2
            else f"pass at most {MAX_RUNS} runs",
        )
    name = str(parse(measure))
    a, b = _on_common_queries(qrels_a, qrels_b)
    results_a, results_b = evaluate(a, runs, [name], conventions), evaluate(b, runs, [name], conventions)
    names = results_a.run_names
    m = results_a.measure_names[0]
    ids_a, xa = stats.aligned(results_a, names, m)
    ids_b, xb = stats.aligned(results_b, names, m)
    common = sorted(set(ids_a) & set(ids_b))
    if not common:
        raise ValidationError(
            f"no query has a defined {m} for every run under both sets of grades",
            fix="check that the runs retrieve for the judged queries",
        )
    rows_a = [ids_a.index(q) for q in common]
    rows_b = [ids_b.index(q) for q in common]
    xa, xb = xa[rows_a], xb[rows_b]
    ranking = rank_agreement(xa, xb, n_resamples=n_resamples, seed=seed, level=level)
    means_a = tuple(math.fsum(c) / len(common) for c in xa.T.tolist())
    means_b = tuple(math.fsum(c) / len(common) for c in xb.T.tolist())
    opts = options or Options(seed=seed)
    every = run_pairs(results_a, all_pairs=True)
    tests_a, tests_b = pair_tests(results_a, every, [m], opts), pair_tests(results_b, every, [m], opts)
    pairs = tuple(
        PairDecision(pa.baseline, pa.treatment, pa.difference, pa.p_adjusted, pa.significant,
                     pb.difference, pb.p_adjusted, pb.significant)
        for pa, pb in zip(tests_a, tests_b, strict=True)
    )  # fmt: skip
    return DecisionAgreement(
        measure=m,
        labellers=labellers,
        runs=tuple(names),
        queries=tuple(common),
        means_a=means_a,
        means_b=means_b,
        ranking=ranking,
        flips=tuple(order_flips(names, np.array(means_a), np.array(means_b))),
        significance=Significance(opts, pairs),
        conventions=results_a.conventions.to_dict(),
    )


# -- a model labeller's ranking agreement ----------------------------------------------------------------


def ranking_gate(
    found: DecisionAgreement | None, threshold: float, why_not: str | None = None
) -> dict[str, Any]:
    """The ranking criterion a model labeller is held to only when asked (``--gate-ranking TAU``): the lower
    end of the query-bootstrap interval of Kendall's tau-b between the runs' order under the people's
    grades and under the model's is at least ``threshold``. Not measurable (``why_not``, or an undefined
    interval) is not passed."""
    base = {"statistic": "kendall_tau", "use": "lower end of the query-bootstrap interval",
            "threshold": threshold}  # fmt: skip
    low = math.nan if found is None else found.ranking.kendall_tau.interval.low
    if found is None or math.isnan(low):
        reason = why_not or (found.ranking.kendall_tau.interval.note if found is not None else None)
        return base | {"passed": False, "low": None,
                       "message": f"ranking gate not measurable: {reason or 'undefined interval'}"}  # fmt: skip
    passed = low >= threshold
    verdict = "passed" if passed else "failed"
    return base | {
        "passed": passed,
        "low": low,
        "message": f"ranking gate {verdict}: Kendall's tau interval lower end {low:.3f} "
        f"{'>=' if passed else '<'} {threshold:g}",
    }


def model_ranking(
    inputs: Any,
    measure: str = DEFAULT_MEASURE,
    *,
    gate: float | None = None,
    options: Options | None = None,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """A model labeller's decision-level agreement with the people on the calibration queries, over the
    project's runs (``inputs``: :class:`qrelkit.app.models.ranking.RankingInputs`), as ``judge model
    status`` shows it: the :func:`decision_agreement` (people's grades as A, the truth; the model's as B),
    or why it cannot be measured, and with ``gate`` the criterion of :func:`ranking_gate`."""
    found = None
    if inputs.note is None:
        found = decision_agreement(
            inputs.people, inputs.model, inputs.runs, measure, labellers=("people", "model"), options=options,
            n_resamples=n_resamples, seed=seed,
        )  # fmt: skip
    return {
        "role": "information" if gate is None else "gate criterion",
        "pairs_left_out": inputs.left_out,
        "runs_from": inputs.runs_from,
        "note": inputs.note,
        "decision_agreement": found.to_dict() if found is not None else None,
        "gate": ranking_gate(found, gate, inputs.note) if gate is not None else None,
    }
