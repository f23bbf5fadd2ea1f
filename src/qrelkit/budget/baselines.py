"""The three baselines: how a team picks what people judge without a strategy.

- ``random-queries``: whole queries drawn at random (a random permutation of the queries, taken while each
  next query's pairs fit in the budget), as qrelkit's calibration sample is drawn; estimated per run by
  ``ppi++`` over queries (:func:`qrelkit.estimation.ppi.interval`): the model's per-query values on every query,
  the people's on the drawn ones; each pair of runs the same on their per-query differences.
- ``random-pairs``: pairs drawn uniformly at random without replacement (simple random sampling); estimated by
  the *difference estimator*: the runs' means with the model's grades where no person judged and the
  people's where one did, plus the unjudged pairs' share of the correction, estimated from the judged pairs
  (each run's mean expanded to first order in the pairs' units, :meth:`Problem.units`, around the model's
  grades, with weights the sample does not choose). Where the measure is linear in the pairs' units (P@k:
  a count over a fixed k) the expansion is exact, the estimator unbiased under the design, and its interval
  the sampling interval of a total under simple random sampling without replacement (finite-population
  corrected, t quantile with m - 1 degrees of freedom). nDCG@k and R@k divide by a quantity every pair of the
  query moves (the ideal DCG, the relevant count); the ideal DCG is not even smooth in the grades (a step
  where a grade's count crosses k), and with a model as far from the people as real judges are the
  expansion misses by more than its interval (the replay measured coverage of the means near 30% at 5% of
  the pairs, falling as the budget grows). There the estimate is the means with the model's grades where
  no person judged and the people's where one did, with no interval (NaN): the correction would add its
  sampling noise to the runs' order without making an interval valid.
- ``pool-order``: depth-first over the runs' ranks, as pooling judges (every run's rank 1, then rank 2, ...;
  the pairs first reached at one rank in random order); estimated by the model's grades with the judged
  pairs replaced. Nothing is sampled, so there is no design to base an interval on: every interval is NaN.
"""

from __future__ import annotations

import numpy as np

from .base import Estimate, Selection, State, register
from .problem import Problem


def best_ranks(problem: Problem) -> np.ndarray:
    """int64 [pairs]: each pair's best 0-based rank over the runs (from the ranks within k when the Problem
    does not carry them; pairs no run ranks there: the largest int64)."""
    if problem.best_rank is not None:
        return problem.best_rank
    best = np.full(problem.n_pairs + 1, np.iinfo(np.int64).max, dtype=np.int64)
    pos = np.broadcast_to(np.arange(problem.depth), problem.ranks.shape)
    np.minimum.at(best, problem.ranks.ravel(), pos.ravel())
    out: np.ndarray = best[: problem.n_pairs]
    return out


def _mirror(upper_value: np.ndarray, upper_low: np.ndarray, upper_high: np.ndarray) -> tuple[np.ndarray, ...]:
    """Fill [b, a] from [a, b] (a < b): the difference negated, its interval negated and swapped; NaN on the
    diagonal."""
    n = len(upper_value)
    il = np.tril_indices(n, -1)
    value, low, high = upper_value.copy(), upper_low.copy(), upper_high.copy()
    value[il] = -upper_value.T[il]
    low[il] = -upper_high.T[il]
    high[il] = -upper_low.T[il]
    np.fill_diagonal(value, 0.0)
    np.fill_diagonal(low, np.nan)
    np.fill_diagonal(high, np.nan)
    return value, low, high


# ------------------------------------------------------------------------------------------ random-queries


def _judged_whole(problem: Problem, known: np.ndarray) -> np.ndarray:
    """bool [queries]: every pooled pair of the query judged by people (a query with no pooled pair: no)."""
    sizes = np.diff(problem.query_start)
    counted = np.bincount(problem.query_of[known], minlength=problem.n_queries)
    out: np.ndarray = (counted == sizes) & (sizes > 0)
    return out


@register("random-queries")
class RandomQueries:
    """Whole queries at random; ppi++ over queries per run and per pair of runs."""

    name = "random-queries"
    needs_probabilities = False
    estimator = "ppi++ (random queries)"

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        """Every query not yet judged whole, in random order, taken while the next fits in what is left. One
        draw: the design is a random permutation's prefix, so once this state holds a draw (``state.rounds``)
        nothing more is selected, even where a smaller query would fit in what is left."""
        if state.rounds:
            return Selection.none()
        left = budget - state.spent
        known = state.known(problem.n_pairs)
        starts, stops = problem.query_start[:-1], problem.query_start[1:]
        complete = _judged_whole(problem, known)
        open_queries = np.flatnonzero(~complete & (stops > starts))
        if left <= 0 or not len(open_queries):
            return Selection.none()
        order = rng.permutation(open_queries)
        cost = np.array([int((~known[starts[q] : stops[q]]).sum()) for q in order], dtype=np.int64)
        fits = np.cumsum(cost) <= left
        take = order[: int(np.argmin(fits)) if not fits.all() else len(order)]
        if not len(take):
            return Selection.none()
        pairs = np.concatenate([np.arange(starts[q], stops[q]) for q in take]).astype(np.int64)
        pairs = pairs[~known[pairs]]
        share = (len(take) + int(complete.sum())) / problem.n_queries
        return Selection(pairs, np.full(len(pairs), share))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        from ..estimation.ppi import interval

        human = np.flatnonzero(_judged_whole(problem, state.known(problem.n_pairs)))
        other = np.setdiff1d(np.arange(problem.n_queries), human)
        model_values = problem.values(problem.model)
        if len(human) < 2:
            return Estimate.without_intervals(self.estimator, model_values.mean(axis=1))
        people_values = problem.values(state.grade_vector(problem.model))
        runs = problem.n_runs
        means, low, high = np.zeros(runs), np.zeros(runs), np.zeros(runs)
        for r in range(runs):
            iv = interval(
                "ppi++", people_values[r, human], model_values[r, human], model_values[r, other], alpha
            )
            means[r], low[r], high[r] = iv.value, iv.low, iv.high
        diff = np.zeros((runs, runs))
        diff_low, diff_high = np.full((runs, runs), np.nan), np.full((runs, runs), np.nan)
        for a in range(runs):
            for b in range(a + 1, runs):
                iv = interval(
                    "ppi++",
                    people_values[a, human] - people_values[b, human],
                    model_values[a, human] - model_values[b, human],
                    model_values[a, other] - model_values[b, other],
                    alpha,
                )
                diff[a, b], diff_low[a, b], diff_high[a, b] = iv.value, iv.low, iv.high
        d, dl, dh = _mirror(diff, diff_low, diff_high)
        return Estimate(self.estimator, means, low, high, d, dl, dh)


# ------------------------------------------------------------------------------------------ random-pairs


def linear_in_units(problem: Problem) -> bool:
    """Whether each run's mean is linear in the pairs' units (:meth:`Problem.units`): P@k."""
    from ..measures.grammar import parse

    return parse(problem.measure).name == "P"


@register("random-pairs")
class RandomPairs:
    """Pairs uniformly at random; the linearized difference estimator with its SRS interval."""

    name = "random-pairs"
    needs_probabilities = False
    estimator = "difference estimator under simple random sampling of pairs (random pairs)"
    ratio_estimator = "model with judged pairs replaced (random pairs: no interval for a ratio measure)"

    def __init__(self) -> None:
        self._weights: tuple[int, np.ndarray] | None = None

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        left = budget - state.spent
        unknown = np.flatnonzero(~state.known(problem.n_pairs))
        if left <= 0 or not len(unknown):
            return Selection.none()
        take = np.sort(rng.choice(unknown, size=min(left, len(unknown)), replace=False)).astype(np.int64)
        return Selection(take, np.full(len(take), (state.spent + len(take)) / problem.n_pairs))

    def _slopes(self, problem: Problem) -> np.ndarray:
        """The derivative of each run's mean in each pair's unit at the model's grades (fixed before any
        sample: the design, not the sample, makes the correction unbiased), kept for the Problem."""
        if self._weights is None or self._weights[0] != id(problem):
            self._weights = (id(problem), problem.linearization(problem.model)[1])
        return self._weights[1]

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        from scipy import stats

        n, m = problem.n_pairs, len(state.bought)
        filled = state.grade_vector(problem.model)
        base = problem.means(filled)
        if not linear_in_units(problem):
            return Estimate.without_intervals(self.ratio_estimator, base)
        if m < 2:
            return Estimate.without_intervals(self.estimator, base)
        a = self._slopes(problem)
        s = state.bought
        d = problem.units(state.grades) - problem.units(problem.model[s])
        y = a[:, s] * d  # [runs, m]: each judged pair's correction, run by run
        means = base + (n - m) * y.mean(axis=1)
        if m >= n:  # everything judged: the means are the people's, exactly
            zero = np.zeros((problem.n_runs, problem.n_runs))
            diff = means[:, None] - means[None, :]
            return Estimate(self.estimator, means, means.copy(), means.copy(), diff, diff + zero, diff + zero)
        cov = np.atleast_2d(np.cov(y, ddof=1))
        fpc = 1.0 - m / n
        t = float(stats.t.ppf(1.0 - alpha / 2.0, m - 1))
        se = n * np.sqrt(np.maximum(np.diag(cov), 0.0) * fpc / m)
        var_diff = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
        se_diff = n * np.sqrt(np.maximum(var_diff, 0.0) * fpc / m)
        diff = means[:, None] - means[None, :]
        low, high = means - t * se, means + t * se
        diff_low, diff_high = diff - t * se_diff, diff + t * se_diff
        # an interval of width 0 where nothing varied is not an interval: not measurable
        low[se == 0], high[se == 0] = np.nan, np.nan
        flat = se_diff == 0
        diff_low[flat], diff_high[flat] = np.nan, np.nan
        return Estimate(self.estimator, means, low, high, diff, diff_low, diff_high)


# ------------------------------------------------------------------------------------------ pool-order


@register("pool-order")
class PoolOrder:
    """Depth-first over the runs' ranks; the model's grades with the judged pairs replaced, no interval."""

    name = "pool-order"
    needs_probabilities = False
    estimator = "model with judged pairs replaced (pool order: no interval, not a sample)"

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        left = budget - state.spent
        unknown = np.flatnonzero(~state.known(problem.n_pairs))
        if left <= 0 or not len(unknown):
            return Selection.none()
        rank = best_ranks(problem)[unknown]
        order = np.lexsort((rng.random(len(unknown)), rank))  # by best rank, ties at random
        take = unknown[order[:left]].astype(np.int64)
        return Selection(take, np.ones(len(take)))

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        return Estimate.without_intervals(self.estimator, problem.means(state.grade_vector(problem.model)))
