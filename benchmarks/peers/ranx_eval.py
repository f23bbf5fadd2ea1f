"""ranx end to end in a fresh process (numba compiles its kernels on first use)."""

import sys

from ranx import Qrels, Run, evaluate

qrels_path, run_path, out_path = sys.argv[1:4]
qrels = Qrels.from_file(qrels_path, kind="trec")
run = Run.from_file(run_path, kind="trec")
scores = evaluate(qrels, run, ["ndcg@10", "recall@100"], return_mean=False, make_comparable=True)
with open(out_path, "w") as fh:
    for qid, a, b in zip(list(run.keys()), scores["ndcg@10"], scores["recall@100"], strict=False):
        fh.write(f"{qid}\t{float(a)!r}\t{float(b)!r}\n")
