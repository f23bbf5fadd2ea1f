"""The judging-budget Problem: its vectorized evaluator against qrelkit.evaluate (==, on the pooled pairs with
whole grades, runs of full-precision float scores), ties averaged, unjudged documents worth 0, the pool
depth, and the refusals (MODEL missing pairs, unsupported measures)."""

from __future__ import annotations

import numpy as np
import pytest

import qrelkit
from qrelkit import Qrels, Run
from qrelkit.budget import build_problem
from qrelkit.errors import ValidationError


def _collection(
    seed: int, queries: int = 4, runs: int = 5, docs: tuple[int, int] = (100, 1000), grades: int = 4
):
    """FULL judging part of each query's documents (some beyond what any run retrieves), a model grading
    the same pairs, and runs of random full-precision scores over random subsets of the documents."""
    rng = np.random.default_rng(seed)
    full: dict[str, dict[str, int]] = {}
    model: dict[str, dict[str, int]] = {}
    run_dicts: list[dict[str, dict[str, float]]] = [{} for _ in range(runs)]
    for q in range(queries):
        qid = f"q{q}"
        n = int(rng.integers(docs[0], docs[1] + 1))
        names = [f"d{q}_{i}" for i in range(n)]
        judged = rng.random(n) < 0.5
        full[qid] = {d: int(rng.integers(0, grades)) for d, j in zip(names, judged, strict=True) if j}
        model[qid] = {d: int(rng.integers(0, grades)) for d in full[qid]}
        for r in range(runs):
            if r == runs - 1 and q == 0:
                continue  # a run that lacks a query: scored 0 there
            take = rng.random(n) < rng.uniform(0.3, 1.0)
            run_dicts[r][qid] = {
                d: float(rng.standard_normal()) for d, t in zip(names, take, strict=True) if t
            }
    return (
        Qrels.from_dict(full, name="full"),
        Qrels.from_dict(model, name="model"),
        [Run.from_dict(d, name=f"run{r}") for r, d in enumerate(run_dicts)],
    )


def _pooled_qrels(problem, grades) -> Qrels:
    return Qrels.from_grades({p: int(g) for p, g in zip(problem.pairs, grades, strict=True)}, name="pooled")


def _evaluate_grid(problem, grades, runs) -> np.ndarray:
    results = qrelkit.evaluate(_pooled_qrels(problem, grades), runs, [problem.measure])
    out = np.zeros((len(problem.runs), len(problem.queries)))
    for i, name in enumerate(problem.runs):
        per = results.values(problem.measure, run=name)
        for j, q in enumerate(problem.queries):
            out[i, j] = per[q]
    return out


@pytest.mark.parametrize("measure", ["nDCG@10", "P@5", "R@20", "nDCG(gain=linear)@20", "R(rel=2)@10"])
@pytest.mark.parametrize("seed", [1, 2])
def test_values_equal_evaluate_on_whole_grades(measure, seed):
    full, model, runs = _collection(seed)
    problem, people = build_problem(full, model, runs, measure)
    for grades in (people, problem.model):
        assert np.array_equal(problem.values(grades), _evaluate_grid(problem, grades, runs))


@pytest.mark.parametrize("measure", ["nDCG@10", "P@10", "R@10"])
def test_values_average_tied_scores_as_evaluate_does(measure):
    """Scores rounded to one decimal: many ties, some straddling the cutoff, with unpooled documents inside
    tied blocks."""
    rng = np.random.default_rng(7)
    full, model, runs = _collection(3, queries=3, docs=(30, 60))
    tied = [
        Run.from_dict(
            {q: {d: round(s, 1) for d, s in docs.items()} for q, docs in r.to_dict().items()}, name=r.name
        )
        for r in runs
    ]
    problem, people = build_problem(full, model, tied, measure)
    assert problem.ties is not None and len(problem.ties.run) > 0
    for grades in (people, rng.integers(0, 4, problem.n_pairs)):
        assert np.array_equal(problem.values(grades), _evaluate_grid(problem, grades, tied))


def test_pool_depth_keeps_only_pairs_some_run_ranks_within_it():
    full, model, runs = _collection(5, queries=2, docs=(100, 150))
    problem, people = build_problem(full, model, runs, "nDCG@10", pool_depth=15)
    pooled = set(problem.pairs)
    expected = set()
    for r in runs:
        for q, docs in r.to_dict().items():
            top = sorted(docs.items(), key=lambda kv: -kv[1])[:15]
            expected |= {(q, d) for d, _ in top if d in full.to_dict()[q]}
    assert pooled == expected
    assert np.array_equal(problem.values(people), _evaluate_grid(problem, people, runs))


def test_float_grades_give_expected_gain_of_a_whole_grade_vector_when_whole():
    full, model, runs = _collection(4, queries=2, docs=(100, 120))
    problem, people = build_problem(full, model, runs, "nDCG@10")
    assert np.allclose(problem.values(people.astype(np.float64)), problem.values(people), rtol=0, atol=1e-15)


def test_model_missing_pairs_is_one_line_naming_how_many_and_the_first():
    full = Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"x": 1}}, name="full")
    model = Qrels.from_dict({"q1": {"a": 1}, "q2": {"x": 1}}, name="model")
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}}, name="r")
    with pytest.raises(ValidationError) as err:
        build_problem(full, model, [run])
    message = str(err.value)
    assert "lacks 2 of the 4 pooled pairs" in message and "query q1 document b" in message
    assert "\n" not in message


@pytest.mark.parametrize("measure", ["AP@10", "nDCG", "nDCG(ties=docid_desc)@10"])
def test_unsupported_measures_are_refused(measure):
    full = Qrels.from_dict({"q1": {"a": 1}}, name="full")
    run = Run.from_dict({"q1": {"a": 3.0}}, name="r")
    with pytest.raises(ValidationError):
        build_problem(full, full, [run], measure)


def test_problem_layout():
    full = Qrels.from_dict({"q2": {"x": 1, "y": 0}, "q1": {"b": 2, "a": 1}, "q9": {"z": 1}}, name="full")
    run = Run.from_dict({"q1": {"a": 3.0, "n": 2.5, "b": 1.0}, "q2": {"y": 1.0}}, name="r")
    problem, people = build_problem(full, full, [run], "P@3")
    assert problem.queries == ("q1", "q2")  # q9: no run retrieves it
    assert problem.pairs == (("q1", "a"), ("q1", "b"), ("q2", "x"), ("q2", "y"))
    assert problem.query_start.tolist() == [0, 2, 4]
    assert problem.query_of.tolist() == [0, 0, 1, 1]
    assert people.tolist() == [1, 2, 1, 0]
    assert problem.ranks.tolist() == [[[0, -1, 1], [3, -1, -1]]]
    # P@3 by hand: q1 has a (1) and b (2) relevant in the top 3: 2/3; q2 has y (0): 0
    assert problem.values(people).tolist() == [[2 / 3, 0.0]]
