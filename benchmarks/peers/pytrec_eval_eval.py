"""pytrec_eval end to end, as its users run it: parse both files with its own parsers, evaluate, write."""

import sys

import pytrec_eval

qrels_path, run_path, out_path = sys.argv[1:4]
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(run_path) as fh:
    run = pytrec_eval.parse_run(fh)
results = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100"}).evaluate(run)
with open(out_path, "w") as fh:
    for qid, values in results.items():
        fh.write(f"{qid}\t{values['ndcg_cut_10']!r}\t{values['recall_100']!r}\n")
