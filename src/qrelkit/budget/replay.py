"""The replay: each strategy, at each budget, repeated, against people's grades of every pooled pair.

For each strategy, budget and repetition: a fresh :class:`~qrelkit.budget.oracle.Oracle` holding the people's
grades (limited to the budget), an empty :class:`~qrelkit.budget.base.State` and a random generator seeded from
(seed, strategy, budget, repetition); the strategy selects, the oracle reveals what was selected, the state
records it, until the budget is spent or the strategy selects nothing more; then the strategy estimates. Scored
against the people's values of every pooled pair (:meth:`Problem.values` of the people's grades):

- ``kendall_tau`` and ``tau_ap`` of the estimated means' order of the runs against the people's
  (:mod:`qrelkit.agreement.ranking`), median and 10th percentile over the repetitions;
- ``coverage_means``: the share of the runs' mean intervals that hold the people's mean, over runs and
  repetitions, counting the intervals reported (``None`` where the estimator reports none);
- ``coverage_differences``: the same for the intervals of the differences of every pair of runs;
- ``decided_pairs``: the share of pairs of runs whose difference interval excludes 0, averaged over the
  repetitions; ``wrong_sign``: the share of pairs of runs decided with the sign opposite to the people's
  difference (or decided where the people's difference is 0), averaged the same way;
- ``human_pairs``: the people's pairs spent, the median over the repetitions;
- ``interval_width``: the mean width of the runs' mean intervals, the median over the repetitions.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError
from .base import STRATEGIES, State, Strategy, bounded, strategy
from .oracle import Oracle
from .problem import Problem

#: The most repetitions a replay runs (each is a full selection and estimate per strategy and budget).
MAX_REPEAT = 10_000
#: The most budgets a replay takes.
MAX_BUDGETS = 100


@dataclass(frozen=True)
class Budget:
    """A budget as given (``label``: "10%" or "500") and the pairs it allows."""

    label: str
    pairs: int


def pairs_of(item: str, whole: int) -> tuple[int, float | None]:
    """``(pairs, share)`` of a count of pairs (``500``: share ``None``) or a share of ``whole`` (``10%``,
    rounded down); ``ValueError`` when ``item`` is neither (a share must be finite)."""
    if item.endswith("%"):
        share = float(item[:-1])
        if not math.isfinite(share):
            raise ValueError(item)
        return math.floor(whole * share / 100.0 + 1e-9), share
    return int(item), None


def parse_budgets(text: str | Sequence[str], pooled: int) -> list[Budget]:
    """Budgets from ``5%,10%,20%`` (shares of the pooled pairs, rounded down) or ``500,1000`` (counts); a
    share above 100%, a count above the pooled pairs or a budget below one pair is a one-line error."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) for t in t.split(",")]
    items = [t for t in items if t]
    if not items:
        raise ValidationError("no budget given", fix="pass --budget 5%,10%,20% or --budget 500,1000")
    if len(items) > MAX_BUDGETS:
        raise ValidationError(f"{len(items)} budgets; at most {MAX_BUDGETS}", fix="pass fewer budgets")
    out: list[Budget] = []
    for item in items:
        try:
            pairs, share = pairs_of(item, pooled)
            if share is not None and share > 100:
                raise ValidationError(
                    f"budget {item} is above 100% of the {pooled} pooled pairs",
                    got=item,
                    fix="pass a share of at most 100%",
                )
            if share is None and pairs > pooled:
                raise ValidationError(
                    f"budget {item} is above the {pooled} pooled pairs",
                    got=item,
                    fix=f"pass at most {pooled} (or a share such as 10%)",
                )
        except ValueError:
            raise ValidationError(
                f"budget {item!r} is neither a share (10%) nor a count of pairs (500)",
                got=item,
                fix="pass --budget 5%,10%,20% or --budget 500,1000",
            ) from None
        if pairs < 1:
            raise ValidationError(
                f"budget {item} is below one pair of the {pooled} pooled pairs",
                got=item,
                fix="pass a larger share or a count of at least 1",
            )
        same = next((b for b in out if b.pairs == pairs), None)
        if same is not None:
            raise ValidationError(
                f"budgets {same.label} and {item} are both {pairs} of the {pooled} pooled pairs",
                got=item,
                fix="give each budget once",
            )
        out.append(Budget(item, pairs))
    return out


def check_strategies(names: Sequence[str], problem: Problem) -> list[str]:
    """The strategies by name, each known and, where it needs the model's grade probabilities, given them."""
    out = []
    for name in names:
        chosen = strategy(name)
        if chosen.needs_probabilities and problem.probabilities is None:
            raise ValidationError(
                f"strategy {name} needs the model's grade probabilities, and none were given",
                got=name,
                fix="pass --probabilities FILE (the qrels' .probabilities.tsv) or choose another strategy",
            )
        if name not in out:
            out.append(name)
    return out


def seed_of(seed: int, name: str, budget: int, repetition: int) -> np.random.Generator:
    """The generator of one repetition: from (seed, strategy, budget, repetition), whatever else runs."""
    return np.random.default_rng([seed, zlib.crc32(name.encode()), budget, repetition])


@dataclass(frozen=True)
class Trial:
    """One repetition's outcome."""

    spent: int
    means: np.ndarray
    low: np.ndarray
    high: np.ndarray
    diff: np.ndarray
    diff_low: np.ndarray
    diff_high: np.ndarray
    estimator: str
    bought: np.ndarray | None = None  # the pairs bought, in order


def run_once(
    problem: Problem,
    people: np.ndarray,
    chosen: Strategy,
    budget: int,
    rng: np.random.Generator,
    alpha: float,
) -> Trial:
    """One repetition: select, buy, record until the budget is spent or nothing more is selected; estimate."""
    oracle = Oracle(people, limit=budget)
    state = State.empty(problem.n_pairs)
    while state.spent < budget:
        selection = chosen.select(problem, state, budget, rng)
        pairs = np.asarray(selection.pairs, dtype=np.int64)
        if not len(pairs):
            break
        _check_selection(chosen, problem, state, budget, pairs, selection.probability)
        before = oracle.spent
        grades = oracle.buy(pairs)
        state.record(pairs, grades, np.asarray(selection.probability, dtype=np.float64))
        if oracle.spent == before:
            break  # nothing new: the strategy has no more to buy
    assert state.spent == oracle.spent
    est = bounded(problem, chosen.estimate(problem, state, alpha))
    return Trial(
        state.spent,
        est.means,
        est.low,
        est.high,
        est.diff,
        est.diff_low,
        est.diff_high,
        est.estimator,
        state.bought,
    )


def _check_selection(
    chosen: Strategy, problem: Problem, state: State, budget: int, pairs: np.ndarray, probability: np.ndarray
) -> None:
    """A selection within the pool and the budget, one inclusion probability a pair: else one line naming
    the strategy (the oracle would refuse it too, without saying whose it was)."""
    name = getattr(chosen, "name", type(chosen).__name__)
    if len(np.asarray(probability)) != len(pairs):
        raise ValidationError(
            f"strategy {name} selected {len(pairs)} pairs with {len(np.asarray(probability))} inclusion probabilities",
            fix="give one inclusion probability a selected pair",
        )
    if pairs.min() < 0 or pairs.max() >= problem.n_pairs:
        raise ValidationError(
            f"strategy {name} selected pair {int(pairs.max())}, not one of the {problem.n_pairs} pooled"
        )
    fresh = len(np.setdiff1d(pairs, state.bought))
    if fresh > budget - state.spent:
        raise ValidationError(
            f"strategy {name} selected {fresh} new pairs with {budget - state.spent} of its budget of {budget} left",
            fix="select at most budget - state.spent pairs",
        )


def _share(hit: np.ndarray, measured: np.ndarray) -> float | None:
    count = int(measured.sum())
    return float(hit[measured].sum() / count) if count else None


def _quantiles(values: np.ndarray) -> dict[str, float | None]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {"median": None, "p10": None}
    return {"median": float(np.median(finite)), "p10": float(np.percentile(finite, 10))}


#: How far an interval may miss the people's value and still count as holding it, or an interval of a
#: difference lie past 0 without counting as a decision: the estimator and the truth add the same terms in
#: other orders, so with every pair bought an interval of width 0 misses by a rounding (1e-16) otherwise.
ROUNDING = 1e-12


def score(trials: Sequence[Trial], truth: np.ndarray) -> dict[str, Any]:
    """The row's figures over the repetitions (see the module docstring)."""
    from ..agreement.ranking import tau_ap_batch, tau_b_batch

    means = np.array([t.means for t in trials])
    reps = len(trials)
    truths = np.broadcast_to(truth, means.shape)
    tau = tau_b_batch(truths, means)
    tap = tau_ap_batch(truths, means)
    low = np.array([t.low for t in trials])
    high = np.array([t.high for t in trials])
    measured = np.isfinite(low) & np.isfinite(high)
    covered = (low <= truth + ROUNDING) & (truth - ROUNDING <= high)
    n = len(truth)
    iu = np.triu_indices(n, 1)
    true_diff = (truth[:, None] - truth[None, :])[iu]
    d_low = np.array([t.diff_low[iu] for t in trials])
    d_high = np.array([t.diff_high[iu] for t in trials])
    d_measured = np.isfinite(d_low) & np.isfinite(d_high)
    d_covered = (d_low <= true_diff + ROUNDING) & (true_diff - ROUNDING <= d_high)
    above, below = d_measured & (d_low > ROUNDING), d_measured & (d_high < -ROUNDING)
    decided = above | below
    wrong = (above & (true_diff <= 0)) | (below & (true_diff >= 0))
    pairs = max(len(true_diff), 1)
    width = np.where(measured, high - low, np.nan)
    with np.errstate(invalid="ignore"):
        rep_width = np.array([np.nanmean(w) if np.isfinite(w).any() else np.nan for w in width])
    return {
        "human_pairs": int(np.median([t.spent for t in trials])),
        "kendall_tau": _quantiles(tau),
        "tau_ap": _quantiles(tap),
        "coverage_means": _share(covered, measured),
        "coverage_differences": _share(d_covered, d_measured),
        "decided_pairs": float(decided.sum() / (pairs * reps)),
        "wrong_sign": float(wrong.sum() / (pairs * reps)),
        "interval_width": _quantiles(rep_width)["median"],
        "estimator": trials[0].estimator if trials else None,
    }


def replay(
    problem: Problem,
    people: np.ndarray,
    strategies: Sequence[str],
    budgets: Sequence[Budget],
    repeat: int = 20,
    seed: int = 0,
    alpha: float = 0.05,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per strategy and budget (keys: ``strategy``, ``budget``, ``budget_pairs``, then
    :func:`score`'s), in the order given; ``progress(done, total)`` after every repetition."""
    if not 1 <= repeat <= MAX_REPEAT:
        raise ValidationError(
            f"--repeat {repeat}", fix=f"pass a number of repetitions from 1 to {MAX_REPEAT}"
        )
    if not 0.0 < alpha < 1.0:
        raise ValidationError(f"--alpha {alpha}", fix="pass a level between 0 and 1, e.g. 0.05")
    if len(people) != problem.n_pairs:
        raise ValidationError(f"{len(people)} people's grades for {problem.n_pairs} pooled pairs")
    names = check_strategies(strategies, problem)
    truth = problem.means(people)
    total = len(names) * len(budgets) * repeat
    done = 0
    rows = []
    for name in names:
        for b in budgets:
            chosen = STRATEGIES[name]()
            trials = []
            for rep in range(repeat):
                trials.append(
                    run_once(problem, people, chosen, b.pairs, seed_of(seed, name, b.pairs, rep), alpha)
                )
                done += 1
                if progress is not None:
                    progress(done, total)
            rows.append(
                {"strategy": name, "budget": b.label, "budget_pairs": b.pairs, **score(trials, truth)}
            )
    return rows


# ---------------------------------------------------------------------------------------- from inputs


@dataclass(frozen=True)
class ReplayResult:
    """A replay's rows with everything needed to know what they mean: the inputs' fingerprints, the measure
    and its conventions, the pool, the settings."""

    rows: list[dict[str, Any]]
    inputs: dict[str, Any]
    measure: str
    settings: dict[str, Any]
    pool: dict[str, Any]
    #: the model's grades alone (no people's pair): Kendall's tau and tau_AP of its order of the runs
    model_alone: dict[str, Any] | None = None

    def provenance(self) -> dict[str, Any]:
        from ..measures.conventions import DEFAULT
        from ..measures.grammar import parse
        from ..provenance import header

        return header(
            **self.inputs,
            conventions=DEFAULT.to_dict(),
            measures=[{"name": str(parse(self.measure)), "full": parse(self.measure).describe(DEFAULT)}],
            replay=self.settings,
            pool=self.pool,
        )

    def to_dict(self) -> dict[str, Any]:
        from ..provenance import json_number

        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, float):
                return json_number(value)
            return value

        alone = {"model_alone": clean(self.model_alone)} if self.model_alone is not None else {}
        return self.provenance() | alone | {"results": [clean(r) for r in self.rows]}


def _described(value: Any) -> dict[str, Any]:
    return {"name": value.name, "fingerprint": value.fingerprint.to_dict()}


#: The strategies replayed when none is named: the baselines, then qrelkit's own.
DEFAULT_STRATEGIES = ("random-queries", "random-pairs", "pool-order", "mtc", "bandit", "active")


def replay_inputs(
    full: Any,
    model: Any,
    runs: Sequence[Any],
    budgets: str | Sequence[str],
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    measure: str = "nDCG@10",
    repeat: int = 20,
    seed: int = 0,
    depth: int | None = 20,
    alpha: float = 0.05,
    probabilities: Any = None,
    probabilities_source: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    before: Callable[[Problem], None] | None = None,
) -> ReplayResult:
    """:func:`replay` from the inputs (FULL and MODEL :class:`~qrelkit.data.values.Qrels`, the runs, the
    model's grade probabilities as :func:`qrelkit.formats.probabilities.read_probabilities` gives them),
    with the provenance. ``before(problem)`` is called once the problem is built (the command line says
    there what the pool left out)."""
    from .problem import build_problem

    problem, people = build_problem(
        full, model, runs, measure, probabilities, pool_depth=depth, probabilities_source=probabilities_source
    )
    chosen = parse_budgets(budgets, problem.n_pairs)
    check_strategies(strategies, problem)
    if before is not None:
        before(problem)
    rows = replay(
        problem, people, strategies, chosen, repeat=repeat, seed=seed, alpha=alpha, progress=progress
    )
    inputs: dict[str, Any] = {
        "full": _described(full),
        "model": _described(model),
        "runs": [_described(r) for r in runs],
    }
    if probabilities_source is not None:
        inputs["probabilities"] = {"source": probabilities_source}
    settings = {
        "strategies": list(dict.fromkeys(strategies)),
        "budgets": [{"budget": b.label, "pairs": b.pairs} for b in chosen],
        "repeat": repeat,
        "seed": seed,
        "alpha": alpha,
        "estimators": {r["strategy"]: r["estimator"] for r in rows},
    }
    pool = {
        "depth": depth,
        "queries": problem.n_queries,
        "runs": problem.n_runs,
        "pairs": problem.n_pairs,
        "full_pairs_below_depth": problem.unpooled,
        "max_grade": problem.max_grade,
    }
    return ReplayResult(rows, inputs, str(measure), settings, pool, model_alone(problem, people))


def model_alone(problem: Problem, people: np.ndarray) -> dict[str, float]:
    """Kendall's tau and tau_AP of the runs' order by the model's grades alone against the people's: what
    every strategy starts from, at no people's pair."""
    from ..agreement.ranking import tau_ap, tau_b

    truth, model = problem.means(people), problem.means(problem.model)
    return {"kendall_tau": tau_b(truth, model), "tau_ap": tau_ap(truth, model)}
