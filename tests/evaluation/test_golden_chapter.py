"""The chapter's worked example, computed by hand below and asserted exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from math import log2

import pytest

from qrelkit import Qrels, Run, evaluate, explain
from qrelkit.measures.conventions import Conventions

from ..conftest import FIXTURES

QRELS = FIXTURES / "chapter" / "qrels.txt"
RUN = FIXTURES / "chapter" / "run.txt"

# Grades in returned order: [1, 3, 0, 2, 0, unjudged, 2, unjudged, unjudged, 1]; discount 1/log2(rank + 1).
HAND_DCG = 1 / log2(2) + 7 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)
# Ideal: 3, 2, 2, 1, 1
HAND_IDCG = 7 / log2(2) + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 1 / log2(6)
# Linear gain: the same positions with gains 1, 3, 2, 2, 1 and ideal 3, 2, 2, 1, 1
HAND_DCG_LINEAR = 1 / log2(2) + 3 / log2(3) + 2 / log2(5) + 2 / log2(8) + 1 / log2(11)
HAND_IDCG_LINEAR = 3 / log2(2) + 2 / log2(3) + 2 / log2(4) + 1 / log2(5) + 1 / log2(6)
# The regrade: the policy document at rank 1 becomes 3, the procedure at rank 2 becomes 2.
HAND_DCG_REGRADE = 7 / log2(2) + 3 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)
HAND_IDCG_REGRADE = 7 / log2(2) + 3 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6)


@pytest.fixture(scope="module")
def chapter():
    from qrelkit import read_qrels, read_run

    return read_qrels(QRELS), read_run(RUN)


def test_hand_arithmetic_matches_the_chapter_rounding():
    assert round(HAND_DCG, 3) == 7.998
    assert round(HAND_IDCG, 3) == 11.210
    assert round(HAND_DCG / HAND_IDCG, 3) == 0.713
    # The chapter prints 0.951 for the regrade; exact arithmetic gives 11.47388 / 12.07167 = 0.95048.
    assert round(HAND_DCG_REGRADE / HAND_IDCG_REGRADE, 4) == 0.9505


def test_chapter_values(chapter):
    qrels, run = chapter
    res = evaluate(qrels, run, ["DCG@10", "IDCG@10", "nDCG@10", "R@10"])
    assert res.mean("DCG@10") == pytest.approx(HAND_DCG, abs=1e-12)
    assert res.mean("IDCG@10") == pytest.approx(HAND_IDCG, abs=1e-12)
    assert res.mean("nDCG@10") == pytest.approx(HAND_DCG / HAND_IDCG, abs=1e-12)
    assert res.mean("R@10") == 1.0


def test_linear_gain_value(chapter):
    qrels, run = chapter
    res = evaluate(qrels, run, ["nDCG(gain=linear)@10"])
    assert res.mean("nDCG(gain=linear)@10") == pytest.approx(HAND_DCG_LINEAR / HAND_IDCG_LINEAR, abs=1e-12)
    assert round(HAND_DCG_LINEAR / HAND_IDCG_LINEAR, 4) == 0.7747  # every peer's default, per peers.md
    same = evaluate(qrels, run, ["nDCG@10"], Conventions(gain="linear")).mean("nDCG@10")
    assert same == res.mean("nDCG(gain=linear)@10")


def test_regrade_moves_ndcg_not_recall(chapter):
    qrels, run = chapter
    grades = qrels.to_dict()
    grades["key-rotation"]["policy/key-lifetime"] = 3
    grades["key-rotation"]["api-keys/rotation"] = 2
    second = Qrels.from_dict(grades)
    a = evaluate(qrels, run, ["nDCG@10", "R@10"])
    b = evaluate(second, run, ["nDCG@10", "R@10"])
    assert a.mean("R@10") == b.mean("R@10") == 1.0
    assert b.mean("nDCG@10") == pytest.approx(HAND_DCG_REGRADE / HAND_IDCG_REGRADE, abs=1e-12)
    swing = HAND_DCG_REGRADE / HAND_IDCG_REGRADE - HAND_DCG / HAND_IDCG
    assert b.mean("nDCG@10") - a.mean("nDCG@10") == pytest.approx(swing, abs=1e-12)
    assert round(swing, 3) == 0.237  # the chapter says 0.238 from rounded operands: arithmetic says 0.2371


def test_explain_cli_prints_the_hand_calculation():
    out = subprocess.run(
        [sys.executable, "-m", "qrelkit", "explain", str(QRELS), str(RUN), "--query", "key-rotation"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for figure in ("7.998", "11.210", "0.713414", "4.417", "55.2%", "1.292", "1.893", "0.289"):
        assert figure in out, figure
    assert "R@10 = 5 of 5" in out
    assert "no tied scores" in out


def test_explain_api_rows(chapter):
    qrels, run = chapter
    ex = explain(qrels, run, "key-rotation", "nDCG@10")
    assert [r.grade for r in ex.rows] == [1, 3, 0, 2, 0, None, 2, None, None, 1]
    assert ex.rows[1].contribution == pytest.approx(7 / log2(3), abs=1e-12)
    assert [r.grade for r in ex.ideal] == [3, 2, 2, 1, 1]
    assert ex.ndcg == pytest.approx(HAND_DCG / HAND_IDCG, abs=1e-12)
    assert ex.relevant_never_retrieved == () and ex.relevant_below_cutoff == ()


def test_explain_shows_tie_blocks_and_missed_documents():
    qrels = Qrels.from_dict({"q": {"a": 3, "b": 1, "c": 0, "z": 2}})
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}})
    ex = explain(qrels, run, "q", "nDCG@2")
    assert len(ex.tie_blocks) == 1 and ex.tie_blocks[0].doc_ids == ("a", "b", "c")
    # expected gain of each of the three tied ranks is (7 + 1 + 0) / 3
    assert ex.rows[0].gain == pytest.approx(8 / 3, abs=1e-12)
    assert ex.dcg == pytest.approx(8 / 3 * (1 + 1 / log2(3)), abs=1e-12)
    assert ex.relevant_never_retrieved == (("z", 2),)
    # the tied block straddles the cutoff; its rows are listed in file order, so a and b sit at ranks 1-2
    assert ex.relevant_below_cutoff == ()


def test_explain_json_carries_provenance():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "qrelkit",
            "explain",
            str(QRELS),
            str(RUN),
            "--query",
            "key-rotation",
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["conventions"]["gain"] == "exponential"
    assert len(data["qrels_fingerprint"]["sha256"]) == 64 and data["tool"]["name"] == "qrelkit"
