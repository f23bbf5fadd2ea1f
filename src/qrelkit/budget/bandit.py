"""``bandit``: adjudication by multi-armed bandits (Losada, Parapar and Barreiro, IP&M 2017), the MaxMean
variant adopted for the TREC 2017 Common Core track.

Per query, each run is an arm; pulling an arm judges the run's highest-ranked pair not yet judged, and the
reward is whether the people find it relevant (grade >= 1). MaxMean pulls the arm with the highest
posterior mean of its reward, (relevant + 1) / (judged + 2) under a uniform Beta prior, counting the pairs
of the arm's ranking judged so far (by whichever arm). The budget is shared over the queries in proportion
to their pooled pairs; a query whose runs' top k are all judged spends the rest of its share on its other
pairs in random order. Each query's pairs are bought one at a time (each reward decides that query's next
pull); the queries' bandits are independent, so each round pulls once in every query with budget left.

The estimate: each run's mean with the people's grades where bought and the model's grades calibrated per
query elsewhere. The selection is deterministic given the grades: no inclusion probability backs an
interval, so the intervals are NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import Estimate, Selection, State, register
from .designed import form_of
from .mtc import expected_grades

if TYPE_CHECKING:
    from .problem import Problem

ESTIMATOR = "MaxMean adjudication (people's grades where bought, calibrated model elsewhere)"


def _shares(problem: Problem, budget: int) -> np.ndarray:
    sizes = np.diff(problem.query_start)
    share = budget * sizes / sizes.sum()
    take = np.floor(share).astype(np.int64)
    order = np.argsort(-(share - take), kind="stable")
    take[order[: budget - int(take.sum())]] += 1
    return np.minimum(take, sizes)


@register("bandit")
class MaxMean:
    """Bandit adjudication, MaxMean (module docstring)."""

    name = "bandit"
    needs_probabilities = False

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        """One pull in every query whose share is not spent (the queries' bandits are independent, so a
        pull in each at once is the same as pulling them one after another)."""
        remaining = budget - state.spent
        if remaining <= 0:
            return Selection.none()
        known = state.known(problem.n_pairs)
        spent_q = np.bincount(problem.query_of[state.bought], minlength=problem.n_queries)
        short = _shares(problem, budget) - spent_q
        left_q = np.bincount(problem.query_of[~known], minlength=problem.n_queries)
        candidates = np.flatnonzero((short > 0) & (left_q > 0))
        if not len(candidates):  # the shares are spent where pairs are left: the rest anywhere
            candidates = np.flatnonzero(left_q > 0)
        candidates = candidates[np.argsort(-short[candidates], kind="stable")][:remaining]
        grade = np.full(problem.n_pairs, -1, dtype=np.int64)
        grade[state.bought] = state.grades
        pairs = [self._pull(problem, int(q), known, grade, rng) for q in candidates]
        return Selection(np.array(sorted(pairs), dtype=np.int64), np.ones(len(pairs)))

    @staticmethod
    def _pull(
        problem: Problem, q: int, known: np.ndarray, grade: np.ndarray, rng: np.random.Generator
    ) -> int:
        """MaxMean's next pair in query ``q``."""
        ranks = problem.ranks[:, q, :]  # [runs, k]
        at = np.maximum(ranks, 0)
        judged = (ranks >= 0) & known[at]
        relevant = judged & (grade[at] >= 1)
        open_ = (ranks >= 0) & ~judged
        alive = open_.any(axis=1)
        if alive.any():
            score = (relevant.sum(axis=1) + 1.0) / (judged.sum(axis=1) + 2.0)
            score = np.where(alive, score + rng.random(len(score)) * 1e-9, -np.inf)
            run = int(np.argmax(score))
            return int(ranks[run][open_[run]][0])
        lo, hi = problem.query_start[q], problem.query_start[q + 1]
        free = np.arange(lo, hi)[~known[lo:hi]]
        return int(rng.choice(free))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        means = form_of(problem).values(expected_grades(problem, state)).mean(axis=1)
        return Estimate.without_intervals(ESTIMATOR, means)
