"""The design-based estimate of a :class:`~qrelkit.budget.problem.Problem` from a :class:`State`: the model's
grades calibrated per query from the people's sample, every bought pair's grade, and the Horvitz-Thompson
correction of the pairs drawn with probability below 1 (:mod:`qrelkit.estimation.design`).

Also each pair's *influence*: how far its grade moves each run's mean (the measure's derivative), which the
strategies that spend where the runs' order is uncertain weigh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..estimation.design import DesignEstimate, MeasureForm, calibrate, design_estimate, measure_form
from .base import Estimate, State

if TYPE_CHECKING:
    from .problem import Problem


def form_of(problem: Problem) -> MeasureForm:
    """The measure of ``problem`` as a :class:`MeasureForm` (its gain, discount, relevance level and tied
    blocks), equal to :meth:`Problem.values` at whole grades."""
    from ..engine.kernels.ranked import log_ranks

    _, _, base, rel = problem._parsed()
    gain = problem.gain(np.arange(problem.max_grade + 1, dtype=np.int64)).astype(float)
    discount = 1.0 / log_ranks(np.arange(problem.depth, dtype=np.int64), base)
    return measure_form(
        problem.measure,
        problem.ranks,
        problem.query_of,
        problem.n_queries,
        problem.max_grade,
        gain=gain,
        discount=discount,
        relevant=rel,
        ties=problem.ties,
    )


#: Exposure classes: the share of the runs that rank a pair within the top k, cut at these bounds
#: (0: no run; then up to 5%, 15%, 30%, 50%, more). Within a model grade, the people's grades climb with
#: it: on TREC DL 2019 a pair the model grades 1 averages 0.6 where no run ranks it in the top 10 and 2.4
#: where a third of the runs do.
EXPOSURE = (0.0, 0.05, 0.15, 0.3, 0.5)


def exposure(problem: Problem) -> np.ndarray:
    """int64 [pairs]: each pair's exposure class (:data:`EXPOSURE`)."""
    ranked = problem.ranks[problem.ranks >= 0]
    runs_at = np.zeros(problem.n_pairs)
    np.add.at(runs_at, ranked, 1.0)  # rank slots; a pair is at most once in a run's top k
    share = runs_at / max(problem.n_runs, 1)
    out: np.ndarray = np.searchsorted(np.array(EXPOSURE), share, side="left").astype(np.int64)
    return out


def calibrated(problem: Problem, state: State) -> tuple[np.ndarray, np.ndarray]:
    """(predicted [pairs, G + 1], held_out [bought, G + 1]): :func:`qrelkit.estimation.design.calibrate` of
    the model's grades from the bought pairs, within each pair's exposure class, its base fitted to the
    pairs bought with certainty (a design's drawn pairs only correct it)."""
    pi = state.probability[state.bought] if len(state.bought) else np.zeros(0)
    return calibrate(
        problem.query_of,
        problem.model,
        state.bought,
        state.grades,
        problem.max_grade,
        problem.n_queries,
        classes=exposure(problem),
        anchored=(pi >= 1.0) | (pi <= 0.0),  # as estimate_of reads them: known exactly
    )


def estimate_of(
    problem: Problem, state: State, alpha: float, estimator: str, reason: str | None = None
) -> tuple[Estimate, DesignEstimate]:
    """The design-based estimate from ``state`` (each bought pair at its recorded inclusion probability)."""
    form = form_of(problem)
    predicted, held_out = calibrated(problem, state)
    pi = state.probability[state.bought] if len(state.bought) else np.zeros(0)
    pi = np.where(pi > 0, pi, 1.0)
    d = design_estimate(
        form,
        predicted,
        held_out,
        state.bought,
        state.grades,
        pi,
        alpha=alpha,
        estimator=estimator,
        reason=reason,
    )
    return Estimate(d.estimator, d.means, d.low, d.high, d.diff, d.diff_low, d.diff_high), d


def centred_parts(
    form: MeasureForm, x: np.ndarray, pairs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, b [len(pairs), runs], vgg, vgu, vuu [len(pairs)]): the derivative of each run's mean in each of
    ``pairs``' grades, centred on the pair's predicted distribution ``x[pair]``, as ``c[i, r, g] = a[i, r]
    * gg[i, g] - b[i, r] * uu[i, g]`` (:meth:`MeasureForm.gradient_parts` over the queries, gg and uu the
    gain and the norm's step centred on their means under ``x[pair]``), with the moments of gg and uu
    under ``x[pair]``: sum_g x c_r c_s = a_r a_s vgg - (a_r b_s + b_r a_s) vgu + b_r b_s vuu."""
    placed, ratio, up = form.gradient_parts(x, pairs)
    p = x[pairs]
    gg = form.gain[None, :] - (p @ form.gain)[:, None]
    uu = up - (p * up).sum(axis=1)[:, None]
    vgg = (p * gg * gg).sum(axis=1)
    vgu = (p * gg * uu).sum(axis=1)
    vuu = (p * uu * uu).sum(axis=1)
    return placed / form.queries, ratio / form.queries, vgg, vgu, vuu


def residual_variance(form: MeasureForm, x: np.ndarray, omega: np.ndarray, mean_weight: float) -> np.ndarray:
    """float64 [pairs]: for each pair, sum over run pairs (a, b) of ``omega[a, b]`` times the variance of
    its contribution to the difference of the means of a and b, plus ``mean_weight`` times the sum over
    runs of the variance of its contribution to the run's mean, its people's grade drawn from its
    predicted distribution ``x[pair]`` (the derivative of the measure at ``x``). The size a design that
    spends where the runs' order is uncertain gives each pair is the square root of this (Neyman)."""
    everything = np.arange(form.pairs, dtype=np.int64)
    a, b, vgg, vgu, vuu = centred_parts(form, x, everything)
    omega = np.asarray(omega, dtype=float)
    omega = (omega + omega.T) / 2.0
    np.fill_diagonal(omega, 0.0)
    total = omega.sum(axis=1)  # W_r
    # sum_rs omega_rs (c_r - c_s)^2 = 2 sum_r W_r c_r^2 - 2 c^T omega c, and sum_r c_r^2, each a quadratic
    # form in c = a gg - b uu: the three coefficients of gg^2, -2 gg uu and uu^2, then their moments

    def form_in(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (
            2.0 * ((u * v) @ total) - 2.0 * ((u @ omega) * v).sum(axis=1) + mean_weight * (u * v).sum(axis=1)
        )

    out: np.ndarray = vgg * form_in(a, a) - 2.0 * vgu * form_in(a, b) + vuu * form_in(b, b)
    return np.maximum(out, 0.0)
