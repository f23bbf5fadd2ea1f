"""The C/W/L family on inputs worked by hand.

Judgments of query ``1``: a 3, b 2, c 1, d 0, with max_grade 3, so gains a 1, b 2/3, c 1/3, d 0; the run
returns d, c, a, x (x unjudged: gain 0), scores 4 to 1. W_i = prod_{j<i} C_j / sum over ranks of the same.

- BPM@3 (T = 1): the gain so far is 0, 1/3, 4/3; the user goes on from ranks 1 and 2 (gain below 1, rank
  below 3) and stops at 3: W = 1/3 each, so (0 + 1/3 + 1) / 3 = 4/9.
- NERR8@3: C_1 = 1 - 0 = 1, C_2 = 1 - 1/3 = 2/3, C_3 = 0: reach 1, 1, 2/3 (sum 8/3), W = 3/8, 3/8, 1/4:
  3/8 x 1/3 + 1/4 x 1 = 3/8.
- depth 2 (the ranking cut at two ranks, d and c): INSQ(T=1): C_1 = ((1 + 2 - 1) / (1 + 2))^2 = 4/9, W =
  9/13, 4/13: 4/13 x 1/3 = 4/39. INST(T=1): T - G_1 = 1, C_1 = ((1 + 1 + 1 - 1) / (1 + 1 + 1))^2 = 4/9 as
  well: 4/39. NERR10(p=0.5): C_1 = 0.5 (1 - 0): W = 2/3, 1/3: 1/9.
- SDCG@3: C_1 = log2 2 / log2 3, C_2 = log2 3 / log2 4: reach 1, 1 / log2 3, 1/2 (the DCG discounts), so
  (1/3 / log2 3 + 1/2) / (1 + 1 / log2 3 + 1/2).
"""

from __future__ import annotations

import math

import pytest

from qrelkit import Conventions, Qrels, Run, evaluate
from qrelkit.errors import ConventionError


@pytest.fixture
def inputs() -> tuple[Qrels, Run]:
    qrels = Qrels.from_dict({"1": {"a": 3, "b": 2, "c": 1, "d": 0}})
    run = Run.from_dict({"1": {"d": 4.0, "c": 3.0, "a": 2.0, "x": 1.0}})
    return qrels, run


def _value(inputs: tuple[Qrels, Run], measure: str) -> float:
    return evaluate(*inputs, [measure], Conventions(max_grade=3)).values(measure)["1"]


def test_bpm_and_nerr8_by_hand(inputs):
    assert _value(inputs, "BPM@3") == pytest.approx(4 / 9, rel=1e-15)
    assert _value(inputs, "NERR8@3") == pytest.approx(3 / 8, rel=1e-15)


def test_insq_inst_nerr10_over_two_ranks(inputs):
    assert _value(inputs, "INSQ(depth=2)") == pytest.approx(4 / 39, rel=1e-15)
    assert _value(inputs, "INST(depth=2)") == pytest.approx(4 / 39, rel=1e-15)
    assert _value(inputs, "NERR10(p=0.5,depth=2)") == pytest.approx(1 / 9, rel=1e-15)


def test_sdcg_by_hand(inputs):
    l3 = math.log2(3)
    assert _value(inputs, "SDCG@3") == pytest.approx((1 / 3 / l3 + 1 / 2) / (1 + 1 / l3 + 1 / 2), rel=1e-15)


def test_averaged_ties_take_the_mean_over_orderings():
    """a (gain 1) and d (gain 0) tied. NERR8@2: a first stops the user at once (C_1 = 0): 1; d first,
    C_1 = 1, W = 1/2 each: 1/2. The mean: 3/4."""
    qrels = Qrels.from_dict({"1": {"a": 3, "d": 0}})
    run = Run.from_dict({"1": {"a": 1.0, "d": 1.0}})
    res = evaluate(qrels, run, ["NERR8@2"], Conventions(max_grade=3, ties="average"))
    assert res.values("NERR8@2")["1"] == 0.75


def test_a_grade_above_max_grade_is_refused(inputs):
    with pytest.raises(ConventionError, match="max_grade"):
        evaluate(*inputs, ["INST"], Conventions(max_grade=2))


def test_cwl_eval_profile_p_rr_ap_by_hand(inputs):
    """Under --profile cwl_eval with max_grade=3 (the same gains, d 0, c 1/3, a 1, x 0): P@2 is the mean
    gain of the top two, 1/6; RR reads on from d (no gain) and stops at c: W = 1/2 each, 1/6; AP's
    C_i = S_{i+1} / S_i with S_i the sum of g_j / j for j >= i: S = 1/2, 1/2, 1/3, 0, so C = 1, 2/3, 0,
    reach 1, 1, 2/3 (sum 8/3), W = 3/8, 3/8, 1/4: 3/8 x 1/3 + 1/4 x 1 = 3/8."""
    conv = Conventions.from_profile("cwl_eval").with_(max_grade=3)
    res = evaluate(*inputs, ["P@2", "RR", "AP"], conv)
    assert res.values("P(rel=1)@2")["1"] == pytest.approx(1 / 6, rel=1e-15)
    assert res.values("RR(rel=1)")["1"] == pytest.approx(1 / 6, rel=1e-15)
    assert res.values("AP(rel=1)")["1"] == pytest.approx(3 / 8, rel=1e-15)


def test_cwl_eval_profile_refuses_what_cwl_eval_cannot_compute(inputs):
    conv = Conventions.from_profile("cwl_eval")
    with pytest.raises(ConventionError, match="max_grade"):  # grade 3 is a gain of 3: cwl_eval refuses it
        evaluate(*inputs, ["P@10"], conv)
    conv = conv.with_(max_grade=3)
    with pytest.raises(ConventionError, match="cutoff"):
        evaluate(*inputs, ["P"], conv)
    with pytest.raises(ConventionError, match="whole ranking"):
        evaluate(*inputs, ["RR@10"], conv)


def test_a_large_tied_block_of_mixed_gains_is_refused_at_once():
    """Thirty tied documents of four grades have 30! / (8! 8! 7! 7!) orderings: far past the bound, so the
    kernel refuses (with the fix) instead of enumerating them."""
    grades = {f"d{i}": i % 4 for i in range(30)}
    qrels = Qrels.from_dict({"1": grades})
    run = Run.from_dict({"1": dict.fromkeys(grades, 1.0)})
    with pytest.raises(ConventionError, match="ties=docid_desc"):
        evaluate(qrels, run, ["INST"], Conventions(max_grade=3, ties="average"))
    value = evaluate(qrels, run, ["INST"], Conventions(max_grade=3, ties="docid_desc")).values("INST")["1"]
    assert 0 < value < 1
