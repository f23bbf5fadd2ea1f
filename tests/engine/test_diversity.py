"""Diversity judgments and measures: the reader's errors, the grammar, golden values from hand arithmetic,
and ``qrelkit eval --diversity`` end to end (one error line, exit 1 for bad input, exit 2 for bad usage)."""

from __future__ import annotations

import gzip
import json
import math

import polars as pl
import pytest

from qrelkit.data.values import diversity_qrels_from_frame
from qrelkit.errors import ConventionError, InputFormatError, MeasureSyntaxError, ValidationError
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_diversity_qrels, run_from_frame
from qrelkit.measures.conventions import Conventions
from qrelkit.measures.grammar import parse

from ..conftest import CLI

# Three subtopics A, B, C over five judged documents, and a run of five with one unjudged document (u1).
GOLD_QRELS = "q1 A d1 1\nq1 A d2 1\nq1 B d2 1\nq1 C d3 1\nq1 B d4 0\nq1 B d5 1\nq2 A x 0\n"
GOLD_RUN = "q1 Q0 d1 1 5 sys\nq1 Q0 d4 2 4 sys\nq1 Q0 d2 3 3 sys\nq1 Q0 u1 4 2 sys\nq1 Q0 d3 5 1 sys\nq2 Q0 x 1 1 sys\n"
LOG2 = math.log2

# alpha-DCG@5 (alpha = 0.5) of the run d1 d4 d2 u1 d3:
#   rank 1 d1 {A}: A new -> 1 / log2(2)          = 1
#   rank 2 d4 {}  (judged, grade 0)               = 0
#   rank 3 d2 {A,B}: A seen once 0.5, B new 1     = 1.5 / log2(4) = 0.75
#   rank 4 u1 unjudged                            = 0
#   rank 5 d3 {C}: new                            = 1 / log2(6)
RUN_ADCG = 1 + 1.5 / LOG2(4) + 1 / LOG2(6)
# ndeval's greedy ideal over d5 d3 d2 d1 (descending ids; the first of equal gains is kept):
#   rank 1: d2 {A,B} gain 2 (the others 1)                                  -> 2 / log2(2)
#   rank 2: d3 {C} gain 1; d5 {B} and d1 {A} 0.5                            -> 1 / log2(3)
#   rank 3: d5 and d1 both 0.5: d5 comes first in descending order          -> 0.5 / log2(4)
#   rank 4: d1 0.5                                                          -> 0.5 / log2(5)
IDEAL_ADCG = 2 + 1 / LOG2(3) + 0.5 / LOG2(4) + 0.5 / LOG2(5)
# ERR-IA@5: per subtopic, 0.5 (0.5)^(relevant above) / rank, summed; divided by max@5 = sum 0.5^i / i
#   A: d1 at 1, d2 at 3 -> 0.5/1 + 0.25/3;  B: d2 at 3 -> 0.5/3;  C: d3 at 5 -> 0.5/5
MAX5 = 0.5 + 0.25 / 2 + 0.125 / 3 + 0.0625 / 4 + 0.03125 / 5
GOLD_ERR_IA = ((0.5 + 0.25 / 3) + 0.5 / 3 + 0.5 / 5) / 3 / MAX5


def _files(tmp_path, qrels=GOLD_QRELS, run=GOLD_RUN):
    q, r = tmp_path / "div.qrels", tmp_path / "run.txt"
    q.write_text(qrels)
    r.write_text(run)
    return q, r


_cli = CLI


def test_golden_values_by_hand(tmp_path):
    q, r = _files(tmp_path)
    res = evaluate_files(q, [r], ["alpha_nDCG@5", "ERR_IA@5"], diversity=True)
    assert res.value("alpha_nDCG@5", "q1") == pytest.approx(RUN_ADCG / IDEAL_ADCG, abs=1e-12)
    assert res.value("ERR_IA@5", "q1") == pytest.approx(GOLD_ERR_IA, abs=1e-12)
    # q2 has no relevant subtopic: no ideal; no_relevant=zero scores it 0 and counts it
    assert res.value("alpha_nDCG@5", "q2") == 0.0
    skipped = evaluate_files(q, [r], ["alpha_nDCG@5"], Conventions(no_relevant="skip"), diversity=True)
    assert math.isnan(skipped.value("alpha_nDCG@5", "q2"))


def test_greedy_ideal_takes_the_greatest_document_id_among_equal_gains(tmp_path):
    # a {2,3}, b {0,3}, c {1,2}; every first gain is 2. Descending ids take c first, then b (gain 2; a has
    # 1.5), then a (0.5 + 0.5): 2 + 2/log2(3) + 1/log2(4). Taking a first (ascending ids) would give
    # 2 + 1.5/log2(3) + 1.5/log2(4), smaller. The run a, b, c scores 2 + 1.5/log2(3) + 1.5/log2(4).
    qrels = "q 2 a 1\nq 3 a 1\nq 0 b 1\nq 3 b 1\nq 1 c 1\nq 2 c 1\n"
    run = "q Q0 a 1 3 s\nq Q0 b 2 2 s\nq Q0 c 3 1 s\n"
    q, r = _files(tmp_path, qrels, run)
    got = evaluate_files(q, [r], ["alpha_nDCG@3"], diversity=True).value("alpha_nDCG@3", "q")
    ideal = 2 + 2 / LOG2(3) + 1 / LOG2(4)
    assert got == pytest.approx((2 + 1.5 / LOG2(3) + 1.5 / LOG2(4)) / ideal, abs=1e-12)


def test_averaged_ties_are_the_mean_over_both_orders(tmp_path):
    # d3 {A} alone at rank 1, then d1 {A} and d2 {B} tied. Order d1 d2: 1 + 0.5/log2(3) + 1/log2(4);
    # order d2 d1: 1 + 1/log2(3) + 0.5/log2(4). Ideal (d3, d2, d1): 1 + 1/log2(3) + 0.5/log2(4).
    qrels = "q A d1 1\nq B d2 1\nq A d3 1\n"
    run = "q Q0 d3 1 2 s\nq Q0 d1 2 1 s\nq Q0 d2 3 1 s\n"
    q, r = _files(tmp_path, qrels, run)
    first = 1 + 0.5 / LOG2(3) + 1 / LOG2(4)
    second = 1 + 1 / LOG2(3) + 0.5 / LOG2(4)
    res = evaluate_files(q, [r], ["alpha_nDCG@3"], diversity=True)
    assert res.value("alpha_nDCG@3", "q") == pytest.approx((first + second) / 2 / second, abs=1e-12)
    ordered = evaluate_files(q, [r], ["alpha_nDCG(ties=docid_asc)@3"], diversity=True)
    assert ordered.value("alpha_nDCG(ties=docid_asc)@3", "q") == pytest.approx(first / second, abs=1e-12)


def test_unjudged_drop_removes_unjudged_documents_before_ranking(tmp_path):
    q, r = _files(tmp_path)
    res = evaluate_files(q, [r], ["alpha_nDCG(unjudged=drop)@5"], diversity=True)
    # d1 d4 d2 d3 (u1 dropped): d3 rises to rank 4
    expected = (1 + 1.5 / LOG2(4) + 1 / LOG2(5)) / IDEAL_ADCG
    assert res.value("alpha_nDCG(unjudged=drop)@5", "q1") == pytest.approx(expected, abs=1e-12)


def test_grades_are_binary_at_rel(tmp_path):
    q, r = _files(tmp_path, "q A d1 3\nq A d2 1\n", "q Q0 d2 1 2 s\nq Q0 d1 2 1 s\n")
    res = evaluate_files(q, [r], ["alpha_nDCG@2", "alpha_nDCG(rel=2)@2"], diversity=True)
    # rel=1: both relevant to A; any order gives 1 + 0.5/log2(3): 1.0
    assert res.value("alpha_nDCG@2", "q") == pytest.approx(1.0, abs=1e-12)
    # rel=2: only d1, at rank 2: (1/log2(3)) / 1
    assert res.value("alpha_nDCG(rel=2)@2", "q") == pytest.approx(1 / LOG2(3), abs=1e-12)


def test_measure_grammar_and_other_tools_names():
    assert str(parse("alpha_nDCG(alpha=0.5)@20")) == "alpha_nDCG(rel=1,alpha=0.5)@20"
    assert parse("alpha_nDCG@20") == parse("alpha-nDCG@20")  # ndeval's spelling
    assert parse("ERR-IA@20") == parse("ERR_IA@20")
    assert (
        str(parse("alpha_nDCG(judged_only=True)@20")) == "alpha_nDCG(rel=1,unjudged=drop)@20"
    )  # ir_measures
    for m in ["alpha_nDCG(rel=1,alpha=0.25)@5", "ERR_IA(rel=2,ties=docid_desc)@10"]:
        assert str(parse(m)) == m
    for bad in ["alpha_nDCG", "ERR_IA", "alpha_nDCG(alpha=1.5)@5", "ERR_IA(alpha=0.5)@5"]:
        with pytest.raises(MeasureSyntaxError):
            parse(bad)


def test_diversity_and_ordinary_measures_are_not_mixed(tmp_path):
    q, r = _files(tmp_path)
    with pytest.raises(ValidationError, match="nDCG@10 reads one grade per"):
        evaluate_files(q, [r], ["alpha_nDCG@5", "nDCG@10"], diversity=True)
    ordinary = tmp_path / "adhoc.qrels"
    ordinary.write_text("q1 0 d1 1\n")
    with pytest.raises(ValidationError, match="needs diversity judgments"):
        evaluate_files(ordinary, [r], ["ERR_IA@5"])


def test_optimistic_ties_are_refused():
    qrels = diversity_qrels_from_frame(
        pl.DataFrame({"query_id": ["q"], "subtopic": ["A"], "doc_id": ["d"], "grade": [1]})
    )
    run = run_from_frame(pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]}))
    with pytest.raises(ConventionError, match="no optimistic tie order"):
        evaluate(qrels, run, ["alpha_nDCG@5"], Conventions(ties="optimistic"))


@pytest.mark.parametrize(
    ("content", "line", "text"),
    [
        ("q A d1 1\nq A d2 1 extra\n", 2, "line has 5 fields"),
        ("q A d1 1\nq B d2 x\n", 2, "grade 'x' is not an integer"),
        ("q A d1 1\nq B d1 1\nq A d1 2\n", 3, "appears more than once for query 'q', subtopic 'A'"),
        ("q A d1 1\nq A\u00a0B d2 1\n", 2, "subtopic"),
        ("q A d1 -0\n", 1, "negative zero"),
    ],
)
def test_reader_errors_name_file_line_and_fix(tmp_path, content, line, text):
    path = tmp_path / "div.qrels"
    path.write_text(content)
    with pytest.raises((InputFormatError, ValidationError)) as info:
        read_diversity_qrels(path)
    assert text in str(info.value)
    assert info.value.line == line
    assert str(path) in str(info.value)


def test_reader_takes_gzip_and_the_duplicate_policy(tmp_path):
    path = tmp_path / "div.qrels.gz"
    path.write_bytes(gzip.compress(b"q A d1 1\nq A d1 0\nq B d1 2\n"))
    with pytest.raises(ValidationError, match="--on-duplicate"):
        read_diversity_qrels(path)
    kept = read_diversity_qrels(path, on_duplicate="max")
    assert sorted(kept.frame.select("subtopic", "grade").rows()) == [("A", 1), ("B", 2)]
    assert kept.meta["kind"] == "diversity" and kept.meta["duplicates_removed"] == 1


def test_cli_reaches_the_measures_with_provenance(tmp_path):
    q, r = _files(tmp_path)
    out = tmp_path / "out.json"
    result = _cli("eval", "--diversity", q, r, "-o", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert [m["name"] for m in doc["measures"]] == ["alpha_nDCG(rel=1)@20", "ERR_IA(rel=1)@20"]
    assert doc["qrels"]["kind"] == "diversity"
    assert len(doc["qrels"]["fingerprint"]["sha256"]) == 64
    assert doc["conventions"]["ties"] == "average"
    assert "alpha=0.5" in doc["measures"][0]["full"]


def test_cli_errors(tmp_path):
    q, r = _files(tmp_path)
    mixed = _cli("eval", "--diversity", q, r, "-m", "nDCG@10")
    assert mixed.exit_code == 1 and "reads one grade per" in mixed.output
    missing = _cli("eval", q, r, "-m", "alpha_nDCG@20")
    assert missing.exit_code == 1 and "--diversity" in missing.output
    spark = _cli("eval", "--diversity", "--engine", "spark", q, r)
    assert spark.exit_code == 2
    bad = tmp_path / "bad.qrels"
    bad.write_text("q A d1 1\nq A d2\n")
    broken = _cli("eval", "--diversity", bad, r)
    assert broken.exit_code == 1 and f"{bad}:2" in broken.output.replace(" line ", ":")


def test_a_rubric_scale_bounds_diversity_grades(tmp_path):
    q, r = _files(tmp_path, "q A d1 1\nq B d1 5\n", "q Q0 d1 1 1 s\n")
    with pytest.raises(ValidationError, match="outside the rubric's scale") as info:
        evaluate_files(q, [r], ["ERR_IA@5"], diversity=True, scale=[0, 1, 2])
    assert info.value.line == 2
