"""Hypothesis: Compat (qrelkit.engine.kernels.compat) equals its definition (qrelkit.engine.oracles.reference's
compat_reference_values, which tries every ideal ranking consistent with the judgments and keeps the most
compatible), under ordered ties, unjudged, precision, negative and no-relevant conventions; and averaged
ties over tied scores are refused."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.engine.registry import oracle_values
from qrelkit.errors import ConventionError
from qrelkit.evaluation.core import evaluate
from qrelkit.formats import qrels_from_frame, run_from_frame
from qrelkit.measures.conventions import Conventions
from qrelkit.measures.grammar import parse

DOCS = [f"d{i}" for i in range(9)]
MEASURES = ["Compat", "Compat(p=0.5)", "Compat(p=0.8,normalize=False)", "Compat(normalize=False)"]


@st.composite
def inputs(draw):
    qrels = []
    for q in draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, max_size=3, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=7, unique=True)):
            qrels.append((q, d, draw(st.integers(-1, 3))))
    run = []
    for q in draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, max_size=3, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True)):
            run.append((q, d, draw(st.sampled_from([1.0, 2.0, 2.0, 3.0, -1.0, 0.0, 0.30000001, 0.3]))))
    return qrels, run


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=inputs(),
    measure=st.sampled_from(MEASURES),
    ties=st.sampled_from(["docid_desc", "docid_asc", "file_order"]),
    unjudged=st.sampled_from(["zero", "drop"]),
    precision=st.sampled_from(["double", "single"]),
    negative=st.sampled_from(["unjudged", "zero", "gain"]),
    no_relevant=st.sampled_from(["zero", "skip", "skip_unretrieved"]),
)
def test_compat_equals_its_definition(data, measure, ties, unjudged, precision, negative, no_relevant):
    qrels_rows, run_rows = data
    conv = Conventions(
        ties=ties, unjudged=unjudged, precision=precision, negative=negative, no_relevant=no_relevant
    )
    qrels = qrels_from_frame(pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "grade"], orient="row"))
    run = run_from_frame(pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row"))
    m = parse(measure)
    got = evaluate(qrels, run, [m], conv).values(m)
    ref_run: dict[str, list] = {}
    for line, (q, d, s) in enumerate(run_rows, start=1):
        ref_run.setdefault(q, []).append((d, s, line))
    expected = oracle_values(qrels.to_dict(), ref_run, m, conv)
    assert set(got) == set(expected)
    for q, value in expected.items():
        if math.isnan(value):
            assert math.isnan(got[q]), q
        else:
            assert got[q] == pytest.approx(value, abs=1e-12), q


def test_averaged_ties_are_refused_only_where_scores_tie():
    qrels = qrels_from_frame(pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "grade": [1]}))
    tied = run_from_frame(pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 1.0]}))
    with pytest.raises(ConventionError, match="Compat cannot average tied scores"):
        evaluate(qrels, tied, ["Compat"])
    distinct = run_from_frame(
        pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["b", "a"], "score": [2.0, 1.0]})
    )
    # run b, a against the ideal a: overlaps 0 at depth 1, 1 at depth 2: (0.95 / 2) / (1 + 0.95 / 2)
    assert evaluate(qrels, distinct, ["Compat"]).value("Compat", "q") == pytest.approx(
        0.475 / 1.475, abs=1e-12
    )
