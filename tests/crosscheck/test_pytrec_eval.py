"""Cross-check against pytrec_eval (trec_eval 9) on the real TREC qrels with generated runs.

pytrec_eval's conventions, spelled out: linear gain, ties by document id descending, scores held in single
precision (so near-equal scores tie), negative grades as unjudged, judged queries missing from the run
skipped. With those conventions, qrelkit must agree query by query.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from qrelkit import Conventions, evaluate, read_qrels, run_from_frame

from ..conftest import data_path

pytrec_eval = pytest.importorskip("pytrec_eval")

PYTREC = Conventions(
    gain="linear", ties="docid_desc", precision="single", negative="unjudged", missing_queries="skip"
)
MEASURES = {
    "ndcg_cut_10": "nDCG@10",
    "ndcg_cut_5": "nDCG@5",
    "ndcg": "nDCG",
    "recall_100": "R@100",
    "recall_10": "R@10",
    "P_10": "P@10",
    "map": "AP",
    "map_cut_10": "AP@10",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "num_rel_ret": "NumRelRet",
}
QRELS_FILES = [
    "qrels.dl19-passage.txt",
    "qrels.dl20-doc.txt",
    "qrels.covid-complete.txt",
    "qrels.covid-round1.txt",
]


def generated_run(qrels, seed: int) -> pl.DataFrame:
    """A run per judged query: a mix of judged and unjudged documents, heavy score ties, near-ties that
    only single precision merges, some judged queries left out and some unjudged queries added."""
    rng = np.random.default_rng(seed)
    rows = []
    by_query = qrels.frame.group_by("query_id", maintain_order=True).agg("doc_id")
    for qid, docs in by_query.iter_rows():
        if rng.random() < 0.1:
            continue  # judged query missing from the run
        n = int(rng.integers(1, 150))
        judged = list(rng.choice(docs, size=min(len(docs), int(n * rng.uniform(0.3, 0.9))), replace=False))
        unjudged = [f"unjudged-{qid}-{i}" for i in range(n - len(judged))]
        chosen = judged + unjudged
        rng.shuffle(chosen)
        scores = np.round(rng.normal(10, 3, len(chosen)), 1)  # 0.1 grid: many ties
        near = rng.random(len(chosen)) < 0.05
        scores[near] += 1e-9  # equal in float32, not in float64
        rows += [(qid, d, float(s)) for d, s in zip(chosen, scores, strict=True)]
    rows += [("not-judged-query", f"d{i}", float(i)) for i in range(5)]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")


@pytest.mark.parametrize("name", QRELS_FILES)
def test_per_query_agreement_with_pytrec_eval(name):
    qrels = read_qrels(data_path("trec", name))
    frame = generated_run(qrels, seed=len(name))
    run = run_from_frame(frame, name="generated")
    ours = evaluate(qrels, run, list(MEASURES.values()), PYTREC)

    run_dict: dict[str, dict[str, float]] = {}
    for q, d, s in frame.iter_rows():
        run_dict.setdefault(q, {})[d] = s
    evaluator = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), set(MEASURES))
    theirs = evaluator.evaluate(run_dict)

    assert set(theirs) == set(ours.values("nDCG@10"))
    worst = 0.0
    for trec_name, measure in MEASURES.items():
        values = ours.values(measure)
        for qid, result in theirs.items():
            diff = abs(values[qid] - result[trec_name])
            worst = max(worst, diff)
            assert diff <= 1e-6, (measure, qid, values[qid], result[trec_name])
    assert worst < 1e-6


def test_single_precision_ties_match_pytrec_eval_and_double_precision_does_not():
    # 0.30000001 and 0.3 are the same float32: pytrec_eval ties them and puts "z" (docid descending) first.
    qrels = {"q": {"a": 2, "z": 0}}
    run_dict = {"q": {"a": 0.30000001, "z": 0.3}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run_dict)["q"]["ndcg_cut_10"]
    from qrelkit import Qrels, Run

    q, r = Qrels.from_dict(qrels), Run.from_dict(run_dict)
    single = evaluate(q, r, ["nDCG@10"], PYTREC).mean("nDCG@10")
    double = evaluate(q, r, ["nDCG@10"], PYTREC.with_(precision="double")).mean("nDCG@10")
    assert single == pytest.approx(theirs, abs=1e-12)
    assert single == pytest.approx(
        2 / np.log2(3) / 2, abs=1e-12
    )  # "a" at rank 2 of an ideal with it at rank 1
    assert double == 1.0  # in double precision "a" outscores "z"
