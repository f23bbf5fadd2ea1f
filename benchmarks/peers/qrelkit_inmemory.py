"""qrelkit's plain in-memory path, for checking the timed configurations: every file read whole by the
robust reader (no streaming, no top-k selection, no small-input path), then ``evaluate``.

Writes ``run<TAB>query<TAB>nDCG@10<TAB>R@100`` with ``repr`` floats, under the conventions ``run.py`` gives
qrelkit, so that its numbers can be compared bit for bit with the command line's."""

import sys

from qrelkit import Conventions, evaluate, read_qrels, read_run

qrels_path, out_path, *run_paths = sys.argv[1:]
conv = Conventions(gain="linear", ties="docid_desc", precision="single", missing_queries="skip")
qrels = read_qrels(qrels_path, reader="robust")
runs = [read_run(p, reader="robust") for p in run_paths]
results = evaluate(qrels, runs, ["nDCG@10", "R@100"], conv)
with open(out_path, "w") as fh:
    for run in results.runs:
        ndcg, recall = run.values["nDCG@10"].tolist(), run.values["R(rel=1)@100"].tolist()
        for i, qid in enumerate(run.queries.query_ids):
            fh.write(f"{run.name}\t{qid}\t{ndcg[i]!r}\t{recall[i]!r}\n")
