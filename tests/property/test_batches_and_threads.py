"""Evaluating a run in whole-query batches, or several runs on threads, gives the same floats."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit import Conventions, evaluate
from qrelkit.data.values import Run
from qrelkit.evaluation.core import evaluate_run, evaluate_run_batches
from qrelkit.measures.grammar import parse_all

from .test_kernels_vs_reference import _frames, conventions, inputs

MEASURES = parse_all(["nDCG@3", "nDCG", "R@5", "AP", "RR", "Rprec", "Judged@2", "NumRet", "P@2"])


@settings(max_examples=120, deadline=None)
@given(data=inputs(), conv=conventions(), cuts=st.lists(st.integers(0, 4), max_size=3), extra=st.booleans())
def test_batches_equal_whole_run(data, conv, cuts, extra):
    qrels, run = _frames(*data)
    conv = conv.with_(extra_queries="skip")
    queries, values = evaluate_run(qrels, run, MEASURES, conv)
    run_queries = sorted(run.frame.get_column("query_id").unique().to_list())
    bounds = sorted({0, len(run_queries), *[min(c, len(run_queries)) for c in cuts]})
    batches = []
    for lo, hi in itertools.pairwise(bounds):
        part = run.frame.filter(pl.col("query_id").is_in(run_queries[lo:hi]))
        batches.append(Run(part, run.fingerprint, run.name, run.meta))
    got_queries, got = evaluate_run_batches(qrels, batches, MEASURES, conv)
    assert got_queries.query_ids == queries.query_ids
    assert got_queries.counts() == queries.counts()
    for m in MEASURES:
        np.testing.assert_array_equal(got[m][0], values[m][0])
        np.testing.assert_array_equal(got[m][1], values[m][1])
    del extra


@settings(max_examples=40, deadline=None)
@given(data=inputs(), other=inputs())
def test_threads_equal_sequential(data, other):
    qrels, run_a = _frames(*data)
    _, run_b = _frames(other[0], other[1])
    run_b = Run(run_b.frame, run_b.fingerprint, "b", run_b.meta)
    seq = evaluate(qrels, [run_a, run_b], MEASURES, Conventions())
    par = evaluate(qrels, [run_a, run_b], MEASURES, Conventions(), workers=2)
    assert seq.per_query.equals(par.per_query)


@settings(max_examples=150, deadline=None)
@given(data=inputs(), conv=conventions(), rows=st.integers(1, 9), shuffle=st.randoms(use_true_random=False))
def test_runs_split_into_batches_inside_evaluate_run_give_the_same_floats(data, conv, rows, shuffle):
    """evaluate_run cuts a large run into batches itself: slices when each query fills one stretch of rows,
    gathered by id otherwise; the judgments of each batch are found by stretches (grouped) or one sort."""
    from qrelkit.evaluation import core as evaluation

    qrels_rows, run_rows = data
    if shuffle.random() < 0.5:  # queries in no particular order, on either side
        shuffle.shuffle(qrels_rows)
        shuffle.shuffle(run_rows)
    qrels, run = _frames(qrels_rows, run_rows)
    conv = conv.with_(extra_queries="skip")
    whole_queries, whole = evaluate_run(qrels, run, MEASURES, conv)
    saved = evaluation.ENCODE_BATCH_ROWS
    evaluation.ENCODE_BATCH_ROWS = rows  # set and restored by hand: hypothesis runs the body many times
    try:
        got_queries, got = evaluate_run(qrels, run, MEASURES, conv)
    finally:
        evaluation.ENCODE_BATCH_ROWS = saved
    assert got_queries.query_ids == whole_queries.query_ids
    assert got_queries.counts() == whole_queries.counts()
    for m in MEASURES:
        np.testing.assert_array_equal(got[m][0], whole[m][0])
        np.testing.assert_array_equal(got[m][1], whole[m][1])


def test_a_grouped_run_is_cut_into_slices_of_whole_queries():
    from qrelkit.evaluation.core import _query_batches

    lines = [(q, f"d{i}", float(i)) for q, n in (("b", 3), ("a", 1), ("c", 4), ("d", 2)) for i in range(n)]
    _, run = _frames([("a", "d0", 1)], lines)
    parts = [batch.frame for batch in _query_batches(run, 3)]
    assert [p.get_column("query_id").unique(maintain_order=True).to_list() for p in parts] == [
        ["b"],
        ["a", "c"],
        ["d"],
    ]
    assert pl.concat(parts).equals(run.frame)
