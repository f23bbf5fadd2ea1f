"""The oracle's accounting: the people's grades are in no field of the Problem (two FULLs that differ only in
their grades build equal Problems), the oracle reveals only what is bought, counts each distinct pair once and
refuses to spend past its limit; the State records what was bought; and no registered strategy's selection or
estimate changes when the people's grades of the pairs it did not buy change."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from qrelkit import Qrels, Run
from qrelkit.budget import STRATEGIES, Oracle, State, build_problem
from qrelkit.errors import ValidationError


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return all(_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def test_the_problem_holds_no_people_grade():
    """FULL_A and FULL_B judge the same pairs with different grades (every grade differs): the Problems are
    equal field by field, so nothing in a Problem can tell a strategy a people's grade."""
    rng = np.random.default_rng(11)
    pairs = {f"q{q}": [f"d{q}_{i}" for i in range(40)] for q in range(3)}
    grades_a = {q: {d: int(rng.integers(0, 3)) for d in docs} for q, docs in pairs.items()}
    grades_b = {q: {d: (g + 1) % 3 for d, g in docs.items()} for q, docs in grades_a.items()}
    model = Qrels.from_dict(  # on FULL_A's scale (0..2), as build_problem requires
        {q: {d: int(rng.integers(0, 3)) for d in docs} for q, docs in pairs.items()}, name="m"
    )
    runs = [
        Run.from_dict({q: {d: float(rng.random()) for d in docs} for q, docs in pairs.items()}, name=f"r{i}")
        for i in range(3)
    ]
    problem_a, people_a = build_problem(Qrels.from_dict(grades_a, name="full"), model, runs, "nDCG@10")
    problem_b, people_b = build_problem(Qrels.from_dict(grades_b, name="full"), model, runs, "nDCG@10")
    assert _equal(problem_a, problem_b)
    assert (people_a != people_b).all()
    assert [grades_a[q][d] for q, d in problem_a.pairs] == people_a.tolist()


def test_the_oracle_counts_each_distinct_pair_once():
    oracle = Oracle(np.array([3, 0, 1, 2, 0]))
    assert oracle.spent == 0
    assert oracle.buy(np.array([2, 2, 4])).tolist() == [1, 1, 0]
    assert oracle.spent == 2  # pair 2 twice in one purchase: once
    assert oracle.buy(np.array([4, 0])).tolist() == [0, 3]
    assert oracle.spent == 3  # pair 4 again: already paid
    assert oracle.buy(np.array([], dtype=np.int64)).tolist() == []
    assert oracle.spent == 3
    assert oracle.revealed().tolist() == [True, False, True, False, True]


def test_the_oracle_refuses_past_its_limit_and_bad_indices():
    oracle = Oracle(np.array([1, 1, 1, 1]), limit=2)
    oracle.buy(np.array([0, 1]))
    oracle.buy(np.array([1, 0]))  # already bought: free
    with pytest.raises(ValidationError, match="past the budget of 2"):
        oracle.buy(np.array([2]))
    assert oracle.spent == 2
    with pytest.raises(ValidationError, match="not a pooled pair"):
        oracle.buy(np.array([4]))
    with pytest.raises(ValidationError, match="not a pooled pair"):
        oracle.buy(np.array([-1]))


def test_the_oracle_keeps_its_own_copy():
    grades = np.array([1, 2, 3])
    oracle = Oracle(grades)
    grades[0] = 9
    assert oracle.buy(np.array([0])).tolist() == [1]
    revealed = oracle.buy(np.array([1]))
    revealed[0] = 9
    assert oracle.buy(np.array([1])).tolist() == [2]


def test_the_state_records_fresh_pairs_in_order():
    state = State.empty(5)
    state.record(np.array([3, 1, 3]), np.array([2, 0, 2]), np.array([0.5, 1.0, 0.5]))
    assert state.bought.tolist() == [3, 1] and state.grades.tolist() == [2, 0] and state.spent == 2
    state.record(np.array([1, 4]), np.array([0, 1]), np.array([1.0, 0.25]))
    assert state.bought.tolist() == [3, 1, 4] and state.grades.tolist() == [2, 0, 1] and state.spent == 3
    assert state.probability.tolist() == [0.0, 1.0, 0.0, 0.5, 0.25]
    assert state.grade_vector(np.array([9, 9, 9, 9, 9])).tolist() == [9, 0, 9, 2, 1]


def _replayable_problem():
    """A small problem carrying grade probabilities (so that every registered strategy can run on it)."""
    rng = np.random.default_rng(21)
    full = {f"q{q}": {f"d{i}": int(rng.integers(0, 4)) for i in range(12)} for q in range(5)}
    model = {
        q: {d: int(np.clip(g + rng.integers(-1, 2), 0, 3)) for d, g in docs.items()}
        for q, docs in full.items()
    }
    runs = [
        Run.from_dict(
            {
                q: {d: float(w * g + rng.standard_normal()) for d, g in docs.items()}
                for q, docs in full.items()
            },
            name=f"r{r}",
        )
        for r, w in enumerate([0.3, 0.8, 1.5])
    ]
    probs = {
        (q, d): tuple(np.full(4, 0.1) + 0.6 * (np.arange(4) == g))
        for q, docs in model.items()
        for d, g in docs.items()
    }
    return build_problem(Qrels.from_dict(full), Qrels.from_dict(model), runs, "nDCG@5", probabilities=probs)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_no_strategy_reads_a_grade_it_did_not_buy(name):
    """Every registered strategy, replayed twice with the same seed on people's grades that differ on every
    pair the first replay did not buy: it buys the same pairs and estimates the same numbers."""
    from qrelkit.budget.replay import run_once, seed_of

    problem, people = _replayable_problem()
    first = run_once(problem, people, STRATEGIES[name](), 20, seed_of(3, name, 20, 0), 0.05)
    other = people.copy()
    unbought = np.setdiff1d(np.arange(problem.n_pairs), first.bought)
    other[unbought] = (other[unbought] + 2) % 4
    second = run_once(problem, other, STRATEGIES[name](), 20, seed_of(3, name, 20, 0), 0.05)
    assert first.spent == second.spent <= 20 and np.array_equal(first.bought, second.bought)
    for a, b in [(first.means, second.means), (first.low, second.low), (first.diff_high, second.diff_high)]:
        assert np.array_equal(a, b, equal_nan=True)
