"""Rows per second per core of the Spark engine (local[N]) against the local engine, on the same data.

Writes seeded data as Parquet (one run of ``rows`` lines, ``depth`` documents per query, scores on a 0.01
grid so that ties are common; graded 0-3 judgments from ``generate.make_qrels``), then, in this order:

1. the fixed cost of a session: starting a fresh ``local[N]`` session and running one tiny job, in a
   process of its own (what ``qrelkit eval --engine spark`` pays before reading anything);
2. the Spark engine on the Parquet file (``qrelkit.evaluation.spark.evaluate``), session already started:
   the session's first evaluation (which starts the Python workers), then the same again (the rate a long
   job runs at, which the plan for 10^10 rows uses);
3. with ``--copartitioned``, the Spark engine again with the judgments co-partitioned with the run by
   query id (``broadcast_rows=0``) instead of broadcast (workers started); with ``--shuffled``, again with
   the file scanned and shuffled by Spark (``spark.qrelkit.parquet.readByTasks=false``) instead of read by
   the tasks themselves (the file is grouped by query, so the tasks read it by default);
4. the local engine on the same file (``qrelkit.evaluation.files.evaluate_files``);
5. whether every per-query float is identical between the engines.

    python benchmarks/spark_scale.py --rows 5000000 --cores 2 --out benchmarks/data/spark-5m

It prints one Markdown table row per step (docs/scale.md quotes them). Measures: nDCG@10, R@100 and AP
(AP needs every row, so neither engine may keep only each query's top documents). The machine's load
counts: say what else ran.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import make_qrels, write_qrels

MEASURES = ["nDCG@10", "R@100", "AP"]


def write_data(rows: int, depth: int, out: Path, seed: int) -> tuple[Path, Path]:
    """qrels.txt (TREC) and run.parquet (row groups of 1M rows) under ``out``; kept when present."""
    out.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = out / "qrels.txt", out / "run.parquet"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    n_queries = rows // depth
    qrels = make_qrels(rng, n_queries)
    write_qrels(qrels, qrels_path)
    judged = qrels.group_by("qid").agg("doc").sort("qid")
    judged_docs = dict(zip(judged["qid"].to_list(), judged["doc"].to_list(), strict=True))
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("query_id", pa.string()), ("doc_id", pa.string()), ("score", pa.float64())])
    with pq.ParquetWriter(run_path, schema) as writer:
        for start in range(0, n_queries, 1000):
            qids, docs, scores = [], [], []
            for q in range(start, min(start + 1000, n_queries)):
                mine = judged_docs.get(q, [])
                n_judged = min(len(mine), int(depth * rng.uniform(0.05, 0.3)))
                pick = rng.choice(mine, size=n_judged, replace=False) if n_judged else np.zeros(0, int)
                pool = rng.choice(np.arange(3000, 3000 + 4 * depth), size=depth - n_judged, replace=False)
                qids.append(np.full(depth, q))
                docs.append(np.concatenate([pick, pool]))
                scores.append(np.round(rng.gamma(2.0, 2.0, depth), 2))
            frame = pl.DataFrame(
                {"qid": np.concatenate(qids), "doc": np.concatenate(docs), "score": np.concatenate(scores)}
            ).select(
                pl.format("{}", pl.col("qid") + 1000).alias("query_id"),
                pl.format("D{}-{}", "qid", "doc").alias("doc_id"),
                "score",
            )
            writer.write_table(frame.to_arrow().cast(schema), row_group_size=1_000_000)
    return qrels_path, run_path


STARTUP = """
import os, sys, time
t = time.perf_counter()
sys.path.insert(0, {src!r})
from qrelkit.evaluation.spark import session
spark = session("local[{cores}]")
spark.range(10).count()
print(time.perf_counter() - t)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=None, help="default: 4 per core")
    parser.add_argument("--batch", type=int, default=100_000, help="Arrow records per batch")
    parser.add_argument("--memory", default="4g", help="driver memory (local mode: the executors too)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument(
        "--copartitioned",
        action="store_true",
        help="also run the Spark engine with the judgments co-partitioned with the run by query id",
    )
    parser.add_argument(
        "--shuffled",
        action="store_true",
        help="also run the Spark engine with the file scanned and shuffled by Spark, not read by the tasks",
    )
    parser.add_argument(
        "--broadcast-rows",
        type=int,
        default=None,
        help="judgments past this many rows are co-partitioned (default: the engine's, 10^7)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    src = str(Path(__file__).resolve().parent.parent / "src")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    sys.path.insert(0, src)

    t = time.perf_counter()
    qrels_path, run_path = write_data(args.rows, args.depth, args.out, args.seed)
    print(f"data: {args.rows:,} rows in {run_path} ({time.perf_counter() - t:.1f} s)", flush=True)

    startup = subprocess.run(
        [sys.executable, "-c", STARTUP.format(src=src, cores=args.cores)], capture_output=True, text=True
    )
    fixed = float(startup.stdout.strip().splitlines()[-1])

    from qrelkit import Results
    from qrelkit.evaluation.spark import evaluate, session

    partitions = args.partitions or 4 * args.cores
    spark = session(
        f"local[{args.cores}]", shuffle_partitions=partitions, **{"spark.driver.memory": args.memory}
    )
    spark.range(10).count()

    def timed(broadcast_rows: int | None) -> tuple[Results, float]:
        """One evaluation of the files on this session, and its wall seconds."""
        t = time.perf_counter()
        out = evaluate(
            spark,
            str(qrels_path),
            str(run_path),
            MEASURES,
            max_records_per_batch=args.batch,
            broadcast_rows=broadcast_rows,
        )
        return out, time.perf_counter() - t

    distributed, first_s = timed(args.broadcast_rows)
    # again: the Python workers are started and the JVM's code is warm
    distributed, spark_s = timed(args.broadcast_rows)
    joined, joined_s = timed(0) if args.copartitioned else (None, 0.0)
    shuffled, shuffled_s = None, 0.0
    if args.shuffled:
        from qrelkit.evaluation.spark import TASKS_READ_CONF

        spark.conf.set(TASKS_READ_CONF, "false")
        shuffled, shuffled_s = timed(args.broadcast_rows)
        spark.conf.unset(TASKS_READ_CONF)
    spark.stop()

    print("| rows | engine | cores | wall s | rows/s | rows/s per core |")
    print("|---:|---|---:|---:|---:|---:|")
    print(f"| {args.rows:,} | session start + one tiny job | {args.cores} | {fixed:.1f} | | |")
    for what, seconds in (("first job of the session", first_s), ("again, workers started", spark_s)):
        rate = args.rows / seconds
        print(
            f"| {args.rows:,} | spark local[{args.cores}], {what} | {args.cores} | {seconds:.1f} | {rate:,.0f} | {rate / args.cores:,.0f} |"
        )
    for what, other, seconds in (
        ("judgments co-partitioned", joined, joined_s),
        ("scanned and shuffled by Spark", shuffled, shuffled_s),
    ):
        if other is not None:
            rate = args.rows / seconds
            print(
                f"| {args.rows:,} | spark local[{args.cores}], {what} | {args.cores} | {seconds:.1f} | {rate:,.0f} | {rate / args.cores:,.0f} |"
            )
    if not args.skip_local:
        from qrelkit.evaluation.files import evaluate_files

        t = time.perf_counter()
        local = evaluate_files(qrels_path, [run_path], MEASURES)
        local_s = time.perf_counter() - t
        rate = args.rows / local_s
        cores = os.cpu_count() or 1
        print(
            f"| {args.rows:,} | local (evaluate_files) | {cores} | {local_s:.1f} | {rate:,.0f} | {rate / cores:,.0f} |"
        )
        same = all(
            a.values[m].tobytes() == b.values[m].tobytes()
            for a, b in zip(local.runs, distributed.runs, strict=True)
            for m in local.measure_names
        )
        for other in (joined, shuffled):
            if other is not None:
                same = same and all(
                    a.values[m].tobytes() == b.values[m].tobytes()
                    for a, b in zip(local.runs, other.runs, strict=True)
                    for m in local.measure_names
                )
        print(
            f"Spark (workers started) / local, rows per second per core: {local_s * cores / (spark_s * args.cores):.2f}"
        )
        n = len(local.runs[0].queries.query_ids)
        print(f"identical per-query floats over {n:,} queries: {same}")


if __name__ == "__main__":
    main()
