"""In-process evaluation per call: values already in memory, nDCG@10 and R@100 per query, after warm-up.

    python benchmarks/run.py --in-process --data benchmarks/data/dl19-x20 --repeat 20

Each tool evaluates values it has already read (its own readers, outside the timing) the way its
documentation shows: ``qrelkit.evaluate(qrels, [run], ["nDCG@10", "R@100"], conventions)`` under trec_eval's
conventions (as ``run.py`` does), pytrec_eval's ``RelevanceEvaluator.evaluate`` with one evaluator built
once, ranx's ``evaluate`` once numba has compiled (the first call is a warm-up for every tool), and
ir_measures' ``iter_calc``. The 20-run row times one ``qrelkit.evaluate`` call over every run against
pytrec_eval's loop over them with its one evaluator. Reported: the median wall time per call and the
median CPU time of the process per call (every thread; on a machine shared with other work, the figure
that work inflates least), each with its ratio to qrelkit's, and the largest per-query difference from
qrelkit's numbers.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MEASURES = ["nDCG@10", "R@100"]
PYTREC = ("ndcg_cut_10", "recall_100")


def _timed(call: Callable[[], Any], repeat: int) -> tuple[tuple[float, float], Any]:
    """((median wall seconds, median CPU seconds of this process) per call after one warm-up call, the
    last call's value). CPU time counts every thread of the process and little of what other work on the
    machine does to wall time."""
    value = call()
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        value = call()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return (statistics.median(walls), statistics.median(cpus)), value


def _qrelkit(qrels_path: Path, run_paths: list[Path]) -> tuple[Callable[[], Any], Callable[[], Any]]:
    from qrelkit import Conventions, evaluate, read_qrels, read_run

    conventions = Conventions(
        gain="linear", ties="docid_desc", precision="single", missing_queries="skip", negative="unjudged"
    )
    qrels = read_qrels(qrels_path)
    runs = [read_run(p) for p in run_paths]
    return (
        lambda: evaluate(qrels, [runs[0]], MEASURES, conventions),
        lambda: evaluate(qrels, runs, MEASURES, conventions),
    )


def _qrelkit_values(results: Any, run: str | None = None) -> dict[str, tuple[float, float]]:
    ndcg, recall = (results.values(m, run) for m in MEASURES)
    return {q: (ndcg[q], recall[q]) for q in ndcg}


def _pytrec_eval(qrels_path: Path, run_paths: list[Path]) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import pytrec_eval

    with qrels_path.open() as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    runs = []
    for path in run_paths:
        with path.open() as fh:
            runs.append(pytrec_eval.parse_run(fh))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC))
    return lambda: evaluator.evaluate(runs[0]), lambda: [evaluator.evaluate(r) for r in runs]


def _ranx(qrels_path: Path, run_paths: list[Path]) -> Callable[[], Any]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_paths[0]), kind="trec")
    return lambda: (
        list(run.keys()),
        evaluate(qrels, run, ["ndcg@10", "recall@100"], return_mean=False, make_comparable=True),
    )


def _ir_measures(qrels_path: Path, run_paths: list[Path]) -> Callable[[], Any]:
    import ir_measures
    from ir_measures import R, nDCG

    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_paths[0])))
    return lambda: list(ir_measures.iter_calc([nDCG @ 10, R @ 100], qrels, run))


def _difference(ours: dict[str, tuple[float, float]], theirs: dict[str, tuple[float, float]]) -> str:
    common = set(ours) & set(theirs)
    if not common:
        return "no common queries"
    if set(ours) == set(theirs) and all(ours[q] == theirs[q] for q in common):
        return f"identical floats over {len(common)} queries"
    worst = max(max(abs(a - b) for a, b in zip(ours[q], theirs[q], strict=True)) for q in common)
    return f"max |diff| {worst:.1e} over {len(common)} queries"


def in_process(data: Path, tools: list[str], repeat: int) -> str:
    """The Markdown table of the in-process case over ``data`` (qrels.txt and its *.run files)."""
    qrels_path, run_paths = data / "qrels.txt", sorted(data.glob("*.run"))
    lines = sum(1 for _ in run_paths[0].open("rb"))
    loads = [os.getloadavg()[0]]
    rows: list[tuple[str, tuple[float, float], str]] = []
    ours: dict[str, tuple[float, float]] = {}
    many_base = None
    if "qrelkit" in tools:
        one, many = _qrelkit(qrels_path, run_paths)
        seconds, results = _timed(one, repeat)
        ours = _qrelkit_values(results)
        rows.append(("qrelkit `evaluate`, 1 run", seconds, "(reference)"))
        if len(run_paths) > 1:
            many_base, results = _timed(many, max(3, repeat // 4))
            rows.append((f"qrelkit `evaluate`, {len(run_paths)} runs in one call", many_base, "(reference)"))
    if "pytrec_eval" in tools:
        one, many = _pytrec_eval(qrels_path, run_paths)
        seconds, values = _timed(one, repeat)
        theirs = {q: (v[PYTREC[0]], v[PYTREC[1]]) for q, v in values.items()}
        rows.append(("pytrec_eval, 1 run, one evaluator", seconds, _difference(ours, theirs)))
        if len(run_paths) > 1:
            seconds, _ = _timed(many, max(3, repeat // 4))
            rows.append((f"pytrec_eval, loop over {len(run_paths)} runs, one evaluator", seconds, ""))
    if "ranx" in tools:
        seconds, (keys, scores) = _timed(_ranx(qrels_path, run_paths), repeat)
        theirs = {
            q: (float(a), float(b))
            for q, a, b in zip(keys, scores["ndcg@10"], scores["recall@100"], strict=True)
        }
        rows.append(("ranx, 1 run (numba compiled in the warm-up)", seconds, _difference(ours, theirs)))
    if "ir_measures" in tools:
        seconds, values = _timed(_ir_measures(qrels_path, run_paths), repeat)
        found: dict[str, dict[str, float]] = {}
        for m in values:
            found.setdefault(m.query_id, {})[str(m.measure)] = m.value
        theirs = {q: (v.get("nDCG@10", 0.0), v.get("R@100", 0.0)) for q, v in found.items()}
        rows.append(("ir_measures, 1 run", seconds, _difference(ours, theirs)))
    loads.append(os.getloadavg()[0])
    one_base = rows[0][1] if "qrelkit" in tools else None
    table = [
        f"### {data.name}, in process: {len(run_paths)} run(s) of {lines:,} lines; median of {repeat} calls "
        f"after a warm-up; {os.cpu_count()} cores; 1-minute load average {min(loads):.1f}-{max(loads):.1f}",
        "",
        "| tool | time per call (median) | time / qrelkit | CPU per call (median) | CPU / qrelkit "
        "| agreement with qrelkit |",
        "|---|---|---|---|---|---|",
    ]
    for name, (wall, cpu), agree in rows:
        base = many_base if "runs" in name and "1 run" not in name else one_base
        ratio = f"{wall / base[0]:.2f}x" if base else ""
        cpu_ratio = f"{cpu / base[1]:.2f}x" if base else ""
        table.append(
            f"| {name} | {wall * 1000:.1f} ms | {ratio} | {cpu * 1000:.1f} ms | {cpu_ratio} | {agree} |"
        )
    return "\n".join(table) + "\n"
