"""``Problem.values`` (the judging-budget replay's vectorized evaluator) against ``qrelkit.evaluate`` on
small generated collections: scores drawn from a few values (ties everywhere, blocks straddling the cutoff),
negative grades in FULL (unjudged under the default conventions), documents nobody judged, runs lacking
queries, queries with nothing relevant, a pool depth or none. Equal to the bit (==), on the people's grades
and on another whole grade vector. Derandomized: the same examples every run."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import qrelkit
from qrelkit import Qrels, Run
from qrelkit.budget import build_problem
from qrelkit.errors import ValidationError

MEASURES = ["nDCG@1", "nDCG@3", "nDCG@10", "P@2", "P(rel=2)@5", "R@3", "R(rel=2)@4", "nDCG(gain=linear)@4"]


@st.composite
def collections(draw):
    queries = draw(st.integers(1, 4))
    docs = draw(st.integers(1, 9))
    full = {}
    for q in range(queries):
        graded = draw(st.lists(st.sampled_from([-1, 0, 0, 1, 2, 3]), min_size=docs, max_size=docs))
        judged = draw(st.lists(st.booleans(), min_size=docs, max_size=docs))
        row = {f"d{i}": g for i, (g, j) in enumerate(zip(graded, judged, strict=True)) if j}
        if row:
            full[f"q{q}"] = row
    runs = []
    for r in range(draw(st.integers(1, 3))):
        scores = {}
        for q in range(queries):
            if draw(st.booleans()) or r == 0:
                kept = draw(st.lists(st.integers(0, docs + 2), min_size=1, max_size=docs + 3, unique=True))
                scores[f"q{q}"] = {f"d{i}": float(draw(st.integers(0, 4))) for i in kept}
        runs.append(scores)
    return full, runs, draw(st.sampled_from(MEASURES)), draw(st.sampled_from([None, 1, 2, 5]))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(case=collections(), other=st.integers(0, 2**32 - 1))
def test_values_equal_evaluate(case, other):
    full, run_dicts, measure, depth = case
    if not full:
        return
    runs = [Run.from_dict(d, name=f"r{i}") for i, d in enumerate(run_dicts)]
    qrels = Qrels.from_dict(full, name="full")
    try:
        problem, people = build_problem(qrels, qrels, runs, measure, pool_depth=depth)
    except ValidationError as err:  # nothing pooled, or no judged query retrieved: said, not computed
        assert "no pair" in str(err) or "no query" in str(err)
        return
    second = np.random.default_rng(other).integers(0, 4, problem.n_pairs)
    for grades in (people, second):
        pooled = Qrels.from_grades({p: int(g) for p, g in zip(problem.pairs, grades, strict=True)})
        results = qrelkit.evaluate(pooled, runs, [measure])
        expected = np.array(
            [[results.values(measure, run=r)[q] for q in problem.queries] for r in problem.runs]
        )
        assert np.array_equal(problem.values(grades), expected)
