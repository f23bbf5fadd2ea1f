"""Where the time of ``qrelkit trec_eval -q -c -m all_trec`` goes on a small run, against trec_eval 10's whole
process: the interpreter's own start, ``site``, the imports of the path without numpy, and the work
(reading, the measures, formatting), each as the difference of two whole processes run side by side.

    python benchmarks/startup_floor.py --data DIR --trec-eval-src ../trec_eval-src [--repeat 21] [--before SRC]

``DIR`` holds ``qrels.txt`` and ``run00.run`` (``generate.py --queries 53 --depth 100 --out DIR`` gives the
5,300-line run of 53 queries x 100 documents); the output of every qrelkit command is compared with the binary's first (``rbp``,
whose C code reads uninitialised variables, excepted, as in docs/trec_eval.md). Timed, alternating in order
between repetitions, medians of the child's user + system CPU (what load inflates least) and of wall time:

- trec_eval 10 (built with -O2);
- ``python -S -c pass`` (the interpreter alone), ``python -c pass`` (with ``site``);
- ``python -c "import ..."`` of the standard library's modules the path loads, then of every module it
  loads (qrelkit's included), found by running it once in a child;
- ``qrelkit trec_eval`` through the installed ``qrelkit`` command (no ``runpy``) and ``python -m qrelkit``;
  with ``--before SRC`` (another tree's ``src``), ``python -m qrelkit`` from it too.

Then, in one process, warm: the path's reading and measures (``lean_argv``) and its formatting
(``render_trec_eval``), median of ``--repeat`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

LOADED = """
import io, sys
before = set(sys.modules)
shown, sys.stdout = sys.stdout, io.StringIO()
from qrelkit.__main__ import _lean_trec_eval
assert _lean_trec_eval(sys.argv[1:]), "the path without numpy stepped aside"
loaded, sys.stdout = sorted(set(sys.modules) - before), shown
import json
print(json.dumps(loaded))
"""

WARM = """
import json, sys, time
from qrelkit.evaluation.trec_lean import lean_argv
from qrelkit.report.trec_eval import render_trec_eval
repeat, argv = int(sys.argv[1]), sys.argv[2:]
work, render = [], []
for _ in range(repeat):
    t0 = time.process_time()
    out = lean_argv(argv)
    t1 = time.process_time()
    render_trec_eval(out)
    t2 = time.process_time()
    work.append(t1 - t0)
    render.append(t2 - t1)
native = getattr(out, "text", None) is not None  # laid out in C already (evaluation.trec_native)
print(json.dumps([sorted(work)[len(work) // 2], sorted(render)[len(render) // 2], native]))
"""


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall seconds, the child's user + system CPU seconds, its stdout)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, out.read()


def _without_rbp(text: bytes) -> list[bytes]:
    return [line for line in text.splitlines() if not line.startswith(b"rbp ")]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="a folder with qrels.txt and run00.run")
    parser.add_argument("--trec-eval-src", type=Path, required=True, help="trec_eval's sources")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--before", type=Path, help="another qrelkit source tree's src, run alternately")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import compileall

    from bench_trec_eval import build_trec_eval

    compileall.compile_dir(SRC / "qrelkit", quiet=1)
    if args.before is not None:
        compileall.compile_dir(args.before / "qrelkit", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(SRC)
    py = sys.executable
    files = [str(args.data / "qrels.txt"), str(args.data / "run00.run")]
    argv = ["-q", "-c", "-m", "all_trec", *files]
    loaded = json.loads(
        subprocess.run([py, "-c", LOADED, *argv], env=env, capture_output=True, check=True).stdout
    )
    loaded = [
        m for m in loaded if m != "qrelkit.__main__" and not m.startswith("typing.")
    ]  # (typing's aliases)
    stdlib = [m for m in loaded if not m.startswith(("qrelkit", "_"))]
    command = Path(py).with_name("qrelkit")
    with tempfile.TemporaryDirectory() as tmp:
        binary = str(build_trec_eval(args.trec_eval_src, Path(tmp)))
        jobs: dict[str, list[str]] = {
            "trec_eval 10 -q -c -m all_trec": [binary, *argv],
            "python -S -c pass": [py, "-S", "-c", "pass"],
            "python -c pass": [py, "-c", "pass"],
            f"python -c 'import' the path's {len(stdlib)} standard modules": [py, "-c", f"import {', '.join(stdlib)}"],
            f"python -c 'import' all {len(loaded)} modules the path loads": [py, "-c", f"import {', '.join(loaded)}"],
            "qrelkit trec_eval -q -c -m all_trec (the qrelkit command)": [str(command), "trec_eval", *argv],
            "python -m qrelkit trec_eval -q -c -m all_trec": [py, "-m", "qrelkit", "trec_eval", *argv],
        }  # fmt: skip
        envs = {name: env for name in jobs}
        if args.before is not None:
            name = "python -m qrelkit trec_eval -q -c -m all_trec [before]"
            jobs[name] = [py, "-m", "qrelkit", "trec_eval", *argv]
            envs[name] = {**env, "PYTHONPATH": str(args.before)}
        if not command.is_file():
            del jobs["qrelkit trec_eval -q -c -m all_trec (the qrelkit command)"]
        want = _without_rbp(_timed(jobs["trec_eval 10 -q -c -m all_trec"], env)[2])
        for name, cmd in jobs.items():
            if "trec_eval" in name and not name.startswith("trec_eval 10"):
                assert _without_rbp(_timed(cmd, envs[name])[2]) == want, (
                    f"{name}: output differs from the binary's"
                )
        walls: dict[str, list[float]] = {name: [] for name in jobs}
        cpus: dict[str, list[float]] = {name: [] for name in jobs}
        loads = [os.getloadavg()[0]]
        for rep in range(args.repeat):
            for name in list(jobs) if rep % 2 == 0 else reversed(list(jobs)):
                wall, cpu, _ = _timed(jobs[name], envs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
            loads.append(os.getloadavg()[0])
        warm = json.loads(subprocess.run([py, "-c", WARM, str(args.repeat), *argv], env=env, capture_output=True,
                                         check=True).stdout)  # fmt: skip
    lines = Path(files[1]).read_bytes().count(b"\n")
    ref = statistics.median(cpus["trec_eval 10 -q -c -m all_trec"])
    ref_wall = min(walls["trec_eval 10 -q -c -m all_trec"])
    print(f"### {lines:,} run lines; median of {args.repeat}; {os.cpu_count()} cores; "
          f"1-minute load average {min(loads):.1f}-{max(loads):.1f}\n")  # fmt: skip
    print("| command | CPU (median) | / trec_eval's CPU | wall (min) | / trec_eval's wall (min) |")
    print("|---|---:|---:|---:|---:|")
    for name in jobs:
        c, w = statistics.median(cpus[name]), min(walls[name])
        print(f"| {name} | {c * 1000:.1f} ms | {c / ref:.1f}x | {w * 1000:.1f} ms | {w / ref_wall:.1f}x |")
    path = (
        "the native call (trec_native): reading, the measures and the text"
        if warm[2]
        else ("the path without numpy (trec_lean): reading and the measures")
    )
    print(f"\nIn one process, warm (median of {args.repeat}), {path} (lean_argv) "
          f"{warm[0] * 1000:.1f} ms, formatting (render_trec_eval) {warm[1] * 1000:.1f} ms.")  # fmt: skip
    print(f"Standard modules: {' '.join(stdlib)}")


if __name__ == "__main__":
    main()
