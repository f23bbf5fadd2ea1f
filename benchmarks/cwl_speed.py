"""The C/W/L family beside cwl_eval: wall time of qrelkit's ``evaluate`` and of cwl_eval's classes (as its
command line's ``main`` runs them, values kept at full precision) on the same run, and their ratio.

    python benchmarks/cwl_speed.py [--queries 43] [--depth 1000] [--repeat 3]

The judgments are TREC DL 2019 passage's (grades over 3 in cwl_eval's gain file, ``max_grade=3`` in
qrelkit); the run is seeded: ``--depth`` documents a query (judged ones first drawn, then unjudged ones),
full-precision normal scores, written by score descending, its queries cycled from DL 2019's when
``--queries`` exceeds 43. Both sides compute the same measures, and the script checks their values are
equal (``==``) before it reports a time.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
QRELS = HERE.parent / "tests" / "data" / "trec" / "qrels.dl19-passage.txt"

MEASURES = {
    "INST(T=3)": ("INSTCWLMetric", (3.0,)),
    "INSQ": ("INSQCWLMetric", (1.0,)),
    "BPM(T=2)@20": ("BPMCWLMetric", (2.0, 20)),
    "NERR8@10": ("NERReq8CWLMetric", (10,)),
    "NERR9@10": ("NERReq9CWLMetric", (10,)),
    "NERR10": ("NERReq10CWLMetric", (0.9,)),
    "NERR11": ("NERReq11CWLMetric", (1.0,)),
    "SDCG@10": ("NDCGCWLMetric", (10,)),
}


def write_inputs(tmp: Path, queries: int, depth: int, seed: int) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(seed)
    judged: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        judged.setdefault(q, {})[d] = int(g)
    base = sorted(judged)
    names = [base[i % len(base)] + ("" if i < len(base) else f"_{i}") for i in range(queries)]
    qrels_lines, gain_lines, run_lines = [], [], []
    for name, src in zip(names, [base[i % len(base)] for i in range(queries)], strict=True):
        for d, g in judged[src].items():
            qrels_lines.append(f"{name} 0 {d} {g}\n")
            gain_lines.append(f"{name} 0 {d} {g / 3!r}\n")
        pool = list(judged[src])
        take = [pool[i] for i in rng.permutation(len(pool))[: depth // 3]]
        docs = take + [f"u{i}" for i in range(depth - len(take))]
        scores = rng.normal(size=len(docs))
        for r, i in enumerate(np.argsort(-scores, kind="stable").tolist(), start=1):
            run_lines.append(f"{name} Q0 {docs[i]} {r} {float(scores[i])!r} run\n")
    paths = tmp / "qrels.txt", tmp / "gains.txt", tmp / "run.txt"
    for path, lines in zip(paths, (qrels_lines, gain_lines, run_lines), strict=True):
        path.write_text("".join(lines))
    return paths


def cwl_eval(gains: Path, run: Path) -> dict[str, dict[str, float]]:
    from cwl.ruler import cwl_ruler
    from cwl.ruler.ranking import RankingMaker
    from cwl.seeker.trec_qrel_handler import TrecQrelHandler

    logging.getLogger("cwl").disabled = True
    qrh = TrecQrelHandler(str(gains))
    by_query: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        q, _, d, *_ = line.split()
        by_query.setdefault(q, []).append(d)
    out: dict[str, dict[str, float]] = {m: {} for m in MEASURES}
    for q, docs in by_query.items():
        maker = RankingMaker(q, qrh, None, max_gain=1.0, max_cost=1.0, min_cost=1.0, max_n=1000)
        for d in docs:
            maker.add(d, "_")
        ranking = maker.get_ranking()
        for name, (cls, args) in MEASURES.items():
            out[name][q] = getattr(cwl_ruler, cls)(*args).measure(ranking)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=43)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()

    from qrelkit import Conventions, evaluate
    from qrelkit.formats import read_qrels, read_run

    with tempfile.TemporaryDirectory() as tmp:
        qrels_path, gains, run_path = write_inputs(Path(tmp), args.queries, args.depth, args.seed)
        qrels, run = read_qrels(qrels_path), read_run(run_path)
        conv = Conventions(max_grade=3, missing_queries="skip", ties="file_order")
        ours_s, theirs_s = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res = evaluate(qrels, run, list(MEASURES), conv)
            ours_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            theirs = cwl_eval(gains, run_path)
            theirs_s.append(time.perf_counter() - t0)
        for m, values in theirs.items():
            assert res.values(m) == values, m
    ours, cwl = statistics.median(ours_s), statistics.median(theirs_s)
    print(f"{args.queries} queries x {args.depth} documents, {len(MEASURES)} measures (values equal with ==)")
    print(f"qrelkit evaluate: {ours:.3f} s   cwl_eval: {cwl:.3f} s   cwl_eval / qrelkit: {cwl / ours:.1f}x")


if __name__ == "__main__":
    main()
