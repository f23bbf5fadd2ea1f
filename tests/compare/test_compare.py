"""qrelkit.compare on the bundled example and on small hand-made runs: pairs, query sets, refusals, output.

Expected values come from scipy/statsmodels on the per-query values (which the evaluation tests check
against pytrec_eval), or from hand arithmetic on the small runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from qrelkit import Conventions, Qrels, Run, evaluate, read_qrels, read_run
from qrelkit.compare import Comparison, combine, compare, run_pairs
from qrelkit.errors import IncomparableError, ValidationError
from qrelkit.measures.grammar import DEFAULT_MEASURES, parse
from qrelkit.report.compare import FORMATS, render_compare

from ..conftest import EXAMPLE

RUNS = ["bm25", "dense", "hybrid", "rerank"]


@pytest.fixture(scope="module")
def example():
    qrels = read_qrels(EXAMPLE / "qrels.txt")
    runs = [read_run(EXAMPLE / "runs" / f"{name}.run") for name in RUNS]
    return qrels, runs


@pytest.fixture(scope="module")
def results(example):
    qrels, runs = example
    return evaluate(qrels, runs)


@pytest.fixture(scope="module")
def comparison(results):
    return compare(results, permutations=2000, bootstrap=2000, multi="randomized-tukey")


def test_default_measures_and_baseline(results, comparison):
    assert results.measure_names == [str(parse(m)) for m in DEFAULT_MEASURES]
    assert [(p.baseline, p.treatment) for p in comparison.pairs][::3] == [
        ("bm25", "dense"),
        ("bm25", "hybrid"),
        ("bm25", "rerank"),
    ]
    assert {p.measure for p in comparison.pairs} == set(results.measure_names)


def test_pair_statistics_equal_scipy_on_the_example(results, comparison):
    for p in comparison.pairs:
        a = np.array(
            [results.values(p.measure, p.baseline)[q] for q in sorted(results.values(p.measure, p.baseline))]
        )
        b = np.array(
            [
                results.values(p.measure, p.treatment)[q]
                for q in sorted(results.values(p.measure, p.treatment))
            ]
        )
        assert p.queries == 30 == len(a)
        assert p.mean_baseline == pytest.approx(results.mean(p.measure, p.baseline), rel=1e-12)
        assert p.difference == pytest.approx(b.mean() - a.mean(), abs=1e-12)
        d = b - a
        if np.std(d) > 0:
            ref = sps.ttest_rel(b, a)
            assert p.t_interval == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-9)
            assert p.effect_size == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
        assert p.wins + p.ties + p.losses == 30
        assert p.wins == int((d > 1e-12).sum()) and p.losses == int((d < -1e-12).sum())
        lo, hi = p.bootstrap_interval
        assert (
            lo <= p.difference <= hi or p.difference == pytest.approx(lo) or p.difference == pytest.approx(hi)
        )


def test_holm_over_pairs_times_measures(comparison):
    from statsmodels.stats.multitest import multipletests

    raw = [p.p_value for p in comparison.pairs]
    assert [p.p_adjusted for p in comparison.pairs] == pytest.approx(multipletests(raw, method="holm")[1])
    assert all(p.significant == (p.p_adjusted < 0.05) for p in comparison.pairs)


def test_family_per_measure(results):
    from statsmodels.stats.multitest import multipletests

    c = compare(results, test="t", family="pairs", correction="bh")
    for m in results.measure_names:
        rows = [p for p in c.pairs if p.measure == m]
        expected = multipletests([p.p_value for p in rows], method="fdr_bh")[1]
        assert [p.p_adjusted for p in rows] == pytest.approx(expected)


def test_exact_when_few_queries_differ_else_monte_carlo(results, comparison):
    default = compare(results, bootstrap=100)
    assert {p.method for p in default.pairs} == {"exact", "monte carlo"}
    for p in default.pairs:
        if p.method == "exact":
            assert p.permutations == 2 ** (p.wins + p.losses) and p.wins + p.losses <= 24
        else:
            assert p.permutations == 100_000 and p.wins + p.losses > 24
    assert {(p.method, p.permutations) for p in comparison.pairs} == {("monte carlo", 2000)}  # N given


def test_wilcoxon_and_t_tests_on_the_example(results):
    t = compare(results, test="t")
    w = compare(results, test="wilcoxon")
    for pt, pw in zip(t.pairs, w.pairs, strict=True):
        a = np.array(list(results.values(pt.measure, pt.baseline).values()))
        b = np.array(list(results.values(pt.measure, pt.treatment).values()))
        if np.std(b - a) > 0:
            assert pt.p_value == pytest.approx(sps.ttest_rel(b, a).pvalue, rel=1e-9)
        if pw.method == "none":
            continue
        # per-query values equal up to float noise are equal: give scipy the differences rounded to 1e-12
        d = np.round(b - a, 12)
        ref = sps.wilcoxon(d, zero_method="wilcox", correction=False, method=pw.method)
        assert pw.statistic == pytest.approx(ref.statistic, rel=1e-12)
        assert pw.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_the_same_seed_gives_the_same_comparison(results):
    one = compare(results, permutations=500, bootstrap=300, seed=7).to_dict()
    two = compare(results, permutations=500, bootstrap=300, seed=7).to_dict()
    assert one == two
    other = compare(results, permutations=500, bootstrap=300, seed=8).to_dict()
    assert other != one


def test_anova_and_tukey_with_three_or_more_runs(comparison):
    assert len(comparison.multi) == 3
    m = comparison.multi[0]
    assert m.runs == tuple(RUNS) and m.queries == 30
    assert len(m.pairs) == 6 and m.randomized_p is not None
    assert all(0 < p <= 1 for p in m.randomized_p)


def test_several_baselines_and_all_pairs(results):
    assert run_pairs(results, ["bm25", "dense"]) == [
        ("bm25", "dense"), ("bm25", "hybrid"), ("bm25", "rerank"), ("dense", "hybrid"), ("dense", "rerank"),
    ]  # fmt: skip
    assert len(run_pairs(results, all_pairs=True)) == 6


def test_unknown_baseline_is_a_one_line_error_with_did_you_mean(results):
    with pytest.raises(ValidationError) as err:
        compare(results, "bm52")
    assert "no run named 'bm52' (did you mean 'bm25'?)" in str(err.value)
    assert "\n" not in str(err.value)


def test_one_run_is_refused(example):
    qrels, runs = example
    with pytest.raises(ValidationError, match="at least two runs"):
        compare(evaluate(qrels, runs[:1]))


def test_results_under_different_conventions_are_refused_naming_the_axis(example):
    qrels, runs = example
    old = evaluate(qrels, runs[:1])
    new = evaluate(qrels, runs[1:2], conventions=Conventions(gain="linear"))
    with pytest.raises(IncomparableError, match="gain: exponential vs linear"):
        compare([old, new])
    other_qrels = Qrels.from_dict({"q01": {"api-keys/rotation": 3}})
    with pytest.raises(IncomparableError, match="qrels: sha256"):
        compare([old, evaluate(other_qrels, runs[1:2])])
    combined = combine([old, evaluate(qrels, runs[1:2])])
    assert combined.run_names == ["bm25", "dense"]


def test_missing_queries_follow_the_convention(example):
    """dense.run lacks q27: scored 0 and compared over 30 queries by default, left out (29) with skip."""
    qrels, runs = example
    zero = compare(evaluate(qrels, runs[:2]), test="t")
    skip = compare(evaluate(qrels, runs[:2], conventions=Conventions(missing_queries="skip")), test="t")
    assert {p.queries for p in zero.pairs} == {30}
    assert {p.queries for p in skip.pairs} == {29}


def test_a_small_hand_made_case():
    """Two queries, differences +0.5 and +0.5 in P@2: mean 0.5, exact p = 2/4 (both signs equal)."""
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 1, "d": 0}})
    base = Run.from_dict({"q1": {"b": 2.0, "x": 1.0}, "q2": {"d": 2.0, "y": 1.0}}, name="base")
    new = Run.from_dict({"q1": {"a": 2.0, "x": 1.0}, "q2": {"c": 2.0, "y": 1.0}}, name="new")
    c = compare(evaluate(qrels, [base, new], ["P@2"]))
    (p,) = c.pairs
    assert (p.mean_baseline, p.mean_treatment, p.difference) == (0.0, 0.5, 0.5)
    assert (p.wins, p.ties, p.losses) == (2, 0, 0)
    assert p.method == "exact" and p.p_value == 0.5 and p.permutations == 4


def test_to_dict_carries_every_choice_and_the_results_provenance(comparison, results):
    d = json.loads(json.dumps(comparison.to_dict(), allow_nan=False))
    assert d["tool"] == results.provenance()["tool"]
    assert d["conventions"] == results.conventions.to_dict()
    assert d["qrels"]["fingerprint"]["sha256"] == results.qrels_fingerprint.sha256
    opts = d["comparison"]["options"]
    for key, value in {"test": "randomization", "permutations": 2000, "seed": 0, "correction": "holm",
                       "family": "pairs-x-measures", "alpha": 0.05, "bootstrap_resamples": 2000}.items():  # fmt: skip
        assert opts[key] == value
    assert len(d["comparison"]["pairs"]) == 9


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_the_choices_and_conventions(comparison, fmt):
    text = render_compare(comparison, fmt)
    assert "holm" in text and "pairs-x-measures" in text
    assert "ties" in text and "average" in text  # the conventions
    assert "c6ae9794de682f94" in text  # the qrels fingerprint
    if fmt == "html":
        assert text.startswith("<!doctype html>")
    if fmt == "latex":
        assert "\\begin{tabular}" in text and "R(rel=1)@100" in text


def test_power_matches_statsmodels(results):
    from statsmodels.stats.power import TTestPower

    c = compare(results, test="t", power=True)
    for p in c.pairs:
        if p.power.queries_needed is None:
            continue
        es = abs(p.difference) / p.sd
        real = TTestPower().solve_power(effect_size=es, alpha=0.05, power=0.8)
        assert p.power.queries_needed == math.ceil(real - 1e-9)
    given = compare(results, test="t", power=True, power_delta=0.05).pairs[0].power
    assert given.delta == 0.05 and given.delta_source == "given"


def test_comparison_is_frozen(comparison):
    assert isinstance(comparison, Comparison)
    with pytest.raises(AttributeError):
        comparison.pairs = ()  # type: ignore[misc]
