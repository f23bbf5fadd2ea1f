"""Hypothesis: ``qrelkit trec_eval`` in one native call (:mod:`qrelkit.evaluation.trec_native`, the C code of
``_native/trec_eval.c`` and ``trec_measures.c``) prints the same bytes as the path without numpy
(:mod:`qrelkit.evaluation.trec_lean`, whose floats ``test_trec_lean.py`` holds equal to the numpy path's) on
generated files: tied scores, full-precision scores, negative grades, grades above 9, documents and queries
outside the judgments, judged queries missing from the run, comment lines, every option, every measure by
name or nickname and the cutoff measures' cutoffs. Among the measures it computes, the native reader takes
exactly what the lean path takes: where the lean path steps aside (so that the numpy path reports its
error), the native reader leaves the files too; measures with other parameters are always the lean path's."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from qrelkit.errors import StepAside
from qrelkit.evaluation.trec_lean import lean_output
from qrelkit.evaluation.trec_native import measure_selection, native_trec_eval
from qrelkit.measures.trec_names import NICKNAMES, ORDER
from qrelkit.report.trec_eval import render_trec_eval

from .trec_files import trec_files, written

#: Every measure by name and nickname, and cutoffs as the native path takes them (and some it leaves).
NAMES = [
    *ORDER, *NICKNAMES, "ndcg_cut.1,3,10", "P.1,3", "P.7", "recall.2,5", "map_cut.2,5", "success.1,2",
    "unj.1,3", "relative_P.2,7", "ndcg_cut.1000000000", "P.0", "P.5,5", "ndcg.1=3", "iprec_at_recall.0.5",
]  # fmt: skip
QUERIES = ["q1", "q2", "q10", "q3", "x", "301"]
DOCS = [f"d{i}" for i in range(30)]
#: 16777216 and 16777217 are equal in single precision only; the rest full-precision doubles.
SCORES = [1.0, 2.0, 0.5, 0.1, -3.25, 16777216.0, 16777217.0, 7.0, 0.1234567890123456, 12.345678901234567]


FILES = trec_files(
    queries=QUERIES, docs=DOCS, grades=[-1, 0, 0, 1, 1, 2, 3, 12], scores=SCORES,
    most_judged_queries=5, most_judged=20, most_ranked_queries=6, most_retrieved=25,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=FILES,
    names=st.lists(st.sampled_from(NAMES), max_size=3),
    per_query=st.booleans(),
    complete=st.booleans(),
    judged_only=st.booleans(),
    summary=st.booleans(),
    rel_level=st.integers(0, 4),
    max_per_topic=st.one_of(st.none(), st.integers(-1, 12)),
    num_docs=st.integers(-5, 60),
)
def test_the_native_path_prints_the_lean_paths_bytes(
    texts, names, per_query, complete, judged_only, summary, rel_level, max_per_topic, num_docs
):
    with written(texts) as (qrels, run):
        args = (str(qrels), str(run), per_query, complete, judged_only, summary, rel_level, max_per_topic)
        try:
            lean = render_trec_eval(lean_output(*args, num_docs, tuple(names)))
        except StepAside:
            lean = None
        native = native_trec_eval(
            str(qrels), str(run), per_query=per_query, complete=complete, judged_only=judged_only,
            summary=summary, rel_level=rel_level, max_per_topic=max_per_topic, num_docs=num_docs,
            measures=tuple(names),
        )  # fmt: skip
    if measure_selection(names, ORDER) is None:  # parameters other than cutoffs: the lean path's, always
        event("measures with other parameters")
        assert native is None
        return
    if lean is None:
        event("both leave the files")
        assert native is None
        return
    event("taken")
    assert native is not None
    assert native.text == lean


@settings(max_examples=3000, deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(-1e6, 1e6),
        st.floats(0, 1),
        st.integers(-(10**9), 10**9).map(lambda k: k / 2**5),  # ties at the fifth decimal (1/32 = 0.03125)
        st.integers(0, 10**6).map(lambda k: k / 20000 + 0.5e-4),  # near a tie
        st.integers(0, 200).flatmap(lambda n: st.integers(0, n).map(lambda k: k / n if n else 0.0)),  # k / n
    )
)
def test_the_native_layout_of_a_value_is_printfs(value: float) -> None:
    """``%6.4f`` as the C library writes it (Python's format rounds the exact value the same way), the
    fast way and printf's way alike."""
    from qrelkit import _native

    expected = "  -nan" if value != value else f"{value:6.4f}"
    assert _native.trec_eval_format(value) == expected
