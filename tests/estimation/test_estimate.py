"""qrelkit.estimate and compare(..., human=) on the bundled example's model and people's judgments
(examples/docsearch/estimate/), each number checked against numpy arithmetic over the per-query values
and against ppi_py; and the bad inputs, each a one-line error naming the fix."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import qrelkit
from qrelkit.compare import compare
from qrelkit.errors import IncomparableError, ValidationError
from qrelkit.estimation import estimate_runs
from tests.conftest import EXAMPLE

ppi = pytest.importorskip("ppi_py")

MODEL = EXAMPLE / "estimate" / "model.qrels"
HUMAN = EXAMPLE / "estimate" / "human.qrels"
RUNS = [EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "dense", "rerank")]
TOL = 1e-10


@pytest.fixture(scope="module")
def inputs():
    return qrelkit.read_qrels(MODEL), qrelkit.read_qrels(HUMAN), [qrelkit.read_run(p) for p in RUNS]


@pytest.fixture(scope="module")
def evaluated(inputs):
    model_q, human_q, runs = inputs
    m = ["nDCG@10", "R@100"]
    return qrelkit.evaluate(model_q, runs, m), qrelkit.evaluate(human_q, runs, m)


def _split(model, human, run, measure):
    mv, hv = model.values(measure, run), human.values(measure, run)
    h = sorted(hv)
    u = sorted(set(mv) - set(hv))
    return np.array([hv[q] for q in h]), np.array([mv[q] for q in h]), np.array([mv[q] for q in u])


def test_the_default_interval_is_the_small_sample_one_by_hand(evaluated):
    model, human = evaluated
    est = qrelkit.estimate(model, human)
    assert (est.estimator, est.interval) == ("ppi++", "t")
    assert est.settings()["interval"] == "t"
    for run in ("bm25", "dense", "rerank"):
        for measure in ("nDCG@10", "R@100"):
            y, yhat, yhat_u = _split(model, human, run, measure)
            row = est.row(run, measure)
            for name, lam in (("ppi", 1.0), ("ppi++", row.intervals["ppi++"].lam)):
                i = row.intervals[name]
                value = lam * yhat_u.mean() + (y - lam * yhat).mean()
                se = np.sqrt(lam**2 * np.var(yhat_u, ddof=1) / 20 + np.var(y - lam * yhat, ddof=1) / 10)
                low, high = stats.t.interval(0.95, 9, loc=value, scale=se)
                assert (i.value, i.low, i.high, i.se) == pytest.approx((value, low, high, se), abs=TOL)
                assert i.p_value == pytest.approx(2 * stats.t.sf(abs(value) / se, 9), abs=TOL)
                assert i.kind == "t"
            # ppi++'s lambda is the same under both intervals (only the spread changes)
            normal = qrelkit.estimate(model, human, interval="normal").row(run, measure)
            assert normal.intervals["ppi++"].lam == row.intervals["ppi++"].lam
            assert normal.chosen.value == row.chosen.value


def test_every_estimator_by_hand_and_by_ppi_py(evaluated):
    model, human = evaluated
    est = qrelkit.estimate(model, human, interval="normal")
    assert est.estimator == "ppi++" and est.settings()["interval"] == "normal"
    for run in ("bm25", "dense", "rerank"):
        for measure in ("nDCG@10", "R@100"):
            y, yhat, yhat_u = _split(model, human, run, measure)
            assert (len(y), len(yhat_u)) == (10, 20)
            row = est.row(run, measure)
            # ppi by hand: mean over U of the model + mean over H of (people - model)
            p = row.intervals["ppi"]
            assert p.value == pytest.approx(yhat_u.mean() + (y - yhat).mean(), abs=TOL)
            half = stats.norm.isf(0.025) * np.sqrt(np.var(yhat_u) / 20 + np.var(y - yhat) / 10)
            assert (p.low, p.high) == pytest.approx((p.value - half, p.value + half), abs=TOL)
            assert p.lam == 1.0
            pp = row.chosen
            low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=None)
            assert (pp.low, pp.high) == pytest.approx((float(low[0]), float(high[0])), abs=TOL)
            assert pp.human_queries == 10 and pp.unlabeled_queries == 20
            assert row.intervals["model"].value == pytest.approx(model.mean(measure, run), abs=TOL)
            assert row.intervals["human"].value == pytest.approx(y.mean(), abs=TOL)
            # effective number of human-judged queries: var(y) / se^2
            assert pp.effective_human_queries == pytest.approx(np.var(y) / pp.se**2, rel=1e-12)


def test_the_output_records_estimator_lambda_sizes_fingerprints_and_conventions(evaluated):
    model, human = evaluated
    out = qrelkit.estimate(model, human, "ppi").to_dict()
    s = out["estimation"]
    assert s["estimator"] == "ppi"
    assert s["model_qrels"]["fingerprint"]["sha256"] == model.qrels_fingerprint.sha256
    assert s["human_qrels"]["fingerprint"]["sha256"] == human.qrels_fingerprint.sha256
    assert out["conventions"]["gain"] == "exponential"
    first = out["estimates"][0]
    assert (first["lambda"], first["human_queries"], first["unlabeled_queries"]) == (1.0, 10, 20)
    assert set(first["by_estimator"]) == {"ppi++", "ppi", "human", "model"}


def test_compare_with_human_estimates_each_difference_and_corrects_across_the_family(evaluated):
    from statsmodels.stats.multitest import multipletests

    model, human = evaluated
    c = compare(model, human=human, measures=["nDCG@10"], power=True, interval="normal")
    assert c.estimation_settings()["interval"] == "normal"
    assert [(p.baseline, p.treatment) for p in c.estimated] == [("bm25", "dense"), ("bm25", "rerank")]
    raw = []
    for p in c.estimated:
        mb, hb = model.values("nDCG@10", p.baseline), human.values("nDCG@10", p.baseline)
        mt, ht = model.values("nDCG@10", p.treatment), human.values("nDCG@10", p.treatment)
        h = sorted(hb)
        u = sorted(set(mb) - set(hb))
        y = np.array([ht[q] - hb[q] for q in h])
        yhat = np.array([mt[q] - mb[q] for q in h])
        yhat_u = np.array([mt[q] - mb[q] for q in u])
        assert p.estimate.value == pytest.approx(
            float(ppi.ppi_mean_pointestimate(y, yhat, yhat_u)[0]), abs=TOL
        )
        pv = ppi.ppi_mean_pval(y, yhat, yhat_u, lam=p.estimate.lam)
        assert p.estimate.p_value == pytest.approx(float(np.ravel(pv)[0]), abs=TOL)
        raw.append(p.estimate.p_value)
        assert p.power is not None and p.power.queries_now == 10
    adjusted = multipletests(raw, method="holm")[1]
    assert [p.p_adjusted for p in c.estimated] == pytest.approx(list(adjusted), abs=TOL)
    assert c.to_dict()["comparison"]["estimation"]["estimator"] == "ppi++"


def _frame_qrels(qrels, keep=None, extra=None, grade_map=None, name="h.qrels"):
    import polars as pl

    frame = qrels.frame.select("query_id", "doc_id", "grade")
    if keep is not None:
        frame = frame.filter(pl.col("query_id").is_in(keep))
    if grade_map is not None:
        frame = frame.with_columns(pl.col("grade").replace_strict(grade_map, return_dtype=pl.Int64))
    if extra is not None:
        frame = pl.concat([frame, pl.DataFrame(extra, schema=frame.schema, orient="row")])
    return qrelkit.qrels_from_frame(frame, name=name)


def test_people_s_queries_the_model_did_not_grade_are_refused(inputs):
    model_q, human_q, runs = inputs
    bad = _frame_qrels(human_q, extra=[("q99", "faq/billing", 2)])
    with pytest.raises(ValidationError) as e:
        estimate_runs(model_q, bad, runs, ["nDCG@10"])
    text = str(e.value)
    assert "'q99'" in text and "not in the model's judgments" in text and "\n" not in text


def test_a_different_grade_scale_is_refused(inputs):
    model_q, human_q, runs = inputs
    binary = _frame_qrels(human_q, grade_map={0: 0, 1: 0, 2: 1, 3: 1})
    with pytest.raises(IncomparableError, match=r"0\.\.3 but the people's 0\.\.1"):
        estimate_runs(model_q, binary, runs, ["nDCG@10"])


def test_different_conventions_are_refused(inputs):
    model_q, human_q, runs = inputs
    a = qrelkit.evaluate(model_q, runs, ["nDCG@10"])
    b = qrelkit.evaluate(human_q, runs, ["nDCG@10"], qrelkit.DEFAULT.with_(gain="linear"))
    with pytest.raises(IncomparableError, match=r"different conventions .*gain: exponential vs linear"):
        qrelkit.estimate(a, b)


def test_one_human_query_is_refused_and_few_get_a_warning(inputs):
    model_q, human_q, runs = inputs
    with pytest.raises(ValidationError, match="1 human-judged query"):
        estimate_runs(model_q, _frame_qrels(human_q, keep=["q01"]), runs, ["nDCG@10"])
    few = estimate_runs(model_q, _frame_qrels(human_q, keep=["q01", "q02", "q04"]), runs, ["nDCG@10"])
    assert few.warnings and "only 3 human-judged queries" in few.warnings[0]
    assert few.row("bm25", "nDCG@10").chosen.human_queries == 3


def test_an_unknown_estimator_names_the_choices(evaluated):
    model, human = evaluated
    with pytest.raises(ValidationError, match=r"unknown estimator 'ppi\+' \(did you mean 'ppi\+\+'"):
        qrelkit.estimate(model, human, "ppi+")


def test_human_queries_needed_for_ppi_and_human_by_hand():
    from qrelkit.estimation.ppi import human_queries_needed

    rng = np.random.default_rng(5)
    y = rng.uniform(0, 1, 20)
    yhat = y + rng.normal(0, 0.1, 20)
    yhat_u = rng.uniform(0, 1, 80)
    delta = 0.1
    se2 = (delta / (stats.norm.isf(0.025) + stats.norm.ppf(0.8))) ** 2
    people = human_queries_needed("human", y, yhat, yhat_u, delta)
    assert people.queries_needed == int(np.ceil(np.var(y) / se2))
    lam1 = human_queries_needed("ppi", y, yhat, yhat_u, delta)
    k = next(k for k in range(2, 100) if np.var(y - yhat) / k + np.var(yhat_u) / (100 - k) <= se2)
    assert lam1.queries_needed == k
    assert human_queries_needed("model", y, yhat, yhat_u, delta).queries_needed is None
