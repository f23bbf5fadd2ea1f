"""Peak memory of ``qrelkit eval`` on a run just under the small path's size bound (32 MB), with short
document ids and with the same run where one id is 512 bytes long (the id bound): the small path's columns
used to be rows x the longest id, so one long id multiplied them by 64. Each measurement is a fresh child
process (``ru_maxrss``); ``--src`` runs another checkout's sources for a before/after comparison.

    python benchmarks/small_path_memory.py --repeat 3
    python benchmarks/small_path_memory.py --repeat 3 --src /path/to/other/checkout/src
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WRAPPER = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "sys.stderr.write(p.stderr.decode()[-500:])\n"
    "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def write_files(folder: Path, target: int = 32_000_000) -> dict[str, tuple[Path, Path]]:
    qrels = folder / "qrels.txt"
    with qrels.open("w") as out:
        for q in range(2000):
            for d in range(0, 50):
                out.write(f"q{q} 0 doc{q}-{d} {d % 4}\n")
    lines: list[str] = []
    size = 0
    q = 0
    while size < target - 200:
        for r in range(1, 1001):
            line = f"q{q % 2000} Q0 doc{q % 2000}-{r} {r} {1000 - r}.5 sys\n"
            lines.append(line)
            size += len(line)
            if size >= target - 600:
                break
        q += 1
    short = folder / "short.run"
    short.write_text("".join(lines))
    long_line = lines[0].replace("doc0-1", "L" * 512)
    long = folder / "long.run"
    long.write_text(long_line + "".join(lines[1:]))
    return {"short ids": (qrels, short), "one 512-byte id": (qrels, long)}


def measure(src: str, qrels: Path, run: Path) -> tuple[int, int]:
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-m", "qrelkit", "eval", str(qrels), str(run), "-m", "nDCG@10", "-f", "tsv"]
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, env=env, check=True
    )
    code, kb = out.stdout.split()
    return int(code), int(kb) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp))
        print(f"sources: {args.src}")
        print("| run | file MB | peak RSS MB (median) | exit |")
        print("|---|---:|---:|---:|")
        base = None
        for name, (qrels, run) in files.items():
            peaks, codes = [], set()
            for _ in range(args.repeat):
                code, peak = measure(args.src, qrels, run)
                peaks.append(peak)
                codes.add(code)
            median = statistics.median(peaks)
            base = base or median
            print(f"| {name} | {run.stat().st_size / 1e6:.1f} | {median / 1e6:.0f} ({median / base:.2f}x) | "
                  f"{','.join(map(str, sorted(codes)))} |")  # fmt: skip


if __name__ == "__main__":
    main()
