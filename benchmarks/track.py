"""A whole track's submissions, as organisers and participants evaluate them: ``--runs`` runs (63 by default)
of 100 to 1,000 documents for each of 50 queries, with long document ids (``msmarco_v2.1_doc_NN_NNNNNNNNN#N_NNNNNNNN``,
about 40 bytes) and full-precision float scores (``repr`` of a float64, 17 significant digits), against
graded judgments of about 300 documents a query. Everything is derived from ``--seed``.

Timed, whole processes, side by side in one invocation (the order alternating between repetitions), medians
of wall time and of the child's user + system CPU:

- ``trec_eval 10`` (built with -O2 from ``--trec-eval-src``) in a loop, one process per run, as organisers'
  scripts call it; ``qrelkit trec_eval`` in the same loop (the same arguments, output compared byte for
  byte);
- ``qrelkit eval`` of every run in one call;
- pytrec_eval (one evaluator reused across the runs), ir_measures and ranx, each one process over every run
  with its own readers.

Each tool computes nDCG@10, R@100 and AP (trec_eval's ``ndcg_cut.10``, ``recall.100``, ``map``) under
trec_eval's conventions; qrelkit's per-query values are compared with pytrec_eval's (at 1e-12).

    python benchmarks/track.py --trec-eval-src /tmp/trec_eval-10.0 --repeat 5 [--runs 63] [--out DIR] \
        [--before SRC]

``--before SRC`` (another source tree's ``src``, e.g. from ``git archive``, with its native scanner built)
runs ``qrelkit eval`` from it too, in the same alternation, its values checked against pytrec_eval's as well.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PY = sys.executable
QRELKIT = [PY, "-m", "qrelkit"]
TREC = ["--gain", "linear", "--ties", "docid_desc", "--precision", "single", "--missing-queries", "skip"]
TREC += ["--negative", "unjudged"]
QUERIES = 50

PYTREC = """
import sys, pytrec_eval
qrels_path, out, *runs = sys.argv[1:]
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100", "map"})
with open(out, "w") as fh:
    for path in runs:
        with open(path) as f:
            res = ev.evaluate(pytrec_eval.parse_run(f))
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        for q, v in res.items():
            fh.write(f"{name}\\t{q}\\t{v['ndcg_cut_10']!r}\\t{v['recall_100']!r}\\t{v['map']!r}\\n")
"""
IR_MEASURES = """
import sys, ir_measures
from ir_measures import AP, R, nDCG
qrels_path, out, *runs = sys.argv[1:]
qrels = list(ir_measures.read_trec_qrels(qrels_path))
with open(out, "w") as fh:
    for path in runs:
        for m in ir_measures.iter_calc([nDCG @ 10, R @ 100, AP], qrels, ir_measures.read_trec_run(path)):
            fh.write(f"{m.query_id}\\t{m.measure}\\t{m.value!r}\\n")
"""
RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels_path, out, *runs = sys.argv[1:]
qrels = Qrels.from_file(qrels_path, kind="trec")
with open(out, "w") as fh:
    for path in runs:
        run = Run.from_file(path, kind="trec")
        s = evaluate(qrels, run, ["ndcg@10", "recall@100", "map"], return_mean=True, make_comparable=True)
        fh.write(f"{path}\\t{s}\\n")
"""


def doc_id(rng: np.random.Generator) -> str:
    return f"msmarco_v2.1_doc_{rng.integers(0, 60):02d}_{rng.integers(0, 10**9):09d}#{rng.integers(0, 9)}_{rng.integers(0, 10**8):08d}"


def generate(out: Path, runs: int, seed: int) -> tuple[Path, list[Path]]:
    """The judgments and ``runs`` runs (the same files for the same arguments)."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    queries = [str(2000 + 37 * i) for i in range(QUERIES)]
    pools = {q: sorted({doc_id(rng) for _ in range(int(rng.integers(150, 450)))}) for q in queries}
    grades = {q: {d: int(rng.choice(4, p=[0.5, 0.25, 0.15, 0.1])) for d in pools[q]} for q in queries}
    qrels = out / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q in queries for d, g in grades[q].items()))
    paths = []
    for r in range(runs):
        depth = int(rng.choice([100, 100, 500, 1000, 1000]))
        lines = []
        for q in queries:
            judged = list(grades[q])
            k = min(len(judged), int(depth * rng.uniform(0.1, 0.3)))
            picked = [judged[i] for i in rng.choice(len(judged), size=k, replace=False)]
            ids = picked + [doc_id(rng) for _ in range(depth - k)]
            bonus = np.array([grades[q].get(d, 0) for d in ids], dtype=float)
            score = rng.normal(0.0, 1.0, depth) + 0.8 * bonus
            order = np.argsort(-score, kind="stable")
            lines += [f"{q} Q0 {ids[i]} {n} {float(score[i])!r} run{r:02d}\n" for n, i in enumerate(order, 1)]
        path = out / f"run{r:02d}.run"
        path.write_text("".join(lines))
        paths.append(path)
    return qrels, paths


def timed(cmds: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, user + system CPU seconds of the children) of running ``cmds`` one after another."""
    start, cpu = time.perf_counter(), 0.0
    for cmd in cmds:
        with open(os.devnull, "wb") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(
                f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
            )
        cpu += usage.ru_utime + usage.ru_stime
    return time.perf_counter() - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=63)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--out", type=Path, help="where the data are written (default: a temporary folder)")
    parser.add_argument("--trec-eval-src", type=Path, help="trec_eval's sources (built with -O2)")
    parser.add_argument("--tools", default="trec_eval,qrelkit-trec_eval,qrelkit,pytrec_eval,ir_measures,ranx")
    parser.add_argument("--before", type=Path, help="another qrelkit source tree's src: its eval runs too")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    tools = args.tools.split(",")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(HERE.parent / "src")  # this tree's qrelkit (byte-compiled below)
    with tempfile.TemporaryDirectory() as tmp:
        data = args.out or Path(tmp) / "track"
        qrels, runs = generate(data, args.runs, args.seed)
        rows = sum(p.read_bytes().count(b"\n") for p in runs)
        judged = qrels.read_bytes().count(b"\n")
        print(f"{len(runs)} runs, {rows:,} lines ({sum(p.stat().st_size for p in runs) / 1e6:.0f} MB), "
              f"{judged:,} judgments; load {os.getloadavg()}")  # fmt: skip
        trec_m = ["-m", "ndcg_cut.10", "-m", "recall.100", "-m", "map"]
        out = Path(tmp)
        jobs: dict[str, list[list[str]]] = {}
        if "trec_eval" in tools:
            if args.trec_eval_src is None:
                raise SystemExit("--trec-eval-src is needed for trec_eval")
            from bench_trec_eval import build_trec_eval

            binary = build_trec_eval(args.trec_eval_src, out)
            jobs["trec_eval 10, one process per run"] = [
                [str(binary), *trec_m, str(qrels), str(r)] for r in runs
            ]
            for r in runs[:5]:  # the drop-in's bytes are the binary's
                ours = subprocess.run(
                    [*QRELKIT, "trec_eval", *trec_m, str(qrels), str(r)], capture_output=True, env=env
                )
                theirs = subprocess.run([str(binary), *trec_m, str(qrels), str(r)], capture_output=True)
                assert ours.stdout == theirs.stdout, r
        if "qrelkit-trec_eval" in tools:
            jobs["qrelkit trec_eval, one process per run"] = [
                [*QRELKIT, "trec_eval", *trec_m, str(qrels), str(r)] for r in runs
            ]
        envs: dict[str, dict[str, str]] = {}  # a job's own environment (the tree it runs from)
        if "qrelkit" in tools:
            jobs["qrelkit eval, every run in one call"] = [[
                *QRELKIT, "eval", str(qrels), *map(str, runs), "-m", "nDCG@10", "-m", "R@100", "-m", "AP", *TREC,
                "-f", "tsv", "-q", "-o", str(out / "qrelkit.tsv"),
            ]]  # fmt: skip
            if args.before is not None:
                name = "qrelkit eval, every run in one call [before]"
                jobs[name] = [[*jobs["qrelkit eval, every run in one call"][0][:-1], str(out / "before.tsv")]]
                envs[name] = {**env, "PYTHONPATH": str(args.before)}
        if "pytrec_eval" in tools:
            jobs["pytrec_eval, one evaluator, one process"] = [
                [PY, "-c", PYTREC, str(qrels), str(out / "pytrec.tsv"), *map(str, runs)]
            ]
        if "ir_measures" in tools:
            jobs["ir_measures, one process"] = [
                [PY, "-c", IR_MEASURES, str(qrels), str(out / "irm.tsv"), *map(str, runs)]
            ]
        if "ranx" in tools:
            jobs["ranx, one process"] = [[PY, "-c", RANX, str(qrels), str(out / "ranx.tsv"), *map(str, runs)]]
        import compileall

        compileall.compile_dir(HERE.parent / "src" / "qrelkit", quiet=1)
        if args.before is not None:
            compileall.compile_dir(args.before / "qrelkit", quiet=1)
        walls: dict[str, list[float]] = {name: [] for name in jobs}
        cpus: dict[str, list[float]] = {name: [] for name in jobs}
        loads = [os.getloadavg()[0]]
        for rep in range(args.repeat):
            for name in list(jobs) if rep % 2 == 0 else reversed(list(jobs)):
                wall, cpu = timed(jobs[name], envs.get(name, env))
                walls[name].append(wall)
                cpus[name].append(cpu)
            loads.append(os.getloadavg()[0])
        if "qrelkit" in tools and "pytrec_eval" in tools:
            check(out / "qrelkit.tsv", out / "pytrec.tsv")
            if args.before is not None:
                check(out / "before.tsv", out / "pytrec.tsv")
        reference = "pytrec_eval, one evaluator, one process"
        ref = statistics.median(walls[reference]) if reference in walls else None
        ref_cpu = statistics.median(cpus[reference]) if reference in cpus else None
        print(f"median of {args.repeat}; 1-minute load average {min(loads):.1f}-{max(loads):.1f}; "
              f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")  # fmt: skip
        print("| tool | wall | CPU | pytrec_eval's wall / this | pytrec_eval's CPU / this |")
        print("|---|---:|---:|---:|---:|")
        for name in jobs:
            w, c = statistics.median(walls[name]), statistics.median(cpus[name])
            speed = f"{ref / w:.2f}x" if ref else "-"
            speed_cpu = f"{ref_cpu / c:.2f}x" if ref_cpu else "-"
            print(f"| {name} | {w:.2f} s | {c:.2f} s | {speed} | {speed_cpu} |")


def check(ours: Path, theirs: Path) -> None:
    """qrelkit's per-query nDCG@10, R@100 and AP equal pytrec_eval's (1e-12)."""
    want: dict[tuple[str, str], tuple[float, ...]] = {}
    for line in theirs.read_text().splitlines():
        run, q, *values = line.split("\t")
        want[(run, q)] = tuple(map(float, values))
    got: dict[tuple[str, str], dict[str, float]] = {}
    for line in ours.read_text().splitlines():
        if line.startswith(("#", "run\t")):
            continue
        run, q, measure, value = line.split("\t")
        if q != "all":
            got.setdefault((run, q), {})[measure.split("(")[0]] = float(value)  # R(rel=1)@100: R
    assert set(got) == set(want), (len(got), len(want))
    for key, values in want.items():
        mine = (got[key]["nDCG@10"], got[key]["R"], got[key]["AP"])
        assert all(abs(a - b) <= 1e-12 for a, b in zip(mine, values, strict=True)), (key, mine, values)


if __name__ == "__main__":
    main()
