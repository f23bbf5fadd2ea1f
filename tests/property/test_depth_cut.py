"""Encoding a run cut to the depth its measures need (each query's rows that fewer than ``depth`` others
beat by score, the tied block at the depth included) gives every measure the same floats, and the same
errors, as encoding every row: ``qrelkit.evaluate`` cuts (evaluation/core.py), so its numbers are the
uncut ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit.engine.dispatch import compute
from qrelkit.engine.encoding.encode import encode, select_queries
from qrelkit.errors import QrelkitError
from qrelkit.measures.conventions import DEFAULT
from qrelkit.measures.grammar import INFO, parse, required_depth

from .test_kernels_vs_reference import _frames, conventions, inputs

#: Every family with a cutoff, at cutoffs below, at and above the runs' lengths (up to 7 rows a query).
CUT = [parse(f"{name}@{k}") for name, info in INFO.items() if info.cutoff != "none" for k in (1, 3, 8)]
CUT = [m for m in CUT if m.info.judgments != "subtopics"]


def _outcome(qrels, run, measure, conv, depth):
    """(values, undefined) of ``measure`` with the run encoded at ``depth``, or the error's type and text."""
    try:
        mconv = measure.conventions(conv)
        queries = select_queries(qrels, run, mconv)
        encoded = encode(qrels, run, mconv, queries, ranking=False, depth=depth)
        return compute(encoded, measure, mconv)
    except QrelkitError as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=200, deadline=None)
@given(data=inputs(), conv=conventions(), measure=st.sampled_from(CUT))
def test_a_run_cut_to_its_depth_gives_the_same_floats_and_errors(data, conv, measure):
    qrels, run = _frames(*data)
    conv = conv.with_(extra_queries="skip")
    depth = required_depth([measure], conv)
    if depth is None:
        return  # the measure needs every returned document: nothing is cut
    whole = _outcome(qrels, run, measure, conv, None)
    cut = _outcome(qrels, run, measure, conv, depth)
    if isinstance(whole[0], str):
        assert cut == whole
        return
    np.testing.assert_array_equal(cut[0], whole[0])
    np.testing.assert_array_equal(cut[1], whole[1])


def test_the_cut_keeps_the_tied_block_at_the_depth():
    """Hand count: scores 3, 2, 2, 2, 1 cut at depth 2 keep the 3 and the three 2s (each beaten by one row
    only), not the 1 (beaten by four)."""
    qrels, run = _frames(
        [("q1", "d1", 1)],
        [("q1", f"d{i}", s) for i, s in enumerate([3.0, 2.0, 2.0, 2.0, 1.0])],
    )
    conv = parse("nDCG@2").conventions(DEFAULT)
    assert len(encode(qrels, run, conv, ranking=False, depth=2).grade) == 4
    assert len(encode(qrels, run, conv, ranking=False).grade) == 5


def test_unjudged_dropped_before_ranking_is_never_cut():
    conv = DEFAULT.with_(unjudged="drop")
    assert required_depth([parse("nDCG@10")], conv) is None
    qrels, run = _frames([("q1", "d1", 1)], [("q1", "d1", 1.0)])
    with pytest.raises(AssertionError):
        encode(qrels, run, conv, depth=10)
