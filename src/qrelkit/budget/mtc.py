"""``mtc``: Minimal Test Collections (Carterette, Allan and Sitaraman, SIGIR 2006): judge the pairs that most
reduce the uncertainty about the order of the runs.

The variant: MTC's greedy selection with nDCG@k's (or P@k's, R@k's) weights. A pair's weight for a run pair
(a, b) is how far a one-grade change of its people's grade moves the difference of their means (the
measure's derivative at the current expected grades: its discount in each run's ranking, over the query's
ideal); the pair judged next is the one with the largest sum of those weights over the run pairs whose
order is not yet settled, in rounds of :data:`ROUND` of the budget, the expected grades of the unjudged
pairs recomputed after each round from the people's grades so far (the model's grades calibrated per query,
:func:`qrelkit.estimation.design.calibrate`, where the paper takes a uniform prior). A run pair is settled
when its expected difference exceeds the most the unjudged pairs could move it (each moving by its full
grade range; bounded by the sum of what they could move each of the two runs): MTC's stopping rule.

The estimate: each run's mean with the people's grades where bought and the calibrated expected grades
elsewhere (MTC's expected measure). Its selection is deterministic given the grades, so no inclusion
probability backs an interval: the intervals are NaN ("not measurable"), never an invalid one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import Estimate, Selection, State, register
from .designed import calibrated, form_of

if TYPE_CHECKING:
    from .problem import Problem

#: Share of the budget chosen per round (the expected grades are recomputed between rounds).
ROUND = 0.1
#: Pairs x run pairs held at once while weighing.
CELLS = 4_000_000

ESTIMATOR = "MTC expected measure (people's grades where bought, calibrated model elsewhere)"


def expected_grades(problem: Problem, state: State) -> np.ndarray:
    """[pairs, G + 1]: the calibrated prediction with every bought pair's grade in place."""
    predicted, _ = calibrated(problem, state)
    predicted[state.bought] = np.eye(problem.max_grade + 1)[state.grades]
    return predicted


def _spread(signed: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[pairs]: sum over the run pairs (a, b) of |signed[:, a] - signed[:, b]|, in blocks of pairs."""
    out = np.zeros(len(signed))
    block = max(1, CELLS // max(len(a), 1))
    for lo in range(0, len(signed), block):
        part = signed[lo : lo + block]
        out[lo : lo + block] = np.abs(part[:, a] - part[:, b]).sum(axis=1)
    return out


@register("mtc")
class MTC:
    """Minimal Test Collections (module docstring)."""

    name = "mtc"
    needs_probabilities = False

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        remaining = budget - state.spent
        if remaining <= 0:
            return Selection.none()
        form = form_of(problem)
        x = expected_grades(problem, state)
        known = state.known(problem.n_pairs)
        free = np.flatnonzero(~known)
        signed = form.span(x, free) / (form.queries * problem.max_grade)  # per grade, each run
        means = form.values(x).mean(axis=1)
        runs = problem.n_runs
        a, b = np.triu_indices(runs, 1)
        # a run pair is settled when its expected difference exceeds the most the unjudged pairs could move
        # it, bounded by the sum of what they could move each run
        reach = np.abs(signed).sum(axis=0) * problem.max_grade
        open_ = np.abs(means[a] - means[b]) <= reach[a] + reach[b]
        # each pair's weight: sum over the open run pairs of |change of a - change of b|; over every run pair
        # it is sum_k v_(k) (2k - runs + 1) of the sorted changes v
        ordered = np.sort(signed, axis=1)
        everything = ordered @ (2.0 * np.arange(runs) - runs + 1.0)
        shut = np.flatnonzero(~open_)
        if len(shut) == 0:
            weight = everything
        elif len(shut) < len(a) - len(shut):
            weight = everything - _spread(signed, a[shut], b[shut])
        else:
            keep = np.flatnonzero(open_)
            weight = _spread(signed, a[keep], b[keep]) if len(keep) else np.abs(signed).sum(axis=1)
        n = min(remaining, max(1, round(ROUND * budget)))
        order = np.lexsort((rng.random(len(free)), -weight))
        pairs = np.sort(free[order[:n]])
        return Selection(pairs, np.ones(len(pairs)))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        means = form_of(problem).values(expected_grades(problem, state)).mean(axis=1)
        return Estimate.without_intervals(ESTIMATOR, means)
