"""``qrelkit trec_eval -q`` on many one-document queries, beside trec_eval 10 and ``qrelkit eval -q``.

    python benchmarks/bench_trec_eval_queries.py --queries 1000000

Writes judgments and a run of ``--queries`` queries with one document each (half relevant), builds
trec_eval 10 from the vendored source (``tests/data/trec_eval-src/``, into ``build/trec_eval/``), runs
each tool once as a separate process with its output to a file, and reports the wall time, the peak RSS,
the ratio to ``qrelkit trec_eval`` and whether qrelkit's output is byte-identical to trec_eval's. The
per-query output is printed a block of queries at a time (``qrelkit.report.trec_eval.iter_trec_eval``),
so memory stays at what the evaluation holds, whatever the number of queries.

trec_eval itself looks up each judged query's results by a linear search over the run's queries
(``trec_eval.c`` lines 375-381), quadratic in the number of queries: at 10^6 it runs for hours, so it is
left out above ``--trec-eval-up-to`` queries (100,000 by default; its output is then not compared).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_trec_eval import run_once, uptime  # noqa: E402
from tests.crosscheck.trec_eval_harness import build  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--trec-eval-up-to", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        qrels, run = tmpdir / "qrels", tmpdir / "run"
        with qrels.open("w") as q, run.open("w") as r:
            for i in range(args.queries):
                q.write(f"q{i} 0 d{i} {i % 2}\n")
                r.write(f"q{i} Q0 d{i} 1 1.5 run\n")
        commands = {
            "qrelkit trec_eval -q": [
                sys.executable,
                "-m",
                "qrelkit",
                "trec_eval",
                "-q",
                str(qrels),
                str(run),
            ],
            "trec_eval -q": [str(build("10.0")), "-q", str(qrels), str(run)],
            "qrelkit eval -q": [sys.executable, "-m", "qrelkit", "eval", "-q", str(qrels), str(run)],
        }
        if args.queries > args.trec_eval_up_to:
            del commands["trec_eval -q"]
        print(f"before: {uptime()}")
        results = {name: run_once(cmd, tmpdir / f"{i}.out") for i, (name, cmd) in enumerate(commands.items())}
        print(f"after:  {uptime()}")
        same = None
        if "trec_eval -q" in results:
            same = (tmpdir / "0.out").read_bytes() == (tmpdir / "1.out").read_bytes()
    base = results["qrelkit trec_eval -q"][0]
    print(f"\n### {args.queries:,} one-document queries\n")
    print("| command | wall | peak RSS | time / qrelkit trec_eval | exit |")
    print("|---|---|---|---|---|")
    for name, (wall, rss, code) in results.items():
        print(f"| {name} | {wall:.2f} s | {rss / 2**20:.0f} MB | {wall / base:.2f}x | {code} |")
    if same is not None:
        print(f"\nqrelkit trec_eval -q output {'byte-identical to' if same else 'DIFFERS from'} trec_eval's")


if __name__ == "__main__":
    main()
