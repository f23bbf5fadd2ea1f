"""pytrec_eval computing every measure it supports (trec_eval 9's -m all_trec, as pytrec_eval offers it),
end to end as its users run it: its own parsers, evaluate, write each query's values."""

import sys

import pytrec_eval

qrels_path, run_path, out_path = sys.argv[1:4]
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(run_path) as fh:
    run = pytrec_eval.parse_run(fh)
results = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)
with open(out_path, "w") as fh:
    for qid, values in results.items():
        for measure, value in sorted(values.items()):
            fh.write(f"{measure}\t{qid}\t{value!r}\n")
