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

import threading
from dataclasses import dataclass

import numpy as np
import polars as pl

from ...data.values import Qrels, Run
from ...errors import ValidationError
from ...measures.conventions import Conventions
from .encoded import TIE_KEYS, Encoded, QuerySet, offsets_of, query_set, tied_blocks
from .hashed import MAX_ROWS as HASHED_MAX_ROWS
from .hashed import HashedSide, Stretches, encode_hashed, hashed_side

__all__ = [
    "Encoded",
    "Judgments",
    "QuerySet",
    "Stretches",
    "encode",
    "judgments_of",
    "resolve_negative",
    "select_queries",
]


_NOT_MADE = object()  # no side by key made yet (None is a made answer: that path steps aside)


@dataclass(frozen=True)
class _Side:
    """What :func:`encode` reads of the judgments for one negative-grade convention and query set."""

    qmap: pl.DataFrame  # (query_id, q): each scored query's number
    grades: pl.DataFrame  # (query_id, doc_id, grade) of the scored queries' judged documents
    judged_offsets: np.ndarray
    judged_grade: np.ndarray
    pool_only: pl.DataFrame | None


class Judgments:
    """The judgments' side of :func:`encode`, computed once for every run and measure that reads ``qrels``:
    the judged query ids, and for each negative-grade convention and set of scored queries the numbered
    queries, the judged rows to join, each query's judged grades and the pool-only documents. Each is what
    :func:`encode` computes alone, by the same steps; the arrays are handed out as copies."""

    #: Query sets and conventions kept (a call evaluates a few; past this the oldest goes).
    KEPT = 8

    def __init__(self, qrels: Qrels) -> None:
        self.qrels = qrels
        # what identifies the value it was made of (judgments_of): its frame, that frame's shape, fingerprint
        self.frame, self.shape, self.sha256 = qrels.frame, qrels.frame.shape, qrels.fingerprint.sha256
        self._judged: list[str] | None = None
        self._sides: dict[tuple[str, tuple[str, ...]], _Side] = {}
        self._hashed: dict[tuple[str, tuple[str, ...]], HashedSide | None] = {}
        self._lock = threading.Lock()

    def judged_query_ids(self) -> list[str]:
        """The judged query ids, sorted."""
        if self._judged is None:
            self._judged = sorted(set(self.qrels.frame.get_column("query_id").unique().to_list()))
        return self._judged

    def side(self, conv: Conventions, queries: QuerySet) -> _Side:
        key = (conv.negative, tuple(queries.query_ids))
        found = self._sides.get(key)
        if found is None:
            found = self._make(conv, queries)
            with self._lock:
                if len(self._sides) >= self.KEPT:
                    self._sides.pop(next(iter(self._sides)))
                self._sides[key] = found
        return found

    def hashed(self, conv: Conventions, queries: QuerySet) -> HashedSide | None:
        """The side's judged and pooled documents by key (:func:`qrelkit.engine.encoding.hashed.hashed_side`),
        kept as the side is; None where that path steps aside for these judgments."""
        key = (conv.negative, tuple(queries.query_ids))
        found = self._hashed.get(key, _NOT_MADE)
        if found is _NOT_MADE:
            side = self.side(conv, queries)
            found = hashed_side(side.qmap, side.grades, side.pool_only)
            with self._lock:
                if len(self._hashed) >= self.KEPT:
                    self._hashed.pop(next(iter(self._hashed)))
                self._hashed[key] = found
        return found  # type: ignore[return-value]  # not the sentinel: replaced above

    def _make(self, conv: Conventions, queries: QuerySet) -> _Side:
        qmap = pl.DataFrame(
            {"query_id": queries.query_ids, "q": np.arange(len(queries.query_ids), dtype=np.int64)},
            schema={"query_id": pl.String, "q": pl.Int64},
        )
        judgments = resolve_negative(self.qrels, conv).join(qmap, on="query_id", how="inner")
        ordered = judgments.sort("q", "grade", descending=[False, True])
        return _Side(
            qmap=qmap,
            grades=judgments.select("query_id", "doc_id", "grade"),
            judged_offsets=offsets_of(ordered.get_column("q").to_numpy(), len(queries.query_ids)),
            judged_grade=ordered.get_column("grade").to_numpy().astype(np.int64, copy=False),
            pool_only=_pool_only(self.qrels, conv),
        )


#: Qrels values up to this many rows keep their :class:`Judgments` between calls (:func:`judgments_of`).
KEEP_ROWS = 1_000_000
_KEPT: list[Judgments] = []  # the last few, newest last
_KEPT_LOCK = threading.Lock()


def judgments_of(qrels: Qrels) -> Judgments:
    """The :class:`Judgments` of ``qrels``: the one made for this very value (the same object, its frame
    the same object with the same shape, the same fingerprint) by an earlier call if it is among the last
    few kept, else a new one, kept when ``qrels`` has at most :data:`KEEP_ROWS` rows. A value is never
    changed in place (:class:`qrelkit.data.values.Qrels`), so what was computed of it still holds."""
    with _KEPT_LOCK:
        for j in _KEPT:
            if (
                j.qrels is qrels
                and j.frame is qrels.frame
                and j.shape == qrels.frame.shape
                and j.sha256 == qrels.fingerprint.sha256
            ):
                return j
    made = Judgments(qrels)
    if qrels.frame.height <= KEEP_ROWS:
        with _KEPT_LOCK:
            _KEPT.append(made)
            del _KEPT[:-2]
    return made


def select_queries(
    qrels: Qrels,
    run: Run,
    conv: Conventions,
    judgments: Judgments | None = None,
    stretches: Stretches | None = None,
) -> QuerySet:
    """The scored queries of ``run`` against ``qrels`` (:func:`qrelkit.engine.encoding.encoded.query_set`);
    ``judgments``, if given, is ``qrels``'s :class:`Judgments`, ``stretches`` the :class:`Stretches` of
    the run's query ids."""
    judged = (judgments or Judgments(qrels)).judged_query_ids()
    judged_q = set(judged)
    stretches = stretches or Stretches.of(run.frame.get_column("query_id"))
    # the run's query ids in the order of first appearance (a null only in values built by hand)
    run_q: list[str] = list(dict.fromkeys(stretches.values))  # type: ignore[arg-type]
    return query_set(
        judged,
        run_q,
        sorted(set(run_q) - judged_q),
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
    judgments: Judgments | None = None,
    by_hash: bool = True,
    stretches: Stretches | None = None,
) -> Encoded:
    """Rank ``run`` against ``qrels`` under ``conv``. See the module docstring for the order of steps.

    ``ranking=False`` leaves out the frame of ranked rows that explanations read (``Encoded.ranking``);
    ``depth`` (never with ``unjudged = "drop"``, which changes the rows that reach the top) ranks only the
    rows within it and the tied block at it. ``judgments`` is ``qrels``'s :class:`Judgments`, to share
    the judgments' side between encodings. ``by_hash`` (without ``ranking``) lets
    :func:`qrelkit.engine.encoding.hashed.encode_hashed` make the same arrays by hashed ids first (``False``: the
    columnar steps below only, which it is held to); ``stretches``, the :class:`Stretches` of the run's
    query ids, spares it hashing them."""
    judgments = judgments or Judgments(qrels)
    queries = queries or select_queries(qrels, run, conv, judgments, stretches)
    side = judgments.side(conv, queries)
    if by_hash and not ranking and run.frame.height <= HASHED_MAX_ROWS:  # else no side by key is made
        hashed = judgments.hashed(conv, queries)
        if hashed is not None:
            found = encode_hashed(
                run, conv, queries, hashed, side.judged_offsets, side.judged_grade, depth, stretches
            )
            if found is not None:
                return found
    qmap = side.qmap

    rows = run.frame.join(qmap, on="query_id", how="inner")
    if depth is not None:
        assert conv.unjudged != "drop"
        by = pl.col("score")
        if conv.precision == "single":
            by = by.cast(pl.Float32).cast(pl.Float64)
        rows = rows.filter(by.rank("min", descending=True).over("q") <= depth)
    rows = rows.join(side.grades, on=["query_id", "doc_id"], how="left")
    pool_only = side.pool_only
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
        judged_offsets=side.judged_offsets.copy(),
        judged_grade=side.judged_grade.copy(),
        ranking=ranked,
        pooled=pooled,
    )
