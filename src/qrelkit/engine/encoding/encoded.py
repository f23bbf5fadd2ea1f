"""What the encoders produce and the kernels read: rankings as flat arrays grouped by query.

No dataframe library here: the small-input path (:mod:`qrelkit.engine.encoding.small`) and the kernels import it.
It also holds what every kernel module shares: each row's position and the ``no_relevant`` policy, and
the one rule of the query set (:func:`query_set`: which queries are scored under ``missing_queries`` and
``extra_queries``), which every engine applies.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from math import comb
from typing import Any

import numpy as np

from ...measures.conventions import Conventions


@dataclass(frozen=True)
class QuerySet:
    """Which queries are scored, and what each query-set policy did."""

    query_ids: list[str]  # scored queries, sorted
    in_run: np.ndarray  # bool per scored query: False = judged but absent from the run (scored as empty)
    missing_scored_zero: list[str]
    missing_skipped: list[str]
    extra_skipped: list[str]
    #: the judged queries the run has, in the order the run first gives them (each query's first line);
    #: what ``summation = "run_order"`` adds in
    run_order: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        return {
            "scored": int(self.in_run.sum()),
            "missing_from_run_scored_zero": len(self.missing_scored_zero),
            "missing_from_run_skipped": len(self.missing_skipped),
            "absent_from_qrels_skipped": len(self.extra_skipped),
        }


#: How each tie convention orders rows of equal score, after query and score descending and before file
#: order: the key ("doc_id" or "grade", unjudged rows lowest) and whether it descends; ``None`` for the
#: conventions that add no key (``average`` marks the tied blocks instead, ``file_order`` keeps file order).
#: The one rule both encoders (:mod:`qrelkit.engine.encoding.encode`, :mod:`qrelkit.engine.encoding.small`) follow.
TIE_KEYS: dict[str, tuple[str, bool] | None] = {
    "docid_desc": ("doc_id", True),
    "docid_asc": ("doc_id", False),
    "optimistic": ("grade", True),
    "pessimistic": ("grade", False),
    "average": None,
    "file_order": None,
}


def block_heads(*keys: np.ndarray) -> np.ndarray:
    """Whether each row of rows sorted by ``keys`` begins a block of rows equal on every key."""
    heads = np.zeros(len(keys[0]), dtype=bool)
    heads[:1] = True
    for key in keys:
        heads[1:] |= key[1:] != key[:-1]
    return heads


def in_tied_blocks(heads: np.ndarray) -> np.ndarray:
    """The positions of the rows in blocks of more than one row (``heads``: :func:`block_heads`)."""
    tied = np.zeros(len(heads), dtype=bool)
    tied[1:] = ~heads[1:]
    tied[:-1] |= ~heads[1:]
    return np.flatnonzero(tied)


def stretch_firsts(new: np.ndarray) -> np.ndarray:
    """For every row, the index of the first row of its stretch (``new`` marks where one begins, and the
    first row does)."""
    return np.maximum.accumulate(np.where(new, np.arange(len(new)), 0))


_TOP = np.uint64(1 << 63)


def descending_key(score: np.ndarray) -> np.ndarray:
    """An unsigned integer per score that sorts ascending as the scores sort descending (no NaN, no -0.0)."""
    bits = score.view(np.uint64)
    ascending = np.where(bits & _TOP, ~bits, bits | _TOP)
    return ~ascending


def by_query_then_score(q: np.ndarray, score: np.ndarray, n_queries: int) -> np.ndarray:
    """The stable order of rows by query number ``q`` (0 to ``n_queries`` - 1) ascending, then score
    descending (no NaN, no -0.0): ``np.lexsort([-score, q])``."""
    return sorted_by_query_then_score(q, score, n_queries)[0]


def sorted_by_query_then_score(
    q: np.ndarray, score: np.ndarray, n_queries: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(:func:`by_query_then_score`, ``q`` and ``score`` in that order). Rows already in that order within
    each query, as runs are written, cost one stable sort of the query numbers (a radix sort of 16-bit
    ones)."""
    order = np.argsort(q.astype(np.int16) if n_queries < 2**15 else q, kind="stable")
    qs, ss = q[order], score[order]
    unsorted = np.flatnonzero((qs[1:] == qs[:-1]) & (ss[1:] > ss[:-1]))
    if not len(unsorted):
        return order, qs, ss  # each query's rows already by score, as runs are written
    down = descending_key(score)[order]
    starts = np.searchsorted(qs, np.unique(qs[unsorted]))
    if len(starts) > 64:
        by_score = np.argsort(down, kind="stable")
        order = order[by_score[np.argsort(qs[by_score], kind="stable")]]
        return order, q[order], score[order]
    ends = np.searchsorted(qs, qs[starts], side="right")
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        within = np.argsort(down[lo:hi], kind="stable")
        order[lo:hi] = order[lo:hi][within]
        ss[lo:hi] = ss[lo:hi][within]  # qs is constant over [lo, hi)
    return order, qs, ss


def within_depth(qs: np.ndarray, heads: np.ndarray, depth: int) -> np.ndarray | None:
    """The positions of the ranked rows (``qs``: each row's query, rows grouped by query; ``heads``:
    :func:`block_heads` of the query and the score) whose block of tied scores begins fewer than ``depth``
    rows after its query's first row: the rows that fewer than ``depth`` others of their query beat by
    score. ``None`` when that is every row."""
    n = len(qs)
    if depth <= 0:
        return np.zeros(0, dtype=np.int64)
    if depth >= n:  # no query has more rows than that (and starts + depth cannot overflow)
        return None
    starts = np.flatnonzero(block_heads(qs))
    ends = np.append(starts[1:], n)
    deep = starts + depth < ends  # the queries with rows past the depth
    if not deep.any():
        return None
    first_cut = starts[deep] + depth
    block_starts = np.append(np.flatnonzero(heads), n)
    # each deep query keeps its rows up to the first block that begins at or past its depth (a query's
    # first row begins a block, so that is never past the query's end)
    stops = ends.copy()
    stops[deep] = block_starts[np.searchsorted(block_starts, first_cut)]
    lengths = stops - starts
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))


def rank_order(
    q: np.ndarray,
    score: np.ndarray,
    n_queries: int,
    ties: list[np.ndarray] | Callable[[np.ndarray], list[np.ndarray]],
) -> np.ndarray:
    """The rows' order by query ascending, score descending, then the ``ties`` keys (least significant
    first), then file order: exactly ``np.lexsort([*ties, -score, q])`` for scores without NaN or -0.0
    (which the encoders step aside for), with the tie keys sorted within the blocks of equal (query,
    score) only. ``ties`` may be a function of row indices giving those rows' keys, so that keys are made
    only for the rows of tied blocks."""
    order, qs, ss = sorted_by_query_then_score(q, score, n_queries)
    if not ties:
        return order
    heads = block_heads(qs, ss)
    at = in_tied_blocks(heads)
    if not len(at):
        return order
    rows = order[at]
    keys = ties(rows) if callable(ties) else [tie[rows] for tie in ties]
    order[at] = rows[np.lexsort([*keys, np.cumsum(heads)[at]])]
    return order


def tied_blocks(q: np.ndarray, score: np.ndarray) -> np.ndarray | None:
    """The first row of every block of equal (query, score) in ranked rows, or ``None`` when no two rows
    tie (every row its own block): what ``ties = "average"`` averages over."""
    if not len(score):
        return None
    starts = np.flatnonzero(block_heads(q, score))
    return starts if len(starts) < len(score) else None


def query_set(
    judged: list[str], in_run: Collection[str], extra: list[str], conv: Conventions, run: str, source: str
) -> QuerySet:
    """The scored queries of a run: ``judged`` the judged query ids (sorted), ``in_run`` the run's query ids
    (those of them judged are scored; a sequence in the order the run first gives them, or a set where that
    order is not kept), ``extra`` the run's queries nobody judged (sorted). ``missing_queries = "zero"`` scores every
    judged query (one the run lacks as an empty ranking), ``"skip"`` only those the run has;
    ``extra_queries = "reject"`` refuses a run with a query nobody judged, ``"skip"`` leaves it out.

    The one owner of the rule: :func:`qrelkit.engine.encoding.encode.select_queries`, the small path, the batches of
    :func:`qrelkit.evaluation.core.evaluate_run_batches` and Spark's partitions all call it."""
    if extra and conv.extra_queries == "reject":
        from ...errors import ValidationError

        raise ValidationError(
            f"run {run!r} has {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments "
            f"(first: {extra[0]!r})",
            source=source,
            fix="judge those queries, remove them from the run, or use extra_queries=skip",
        )
    seen = in_run if isinstance(in_run, set | frozenset) else set(in_run)
    present = np.array([q in seen for q in judged], dtype=bool)
    missing = [q for q, p in zip(judged, present.tolist(), strict=True) if not p]
    judged_q = set(judged)
    order = (
        ()
        if isinstance(in_run, set | frozenset)
        else tuple(q for q in dict.fromkeys(in_run) if q in judged_q)
    )
    if conv.missing_queries == "zero":
        return QuerySet(list(judged), present, missing, [], list(extra), order)
    scored = [q for q, p in zip(judged, present.tolist(), strict=True) if p]
    return QuerySet(scored, np.ones(len(scored), dtype=bool), [], missing, list(extra), order)


@dataclass(frozen=True)
class Encoded:
    """One run ranked under one set of ranking conventions, as arrays grouped by query.

    Rankings: ``offsets`` (Q + 1) delimit each query's rows in ``grade``/``judged``/``score``, which are in
    rank order. ``block_starts`` lists the first row of every tied block (``None`` when each row is its own
    block). Judgments: ``judged_offsets`` delimit each query's judged grades in ``judged_grade`` (negative
    grades already resolved), used for the ideal ordering and for the number of relevant documents.
    """

    queries: QuerySet
    offsets: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    score: np.ndarray
    block_starts: np.ndarray | None
    judged_offsets: np.ndarray
    judged_grade: np.ndarray
    # for explanations: a polars frame (query_id, doc_id, score, grade (null = unjudged), line, block);
    # None where nothing will be explained (the small-input path)
    ranking: Any = field(default=None, repr=False)
    # subtopic judgments of the ranked rows and of each query (qrelkit.engine.kernels.diversity.Subtopics), for the
    # diversity measures; None for ordinary judgments
    subtopics: Any = field(default=None, repr=False)
    # under negative=unjudged, which ranked rows the judgments list with a negative grade (in the pool, not
    # judged: trec_eval's RELVALUE_UNJUDGED, which infAP counts); None where there is none
    pooled: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.queries.query_ids)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


def encoding_key(conv: Conventions) -> tuple[str, ...]:
    """The conventions an encoding depends on: measures that agree on these share one encoding."""
    return (conv.unjudged, conv.ties, conv.precision, conv.negative)


def offsets_of(codes: np.ndarray, n_queries: int) -> np.ndarray:
    """Row offsets (Q + 1) of each query's rows, from every row's query code (rows grouped by code)."""
    counts = np.bincount(codes, minlength=n_queries) if len(codes) else np.zeros(n_queries, dtype=np.int64)
    offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def positions(enc: Encoded) -> tuple[np.ndarray, np.ndarray]:
    """(query index, 0-based position within the query) for every ranked row."""
    counts = enc.counts
    qidx = np.repeat(np.arange(enc.n_queries, dtype=np.int64), counts)
    pos = np.arange(len(qidx), dtype=np.int64) - np.repeat(enc.offsets[:-1], counts)
    return qidx, pos


def apply_no_relevant(
    values: np.ndarray, undefined: np.ndarray, conv: Conventions
) -> tuple[np.ndarray, np.ndarray]:
    """Apply the ``no_relevant`` policy: (values, mask of the queries it touched).

    ``skip_unretrieved`` also leaves undefined a query whose value is 0 because nothing relevant was
    retrieved within the cutoff (for nDCG: DCG@k = 0), the way trectools reports NaN for it.
    """
    if conv.no_relevant == "skip_unretrieved":
        undefined = undefined | (values == 0.0)
    if conv.no_relevant in ("skip", "skip_unretrieved"):
        values = values.copy()
        values[undefined] = np.nan
    elif conv.no_relevant == "one":
        values = np.where(undefined, 1.0, values)
    else:
        values = np.where(undefined, 0.0, values)
    return values, undefined


def block_mean(values: np.ndarray, enc: Encoded) -> np.ndarray:
    """Each row's value replaced by the mean of its tied block (identity when there are no blocks)."""
    starts = enc.block_starts
    if starts is None or len(values) == 0:
        return values
    sizes = np.diff(np.append(starts, len(values)))
    sums = np.add.reduceat(values, starts)
    return np.repeat(sums / sizes, sizes)


def any_in_top(enc: Encoded, hit: np.ndarray, k: int | None) -> np.ndarray:
    """Per query, the probability that a row where ``hit`` holds is among the top k (all rows without k):
    0 or 1 for one ordering; under averaged ties exact over the orderings of the tied block that straddles
    k, 1 - C(n - m, t) / C(n, t) for a block of n rows (m of them hits) with t of its ranks within k, when
    no hit ranks above it."""
    r = hit.astype(np.float64)
    qidx, pos = positions(enc)
    n = enc.n_queries
    if k is None:
        return (np.bincount(qidx, weights=r, minlength=n) > 0).astype(np.float64)
    out = np.zeros(n, dtype=np.float64)
    starts = enc.block_starts if enc.block_starts is not None else np.arange(len(r), dtype=np.int64)
    sizes = np.diff(np.append(starts, len(r)))
    sums = np.add.reduceat(r, starts) if len(r) else np.zeros(0)
    bq = qidx[starts] if len(r) else np.zeros(0, dtype=np.int64)
    bpos = pos[starts] if len(r) else np.zeros(0, dtype=np.int64)
    inside = bpos + sizes <= k
    found = np.bincount(bq[inside & (sums > 0)], minlength=n) > 0
    out[found] = 1.0
    for b in np.flatnonzero((bpos < k) & ~inside & (sums > 0)).tolist():
        q = int(bq[b])
        if found[q]:
            continue
        size, m, t = int(sizes[b]), int(sums[b]), int(k - bpos[b])
        out[q] = 1.0 - comb(size - m, t) / comb(size, t)
    return out
