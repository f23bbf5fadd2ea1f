"""pytrec_eval with one evaluator reused across several runs (its fastest way to evaluate many runs)."""

import sys

import pytrec_eval

qrels_path, out_dir, *run_paths = sys.argv[1:]
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100"})
for i, run_path in enumerate(run_paths):
    with open(run_path) as fh:
        results = evaluator.evaluate(pytrec_eval.parse_run(fh))
    with open(f"{out_dir}/pytrec_eval-{i:02d}.tsv", "w") as fh:
        for qid, values in results.items():
            fh.write(f"{qid}\t{values['ndcg_cut_10']!r}\t{values['recall_100']!r}\n")
