"""Encode a run against judgments into flat arrays, applying the ranking conventions in one visible place.

What happens here, in order (and nowhere else):

1. the query set: which queries are scored (``missing_queries``, ``extra_queries``);
2. negative grades (``negative``): kept as unjudged, made 0, or refused;
3. the join of run rows with judgments (unjudged rows get ``judged = False``, grade 0);
4. unjudged rows dropped before ranking when ``unjudged = "drop"``;
5. score precision (``precision = "single"`` rounds scores to float32);
6. the ranking: score descending, then the tie convention; under ``ties = "average"`` the tied blocks are
   recorded so that kernels can take expectations over them. Given the ``depth`` the measures need
   (:func:`qrelkit.measures.grammar.required_depth`), only each query's rows that fewer than ``depth``
   others beat by score (at the precision of step 5) are joined and ranked: every other row ranks below
   ``depth`` under any tie convention, and the kept rows keep their order (the streaming reader's cut).

The output holds no strings on the numeric path and no defaults: kernels read it as it is.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..data.values import Qrels, Run
from ..errors import ValidationError
from ..measures.conventions import Conventions
from .encoded import TIE_KEYS, Encoded, QuerySet, offsets_of, query_set, tied_blocks

__all__ = ["Encoded", "QuerySet", "encode", "resolve_negative", "select_queries"]


def select_queries(qrels: Qrels, run: Run, conv: Conventions) -> QuerySet:
    """The scored queries of ``run`` against ``qrels`` (:func:`qrelkit.engine.encoded.query_set`)."""
    judged_q = set(qrels.frame.get_column("query_id").unique().to_list())
    run_q = set(run.frame.get_column("query_id").unique().to_list())
    return query_set(
        sorted(judged_q),
        run_q,
        sorted(run_q - judged_q),
        conv,
        run.name,
        str(run.meta.get("source", run.name)),
    )


def resolve_negative(qrels: Qrels, conv: Conventions) -> pl.DataFrame:
    """Judgments with the negative-grade convention applied: (query_id, doc_id, grade) of judged documents."""
    frame = qrels.frame.select("query_id", "doc_id", "grade", "line")
    negative = frame.get_column("grade") < 0
    if not negative.any():
        return frame
    if conv.negative == "reject":
        row = frame.filter(negative).row(0, named=True)
        raise ValidationError(
            f"grade {row['grade']} is negative (query {row['query_id']!r}, document {row['doc_id']!r})",
            source=str(qrels.meta.get("source", qrels.name)),
            line=row["line"],
            fix="use negative=unjudged (trec_eval's meaning), negative=zero or negative=gain",
        )
    if conv.negative == "gain":
        return frame  # judged, worth the gain of the negative grade itself
    if conv.negative == "zero":
        return frame.with_columns(pl.when(negative).then(0).otherwise(pl.col("grade")).alias("grade"))
    return frame.filter(~negative)  # unjudged: as if never judged


def _pool_only(qrels: Qrels, conv: Conventions) -> pl.DataFrame | None:
    """Under ``negative=unjudged``, the (query_id, doc_id, pooled) of the documents judged with a negative
    grade (in the pool, not judged); None where there is none or another convention applies."""
    if conv.negative != "unjudged":
        return None
    frame = qrels.frame.filter(pl.col("grade") < 0)
    if not frame.height:
        return None
    return frame.select("query_id", "doc_id").unique().with_columns(pl.lit(True).alias("pooled"))


def encode(
    qrels: Qrels,
    run: Run,
    conv: Conventions,
    queries: QuerySet | None = None,
    *,
    ranking: bool = True,
    depth: int | None = None,
) -> Encoded:
    """Rank ``run`` against ``qrels`` under ``conv``. See the module docstring for the order of steps.

    ``ranking=False`` leaves out the frame of ranked rows that explanations read (``Encoded.ranking``);
    ``depth`` (never with ``unjudged = "drop"``, which changes the rows that reach the top) ranks only the
    rows within it and the tied block at it."""
    queries = queries or select_queries(qrels, run, conv)
    qmap = pl.DataFrame(
        {"query_id": queries.query_ids, "q": np.arange(len(queries.query_ids), dtype=np.int64)},
        schema={"query_id": pl.String, "q": pl.Int64},
    )
    judgments = resolve_negative(qrels, conv).join(qmap, on="query_id", how="inner")

    rows = run.frame.join(qmap, on="query_id", how="inner")
    if depth is not None:
        assert conv.unjudged != "drop"
        by = pl.col("score")
        if conv.precision == "single":
            by = by.cast(pl.Float32).cast(pl.Float64)
        rows = rows.filter(by.rank("min", descending=True).over("q") <= depth)
    rows = rows.join(judgments.select("query_id", "doc_id", "grade"), on=["query_id", "doc_id"], how="left")
    pool_only = _pool_only(qrels, conv)
    if pool_only is not None:
        rows = rows.join(pool_only, on=["query_id", "doc_id"], how="left")
    if conv.unjudged == "drop":
        rows = rows.filter(pl.col("grade").is_not_null())
    if conv.precision == "single":
        rows = rows.with_columns(pl.col("score").cast(pl.Float32).cast(pl.Float64))

    keys: list[str | pl.Expr] = ["q", "score"]
    descending = [False, True]
    tie = TIE_KEYS[conv.ties]
    if tie is not None:
        key, down = tie
        keys.append("doc_id" if key == "doc_id" else pl.col("grade").fill_null(np.iinfo(np.int64).min))
        descending.append(down)
    keys.append("line")  # file order: the final key for every convention, so the order is total
    descending.append(False)
    rows = rows.sort(keys, descending=descending)

    q = rows.get_column("q").to_numpy()
    score = rows.get_column("score").to_numpy()
    offsets = offsets_of(q, len(queries.query_ids))
    # None: no ties at all, every row is its own block
    block_starts = tied_blocks(q, score) if conv.ties == "average" else None

    pooled = rows.get_column("pooled").is_not_null().to_numpy() if pool_only is not None else None
    if pooled is not None and not pooled.any():
        pooled = None  # none ranked: as where there is none
    grade_col = rows.get_column("grade")
    judged = grade_col.is_not_null().to_numpy()
    grade = grade_col.fill_null(0).to_numpy().astype(np.int64, copy=False)

    judgments = judgments.sort("q", "grade", descending=[False, True])
    jq = judgments.get_column("q").to_numpy()
    ranked = None
    if ranking:
        block_col = np.zeros(len(score), dtype=np.int64)
        if block_starts is not None:
            block_col[block_starts] = 1
            block_col = np.cumsum(block_col) - 1
        else:
            block_col = np.arange(len(score), dtype=np.int64)
        ranked = rows.select("query_id", "doc_id", "score", "grade", "line").with_columns(
            pl.Series("block", block_col)
        )
    return Encoded(
        queries=queries,
        offsets=offsets,
        grade=grade,
        judged=judged,
        score=score,
        block_starts=block_starts,
        judged_offsets=offsets_of(jq, len(queries.query_ids)),
        judged_grade=judgments.get_column("grade").to_numpy().astype(np.int64, copy=False),
        ranking=ranked,
        pooled=pooled,
    )
