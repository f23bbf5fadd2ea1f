"""``engine.encoded.rank_order``, ``by_query_then_score`` and ``within_depth``: the rows' order the small
path and the hashed encoding rank by, against ``np.lexsort`` of the same keys, and the depth cut against
counting, row by row, the rows of the query with a higher score."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit.engine.encoding.encoded import (
    block_heads,
    by_query_then_score,
    rank_order,
    sorted_by_query_then_score,
    within_depth,
)


@st.composite
def rows(draw):
    """Query numbers and scores with heavy ties, in file order: grouped by query or not, each query's
    scores descending (as runs are written), sorted the other way, or in no order; zero to three tie keys
    of few distinct values."""
    n = draw(st.integers(0, 60))
    n_queries = draw(st.integers(1, 5))
    q = np.array(draw(st.lists(st.integers(0, n_queries - 1), min_size=n, max_size=n)), dtype=np.int64)
    values = draw(st.lists(st.sampled_from([-2.5, -1.0, 0.0, 0.25, 0.5, 3.0, 1e300]), min_size=n, max_size=n))
    score = np.array(values, dtype=np.float64)
    layout = draw(st.sampled_from(["grouped_descending", "grouped", "none", "ascending"]))
    if layout.startswith("grouped"):
        q = np.sort(q)
        if layout == "grouped_descending":
            score = score[np.lexsort([-score, q])]
    elif layout == "ascending":
        score = np.sort(score)
    ties = [
        np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.uint64)
        for _ in range(draw(st.integers(0, 3)))
    ]
    return q, score, n_queries, ties


@settings(max_examples=400, deadline=None)
@given(rows())
def test_rank_order_is_lexsort(drawn):
    q, score, n_queries, ties = drawn
    assert by_query_then_score(q, score, n_queries).tolist() == np.lexsort([-score, q]).tolist()
    assert rank_order(q, score, n_queries, ties).tolist() == np.lexsort([*ties, -score, q]).tolist()
    order, qs, ss = sorted_by_query_then_score(q, score, n_queries)
    assert qs.tolist() == q[order].tolist() and ss.tolist() == score[order].tolist()


def _beaten_fewer_than(qs, ss, depth):
    """Row by row: the ranked rows fewer than ``depth`` rows of the same query outscore."""
    return [
        i
        for i in range(len(qs))
        if sum(1 for j in range(len(qs)) if qs[j] == qs[i] and ss[j] > ss[i]) < depth
    ]


@settings(max_examples=400, deadline=None)
@given(rows(), st.integers(1, 8))
def test_within_depth_counts_the_rows_beating_each(drawn, depth):
    q, score, _, _ = drawn
    order = np.lexsort([-score, q])
    qs, ss = q[order], score[order]
    kept = within_depth(qs, block_heads(qs, ss), depth)
    expected = _beaten_fewer_than(qs.tolist(), ss.tolist(), depth)
    assert (list(range(len(qs))) if kept is None else kept.tolist()) == expected


def test_within_depth_by_hand():
    # query 0: scores 3, 2, 2, 1 (depth 2 keeps the tie across rank 2: three rows); query 1: 5, 4 (both)
    qs = np.array([0, 0, 0, 0, 1, 1])
    ss = np.array([3.0, 2.0, 2.0, 1.0, 5.0, 4.0])
    assert within_depth(qs, block_heads(qs, ss), 2).tolist() == [0, 1, 2, 4, 5]
    assert within_depth(qs, block_heads(qs, ss), 4) is None
    # no depth keeps nothing; a depth past every query's rows (even near 2**63) keeps everything
    assert within_depth(qs, block_heads(qs, ss), 0).tolist() == []
    assert within_depth(qs, block_heads(qs, ss), -1).tolist() == []
    assert within_depth(qs, block_heads(qs, ss), 2**63 - 1) is None


def test_a_hand_example():
    # score descending within query: query 0's rows 1 and 2 tie on score and go by the tie key (row 2 first)
    query = np.array([1, 0, 0, 0])
    score = np.array([0.5, 0.25, 0.25, 0.75])
    tie = np.array([0, 9, 3, 5])
    assert rank_order(query, score, 2, [tie]).tolist() == [3, 2, 1, 0]
    # without a tie key the tied rows keep file order
    assert rank_order(query, score, 2, []).tolist() == [3, 1, 2, 0]


def test_many_queries_out_of_order():
    # more than 64 queries with rows out of score order take the whole-array sorts
    n_queries = 100
    q = np.repeat(np.arange(n_queries)[::-1], 3)
    score = np.tile(np.array([1.0, 2.0, 2.0]), n_queries)
    assert by_query_then_score(q, score, n_queries).tolist() == np.lexsort([-score, q]).tolist()
