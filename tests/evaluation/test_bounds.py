"""Judgment bounds by hand: two queries, unjudged documents at ranks 1 and 3 of the first and at rank 3 of
the second, nDCG@3, P@3, R@3 and AP under the default conventions (gain 2^g - 1, relevant from grade 1).

Query 1 judges d1=2, d2=1, d5=1 and the run ranks u1 (unjudged), d1, u3 (unjudged), d2. Query 2 judges
e1=1, e2=0 and the run ranks e1, e2, e3 (unjudged). The highest grade in the judgments is 2 (gain 3).
"""

from __future__ import annotations

import math

import pytest

from qrelkit.data.values import Qrels, Run
from qrelkit.evaluation.bounds import judgment_bounds, top_grade_of, unjudged_within
from qrelkit.measures.conventions import DEFAULT

L3 = math.log2(3)

QRELS = {"q1": {"d1": 2, "d2": 1, "d5": 1}, "q2": {"e1": 1, "e2": 0}}
RUN = {"q1": {"u1": 10.0, "d1": 9.0, "u3": 8.0, "d2": 7.0}, "q2": {"e1": 3.0, "e2": 2.0, "e3": 1.0}}

# As 0. q1: gains 0, 3, 0 in the top 3; the ideal 3, 1, 1. q2: gains 1, 0, 0; the ideal 1.
NDCG_ZERO = ((3 / L3) / (3 + 1 / L3 + 1 / 2) + 1.0) / 2
# As grade 2. q1: u1, d1, u3 all gain 3, as is the ideal: 1. q2: gains 1, 0, 3; ideal 3, 1, 0.
NDCG_TOP = (1.0 + (1 + 3 / 2) / (3 + 1 / L3)) / 2
P_ZERO, P_TOP = (1 / 3 + 1 / 3) / 2, (3 / 3 + 2 / 3) / 2
R_ZERO, R_TOP = (1 / 3 + 1 / 1) / 2, (3 / 5 + 2 / 2) / 2  # q1's R grows from 3 to 5, q2's from 1 to 2
# AP as 0: q1 relevant at ranks 2 and 4 (precisions 1/2, 2/4) over R = 3; q2 at rank 1 over R = 1.
# As grade 2 (every retrieved unjudged document, AP has no cutoff): q1 ranks 1-4 all relevant over R = 5;
# q2 ranks 1 and 3 (precisions 1, 2/3) over R = 2.
AP_ZERO, AP_TOP = ((1 / 2 + 2 / 4) / 3 + 1.0) / 2, (4 / 5 + (1 + 2 / 3) / 2) / 2


@pytest.fixture(scope="module")
def bounds():
    return judgment_bounds(
        Qrels.from_dict(QRELS), Run.from_dict(RUN, name="sys"), ["nDCG@3", "P@3", "R@3", "AP", "Judged@3"]
    )


@pytest.mark.parametrize(
    ("measure", "zero", "top"),
    [
        ("nDCG@3", NDCG_ZERO, NDCG_TOP),
        ("P@3", P_ZERO, P_TOP),
        ("R@3", R_ZERO, R_TOP),
        ("AP", AP_ZERO, AP_TOP),
    ],
)
def test_hand_arithmetic(bounds, measure, zero, top):
    b = bounds.get("sys", measure)
    assert b.zero == pytest.approx(zero, abs=1e-12)
    assert b.top == pytest.approx(top, abs=1e-12)
    assert (b.low, b.high) == (min(b.zero, b.top), max(b.zero, b.top))
    assert b.unjudged == 3  # u1, u3 and e3, within 3 and within the whole run alike


def test_judged_beside_each_measure(bounds):
    b = bounds.get("sys", "nDCG@3")
    assert (b.judged_measure, b.k) == ("Judged(cutoff_denominator=returned)@3", 3)
    assert b.judged == pytest.approx((1 / 3 + 2 / 3) / 2)
    ap = bounds.get("sys", "AP")
    assert (ap.judged_measure, ap.k) == ("Judged(cutoff_denominator=returned)@4", None)  # q1 returns 4
    assert ap.judged == pytest.approx((2 / 4 + 2 / 3) / 2)


def test_judged_divides_by_the_documents_returned():
    """A run returning 2 documents, both judged, is judged 1.0 at 5 (2 of the 2 returned), where the
    conventions' Judged@5 gives 2/5."""
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 0}})
    b = judgment_bounds(qrels, Run.from_dict({"q": {"a": 2.0, "b": 1.0}}), ["P@5"]).get("run", "P@5")
    assert b.judged == 1.0
    assert b.zero == b.top == 1 / 5


def test_judged_itself_is_not_bounded(bounds):
    assert bounds.get("sys", "Judged@3") is None
    assert list(bounds.runs["sys"]) == ["nDCG@3", "P(rel=1)@3", "R(rel=1)@3", "AP(rel=1)"]


def test_ndcg_top_can_be_lower_than_zero():
    """q2 alone: a perfect ranking (1.0) followed by an unjudged document at rank 3; its judgments' highest
    grade is 1, and as grade 1 the ideal gains more (1/log2 3 at rank 2) than the DCG (1/2 at rank 3)."""
    one = judgment_bounds(Qrels.from_dict({"q2": QRELS["q2"]}), Run.from_dict({"q2": RUN["q2"]}), ["nDCG@3"])
    b = one.get("run", "nDCG@3")
    assert b.zero == 1.0
    assert b.top == pytest.approx((1 + 1 / 2) / (1 + 1 / L3))
    assert (b.low, b.high) == (b.top, 1.0)


def test_top_grade_from_rubric_scale():
    qrels = Qrels.from_dict(QRELS)
    assert top_grade_of(qrels) == (2, "qrels")
    scaled = Qrels(qrels.frame, qrels.fingerprint, qrels.name, (0, 1, 2, 3), None, qrels.meta)
    assert top_grade_of(scaled) == (3, "rubric")
    # as grade 3 (gain 7): q1 ranks gains 7, 3, 7 against the ideal 7, 7, 3; q2 ranks 1, 0, 7 against 7, 1, 0
    b = judgment_bounds(scaled, Run.from_dict(RUN), ["nDCG@3"]).get("run", "nDCG@3")
    q1 = (7 + 3 / L3 + 7 / 2) / (7 + 7 / L3 + 3 / 2)
    q2 = (1 + 7 / 2) / (7 + 1 / L3)
    assert b.top == pytest.approx((q1 + q2) / 2)


def test_tied_block_at_the_cutoff_counts_whole():
    """Scores 5, 4, 4, 4: within 2 are the documents fewer than 2 others beat, the whole tied block."""
    qrels = Qrels.from_dict({"q": {"a": 1}})
    run = Run.from_dict({"q": {"a": 5.0, "b": 4.0, "c": 4.0, "d": 4.0, "e": 3.0}})
    assert unjudged_within(qrels, run, 2).get_column("doc_id").to_list() == ["b", "c", "d"]
    assert unjudged_within(qrels, run, 1).height == 0
    assert unjudged_within(qrels, run, None).get_column("doc_id").to_list() == ["b", "c", "d", "e"]


def test_negative_grade_is_judged_and_queries_without_judgments_untouched():
    qrels = Qrels.from_dict({"q": {"a": 1, "b": -1}})
    run = Run.from_dict({"q": {"b": 2.0, "a": 1.0}, "other": {"x": 1.0}})
    assert unjudged_within(qrels, run, 10).height == 0
    b = judgment_bounds(qrels, run, ["P@2"], DEFAULT).get("run", "P@2")
    assert b.zero == b.top == 0.5


def test_a_measures_own_unjudged_drop_is_bounded_as_zero(bounds):
    """nDCG(unjudged=drop)@3 as 0 is nDCG@3 as 0 (dropping u1 and u3 would lift d1 and d2 instead), and as
    the top grade every document within 3 is judged, so both sides are the hand values of nDCG@3."""
    b = judgment_bounds(
        Qrels.from_dict(QRELS), Run.from_dict(RUN, name="sys"), ["nDCG(unjudged=drop)@3"]
    ).get("sys", "nDCG(unjudged=drop)@3")
    assert b.zero == pytest.approx(NDCG_ZERO, abs=1e-12)
    assert b.top == pytest.approx(NDCG_TOP, abs=1e-12)
    assert b.measure == "nDCG(unjudged=drop)@3"


# One query judging a=1 and z=1 (z not retrieved); the run scores a 2.0 and the unjudged u1 (line 2) and
# u2 (line 3) 1.0 each: a tied block straddling the cutoff 2.
TIE_QRELS = {"q": {"a": 1, "z": 1}}
TIE_RUN = {"q": {"a": 2.0, "u1": 1.0, "u2": 1.0}}


@pytest.mark.parametrize(
    ("ties", "raised", "r_top"),
    [
        # the ranking a, u2, u1: only u2 is within 2; R grows from 2 to 3 and the top 2 holds a, u2
        ("docid_desc", ["u2"], 2 / 3),
        ("docid_asc", ["u1"], 2 / 3),
        ("file_order", ["u1"], 2 / 3),
        # any order of the block can put either within 2: both raised, R = 4, the top 2 holds a and one u
        ("average", ["u1", "u2"], 2 / 4),
    ],
)
def test_cut_follows_the_tie_convention(ties, raised, r_top):
    qrels, run = Qrels.from_dict(TIE_QRELS), Run.from_dict(TIE_RUN)
    pairs = unjudged_within(qrels, run, 2, ties=ties)
    assert pairs.get_column("doc_id").to_list() == raised
    b = judgment_bounds(qrels, run, [f"R(ties={ties})@2"]).get("run", f"R(ties={ties})@2")
    assert (b.zero, b.unjudged) == (1 / 2, len(raised))
    assert b.top == pytest.approx(r_top, abs=1e-12)
    conv = DEFAULT.with_(ties=ties)
    assert judgment_bounds(qrels, run, ["R@2"], conv).get("run", "R@2").top == pytest.approx(r_top, abs=1e-12)


def test_judged_is_averaged_over_the_queries_the_run_returns():
    """q1 returns a (judged) and u (not): 1/2 judged within 2; q2 is judged but the run lacks it. P@2 scores
    q2 0 (missing_queries=zero: (1/2 + 0) / 2 as 0, (2/2 + 0) / 2 with u raised), but q2 returns nothing
    to judge: judged is q1's 1/2, not (1/2 + 0) / 2. A run returning no judged query has nothing judged."""
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    b = judgment_bounds(qrels, Run.from_dict({"q1": {"a": 2.0, "u": 1.0}}), ["P@2"]).get("run", "P@2")
    assert (b.zero, b.top, b.judged) == (1 / 4, 1 / 2, 1 / 2)
    none = judgment_bounds(qrels, Run.from_dict({"q9": {"a": 1.0}}), ["P@2"]).get("run", "P@2")
    assert (none.zero, none.top, none.unjudged) == (0.0, 0.0, 0)
    assert math.isnan(none.judged)
