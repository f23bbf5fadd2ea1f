"""The live queue's design: which pairs people judge next, in focused rounds, then chosen once for the rest
of the budget.

:func:`plan_round` takes a focused round (``active``'s step 2): the remaining pairs of largest size, each
with certainty, from every grade people settled so far; people grade them, and the next round (or the
final draw) is planned from their grades. :func:`plan_queue` takes what people have judged so far (the
:class:`State`: typically the calibration queries) and returns a one-shot :class:`Selection` of the
remaining budget with each pair's inclusion probability, under ``active``'s final draw
(:mod:`qrelkit.budget.active`): the grades so far calibrate the model's grades per query and count as known
(probability 1); every remaining pair has a known chance, bounded below. The app stores the selection with
its probabilities, the strategy and the seed; the estimate of the finished project is :func:`qrelkit.budget.designed.estimate_of` of the state with those
probabilities (the bought pairs before the plan at 1).
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from .active import final_probabilities, focused
from .base import Selection, State
from .problem import Problem

#: The strategies whose one-shot design :func:`plan_queue` draws.
PLANNED = ("active",)


#: The fewest pairs of the budget a plan or a focused round must leave to the final draw: the intervals rest
#: on it (:func:`qrelkit.budget.active.unsampled_reason`; a variance needs two drawn pairs).
LEFT_FOR_DRAW = 2


def plan_queue(
    problem: Problem, state: State, strategy: str, budget: int, seed: int, certain: np.ndarray | None = None
) -> Selection:
    """A one-shot design of ``budget - state.spent`` pairs (``budget`` counts the pairs judged so far)
    under ``strategy``'s final draw, drawn with ``seed``. Every pair already judged is left out.

    ``certain``: pairs people will settle whatever the draw does (graded or marked before the plan, not
    settled: a calibration pair two people graded apart; or held in a person's plan whatever the design:
    an ungraded calibration pair, a model's audit sample), taken first with probability 1 and left out of
    the draw's frame. A pair whose inclusion does not rest on the draw must not carry a draw's probability:
    the estimate would inverse-weight a grade it was always going to have. When they leave fewer than
    :data:`LEFT_FOR_DRAW` pairs of the budget to the draw, the plan is refused with the budget that would
    do."""
    _check_strategy(strategy)
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

    sure = _unsettled(problem, state, certain)
    rest, frame = remaining - len(sure), left - len(sure)
    if rest < min(LEFT_FOR_DRAW, frame):  # the pairs people settle anyway take (nearly) all the budget
        need = state.spent + len(sure) + min(LEFT_FOR_DRAW, frame)
        raise ValidationError(
            f"the {len(sure)} pairs people settle whatever the plan chooses (graded apart or marked unsure, or "
            f"held in their plans: calibration pairs, a model's audit sample) leave {max(rest, 0)} of the budget "
            f"of {budget} pairs to the draw, and its intervals need at least {min(LEFT_FOR_DRAW, frame)}",
            fix=f"give a budget of at least {need} pairs (--budget {need})",
        )
    free, pi = final_probabilities(problem, _known_exactly(problem, state), rest, exclude=sure)
    chosen = systematic_sample(pi, np.random.default_rng(seed))
    return Selection(np.concatenate([sure, free[chosen]]), np.concatenate([np.ones(len(sure)), pi[chosen]]))


def plan_round(
    problem: Problem,
    state: State,
    strategy: str,
    budget: int,
    n: int,
    seed: int,
    certain: np.ndarray | None = None,
) -> Selection:
    """A focused round under ``strategy`` (``active``'s step 2, :func:`qrelkit.budget.active.focused`): the
    ``certain`` pairs (people settle them whatever the plan chooses, :func:`plan_queue`), then the ``n``
    remaining pairs of largest size from the grades so far, each with probability 1, ties broken with
    ``seed`` and the pairs settled (each round its own order). The round must leave at least
    :data:`LEFT_FOR_DRAW` pairs of ``budget`` (which counts the pairs judged so far) to the final draw
    (:func:`plan_queue`), else it is refused with the most it may take."""
    _check_strategy(strategy)
    sure = _unsettled(problem, state, certain)
    left = min(budget - state.spent, problem.n_pairs - state.spent)
    most = left - len(sure) - LEFT_FOR_DRAW
    if not 1 <= n <= most:
        first = (
            f" after the {len(sure)} pairs people settle anyway (graded apart or held in their plans)"
            if len(sure)
            else ""
        )
        raise ValidationError(
            f"a focused round of {n} pairs does not fit: {state.spent} pairs of the budget of {budget} are "
            f"settled and {left} are left{first}, of which {LEFT_FOR_DRAW} must go to the final draw (its "
            "intervals rest on it)",
            fix=f"take from 1 to {most} pairs"
            if most >= 1
            else "no round fits: plan the final draw of the "
            "rest (judge plan without --round), or give a larger budget",
        )
    rng = np.random.default_rng([seed, state.spent])  # each round its own ties' order
    fresh = focused(problem, _known_exactly(problem, state), n, rng, exclude=sure)
    pairs = np.concatenate([sure, fresh])
    return Selection(pairs, np.ones(len(pairs)))


def _unsettled(problem: Problem, state: State, certain: np.ndarray | None) -> np.ndarray:
    """The ``certain`` pairs not yet known, sorted and each once."""
    sure = np.zeros(0, dtype=np.int64) if certain is None else np.asarray(certain, dtype=np.int64)
    out: np.ndarray = np.unique(sure[~state.known(problem.n_pairs)[sure]])
    return out


def _known_exactly(problem: Problem, state: State) -> State:
    """``state`` with every pair people judged so far at probability 1: a project's settled grades are known
    exactly, whatever design brought them."""
    return State(state.bought, state.grades, np.ones(problem.n_pairs), state.spent)


def _check_strategy(strategy: str) -> None:
    if strategy not in PLANNED:
        raise ValidationError(
            f"strategy {strategy!r} has no one-shot design for a live queue",
            expected=", ".join(PLANNED),
            fix="--order active",
        )
