"""Validity of the prediction-powered estimates, by simulation on real judgments (not a timed test).

Data: the TREC Deep Learning 2019 and 2020 passage judgments (tests/data/trec: 43 + 54 = 97 queries, 20,646
judged pairs, grades 0-3), each collection on its own and the two pooled.

Two simulated model labellers (``simulated_judges.py``, shared with ``judging_budget.py``) regrade every
judged pair, afresh in every repetition:

- ``lenient``: one global confusion matrix (LENIENT, below), errors independent from pair to pair;
- ``query-correlated``: built to have the properties measured for a GPT-4-class judge (UMBRELA's prompt)
  against NIST's assessors on TREC DL (docs/prediction-powered.md states them): each pair's grade is drawn
  from the row of DL21 (0.3 x identity + 0.7 x the judge's measured P(judge grade | assessor grade) on TREC
  DL 2021 passage) for the assessor's grade, then shifted by the query's own leniency ``s_q ~ N(-0.05,
  0.55)`` (rounded at random to a whole grade per pair: floor(s_q) + 1 with probability s_q - floor(s_q)),
  and clipped to 0..3. So its errors are correlated within a query and its leniency varies from query to
  query. On these judgments it gives linear kappa 0.47 with NIST (measured for the real judge: 0.44-0.49),
  a per-query mean grade difference of +0.36 with standard deviation 0.40 across queries (measured +0.36,
  0.42), 10th and 90th percentiles -0.03 and +0.99 (-0.14, +0.94), median per-query kappa 0.43 (0.45).

The runs: generated once (seeded), each ranking every query's judged passages by
``skill_q * grade + N(0, 1)``, where ``skill_q = weight * exp(N(0, spread))`` is the run's skill on that
query. The per-query spread makes the runs look like real systems: real runs succeed on some queries and
fail on others, and the TREC DL 2019 runs reach about 0.3 to 0.76 nDCG@10 on average with per-query values
across the whole range. Four runs are made that way (weak, fair, good, best: about 0.29 to 0.71 nDCG@10
over the 97 queries, per-query standard deviation 0.22 to 0.30). A fifth, ``saturated`` (no per-query
spread, 0.96 nDCG@10, 41% of its queries at 1), is kept as a stated stress case: values crowded at the
top of the measure's range are where every normal or t-interval is least reliable.

Two designs per collection and |H| (10, 20 and 30 people-judged queries), because an interval over queries
can be about two things:

- ``population``: each repetition draws a query set the collection's size from its queries *with*
  replacement, and H = the first |H| of it, U = the rest; the target is the mean of the people's values
  over the collection's queries, which is the mean of the population the drawn set comes from. H and U are
  independent samples of one population, as prediction-powered inference assumes; its interval and any
  t-interval over queries claim their coverage for this design.
- ``finite``: the collection's own queries every time, H = |H| of them drawn *without* replacement, U = the
  others; the target is the people's mean over those queries (a finite population, of which H is a large
  part): every interval, the people's t-interval included, covers it more often than its level says.

Estimators (:func:`qrelkit.estimation.ppi.interval`): ``ppi++`` and ``ppi`` with the default interval
(``t``: the t quantile with |H| - 1 degrees of freedom, variances with ddof 1), ``ppi++ normal`` (ppi_py's
interval, equal to ``ppi_mean_ci`` to 1e-10: tests/crosscheck/test_ppi.py), ``human`` and ``model``. One
more row is a diagnostic computed here, not an estimator qrelkit offers: ``ppi++ t cross-fit``, the t
interval with a leave-one-out lambda (each human-judged query's residual weighted by the lambda fitted on
the other queries), to see whether fitting lambda on the queries it weighs costs coverage.

LENIENT, P(model grade | NIST grade), rows and columns 0..3, follows the shape the published comparisons of
LLM judges with NIST assessors report (Thomas, Spielman, Craswell and Mitra, SIGIR 2024; Upadhyay et al.,
arXiv:2406.06519 and arXiv:2411.08275, 2024): more lenient than the assessors, best on the extremes; the
entries are this script's assumption in that shape (exact agreement about 60%, Cohen's kappa about 0.4).

    nice python benchmarks/ppi_validity.py               # 4000 repetitions, seed 27: the tables in the docs
    python benchmarks/ppi_validity.py --reps 200          # a quicker look

prints, per judge and |H|, a coverage table (every collection, design and run) and a mean-width table. The
Monte Carlo standard error of a coverage near 95% is sqrt(0.95 * 0.05 / reps): 0.34 points at 4000
repetitions.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import qrelkit  # noqa: E402
from qrelkit.estimation.ppi import interval, power_lambda  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulated_judges import (  # noqa: E402, F401
    DATA,
    DL21,
    FILES,
    JUDGES,
    LENIENCY,
    LENIENT,
    MEASURED_DL21,
    judge_grades,
    judgments,
)

POOLED = "DL 2019+2020"
#: (name, weight of the grade in the score, per-query spread of that weight; see the docstring).
SYSTEMS = (
    ("weak", 0.15, 1.0),
    ("fair", 0.35, 1.0),
    ("good", 0.6, 1.0),
    ("best", 1.0, 1.0),
    ("saturated", 2.2, 0.0),
)
MEASURE = "nDCG@10"
SIZES = (10, 20, 30)
ESTIMATORS = ("ppi++", "ppi++ normal", "ppi", "human", "model")
DIAGNOSTICS = ("ppi++ t cross-fit",)
ROWS = ESTIMATORS + DIAGNOSTICS
DESIGNS = ("population", "finite")


def generated_runs(frame: pl.DataFrame, rng: np.random.Generator) -> list[qrelkit.Run]:
    grades = frame["grade"].to_numpy()
    queries, position = np.unique(frame["query_id"].to_numpy(), return_inverse=True)
    runs = []
    for name, weight, spread in SYSTEMS:
        skill = weight * np.exp(rng.normal(0.0, spread, len(queries)))
        score = skill[position] * grades + rng.normal(0.0, 1.0, len(grades))
        run = frame.select("query_id", "doc_id").with_columns(pl.Series("score", score))
        runs.append(qrelkit.run_from_frame(run, name=name))
    return runs


def per_query(results: qrelkit.Results, queries: list[str]) -> dict[str, np.ndarray]:
    """Each run's values in the order of ``queries``."""
    out = {}
    for run in results.run_names:
        values = results.values(MEASURE, run)
        out[run] = np.array([values[q] for q in queries])
    return out


def cross_fit(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> tuple[float, float, float]:
    """(estimate, low, high) of ppi++'s t interval with a leave-one-out lambda: query i's residual is
    ``y_i - lam_(-i) yhat_i``, lam_(-i) fitted (as :func:`power_lambda`) on H without i and all of U."""
    n, big_n = len(y), len(yhat_u)
    lams = np.array([power_lambda(np.delete(y, i), np.delete(yhat, i), yhat_u) for i in range(n)])
    lam = float(lams.mean())
    rectifier = y - lams * yhat
    value = float(lam * yhat_u.mean() + rectifier.mean())
    se = math.sqrt(lam**2 * float(np.var(yhat_u, ddof=1)) / big_n + float(np.var(rectifier, ddof=1)) / n)
    half = float(stats.t.ppf(0.975, n - 1)) * se
    return value, value - half, value + half


def estimates(y, yhat, h, u) -> dict[str, tuple[float, float, float]]:
    """Every estimator's and diagnostic's (estimate, low, high) for one draw of H and U."""
    out = {}
    for e in ESTIMATORS:
        name, kind = (e.split()[0], e.split()[1]) if " " in e else (e, "t")
        i = interval(name, y[h], yhat[h], yhat[u], kind=kind)
        out[e] = (i.value, i.low, i.high)
    out[DIAGNOSTICS[0]] = cross_fit(y[h], yhat[h], yhat[u])
    return out


def covered(v: np.ndarray, t: float) -> float:
    """The share of repetitions whose interval holds ``t`` (an interval that is not measurable, NaN, does
    not)."""
    return float(np.mean((v[:, 1] <= t) & (t <= v[:, 2])))


def summary(judge: str, size: int, found: dict, target: dict) -> None:
    print(f"{judge} judge, |H| = {size}: coverage of the 95% interval (mean width below each):\n")
    print("| collection | design | run | target | " + " | ".join(ROWS) + " |")
    print("|---|---|---|---|" + "---|" * len(ROWS))
    for (collection, design, run), t in target.items():
        cells = []
        for e in ROWS:
            v = found[judge, size, collection, design, run, e]
            cells.append(f"{covered(v, t):.1%} ({np.nanmean(v[:, 2] - v[:, 1]):.3f})")
        print(f"| {collection} | {design} | {run} | {t:.4f} | " + " | ".join(cells) + " |")
    print()


def bands(found: dict, target: dict) -> None:
    """Per judge, design and |H|: the lowest and highest coverage of each estimator over the rows, and in how
    many rows ppi++ (t) is narrower than human."""
    print("Range of coverage over collections and runs (rows where ppi++ is narrower than human):\n")
    print("| judge | design | \\|H\\| | " + " | ".join(ROWS) + " | ppi++ narrower than human |")
    print("|---|---|---|" + "---|" * (len(ROWS) + 1))
    for judge in JUDGES:
        for design in DESIGNS:
            for size in SIZES:
                keys = [k for k in target if k[1] == design]
                cells = []
                for e in ROWS:
                    c = [covered(found[judge, size, *k, e], target[k]) for k in keys]
                    cells.append(f"{min(c):.1%}-{max(c):.1%}")
                narrower = sum(
                    np.nanmean(np.diff(found[judge, size, *k, "ppi++"][:, 1:], axis=1))
                    < np.nanmean(np.diff(found[judge, size, *k, "human"][:, 1:], axis=1))
                    for k in keys
                )
                print(
                    f"| {judge} | {design} | {size} | "
                    + " | ".join(cells)
                    + f" | {narrower} of {len(keys)} |"
                )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000:
        parser.error(f"--reps {args.reps}: give 1 to 100000 repetitions")
    rng = np.random.default_rng(args.seed)
    frame = judgments()
    nist = qrelkit.qrels_from_frame(frame.drop("collection"), name="nist")
    runs = generated_runs(frame, rng)
    queries = sorted(set(frame["query_id"].to_list()))
    people = per_query(qrelkit.evaluate(nist, runs, [MEASURE]), queries)
    owner = dict(zip(frame["query_id"].to_list(), frame["collection"].to_list(), strict=True))
    members = {POOLED: np.arange(len(queries))}
    for collection in FILES:
        members[collection] = np.array([i for i, q in enumerate(queries) if owner[q] == collection])
    target = {
        (c, d, r): float(people[r][idx].mean()) for c, idx in members.items() for d in DESIGNS for r in people
    }
    found = {
        (j, size, *key, e): np.empty((args.reps, 3))
        for j in JUDGES
        for size in SIZES
        for key in target
        for e in ROWS
    }
    grades = frame["grade"].to_numpy()
    position = np.searchsorted(queries, frame["query_id"].to_numpy())
    model_frame = frame.drop("collection")
    start = time.perf_counter()
    for rep in range(args.reps):
        for judge in JUDGES:
            draw = judge_grades(judge, grades, position, len(queries), rng)
            model_q = qrelkit.qrels_from_frame(
                model_frame.with_columns(pl.Series("grade", draw)), name="model"
            )
            model = per_query(qrelkit.evaluate(model_q, runs, [MEASURE]), queries)
            for collection, idx in members.items():
                sample = idx[rng.integers(0, len(idx), len(idx))]  # with replacement: iid from the population
                order = rng.permutation(idx)  # the collection's own queries, H without replacement
                for size in SIZES:
                    draws = {
                        "population": (sample[:size], sample[size:]),
                        "finite": (order[:size], order[size:]),
                    }
                    for design, (h, u) in draws.items():
                        for run in people:
                            for e, v in estimates(people[run], model[run], h, u).items():
                                found[judge, size, collection, design, run, e][rep] = v
    elapsed = time.perf_counter() - start
    sizes = ", ".join(f"{c} {len(idx)}" for c, idx in members.items())
    print(f"{args.reps} repetitions, seed {args.seed}, {MEASURE}, |H| = {', '.join(map(str, SIZES))} "
          f"(queries: {sizes}), judges: {', '.join(JUDGES)}; designs: population (query sets drawn with "
          f"replacement) and finite (the collection's own queries, H without replacement); Monte Carlo SE "
          f"of a 95% coverage {math.sqrt(0.95 * 0.05 / args.reps):.1%}; {elapsed:.0f} s\n")  # fmt: skip
    bands(found, target)
    for judge in JUDGES:
        for size in SIZES:
            summary(judge, size, found, target)


if __name__ == "__main__":
    main()
