"""trec_eval's measures in qrelkit's grammar, against trec_eval's own expected outputs query by query.

The values in out.test.aq / out.test.aql come from trec_eval 10 itself (printed to 4 decimals)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from qrelkit import Conventions, evaluate, read_qrels, read_run
from qrelkit.cli import main
from qrelkit.errors import ConventionError
from qrelkit.measures.grammar import parse, parse_all

from ..conftest import data_path

TREC = Conventions.from_profile("trec_eval")

GRAMMAR = {
    "gm_map": "AP(rel={rel},summary=gmean)",
    "bpref": "bpref(rel={rel})",
    "gm_bpref": "bpref(rel={rel},summary=gmean)",
    "infAP": "infAP(rel={rel})",
    "iprec_at_recall_0.00": "IPrec(rel={rel},recall=0)",
    "iprec_at_recall_0.30": "IPrec(rel={rel},recall=0.3)",
    "iprec_at_recall_1.00": "IPrec(rel={rel},recall=1)",
    "11pt_avg": "IPrecMean(rel={rel})",
    "Rprec_mult_0.20": "Rprec(rel={rel},mult=0.2)",
    "Rprec_mult_2.00": "Rprec(rel={rel},mult=2)",
    "utility": "Utility(rel={rel})",
    "binG": "binG(rel={rel})",
    "G": "G",
    "ndcg_rel": "nDCGRel",
    "Rndcg": "RnDCG(rel={rel})",  # m_Rndcg.c: 0 when nothing is relevant at -l
    "relative_P_10": "RelP(rel={rel})@10",
    "success_1": "Success(rel={rel})@1",
    "success_10": "Success(rel={rel})@10",
    "set_P": "SetP(rel={rel})",
    "set_relative_P": "SetRelP(rel={rel})",
    "set_map": "SetAP(rel={rel})",
    "set_F": "SetF(rel={rel})",
    "num_nonrel_judged_ret": "NumNonRelJudgedRet(rel={rel})",
    # the general RBP under the trec_eval profile's axes (persistence=0.9, rbp_gain=scaled,
    # rbp_residual=if_unjudged); trec_eval's rbp ignores -l, so the threshold stays 1
    "rbp": "RBP",
    "rbp_resid": "RBP_resid",
    "unj_10": "Unjudged@10",
}


def _expected(name):
    rows = {}
    for line in data_path("trec_eval-tests", name).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        rows[(measure, query)] = value
    return rows


@pytest.mark.parametrize(
    ("expected", "qrels", "rel"), [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2)]
)
def test_grammar_measures_match_trec_eval_per_query_and_summary(expected, qrels, rel):
    rows = _expected(expected)
    names = {trec: text.format(rel=rel) for trec, text in GRAMMAR.items()}
    if rel == 2:
        # qrels.rel_level has grade -1: trec_eval's infAP counts it "in the pool, unjudged", qrelkit's grammar
        # (negative=unjudged) as not judged at all (docs/trec_eval.md); `qrelkit trec_eval` matches it
        del names["infAP"]
    res = evaluate(
        read_qrels(data_path("trec_eval-tests", qrels)),
        read_run(data_path("trec_eval-tests", "results.test")),
        list(names.values()),
        TREC,
    )
    checked = 0
    for trec, measure in names.items():
        for (name, query), text in rows.items():
            if name != trec:
                continue
            got = res.mean(measure) if query == "all" else res.value(measure, query)
            if trec == "num_nonrel_judged_ret" and query == "all":
                got = sum(res.values(measure).values())
            assert abs(got - float(text)) <= 5e-5 + 1e-9, (trec, query, got, text)
            checked += 1
    assert checked >= 4 * len(names) - 2 * 3  # gm_* have a summary line only


def test_measures_without_a_closed_form_refuse_averaged_ties():
    qrels = read_qrels(data_path("trec_eval-tests", "qrels.test"))
    run = read_run(data_path("trec_eval-tests", "results.test"))
    tied = run.frame.with_columns(run.frame["score"].round(0))
    from qrelkit.data.values import run_from_frame

    tied_run = run_from_frame(tied.select("query_id", "doc_id", "score"), name="tied")
    for name in ("bpref", "infAP", "IPrecMean", "G"):
        with pytest.raises(ConventionError, match="cannot average tied scores exactly"):
            evaluate(qrels, tied_run, [name], Conventions())
    # the same measures with a tie order, and the exact ones under averaged ties, are computed
    evaluate(
        qrels,
        tied_run,
        ["bpref(ties=docid_desc)", "Success@10", "RBP(rbp_gain=scaled)", "SetF"],
        Conventions(),
    )


def test_trec_eval_names_parse_to_qrelkit_measures():
    assert [str(m) for m in parse_all(["P_10", "P.5,7,3", "ndcg_cut.10", "map", "recip_rank"])] == [
        "P(rel=1)@10", "P(rel=1)@5", "P(rel=1)@7", "P(rel=1)@3", "nDCG@10", "AP(rel=1)", "RR(rel=1)",
    ]  # fmt: skip
    assert len(parse_all(["official"])) == 28
    assert [str(m) for m in parse_all(["gm_map", "iprec_at_recall_0.10", "Rprec_mult.0.2", "rbp"])] == [
        "AP(rel=1,summary=gmean)", "IPrec(rel=1,recall=0.1)", "Rprec(rel=1,mult=0.2)",
        "RBP(rel=1,persistence=0.9,rbp_gain=scaled)",
    ]  # fmt: skip
    assert str(parse_all(["rbp_resid"])[0]) == "RBP_resid(rel=1,persistence=0.9,rbp_residual=if_unjudged)"
    assert str(parse("Rprec(mult=0.2)")) == "Rprec(rel=1,mult=0.2)"
    with pytest.raises(Exception, match="did you mean 'ndcg_cut'"):
        parse_all(["ndcg_cutt.10"])


def test_eval_format_trec_speaks_trec_eval(tmp_path):
    qrels, run = data_path("trec_eval-tests", "qrels.test"), data_path("trec_eval-tests", "results.test")
    out = CliRunner().invoke(main, ["eval", "--profile", "trec_eval", str(qrels), str(run), "-m", "official",
                                    "--format", "trec"])  # fmt: skip
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if not line.startswith("#") and "\t" in line]
    expected = [
        line for line in data_path("trec_eval-tests", "out.test").read_text().splitlines()
        if not line.startswith(("runid", "num_q"))
    ]  # fmt: skip
    assert lines == expected
