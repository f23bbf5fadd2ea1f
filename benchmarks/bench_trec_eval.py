"""``qrelkit trec_eval -m all_trec`` beside trec_eval 10 (built with -O2 from source) and pytrec_eval.

    python benchmarks/bench_trec_eval.py --data benchmarks/data/7m --trec-eval-src ../trec_eval-src

Builds trec_eval from ``--trec-eval-src`` into a temporary directory (``make CFLAGS=-O2 ...``), generates
the data with ``generate.py --scale 7m`` when it is missing, then runs each tool ``--repeat`` times as a
separate process and reports the median wall time, the peak RSS, the ratio to qrelkit and whether
qrelkit's output is byte-identical to trec_eval's. All three compute every measure of ``-m all_trec`` (for
pytrec_eval, every measure it supports); ``-c`` is passed because the generated judgments have queries
that the run lacks, which trec_eval 10 refuses otherwise. The machine's ``uptime`` is printed before and
after: other work on the machine distorts the times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build_trec_eval(src: Path, into: Path) -> Path:
    """Compile trec_eval with -O2 (and its usual flags) in a copy of its sources; the binary's path."""
    work = into / "trec_eval-src"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git", "*.o", "trec_eval"))
    flags = '-O2 -I. -Wall -Wno-unused-but-set-variable -DVERSIONID=\\"10.0-rc3\\"'
    subprocess.run(
        ["make", "-s", "-C", str(work), "trec_eval", f"CFLAGS={flags}"], check=True, capture_output=True
    )
    return work / "trec_eval"


def run_once(cmd: list[str], out: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in bytes, exit status) of one child process writing to ``out``."""
    with out.open("wb") as fh:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
        print(f"  failed ({code}): {' '.join(cmd)}\n{err}", file=sys.stderr)
    return wall, usage.ru_maxrss * 1024, code


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=HERE / "data" / "7m")
    parser.add_argument("--trec-eval-src", type=Path, default=HERE.parent.parent / "trec_eval-src")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tools", default="qrelkit,trec_eval,pytrec_eval")
    args = parser.parse_args()

    qrels, run = args.data / "qrels.txt", args.data / "run00.run"
    if not (qrels.is_file() and run.is_file()):
        sys.path.insert(0, str(HERE))
        from generate import SCALES, generate

        generate(*SCALES["7m"], args.data, 20261130)
    lines = sum(1 for _ in run.open("rb"))
    tools = args.tools.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        binary = build_trec_eval(args.trec_eval_src, tmpdir) if "trec_eval" in tools else None
        commands = {
            "qrelkit": [sys.executable, "-m", "qrelkit", "trec_eval", "-c", "-m", "all_trec", str(qrels), str(run)],
            "trec_eval": [str(binary), "-c", "-m", "all_trec", str(qrels), str(run)],
            "pytrec_eval": [sys.executable, str(HERE / "peers" / "pytrec_eval_all.py"), str(qrels), str(run),
                            str(tmpdir / "pytrec_eval.values")],
        }  # fmt: skip
        print(f"before: {uptime()}")
        timings: dict[str, list[tuple[float, int]]] = {}
        for _ in range(args.repeat):
            for tool in tools:
                wall, rss, code = run_once(commands[tool], tmpdir / f"{tool}.out")
                if code == 0:
                    timings.setdefault(tool, []).append((wall, rss))
        print(f"after:  {uptime()}")
        same = None
        if "qrelkit" in timings and "trec_eval" in timings:
            ours, theirs = (tmpdir / "qrelkit.out").read_bytes(), (tmpdir / "trec_eval.out").read_bytes()
            same = ours == theirs
            if not same:
                a, b = ours.decode().splitlines(), theirs.decode().splitlines()
                diff = [y for x, y in zip(a, b, strict=False) if x != y]
                names = sorted({line.split()[0] for line in diff})
                print(f"qrelkit's output differs from trec_eval's on {len(diff)} of {len(b)} lines: {names}")
    base = statistics.median(w for w, _ in timings["qrelkit"]) if "qrelkit" in timings else None
    print(f"\n### {args.data.name}: {lines:,} run lines, -c -m all_trec; median of {args.repeat}\n")
    print("| tool | wall (median) | peak RSS | time / qrelkit | output |")
    print("|---|---|---|---|---|")
    for tool in tools:
        if tool not in timings:
            print(f"| {tool} | failed | | | |")
            continue
        wall = statistics.median(w for w, _ in timings[tool])
        rss = max(r for _, r in timings[tool]) / 2**20
        ratio = f"{wall / base:.1f}x" if base else ""
        note = {"qrelkit": "(reference)", "trec_eval": "byte-identical" if same else "differs"}.get(
            tool, "its own measures (trec_eval 9)"
        )
        print(f"| {tool} | {wall:.2f} s | {rss:.0f} MB | {ratio} | {note} |")


if __name__ == "__main__":
    main()
