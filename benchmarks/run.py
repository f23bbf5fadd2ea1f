"""Side-by-side timing of qrelkit and its peers, as whole processes, in one invocation.

Each tool evaluates per-query nDCG@10 and R@100 from files; runs alternate between tools, repeat, and
report the median wall time and peak RSS (from the kernel's accounting of each child process), the ratio of
each peer to qrelkit, and whether every tool's per-query numbers agree under matching conventions
(trec_eval's: linear gain, ties by docid descending, float32 scores, judged queries missing from the run
skipped). The Markdown table goes to stdout and ``--out``.

    python benchmarks/run.py --data benchmarks/data/7m --repeat 3 --tools qrelkit,pytrec_eval,ir_measures
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
QRELKIT = [PY, "-m", "qrelkit"]
TREC_CONVENTIONS = [
    "--gain",
    "linear",
    "--ties",
    "docid_desc",
    "--precision",
    "single",
    "--missing-queries",
    "skip",
    "--negative",
    "unjudged",
]


#: The two measures each tool computes: cutoff measures (the default), or, with ``--full-depth``, measures
#: that need every returned document (qrelkit's name, pytrec_eval's name).
CUTOFF = (("nDCG@10", "ndcg_cut_10"), ("R@100", "recall_100"))
FULL_DEPTH = (("AP", "map"), ("NumRet", "num_ret"))


def commands(
    tool: str, qrels: Path, runs: list[Path], out: Path, memory_limit: str | None, measures=CUTOFF
) -> list[str]:
    if tool == "qrelkit":
        cmd = [
            *QRELKIT,
            "eval",
            str(qrels),
            *map(str, runs),
            "-m",
            measures[0][0],
            "-m",
            measures[1][0],
            *TREC_CONVENTIONS,
            "-f",
            "tsv",
            "-q",
            "-o",
            str(out),
        ]
        return cmd + (["--memory-limit", memory_limit] if memory_limit else [])
    if tool == "pytrec_eval":
        if len(runs) > 1:
            return [
                PY,
                str(HERE / "peers" / "pytrec_eval_many.py"),
                str(qrels),
                str(out.parent),
                *map(str, runs),
            ]
        peer = [PY, str(HERE / "peers" / "pytrec_eval_eval.py"), str(qrels), str(runs[0]), str(out)]
        return [*peer, measures[0][1], measures[1][1]]
    if tool == "qrelkit-inmemory":
        return [PY, str(HERE / "peers" / "qrelkit_inmemory.py"), str(qrels), str(out), *map(str, runs)]
    if tool == "ir_measures":
        return [PY, str(HERE / "peers" / "ir_measures_eval.py"), str(qrels), str(runs[0]), str(out)]
    if tool == "ranx":
        return [PY, str(HERE / "peers" / "ranx_eval.py"), str(qrels), str(runs[0]), str(out)]
    raise SystemExit(f"unknown tool {tool!r}")


def run_once(cmd: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in bytes of the child, exit status)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except KeyboardInterrupt:
        proc.kill()
        raise
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
        print(f"  failed ({proc.returncode}): {' '.join(cmd)}\n{err}", file=sys.stderr)
    return wall, usage.ru_maxrss * 1024, proc.returncode


def read_values(tool: str, out: Path, several: bool) -> dict[str, tuple[float, float]]:
    """Per-query (nDCG@10, R@100), keyed by query id (``run/query`` when several runs were evaluated)."""
    values: dict[str, tuple[float, float]] = {}
    if tool == "qrelkit":
        ndcg, recall = {}, {}
        for line in out.read_text().splitlines():
            if line.startswith("#") or line.startswith("run\t"):
                continue
            run, qid, measure, value = line.split("\t")
            if qid == "all":
                continue
            key = f"{run}/{qid}" if several else qid
            (ndcg if measure.startswith(("nDCG", "AP")) else recall)[key] = float(value)
        return {q: (ndcg[q], recall[q]) for q in ndcg}
    for line in out.read_text().splitlines():
        if tool == "qrelkit-inmemory":
            run, qid, a, b = line.split("\t")
            qid = f"{run}/{qid}" if several else qid
        else:
            qid, a, b = line.split("\t")
        values[qid] = (float(a), float(b))
    return values


def agreement(reference: dict[str, tuple[float, float]], other: dict[str, tuple[float, float]]) -> str:
    common = set(reference) & set(other)
    if not common:
        return "no common queries"
    worst = max(max(abs(reference[q][0] - other[q][0]), abs(reference[q][1] - other[q][1])) for q in common)
    extra = len(set(reference) ^ set(other))
    note = f"; {extra} queries on one side only" if extra else ""
    if not extra and all(reference[q] == other[q] for q in common):
        return f"identical floats over {len(common)} queries"
    return f"max |diff| {worst:.1e} over {len(common)} queries{note}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="folder with qrels.txt and *.run")
    parser.add_argument("--tools", default="qrelkit,pytrec_eval,ir_measures,ranx")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-limit", help="passed to qrelkit eval --memory-limit")
    parser.add_argument("--out", type=Path, help="append the Markdown table to this file")
    parser.add_argument(
        "--full-depth",
        action="store_true",
        help="AP and NumRet (every document) instead of nDCG@10 and R@100",
    )
    args = parser.parse_args()
    measures = FULL_DEPTH if args.full_depth else CUTOFF
    loads: list[float] = []

    import qrelkit

    compileall.compile_dir(Path(qrelkit.__file__).parent, quiet=1)
    qrels = args.data / "qrels.txt"
    runs = sorted(args.data.glob("*.run"))
    lines = sum(1 for r in runs for _ in r.open("rb"))
    tools = args.tools.split(",")
    times: dict[str, list[float]] = {t: [] for t in tools}
    peaks: dict[str, list[int]] = {t: [] for t in tools}
    values: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            for tool in tools if rep % 2 == 0 else reversed(tools):  # alternate the order
                out = Path(tmp) / f"{tool}.tsv"
                loads.append(os.getloadavg()[0])
                wall, peak, status = run_once(commands(tool, qrels, runs, out, args.memory_limit, measures))
                loads.append(os.getloadavg()[0])
                print(
                    f"  {tool:12s} rep {rep + 1}: {wall:7.2f} s  {peak / 2**20:8.0f} MB  (load {loads[-2]:.1f}"
                    f"-{loads[-1]:.1f})",
                    file=sys.stderr,
                )
                if status == 0:
                    times[tool].append(wall)
                    peaks[tool].append(peak)
                    if tool not in values and (len(runs) == 1 or tool.startswith("qrelkit")):
                        values[tool] = read_values(tool, out, several=len(runs) > 1)
    base = statistics.median(times["qrelkit"]) if times.get("qrelkit") else None
    title = (
        f"{args.data.name}: {len(runs)} run(s), {lines:,} run lines; median of {args.repeat}; "
        f"{platform.machine()}, {os.cpu_count()} cores; 1-minute load average {min(loads):.1f}-{max(loads):.1f}"
        + ("; measures " + ", ".join(q for q, _ in measures))
    )
    table = [
        f"### {title}",
        "",
        "| tool | wall (median) | peak RSS | time / qrelkit | agreement with qrelkit |",
        "|---|---|---|---|---|",
    ]
    for tool in tools:
        if not times[tool]:
            table.append(f"| {tool} | failed | | | |")
            continue
        med = statistics.median(times[tool])
        ratio = f"{med / base:.1f}x" if base else ""
        agree = (
            agreement(values["qrelkit"], values[tool])
            if tool != "qrelkit" and tool in values and "qrelkit" in values
            else ("(reference)" if tool == "qrelkit" else "")
        )
        table.append(f"| {tool} | {med:.2f} s | {max(peaks[tool]) / 2**20:.0f} MB | {ratio} | {agree} |")
    text = "\n".join(table) + "\n"
    print(text)
    if args.out:
        with args.out.open("a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
