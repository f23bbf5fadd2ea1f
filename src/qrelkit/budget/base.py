"""What a strategy is: the state it reads, the selection it returns, the estimate it gives, and the registry
of strategies by name.

A strategy reads the :class:`~qrelkit.budget.problem.Problem` (pairs, the model's grades, the runs' rankings)
and the :class:`State` (the pairs bought so far, their people's grades, each pair's inclusion probability);
it never holds the oracle. ``select`` names the next pairs with their inclusion probabilities under the
strategy's design; ``estimate`` gives each run's mean and each pair of runs' difference with intervals that
are valid under that design (NaN where the design gives none).

A strategy module registers itself with :func:`register` and is imported by ``qrelkit.budget``, so that
:data:`STRATEGIES` lists every strategy once the package is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..errors import ValidationError, did_you_mean

if TYPE_CHECKING:
    from .problem import Problem


@dataclass
class State:
    """What the people have judged so far, as the replay (or the live queue) records it."""

    bought: np.ndarray  # int64 pair indices, in the order bought
    grades: np.ndarray  # int64 the people's grades of `bought`, same order
    probability: np.ndarray  # float64 [pairs]: each pair's inclusion probability under the design so far
    spent: int
    #: the rounds of selection so far: the number of pairs each ``select`` returned, in order
    rounds: list[int] = field(default_factory=list)

    @classmethod
    def empty(cls, n_pairs: int) -> State:
        return cls(
            bought=np.zeros(0, dtype=np.int64),
            grades=np.zeros(0, dtype=np.int64),
            probability=np.zeros(n_pairs, dtype=np.float64),
            spent=0,
        )

    def known(self, n_pairs: int) -> np.ndarray:
        """bool [pairs]: which pairs the people have graded."""
        out = np.zeros(n_pairs, dtype=bool)
        out[self.bought] = True
        return out

    def grade_vector(self, fill: np.ndarray) -> np.ndarray:
        """``fill`` (a grade per pair) with the bought pairs' people's grades in place."""
        out = np.array(fill, copy=True)
        out[self.bought] = self.grades.astype(out.dtype, copy=False)
        return out

    def record(self, pairs: np.ndarray, grades: np.ndarray, probability: np.ndarray) -> None:
        """Add newly bought pairs (already-bought ones are ignored) with their inclusion probabilities."""
        pairs = np.asarray(pairs, dtype=np.int64)
        grades = np.asarray(grades, dtype=np.int64)
        probability = np.asarray(probability, dtype=np.float64)
        have = self.known(len(self.probability))
        fresh = ~have[pairs]
        # first occurrence of each fresh pair
        _, first = np.unique(pairs, return_index=True)
        keep = np.zeros(len(pairs), dtype=bool)
        keep[first] = True
        keep &= fresh
        self.bought = np.concatenate([self.bought, pairs[keep]])
        self.grades = np.concatenate([self.grades, grades[keep]])
        self.probability[pairs] = np.maximum(self.probability[pairs], probability)
        self.spent = len(self.bought)
        self.rounds.append(int(keep.sum()))


@dataclass(frozen=True)
class Selection:
    """The next pairs to buy, with their inclusion probabilities under the design."""

    pairs: np.ndarray  # int64 pair indices to buy next
    probability: np.ndarray  # float64 their inclusion probabilities under the design

    @classmethod
    def none(cls) -> Selection:
        """Nothing to buy (the budget is spent)."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


@dataclass(frozen=True)
class Estimate:
    """Each run's mean and each pair of runs' difference, with intervals at 1 - alpha (NaN: none)."""

    estimator: str
    means: np.ndarray  # float64 [runs]
    low: np.ndarray
    high: np.ndarray
    diff: np.ndarray  # float64 [runs, runs]: mean[a] - mean[b] (the estimator's own estimate of it)
    diff_low: np.ndarray
    diff_high: np.ndarray

    def within(self, low: float, high: float) -> Estimate:
        """The same estimate with each mean's interval cut to [low, high], the measure's range, and each
        difference's to [low - high, high - low]: the true value lies in the range, so an interval cut to it
        covers it as often as before (NaN, no interval, stays NaN)."""
        span = high - low

        def cut(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
            return np.where(np.isnan(values), values, np.clip(values, lo, hi))

        return Estimate(self.estimator, self.means, cut(self.low, low, high), cut(self.high, low, high),
                        self.diff, cut(self.diff_low, -span, span), cut(self.diff_high, -span, span))  # fmt: skip

    @classmethod
    def without_intervals(cls, estimator: str, means: np.ndarray) -> Estimate:
        """Point estimates only: every interval NaN."""
        means = np.asarray(means, dtype=np.float64)
        nan = np.full(len(means), np.nan)
        diff = means[:, None] - means[None, :]
        return cls(
            estimator, means, nan, nan.copy(), diff, np.full_like(diff, np.nan), np.full_like(diff, np.nan)
        )


def bounded(problem: Problem, estimate: Estimate) -> Estimate:
    """``estimate`` with its intervals cut to the measure's range (:meth:`Problem.value_range`): a design
    estimator's linearised interval can reach far past it on a small draw. Every estimate the replay scores
    and the live queue reports goes through here."""
    span = problem.value_range()
    return estimate if span is None else estimate.within(*span)


class Strategy(Protocol):
    name: str
    needs_probabilities: bool

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        """The next pairs to buy (at most budget - state.spent of them; at least one while budget remains).
        Called repeatedly until the budget is spent; may choose all at once (a one-shot design)."""
        ...

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        """Each run's mean and each pair of runs' difference, valid under this strategy's design."""
        ...


#: Registry of strategies by name: name -> a factory of a fresh strategy.
STRATEGIES: dict[str, Callable[[], Strategy]] = {}


def register(name: str) -> Callable[[Callable[[], Strategy]], Callable[[], Strategy]]:
    """Class decorator (or factory decorator) adding a strategy to :data:`STRATEGIES` under ``name``."""

    def add(factory: Callable[[], Strategy]) -> Callable[[], Strategy]:
        STRATEGIES[name] = factory
        return factory

    return add


def strategy(name: str) -> Strategy:
    """A fresh strategy by name (the registered ones: import ``qrelkit.budget`` to register them all); an
    unknown name is a one-line error listing the known ones."""
    if name not in STRATEGIES:
        raise ValidationError(
            f"unknown strategy {name!r}{did_you_mean(name, sorted(STRATEGIES))}",
            got=name,
            expected=", ".join(sorted(STRATEGIES)),
        )
    return STRATEGIES[name]()
