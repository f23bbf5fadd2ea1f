"""``engine.small.ranked``: the rows' order the small path ranks by, against ``np.lexsort`` of the same keys."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit.engine.small import ranked


@st.composite
def keys(draw):
    """A ranking key (as ``_query_score_keys`` folds query and score: unsigned 64-bit) with heavy ties, in
    file order, mostly sorted, or not at all; zero to three tie keys of few distinct values."""
    n = draw(st.integers(0, 60))
    distinct = draw(st.integers(1, 8))
    values = draw(st.lists(st.integers(0, distinct), min_size=n, max_size=n))
    if draw(st.booleans()):
        values.sort()
    ranking = np.array(values, dtype=np.uint64) * np.uint64(2**40)  # high bits, as the query's are
    ties = [
        np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.uint64)
        for _ in range(draw(st.integers(0, 3)))
    ]
    return ranking, ties


@settings(max_examples=400, deadline=None)
@given(keys())
def test_ranked_is_lexsort(drawn):
    ranking, ties = drawn
    expected = np.lexsort([*ties, ranking]) if ties else np.argsort(ranking, kind="stable")
    assert ranked([ranking], ties).tolist() == expected.tolist()


def test_two_ranking_keys_and_a_hand_example():
    # score descending within query: query 0's rows 1 and 2 tie on score and go by the tie key (row 2 first)
    query = np.array([1, 0, 0, 0])
    score = np.array([0.5, 0.25, 0.25, 0.75])
    tie = np.array([0, 9, 3, 5])
    assert ranked([-score, query], [tie]).tolist() == [3, 2, 1, 0]
    key = np.array([5, 5, 1, 5], dtype=np.uint64)
    assert ranked([key], [np.array([2, 1, 0, 1], dtype=np.uint64)]).tolist() == [2, 1, 3, 0]
