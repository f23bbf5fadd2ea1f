"""Hypothesis: alpha_nDCG@k and ERR_IA@k (qrelkit.engine.kernels.diversity) equal the slow oracle
(qrelkit.engine.oracles.diversity), which enumerates every ordering of every tied block, on tie-heavy
inputs under the tie orders, unjudged, precision, negative and no-relevant conventions."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.data.values import diversity_qrels_from_frame
from qrelkit.engine.registry import oracle_values
from qrelkit.evaluation.core import evaluate
from qrelkit.formats import run_from_frame
from qrelkit.measures.conventions import Conventions
from qrelkit.measures.grammar import parse

QUERIES = ["q1", "q2", "q3"]
DOCS = [f"d{i}" for i in range(8)]
SUBTOPICS = ["1", "2", "3", "4"]
MEASURES = [
    "alpha_nDCG@1",
    "alpha_nDCG@3",
    "alpha_nDCG@5",
    "alpha_nDCG(alpha=0.3)@4",
    "alpha_nDCG(alpha=0.9,rel=2)@3",
    "alpha_nDCG(alpha=1)@3",
    "alpha_nDCG(alpha=0)@4",
    "ERR_IA@1",
    "ERR_IA@3",
    "ERR_IA@6",
    "ERR_IA(rel=2)@4",
]


@st.composite
def inputs(draw):
    judgments = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True)):
            for s in draw(st.lists(st.sampled_from(SUBTOPICS), min_size=1, max_size=3, unique=True)):
                judgments.append((q, s, d, draw(st.integers(-1, 2))))
    run = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=7, unique=True)):
            run.append((q, d, draw(st.sampled_from([1.0, 1.0, 2.0, 2.0, 3.0, 0.5, 0.30000001, 0.3]))))
    return judgments, run


@st.composite
def conventions(draw):
    return Conventions(
        ties=draw(st.sampled_from(["average", "average", "docid_desc", "docid_asc", "file_order"])),
        unjudged=draw(st.sampled_from(["zero", "drop"])),
        precision=draw(st.sampled_from(["double", "single"])),
        negative=draw(st.sampled_from(["unjudged", "zero", "gain"])),
        no_relevant=draw(st.sampled_from(["zero", "skip", "skip_unretrieved"])),
        missing_queries=draw(st.sampled_from(["zero", "skip"])),
    )


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs(), conv=conventions(), measure=st.sampled_from(MEASURES))
def test_diversity_kernels_equal_reference(data, conv, measure):
    judgments, run_rows = data
    qrels = diversity_qrels_from_frame(
        pl.DataFrame(judgments, schema=["query_id", "subtopic", "doc_id", "grade"], orient="row")
    )
    run = run_from_frame(pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row"))
    m = parse(measure)
    got = evaluate(qrels, run, [m], conv).values(m)
    ref_judgments: dict[str, dict[str, dict[str, int]]] = {}
    for q, s, d, g in judgments:
        ref_judgments.setdefault(q, {}).setdefault(d, {})[s] = g
    ref_run: dict[str, list] = {}
    for line, (q, d, s) in enumerate(run_rows, start=1):
        ref_run.setdefault(q, []).append((d, s, line))
    expected = oracle_values(ref_judgments, ref_run, m, conv)
    assert set(got) == set(expected)
    for q in expected:
        assert _same(got[q], expected[q]), (q, got[q], expected[q])


@settings(max_examples=100, deadline=None)
@given(data=inputs(), seed=st.randoms(use_true_random=False), measure=st.sampled_from(MEASURES))
def test_permuting_run_rows_changes_nothing_under_averaged_ties(data, seed, measure):
    judgments, run_rows = data
    qrels = diversity_qrels_from_frame(
        pl.DataFrame(judgments, schema=["query_id", "subtopic", "doc_id", "grade"], orient="row")
    )
    shuffled = list(run_rows)
    seed.shuffle(shuffled)
    a, b = (
        evaluate(
            qrels,
            run_from_frame(pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")),
            [measure],
        ).values(measure)
        for rows in (run_rows, shuffled)
    )
    assert a.keys() == b.keys()
    assert all(_same(a[q], b[q]) for q in a)
