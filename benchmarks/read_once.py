"""Whole-process times of the commands that show the judgment bounds (``eval --bounds``, ``compare``'s table),
this tree beside another (``--before SRC``), alternating: what reading each run once instead of twice saves.

    python benchmarks/read_once.py --before /tmp/base/src [--data benchmarks/data/dl19-x20] [--repeat 9]

Each command runs as ``python -m qrelkit`` with ``PYTHONPATH`` set to the tree's ``src``; reported: the
median wall time of each, and after / before.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="another qrelkit source tree's src")
    parser.add_argument(
        "--data", type=Path, default=None, help="a generated dl19-x20 folder (qrels.txt, run00.run, ...)"
    )
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    trees = {"before": str(args.before), "after": str(ROOT / "src")}
    ex = ROOT / "examples" / "docsearch"
    runs = [str(p) for p in sorted((ex / "runs").glob("*.run"))]
    cases = {
        "eval --bounds -f json, the bundled example": [
            "eval",
            str(ex / "qrels.txt"),
            *runs,
            "--bounds",
            "-f",
            "json",
        ],
        "compare -f table, the bundled example": ["compare", str(ex / "qrels.txt"), *runs, "-f", "table"],
    }
    if args.data is not None:
        q, r1, r2 = (str(args.data / n) for n in ("qrels.txt", "run00.run", "run01.run"))
        cases["eval --bounds -f json, one DL-sized run"] = ["eval", q, r1, "--bounds", "-f", "json"]
        cases["compare -f table, two DL-sized runs"] = ["compare", q, r1, r2, "-f", "table"]
    print("| command | before | after | after / before |\n|---|---|---|---|")
    for name, command in cases.items():
        times: dict[str, list[float]] = {t: [] for t in trees}
        for _ in range(args.repeat):
            for tree, src in trees.items():
                env = dict(os.environ, PYTHONPATH=src)
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "qrelkit", *command], env=env, cwd=ROOT, capture_output=True
                )
                times[tree].append(time.perf_counter() - start)
        before, after = (statistics.median(times[t]) for t in trees)
        print(f"| `{name}` | {before * 1000:.0f} ms | {after * 1000:.0f} ms | {after / before:.2f} |")
    print(f"\nmedian of {args.repeat}; 1-minute load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
