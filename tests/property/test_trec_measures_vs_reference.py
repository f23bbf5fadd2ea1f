"""Hypothesis: trec_eval's measures in qrelkit's grammar equal the slow oracle under every convention.

Inputs are tie-heavy (few distinct scores). Under ``ties=average`` the oracle enumerates every ordering of
each tied block; the measures with a closed form must equal that expectation, and the others must refuse
averaged ties (with a clear error) whenever the encoded ranking has a tied block."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.engine.registry import oracle_values
from qrelkit.engine.trec.measures import NOT_AVERAGEABLE
from qrelkit.errors import ConventionError
from qrelkit.evaluation.core import evaluate
from qrelkit.measures.grammar import parse

from .test_kernels_vs_reference import _frames, _ref_inputs, _same, conventions, inputs

MEASURES = [
    "Success@1", "Success@3", "Success(rel=2)@2", "Success",
    "RelP@2", "RelP(rel=2)@4", "Unjudged@3", "NumNonRelJudgedRet", "NumNonRelJudgedRet@2",
    "SetP", "SetRelP(rel=2)", "SetAP", "SetF", "SetF(beta=0.5)", "Utility", "Utility(a=2,b=-1,c=0.5,d=0.25,docs=20)",
    "Rprec(mult=0.2)", "Rprec(rel=2,mult=2)",
    "bpref", "bpref(rel=2)", "infAP", "IPrec(recall=0.3)", "IPrec(recall=0)", "IPrecMean",
    "IPrecMean(recall={0.25,0.5,0.75})", "IPrec(recall=0.3,iprec_cutoff=truncate)",
    "IPrec(recall=0.7,iprec_cutoff=round)", "IPrecMean(iprec_cutoff=truncate)", "binG", "G", "nDCGRel", "RnDCG",
]  # fmt: skip


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs(), conv=conventions())
def test_trec_measures_equal_reference(measure, data, conv):
    qrels_rows, run_rows = data
    qrels, run = _frames(qrels_rows, run_rows)
    m = parse(measure)
    if m.name in NOT_AVERAGEABLE and conv.ties == "average":
        conv = conv.with_(ties="docid_desc")  # refused on ties: see the test below
    got = evaluate(qrels, run, [m], conv).values(m)
    ref_qrels, ref_run = _ref_inputs(qrels, run_rows)
    expected = oracle_values(ref_qrels, ref_run, m, conv)
    assert set(got) == set(expected)
    for q in expected:
        assert _same(got[q], expected[q]), (q, got[q], expected[q])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs(), measure=st.sampled_from([m for m in MEASURES if parse(m).name in NOT_AVERAGEABLE]))
def test_measures_without_a_closed_form_refuse_averaged_ties_exactly_when_scores_tie(data, measure):
    qrels_rows, run_rows = data
    qrels, run = _frames(qrels_rows, run_rows)
    judged_queries = {q for q, _, _ in qrels_rows}
    scores: dict[str, list[float]] = {}
    for q, _, score in run_rows:
        if q in judged_queries:
            scores.setdefault(q, []).append(score)
    tied = any(len(set(v)) < len(v) for v in scores.values())
    try:
        evaluate(qrels, run, [measure]).values(measure)
    except ConventionError as exc:
        assert tied and "cannot average tied scores exactly" in str(exc)
    else:
        assert not tied


@pytest.mark.parametrize("measure", [m for m in MEASURES if parse(m).name not in NOT_AVERAGEABLE])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs())
def test_exact_measures_average_ties_like_the_enumeration(measure, data):
    """The default conventions (ties=average): the closed forms equal the average over every ordering."""
    qrels_rows, run_rows = data
    qrels, run = _frames(qrels_rows, run_rows)
    m = parse(measure)
    got = evaluate(qrels, run, [m]).values(m)
    ref_qrels, ref_run = _ref_inputs(qrels, run_rows)
    expected = oracle_values(
        ref_qrels, ref_run, m, parse(measure).conventions(__import__("qrelkit").Conventions())
    )
    for q in expected:
        assert _same(got[q], expected[q]), (q, got[q], expected[q])
