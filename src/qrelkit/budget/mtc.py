"""``mtc``: Minimal Test Collections (Carterette, Allan and Sitaraman, SIGIR 2006): judge the pairs that most
reduce the uncertainty about the order of the runs.

The variant: MTC's greedy selection, one pair at a time as in the paper, with nDCG@k's (or P@k's, R@k's)
weights. A pair's weight for a run pair (a, b) is how far a one-grade change of its people's grade moves
the difference of their means (the measure's derivative at the current expected grades: its discount in
each run's ranking, over the query's ideal); the pair judged next is the one with the largest sum of those
weights over the run pairs whose order is not yet settled, every grade bought so far in place. The unjudged
pairs' expected grades are the model's grades calibrated per query
(:func:`qrelkit.estimation.design.calibrate`, where the paper takes a uniform prior), recalibrated each
:data:`ROUND` of the budget from the people's grades bought by then. A run pair is settled when its
expected difference exceeds the most the unjudged pairs could move it (each moving by its full grade
range; bounded by the sum of what they could move each of the two runs): MTC's stopping rule.

Each selection is one pair; :class:`_Weights` keeps the weights between one selection and the next and
refreshes only the query whose pair was just judged (the other queries' weights move only when the set of
settled run pairs does, and then every weight is recomputed): a pick costs one query's derivatives and
weights and a few passes over vectors of the pairs and runs, not every pair's derivatives. A fresh
computation from the state gives the same weights, bit for bit.

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

#: Share of the budget between recalibrations of the unjudged pairs' expected grades.
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


def _weigh(signed: np.ndarray, open_: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[rows]: each row's sum over the open run pairs (a, b) of |signed[a] - signed[b]| (over every run pair
    it is sum_k v_(k) (2k - runs + 1) of the row's sorted values v); row by row, so a row's weight does not
    depend on the other rows given."""
    runs = signed.shape[1]
    shut = np.flatnonzero(~open_)
    if len(shut) == 0 or len(shut) < len(a) - len(shut):
        everything: np.ndarray = (np.sort(signed, axis=1) * (2.0 * np.arange(runs) - runs + 1.0)).sum(axis=1)
        return everything - _spread(signed, a[shut], b[shut]) if len(shut) else everything
    keep = np.flatnonzero(open_)
    return _spread(signed, a[keep], b[keep]) if len(keep) else np.abs(signed).sum(axis=1)


class _Weights:
    """MTC's weights for a state: built from the state, then kept as pairs are bought one at a time."""

    def __init__(self, problem: Problem, state: State, budget: int) -> None:
        self.problem, self.state, self.budget = problem, state, budget
        self.form = form_of(problem)
        self.step = max(1, round(ROUND * budget))
        self.epoch = state.spent // self.step
        # the calibration from the grades bought by the last recalibration, every grade in place
        settled = self.epoch * self.step
        head = State(state.bought[:settled], state.grades[:settled], state.probability, settled)
        self.x, _ = calibrated(problem, head)
        self.x[state.bought] = np.eye(problem.max_grade + 1)[state.grades]
        self.known = state.known(problem.n_pairs)
        self.spent, self.last = state.spent, -1
        self.a, self.b = np.triu_indices(problem.n_runs, 1)
        everything = np.arange(problem.n_pairs)
        self.parts = self.form.parts(self.x)
        self.placed = self.form.placed(everything)
        self.signed = self.form.span(self.x, everything, self.parts, self.placed) / (
            self.form.queries * problem.max_grade
        )
        self.reach = np.stack([self._reach(q) for q in range(problem.n_queries)])
        self.open_ = self._open()
        self.weight = np.full(problem.n_pairs, -np.inf)
        free = np.flatnonzero(~self.known)
        self.weight[free] = _weigh(self.signed[free], self.open_, self.a, self.b)

    def _reach(self, q: int) -> np.ndarray:
        """[runs]: the most query ``q``'s unjudged pairs could move each run's mean, per grade."""
        lo, hi = self.problem.query_start[q], self.problem.query_start[q + 1]
        out: np.ndarray = np.abs(self.signed[lo:hi][~self.known[lo:hi]]).sum(axis=0)
        return out

    def _open(self) -> np.ndarray:
        """bool [run pairs]: the pairs of runs whose order the unjudged pairs could still change."""
        means = self.form.values(self.x, parts=self.parts).mean(axis=1)
        reach = self.reach.sum(axis=0) * self.problem.max_grade
        out: np.ndarray = np.abs(means[self.a] - means[self.b]) <= reach[self.a] + reach[self.b]
        return out

    def follows(self, problem: Problem, state: State, budget: int) -> bool:
        """Whether ``state`` is this one's state with one more pair, the last chosen, under the same
        problem and budget and in the same calibration (a state changes only by :meth:`State.record`:
        what it holds already is never edited)."""
        return (
            problem is self.problem
            and budget == self.budget
            and state is self.state
            and state.spent == self.spent + 1
            and self.last >= 0
            and int(state.bought[-1]) == self.last
            and state.spent // self.step == self.epoch
        )

    def add(self, pair: int, grade: int) -> None:
        """The people's ``grade`` of ``pair`` bought: its query's weights refreshed (every weight where the
        settled run pairs change)."""
        problem = self.problem
        q = int(problem.query_of[pair])
        lo, hi = problem.query_start[q], problem.query_start[q + 1]
        self.x[pair] = np.eye(problem.max_grade + 1)[grade]
        self.known[pair] = True
        self.weight[pair] = -np.inf
        rows = np.arange(lo, hi)
        self.form.refresh(self.x, self.parts, q)
        self.signed[lo:hi] = self.form.span(self.x, rows, self.parts, self.placed[lo:hi]) / (
            self.form.queries * problem.max_grade
        )
        self.reach[q] = self._reach(q)
        open_ = self._open()
        rows = np.flatnonzero(~self.known) if (open_ != self.open_).any() else rows[~self.known[lo:hi]]
        self.open_ = open_
        self.weight[rows] = _weigh(self.signed[rows], open_, self.a, self.b)
        self.spent += 1

    def pick(self, rng: np.random.Generator) -> int:
        """The unjudged pair of largest weight (ties: one of them at random)."""
        top = np.flatnonzero(self.weight == self.weight.max())
        self.last = int(top[rng.integers(len(top))]) if len(top) > 1 else int(top[0])
        return self.last


@register("mtc")
class MTC:
    """Minimal Test Collections (module docstring)."""

    name = "mtc"
    needs_probabilities = False

    def __init__(self) -> None:
        self._weights: _Weights | None = None

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        remaining = budget - state.spent
        if remaining <= 0 or state.spent >= problem.n_pairs:
            return Selection.none()
        weights = self._weights
        if weights is not None and weights.follows(problem, state, budget):
            weights.add(int(state.bought[-1]), int(state.grades[-1]))
        else:
            weights = self._weights = _Weights(problem, state, budget)
        return Selection(np.array([weights.pick(rng)], dtype=np.int64), np.ones(1))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        means = form_of(problem).values(expected_grades(problem, state)).mean(axis=1)
        return Estimate.without_intervals(ESTIMATOR, means)
