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
grade range): MTC's stopping rule for a pair.

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


@register("mtc")
class MTC:
    """Minimal Test Collections (module docstring)."""

    name = "mtc"
    needs_probabilities = False

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        remaining = budget - state.spent
        if remaining <= 0:
            return Selection(np.zeros(0, dtype=np.int64), np.zeros(0))
        form = form_of(problem)
        x = expected_grades(problem, state)
        known = state.known(problem.n_pairs)
        free = np.flatnonzero(~known)
        grad = form.gradient(x, free) / form.queries  # [free, runs, G + 1]
        signed = (grad[:, :, -1] - grad[:, :, 0]) / problem.max_grade  # per grade, each run
        means = form.values(x).mean(axis=1)
        a, b = np.triu_indices(problem.n_runs, 1)
        # the most the unjudged pairs could move each run pair's difference, then the weight of each pair in
        # the run pairs still open (in blocks of pairs: free pairs x run pairs is bounded)
        block = max(1, CELLS // max(len(a), 1))
        swing = np.zeros(len(a))
        for lo in range(0, len(free), block):
            part = signed[lo : lo + block]
            swing += np.abs(part[:, a] - part[:, b]).sum(axis=0)
        open_ = np.abs(means[a] - means[b]) <= swing * problem.max_grade
        weight = np.zeros(len(free))
        for lo in range(0, len(free), block):
            part = signed[lo : lo + block]
            if open_.any():
                weight[lo : lo + block] = np.abs(part[:, a[open_]] - part[:, b[open_]]).sum(axis=1)
            else:
                weight[lo : lo + block] = np.abs(part).sum(axis=1)
        n = min(remaining, max(1, round(ROUND * budget)))
        order = np.lexsort((rng.random(len(free)), -weight))
        pairs = np.sort(free[order[:n]])
        return Selection(pairs, np.ones(len(pairs)))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        means = form_of(problem).values(expected_grades(problem, state)).mean(axis=1)
        return Estimate.without_intervals(ESTIMATOR, means)
