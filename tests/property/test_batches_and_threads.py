"""Evaluating a run in whole-query batches, or several runs on threads, gives the same floats."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit import Conventions, evaluate
from qrelkit.data import Run
from qrelkit.evaluation import evaluate_run, evaluate_run_batches
from qrelkit.measures import parse_all

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
