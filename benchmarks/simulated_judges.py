"""Real judgments and simulated model judges, shared by the benchmarks that need a judge whose errors look
like a real one's (``ppi_validity.py``, ``ppi_interval_screen.py``, ``judging_budget.py``).

Data: the TREC Deep Learning 2019 and 2020 passage judgments in tests/data/trec (43 + 54 = 97 queries,
20,646 judged pairs, grades 0-3).

Judges (each regrades every judged pair; :func:`judge_grades`, :func:`correlated_grades`):

- ``lenient``: one global confusion matrix (:data:`LENIENT`), errors independent from pair to pair;
- ``query-correlated``: each pair's grade drawn from the row, for the assessor's grade, of ``identity x I +
  (1 - identity) x`` a GPT-4-class judge's measured P(judge grade | assessor grade) on TREC DL 2021 passage
  (:data:`MEASURED_DL21`, rows normalised), then shifted by the query's own leniency ``s_q ~ N(mean, sd)``
  (rounded at random to a whole grade per pair: floor(s_q) + 1 with probability s_q - floor(s_q)) and
  clipped to 0..3. So its errors are correlated within a query (every pair of a query shares s_q) and its
  leniency varies from query to query, as the real judge's does (docs/prediction-powered.md states the
  measured figures). ``ppi_validity.py``'s judge is identity 0.3 and s_q ~ N(-0.05, 0.55)
  (:data:`DL21`, :data:`LENIENCY`); ``judging_budget.py`` tunes identity and the mean of s_q per collection
  to the published statistics of the real judge on that collection (:data:`MATCHED`), its s_q standardised
  to exactly that mean and standard deviation over the collection's queries.

:func:`judge_statistics` measures a judge against NIST's grades: linear kappa (qrelkit's
:func:`~qrelkit.agreement.kappa.cohen_kappa`), both mean grades, and the spread of the per-query mean grade
difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DATA = ROOT / "tests" / "data" / "trec"
FILES = {"DL 2019": "qrels.dl19-passage.txt", "DL 2020": "qrels.dl20-passage.txt"}

#: P(model grade = column | NIST grade = row), grades 0..3: the shape published comparisons of LLM judges
#: with NIST assessors report (more lenient than the assessors, best on the extremes); the entries are an
#: assumption in that shape (exact agreement about 60%, Cohen's kappa about 0.4).
LENIENT = np.array(
    [
        [0.70, 0.22, 0.06, 0.02],
        [0.15, 0.45, 0.30, 0.10],
        [0.04, 0.16, 0.50, 0.30],
        [0.02, 0.06, 0.22, 0.70],
    ]
)
#: The real judge's P(judge grade | assessor grade) on TREC DL 2021 passage (rows normalised).
MEASURED_DL21 = np.array(
    [
        [0.609, 0.255, 0.108, 0.028],
        [0.103, 0.399, 0.339, 0.159],
        [0.020, 0.238, 0.462, 0.281],
        [0.000, 0.035, 0.343, 0.622],
    ]
)


def mixed(identity: float) -> np.ndarray:
    """``identity x I + (1 - identity) x`` :data:`MEASURED_DL21` (rows normalised)."""
    return identity * np.eye(4) + (1 - identity) * MEASURED_DL21 / MEASURED_DL21.sum(axis=1, keepdims=True)


DL21 = mixed(0.3)
#: The query-correlated judge's per-query leniency: mean and standard deviation of s_q, in grades.
LENIENCY = (-0.05, 0.55)
JUDGES = ("lenient", "query-correlated")

#: The judge matched to the real judge's published statistics on each collection (linear kappa against NIST
#: 0.47 on DL 2019 and 0.44 on DL 2020; mean grade NIST's 0.79 to the judge's 1.00 on DL 2019, 0.52 to 0.79
#: on DL 2020): (identity, mean of s_q, sd of s_q), found by ``judging_budget.py --tune``.
MATCHED = {"DL 2019": (0.08, -0.22, 0.42), "DL 2020": (0.08, -0.32, 0.42)}
#: The published figures the matched judge is held to, per collection: (linear kappa, NIST's mean grade,
#: the judge's mean grade).
PUBLISHED = {"DL 2019": (0.47, 0.79, 1.00), "DL 2020": (0.44, 0.52, 0.79)}


def judgments() -> pl.DataFrame:
    """Both collections' judgments: ``query_id``, ``doc_id``, ``grade``, ``collection``."""
    frames = []
    for collection, name in FILES.items():
        frame = pl.read_csv(DATA / name, separator=" ", has_header=False, new_columns=["q", "it", "d", "g"],
                            schema_overrides={"q": pl.String, "d": pl.String, "g": pl.Int64})  # fmt: skip
        frames.append(frame.select(pl.col("q").alias("query_id"), pl.col("d").alias("doc_id"),
                                   pl.col("g").alias("grade"), pl.lit(collection).alias("collection")))  # fmt: skip
    return pl.concat(frames)


def correlated_grades(
    grades: np.ndarray,
    position: np.ndarray,
    queries: int,
    rng: np.random.Generator,
    matrix: np.ndarray,
    leniency: tuple[float, float],
    standardised: bool = False,
) -> np.ndarray:
    """The query-correlated judge's grades of every pair (module docstring): ``position`` each pair's query
    index, ``matrix`` P(judge grade | assessor grade), ``leniency`` the mean and sd of s_q; ``standardised``:
    the queries' s_q drawn, then shifted and scaled to have exactly that mean and sd over the queries (so a
    collection of 43 queries does not get a judge a sixteenth of a grade more lenient by chance)."""
    drawn = (rng.random(len(grades))[:, None] > matrix.cumsum(axis=1)[grades]).sum(axis=1)
    per_query = rng.normal(*leniency, queries)
    if standardised:
        z = (per_query - per_query.mean()) / per_query.std(ddof=1)
        per_query = leniency[0] + leniency[1] * z
    s = per_query[position]
    whole = np.floor(s)
    shift = whole + (rng.random(len(grades)) < s - whole)
    return np.clip(drawn + shift, 0, 3).astype(np.int64)


def judge_grades(judge: str, grades: np.ndarray, position: np.ndarray, queries: int, rng) -> np.ndarray:
    """One repetition's model grades of every judged pair by ``judge`` (``lenient`` or ``query-correlated``)."""
    if judge == "lenient":
        return (rng.random(len(grades))[:, None] > LENIENT.cumsum(axis=1)[grades]).sum(axis=1)
    return correlated_grades(grades, position, queries, rng, DL21, LENIENCY)


def matched_grades(
    collection: str, grades: np.ndarray, position: np.ndarray, queries: int, rng
) -> np.ndarray:
    """The judge matched to ``collection``'s published statistics (:data:`MATCHED`)."""
    identity, mean, sd = MATCHED[collection]
    return correlated_grades(grades, position, queries, rng, mixed(identity), (mean, sd), standardised=True)


def judge_statistics(nist: np.ndarray, judge: np.ndarray, position: np.ndarray) -> dict[str, float]:
    """The judge against NIST on the same pairs: linear kappa, both mean grades, and the mean, standard
    deviation, 10th and 90th percentiles of the per-query difference of mean grades (judge - NIST)."""
    from qrelkit.agreement.kappa import cohen_kappa

    kappa = cohen_kappa(nist.tolist(), judge.tolist(), (0, 1, 2, 3), "linear").kappa
    n = np.bincount(position)
    diff = np.bincount(position, weights=judge - nist) / np.maximum(n, 1)
    diff = diff[n > 0]
    return {
        "kappa": float(kappa),
        "nist_mean": float(nist.mean()),
        "judge_mean": float(judge.mean()),
        "query_diff_mean": float(diff.mean()),
        "query_diff_sd": float(diff.std(ddof=1)),
        "query_diff_p10": float(np.percentile(diff, 10)),
        "query_diff_p90": float(np.percentile(diff, 90)),
    }
