"""The baselines' selections and estimators, each against a slow reference written here (loops over runs,
queries and pairs, qrelkit.evaluate for the per-query values, scipy for the quantiles), and the design-based
claims: the random-pairs estimator of P@k is unbiased over every sample of a small case, and its intervals
cover at their level by simulation (seeded)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import qrelkit
from qrelkit import Qrels, Run
from qrelkit.budget import STRATEGIES, State, build_problem
from qrelkit.budget.baselines import best_ranks
from qrelkit.estimation.ppi import interval


def _small(seed: int, queries: int = 6, runs: int = 4, docs: int = 12, measure: str = "nDCG@5"):
    rng = np.random.default_rng(seed)
    full = {f"q{q}": {f"d{q}_{i}": int(rng.integers(0, 4)) for i in range(docs)} for q in range(queries)}
    model = {
        q: {d: int(np.clip(g + rng.integers(-1, 2), 0, 3)) for d, g in docs_.items()}
        for q, docs_ in full.items()
    }
    run_list = [
        Run.from_dict(
            {q: {d: float(rng.standard_normal()) for d in docs_} for q, docs_ in full.items()}, name=f"r{r}"
        )
        for r in range(runs)
    ]
    problem, people = build_problem(
        Qrels.from_dict(full, name="full"), Qrels.from_dict(model, name="model"), run_list, measure
    )
    return problem, people, run_list


def _bought(problem, people, pairs) -> State:
    state = State.empty(problem.n_pairs)
    pairs = np.asarray(pairs, dtype=np.int64)
    state.record(pairs, people[pairs], np.ones(len(pairs)))
    return state


def _per_query(problem, grades, runs) -> dict[str, dict[str, float]]:
    qrels = Qrels.from_grades({p: int(g) for p, g in zip(problem.pairs, grades, strict=True)})
    results = qrelkit.evaluate(qrels, runs, [problem.measure])
    return {r: results.values(problem.measure, run=r) for r in problem.runs}


# ------------------------------------------------------------------------------------------ random-queries


def test_random_queries_buys_whole_queries_of_a_random_order_while_they_fit():
    problem, _, _ = _small(1)
    chosen = STRATEGIES["random-queries"]()
    sel = chosen.select(problem, State.empty(problem.n_pairs), 30, np.random.default_rng(5))
    bought = {problem.pairs[i][0] for i in sel.pairs}
    assert len(sel.pairs) == 24  # 12 pairs a query: two queries fit in 30, a third does not
    assert len(bought) == 2
    assert all(sum(1 for p in problem.pairs if p[0] == q) == 12 for q in bought)
    order = np.random.default_rng(5).permutation(problem.n_queries)[:2]  # the same draw, by hand
    assert bought == {problem.queries[i] for i in order}


def test_random_queries_estimate_is_ppi_plus_plus_over_queries_from_evaluate():
    problem, people, runs = _small(2)
    h = [0, 2, 3]
    pairs = [i for i, (q, _) in enumerate(problem.pairs) if q in {problem.queries[j] for j in h}]
    est = STRATEGIES["random-queries"]().estimate(problem, _bought(problem, people, pairs), 0.05)
    humans = _per_query(problem, people, runs)
    models = _per_query(problem, problem.model, runs)
    hq = [problem.queries[j] for j in h]
    uq = [q for q in problem.queries if q not in hq]
    for i, r in enumerate(problem.runs):
        ref = interval(
            "ppi++", [humans[r][q] for q in hq], [models[r][q] for q in hq], [models[r][q] for q in uq]
        )
        assert est.means[i] == pytest.approx(ref.value, abs=1e-12)
        assert est.low[i] == pytest.approx(ref.low, abs=1e-12) and est.high[i] == pytest.approx(
            ref.high, abs=1e-12
        )
    for a, b in itertools.permutations(range(len(problem.runs)), 2):
        ra, rb = problem.runs[a], problem.runs[b]
        ref = interval(
            "ppi++",
            [humans[ra][q] - humans[rb][q] for q in hq],
            [models[ra][q] - models[rb][q] for q in hq],
            [models[ra][q] - models[rb][q] for q in uq],
        )
        assert est.diff[a, b] == pytest.approx(ref.value, abs=1e-12)
        assert est.diff_low[a, b] == pytest.approx(ref.low, abs=1e-12)
        assert est.diff_high[a, b] == pytest.approx(ref.high, abs=1e-12)
    assert np.isnan(np.diag(est.diff_low)).all()


def test_random_queries_with_fewer_than_two_whole_queries_has_no_interval():
    problem, people, _ = _small(3)
    est = STRATEGIES["random-queries"]().estimate(problem, _bought(problem, people, range(12)), 0.05)
    assert np.isnan(est.low).all() and np.isnan(est.diff_low).all()
    assert np.allclose(est.means, problem.means(problem.model))


# ------------------------------------------------------------------------------------------ random-pairs


def _reference_random_pairs_p(problem, people, runs, bought, alpha):
    """P@k's difference estimator by loops: each judged pair's correction is (its relevance by the people
    less by the model) x (the run ranks it within k) / (k x queries); the mean is the filled grades' P@k
    plus (N - m) x the mean correction; the interval that of a total under SRS without replacement."""
    k = problem.depth
    rel = 1
    n, m, nq = problem.n_pairs, len(bought), problem.n_queries
    filled = problem.model.copy()
    filled[bought] = people[bought]
    per_query = _per_query(problem, filled, runs)
    out = []
    for r, run in zip(problem.runs, runs, strict=True):
        top = {}
        for q, docs in run.to_dict().items():
            top[q] = {d for d, _ in sorted(docs.items(), key=lambda kv: -kv[1])[:k]}
        y = []
        for i in bought:
            q, d = problem.pairs[i]
            inside = 1.0 if d in top.get(q, set()) else 0.0
            y.append(inside / (k * nq) * (int(people[i] >= rel) - int(problem.model[i] >= rel)))
        mean_filled = math.fsum(per_query[r].values()) / nq
        estimate = mean_filled + (n - m) * (sum(y) / m)
        se = n * math.sqrt(np.var(y, ddof=1) * (1 - m / n) / m)
        half = stats.t.ppf(1 - alpha / 2, m - 1) * se
        out.append((estimate, estimate - half, estimate + half))
    return out


def test_random_pairs_estimate_of_p_at_k_against_the_reference():
    problem, people, runs = _small(4, measure="P@5")
    rng = np.random.default_rng(9)
    bought = np.sort(rng.choice(problem.n_pairs, 20, replace=False))
    est = STRATEGIES["random-pairs"]().estimate(problem, _bought(problem, people, bought), 0.05)
    ref = _reference_random_pairs_p(problem, people, runs, bought, 0.05)
    for i, (value, low, high) in enumerate(ref):
        assert est.means[i] == pytest.approx(value, abs=1e-12)
        assert est.low[i] == pytest.approx(low, abs=1e-12) and est.high[i] == pytest.approx(high, abs=1e-12)
    assert np.allclose(est.diff, est.means[:, None] - est.means[None, :])


def test_random_pairs_estimate_of_p_at_k_is_unbiased_over_every_sample():
    """Every sample of 3 of a small case's pairs, equally likely under SRS: the estimates average to the
    people's means exactly (the estimator is linear and its weights fixed before the sample)."""
    problem, people, _ = _small(5, queries=2, runs=3, docs=5, measure="P@2")
    chosen = STRATEGIES["random-pairs"]()
    total = np.zeros(problem.n_runs)
    count = 0
    for sample in itertools.combinations(range(problem.n_pairs), 3):
        total += chosen.estimate(problem, _bought(problem, people, sample), 0.05).means
        count += 1
    assert np.allclose(total / count, problem.means(people), rtol=0, atol=1e-12)


def test_random_pairs_intervals_cover_by_simulation():
    problem, people, _ = _small(6, queries=10, runs=4, docs=20, measure="P@10")
    truth = problem.means(people)
    chosen = STRATEGIES["random-pairs"]()
    rng = np.random.default_rng(123)
    hits, diff_hits = [], []
    for _ in range(300):
        state = State.empty(problem.n_pairs)
        sel = chosen.select(problem, state, 80, rng)
        state.record(sel.pairs, people[sel.pairs], sel.probability)
        est = chosen.estimate(problem, state, 0.05)
        hits.append((est.low <= truth) & (truth <= est.high))
        td = truth[:, None] - truth[None, :]
        iu = np.triu_indices(problem.n_runs, 1)
        diff_hits.append(((est.diff_low <= td) & (td <= est.diff_high))[iu])
    assert np.mean(hits) >= 0.92 and np.mean(diff_hits) >= 0.92


def test_random_pairs_gives_no_interval_for_a_ratio_measure():
    problem, people, _ = _small(7)
    est = STRATEGIES["random-pairs"]().estimate(problem, _bought(problem, people, range(0, 60, 2)), 0.05)
    assert np.isnan(est.low).all() and np.isnan(est.diff_high).all()
    assert np.isfinite(est.means).all()


def test_random_pairs_selects_distinct_unjudged_pairs_uniformly():
    problem, people, _ = _small(8, queries=2, docs=5)
    chosen = STRATEGIES["random-pairs"]()
    counts = np.zeros(problem.n_pairs)
    rng = np.random.default_rng(1)
    state = _bought(problem, people, [0, 1])
    for _ in range(2000):
        sel = chosen.select(problem, state, 5, rng)
        assert (
            len(sel.pairs) == 3 and len(set(sel.pairs.tolist())) == 3 and not {0, 1} & set(sel.pairs.tolist())
        )
        counts[sel.pairs] += 1
    # each of the 8 unjudged pairs: 3/8 of the draws, 750 expected; 5 standard deviations apart at most
    assert np.abs(counts[2:] - 750).max() < 5 * math.sqrt(2000 * 3 / 8 * 5 / 8)


# ------------------------------------------------------------------------------------------ pool-order


def test_pool_order_buys_by_best_rank_over_the_runs():
    problem, _, runs = _small(9)
    best = {}
    for run in runs:
        for q, docs in run.to_dict().items():
            for rank, (d, _) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1])):
                best[q, d] = min(best.get((q, d), 10**9), rank)
    ref = np.array([best[p] for p in problem.pairs])
    assert np.array_equal(best_ranks(problem), ref)
    sel = STRATEGIES["pool-order"]().select(
        problem, State.empty(problem.n_pairs), 30, np.random.default_rng(0)
    )
    chosen = ref[sel.pairs]
    assert len(sel.pairs) == 30
    cut = chosen.max()
    assert (ref < cut).sum() <= 30 and set(np.flatnonzero(ref < cut)) <= set(sel.pairs.tolist())
    assert np.all(np.diff(chosen) >= 0)


def test_pool_order_estimate_is_the_filled_grades_with_no_interval():
    problem, people, runs = _small(10)
    bought = list(range(0, 40))
    est = STRATEGIES["pool-order"]().estimate(problem, _bought(problem, people, bought), 0.05)
    filled = problem.model.copy()
    filled[bought] = people[bought]
    values = _per_query(problem, filled, runs)
    for i, r in enumerate(problem.runs):
        assert est.means[i] == pytest.approx(math.fsum(values[r].values()) / problem.n_queries, abs=1e-12)
    assert np.isnan(est.low).all() and np.isnan(est.high).all() and np.isnan(est.diff_low).all()


def test_random_queries_draws_once():
    """After its draw, nothing more: a query small enough for what is left is not taken (a second draw
    would favour small queries)."""
    problem, people, _ = _small(11)
    chosen = STRATEGIES["random-queries"]()
    state = State.empty(problem.n_pairs)
    sel = chosen.select(problem, state, 30, np.random.default_rng(2))
    state.record(sel.pairs, people[sel.pairs], sel.probability)
    assert state.spent == 24
    assert len(chosen.select(problem, state, 40, np.random.default_rng(3)).pairs) == 0
