"""How close ``qrelkit eval --memory-limit`` keeps the whole process to its limit, on a gzipped run.

The data are ``generate.py``'s (``--queries`` x ``--depth`` lines, seeded), the run gzipped. The script
prints the floor (the interpreter and the readers' libraries), the judgments' share (the resident memory
reading them adds), the smallest limit qrelkit accepts for these judgments on each route
(:func:`qrelkit.evaluation.plan.smallest_limit`: a streamed run, a run sorted on disk by DuckDB), and then,
for limits from each route's smallest one up (and one 10% below it, refused), the peak resident memory of
``qrelkit eval`` (a fresh child each time, ``ru_maxrss``) and its ratio to the limit, for a measure that
streams each query's top documents (nDCG@10) and one that needs every row (AP: sorted on disk by DuckDB
when the run, held whole, would pass the limit).

    python benchmarks/memory_limit.py --queries 3000 --depth 1000 --repeat 1
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRAPPER = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
PROBE = (
    "from qrelkit.formats.external import process_bytes\n"
    "import duckdb, polars, pyarrow.csv, qrelkit.evaluation.files\n"
    "from qrelkit.evaluation.plan import read_judgments, whole_plan\n"
    "from qrelkit.measures.conventions import DEFAULT\n"
    "floor = process_bytes()\n"
    "read_judgments(whole_plan(QRELS, (), DEFAULT))\n"
    "print(floor, process_bytes() - floor)"
)


def peak(*command: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, check=True
    )
    code, kb = out.stdout.split()
    return int(code), int(kb) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    from qrelkit.evaluation.plan import smallest_limit

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--queries", str(args.queries), "--depth",
                        str(args.depth), "--runs", "1", "--out", str(folder)], check=True, capture_output=True)  # fmt: skip
        qrels, plain = folder / "qrels.txt", folder / "run00.run"
        run = folder / "run00.run.gz"
        with plain.open("rb") as src, gzip.open(run, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst)
        plain.unlink()
        probe = subprocess.run([sys.executable, "-c", f"QRELS = {str(qrels)!r}\n{PROBE}"], capture_output=True,
                               text=True, check=True).stdout.split()  # fmt: skip
        floor, share = int(probe[0]), int(probe[1])
        smallest, estimate = smallest_limit(qrels)
        on_disk = smallest_limit(qrels, sorted_on_disk=True)[0]
        mb = 1e6
        print(f"run: {run.stat().st_size / mb:.1f} MB gzipped; judgments: {qrels.stat().st_size / mb:.1f} MB")
        print(f"floor (interpreter, libraries): {floor / mb:.0f} MB; judgments' share: {share / mb:.0f} MB "
              f"measured, {estimate / mb:.0f} MB estimated; smallest limit accepted: {smallest / mb:.0f} MB streamed, "
              f"{on_disk / mb:.0f} MB sorted on disk")  # fmt: skip
        print()
        print("| limit MB | measure | peak RSS MB | peak / limit | exit |")
        print("|---:|---|---:|---:|---:|")
        for measure, least in (("nDCG@10", smallest), ("AP", on_disk)):
            for limit in (int(least * 0.9), least, int(least * 1.25), int(least * 1.5), least * 2):
                peaks, codes = [], set()
                for _ in range(args.repeat):
                    code, rss = peak(sys.executable, "-m", "qrelkit", "eval", str(qrels), str(run), "-m", measure,
                                     "--memory-limit", str(limit), "-f", "tsv")  # fmt: skip
                    peaks.append(rss)
                    codes.add(code)
                top = max(peaks)
                print(f"| {limit / mb:.0f} | {measure} | {top / mb:.0f} | {top / limit:.2f} | "
                      f"{','.join(map(str, sorted(codes)))} |")  # fmt: skip


if __name__ == "__main__":
    main()
