"""Hypothesis: ``qrelkit trec_eval``'s path without numpy (:mod:`qrelkit.evaluation.trec_lean`) gives the
same per-query floats (bit for bit, NaN included), the same summaries and the same printed bytes as the
numpy path (:func:`qrelkit.evaluation.trec_eval.trec_eval_files`) on generated files: tied scores (and
scores equal only in single precision), negative grades, grades above 9, documents and queries outside the judgments,
judged queries missing from the run, comment lines, every option; and where the numpy path stops with an
error, the path without numpy steps aside (so the error is the numpy path's)."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from qrelkit.errors import QrelkitError, StepAside
from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
from qrelkit.evaluation.trec_lean import lean_output
from qrelkit.report.trec_eval import render_trec_eval

from .trec_files import trec_files, written

SPECS = [
    "official", "set", "ndcg_cut.1,3,10", "recall.2,5", "P.1,3", "map_cut.2,5", "ndcg", "ndcg.0=0.5,1=2.5,3=7",
    "success.1,2", "unj.1,3", "relstring.5", "Rprec_mult.0.5,1.5", "utility.2,-1,0.5,0.25", "set_F.0.5",
    "relative_P.2,7", "11pt_avg.0.1,0.5", "iprec_at_recall.0,0.33,1", "gm_bpref", "num_nonrel_judged_ret",
    "all_trec", "infAP", "binG", "G", "G.1=3,2=-1", "G.0=0.5,2=1.5", "ndcg_rel", "ndcg_rel.0=1,2=0", "Rndcg",
    "Rndcg.1=0,3=-2", "rbp", "rbp.p=0.5", "rbp.0=-1,1=2", "rbp.1=0.5,2=0.75", "rbp_resid", "rbp_resid.p=0.7",
]  # fmt: skip
QUERIES = ["q1", "q2", "q10", "q3", "x"]
DOCS = [f"d{i}" for i in range(12)]
#: 16777216 and 16777217 are equal in single precision only: trec_eval 10 ranks them by score.
SCORES = [1.0, 2.0, 0.5, 0.1, -3.25, 16777216.0, 16777217.0, 7.0]


FILES = trec_files(
    queries=QUERIES, docs=DOCS, grades=[-1, 0, 1, 1, 2, 3, 12], scores=SCORES,
    most_judged_queries=4, most_judged=8, most_ranked_queries=5, most_retrieved=10,
)  # fmt: skip


def _bits(values) -> list:
    if values is None:
        return []
    items = list(values)
    if items and isinstance(items[0], str):
        return items
    return [struct.pack("<d", float(v)) for v in items]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=FILES,
    specs=st.lists(st.sampled_from(SPECS), max_size=3),
    per_query=st.booleans(),
    complete=st.booleans(),
    judged_only=st.booleans(),
    rel_level=st.integers(0, 3),
    max_per_topic=st.one_of(st.none(), st.integers(0, 6)),
    num_docs=st.integers(0, 50),
)
def test_the_path_without_numpy_gives_the_same_floats_and_bytes(
    texts, specs, per_query, complete, judged_only, rel_level, max_per_topic, num_docs
):
    options = TrecOptions(
        per_query=per_query, complete=complete, judged_only=judged_only, rel_level=rel_level,
        max_per_topic=max_per_topic, num_docs=num_docs, measures=tuple(specs),
    )  # fmt: skip
    with written(texts) as (qrels, run):
        args = (str(qrels), str(run), per_query, complete, judged_only, True, rel_level, max_per_topic)
        try:
            ours = lean_output(*args, num_docs, tuple(specs))
        except StepAside as exc:
            ours = exc
        try:
            theirs = trec_eval_files(qrels, run, options)
        except QrelkitError:
            assert isinstance(ours, StepAside)  # the numpy path's error, not another
            event("the numpy path stops with an error")
            return
    if isinstance(ours, StepAside):
        event("stepped aside")
        return
    event("taken")
    assert ours.query_ids == theirs.query_ids and ours.run_id == theirs.run_id
    assert [(n, k) for n, k, _, _ in ours.lines] == [(n, k) for n, k, _, _ in theirs.lines]
    for (name, _, values, total), (_, _, their_values, their_total) in zip(
        ours.lines, theirs.lines, strict=True
    ):
        assert _bits(values) == _bits(their_values), name
        if isinstance(total, float) or isinstance(their_total, float):
            assert struct.pack("<d", float(total)) == struct.pack("<d", float(their_total)), name
        else:
            assert total == their_total, name
    ours.options = theirs.options
    assert render_trec_eval(ours) == render_trec_eval(theirs)


def test_the_generated_files_are_mostly_taken() -> None:
    """The property above is not vacuous: a clean file of the generator's kind is taken."""
    texts = (
        "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n",
        "q1 Q0 d1 1 16777216.0 t\nq1 Q0 d3 2 16777216.0 t\nq2 Q0 d9 1 1.0 t\n",
    )
    with written(texts) as (qrels, run):
        out = lean_output(str(qrels), str(run), True, False, False, True, 1, None, 0, ())
    values = {name: v for name, _, v, _ in out.lines}
    # q1: a tie, so d3 (the larger id) ranks first and d1, its one relevant document, second: AP 1/2;
    # q2 returns nothing relevant: AP 0
    assert values["map"] == [0.5, 0.0]
    assert values["num_ret"] == [2.0, 1.0] and values["P_5"] == [0.2, 0.0]
