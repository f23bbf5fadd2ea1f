"""``active``: qrelkit's own strategy. People's grades spread over every query calibrate the model's grades
to the people's scale, query by query; rounds of the pairs whose grades could most move the differences
between runs whose order is still uncertain follow, taken with certainty, the calibration recomputed
between rounds; the rest of the budget is one probability sample of the remaining pairs, each drawn with a
probability proportional to the same size (and the means'), bounded below; the level and the intervals
come from the difference estimator of :mod:`qrelkit.estimation.design` under that design, conditional on
the rounds before it, the order from the calibrated grades.

1. **Pilot** (:data:`PILOT` of the budget): pairs of every query, as many from each query as its share of
   the pooled pairs, drawn at random within the query. With every later grade they calibrate the model's
   grades per query and exposure class (:func:`qrelkit.estimation.design.calibrate`).
2. **Focused rounds** (:data:`FOCUS` of the budget, in rounds of :data:`ROUND`): each round takes with
   certainty the remaining pairs of largest size (the final draw's size, below), the calibration and the
   sizes recomputed from every grade so far before the next round. A
   design that recomputes where the order is uncertain as grades come in orders the runs better than one
   draw from the sizes after the pilot (docs/judging-budget.md, "Measured").
3. **Final draw** (the rest): from the calibrated model, each run's mean and each run pair's difference
   with its model-based spread s_ab; each run pair weighs omega_ab = exp(-d_ab^2 / (2 s_ab^2)) / s_ab
   (close pairs, whose order the remaining grades could still flip). Each remaining pair's size is the
   square root of the sum over run pairs of omega_ab times the variance of its contribution to their
   difference (its people's grade drawn from its calibrated distribution: the measure's discount, how many
   runs rank it and where, and how unsure the calibrated grade is), plus :data:`MEAN_WEIGHT` times that
   for the means. The inclusion probabilities are proportional to that size, :data:`FLOOR` of the draw
   spread evenly so every remaining pair has a chance of at least FLOOR times the even rate, capped at 1
   (a take-all stratum). One systematic draw over a random order takes exactly the rest of the budget
   with exactly those probabilities.
4. **Design estimate**: the pilot's and the focused rounds' pairs are known exactly (conditioning on
   them, they enter with probability 1: the labels that chose the final draw's probabilities never enter
   as weighted corrections); the final draw's pairs correct the calibrated prediction of the remaining pairs by
   inverse-probability weighting, each against a calibration fitted without its own grade. The interval
   is valid under the design conditional on the rounds before the draw, hence unconditionally (nDCG's
   ideal DCG: see :mod:`qrelkit.estimation.design` on its smoothed slopes; a mean's interval takes the
   larger of the design-based standard error and the model's expectation of it, with Student's t at the
   design-based variance's effective degrees of freedom: a draw of a few hundred pairs can miss the few
   large residuals the variance rests on).
5. **The order** (:func:`composite`): the calibrated model's expected values with the people's grades in
   place, shifted by the design estimate's mean correction over the runs; each interval the design's,
   widened to hold the estimate.

With the model's grade probabilities (``problem.probabilities``) the calibration does not change: the
strategy works from the grades alone (``needs_probabilities`` is false).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..estimation.design import MeasureForm, inclusion_probabilities, systematic_sample
from .base import Estimate, Selection, State, register
from .designed import calibrated, centred_parts, estimate_of, form_of, residual_variance
from .mtc import expected_grades

if TYPE_CHECKING:
    from .problem import Problem

#: Share of the budget spent on the pilot spread over every query.
PILOT = 0.15
#: Share of the budget spent after the pilot on the pairs of largest size, taken with certainty in rounds
#: of :data:`ROUND` of the budget, the calibration and the sizes recomputed between rounds (the final draw
#: takes the remaining 15%; measured over seven simulated collections against 50%: docs/judging-budget.md).
FOCUS = 0.7
#: Share of the budget each focused round takes.
ROUND = 0.05
#: Share of the final draw spread evenly over the remaining pairs (each pair's chance at least this share
#: of the even rate).
FLOOR = 0.2
#: Weight of the means beside the run pairs' differences in the final draw's sizes (relative to the mean
#: run pair weight): the means rest on nDCG's ideal DCG, whose highly relevant pairs the differences
#: barely move (measured: 0.1 left the means' interval at 84-87% coverage at 20% of the pairs).
MEAN_WEIGHT = 1.0

ESTIMATOR = "difference estimator (Horvitz-Thompson, calibrated model), active design"
COMPOSITE = (
    "calibrated model with people's grades in place, levelled by the difference estimator (Horvitz-Thompson) "
    "under the active design; its intervals widened to hold the estimate"
)
RATIO_ESTIMATOR = (
    "calibrated model with the people's grades in place, active design (no interval: ratio measure)"
)


def pilot(problem: Problem, state: State, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unbought pairs spread over every query in proportion to its pooled pairs (largest remainders),
    drawn at random within each query."""
    known = state.known(problem.n_pairs)
    sizes = np.bincount(problem.query_of[~known], minlength=problem.n_queries)
    if n <= 0 or sizes.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    share = n * sizes / sizes.sum()
    take = np.floor(share).astype(np.int64)
    left = n - int(take.sum())
    order = np.argsort(-(share - take) + rng.random(len(share)) * 1e-9, kind="stable")
    take[order[:left]] += 1
    take = np.minimum(take, sizes)
    out = []
    for q in np.flatnonzero(take):
        lo, hi = problem.query_start[q], problem.query_start[q + 1]
        free = np.arange(lo, hi)[~known[lo:hi]]
        out.append(rng.choice(free, size=int(take[q]), replace=False))
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def focused(
    problem: Problem, state: State, n: int, rng: np.random.Generator, exclude: np.ndarray | None = None
) -> np.ndarray:
    """A focused round: the ``n`` unbought pairs of largest size (:func:`sizes`; ties in a random order),
    sorted; ``exclude``: pairs left out (taken otherwise)."""
    free, size = sizes(problem, state, exclude)
    out: np.ndarray = np.sort(free[np.lexsort((rng.random(len(free)), -size))[:n]])
    return out


def run_pair_weights(means: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """omega [runs, runs]: exp(-d^2 / (2 s^2)) / s for each run pair's difference d and spread s."""
    d = means[:, None] - means[None, :]
    s = np.maximum(spread, 1e-6)
    out: np.ndarray = np.exp(-0.5 * (d / s) ** 2) / s
    np.fill_diagonal(out, 0.0)
    return out


def final_probabilities(
    problem: Problem, state: State, n: int, exclude: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(the unbought pairs, their inclusion probabilities summing to ``n``) of the final draw; ``exclude``:
    pairs left out of its frame (taken otherwise)."""
    free, size = sizes(problem, state, exclude)
    return free, inclusion_probabilities(size, n, floor=FLOOR)


def sizes(problem: Problem, state: State, exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the unbought pairs, each one's size: the square root of its share in the uncertain differences);
    ``exclude``: pairs left out of the answer (taken otherwise; they still count among the uncertain)."""
    form = form_of(problem)
    predicted, _ = calibrated(problem, state)
    x = predicted.copy()
    e = np.zeros((len(state.bought), problem.max_grade + 1))
    e[np.arange(len(state.bought)), state.grades] = 1.0
    x[state.bought] = e
    means = form.values(x).mean(axis=1)
    runs = problem.n_runs
    # each run pair's model-based spread: the variance of its difference over the unbought pairs' grades
    known = state.known(problem.n_pairs)
    spread = _pair_spreads(form, x, known)
    omega = run_pair_weights(means, spread)
    scale = float(omega[np.triu_indices(runs, 1)].mean()) if runs > 1 else 1.0
    score = residual_variance(form, x, omega, MEAN_WEIGHT * scale)
    free = np.flatnonzero(~known)
    if exclude is not None and len(exclude):
        free = free[~np.isin(free, exclude)]
    return free, np.sqrt(score[free])


def _pair_spreads(form: MeasureForm, x: np.ndarray, known: np.ndarray) -> np.ndarray:
    """[runs, runs]: the standard deviation of each run pair's difference of means when the unbought pairs'
    grades are drawn from their predicted distributions."""
    free = np.flatnonzero(~known)
    a, b, vgg, vgu, vuu = centred_parts(form, x, free)
    # sum over the pairs and grades of x c c^T, c = a (gain - its mean) - b (up - its mean)
    cov = (
        (a * vgg[:, None]).T @ a
        - (a * vgu[:, None]).T @ b
        - (b * vgu[:, None]).T @ a
        + (b * vuu[:, None]).T @ b
    )
    var = np.diag(cov)
    out: np.ndarray = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2.0 * cov, 0.0))
    return out


@register("active")
class Active:
    """qrelkit's strategy (module docstring)."""

    name = "active"
    needs_probabilities = False
    #: The share of the budget in focused rounds (``None``: :data:`FOCUS`).
    focus: float | None = None

    def first_pairs(self, problem: Problem, state: State, n: int, rng: np.random.Generator) -> np.ndarray:
        """The pilot's ``n`` pairs (:func:`pilot`)."""
        return pilot(problem, state, n, rng)

    def select(self, problem: Problem, state: State, budget: int, rng: np.random.Generator) -> Selection:
        remaining = budget - state.spent
        if remaining <= 0:
            return Selection.none()
        left = problem.n_pairs - state.spent
        if remaining >= left:  # everything: known exactly
            pairs = np.flatnonzero(~state.known(problem.n_pairs))
            return Selection(pairs, np.ones(len(pairs)))
        drawn = state.probability[state.bought] < 1.0
        if not drawn.any():
            n = min(round(PILOT * budget) - state.spent, remaining - 1)
            if n > 0:
                pairs = self.first_pairs(problem, state, n, rng)
                return Selection(pairs, np.ones(len(pairs)))
            focus = FOCUS if self.focus is None else self.focus
            n = min(
                round((PILOT + focus) * budget) - state.spent, max(1, round(ROUND * budget)), remaining - 1
            )
            if n > 0:
                pairs = focused(problem, state, n, rng)
                return Selection(pairs, np.ones(len(pairs)))
        free, pi = final_probabilities(problem, state, remaining)
        chosen = systematic_sample(pi, rng)
        return Selection(free[chosen], pi[chosen])

    def estimate(self, problem: Problem, state: State, alpha: float) -> Estimate:
        design, _ = estimate_of(problem, state, alpha, ESTIMATOR, reason=unsampled_reason(problem, state))
        return composite(problem, state, design)


def composite(problem: Problem, state: State, design: Estimate) -> Estimate:
    """The order from the calibrated grades, the level and the intervals from the design.

    The runs' means: the calibrated model's expected values with the people's grades in place (the order a
    small budget gets right; a design-unbiased mean carries (1 / pi - 1) times the residual noise of every
    pair not taken with certainty, more than the calibrated grades' own at 5-10% of the pairs), shifted by
    the design estimate's mean correction over the runs (the level). Each interval is the design's,
    widened where needed to hold the estimate: it holds every value the design's interval holds, so its
    coverage is at least that interval's. Differences: the calibrated values' differences (the shift
    cancels), each interval the design's widened to hold the difference."""
    form = form_of(problem)
    x = expected_grades(problem, state)
    plug = form.expected_values(x).mean(axis=1)
    means = plug + float(np.mean(design.means - plug))
    diff = means[:, None] - means[None, :]
    if not np.isfinite(design.low).all():
        return Estimate.without_intervals(design.estimator, means)
    low, high = np.minimum(design.low, means), np.maximum(design.high, means)
    diag = np.eye(len(means), dtype=bool)
    d_low = np.where(diag, np.nan, np.minimum(design.diff_low, diff))
    d_high = np.where(diag, np.nan, np.maximum(design.diff_high, diff))
    return Estimate(COMPOSITE, means, low, high, diff, d_low, d_high)


def unsampled_reason(problem: Problem, state: State) -> str | None:
    """Why the intervals are not valid when pairs are left that no probability draw covered, else None."""
    drawn = state.probability[state.bought] < 1.0
    if state.spent < problem.n_pairs and not drawn.any():
        return "no pair of the remainder was drawn with a known probability: the remainder rests on the model alone"
    return None
