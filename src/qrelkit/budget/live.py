"""The live queue's design: which pairs people judge next, chosen once for the rest of the budget.

:func:`plan_queue` takes what people have judged so far (the :class:`State`: typically the calibration
queries) and returns a one-shot :class:`Selection` of the remaining budget with each pair's inclusion
probability, under ``active``'s final draw (:mod:`qrelkit.budget.active`): the grades so far calibrate the
model's grades per query and count as known (probability 1); every remaining pair has a known chance,
bounded below. The app stores the selection with its probabilities, the strategy and the seed; the
estimate of the finished project is :func:`qrelkit.budget.designed.estimate_of` of the state with those
probabilities (the bought pairs before the plan at 1).
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from .active import final_probabilities
from .base import Selection, State
from .problem import Problem

#: The strategies whose one-shot design :func:`plan_queue` draws.
PLANNED = ("active",)


def plan_queue(
    problem: Problem, state: State, strategy: str, budget: int, seed: int, certain: np.ndarray | None = None
) -> Selection:
    """A one-shot design of ``budget - state.spent`` pairs (``budget`` counts the pairs judged so far)
    under ``strategy``'s final draw, drawn with ``seed``. Every pair already judged is left out.

    ``certain``: pairs people will settle whatever the draw does (graded before the plan, not settled: a
    calibration pair two people graded apart), taken first with probability 1 and left out of the draw's
    frame. A pair whose inclusion does not rest on the draw must not carry a draw's probability: the
    estimate would inverse-weight a grade it was always going to have."""
    if strategy not in PLANNED:
        raise ValidationError(
            f"strategy {strategy!r} has no one-shot design for a live queue",
            expected=", ".join(PLANNED),
            fix="--order active",
        )
    remaining = budget - state.spent
    left = problem.n_pairs - state.spent
    if remaining < 1:
        raise ValidationError(
            f"a budget of {budget} pairs is spent already ({state.spent} judged)",
            fix="give a budget above the pairs judged so far",
        )
    if remaining >= left:
        pairs = np.flatnonzero(~state.known(problem.n_pairs))
        return Selection(pairs, np.ones(len(pairs)))
    from ..estimation.design import systematic_sample

    sure = np.zeros(0, dtype=np.int64) if certain is None else np.asarray(certain, dtype=np.int64)
    sure = np.unique(sure[~state.known(problem.n_pairs)[sure]])
    rest = remaining - len(sure)
    if rest < 1:  # the budget goes to the pairs people settle anyway
        return Selection(sure, np.ones(len(sure)))
    known = State(state.bought, state.grades, np.ones(problem.n_pairs), state.spent)
    free, pi = final_probabilities(problem, known, rest, exclude=sure)
    chosen = systematic_sample(pi, np.random.default_rng(seed))
    return Selection(np.concatenate([sure, free[chosen]]), np.concatenate([np.ones(len(sure)), pi[chosen]]))
