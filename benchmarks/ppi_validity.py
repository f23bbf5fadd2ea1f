"""Validity of the prediction-powered estimates, by simulation on real judgments (not a timed test).

Data: the TREC Deep Learning 2019 and 2020 passage judgments (tests/data/trec: 43 + 54 = 97 queries, 20,646
judged pairs, grades 0-3), each collection on its own and the two pooled.

The model labeller: a simulated lenient judge regrades every judged pair by drawing from the row of
LENIENT for the people's (NIST) grade, afresh in every repetition.

The runs: generated once (seeded), each ranking every query's judged passages by
``skill_q * grade + N(0, 1)``, where ``skill_q = weight * exp(N(0, spread))`` is the run's skill on that
query. The per-query spread makes the runs look like real systems: real runs succeed on some queries and
fail on others, and the TREC DL 2019 runs reach about 0.3 to 0.76 nDCG@10 on average with per-query values
across the whole range. Four runs are made that way (weak, fair, good, best: about 0.29 to 0.71 nDCG@10
over the 97 queries, per-query standard deviation 0.22 to 0.30). A fifth, ``saturated`` (no per-query
spread, 0.96 nDCG@10, 41% of its queries at 1), is kept as a stated stress case: 30 values crowded at the
top of the measure's range are where every normal or t-interval is least reliable.

Two designs per collection, because an interval over queries can be about two things:

- ``population``: each repetition draws a query set the collection's size from its queries *with*
  replacement, and H = the first 30 of it, U = the rest; the target is the mean of the people's values over
  the collection's queries, which is the mean of the population the drawn set comes from. H and U are
  independent samples of one population, as prediction-powered inference assumes; its interval and any
  t-interval over queries claim their coverage for this design.
- ``finite``: the collection's own queries every time, H = 30 of them drawn *without* replacement, U = the
  others; the target is the people's mean over those queries (a finite population, of which H is 30 of 43,
  54 or 97): every interval, the people's t-interval included, covers it more often than its level says.

Estimators: the four of :func:`qrelkit.estimation.ppi.interval` (``ppi++``, ``ppi``, ``human``, ``model``),
which equal ppi_py to 1e-10 (tests/crosscheck/test_ppi.py). Two more rows are diagnostics computed here,
not estimators qrelkit offers, to find where ``ppi++`` loses coverage:

- ``ppi++ (true lambda)``: ppi++'s interval with lambda fixed at the value its formula gives on the whole
  population (all of the collection's queries, this repetition's model grades) instead of fitted on H;
- ``ppi++ (t, ddof 1)``: ppi++'s fitted lambda, but both variances divided by the count less one and the
  t quantile with |H| - 1 degrees of freedom in place of the normal one (ppi_py divides by the count and
  uses the normal quantile).

LENIENT, P(model grade | NIST grade), rows and columns 0..3. Its shape follows what the published
comparisons of LLM judges with NIST assessors on TREC DL report: the LLM judge is more lenient than the
assessors, promoting irrelevant passages to "related" and related ones to "highly relevant", and agrees
best on the extremes (Thomas, Spielman, Craswell and Mitra, "Large language models can accurately predict
searcher preferences", SIGIR 2024; Upadhyay et al., "UMBRELA: UMbrela is the (Open-Source Reproduction of
the) Bing RELevance Assessor", arXiv:2406.06519, 2024, on TREC DL 2019-2023; Upadhyay et al., "A Large-Scale
Study of Relevance Assessments with Large Language Models", arXiv:2411.08275, 2024: "human assessors
appear to be stricter"). The entries are this script's assumption in that shape (exact agreement about
60%, Cohen's kappa about 0.4, every off-diagonal error leaning upwards), not a table copied from those
papers.

    nice python benchmarks/ppi_validity.py               # 4000 repetitions, seed 27: the tables in the docs
    python benchmarks/ppi_validity.py --reps 200          # a quicker look

prints a summary table (coverage of every estimator, per collection, design and run), then one full table
per collection and design (coverage, mean bias, mean width). The Monte Carlo standard error of a coverage
near 95% is sqrt(0.95 * 0.05 / reps): 0.34 points at 4000 repetitions.
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

DATA = ROOT / "tests" / "data" / "trec"
FILES = {"DL 2019": "qrels.dl19-passage.txt", "DL 2020": "qrels.dl20-passage.txt"}
POOLED = "DL 2019+2020"

#: P(model grade = column | NIST grade = row), grades 0..3 (see the module docstring for its source).
LENIENT = np.array(
    [
        [0.70, 0.22, 0.06, 0.02],
        [0.15, 0.45, 0.30, 0.10],
        [0.04, 0.16, 0.50, 0.30],
        [0.02, 0.06, 0.22, 0.70],
    ]
)
#: (name, weight of the grade in the score, per-query spread of that weight; see the docstring).
SYSTEMS = (
    ("weak", 0.15, 1.0),
    ("fair", 0.35, 1.0),
    ("good", 0.6, 1.0),
    ("best", 1.0, 1.0),
    ("saturated", 2.2, 0.0),
)
MEASURE = "nDCG@10"
HUMAN_QUERIES = 30
ESTIMATORS = ("ppi++", "ppi", "human", "model")
DIAGNOSTICS = ("ppi++ (true lambda)", "ppi++ (t, ddof 1)")
DESIGNS = ("population", "finite")


def judgments() -> pl.DataFrame:
    frames = []
    for collection, name in FILES.items():
        frame = pl.read_csv(DATA / name, separator=" ", has_header=False, new_columns=["q", "it", "d", "g"],
                            schema_overrides={"q": pl.String, "d": pl.String, "g": pl.Int64})  # fmt: skip
        frames.append(frame.select(pl.col("q").alias("query_id"), pl.col("d").alias("doc_id"),
                                   pl.col("g").alias("grade"), pl.lit(collection).alias("collection")))  # fmt: skip
    return pl.concat(frames)


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


def tuned_lambda(y: np.ndarray, yhat: np.ndarray, n: int, big_n: int) -> float:
    """ppi++'s lambda for |H| = n and |U| = big_n, from the moments of the whole population (y, yhat)."""
    var = float(np.var(yhat))
    if not var > 0.0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def lambda_interval(
    y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, lam: float, small_sample: bool
) -> tuple[float, float, float]:
    """(estimate, low, high) of ppi++'s interval at a given lambda; ``small_sample``: variances with
    ddof 1 and the t quantile with n - 1 degrees of freedom, else ppi_py's (ddof 0, normal quantile)."""
    n, big_n = len(y), len(yhat_u)
    rectifier = y - lam * yhat
    value = float(lam * yhat_u.mean() + rectifier.mean())
    ddof = 1 if small_sample else 0
    se = math.sqrt(
        lam**2 * float(np.var(yhat_u, ddof=ddof)) / big_n + float(np.var(rectifier, ddof=ddof)) / n
    )
    quantile = float(stats.t.ppf(0.975, n - 1)) if small_sample else float(stats.norm.isf(0.025))
    return value, value - quantile * se, value + quantile * se


def estimates(y, yhat, h, u, population) -> dict[str, tuple[float, float, float]]:
    """Every estimator's and diagnostic's (estimate, low, high) for one draw of H and U."""
    out = {}
    for e in ESTIMATORS:
        i = interval(e, y[h], yhat[h], yhat[u])
        out[e] = (i.value, i.low, i.high)
    lam = tuned_lambda(y[population], yhat[population], len(h), len(u))
    out[DIAGNOSTICS[0]] = lambda_interval(y[h], yhat[h], yhat[u], lam, small_sample=False)
    fitted = power_lambda(y[h], yhat[h], yhat[u])
    out[DIAGNOSTICS[1]] = lambda_interval(y[h], yhat[h], yhat[u], fitted, small_sample=True)
    return out


def summary(found: dict, target: dict, reps: int) -> None:
    names = ESTIMATORS + DIAGNOSTICS
    print("Coverage of the 95% interval (share of repetitions whose interval holds the target):\n")
    print("| collection | design | run | target | " + " | ".join(names) + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    for (collection, design, run), t in target.items():
        cells = []
        for e in names:
            v = found[collection, design, run, e]
            cells.append(f"{np.mean((v[:, 1] <= t) & (t <= v[:, 2])):.1%}")
        print(f"| {collection} | {design} | {run} | {t:.4f} | " + " | ".join(cells) + " |")
    print()


def table(collection: str, design: str, found: dict, target: dict) -> None:
    print(f"{collection}, {design} design:\n")
    print("| run | target | estimator | coverage of the 95% interval | mean bias | mean width |")
    print("|---|---|---|---|---|---|")
    for (c, d, run), t in target.items():
        if (c, d) != (collection, design):
            continue
        for e in ESTIMATORS + DIAGNOSTICS:
            v = found[c, d, run, e]
            cover = np.mean((v[:, 1] <= t) & (t <= v[:, 2]))
            print(
                f"| {run} | {t:.4f} | {e} | {cover:.1%} | {np.mean(v[:, 0]) - t:+.4f} | {np.mean(v[:, 2] - v[:, 1]):.4f} |"
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
    found = {(*key, e): np.empty((args.reps, 3)) for key in target for e in ESTIMATORS + DIAGNOSTICS}
    grades = frame["grade"].to_numpy()
    cumulative = LENIENT.cumsum(axis=1)
    model_frame = frame.drop("collection")
    start = time.perf_counter()
    for rep in range(args.reps):
        draw = (rng.random(len(grades))[:, None] > cumulative[grades]).sum(axis=1)
        model_q = qrelkit.qrels_from_frame(model_frame.with_columns(pl.Series("grade", draw)), name="model")
        model = per_query(qrelkit.evaluate(model_q, runs, [MEASURE]), queries)
        for collection, idx in members.items():
            sample = idx[rng.integers(0, len(idx), len(idx))]  # with replacement: iid from the population
            order = rng.permutation(idx)  # the collection's own queries, H without replacement
            draws = {"population": (sample[:HUMAN_QUERIES], sample[HUMAN_QUERIES:]),
                     "finite": (order[:HUMAN_QUERIES], order[HUMAN_QUERIES:])}  # fmt: skip
            for design, (h, u) in draws.items():
                for run in people:
                    for e, v in estimates(people[run], model[run], h, u, idx).items():
                        found[collection, design, run, e][rep] = v
    elapsed = time.perf_counter() - start
    sizes = ", ".join(f"{c} {len(idx)}" for c, idx in members.items())
    print(f"{args.reps} repetitions, seed {args.seed}, {MEASURE}, H = {HUMAN_QUERIES} queries "
          f"(queries: {sizes}), designs: population (query sets drawn with replacement) and finite "
          f"(the collection's own queries, H without replacement); Monte Carlo SE of a 95% coverage "
          f"{math.sqrt(0.95 * 0.05 / args.reps):.1%}; {elapsed:.0f} s\n")  # fmt: skip
    summary(found, target, args.reps)
    for collection in members:
        for design in DESIGNS:
            table(collection, design, found, target)


if __name__ == "__main__":
    main()
