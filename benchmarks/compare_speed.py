"""How long ``compare`` takes beside the evaluation it compares: 20 runs of 10,000 queries x 100 documents,
the first run against the other 19 under eval's three default measures (57 randomisation tests of 10,000
permutations each, the paired bootstrap intervals of 10,000 resamples, ANOVA and Tukey HSD).

    python benchmarks/compare_speed.py --out benchmarks/data/10k-x20 [--repeat 3]

Generates the data with ``generate.py`` (seeded) when it is not there, then reports the median wall time of
``evaluate_files`` and of ``compare`` in this process, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=HERE / "data" / "10k-x20")
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--permutations", type=int, default=10_000)
    parser.add_argument("--bootstrap", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()

    runs = sorted(args.out.glob("run*.run"))
    if len(runs) != args.runs or not (args.out / "qrels.txt").is_file():
        sys.path.insert(0, str(HERE))
        from generate import generate

        generate(args.queries, args.depth, args.runs, args.out, args.seed)
        runs = sorted(args.out.glob("run*.run"))

    from qrelkit.compare import compare
    from qrelkit.evaluation.files import evaluate_files

    evaluate_files(args.out / "qrels.txt", runs[:1])  # warm the imports and the file cache
    eval_times, compare_times, test_times = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        results = evaluate_files(args.out / "qrels.txt", runs)
        eval_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        comparison = compare(results, permutations=args.permutations, bootstrap=args.bootstrap)
        compare_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        compare(results, permutations=args.permutations, bootstrap=1)
        test_times.append(time.perf_counter() - t0)
    ev, cmp_, tests = (statistics.median(t) for t in (eval_times, compare_times, test_times))
    n_tests = len(comparison.pairs)
    queries = comparison.pairs[0].queries
    print(f"data: {len(runs)} runs x {queries} queries x {args.depth} documents ({args.out})")
    print(f"evaluate_files: {ev:.2f} s (median of {args.repeat})")
    print(
        f"compare: {cmp_:.2f} s for {n_tests} pairs x measures, {args.permutations} permutations and "
        f"{args.bootstrap} bootstrap resamples each; {tests:.2f} s without the bootstrap"
    )
    print(f"ratio compare / evaluate: {cmp_ / ev:.2f} (randomisation tests alone: {tests / ev:.2f})")


if __name__ == "__main__":
    main()
