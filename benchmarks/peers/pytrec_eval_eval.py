"""pytrec_eval end to end, as its users run it: parse both files with its own parsers, evaluate, write."""

import sys

import pytrec_eval

qrels_path, run_path, out_path = sys.argv[1:4]
first, second = sys.argv[4:6] if len(sys.argv) > 5 else ("ndcg_cut_10", "recall_100")
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(run_path) as fh:
    run = pytrec_eval.parse_run(fh)
results = pytrec_eval.RelevanceEvaluator(qrels, {first, second}).evaluate(run)
with open(out_path, "w") as fh:
    for qid, values in results.items():
        fh.write(f"{qid}\t{values[first]!r}\t{values[second]!r}\n")
