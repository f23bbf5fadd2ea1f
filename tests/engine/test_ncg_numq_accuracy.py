"""NCG, NumQ and Accuracy on inputs worked by hand.

Judgments of query ``1``: a 3, b 2, c 1, d 0; the run returns d, c, a, x (x unjudged), scores 4 to 1.

- NCG@3, linear gain: the top three are worth 0 + 1 + 3 = 4, the ideal's top three 3 + 2 + 1 = 6: 2/3.
  Exponential gain (2^g - 1): 0 + 1 + 7 = 8 over 7 + 3 + 1 = 11. NCG without a cutoff, linear: 4 / 6 as
  well (the ideal holds three documents worth anything, x is worth 0).
- Accuracy (rel=1): relevant c, a; not d, x. d is above c and a, x above none: S = 2, N R = 2 x 2, so
  1 - 2/4 = 0.5. Accuracy@2: d, c: S = 1, N R = 1: 0. Accuracy(rel=3): relevant a; d and c above it,
  x below: S = 2, N = 3: 1 - 2/3.
- Query ``2`` (judged, not in the run): NumQ counts it as 1 (an empty ranking is scored) and NCG is 0
  there; the mean of NumQ under counts=sum is 2.
"""

from __future__ import annotations

import math

import pytest

from qrelkit import Conventions, Qrels, Run, evaluate


@pytest.fixture
def inputs() -> tuple[Qrels, Run]:
    qrels = Qrels.from_dict({"1": {"a": 3, "b": 2, "c": 1, "d": 0}, "2": {"e": 1}})
    run = Run.from_dict({"1": {"d": 4.0, "c": 3.0, "a": 2.0, "x": 1.0}})
    return qrels, run


def test_ncg(inputs):
    res = evaluate(
        *inputs, ["NCG(gain=linear)@3", "NCG(gain=exponential)@3", "NCG(gain=linear)"], Conventions()
    )
    assert res.values("NCG(gain=linear)@3") == {"1": 4 / 6, "2": 0.0}
    assert res.values("NCG(gain=exponential)@3") == {"1": 8 / 11, "2": 0.0}
    assert res.values("NCG(gain=linear)")["1"] == 4 / 6


def test_accuracy(inputs):
    res = evaluate(
        *inputs, ["Accuracy", "Accuracy@2", "Accuracy(rel=3)"], Conventions(missing_queries="skip")
    )
    assert res.values("Accuracy") == {"1": 0.5}
    assert res.values("Accuracy@2") == {"1": 0.0}
    assert res.values("Accuracy(rel=3)") == {"1": 1 - 2 / 3}


def test_accuracy_of_a_tied_block_under_averaged_ties():
    """a (relevant) first, then c (relevant) and d (not) tied. Without a cutoff: a above d is right; c and
    d are either way, so S is 0 or 1 for N R = 1 x 2: 1 or 1/2, 3/4 on average. Accuracy@2 takes one of
    the tied pair: with c there is no non-relevant document within 2, so the value is undefined for that
    ordering, and the expectation is undefined (no_relevant=skip: left out)."""
    qrels = Qrels.from_dict({"1": {"a": 1, "c": 1, "d": 0}})
    run = Run.from_dict({"1": {"a": 2.0, "c": 1.0, "d": 1.0}})
    res = evaluate(qrels, run, ["Accuracy", "Accuracy@2"], Conventions(no_relevant="skip"))
    assert res.values("Accuracy")["1"] == 0.75
    assert math.isnan(res.values("Accuracy@2")["1"])


def test_numq_counts_every_scored_query(inputs):
    res = evaluate(*inputs, ["NumQ"], Conventions(counts="sum"))
    assert res.values("NumQ") == {"1": 1.0, "2": 1.0}
    assert res.mean("NumQ") == 2.0
