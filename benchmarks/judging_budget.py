"""Judge less, decide the same: the judging-budget replay on real judgments with a simulated model judge
(a benchmark, not a timed test).

Data: the TREC Deep Learning 2019 and 2020 passage judgments in tests/data/trec (NIST's grades 0-3 of every
judged pair), each collection on its own: FULL.

The judge (``simulated_judges.py``): the query-correlated judge, tuned per collection to the published
statistics of a GPT-4-class judge against NIST (linear kappa 0.47 on DL 2019 and 0.44 on DL 2020; mean grade
0.79 to 1.00 on DL 2019 and 0.52 to 0.79 on DL 2020). Its errors are correlated within a query: every pair of
a query shares that query's leniency s_q ~ N(mean, 0.42) grades (rounded at random per pair), added to a
grade drawn from a mix of the identity and the real judge's measured confusion matrix on DL 2021; so some
queries are graded far more leniently than others, as the real judge's are (its per-query mean grade
difference has a standard deviation of 0.42 across queries). The script prints the statistics the drawn
judge reaches beside the published ones. ``--tune`` searches the mix and the mean of s_q again.

The runs: 24 generated runs per collection, each ranking every judged passage of a query by
``skill_q x grade + N(0, 1)``, ``skill_q = weight x exp(N(0, 0.8))`` (a run's skill varies by query, as real
systems' does): 16 weights spread geometrically (nDCG@10 about 0.3 to 0.75 by the people's grades), and 8
twins, each sharing one of those runs' per-query skill with its own noise: near-ties, the pairs of runs a
small budget must not decide wrongly. The pool is every judged pair some run ranks within depth 20.

For each strategy (every one registered, or ``--strategy``), budget (5%, 10%, 20% of the pooled pairs) and
repetition, ``qrelkit.budget.replay`` buys people's (NIST's) grades and scores the strategy's estimates
against every people's grade. One line per row: the replay's columns (Kendall's tau and tau_AP, median and
10th percentile; coverage of the means' and the differences' 95% intervals; the share of run pairs decided
and decided with the wrong sign; the people's pairs spent), and a first line for the judge alone.

    nice python benchmarks/judging_budget.py              # 20 repetitions, seed 11: the tables in the docs
    python benchmarks/judging_budget.py --quick            # 3 repetitions, a quick look
    python benchmarks/judging_budget.py --speed            # the replay of 63 runs x 53 queries, timed
    python benchmarks/judging_budget.py --live             # active as a judging project runs it
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulated_judges import MATCHED, PUBLISHED, judge_statistics, judgments, matched_grades, mixed

import qrelkit
from qrelkit.budget import STRATEGIES, build_problem
from qrelkit.budget.replay import model_alone, parse_budgets, replay

MEASURE = "nDCG@10"
DEPTH = 20
BUDGETS = "5%,10%,20%"
#: 16 weights of the grade in a run's score, and which of them get a twin (a near-tie).
WEIGHTS = np.geomspace(0.15, 1.2, 16)
TWINS = (1, 3, 5, 7, 9, 11, 13, 15)
SKILL_SPREAD = 0.8


def generated_runs(
    frame: pl.DataFrame, rng: np.random.Generator, weights=WEIGHTS, twins=TWINS
) -> list[qrelkit.Run]:
    """The runs (module docstring): ``frame`` one collection's judged pairs."""
    grades = frame["grade"].to_numpy()
    queries, position = np.unique(frame["query_id"].to_numpy(), return_inverse=True)
    pairs = frame.select("query_id", "doc_id")
    runs = []
    for i, w in enumerate(weights):
        skill = w * np.exp(rng.normal(0.0, SKILL_SPREAD, len(queries)))
        copies = [f"run{i:02d}"] + ([f"run{i:02d}b"] if i in twins else [])
        for name in copies:
            score = skill[position] * grades + rng.normal(0.0, 1.0, len(grades))
            runs.append(qrelkit.run_from_frame(pairs.with_columns(pl.Series("score", score)), name=name))
    return runs


def collection(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.filter(pl.col("collection") == name).drop("collection")


def as_qrels(frame: pl.DataFrame, grades: np.ndarray, name: str) -> qrelkit.Qrels:
    return qrelkit.qrels_from_frame(frame.with_columns(pl.Series("grade", grades)), name=name)


def tenths(what: str):
    last = [-1]

    def tick(done: int, total: int) -> None:
        tenth = 10 * done // total
        if tenth > last[0]:
            last[0] = tenth
            print(f"  {what}: {tenth * 10}% ({done}/{total})", file=sys.stderr, flush=True)

    return tick


def fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def print_table(name: str, problem, people, rows) -> None:
    alone = model_alone(problem, people)
    tau, tap = alone["kendall_tau"], alone["tau_ap"]
    print(
        f"\n### {name}: {problem.n_runs} runs, {problem.n_queries} queries, {problem.n_pairs} pooled pairs\n"
    )
    print("| strategy | budget | people's pairs | tau median | tau p10 | tau_AP median | tau_AP p10 | coverage means "
          "| coverage differences | decided | wrong sign |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| judge alone | 0 | 0 | {tau:.3f} | | {tap:.3f} | | | | | |")
    for r in rows:
        print(
            f"| {r['strategy']} | {r['budget']} | {r['human_pairs']} | {fmt(r['kendall_tau']['median'])} | "
            f"{fmt(r['kendall_tau']['p10'])} | {fmt(r['tau_ap']['median'])} | {fmt(r['tau_ap']['p10'])} | "
            f"{fmt(r['coverage_means'])} | {fmt(r['coverage_differences'])} | {fmt(r['decided_pairs'])} | "
            f"{fmt(r['wrong_sign'])} |"
        )
    print()
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        print(f"- {strategy}: {next(r['estimator'] for r in rows if r['strategy'] == strategy)}")


def write_curve(folder: Path, name: str, problem, people, rows) -> None:
    """The tau curve of ``rows`` (:func:`qrelkit.report.svg.lines`, as ``budget replay --format html`` draws
    it), the model alone at 0 pairs, to ``folder/judging-budget-<collection>.svg``."""
    from qrelkit.report.svg import lines

    series = [
        (s, [(float(r["human_pairs"]), r["kendall_tau"]["median"]) for r in rows if r["strategy"] == s])
        for s in dict.fromkeys(r["strategy"] for r in rows)
    ]
    series.append(("model alone", [(0.0, model_alone(problem, people)["kendall_tau"])]))
    svg = lines(series, title=f"{name}: Kendall's tau against people's pairs ({MEASURE})",
                x_axis="people's pairs spent", y_axis="Kendall's tau (median)")  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"judging-budget-{name.lower().replace(' ', '')}.svg"
    path.write_text(svg + "\n")
    print(f"wrote {path}")


def describe_runs(problem, people) -> str:
    means = np.sort(problem.means(people))
    gaps = np.diff(means)
    return (
        f"people's nDCG@10 of the runs {means[0]:.3f} to {means[-1]:.3f}; closest pairs {gaps.min():.4f}, "
        f"{np.sort(gaps)[1]:.4f}, {np.sort(gaps)[2]:.4f} apart; {int((gaps < 0.01).sum())} adjacent pairs within 0.01"
    )


def tune(frame: pl.DataFrame, seed: int) -> None:
    """Search the judge's identity share and mean leniency per collection for the published statistics."""
    for name, (kappa, _, judge_mean) in PUBLISHED.items():
        sub = collection(frame, name)
        grades = sub["grade"].to_numpy()
        queries, position = np.unique(sub["query_id"].to_numpy(), return_inverse=True)
        best = None
        sd = MATCHED[name][2]
        for identity in np.arange(0.0, 0.61, 0.02):
            for mean in np.arange(-0.8, 0.21, 0.02):
                stats = [
                    judge_statistics(grades, _draw(grades, position, len(queries), identity, mean, sd, seed + k),
                                     position)
                    for k in range(3)
                ]  # fmt: skip
                k_ = np.mean([s["kappa"] for s in stats])
                m_ = np.mean([s["judge_mean"] for s in stats])
                loss = (k_ - kappa) ** 2 + (m_ - judge_mean) ** 2
                if best is None or loss < best[0]:
                    best = (loss, identity, mean, k_, m_)
        assert best is not None
        print(f"{name}: identity {best[1]:.2f}, mean leniency {best[2]:+.2f} (sd {sd}): kappa {best[3]:.3f} "
              f"(published {kappa}), judge's mean grade {best[4]:.3f} (published {judge_mean})")  # fmt: skip


def _draw(grades, position, queries, identity, mean, sd, seed):
    from simulated_judges import correlated_grades

    rng = np.random.default_rng(seed)
    return correlated_grades(grades, position, queries, rng, mixed(identity), (mean, sd), standardised=True)


def speed(frame: pl.DataFrame, args) -> None:
    """The replay of 63 generated runs x 53 queries (DL 2020's first 53 queries by id), every registered
    strategy (or --strategy), 3 budgets, --repeat repetitions: timed, the problem's building apart."""
    sub = collection(frame, "DL 2020")
    keep = sorted(set(sub["query_id"].to_list()))[:53]
    sub = sub.filter(pl.col("query_id").is_in(keep))
    rng = np.random.default_rng(args.seed)
    grades = sub["grade"].to_numpy()
    queries, position = np.unique(sub["query_id"].to_numpy(), return_inverse=True)
    model = matched_grades("DL 2020", grades, position, len(queries), rng)
    runs = generated_runs(sub, rng, weights=np.geomspace(0.1, 1.4, 63), twins=())
    strategies = args.strategy or sorted(STRATEGIES)
    start = time.perf_counter()
    problem, people = build_problem(as_qrels(sub, grades, "nist"), as_qrels(sub, model, "judge"), runs, MEASURE,
                                    pool_depth=DEPTH)  # fmt: skip
    built = time.perf_counter() - start
    budgets = parse_budgets(args.budget, problem.n_pairs)
    start = time.perf_counter()
    replay(problem, people, strategies, budgets, repeat=args.repeat, seed=args.seed)
    took = time.perf_counter() - start
    per = {}
    for s in strategies:
        t0 = time.perf_counter()
        replay(problem, people, [s], budgets, repeat=args.repeat, seed=args.seed)
        per[s] = time.perf_counter() - t0
    load = os.getloadavg()
    print(f"replay of {problem.n_runs} runs x {problem.n_queries} queries ({problem.n_pairs} pooled pairs, depth "
          f"{DEPTH}), {len(strategies)} strategies ({', '.join(strategies)}), {len(budgets)} budgets ({args.budget}), "
          f"{args.repeat} repetitions: {took:.1f} s (building the problem: {built:.1f} s); load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores")  # fmt: skip
    print("per strategy alone: " + ", ".join(f"{s} {t:.1f} s" for s, t in per.items()))


def register_live() -> list[str]:
    """Two strategies replaying ``active`` as a judging project runs it (``judge plan``): its first 15% of the
    budget whole queries drawn at random, as a project's calibration queries are, in place of the pilot
    spread over every query; then focused rounds (``judge plan --round``) and the draw (``judge plan``):
    ``live-rounds``; or the draw alone (a project planned once): ``live-draw``. Their names."""
    from qrelkit.budget.active import Active
    from qrelkit.budget.base import register

    class LiveRounds(Active):
        name = "live-rounds"

        def first_pairs(self, problem, state, n, rng):
            known = state.known(problem.n_pairs)
            taken: list[np.ndarray] = []
            for q in rng.permutation(problem.n_queries):
                lo, hi = problem.query_start[q], problem.query_start[q + 1]
                free = np.arange(lo, hi)[~known[lo:hi]]
                if taken and sum(map(len, taken)) + len(free) > n:
                    break
                taken.append(free)
            return np.sort(np.concatenate(taken)[:n])

    class LiveDraw(LiveRounds):
        name = "live-draw"
        focus = 0.0

    register("live-rounds")(LiveRounds)
    register("live-draw")(LiveDraw)
    return ["live-draw", "live-rounds"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--budget", default=BUDGETS)
    parser.add_argument("--strategy", action="append", default=None,
                        help="a strategy to replay, repeatable [default: every registered one]")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument("--speed", action="store_true", help="time the replay of 63 runs x 53 queries")
    parser.add_argument("--tune", action="store_true", help="search the judge's parameters again")
    parser.add_argument("--live", action="store_true",
                        help="replay active as a judging project runs it: calibration queries, then focused "
                        "rounds and the draw, or the draw alone (live-rounds, live-draw)")  # fmt: skip
    parser.add_argument("--curves", type=Path, default=None, metavar="DIR",
                        help="write each collection's budget curve (tau against people's pairs) as an SVG there")  # fmt: skip
    args = parser.parse_args()
    if not 1 <= args.repeat <= 10_000:
        parser.error(f"--repeat {args.repeat}: give 1 to 10000")
    if args.quick:
        args.repeat = 3
    frame = judgments()
    if args.tune:
        tune(frame, args.seed)
        return
    if args.speed:
        speed(frame, args)
        return
    live = register_live() if args.live else []
    strategies = args.strategy or live or sorted(STRATEGIES)  # the live ones are registered with --live only
    print(f"{MEASURE}, pool depth {DEPTH}, budgets {args.budget}, {args.repeat} repetitions, seed {args.seed}, "
          f"strategies: {', '.join(strategies)}")  # fmt: skip
    for name in PUBLISHED:
        sub = collection(frame, name)
        rng = np.random.default_rng([args.seed, len(name), int(name[-4:])])
        grades = sub["grade"].to_numpy()
        queries, position = np.unique(sub["query_id"].to_numpy(), return_inverse=True)
        model = matched_grades(name, grades, position, len(queries), rng)
        s = judge_statistics(grades, model, position)
        kappa, nist_mean, judge_mean = PUBLISHED[name]
        identity, mean, sd = MATCHED[name]
        print(f"\n{name}: judge identity {identity}, s_q ~ N({mean}, {sd}): linear kappa {s['kappa']:.3f} "
              f"(published {kappa}); mean grade NIST {s['nist_mean']:.3f} (published {nist_mean}), judge "
              f"{s['judge_mean']:.3f} (published {judge_mean}); per-query mean grade difference {s['query_diff_mean']:+.2f}, "
              f"sd {s['query_diff_sd']:.2f}, 10th-90th percentiles {s['query_diff_p10']:+.2f} to {s['query_diff_p90']:+.2f}")  # fmt: skip
        runs = generated_runs(sub, rng)
        problem, people = build_problem(as_qrels(sub, grades, "nist"), as_qrels(sub, model, "judge"), runs,
                                        MEASURE, pool_depth=DEPTH)  # fmt: skip
        print(describe_runs(problem, people))
        budgets = parse_budgets(args.budget, problem.n_pairs)
        start = time.perf_counter()
        rows = replay(problem, people, strategies, budgets, repeat=args.repeat, seed=args.seed,
                      progress=tenths(name))  # fmt: skip
        print_table(name, problem, people, rows)
        if args.curves:
            write_curve(args.curves, name, problem, people, rows)
        print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
