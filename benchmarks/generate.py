"""Seeded generator of realistic evaluation data at benchmark scales.

Qrels: graded 0-3, 10-200 judged documents per query (skewed towards few relevant), 2% of judged queries
have no run. Runs: ``depth`` documents per query, a mix of judged and unjudged documents, scores on a coarse
grid so that ties are common, 1% of run queries unjudged. Everything is derived from ``--seed``: the same
arguments always write the same bytes.

    python benchmarks/generate.py --queries 6980 --depth 1000 --out benchmarks/data/7m
    python benchmarks/generate.py --queries 1000 --depth 100 --runs 20 --out benchmarks/data/100k-x20
    python benchmarks/generate.py --scale 7m --shuffle --out benchmarks/data/7m-shuffled
    python benchmarks/generate.py --scale dl19 --out benchmarks/data/dl19            # also: dl19-x20

``dl19`` and ``dl19-x20`` are the size most evaluations have: the real TREC Deep Learning 2019 passage
judgments (``tests/data/trec/qrels.dl19-passage.txt``, 43 queries, 9,260 judgments) and runs of 1,000
passages for each of its 43 queries (43,000 lines), made as :func:`write_dl19_run` says.

``--shuffle`` writes each run's lines in a random order (seeded; the same lines as without it), as files
concatenated from shards or written by parallel workers arrive: no query's lines are together.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl

SCALES = {
    "100k": (1000, 100, 1),
    "100k-x20": (1000, 100, 20),
    "7m": (6980, 1000, 1),
    "50m": (50000, 1000, 1),
    "100m": (100000, 1000, 1),
}
#: Runs over the real TREC DL 2019 passage judgments: (depth, runs).
DL19_SCALES = {"dl19": (1000, 1), "dl19-x20": (1000, 20)}
DL19_QRELS = Path(__file__).resolve().parent.parent / "tests" / "data" / "trec" / "qrels.dl19-passage.txt"


def make_qrels(rng: np.random.Generator, n_queries: int) -> pl.DataFrame:
    sizes = rng.integers(10, 201, n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    # document numbers per query: judged docs are drawn from the first 3000 candidates of the query
    doc = np.concatenate([rng.choice(3000, size=s, replace=False) for s in sizes])
    grade = rng.choice(4, size=len(qid), p=[0.55, 0.25, 0.12, 0.08])
    return pl.DataFrame({"qid": qid, "doc": doc, "grade": grade})


def write_qrels(frame: pl.DataFrame, path: Path) -> None:
    out = frame.select(pl.format("{} 0 D{}-{} {}", pl.col("qid") + 1000, "qid", "doc", "grade").alias("line"))
    out.write_csv(path, include_header=False, quote_style="never")


def write_run(
    rng: np.random.Generator,
    qrels: pl.DataFrame,
    n_queries: int,
    depth: int,
    path: Path,
    tag: str,
    chunk: int = 2000,
) -> int:
    """Write one run in chunks of queries (bounded memory at any scale); returns the number of lines."""
    judged = qrels.group_by("qid").agg("doc").sort("qid")
    judged_docs = dict(zip(judged["qid"].to_list(), judged["doc"].to_list(), strict=True))
    lines = 0
    with path.open("wb") as fh:
        for start in range(0, n_queries, chunk):
            qids, docs, scores = [], [], []
            for q in range(start, min(start + chunk, n_queries)):
                if q % 50 == 7:  # 2% of judged queries are missing from the run
                    continue
                mine = judged_docs.get(q, [])
                n_judged = min(len(mine), int(depth * rng.uniform(0.05, 0.3)))
                pick_judged = rng.choice(mine, size=n_judged, replace=False) if n_judged else np.zeros(0, int)
                pool = rng.choice(np.arange(3000, 3000 + 4 * depth), size=depth - n_judged, replace=False)
                d = np.concatenate([pick_judged, pool])
                s = np.round(rng.gamma(2.0, 2.0, depth), 2)  # 0.01 grid: many ties
                qids.append(np.full(depth, q))
                docs.append(d)
                scores.append(s)
            if start == 0:
                qids.append(np.full(depth, n_queries + 5))  # a query with no judgments
                docs.append(np.arange(depth))
                scores.append(np.round(rng.gamma(2.0, 2.0, depth), 2))
            frame = pl.DataFrame(
                {"qid": np.concatenate(qids), "doc": np.concatenate(docs), "score": np.concatenate(scores)}
            )
            frame = frame.sort(["qid", "score"], descending=[False, True]).with_columns(
                pl.int_range(1, pl.len() + 1).over("qid").alias("rank")
            )
            out = frame.select(
                pl.format(
                    "{} Q0 D{}-{} {} {} {}",
                    pl.col("qid") + 1000,
                    "qid",
                    "doc",
                    "rank",
                    pl.col("score").round(2),
                    pl.lit(tag),
                ).alias("line")
            )
            fh.write(out.write_csv(include_header=False, quote_style="never").encode())
            lines += frame.height
    return lines


def write_dl19_run(
    rng: np.random.Generator, judged: dict[str, dict[str, int]], depth: int, path: Path, tag: str
) -> int:
    """One run of ``depth`` passages for every judged query, as a first-stage ranker gives them: a random
    20-60% of the query's judged passages (at most ``depth``), the rest unjudged passage numbers of the
    MS MARCO collection's range (0-8,841,822) the query does not judge; scores a gamma draw plus 4 x grade
    (relevant passages rank higher), on a 0.001 grid (some ties), ranks 1.. by score descending."""
    lines = []
    for qid in sorted(judged, key=int):
        grades = judged[qid]
        docs = np.array(sorted(grades, key=int))
        share = rng.uniform(0.2, 0.6)
        picked = rng.choice(docs, size=min(depth, int(len(docs) * share)), replace=False)
        taken = set(grades)
        unjudged: list[str] = []
        while len(unjudged) < depth - len(picked):
            n = str(int(rng.integers(0, 8841823)))
            if n not in taken:
                taken.add(n)
                unjudged.append(n)
        ids = [*map(str, picked), *unjudged]
        bonus = np.array([grades.get(d, 0) for d in ids], dtype=float)
        score = np.round(rng.gamma(2.0, 2.0, len(ids)) + 4.0 * bonus, 3)
        order = np.lexsort((np.arange(len(ids)), -score))
        lines += [f"{qid} Q0 {ids[i]} {rank} {score[i]:.3f} {tag}\n" for rank, i in enumerate(order, 1)]
    path.write_text("".join(lines))
    return len(lines)


def generate_dl19(depth: int, n_runs: int, out: Path, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    judged: dict[str, dict[str, int]] = {}
    for line in DL19_QRELS.read_text().splitlines():
        qid, _, doc, grade = line.split()
        judged.setdefault(qid, {})[doc] = int(grade)
    (out / "qrels.txt").write_bytes(DL19_QRELS.read_bytes())
    for i in range(n_runs):
        tag = f"run{i:02d}"
        lines = write_dl19_run(rng, judged, depth, out / f"{tag}.run", tag)
        print(f"{out / (tag + '.run')}: {lines:,} lines", flush=True)


def shuffle_lines(path: Path, rng: np.random.Generator, bucket_bytes: int = 256 << 20) -> None:
    """Rewrite ``path`` with its lines in a uniformly random order, in bounded memory: each line goes to a
    random bucket file, then each bucket is shuffled in memory and appended."""
    buckets = max(1, -(-path.stat().st_size // bucket_bytes))
    parts = [path.with_suffix(f".part{i}") for i in range(buckets)]
    handles = [p.open("wb") for p in parts]
    with path.open("rb") as fh:
        while block := fh.readlines(64 << 20):
            lines = np.array(block, dtype=object)
            where = rng.integers(0, buckets, len(lines))
            for i, handle in enumerate(handles):
                handle.writelines(lines[where == i].tolist())
    for handle in handles:
        handle.close()
    with path.open("wb") as out:
        for part in parts:
            lines = part.read_bytes().splitlines(keepends=True)
            out.writelines([lines[i] for i in rng.permutation(len(lines))])
            part.unlink()


def generate(n_queries: int, depth: int, n_runs: int, out: Path, seed: int, shuffle: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    qrels = make_qrels(rng, n_queries)
    write_qrels(qrels, out / "qrels.txt")
    for i in range(n_runs):
        tag = f"run{i:02d}"
        lines = write_run(rng, qrels, n_queries, depth, out / f"{tag}.run", tag)
        if shuffle:
            shuffle_lines(out / f"{tag}.run", rng)
        print(f"{out / (tag + '.run')}: {lines:,} lines", flush=True)
    print(f"{out}: {qrels.height:,} judgments, {n_runs} run(s), {time.perf_counter() - t0:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale", choices=sorted([*SCALES, *DL19_SCALES]), help="a named scale (sets queries, depth, runs)"
    )
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shuffle", action="store_true", help="write each run's lines in a random order")
    args = parser.parse_args()
    if args.scale in DL19_SCALES:
        generate_dl19(*DL19_SCALES[args.scale], args.out, args.seed)
        return
    if args.scale:
        args.queries, args.depth, args.runs = SCALES[args.scale]
    generate(args.queries, args.depth, args.runs, args.out, args.seed, args.shuffle)


if __name__ == "__main__":
    main()
