"""What the judgment bounds cost: ``qrelkit eval QRELS RUNS -f tsv`` with ``--no-bounds`` beside ``--bounds``.

    python benchmarks/bounds.py --data benchmarks/data/100k --repeat 5
    python benchmarks/bounds.py --data benchmarks/data/dl19 --repeat 11 -m nDCG@10 -m AP

Each variant runs ``--repeat`` times as a separate process (alternating, so load on the machine falls on
both alike); the median wall time of each and their ratio are printed, with the machine's ``uptime`` before
and after. The bounds read each run again and evaluate it once as 0 (with Judged@k) and once per distinct
cutoff with the unjudged documents raised: about (2 + cutoffs) evaluations where eval does one.
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


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "qrelkit", *args], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder with qrels.txt and *.run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-m", "--measure", action="append", default=[], help="measures [default: eval's]")
    args = parser.parse_args()
    qrels, runs = args.data / "qrels.txt", sorted(str(p) for p in args.data.glob("*.run"))
    if not qrels.is_file() or not runs:
        sys.exit(f"{args.data}: needs qrels.txt and at least one *.run (benchmarks/generate.py writes them)")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    base = ["eval", str(qrels), *runs, "-f", "tsv", *[x for m in args.measure for x in ("-m", m)]]
    print(f"uptime before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    times: dict[str, list[float]] = {"--no-bounds": [], "--bounds": []}
    for _ in range(args.repeat):
        for flag, seen in times.items():
            seen.append(timed([*base, flag], env))
    print(f"uptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    lines = sum(1 for r in runs for _ in open(r, "rb"))  # noqa: SIM115
    without, with_ = (statistics.median(times[f]) for f in times)
    print(f"{args.data}: {len(runs)} run(s), {lines} lines; median of {args.repeat}")
    print(f"  eval --no-bounds  {without:7.3f} s")
    print(f"  eval --bounds     {with_:7.3f} s   ratio {with_ / without:.2f}")


if __name__ == "__main__":
    main()
