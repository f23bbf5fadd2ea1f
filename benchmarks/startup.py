"""Whole-process times of the commands people run at small sizes, side by side in one invocation: qrelkit's
``--version``, ``--help``, ``eval`` and ``trec_eval`` (two measures, and ``-q -c -m all_trec``) on a
DL19-sized run, beside pytrec_eval, trec_eval 10 (built with -O2 from ``--trec-eval-src``) and an empty interpreter; with ``--before SRC`` (another source
tree's ``src``, e.g. from ``git archive``) each qrelkit command also runs from it, alternating with this one.

    python benchmarks/startup.py --data benchmarks/data/dl19 --trec-eval-src ../trec_eval-src --repeat 11 \\
        [--before /tmp/base/src]

Both qrelkit trees are byte-compiled first (as installing a wheel does); the order of the commands
alternates between repetitions; reported: the median and the minimum wall time of each, the median of its
user + system CPU time, and the 1-minute load average around them.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TREC = ["--gain", "linear", "--ties", "docid_desc", "--precision", "single", "--missing-queries", "skip"]
TREC += ["--negative", "unjudged"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=HERE / "data" / "dl19")
    parser.add_argument("--trec-eval-src", type=Path, help="trec_eval's sources (built with -O2)")
    parser.add_argument("--before", type=Path, help="another qrelkit source tree's src, run alternately")
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_trec_eval import build_trec_eval
    from generate import DL19_SCALES, generate_dl19

    if args.data.name in DL19_SCALES and not (args.data / "qrels.txt").is_file():
        generate_dl19(*DL19_SCALES[args.data.name], args.data, 20261130)
    qrels, run = str(args.data / "qrels.txt"), str(args.data / "run00.run")
    trees = {"after": SRC, **({"before": args.before} if args.before else {})}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    envs = {name: {**env, "PYTHONPATH": str(tree)} for name, tree in trees.items()}
    for tree in trees.values():
        compileall.compile_dir(tree / "qrelkit", quiet=1)
    py = [sys.executable]
    eval_args = ["eval", qrels, run, "-m", "nDCG@10", "-m", "R@100", *TREC, "-f", "tsv", "-q"]
    trec_args = ["-c", "-m", "ndcg_cut.10", "-m", "recall.100", qrels, run]
    all_args = ["-q", "-c", "-m", "all_trec", qrels, run]
    ours = {
        "qrelkit --version": ["-m", "qrelkit", "--version"],
        "qrelkit --help": ["-m", "qrelkit", "--help"],
        "qrelkit eval (nDCG@10, R@100)": ["-m", "qrelkit", *eval_args],
        "qrelkit trec_eval -c (ndcg_cut.10, recall.100)": ["-m", "qrelkit", "trec_eval", *trec_args],
        "qrelkit trec_eval -q -c -m all_trec": ["-m", "qrelkit", "trec_eval", *all_args],
    }
    with tempfile.TemporaryDirectory() as tmp:
        peer = str(HERE / "peers" / "pytrec_eval_eval.py")
        peers = {
            "pytrec_eval (ndcg_cut_10, recall_100)": [*py, peer, qrels, run, str(Path(tmp) / "pytrec.tsv")],
            "python -c pass": [*py, "-c", "pass"],
        }
        if args.trec_eval_src:
            binary = build_trec_eval(args.trec_eval_src, Path(tmp))
            peers["trec_eval 10 -c (ndcg_cut.10, recall.100)"] = [str(binary), *trec_args]
            peers["trec_eval 10 -q -c -m all_trec"] = [str(binary), *all_args]
        jobs = [(f"{name} [{tree}]", [*py, *cmd], envs[tree]) for name, cmd in ours.items() for tree in trees]
        jobs += [(name, cmd, env) for name, cmd in peers.items()]
        times: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}
        loads = [os.getloadavg()[0]]
        for rep in range(args.repeat):
            for name, cmd, job_env in jobs if rep % 2 == 0 else reversed(jobs):
                wall, cpu, status, err = _timed(cmd, job_env)
                times.setdefault(name, []).append(wall)
                cpus.setdefault(name, []).append(cpu)
                if status != 0:
                    raise SystemExit(f"{name} exited {status}: {err.decode()[-2000:]}")
            loads.append(os.getloadavg()[0])
    with open(run, "rb") as fh:
        lines = sum(1 for _ in fh)
    print(
        f"### start-up and small files: {args.data.name} ({lines:,} run lines); median of {args.repeat}; "
        f"{os.cpu_count()} cores; 1-minute load average {min(loads):.1f}-{max(loads):.1f}\n"
    )
    print("| command | wall (median) | wall (min) | CPU, user + sys (median) |\n|---|---|---|---|")
    for name, walls in times.items():
        print(
            f"| {name} | {statistics.median(walls) * 1000:.0f} ms | {min(walls) * 1000:.0f} ms "
            f"| {statistics.median(cpus[name]) * 1000:.0f} ms |"
        )


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, bytes]:
    """(wall seconds, the child's user + system CPU seconds, its exit status, its stderr) of one run: CPU
    time is what other work on a shared machine inflates least."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, proc.returncode, err.read()


if __name__ == "__main__":
    main()
