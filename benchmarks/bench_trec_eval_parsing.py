"""``qrelkit trec_eval --trec-eval-parsing -q`` beside trec_eval 10 and the default reading.

    python benchmarks/bench_trec_eval_parsing.py --queries 100 --docs 1000 --nan 0.1

Writes judgments (every seventh document, grades 0-2) and a run of ``--queries`` queries of ``--docs``
documents whose scores are ``nan`` with probability ``--nan`` (seeded), builds trec_eval 10 from the
vendored source (``tests/data/trec_eval-src/``, into ``build/trec_eval/``), runs each command once as a
separate process with its output to a file, and reports the wall time, the peak RSS, the ratio to trec_eval
and whether qrelkit's output is byte-identical to trec_eval's. The same run with every score finite is
timed through the default reading (native scanner) for the cost of the option itself.
"""

from __future__ import annotations

import argparse
import random
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
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--nan", type=float, default=0.1)
    args = parser.parse_args()
    rng = random.Random(28)
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        qrels, odd, clean = tmpdir / "qrels", tmpdir / "odd.run", tmpdir / "clean.run"
        with qrels.open("w") as q, odd.open("w") as r, clean.open("w") as c:
            for i in range(args.queries):
                for d in range(args.docs):
                    score = repr(rng.random())
                    r.write(f"q{i} Q0 d{d} {d + 1} {'nan' if rng.random() < args.nan else score} run\n")
                    c.write(f"q{i} Q0 d{d} {d + 1} {score} run\n")
                    if d % 7 == 0:
                        q.write(f"q{i} 0 d{d} {rng.randint(0, 2)}\n")
        qk = [sys.executable, "-m", "qrelkit", "trec_eval", "-q"]
        commands = {
            "trec_eval -q (nan scores)": [str(build("10.0")), "-q", str(qrels), str(odd)],
            "qrelkit trec_eval --trec-eval-parsing -q (nan scores)": [*qk, "--trec-eval-parsing", str(qrels), str(odd)],
            "qrelkit trec_eval --trec-eval-parsing -q (finite scores)": [*qk, "--trec-eval-parsing", str(qrels), str(clean)],
            "qrelkit trec_eval -q (finite scores)": [*qk, str(qrels), str(clean)],
        }  # fmt: skip
        print(f"before: {uptime()}")
        results = {name: run_once(cmd, tmpdir / f"{i}.out") for i, (name, cmd) in enumerate(commands.items())}
        print(f"after:  {uptime()}")
        same = (tmpdir / "0.out").read_bytes() == (tmpdir / "1.out").read_bytes()
    base = results["trec_eval -q (nan scores)"][0]
    print(f"\n### {args.queries:,} queries of {args.docs:,} documents, {args.nan:.0%} of the scores nan\n")
    print("| command | wall | peak RSS | time / trec_eval | exit |")
    print("|---|---|---|---|---|")
    for name, (wall, rss, code) in results.items():
        print(f"| {name} | {wall:.2f} s | {rss / 2**20:.0f} MB | {wall / base:.1f}x | {code} |")
    print(
        f"\nqrelkit --trec-eval-parsing output {'byte-identical to' if same else 'DIFFERS from'} trec_eval's"
    )


if __name__ == "__main__":
    main()
