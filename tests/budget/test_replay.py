"""The replay: its rows and their keys, the budgets it parses (and refuses), seeded repetitions, the progress
callback, and the scoring against figures counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qrelkit import Qrels, Run
from qrelkit.budget import build_problem
from qrelkit.budget.replay import Budget, Trial, parse_budgets, replay, score
from qrelkit.errors import ValidationError

KEYS = [
    "strategy",
    "budget",
    "budget_pairs",
    "human_pairs",
    "kendall_tau",
    "tau_ap",
    "coverage_means",
    "coverage_differences",
    "decided_pairs",
    "wrong_sign",
    "interval_width",
    "estimator",
]


def _case(seed: int = 0):
    rng = np.random.default_rng(seed)
    full = {f"q{q}": {f"d{i}": int(rng.integers(0, 4)) for i in range(15)} for q in range(6)}
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
        for r, w in enumerate([0.2, 0.6, 1.0, 1.5])
    ]
    return build_problem(
        Qrels.from_dict(full, name="full"), Qrels.from_dict(model, name="model"), runs, "nDCG@5"
    )


def test_budgets_as_shares_and_counts():
    assert parse_budgets("5%,10%,100%", 90) == [Budget("5%", 4), Budget("10%", 9), Budget("100%", 90)]
    assert parse_budgets("1, 30", 90) == [Budget("1", 1), Budget("30", 30)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("120%", "above 100%"),
        ("91", "above the 90 pooled pairs"),
        ("0", "below one pair"),
        ("1%", "below one pair"),
        ("ten", "neither a share"),
        ("", "no budget"),
    ],
)
def test_bad_budgets_are_one_line(text, message):
    with pytest.raises(ValidationError, match=message) as err:
        parse_budgets(text, 90)
    assert "\n" not in str(err.value)


def test_replay_rows_are_seeded_and_spend_at_most_the_budget():
    problem, people = _case()
    budgets = parse_budgets("10%,30%", problem.n_pairs)
    seen = []
    rows = replay(problem, people, ["random-pairs", "pool-order", "random-queries"], budgets, repeat=4, seed=3,
                  progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert [list(r) for r in rows] == [KEYS] * 6
    assert [(r["strategy"], r["budget"]) for r in rows] == [
        (s, b) for s in ("random-pairs", "pool-order", "random-queries") for b in ("10%", "30%")
    ]
    assert seen == [(i, 24) for i in range(1, 25)]
    for r in rows:
        assert r["human_pairs"] <= r["budget_pairs"]
        if r["strategy"] != "random-queries":
            assert r["human_pairs"] == r["budget_pairs"]
    again = replay(
        problem, people, ["random-pairs", "pool-order", "random-queries"], budgets, repeat=4, seed=3
    )
    assert again == rows
    other = replay(problem, people, ["random-pairs"], budgets, repeat=4, seed=4)
    assert other != rows[:2]


def test_unknown_strategy_and_bad_counts():
    problem, people = _case()
    budgets = parse_budgets("10%", problem.n_pairs)
    with pytest.raises(ValidationError, match=r"unknown strategy 'random-pair'.*did you mean 'random-pairs'"):
        replay(problem, people, ["random-pair"], budgets)
    with pytest.raises(ValidationError, match="--repeat 0"):
        replay(problem, people, ["pool-order"], budgets, repeat=0)
    with pytest.raises(ValidationError, match=r"--alpha 1\.5"):
        replay(problem, people, ["pool-order"], budgets, alpha=1.5)


def test_score_by_hand():
    """Three runs, truth (0.5, 0.4, 0.1); two repetitions. Counted by hand below."""
    truth = np.array([0.5, 0.4, 0.1])
    nan = math.nan

    def trial(means, low, high, dlow, dhigh, spent):
        diff = np.subtract.outer(means, means)
        return Trial(
            spent, np.array(means), np.array(low), np.array(high), diff, np.array(dlow), np.array(dhigh), "e"
        )

    # repetition 1: order right; intervals: run 0 [0.4, 0.6] covers, run 1 [0.45, 0.6] misses, run 2 NaN;
    # differences (0,1): [0.05, 0.2] covers 0.1, decided right; (0,2): [-0.1, 0.5] covers, undecided;
    # (1,2): [-0.2, -0.1] misses 0.3, decided the wrong sign
    one = trial(
        [0.5, 0.45, 0.1],
        [0.4, 0.45, nan],
        [0.6, 0.6, nan],
        [[nan, 0.05, -0.1], [nan, nan, -0.2], [nan, nan, nan]],
        [[nan, 0.2, 0.5], [nan, nan, -0.1], [nan, nan, nan]],
        10,
    )
    # repetition 2: runs 0 and 1 swapped; no intervals at all
    two = trial([0.4, 0.5, 0.1], [nan] * 3, [nan] * 3, [[nan] * 3] * 3, [[nan] * 3] * 3, 12)
    row = score([one, two], truth)
    assert row["human_pairs"] == 11
    # tau-b: 1 and 1/3 (one discordant pair of three); median 2/3, 10th percentile 1/3 + 0.1 x 2/3
    assert row["kendall_tau"]["median"] == pytest.approx(2 / 3)
    assert row["kendall_tau"]["p10"] == pytest.approx(1 / 3 + 0.1 * 2 / 3)
    assert row["coverage_means"] == pytest.approx(1 / 2)  # 2 intervals reported, 1 covers
    assert row["coverage_differences"] == pytest.approx(2 / 3)  # 3 reported, 2 cover
    assert row["decided_pairs"] == pytest.approx(2 / 6)  # 2 decided of 3 pairs x 2 repetitions
    assert row["wrong_sign"] == pytest.approx(1 / 6)
    assert row["interval_width"] == pytest.approx((0.2 + 0.15) / 2)


class _Greedy:
    """A strategy that asks for more than its budget: every pooled pair at once."""

    name = "greedy"
    needs_probabilities = False

    def select(self, problem, state, budget, rng):
        from qrelkit.budget import Selection

        return Selection(np.arange(problem.n_pairs, dtype=np.int64), np.ones(problem.n_pairs))

    def estimate(self, problem, state, alpha):  # never reached
        raise AssertionError


def test_a_strategy_past_its_budget_is_named(monkeypatch):
    from qrelkit.budget import STRATEGIES

    problem, people = _case()
    monkeypatch.setitem(STRATEGIES, "greedy", _Greedy)
    with pytest.raises(
        ValidationError, match=r"strategy greedy selected 90 new pairs with 9 of its budget of 9 left"
    ):
        replay(problem, people, ["greedy"], parse_budgets("10%", problem.n_pairs), repeat=1)


def test_a_problem_past_the_size_bound_is_one_line(monkeypatch):
    import qrelkit.budget.problem as problem_module

    monkeypatch.setattr(problem_module, "MAX_CELLS", 100)
    with pytest.raises(
        ValidationError, match=r"4 runs, 6 queries, 90 pooled pairs at k = 5: runs x queries x k is 120 cells"
    ):
        _case()


def test_too_many_runs_is_one_line(monkeypatch):
    import qrelkit.budget.problem as problem_module

    monkeypatch.setattr(problem_module, "MAX_RUNS", 3)
    with pytest.raises(ValidationError, match=r"4 runs to replay; at most 3"):
        _case()
