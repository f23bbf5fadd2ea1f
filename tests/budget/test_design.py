"""The design-based estimator (qrelkit.estimation.design): its measure form against Problem.values (held to
qrelkit.evaluate) with tied scores; its derivative against finite differences; exact design-unbiasedness of
the leave-one-out difference estimator, and of its variance estimator with a fixed prediction, by enumerating
every sample of a Poisson design; the held-out calibration against refitting without the pair; the
calibration's ordinal base against a slow reference; the
probability-proportional-to-size probabilities and the systematic draw; coverage by seeded simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from qrelkit import Qrels, Run
from qrelkit.budget import build_problem
from qrelkit.budget.designed import form_of
from qrelkit.estimation.design import (
    calibrate,
    design_estimate,
    inclusion_probabilities,
    measure_form,
    systematic_sample,
)


def _problem(seed: int, measure: str, queries: int = 3, docs: int = 12, runs: int = 3, tied: bool = False):
    rng = np.random.default_rng(seed)
    full, model = {}, {}
    run_dicts: list[dict[str, dict[str, float]]] = [{} for _ in range(runs)]
    for q in range(queries):
        names = [f"d{q}_{i}" for i in range(docs)]
        full[f"q{q}"] = {d: int(rng.integers(0, 4)) for d in names}
        model[f"q{q}"] = {d: int(min(3, g + rng.integers(0, 2))) for d, g in full[f"q{q}"].items()}
        for r in range(runs):
            scores = rng.standard_normal(docs + 3)
            if tied:
                scores = np.round(scores)  # blocks of tied scores
            extra = [f"x{q}_{i}" for i in range(3)]  # retrieved, not pooled: gain 0
            run_dicts[r][f"q{q}"] = {d: float(s) for d, s in zip(names + extra, scores, strict=True)}
    return build_problem(
        Qrels.from_dict(full, name="full"),
        Qrels.from_dict(model, name="model"),
        [Run.from_dict(d, name=f"r{i}") for i, d in enumerate(run_dicts)],
        measure,
    )


@pytest.mark.parametrize("measure", ["nDCG@5", "P@5", "R@5"])
@pytest.mark.parametrize("tied", [False, True])
def test_form_equals_the_problem_values_at_whole_grades(measure, tied):
    problem, people = _problem(3, measure, tied=tied)
    form = form_of(problem)
    for grades in (people, problem.model, np.zeros_like(people)):
        got = form.values(np.eye(4)[grades])
        assert np.allclose(got, problem.values(grades), rtol=0, atol=1e-12)


@pytest.mark.parametrize("measure", ["nDCG@5", "R@5"])
def test_gradient_matches_finite_differences(measure):
    problem, _ = _problem(4, measure)
    form = form_of(problem)
    rng = np.random.default_rng(0)
    x = rng.dirichlet(np.ones(4), problem.n_pairs)
    pairs = np.array([0, 5, 13, 20])
    grad = form.gradient(x, pairs)
    h = 1e-6
    for row, i in enumerate(pairs):
        for g in range(4):
            up, down = x.copy(), x.copy()
            up[i, g] += h
            down[i, g] -= h
            numeric = (form.values(up) - form.values(down))[:, problem.query_of[i]] / (2 * h)
            assert np.allclose(grad[row, :, g], numeric, atol=1e-6)


def test_held_out_calibration_is_the_fit_without_the_pair():
    problem, people = _problem(5, "nDCG@5")
    rng = np.random.default_rng(1)
    bought = np.sort(rng.choice(problem.n_pairs, 15, replace=False))
    args = (problem.query_of, problem.model)
    _, held_out = calibrate(*args, bought, people[bought], 3, problem.n_queries)
    for k, i in enumerate(bought):
        others = np.delete(bought, k)
        refit, _ = calibrate(*args, others, people[others], 3, problem.n_queries)
        assert np.allclose(held_out[k], refit[i], atol=1e-12)


def test_held_out_of_a_pair_outside_the_anchors_is_the_fit_without_it():
    # the base is fitted to the anchored pairs (taken with certainty); a drawn pair's held-out row is the
    # whole calibration refitted without its grade, the anchors unchanged
    problem, people = _problem(8, "nDCG@5", queries=4)
    rng = np.random.default_rng(3)
    bought = np.sort(rng.choice(problem.n_pairs, 24, replace=False))
    anchored = rng.random(len(bought)) < 0.5
    classes = problem.model % 2  # any classes
    args = (problem.query_of, problem.model)
    _, held_out = calibrate(*args, bought, people[bought], 3, problem.n_queries, classes, anchored)
    for k in np.flatnonzero(~anchored):
        keep = np.arange(len(bought)) != k
        refit, _ = calibrate(
            *args, bought[keep], people[bought[keep]], 3, problem.n_queries, classes, anchored[keep]
        )
        assert np.allclose(held_out[k], refit[bought[k]], atol=1e-12)


def _slow_ordinal(query_of, model, classes, grades, queries, g1, n_class):
    """The base's model written pair by pair and fitted by BFGS on numeric gradients: the
    penalised cumulative logit likelihood of design.calibrate's docstring, with its prior's
    pseudo-observations, as an independent reference."""
    from scipy.optimize import minimize

    from qrelkit.estimation import design

    def unpack(w):
        theta = np.concatenate([[w[0]], w[0] + np.cumsum(np.exp(w[1 : g1 - 1]))])
        beta = w[g1 - 1 : 2 * g1 - 1]
        gamma = w[2 * g1 - 1 : 2 * g1 - 1 + n_class]
        u = w[2 * g1 - 1 + n_class :]
        return theta, beta, gamma, u

    def cdf(t):
        return 1.0 / (1.0 + np.exp(-t))

    def prob(theta, eta, y):
        hi = cdf(theta[y] - eta) if y < g1 - 1 else 1.0
        lo = cdf(theta[y - 1] - eta) if y > 0 else 0.0
        return hi - lo

    def nll(w):
        theta, beta, gamma, u = unpack(w)
        out = 0.0
        for q, m, c, y in zip(query_of, model, classes, grades, strict=True):
            out -= np.log(prob(theta, beta[m] + gamma[c] + u[q], y))
        for m in range(g1):  # the prior's pseudo-observations: no class, no query
            for y in range(g1):
                weight = design.ROW_PRIOR * (0.5 / g1 + (0.5 if y == m else 0.0))
                out -= weight * np.log(prob(theta, beta[m], y))
        effects = np.concatenate([beta, gamma])
        return out + 0.5 * design.EFFECT_RIDGE * effects @ effects + 0.5 * design.QUERY_RIDGE * u @ u

    start = np.zeros(2 * g1 - 1 + n_class + queries)
    start[0] = -1.0
    w = minimize(nll, start, method="BFGS", options={"gtol": 1e-9}).x
    theta, beta, gamma, u = unpack(w)

    def predict(q, m, c):
        return np.array([prob(theta, beta[m] + gamma[c] + u[q], y) for y in range(g1)])

    return predict


def test_the_calibration_base_against_a_slow_reference():
    # with CELL_PRIOR pseudo-counts of the base in each cell, an unbought pair's prediction is
    # (its cell's counts + CELL_PRIOR x base) / (count + CELL_PRIOR): the base from the reference
    from qrelkit.estimation import design

    problem, people = _problem(9, "nDCG@5", queries=4)
    rng = np.random.default_rng(4)
    bought = np.sort(rng.choice(problem.n_pairs, 30, replace=False))
    classes = (np.arange(problem.n_pairs) % 3).astype(np.int64)
    predicted, _ = calibrate(
        problem.query_of, problem.model, bought, people[bought], 3, problem.n_queries, classes,
        np.ones(len(bought), dtype=bool),
    )  # fmt: skip
    reference = _slow_ordinal(
        problem.query_of[bought],
        problem.model[bought],
        classes[bought],
        people[bought],
        problem.n_queries,
        4,
        3,
    )
    for i in range(problem.n_pairs):
        same = bought[
            (problem.query_of[bought] == problem.query_of[i])
            & (problem.model[bought] == problem.model[i])
            & (classes[bought] == classes[i])
        ]
        counts = np.bincount(people[same], minlength=4).astype(float)
        base = reference(problem.query_of[i], problem.model[i], classes[i])
        expected = (counts + design.CELL_PRIOR * base) / (counts.sum() + design.CELL_PRIOR)
        assert np.allclose(predicted[i], expected, atol=1e-6)  # the reference optimiser's own precision


def test_a_query_whose_grades_run_high_is_predicted_higher_in_every_row():
    # one intercept per query: grades above the model's in some rows raise the query's unseen rows too
    problem, _ = _problem(10, "nDCG@5", queries=2, docs=30)
    q0 = np.flatnonzero((problem.query_of == 0) & (problem.model <= 1))
    q1 = np.flatnonzero((problem.query_of == 1) & (problem.model <= 1))
    bought = np.concatenate([q0, q1])
    grades = np.concatenate([np.full(len(q0), 3), np.zeros(len(q1), dtype=np.int64)])
    predicted, _ = calibrate(
        problem.query_of, problem.model, bought, grades, 3, 2, anchored=np.ones(len(bought), dtype=bool)
    )
    scale = np.arange(4.0)
    for grade in (2, 3):  # rows neither query had a grade in
        a = np.flatnonzero((problem.query_of == 0) & (problem.model == grade))
        b = np.flatnonzero((problem.query_of == 1) & (problem.model == grade))
        if len(a) and len(b):
            assert predicted[a[0]] @ scale > predicted[b[0]] @ scale + 0.5


def _poisson_expectation(form, people, pi, estimate):
    """Exact expectation over every sample of a Poisson design with probabilities ``pi``."""
    n = len(pi)
    total = 0.0
    for picks in itertools.product((0, 1), repeat=n):
        s = np.array(picks, dtype=bool)
        weight = float(np.prod(np.where(s, pi, 1 - pi)))
        total = total + weight * estimate(np.flatnonzero(s))
    return total


def test_leave_one_out_estimator_is_unbiased_over_every_poisson_sample():
    # P@k is linear in the grades: the difference estimator with a held-out calibration is exactly unbiased
    problem, people = _problem(6, "P@3", queries=2, docs=5, runs=2)
    form = form_of(problem)
    pi = np.linspace(0.3, 0.8, problem.n_pairs)
    truth = problem.means(people)

    def estimate(bought):
        predicted, held_out = calibrate(
            problem.query_of, problem.model, bought, people[bought], 3, problem.n_queries
        )
        d = design_estimate(form, predicted, held_out, bought, people[bought], pi[bought])
        return np.concatenate([d.means, [d.diff[0, 1]]])

    expected = _poisson_expectation(form, people, pi, estimate)
    assert np.allclose(expected, np.append(truth, truth[0] - truth[1]), atol=1e-12)


def test_variance_estimator_is_unbiased_with_a_fixed_prediction():
    problem, people = _problem(7, "P@3", queries=2, docs=5, runs=2)
    form = form_of(problem)
    pi = np.linspace(0.25, 0.75, problem.n_pairs)
    prior = np.full((problem.n_pairs, 4), 0.25)

    def estimate(bought):
        d = design_estimate(form, prior, prior[bought], bought, people[bought], pi[bought])
        return np.array([d.means[0], d.means[0] ** 2, d.se[0] ** 2, d.diff[0, 1], d.diff[0, 1] ** 2,
                         d.diff_se[0, 1] ** 2])  # fmt: skip

    m = _poisson_expectation(form, people, pi, estimate)
    assert m[2] == pytest.approx(m[1] - m[0] ** 2, abs=1e-12)  # E[v] = Var(mean)
    assert m[5] == pytest.approx(m[4] - m[3] ** 2, abs=1e-12)


def test_every_pair_known_gives_the_exact_values_and_zero_width():
    problem, people = _problem(8, "nDCG@5")
    form = form_of(problem)
    bought = np.arange(problem.n_pairs)
    predicted, held_out = calibrate(problem.query_of, problem.model, bought, people, 3, problem.n_queries)
    d = design_estimate(form, predicted, held_out, bought, people, np.ones(problem.n_pairs))
    truth = problem.means(people)
    assert np.allclose(d.means, truth, atol=1e-12)
    assert np.allclose(d.diff, truth[:, None] - truth[None, :], atol=1e-12)
    assert np.allclose(d.high - d.low, 0.0)


def test_interval_is_nan_when_the_caller_says_the_design_left_pairs_without_a_chance():
    problem, people = _problem(8, "P@5")
    form = form_of(problem)
    bought = np.arange(5)
    predicted, held_out = calibrate(problem.query_of, problem.model, bought, people[bought], 3, 3)
    d = design_estimate(form, predicted, held_out, bought, people[bought], np.ones(5), reason="model alone")
    assert np.isnan(d.low).all() and np.isnan(d.diff_low).all() and d.reason == "model alone"


def test_inclusion_probabilities_sum_cap_and_floor():
    size = np.array([0.0, 0.0, 1.0, 2.0, 50.0, 100.0, 3.0, 1.0])
    pi = inclusion_probabilities(size, 4, floor=0.2)
    assert pi.sum() == pytest.approx(4.0)
    assert pi.max() <= 1.0 and pi[4] == pi[5] == 1.0
    assert pi.min() >= 0.2 * 4 / 8 - 1e-12
    # only pairs of size 0 left after the cap: the rest spread over them evenly
    pi = inclusion_probabilities(np.array([5.0, 0.0, 0.0, 0.0]), 3)
    assert np.allclose(pi, [1.0, 2 / 3, 2 / 3, 2 / 3])


def test_systematic_sample_has_fixed_size_and_the_given_probabilities():
    pi = np.array([0.1, 0.9, 0.5, 0.5, 1.0, 0.25, 0.75])
    rng = np.random.default_rng(2)
    counts = np.zeros(len(pi))
    draws = 4000
    for _ in range(draws):
        s = systematic_sample(pi, rng)
        assert len(s) == 4
        counts[s] += 1
    # 4000 draws: the standard error of a frequency is at most 0.008
    assert np.allclose(counts / draws, pi, atol=0.035)


def test_coverage_by_seeded_simulation_on_a_small_case():
    # P@5, 4 runs, 20 queries, Poisson draws at 0.35: the 95% intervals cover the people's means and
    # differences in about 95% of draws (measured 0.94-0.96 over seeds); at least 90% here over 300 draws
    problem, people = _problem(9, "P@5", queries=20, docs=15, runs=4)
    form = form_of(problem)
    truth = problem.means(people)
    diff = truth[:, None] - truth[None, :]
    rng = np.random.default_rng(11)
    pi = np.full(problem.n_pairs, 0.35)
    hit_m, hit_d = [], []
    for _ in range(300):
        bought = np.flatnonzero(rng.random(problem.n_pairs) < pi)
        predicted, held_out = calibrate(
            problem.query_of, problem.model, bought, people[bought], 3, problem.n_queries
        )
        d = design_estimate(form, predicted, held_out, bought, people[bought], pi[bought])
        hit_m.append(np.mean((d.low <= truth) & (truth <= d.high)))
        iu = np.triu_indices(4, 1)
        hit_d.append(np.mean(((d.diff_low <= diff) & (diff <= d.diff_high))[iu]))
    assert np.mean(hit_m) >= 0.90 and np.mean(hit_d) >= 0.90


def test_measure_form_refuses_a_measure_without_a_form():
    from qrelkit.errors import ValidationError

    with pytest.raises(ValidationError, match="no design-based estimator"):
        measure_form("MAP", np.zeros((1, 1, 1), dtype=np.int64), np.zeros(1, dtype=np.int64), 1, 3)


def test_span_is_the_gradient_from_lowest_to_highest_grade():
    problem, _ = _problem(4, "nDCG@5")
    form = form_of(problem)
    x = np.random.default_rng(2).dirichlet(np.ones(4), problem.n_pairs)
    pairs = np.array([1, 7, 30])
    grad = form.gradient(x, pairs)
    assert np.allclose(form.span(x, pairs), grad[:, :, -1] - grad[:, :, 0], atol=1e-12)


@pytest.mark.parametrize("measure", ["nDCG@5", "P@5", "R@5"])
@pytest.mark.parametrize("tied", [False, True])
def test_refresh_of_one_query_equals_the_parts_computed_afresh_bit_for_bit(measure, tied):
    # the numerators and counts a greedy strategy keeps, refreshed query by query as pairs are graded, are
    # the ones computed from scratch: equal, not close
    problem, _ = _problem(7, measure, queries=4, docs=15, runs=4, tied=tied)
    form = form_of(problem)
    rng = np.random.default_rng(9)
    x = rng.dirichlet(np.ones(4), problem.n_pairs)
    parts = form.parts(x)
    for step in range(12):
        q = int(rng.integers(problem.n_queries))
        lo, hi = problem.query_start[q], problem.query_start[q + 1]
        pair = int(rng.integers(lo, hi))
        x[pair] = np.eye(4)[step % 4] if step % 3 else rng.dirichlet(np.ones(4))
        form.refresh(x, parts, q)
        fresh = form.parts(x)
        assert np.array_equal(parts[0], fresh[0]) and np.array_equal(parts[1], fresh[1])
        assert np.array_equal(form.values(x, parts=parts), form.values(x))
        rows = np.arange(lo, hi)
        assert np.array_equal(form.span(x, rows, parts), form.span(x, np.arange(problem.n_pairs))[rows])


def test_effective_degrees_of_freedom_against_a_slow_reference():
    from qrelkit.estimation.design import _effective_df

    rng = np.random.default_rng(12)
    terms = rng.exponential(1.0, (9, 4)) ** 3
    terms[:, 3] = 2.5  # nine equal terms: nine terms' worth, less one
    got = _effective_df(terms)
    for col in range(4):
        total = sum(float(t) for t in terms[:, col])
        squares = sum(float(t) ** 2 for t in terms[:, col])
        assert got[col] == pytest.approx(max(total * total / squares - 1.0, 1.0), rel=1e-12)
    assert got[3] == pytest.approx(8.0)
    one = np.zeros((5, 1))
    one[2] = 4.0  # one term alone: at least 1
    assert _effective_df(one)[0] == 1.0
    assert np.isinf(_effective_df(np.zeros((3, 1)))[0])


def test_model_standard_error_against_a_slow_reference():
    # P@3 is linear in the grades: a pair's residual times the derivative is exactly the change of each
    # run's mean when the pair's grade moves, which Problem.values gives; the model's expectation of the
    # variance is the sum over the drawn pairs of (1 - pi) / pi^2 times the variance of that change when
    # the grade is drawn from the pair's held-out prediction
    problem, people = _problem(13, "P@3", queries=3, docs=8, runs=3)
    form = form_of(problem)
    rng = np.random.default_rng(4)
    pi = rng.uniform(0.2, 0.9, problem.n_pairs)
    bought = np.sort(rng.choice(problem.n_pairs, 9, replace=False))
    predicted, held_out = calibrate(
        problem.query_of, problem.model, bought, people[bought], 3, problem.n_queries
    )
    d = design_estimate(form, predicted, held_out, bought, people[bought], pi[bought])
    expected = np.zeros(problem.n_runs)
    for k, i in enumerate(bought):
        means = []
        for g in range(4):
            grades = people.copy()
            grades[i] = g
            means.append(problem.means(grades))
        means = np.array(means)  # [grade, runs]
        mean = held_out[k] @ means
        var = held_out[k] @ (means - mean) ** 2
        expected += (1 - pi[i]) / pi[i] ** 2 * var
    assert d.model_se is not None
    assert np.allclose(d.model_se**2, expected, rtol=1e-10, atol=1e-15)
    # the means' interval holds both: at least the normal interval of either standard error
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.975)
    half = (d.high - d.low) / 2
    assert np.all(half >= z * np.maximum(d.se, d.model_se) - 1e-12)


def test_calibration_where_people_always_give_the_model_s_grade_stays_finite_and_sure():
    # nearly separated data: each grade's probability is no longer a difference of two logistic values, so
    # the fit reaches its minimum instead of stopping where the loss overflowed (exact zeros)
    rng = np.random.default_rng(0)
    n, top = 4000, 9
    query_of = rng.integers(0, 20, n)
    model = rng.integers(0, top + 1, n)
    bought = np.arange(0, n, 2)
    predicted, _ = calibrate(
        query_of, model, bought, model[bought], top, 20, anchored=np.ones(len(bought), dtype=bool)
    )
    assert np.isfinite(predicted).all() and (predicted > 0).all()
    assert np.allclose(predicted.sum(axis=1), 1.0)
    # 200 agreeing pairs a grade; the prior's pseudo-observations and the ridges keep a little mass off it
    assert predicted[np.arange(n), model].min() > 0.9


def test_calibrate_refuses_anchor_flags_of_another_length():
    with pytest.raises(ValueError, match="3 bought pairs, 3 grades and 2 anchor flags"):
        calibrate(np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64), np.arange(3), np.zeros(3, dtype=np.int64),
                  3, 1, anchored=np.ones(2, dtype=bool))  # fmt: skip
