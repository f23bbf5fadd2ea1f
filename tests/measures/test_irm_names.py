"""ir_measures' measure names parse to qrelkit's measures, and compute ir_measures' numbers under its profile."""

from __future__ import annotations

import pytest

from qrelkit.errors import MeasureSyntaxError
from qrelkit.measures.grammar import parse
from qrelkit.measures.irm_names import IRM_NAMES

SAME = {
    "P@10": "P(rel=1)@10",
    "nDCG@10": "nDCG@10",
    "Judged@10": "Judged@10",
    "R@100": "R(rel=1)@100",
    "RR@10": "RR(rel=1)@10",
    "AP": "AP(rel=1)",
    "AP@100": "AP(rel=1)@100",
    "NumRel": "NumRel(rel=1)",
    "NumRet": "NumRet",
    "Rprec": "Rprec(rel=1)",
    "P(rel=2)@5": "P(rel=2)@5",
    # ir_measures' aliases and parameters
    "MAP": "AP(rel=1)",
    "MRR@10": "RR(rel=1)@10",
    "NDCG@5": "nDCG@5",
    "RPrec": "Rprec(rel=1)",
    "Recall@100": "R(rel=1)@100",
    "Precision@5": "P(rel=1)@5",
    "NumRet(rel=1)": "NumRelRet(rel=1)",
    "NumRelRet": "NumRelRet(rel=1)",
    "nDCG(judged_only=True)@10": "nDCG(unjudged=drop)@10",
    "P(rel=2,judged_only=True)@5": "P(rel=2,unjudged=drop)@5",
    "AP(judged_only=False)": "AP(rel=1)",
    "nDCG(dcg='exp-log2')@10": "nDCG(gain=exponential)@10",
    "nDCG(dcg='log2')@10": "nDCG(gain=linear)@10",
    "nDCG(gains={0:0,1:1,2:3})@10": "nDCG(gain={0:0,1:1,2:3,else:grade})@10",
    "SetP(relative=True)": "SetRelP(rel=1)",
    "SetP(rel=2,relative=True)": "SetRelP(rel=2)",
    "SetP(relative=False)": "SetP(rel=1)",
    "Judged": "Judged",
    "ERR@10": "ERR@10",
    # the C/W/L family (ir_measures' cwl_eval provider): max_rel is qrelkit's max_grade
    "INST(T=3,max_rel=3)": "INST(T=3,max_grade=3)",
    "INSQ(max_rel=3)": "INSQ(max_grade=3)",
    "BPM(T=2,min_rel=0,max_rel=3)@10": "BPM(T=2,max_grade=3)@10",
    "NERR8(max_rel=3)@10": "NERR8(max_grade=3)@10",
    "NERR9(max_rel=3)@10": "NERR9(max_grade=3)@10",
    "NERR10(p=0.8,max_rel=3)": "NERR10(p=0.8,max_grade=3)",
    "NERR11(max_rel=3)": "NERR11(max_grade=3)",
    "SDCG(dcg='log2',max_rel=3)@10": "SDCG(max_grade=3)@10",
}


@pytest.mark.parametrize(("irm", "ours"), SAME.items())
def test_ir_measures_names_parse(irm, ours):
    assert str(parse(irm)) == ours


def test_every_name_ir_measures_registers_is_listed():
    ir_measures = pytest.importorskip("ir_measures")
    assert set(ir_measures.measures.registry) == set(IRM_NAMES)


@pytest.mark.parametrize("irm", [m for m in SAME if "gains" not in m])
def test_ir_measures_reads_the_same_names(irm):
    ir_measures = pytest.importorskip("ir_measures")
    ir_measures.parse_measure(irm)  # the names above are ir_measures' own


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nERR_IA@5", "ir_measures' nERR_IA has no qrelkit measure"),
        ("Sucess@10", "did you mean 'Success'"),
        ("Recal@10", "did you mean 'Recall'"),
        ("nDGC@10", "did you mean 'nDCG'"),
        ("nDCG(dcg=foo)@10", "dcg='foo'"),
        ("AP(judged_only=maybe)", "not True or False"),
        ("INST(min_rel=1,max_rel=3)", "min_rel=1"),
    ],
)
def test_errors_name_the_nearest_of_both_vocabularies(text, message):
    with pytest.raises(MeasureSyntaxError, match=message):
        parse(text)


def test_rbp_persistence():
    assert str(parse("RBP(p=0.8)")) == "RBP(rel=1,persistence=0.8)"
    assert str(parse("RBP(p=0.9,rel=2)@10")) == "RBP(rel=2,persistence=0.9)@10"
