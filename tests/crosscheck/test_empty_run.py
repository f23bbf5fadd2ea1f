"""A run file that holds no line: refused by default and under the profiles whose tool refuses it
(trec_eval: "Cannot read results file"; ranx and scikit-learn raise), evaluated as a run that returned
nothing under the profiles whose tool evaluates it: ir_measures scores every judged query 0
(``measure.DEFAULT`` for each query it did not see), pytrec_eval returns no query ({}), trectools' and
gdeval.pl's outputs hold no topic. docs/conventions.md, "An empty run file"."""

from __future__ import annotations

import math

import pytest

from qrelkit.errors import InputFormatError
from qrelkit.evaluation.files import evaluate_files
from qrelkit.measures.profiles import PROFILES

MEASURES = ["nDCG@10", "P@5", "AP", "NumRel"]


@pytest.fixture
def files(tmp_path):
    qrels, empty, full = tmp_path / "qrels", tmp_path / "empty.run", tmp_path / "full.run"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 2\n")
    empty.write_text("\n \n")
    full.write_text("1 Q0 a 1 2 full\n1 Q0 b 2 1 full\n")
    return qrels, empty, full


def test_ir_measures_scores_every_judged_query_zero(files):
    ir_measures = pytest.importorskip("ir_measures")
    qrels, empty, _ = files
    irm = [ir_measures.parse_measure(m) for m in MEASURES]
    theirs = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(
        irm, ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(empty)))}  # fmt: skip
    aggregate = ir_measures.calc_aggregate(irm, ir_measures.read_trec_qrels(str(qrels)), [])
    res = evaluate_files(qrels, [empty], MEASURES, PROFILES["ir_measures"].conventions)
    for measure, m in zip(MEASURES, irm, strict=True):
        assert res.values(measure) == {q: theirs[(str(m), q)] for q in ("1", "2")} == {"1": 0.0, "2": 0.0}
        assert res.mean(measure) == aggregate[m] == 0


def test_pytrec_eval_scores_no_query(files):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, empty, full = files
    judged = {"1": {"a": 1, "b": 0}, "2": {"c": 2}}
    assert pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10", "P_5"}).evaluate({}) == {}
    res = evaluate_files(qrels, [empty, full], MEASURES, PROFILES["pytrec_eval"].conventions)
    assert res.values("nDCG@10", run="empty") == {} and math.isnan(res.mean("nDCG@10", run="empty"))
    assert res.values("nDCG@10", run="full") == {"1": 1.0}  # by hand: a (grade 1) first, b (0) second


@pytest.mark.parametrize("profile", ["trectools", "gdeval"])
def test_tools_that_report_no_topic(profile, files):
    qrels, empty, _ = files
    res = evaluate_files(qrels, [empty], ["nDCG@10"], PROFILES[profile].conventions)
    assert res.values("nDCG@10") == {} and math.isnan(res.mean("nDCG@10"))


@pytest.mark.parametrize("profile", [None, "trec_eval", "trec_eval9", "ranx", "sklearn", "torchmetrics"])
def test_refused_by_default_and_where_the_tool_refuses(profile, files):
    qrels, empty, _ = files
    conv = PROFILES[profile].conventions if profile else None
    with pytest.raises(InputFormatError, match="file is empty"):
        evaluate_files(qrels, [empty], MEASURES, conv)


def test_trec_eval_refuses_it(files):
    from . import trec_eval_harness as h

    if h.compiler() is None:
        pytest.skip("no C compiler on PATH: trec_eval cannot be built from tests/data/trec_eval-src")
    qrels, empty, _ = files
    for version in h.VERSIONS:
        out = h.run_trec_eval(h.build(version, precise=True), qrels, empty, ())
        assert out.exit_code != 0, version
