"""ir_measures end to end: its own readers and its default provider for nDCG@10 and R@100."""

import sys

import ir_measures
from ir_measures import R, nDCG

qrels_path, run_path, out_path = sys.argv[1:4]
qrels = ir_measures.read_trec_qrels(qrels_path)
run = ir_measures.read_trec_run(run_path)
values: dict[str, dict[str, float]] = {}
for m in ir_measures.iter_calc([nDCG @ 10, R @ 100], qrels, run):
    values.setdefault(m.query_id, {})[str(m.measure)] = m.value
with open(out_path, "w") as fh:
    for qid, v in values.items():
        fh.write(f"{qid}\t{v.get('nDCG@10', 0.0)!r}\t{v.get('R@100', 0.0)!r}\n")
