"""Hypothesis: the numpy kernels equal the slow reference oracle under every convention.

The strategies draw every value of every axis (negative=gain, no_relevant=skip_unretrieved, the mean
axis, the cutoff denominator, the missing-query score and per-family axes included), heavy ties, near-ties that only single precision merges, and scores 1e-9 apart.
"""

from __future__ import annotations

import math

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.data.values import Qrels
from qrelkit.engine.registry import oracle_values
from qrelkit.evaluation.core import evaluate
from qrelkit.formats import qrels_from_frame, run_from_frame
from qrelkit.measures.conventions import CHOICES, PROFILE_AXES, Conventions, GainMap
from qrelkit.measures.grammar import parse
from qrelkit.measures.profiles import PROFILES

MEASURES = [
    "nDCG",
    "nDCG@1",
    "nDCG@3",
    "nDCG@5",
    "DCG@4",
    "IDCG@3",
    "R@3",
    "R(rel=2)@5",
    "R",
    "P@2",
    "P",
    "F1@3",
    "F1(rel=2)@2",
    "F1",
    "P(rel=2)@4",
    "AP",
    "AP@3",
    "AP(rel=2)",
    "RR",
    "RR@2",
    "RR(rel=2)@4",
    "Rprec",
    "Rprec(rel=2)",
    "FallOut",
    "FallOut(rel=2)@3",
    "Judged@3",
    "Judged@10",
    "Judged",
    "NumQ",
    "NCG",
    "NCG@5",
    "NCG(gain=linear)@10",
    "Accuracy",
    "Accuracy@3",
    "Accuracy(rel=2)@5",
    "INST(depth=10)",
    "INST(T=2,depth=4)",
    "INSQ(T=0.5,depth=9)",
    "BPM(depth=10)@3",
    "BPM(T=2,depth=6)@8",
    "NERR8(depth=10)@3",
    "NERR9(depth=5)@4",
    "NERR10(p=0.5,depth=8)",
    "NERR11(T=2,depth=10)",
    "SDCG(depth=10)@3",
    "SDCG(depth=4)@6",
    "P@10",
    "NumRel",
    "NumRel(rel=2)",
    "NumRet",
    "NumRet@3",
    "NumRelRet@3",
    "ERR",
    "ERR@3",
    "ERR(max_grade=3)@5",
    "nERR@3",
    "nERR",
    "RBP",
    "RBP@3",
    "RBP(rel=2,persistence=0.5)@4",
    "RBP_resid",
    "RBP_resid@3",
    "RBP(rbp_gain=scaled)",
    "RBP(rel=2,persistence=0.9,rbp_gain=scaled)@3",
    "RBP(rbp_gain=grade)@4",
    "RBP_resid(rbp_residual=if_unjudged)",
    "RBP_resid(persistence=0.9,rbp_residual=if_unjudged)@3",
]

QUERIES = ["q1", "q2", "q3", "q4"]
DOCS = [f"d{i}" for i in range(8)]


@st.composite
def inputs(draw):
    qrels_rows = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), max_size=6, unique=True)):
            qrels_rows.append((q, d, draw(st.integers(-1, 3))))
    if not qrels_rows:  # a qrels file needs at least one row
        qrels_rows.append(("q1", "d0", draw(st.integers(0, 3))))
    run_rows = []
    for q in draw(st.lists(st.sampled_from(QUERIES), max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=7, unique=True))
        for d in docs:
            # few distinct scores: heavy ties; 0.1+0.2 vs 0.3 style near-ties for single precision
            score = draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 2.0, 0.3, 0.30000001, 3.0, 1e-9, 2e-9, -1.0]))
            run_rows.append((q, d, score))
    if not run_rows:
        run_rows.append(("q9", "d0", 1.0))
    return qrels_rows, run_rows


@st.composite
def conventions(draw):
    kw = {
        axis: draw(st.sampled_from(choices)) for axis, choices in CHOICES.items() if axis != "extra_queries"
    }
    gain = draw(st.sampled_from(["exponential", "linear", "map"]))
    kw["gain"] = GainMap.from_mapping({-1: -0.5, 0: 0.0, 1: 1.5, 2: 2.0, 3: 9.25}) if gain == "map" else gain
    kw["discount"] = draw(st.sampled_from([2.0, 10.0, math.e]))
    if kw["negative"] == "reject":
        kw["negative"] = "unjudged"
    kw["by_measure"] = draw(st.sampled_from(BY_MEASURE))
    kw["max_grade"] = draw(st.sampled_from([3, 4, 6]))
    kw["persistence"] = draw(st.sampled_from([0.8, 0.5, 0.95]))
    return Conventions(**kw)


#: per-family axes: none, the two profiles' sets, and ones that move every kernel family
BY_MEASURE = [
    "none",
    PROFILE_AXES["ir_measures"]["by_measure"],
    PROFILE_AXES["trectools"]["by_measure"],
    "RR@k(ties=optimistic); AP(ties=pessimistic,negative=zero); nDCG(gain=linear,ideal=returned)",
    "Judged(cutoff_denominator=k,unjudged=drop); P(cutoff_denominator=returned,precision=single)",
    "ERR@k(ties=docid_asc,max_grade=5); nERR(ideal=returned,ties=average)",
]


def _frames(qrels_rows, run_rows):
    qrels = qrels_from_frame(pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "grade"], orient="row"))
    run = run_from_frame(pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row"))
    return qrels, run


def _ref_inputs(qrels: Qrels, run_rows):
    ref_run: dict[str, list] = {}
    for line, (q, d, s) in enumerate(run_rows, start=1):
        ref_run.setdefault(q, []).append((d, s, line))
    return qrels.to_dict(), ref_run


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs(), conv=conventions(), measure=st.sampled_from(MEASURES))
def test_kernels_equal_reference(data, conv, measure):
    qrels_rows, run_rows = data
    qrels, run = _frames(qrels_rows, run_rows)
    m = parse(measure)
    got = evaluate(qrels, run, [m], conv).values(m)
    ref_qrels, ref_run = _ref_inputs(qrels, run_rows)
    expected = oracle_values(ref_qrels, ref_run, m, conv)
    assert set(got) == set(expected)
    for q in expected:
        assert _same(got[q], expected[q]), (q, got[q], expected[q])


@settings(max_examples=150, deadline=None)
@given(data=inputs(), seed=st.randoms(use_true_random=False), measure=st.sampled_from(MEASURES))
def test_permuting_input_rows_changes_nothing_under_averaged_ties(data, seed, measure):
    qrels_rows, run_rows = data
    shuffled = list(run_rows)
    seed.shuffle(shuffled)
    qrels, run_a = _frames(qrels_rows, run_rows)
    _, run_b = _frames(qrels_rows, shuffled)
    a = evaluate(qrels, run_a, [measure]).values(measure)
    b = evaluate(qrels, run_b, [measure]).values(measure)
    assert a.keys() == b.keys()
    for q in a:
        assert _same(a[q], b[q])


@settings(max_examples=150, deadline=None)
@given(data=inputs(), conv=conventions())
def test_ndcg_is_between_0_and_1_with_nonnegative_gains(data, conv):
    if isinstance(conv.gain, GainMap):
        conv = conv.with_(gain="exponential")
    if conv.negative == "gain":  # negative gains may take nDCG outside [0, 1] (as in torchmetrics)
        conv = conv.with_(negative="zero")
    qrels, run = _frames(*data)
    for value in evaluate(qrels, run, ["nDCG@3", "nDCG"], conv.with_(ideal="judged")).per_query["value"]:
        assert math.isnan(value) or -1e-12 <= value <= 1 + 1e-12


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=inputs(), conv=conventions(), measure=st.sampled_from(["ERR", "ERR@2", "ERR@4", "nERR@3", "nERR"])
)
def test_cascade_measures_average_ties_exactly(data, conv, measure):
    """ERR is not linear in the positions: its averaged ties use the subset-mean recurrence of
    engine/kernels/cascade.py, checked here against every ordering of every tied block."""
    test_kernels_equal_reference.hypothesis.inner_test(
        data, conv.with_(ties="average", by_measure="none"), measure
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=inputs(),
    conv=conventions(),
    measure=st.sampled_from(["AP@1", "AP@2", "AP@3", "AP(rel=2)@4", "AP", "R@2", "P@3", "RR@3", "Rprec"]),
)
def test_torchmetrics_axes_average_ties_exactly(data, conv, measure):
    """AP over the relevant documents found within k is a ratio of two counts that both depend on the
    order of a tied block straddling k: its exact expectation (engine/kernels/ranked.py) against every ordering."""
    test_kernels_equal_reference.hypothesis.inner_test(
        data,
        conv.with_(
            ties="average", by_measure="none", ap_denominator="retrieved", nonpositive="not_retrieved"
        ),
        measure,
    )


CWL = [m for m in MEASURES if m.split("(")[0].split("@")[0] in ("INST", "INSQ", "BPM", "SDCG") or "NERR" in m]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs(), conv=conventions(), measure=st.sampled_from(CWL), average=st.booleans())
def test_cwl_measures_equal_their_definition(data, conv, measure, average):
    """The C/W/L family (engine/kernels/cwl.py, cwl_eval's arithmetic on a gain matrix) against its plain
    definition, under every convention; under averaged ties the mean over every ordering of the tied
    blocks, which the kernel enumerates for the queries whose tied blocks mix gains."""
    conv = conv.with_(ties="average", by_measure="none") if average else conv
    test_kernels_equal_reference.hypothesis.inner_test(data, conv, measure)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=inputs(),
    ties=st.sampled_from(["file_order", "docid_desc"]),
    negative=st.sampled_from(["unjudged", "zero", "gain"]),
    measure=st.sampled_from(["P@2", "P(rel=2)@5", "RR", "RR(rel=2)", "AP", "AP(rel=3)", "RBP", "INST"]),
)
def test_cwl_eval_profile_equals_its_definition(data, ties, negative, measure):
    """P@k, RR, AP and RBP under --profile cwl_eval (cwl_eval's C/W/L classes, to depth 1000) against
    their plain definitions."""
    conv = PROFILES["cwl_eval"].conventions.with_(max_grade=3, ties=ties, negative=negative)
    test_kernels_equal_reference.hypothesis.inner_test(data, conv, measure)
