"""Decision-level agreement (qrelkit.compare.decisions, ``qrelkit agree --runs``): the runs' means against
pytrec_eval, the rank correlations against scipy and tau_AP enumerated from its definition, the paired
tests' counts against scipy's ttest_rel with statsmodels' Holm correction; and the paired bootstrap of
compare held to the same numbers however many columns it draws at once."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import scipy.stats
from statsmodels.stats.multitest import multipletests

from qrelkit.compare import Options
from qrelkit.compare.decisions import decision_agreement
from qrelkit.formats import read_qrels, read_run
from qrelkit.measures.conventions import Conventions
from tests.agreement.ranking_oracle import slow_tau_ap

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "docsearch"
A, B = EXAMPLE / "judgments" / "alice.qrels", EXAMPLE / "judgments" / "bob.qrels"
RUNS = sorted((EXAMPLE / "runs").glob("*.run"))
MEASURE = "nDCG@10"
#: trec_eval's conventions (gains are the grades, tied scores ordered as trec_eval does): the runs have ties
TREC_EVAL = Conventions.from_profile("trec_eval")


def _trec(path: Path, qrels: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if qrels:
            out.setdefault(f[0], {})[f[2]] = int(f[3])
        else:
            out.setdefault(f[0], {})[f[2]] = float(f[4])
    return out


def _per_query(qrels_path: Path, queries: list[str]) -> dict[str, list[float]]:
    qrels = {q: v for q, v in _trec(qrels_path, True).items() if q in queries}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    out = {}
    for path in RUNS:
        found = evaluator.evaluate({q: v for q, v in _trec(path, False).items() if q in queries})
        out[path.stem] = [found.get(q, {}).get("ndcg_cut_10", 0.0) for q in queries]
    return out


def test_decisions_equal_independent_values() -> None:
    queries = sorted(set(_trec(A, True)) & set(_trec(B, True)))
    found = decision_agreement(read_qrels(A), read_qrels(B), [read_run(p) for p in RUNS], MEASURE, TREC_EVAL,
                               labellers=("alice", "bob"), options=Options(test="t"), n_resamples=500)  # fmt: skip
    doc = found.to_dict()
    per_a, per_b = _per_query(A, queries), _per_query(B, queries)
    names = [r["run"] for r in doc["runs"]]
    assert sorted(names) == sorted(per_a) and doc["queries"] == len(queries)
    means_a = [float(np.mean(per_a[n])) for n in names]
    means_b = [float(np.mean(per_b[n])) for n in names]
    assert [r["mean_a"] for r in doc["runs"]] == pytest.approx(means_a, abs=1e-12)
    assert [r["mean_b"] for r in doc["runs"]] == pytest.approx(means_b, abs=1e-12)
    assert doc["kendall_tau"]["value"] == pytest.approx(
        scipy.stats.kendalltau(means_a, means_b, variant="b").statistic, abs=1e-12
    )
    assert doc["tau_ap"]["value"] == pytest.approx(float(slow_tau_ap(means_a, means_b)), abs=1e-12)
    sym = (slow_tau_ap(means_a, means_b) + slow_tau_ap(means_b, means_a)) / 2
    assert doc["tau_ap_symmetric"]["value"] == pytest.approx(float(sym), abs=1e-12)
    for key in ("kendall_tau", "tau_ap", "tau_ap_symmetric"):
        assert len(doc[key]["interval"]) == 2 and doc[key]["n_resamples"] == 500
    flips = {(f["above_under_truth"], f["below_under_truth"]) for f in doc["flips"]}
    expected_flips = {(names[i], names[j]) for i, j in itertools.permutations(range(len(names)), 2)
                      if means_a[i] > means_a[j] and means_b[i] < means_b[j]}  # fmt: skip
    assert flips == expected_flips

    # every pair's paired t-test under each set of grades, Holm over the pairs
    pairs = list(itertools.combinations(names, 2))

    def significant(per: dict[str, list[float]]) -> tuple[list[bool], list[float]]:
        p = [scipy.stats.ttest_rel(per[t], per[b]).pvalue for b, t in pairs]
        reject = multipletests(p, alpha=0.05, method="holm")[0]
        return list(reject), [float(np.mean(per[t]) - np.mean(per[b])) for b, t in pairs]

    sig_a, diff_a = significant(per_a)
    sig_b, diff_b = significant(per_b)
    counts = {"kept": 0, "reversed": 0, "lost": 0, "gained": 0}
    for sa, da, sb, db in zip(sig_a, diff_a, sig_b, diff_b, strict=True):
        if sa and sb:
            counts["kept" if (da > 0) == (db > 0) else "reversed"] += 1
        elif sa:
            counts["lost"] += 1
        elif sb:
            counts["gained"] += 1
    s = doc["significance"]
    assert s["pairs"] == len(pairs) and s["significant_under_a"] == sum(sig_a)
    assert {k: s[k] for k in counts} == counts
    assert s["options"]["test"] == "t" and s["options"]["alpha"] == 0.05


def test_agree_with_runs_writes_the_decisions(cli, tmp_path: Path) -> None:
    out = tmp_path / "agree.json"
    result = cli("agree", A, B, "--runs", *RUNS, "-m", "nDCG@10", "--alpha", "0.1", "--bootstrap", "300",
                 "-o", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())["decision_agreement"]
    for key in ("kendall_tau", "tau_ap", "tau_ap_symmetric"):
        assert set(doc[key]) >= {"value", "interval"} and len(doc[key]["interval"]) == 2
    assert doc["measure"] == "nDCG@10" and doc["significance"]["options"]["alpha"] == 0.1
    assert doc["labellers"] == {"a": "alice", "b": "bob"}
    table = cli("agree", A, B, "--runs", *RUNS, "--bootstrap", "300").stdout
    assert "ranking agreement (nDCG@10 means of 4 runs" in table and "order flips:" in table
    assert "significant differences (randomization test, holm correction over 6 pairs, alpha 0.05)" in table


def test_measure_needs_runs(cli) -> None:
    result = cli("agree", A, B, "-m", "nDCG@10")
    assert result.exit_code == 2 and "-m orders runs" in result.output


def test_bootstrap_columns_drawn_in_chunks_give_the_same_numbers(monkeypatch) -> None:
    import qrelkit.compare as compare_module
    from qrelkit.evaluation.core import evaluate

    results = evaluate(read_qrels(EXAMPLE / "qrels.txt"), [read_run(p) for p in RUNS], ["nDCG@10", "R@100"])
    opts = Options(test="bootstrap", bootstrap=2000)
    whole = compare_module.compare(results, all_pairs=True, options=opts)
    monkeypatch.setattr(compare_module, "BOOTSTRAP_COLUMNS", 2)
    chunked = compare_module.compare(results, all_pairs=True, options=opts)
    assert len(whole.pairs) == 12
    for w, c in zip(whole.pairs, chunked.pairs, strict=True):
        assert (w.bootstrap_interval, w.p_value) == (c.bootstrap_interval, c.p_value)


def test_bounds_are_one_line() -> None:
    from qrelkit.compare.decisions import MAX_RUNS
    from qrelkit.errors import ValidationError

    qa, qb = read_qrels(A), read_qrels(B)
    with pytest.raises(ValidationError, match=f"from 2 to {MAX_RUNS} runs"):
        decision_agreement(qa, qb, [read_run(RUNS[0])])
    too_many = [read_run(RUNS[0]).replace(name=f"r{i}") for i in range(MAX_RUNS + 1)]
    with pytest.raises(ValidationError, match=f"from 2 to {MAX_RUNS} runs"):
        decision_agreement(qa, qb, too_many)
