"""Judgment leverage and metric-level agreement (the merge itself is :mod:`qrelkit.judgments.adjudication`).

Leverage is how far one judgment can move the numbers: for a pair two labellers graded differently, the
change in per-query nDCG@k on each run when that pair's grade switches from labeller A's to labeller B's,
every other grade held at A's values. Adjudication effort goes first where it changes results most.

How it is computed: a grade only affects its own query, so each regrade is evaluated as a copy of that
one query (its judgments with the one grade changed, and each run's ranking for that query) under a
private query id. All copies go through :func:`qrelkit.evaluate` together, in chunks, so the numbers come
from the same engine and the same conventions as every other result (ties, ideal, unjudged policy), and
the work is proportional to the affected queries only. The base values (A's grades) are copies too.

An undefined nDCG (a query with nothing relevant under ``no_relevant="skip"``) counts as 0 here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ..data.values import Fingerprint, Qrels, Run
from ..errors import ValidationError
from ..measures.conventions import Conventions

__all__ = [
    "disagreement_leverage",
    "metric_agreement",
    "metric_agreement_summary",
    "regrade_leverage",
    "retrieval_ranks",
]

_CHUNK = 4000  # regrade copies evaluated per batch: bounds memory on large judgment sets
_KEY = ["query_id", "doc_id"]


def _check_runs(runs: Sequence[Run]) -> list[Run]:
    runs = list(runs) if not isinstance(runs, Run) else [runs]
    if not runs or not all(isinstance(r, Run) for r in runs):
        raise ValidationError(
            "leverage needs at least one run",
            got=[type(r).__name__ for r in runs],
            expected="a sequence of qrelkit Run values",
            fix="read the runs with qrelkit.read_run",
        )
    return runs


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError("the cutoff k must be a positive integer", got=k, fix="pass k=10")
    return k


def _grades(qrels: Qrels) -> pl.DataFrame:
    return qrels.frame.select("query_id", "doc_id", "grade")


def _ndcg_copies(
    base: pl.DataFrame, copies: pl.DataFrame, runs: list[Run], k: int, conv: Conventions | None
) -> np.ndarray:
    """nDCG@k of each copy on each run: ``(n_copies, n_runs)``.

    ``copies`` has columns cid (0..n-1), query_id, doc_id, grade; a null doc_id is the unchanged query.
    A copy's judgments are the base judgments of its query with ``doc_id`` set to ``grade``.
    """
    from ..evaluation.core import evaluate

    n = copies.height
    out = np.zeros((n, len(runs)))
    run_frames = [r.frame for r in runs]
    for start in range(0, n, _CHUNK):
        chunk = copies.slice(start, _CHUNK)
        cq = chunk.select("cid", "query_id")
        judged = cq.join(base, on="query_id", how="inner")
        change = chunk.filter(pl.col("doc_id").is_not_null()).select(
            "cid", "doc_id", pl.col("grade").alias("new")
        )
        judged = judged.join(change, on=["cid", "doc_id"], how="left").with_columns(
            pl.coalesce("new", "grade").alias("grade")
        )
        added = change.join(judged, on=["cid", "doc_id"], how="anti").rename({"new": "grade"})
        frame = pl.concat(
            [judged.select("cid", "doc_id", "grade"), added.select("cid", "doc_id", "grade")], how="vertical"
        )
        vq = pl.format("c{}", "cid").alias("query_id")
        qrels = Qrels(
            frame.select(vq, "doc_id", "grade").with_row_index("line", offset=1),
            Fingerprint("", "canonical-rows", "regrade copies"),
            "regrade copies",
        )
        vruns = [
            Run(
                cq.join(rf, on="query_id", how="inner").select(vq, "doc_id", "score", "rank", "line"),
                Fingerprint("", "canonical-rows", f"run {i}"),
                f"r{i}",
            )
            for i, rf in enumerate(run_frames)
        ]
        res = evaluate(qrels, vruns, [f"nDCG@{k}"], conv).per_query
        res = res.select(
            pl.col("query_id").str.slice(1).cast(pl.Int64).alias("cid"),
            pl.col("run").str.slice(1).cast(pl.Int64).alias("ri"),
            pl.col("value").fill_nan(0.0),
        )
        cid = res.get_column("cid").to_numpy()
        out[cid, res.get_column("ri").to_numpy()] = res.get_column("value").to_numpy()
    return out


def _with_base(changes: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """Copies for ``changes`` (query_id, doc_id, grade) plus one unchanged copy per query.

    Returns the copies and, for each change, the cid of its query's unchanged copy.
    """
    n = changes.height
    queries = changes.select("query_id").unique().sort("query_id")
    bases = queries.with_row_index("cid", offset=n).with_columns(
        pl.col("cid").cast(pl.Int64),
        pl.lit(None, dtype=pl.String).alias("doc_id"),
        pl.lit(None, dtype=pl.Int64).alias("grade"),
    )
    changed = changes.with_row_index("cid").with_columns(pl.col("cid").cast(pl.Int64))
    copies = pl.concat([changed.select("cid", *_KEY, "grade"), bases.select("cid", *_KEY, "grade")])
    base_of = changed.join(bases.select("query_id", pl.col("cid").alias("bid")), on="query_id", how="left")
    return copies, base_of.sort("cid").get_column("bid").to_numpy()


def _swings(
    base: pl.DataFrame, changes: pl.DataFrame, runs: list[Run], k: int, conv: Conventions | None
) -> np.ndarray:
    """|nDCG@k(changed) - nDCG@k(base)| per change and run: ``(n_changes, n_runs)``."""
    if changes.height == 0:
        return np.zeros((0, len(runs)))
    copies, base_of = _with_base(changes)
    values = _ndcg_copies(base, copies, runs, k, conv)
    n = changes.height
    return np.abs(values[:n] - values[base_of])


_LEVERAGE_SCHEMA = {
    "query_id": pl.String,
    "doc_id": pl.String,
    "grade_a": pl.Int64,
    "grade_b": pl.Int64,
    "leverage_max": pl.Float64,
    "leverage_mean": pl.Float64,
}


def disagreement_leverage(
    qrels_a: Qrels,
    qrels_b: Qrels,
    runs: Sequence[Run],
    k: int = 10,
    conventions: Conventions | None = None,
) -> pl.DataFrame:
    """For each pair judged by both labellers with different grades, how much the choice moves nDCG@k.

    ``leverage_max``/``leverage_mean`` are the largest and the mean, over ``runs``, of the absolute
    change of the query's nDCG@k when the pair's grade goes from A's to B's, all other grades at A's.
    Columns: query_id, doc_id, grade_a, grade_b, leverage_max, leverage_mean; sorted by leverage_max
    descending (then leverage_mean descending, query_id, doc_id).
    """
    runs = _check_runs(runs)
    k = _check_k(k)
    a = _grades(qrels_a).rename({"grade": "grade_a"})
    b = _grades(qrels_b).rename({"grade": "grade_b"})
    dis = a.join(b, on=_KEY, how="inner").filter(pl.col("grade_a") != pl.col("grade_b")).sort(_KEY)
    if dis.height == 0:
        return pl.DataFrame(schema=_LEVERAGE_SCHEMA)
    swing = _swings(
        _grades(qrels_a), dis.select(*_KEY, pl.col("grade_b").alias("grade")), runs, k, conventions
    )
    return (
        dis.with_columns(
            pl.Series("leverage_max", swing.max(axis=1)), pl.Series("leverage_mean", swing.mean(axis=1))
        )
        .select(list(_LEVERAGE_SCHEMA))
        .sort(["leverage_max", "leverage_mean", *_KEY], descending=[True, True, False, False])
    )


def regrade_leverage(
    qrels: Qrels,
    runs: Sequence[Run],
    k: int = 10,
    scale: Sequence[int] | None = None,
    conventions: Conventions | None = None,
) -> pl.DataFrame:
    """For each judgment, the largest nDCG@k swing a one-step regrade (grade +- 1 within the scale) causes.

    ``scale`` defaults to every integer from the lowest to the highest grade in ``qrels``. Columns:
    query_id, doc_id, grade, regrade (the neighbouring grade with the larger swing; the lower one on a
    tie), leverage_max (largest absolute change over runs), leverage_mean (mean over runs at that
    regrade); sorted by leverage_max descending, then leverage_mean descending, query_id, doc_id.
    """
    runs = _check_runs(runs)
    k = _check_k(k)
    judged = _grades(qrels).sort(_KEY)
    if scale is None:
        lo, hi = judged.get_column("grade").min(), judged.get_column("grade").max()
        scale = range(int(lo), int(hi) + 1) if lo is not None else range(0)
    allowed = sorted(set(int(g) for g in scale))
    outside = judged.filter(~pl.col("grade").is_in(allowed))
    if outside.height:
        q, d, g = outside.row(0)
        raise ValidationError(
            f"grade {g} of ({q}, {d}) is not on the scale {allowed}",
            source=str(qrels.meta.get("source", qrels.name)),
            got=g,
            expected=f"one of {allowed}",
            fix="pass the rubric the judgments were made with",
        )
    judged = judged.with_row_index("jid")
    steps = pl.concat([judged.with_columns((pl.col("grade") + step).alias("to")) for step in (-1, 1)]).filter(
        pl.col("to").is_in(allowed)
    )
    steps = steps.sort(["jid", "to"])
    swing = _swings(_grades(qrels), steps.select(*_KEY, pl.col("to").alias("grade")), runs, k, conventions)
    scored = steps.with_columns(
        pl.Series("leverage_max", swing.max(axis=1) if len(swing) else []),
        pl.Series("leverage_mean", swing.mean(axis=1) if len(swing) else []),
    )
    best = (
        scored.sort(["jid", "leverage_max", "leverage_mean", "to"], descending=[False, True, True, False])
        .group_by("jid", maintain_order=True)
        .first()
    )
    return (
        judged.join(
            best.select("jid", pl.col("to").alias("regrade"), "leverage_max", "leverage_mean"),
            on="jid",
            how="left",
        )
        .with_columns(pl.col("leverage_max").fill_null(0.0), pl.col("leverage_mean").fill_null(0.0))
        .select(*_KEY, "grade", "regrade", "leverage_max", "leverage_mean")
        .sort(["leverage_max", "leverage_mean", *_KEY], descending=[True, True, False, False])
    )


def retrieval_ranks(runs: Sequence[Run], pairs: pl.DataFrame) -> pl.DataFrame:
    """For each (query_id, doc_id) of ``pairs``: ``retrieved``, the runs that returned it and at which rank.

    Ranks follow the pool's rule (score descending, doc id descending). ``retrieved`` is a string such as
    ``"bm25:3, rerank:1"``, empty when no run returned the document.
    """
    from ..pool import rank_run

    runs = _check_runs(runs)
    out = pairs.select(_KEY).unique(maintain_order=True)
    parts = []
    for i, run in enumerate(runs):
        col = f"_r{i}"
        ranked = rank_run(run).join(out, on=_KEY, how="semi").rename({"rank": col})
        out = out.join(ranked, on=_KEY, how="left")
        parts.append(pl.when(pl.col(col).is_not_null()).then(pl.format(f"{run.name}:{{}}", col)))
    return out.select(*_KEY, pl.concat_list(parts).list.drop_nulls().list.join(", ").alias("retrieved"))


def metric_agreement(
    qrels_a: Qrels,
    qrels_b: Qrels,
    runs: Sequence[Run],
    k: int = 10,
    conventions: Conventions | None = None,
) -> pl.DataFrame:
    """nDCG@k and R@k under each labeller's judgments, per run and query.

    Only queries both labellers judged are scored (each labeller's judgments of those queries, in full).
    Columns: run, query_id, ndcg_a, ndcg_b, ndcg_delta (b - a), recall_a, recall_b, recall_identical,
    ndcg_moves_recall_not (nDCG differs by more than 1e-12 while recall is identical: a disagreement only
    a graded measure sees).
    """
    from ..evaluation.core import evaluate
    from ..measures.grammar import parse

    runs = _check_runs(runs)
    k = _check_k(k)
    from ..data.values import on_common_queries

    qrels_a, qrels_b = on_common_queries(
        qrels_a, qrels_b, who="the two labellers", expected="judgments of the same calibration queries",
        fix="check that both files come from the same calibration sample",
    )  # fmt: skip
    ndcg, recall = str(parse(f"nDCG@{k}")), str(parse(f"R@{k}"))
    frames = {}
    for who, q in (("a", qrels_a), ("b", qrels_b)):
        per = evaluate(q, runs, [ndcg, recall], conventions).per_query
        frames[who] = per.pivot(on="measure", index=["run", "query_id"], values="value").rename(
            {ndcg: f"ndcg_{who}", recall: f"recall_{who}"}
        )
    both = frames["a"].join(frames["b"], on=["run", "query_id"], how="inner")
    return (
        both.with_columns(
            (pl.col("ndcg_b") - pl.col("ndcg_a")).alias("ndcg_delta"),
            (pl.col("recall_a") == pl.col("recall_b")).alias("recall_identical"),
        )
        .with_columns(
            ((pl.col("ndcg_delta").abs() > 1e-12) & pl.col("recall_identical")).alias("ndcg_moves_recall_not")
        )
        .select(
            "run",
            "query_id",
            "ndcg_a",
            "ndcg_b",
            "ndcg_delta",
            "recall_a",
            "recall_b",
            "recall_identical",
            "ndcg_moves_recall_not",
        )
        .sort(["run", "query_id"])
    )


def metric_agreement_summary(frame: pl.DataFrame, k: int) -> dict[str, Any]:
    """Means per run of :func:`metric_agreement`'s table, with the measures and conventions they used."""
    from ..measures.conventions import DEFAULT

    means = {}
    for run in frame.get_column("run").unique(maintain_order=True).to_list():
        sub = frame.filter(frame.get_column("run") == run)
        means[run] = {
            "queries": sub.height,
            "ndcg_a": math.fsum(sub.get_column("ndcg_a").to_list()) / sub.height,
            "ndcg_b": math.fsum(sub.get_column("ndcg_b").to_list()) / sub.height,
            "recall_a": math.fsum(sub.get_column("recall_a").to_list()) / sub.height,
            "recall_b": math.fsum(sub.get_column("recall_b").to_list()) / sub.height,
            "queries_ndcg_moves_recall_not": int(sub.get_column("ndcg_moves_recall_not").sum()),
        }
    return {
        "measures": [f"nDCG@{k}", f"R(rel=1)@{k}"],
        "conventions": DEFAULT.to_dict(),
        "queries": "judged by both labellers",
        "means": means,
        "per_query": frame.to_dicts(),
    }
