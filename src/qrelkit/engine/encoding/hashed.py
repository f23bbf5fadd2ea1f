"""The run's side of an encoding by hashed ids: the arrays :func:`qrelkit.engine.encoding.encode.encode` makes, in
the steps its module docstring lists, with the dataframe library used only to hash and to gather ids.

A run in memory of the size most evaluations have (TREC Deep Learning: 43 queries of 1,000 documents)
spends most of a columnar encoding in joins and sorts of string columns. Here every row's query is
numbered by the id of its stretch of equal query ids (:class:`Stretches`, where the caller read them:
:func:`qrelkit.evaluation.core.evaluate` reads them once for the query set and the encoding), or where
none are given through a 64-bit hash of its id, and each
(query, document) pair is found among the judgments by a 64-bit key, with numpy doing the rest:

* a query id is numbered through its hash only when the run's distinct query ids have distinct hashes
  (counted against the query set, which was made from the strings), so numbering is exact;
* a pair whose key matches a judgment's key is that judgment only after its query number and its document
  id (the strings) are compared; a pair whose key matches none is unjudged, as equal strings hash equal;
* rows are ranked by query, then score descending through an order-preserving integer image of the score,
  with stable sorts (file order kept); the tie convention's key is applied within tied blocks only.

What it cannot encode exactly as the columnar path would (a NaN or negative-zero score, colliding hashes,
two judgments of one pair, a frame of other column types, and in values built without a reader a null id,
score or line or two rows on one line), and a run of more than :data:`MAX_ROWS` rows,
where the columnar path is as fast, make :func:`encode_hashed` return ``None``: the columnar path encodes
the run. So this path never changes a number or an error; the property tests hold it bit-identical to the
columnar path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ...data.values import Run
from ...measures.conventions import Conventions
from .encoded import (
    TIE_KEYS,
    Encoded,
    QuerySet,
    block_heads,
    by_query_then_score,
    in_tied_blocks,
    offsets_of,
    sorted_by_query_then_score,
    tied_blocks,
    within_depth,
)

__all__ = ["HashedSide", "Stretches", "encode_hashed", "hashed_side"]

#: Any fixed seed: within one version of polars equal strings hash equal in every series.
_SEED = 0x51E1
#: Mixes a query's number into a document's hash (the golden-ratio constant): the pair's key.
_MIX = np.uint64(0x9E3779B97F4A7C15)
#: Runs up to this many rows are encoded here. Past it the columnar joins and sorts, which run on every
#: core, are as fast or faster (98,100 rows: the same CPU time; 250,000-row batches of a 7M-line run:
#: 1.5x the columnar path's), and the judgments' side by key would be made again for every batch.
MAX_ROWS = 100_000
#: Above this many rows in tied blocks the document-id tie key is left to the columnar sort.
MAX_TIED_ROWS = 20_000
_INT64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class HashedSide:
    """The judged and pooled documents of the scored queries, by key: what the run's rows are joined with."""

    keys: np.ndarray  # uint64, sorted: each (query number, document) pair's key
    q: np.ndarray  # int64: each key's query number
    grade: np.ndarray  # int64: the grade under the negative-grade convention (0 where not judged)
    judged: np.ndarray  # bool: judged (False: in the pool only, a negative grade under negative=unjudged)
    pooled: np.ndarray | None  # bool: in the pool only; None where no document is
    doc_id: pl.Series  # each key's document id, to compare with a matching row's
    query_hash: np.ndarray  # uint64, sorted, distinct: the hash of each scored query's id
    query_number: np.ndarray  # int64: the number of the query of each hash


@dataclass(frozen=True)
class Stretches:
    """The stretches of equal values of a column, in row order: the first row of each (the column's first
    row begins one) and its value. A run grouped by query has one stretch per query."""

    starts: np.ndarray  # int64, ascending, starting at 0 (empty for an empty column)
    values: list[str | None]

    @classmethod
    def of(cls, ids: pl.Series) -> Stretches:
        new = ids.ne_missing(ids.shift(1)).to_numpy().copy()
        new[:1] = True
        starts = np.flatnonzero(new)
        return cls(starts, ids.gather(starts).to_list())


def _keys(q: np.ndarray, doc_hash: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return doc_hash ^ (q.astype(np.uint64) * _MIX)


def hashed_side(
    qmap: pl.DataFrame, grades: pl.DataFrame, pool_only: pl.DataFrame | None
) -> HashedSide | None:
    """The :class:`HashedSide` of the judgments :func:`qrelkit.engine.encoding.encode.encode` joins with: ``grades``
    (query_id, doc_id, grade) of the scored queries numbered by ``qmap`` (query_id, q), ``pool_only``
    (query_id, doc_id, pooled) or None. ``None`` when two entries share a key (the same pair twice, or two
    pairs whose keys collide): the columnar join decides those."""
    parts = [
        grades.join(qmap, on="query_id", how="inner").select(
            "q", "doc_id", "grade", pl.lit(True).alias("judged"), pl.lit(False).alias("pooled")
        )
    ]
    if pool_only is not None:
        parts.append(
            pool_only.join(qmap, on="query_id", how="inner").select(
                "q", "doc_id", pl.lit(0, pl.Int64).alias("grade"), pl.lit(False).alias("judged"), "pooled"
            )
        )
    frame = pl.concat(parts) if len(parts) > 1 else parts[0]
    if (
        frame.schema["doc_id"] != pl.String
        or qmap.schema["query_id"] != pl.String
        or frame.get_column("doc_id").null_count()
        or frame.get_column("grade").null_count()
    ):
        return None
    query_hash = qmap.get_column("query_id").hash(_SEED).to_numpy()
    by_hash = np.argsort(query_hash, kind="stable")
    query_hash = query_hash[by_hash]
    if len(query_hash) > 1 and (query_hash[1:] == query_hash[:-1]).any():
        return None  # two scored queries share a hash: the columnar join numbers them
    q = frame.get_column("q").to_numpy().astype(np.int64, copy=False)
    keys = _keys(q, frame.get_column("doc_id").hash(_SEED).to_numpy())
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
        return None
    pooled = frame.get_column("pooled").to_numpy()[order]
    return HashedSide(
        keys=keys,
        q=q[order],
        grade=frame.get_column("grade").to_numpy().astype(np.int64, copy=False)[order],
        judged=frame.get_column("judged").to_numpy()[order],
        pooled=pooled if pooled.any() else None,
        doc_id=frame.get_column("doc_id").gather(order),
        query_hash=query_hash,
        query_number=qmap.get_column("q").to_numpy().astype(np.int64, copy=False)[by_hash],
    )


def _query_numbers(hashes: np.ndarray, queries: QuerySet, side: HashedSide) -> np.ndarray | None:
    """Each row's number in ``queries.query_ids`` (-1: not scored) from the hashes of its query id, or
    None where that cannot be exact. Every query id of the run is a scored query's (its hash is one of
    ``side.query_hash``, distinct for distinct ids) or one of ``queries.extra_skipped``, whose hashes must
    then be none of the scored queries'. Looked up once per stretch of equal hashes (a run grouped by
    query has one per query)."""
    if not len(hashes):
        return np.zeros(0, dtype=np.int64)
    new = block_heads(hashes)
    stretch = np.cumsum(new) - 1  # each row's stretch
    numbers = _head_numbers(hashes[new], queries, side)
    return None if numbers is None else numbers[stretch]


def _head_numbers(hashes: np.ndarray, queries: QuerySet, side: HashedSide) -> np.ndarray | None:
    """:func:`_query_numbers` of one hash per stretch."""
    known = side.query_hash
    slot = np.minimum(np.searchsorted(known, hashes), max(len(known) - 1, 0))
    found = known[slot] == hashes if len(known) else np.zeros(len(hashes), dtype=bool)
    if queries.extra_skipped:
        extra = pl.Series(queries.extra_skipped, dtype=pl.String).hash(_SEED).to_numpy()
        if len(known) and (known[np.minimum(np.searchsorted(known, extra), len(known) - 1)] == extra).any():
            return None  # an unjudged query's id shares a scored query's hash
    elif not found.all():
        return None  # a query id the query set does not account for
    return np.where(found, side.query_number[slot] if len(known) else -1, -1)


def _join(
    side: HashedSide,
    q: np.ndarray,
    doc_hash: np.ndarray,
    doc_ids: pl.Series,
    rows: np.ndarray,
    at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(grade, judged, pooled) of the rows ``at`` (indices into ``rows``, the frame's rows of scored
    queries, whose query numbers are ``q`` and document hashes ``doc_hash``); None on a key collision."""
    grade = np.zeros(len(at), dtype=np.int64)
    judged = np.zeros(len(at), dtype=bool)
    pooled = np.zeros(len(at), dtype=bool)
    if not len(side.keys) or not len(at):
        return grade, judged, pooled
    key = _keys(q[at], doc_hash[at])
    slot = np.minimum(np.searchsorted(side.keys, key), len(side.keys) - 1)
    hits = np.flatnonzero(side.keys[slot] == key)
    found = slot[hits]
    if (side.q[found] != q[at][hits]).any():
        return None
    if not (doc_ids.gather(rows[at][hits]) == side.doc_id.gather(found)).all():  # neither holds a null
        return None
    grade[hits], judged[hits] = side.grade[found], side.judged[found]
    if side.pooled is not None:
        pooled[hits] = side.pooled[found]
    return grade, judged, pooled


def encode_hashed(
    run: Run,
    conv: Conventions,
    queries: QuerySet,
    side: HashedSide,
    judged_offsets: np.ndarray,
    judged_grade: np.ndarray,
    depth: int | None,
    stretches: Stretches | None = None,
) -> Encoded | None:
    """``encode(qrels, run, conv, queries, ranking=False, depth=depth)`` by hashed ids, or None where this
    path steps aside (the module docstring says when). ``side``, ``judged_offsets`` and ``judged_grade``
    are the judgments' side for ``conv.negative`` and ``queries``; with ``stretches`` (the
    :class:`Stretches` of the run's query ids) each row's query is numbered by its
    stretch's id, the string itself, and query ids are not hashed."""
    frame = run.frame
    schema = frame.schema
    if (
        not frame.height
        or frame.height > MAX_ROWS
        or schema.get("query_id") != pl.String
        or schema.get("doc_id") != pl.String
        or schema.get("score") != pl.Float64
        or schema.get("line") != pl.Int64
        or any(frame.get_column(c).null_count() for c in ("query_id", "doc_id", "score", "line"))
    ):
        return None  # nulls: a value built around the readers, which the columnar steps decide
    if stretches is not None:
        number = {query_id: i for i, query_id in enumerate(queries.query_ids)}
        heads = np.array([number.get(v, -1) for v in stretches.values], dtype=np.int64)  # type: ignore[arg-type]  # no null: checked above
        q_all = np.repeat(heads, np.diff(np.append(stretches.starts, frame.height)))
        doc_hash = frame.get_column("doc_id").hash(_SEED).to_numpy()
    else:
        query_hash, doc_hash = (
            column.to_numpy()
            for column in frame.select(
                pl.col("query_id").hash(_SEED), pl.col("doc_id").hash(_SEED)
            ).get_columns()
        )
        numbered = _query_numbers(query_hash, queries, side)
        if numbered is None:
            return None
        q_all = numbered
    rows = np.flatnonzero(q_all >= 0)  # the scored queries' rows, in the frame's order
    every_row = len(rows) == len(q_all)  # (as most runs): the frame's columns serve as they are
    q = q_all if every_row else q_all[rows]
    score = frame.get_column("score").to_numpy()
    if not every_row:
        score = score[rows]
    if conv.precision == "single":
        with np.errstate(over="ignore"):  # beyond float32's range: inf, as the columnar cast gives
            score = score.astype(np.float32).astype(np.float64)
    if np.isnan(score).any() or ((score == 0) & np.signbit(score)).any():
        return None
    doc_ids = frame.get_column("doc_id")
    if not every_row:
        doc_hash = doc_hash[rows]

    every = None  # under unjudged=drop: (grade, judged, pooled) of every row, joined before ranking
    n_queries = len(queries.query_ids)
    if conv.unjudged == "drop":
        assert depth is None
        every = _join(side, q, doc_hash, doc_ids, rows, np.arange(len(rows)))
        if every is None:
            return None
        kept = np.flatnonzero(every[1])
        order = kept[by_query_then_score(q[kept], score[kept], n_queries)]
        qs, ss = q[order], score[order]
    else:
        order, qs, ss = sorted_by_query_then_score(q, score, n_queries)
    new_block = block_heads(qs, ss)
    if depth is not None:  # rows fewer than depth others of their query beat by score
        within = within_depth(qs, new_block, depth)
        if within is not None:
            order, new_block = order[within], new_block[within]
    joined = (
        _join(side, q, doc_hash, doc_ids, rows, order) if every is None else tuple(a[order] for a in every)
    )
    if joined is None:
        return None
    grade, judged, pooled = joined

    # within each tied block: the tie convention's key, then file order
    lines = frame.get_column("line").to_numpy()
    if not every_row:
        lines = lines[rows]
    tie = TIE_KEYS[conv.ties]
    file_ordered = bool((np.diff(lines) > 0).all())
    if not file_ordered and len(np.unique(lines)) < len(lines):
        return None  # two rows on one line: no order of the columnar sort to match (a Run built by hand)
    if tie is not None or not file_ordered:
        at = in_tied_blocks(new_block)
        if len(at):
            keys = [lines[order[at]]]
            if tie is not None and tie[0] == "doc_id":
                if len(at) > MAX_TIED_ROWS:
                    return None
                docs = doc_ids.gather(rows[order[at]]).to_list()
                rank = {d: i for i, d in enumerate(sorted(set(docs)))}  # code points: byte order
                code = np.array([rank[d] for d in docs], dtype=np.int64)
                keys.append(-code if tie[1] else code)
            elif tie is not None:  # by grade, unjudged rows as the lowest grade
                by_grade = np.where(judged[at], grade[at], _INT64_MIN)
                keys.append(~by_grade if tie[1] else by_grade)
            keys.append(np.cumsum(new_block)[at])
            within_blocks = np.lexsort(keys)
            order[at] = order[at][within_blocks]
            grade[at], judged[at], pooled[at] = (
                grade[at][within_blocks],
                judged[at][within_blocks],
                pooled[at][within_blocks],
            )

    q, score = q[order], score[order]
    return Encoded(
        queries=queries,
        offsets=offsets_of(q, n_queries),
        grade=grade,
        judged=judged,
        score=score,
        block_starts=tied_blocks(q, score) if conv.ties == "average" else None,
        judged_offsets=judged_offsets.copy(),
        judged_grade=judged_grade.copy(),
        pooled=pooled if side.pooled is not None and pooled.any() else None,
    )
