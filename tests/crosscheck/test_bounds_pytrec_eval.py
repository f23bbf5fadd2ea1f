"""The upper judgment bound against pytrec_eval on judgments augmented by hand.

The real TREC DL 2019 passage judgments and a generated run (judged and unjudged documents, score ties on a
0.1 grid); the augmentation is built here in plain Python, independently of qrelkit: for each judged query,
every document of the run's first k in trec_eval's order (scores in float32, as pytrec_eval holds them,
descending, ties broken by document id descending) that the judgments lack, added at the judgments'
highest grade (every retrieved one for map).
pytrec_eval then scores the augmented judgments; its mean must equal the bound's ``top``, and its score on
the judgments as given the bound's ``zero``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qrelkit import Conventions, read_qrels
from qrelkit.data.values import Run
from qrelkit.evaluation.bounds import judgment_bounds

from ..conftest import data_path

pytrec_eval = pytest.importorskip("pytrec_eval")

PYTREC = Conventions.from_profile("pytrec_eval")
MEASURES = {"ndcg_cut_10": ("nDCG@10", 10), "P_5": ("P@5", 5), "recall_20": ("R@20", 20), "map": ("AP", None)}


def _run(qrels: dict[str, dict[str, int]], seed: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    for qid, docs in sorted(qrels.items())[:25]:
        judged = list(rng.choice(sorted(docs), size=min(len(docs), 15), replace=False))
        chosen = judged + [f"u-{qid}-{i}" for i in range(15)]
        scores = np.round(rng.normal(10, 1.5, len(chosen)), 1)
        run[qid] = {str(d): float(s) for d, s in zip(chosen, scores, strict=True)}
    return run


def _augmented(qrels, run, k, top):
    out = {q: dict(docs) for q, docs in qrels.items()}
    for qid, docs in run.items():
        if qid not in qrels:
            continue
        ranked = sorted(((float(np.float32(s)), d) for d, s in docs.items()), reverse=True)
        for _, doc in ranked if k is None else ranked[:k]:
            if doc not in qrels[qid]:
                out[qid][doc] = top
    return out


def _mean(evaluator_qrels, run, name):
    per_query = pytrec_eval.RelevanceEvaluator(evaluator_qrels, {name}).evaluate(run)
    return math.fsum(v[name] for v in per_query.values()) / len(per_query)


@pytest.mark.parametrize("seed", [0, 1])
def test_upper_bound_is_pytrec_eval_on_augmented_judgments(seed):
    path = data_path("trec", "qrels.dl19-passage.txt")
    qrels = read_qrels(path)
    as_dict: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.frame.select("query_id", "doc_id", "grade").iter_rows():
        as_dict.setdefault(q, {})[d] = g
    run = _run(as_dict, seed)
    top = max(g for docs in as_dict.values() for g in docs.values())
    bounds = judgment_bounds(qrels, Run.from_dict(run), [m for m, _ in MEASURES.values()], PYTREC)
    for name, (measure, k) in MEASURES.items():
        b = bounds.get("run", measure)
        assert b.zero == pytest.approx(_mean(as_dict, run, name), abs=1e-12), measure
        assert b.top == pytest.approx(_mean(_augmented(as_dict, run, k, top), run, name), abs=1e-12), measure
        assert b.top > b.zero  # the generated run retrieves unjudged documents within every cutoff
