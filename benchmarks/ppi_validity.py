"""Validity of the prediction-powered estimates, by simulation on real judgments (not a timed test).

On the TREC Deep Learning 2019 and 2020 passage judgments (tests/data/trec, 97 queries, 20,646 judged pairs,
grades 0-3), a simulated lenient model labeller regrades every judged pair by drawing from the row of
LENIENT for the people's grade. Generated runs rank each query's judged passages by a noisy function of their
grade (four systems of different quality, seeded). Each repetition draws the model's grades afresh, then
a query set of 97 from the collection's queries with replacement (the intervals of every estimator, like
any t-interval over queries, are about the population of queries a set is drawn from) and H = 30 of that
set at random; the people's grades on H are the NIST grades. The target is the full-judgment mean (NIST
grades on all 97 queries). Reported per run, over the repetitions: how often each estimator's 95% interval
covers the target, its mean bias, and its mean interval width. A second table keeps the collection's own
97 queries every time (H = 30 of them without replacement): the target is then a finite population's mean,
and every interval, the people's t-interval included, covers it more often than 95%.

The estimators are :func:`qrelkit.estimation.ppi.interval`, the function ``qrelkit.estimate`` applies to
each run's per-query values.

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

    python benchmarks/ppi_validity.py                 # 1000 repetitions, seed 27 (about 5 minutes)
    python benchmarks/ppi_validity.py --reps 200      # a quicker look

prints two Markdown tables (the ones in docs/prediction-powered.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import qrelkit  # noqa: E402
from qrelkit.estimation.ppi import interval  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec"
FILES = ("qrels.dl19-passage.txt", "qrels.dl20-passage.txt")

#: P(model grade = column | NIST grade = row), grades 0..3 (see the module docstring for its source).
LENIENT = np.array(
    [
        [0.70, 0.22, 0.06, 0.02],
        [0.15, 0.45, 0.30, 0.10],
        [0.04, 0.16, 0.50, 0.30],
        [0.02, 0.06, 0.22, 0.70],
    ]
)
#: (name, weight of the grade in the score): higher ranks relevant passages higher.
SYSTEMS = (("weak", 0.4), ("fair", 0.8), ("good", 1.4), ("strong", 2.2))
MEASURE = "nDCG@10"
HUMAN_QUERIES = 30
ESTIMATORS = ("ppi++", "ppi", "human", "model")


def judgments() -> pl.DataFrame:
    frames = []
    for name in FILES:
        frame = pl.read_csv(DATA / name, separator=" ", has_header=False, new_columns=["q", "it", "d", "g"],
                            schema_overrides={"q": pl.String, "d": pl.String, "g": pl.Int64})  # fmt: skip
        frames.append(frame.select(pl.col("q").alias("query_id"), pl.col("d").alias("doc_id"),
                                   pl.col("g").alias("grade")))  # fmt: skip
    return pl.concat(frames)


def generated_runs(frame: pl.DataFrame, rng: np.random.Generator) -> list[qrelkit.Run]:
    runs = []
    grades = frame["grade"].to_numpy()
    for name, weight in SYSTEMS:
        score = weight * grades + rng.normal(0.0, 1.0, len(grades))
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


def table(title: str, found: dict, target: dict) -> None:
    print(f"{title}\n")
    print("| run | full-judgment mean | estimator | coverage of the 95% interval | mean bias | mean width |")
    print("|---|---|---|---|---|---|")
    for run, t in target.items():
        for e in ESTIMATORS:
            v = np.array(found[run, e])
            cover = np.mean((v[:, 1] <= t) & (t <= v[:, 2]))
            print(
                f"| {run} | {t:.4f} | {e} | {cover:.1%} | {np.mean(v[:, 0]) - t:+.4f} | {np.mean(v[:, 2] - v[:, 1]):.4f} |"
            )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    frame = judgments()
    nist = qrelkit.qrels_from_frame(frame, name="nist")
    runs = generated_runs(frame, rng)
    truth = qrelkit.evaluate(nist, runs, [MEASURE])
    target = {r: truth.mean(MEASURE, r) for r in truth.run_names}
    queries = sorted(set(frame["query_id"].to_list()))
    people = per_query(truth, queries)
    total = len(queries)
    grades = frame["grade"].to_numpy()
    cumulative = LENIENT.cumsum(axis=1)
    drawn: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    fixed: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    start = time.perf_counter()
    for _ in range(args.reps):
        draw = (rng.random(len(grades))[:, None] > cumulative[grades]).sum(axis=1)
        model_q = qrelkit.qrels_from_frame(frame.with_columns(pl.Series("grade", draw)), name="model")
        model = per_query(qrelkit.evaluate(model_q, runs, [MEASURE]), queries)
        # a query set of 97 drawn from the collection's queries (with replacement), H = 30 of it at random
        sample = rng.integers(0, total, total)
        h, u = sample[:HUMAN_QUERIES], sample[HUMAN_QUERIES:]
        # the collection's own 97 queries, H = 30 of them drawn without replacement
        order = rng.permutation(total)
        fh, fu = order[:HUMAN_QUERIES], order[HUMAN_QUERIES:]
        for run in target:
            y, yhat = people[run], model[run]
            for e in ESTIMATORS:
                i = interval(e, y[h], yhat[h], yhat[u])
                drawn.setdefault((run, e), []).append((i.value, i.low, i.high))
                i = interval(e, y[fh], yhat[fh], yhat[fu])
                fixed.setdefault((run, e), []).append((i.value, i.low, i.high))
    elapsed = time.perf_counter() - start
    print(f"{args.reps} repetitions, H = {HUMAN_QUERIES} of {total} queries, {MEASURE}, seed {args.seed}, "
          f"{elapsed:.0f} s\n")  # fmt: skip
    table(
        "Query sets drawn from the collection's queries (the population the intervals are about):",
        drawn,
        target,
    )
    table(
        "The collection's own queries every time (a finite population: every interval over-covers):",
        fixed,
        target,
    )


if __name__ == "__main__":
    main()
