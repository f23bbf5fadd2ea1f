"""The small-input engine: clean TREC files of a few megabytes, ranked without a dataframe library.

For small inputs the fixed cost of an evaluation is loading the dataframe libraries, not the work. The
small reader (:mod:`qrelkit.formats.trec.small`, step 1 of :mod:`qrelkit.formats.trec`) hands this module
each file as :class:`Columns`; this module ranks each run under the conventions exactly as
:func:`qrelkit.engine.encoding.encode.encode` does and hands the same :class:`~qrelkit.engine.encoding.encoded.Encoded`
arrays to the same kernels. What it cannot rank exactly as the columnar path would (a duplicate document
or judgment, a hash collision, a negative zero score, an input that needs an error message) makes it step
aside (:class:`~qrelkit.errors.StepAside`), and :func:`qrelkit.evaluation.files.evaluate_files` evaluates the
files the usual way. So this path never changes a number and never has to explain an error; the property
tests hold it bit-identical to the columnar path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ...data.columns import Columns
from ...errors import StepAside
from ...measures.conventions import Conventions
from ...measures.grammar import Measure
from ..dispatch import compute
from ..registry import SMALL, claims
from .encoded import (
    TIE_KEYS,
    Encoded,
    QuerySet,
    encoding_key,
    offsets_of,
    query_set,
    rank_order,
    tied_blocks,
)

if TYPE_CHECKING:
    from ..tie_order import TieOrder

# ------------------------------------------------------------------------------------------------ ranking


def _vocabulary(columns: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct query ids, each row's index into them, each row's (query, document) key),
    looking only where the query id changes. Keys are 64-bit hashes: equal pairs have equal keys; unequal
    pairs almost never do, and every match found by key is verified."""
    heads = columns.query[columns.query_change]
    vocabulary, inverse = np.unique(heads, return_inverse=True)
    code = inverse[np.cumsum(columns.query_change) - 1]
    query_hash = np.array(
        [int.from_bytes(hashlib.blake2b(q, digest_size=8).digest(), "little") for q in vocabulary.tolist()],
        dtype=np.uint64,
    )
    return vocabulary, code, columns.doc_hash ^ (query_hash[code] * np.uint64(0x9E3779B97F4A7C15))


def _member(values: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    """Whether each value is in the sorted ``vocabulary`` (``np.isin`` without loading ``numpy.ma``)."""
    if not len(vocabulary):
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(vocabulary, values), len(vocabulary) - 1)
    return vocabulary[pos] == values


def _same_words(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise equality of two word matrices of possibly different widths (zero padding beyond), column
    by column (without padding either to the other's width)."""
    width = min(a.shape[1], b.shape[1])
    same = a[:, 0] == b[:, 0]
    for j in range(1, width):
        same &= a[:, j] == b[:, j]
    for wider in (a, b):
        for j in range(width, wider.shape[1]):
            same &= wider[:, j] == 0
    return same


@dataclass(frozen=True)
class Judgments:
    """The judgments indexed once for every run: query vocabulary, and (query, document) keys sorted."""

    vocabulary: np.ndarray  # sorted distinct query ids (S)
    query_ids: list[str]
    code: np.ndarray  # per judgment: index into vocabulary
    order: np.ndarray  # judgments sorted by key
    keys: np.ndarray  # sorted keys
    by_grade: np.ndarray  # judgments by query, then grade descending, then file order

    @classmethod
    def build(cls, qrels: Columns) -> Judgments:
        vocabulary, code, keys = _vocabulary(qrels)
        order = np.argsort(keys)
        sorted_keys = keys[order]
        if (sorted_keys[1:] == sorted_keys[:-1]).any():
            raise StepAside  # a duplicate judgment (or a hash collision): the columnar path decides
        by_grade = np.lexsort((-qrels.number, code))
        return cls(vocabulary, [q.decode() for q in vocabulary.tolist()], code, order, sorted_keys, by_grade)


def _query_set(
    judged: Judgments, run_vocabulary: np.ndarray, conv: Conventions, run_code: np.ndarray | None = None
) -> tuple[QuerySet, np.ndarray]:
    """The scored queries exactly as :func:`qrelkit.engine.encoding.encode.select_queries` chooses them, and the
    positions of those queries in the judgments' vocabulary. ``run_code``: the run's query codes in file
    order, or only those where the query id changes (the same order of first appearance, fewer to sort)."""
    in_judged = _member(run_vocabulary, judged.vocabulary)
    extra = [q.decode() for q in run_vocabulary[~in_judged].tolist()]
    if extra and conv.extra_queries == "reject":
        raise StepAside  # the columnar path raises the error
    in_run = _member(judged.vocabulary, run_vocabulary)
    present: set[str] | list[str] = {q for q, p in zip(judged.query_ids, in_run.tolist(), strict=True) if p}
    if run_code is not None:  # the run's queries in the order of first appearance
        _, first = np.unique(run_code, return_index=True)
        present = [run_vocabulary[c].decode() for c in run_code[np.sort(first)].tolist()]
    queries = query_set(list(judged.query_ids), present, extra, conv, "", "")
    positions = (
        np.arange(len(judged.vocabulary)) if conv.missing_queries == "zero" else np.flatnonzero(in_run)
    )
    return queries, positions


def _doc_keys(doc_words: np.ndarray, rows: np.ndarray, descending: bool, at: np.ndarray) -> list[np.ndarray]:
    """The document-id tie keys of ``rows[at]`` for :func:`rank_order`, least significant first (the first
    word is the most significant), inverted for descending ids."""
    words = doc_words.take(rows[at], axis=0)
    return [~words[:, j] if descending else words[:, j] for j in reversed(range(words.shape[1]))]


def encode_small(qrels: Columns, judged: Judgments, run: Columns, conv: Conventions) -> Encoded:
    """Rank ``run`` against ``qrels`` under ``conv``: the same arrays as
    :func:`qrelkit.engine.encoding.encode.encode`, step for step (its module docstring lists the steps)."""
    run_vocabulary, run_code, run_keys = _vocabulary(run)
    by_key = np.argsort(run_keys)
    sorted_keys = run_keys[by_key]
    if (sorted_keys[1:] == sorted_keys[:-1]).any():
        raise StepAside  # a duplicate document (or a hash collision): the columnar path decides
    slot = np.empty(len(run_keys), dtype=np.int64)
    slot[by_key] = np.searchsorted(judged.keys, sorted_keys)  # needles in order: a cache-friendly search
    np.minimum(slot, len(judged.keys) - 1, out=slot)
    queries, positions = _query_set(judged, run_vocabulary, conv, run_code[run.query_change])
    n_queries = len(queries.query_ids)
    # each run query's index in the judgments' vocabulary (-1: not judged), then in the scored list
    vocab_of_run = np.searchsorted(judged.vocabulary, run_vocabulary)
    vocab_of_run[~_member(run_vocabulary, judged.vocabulary)] = -1
    scored_index = np.full(len(judged.vocabulary), -1, dtype=np.int64)
    scored_index[positions] = np.arange(n_queries)
    vocab_pos = vocab_of_run[run_code]
    known = vocab_pos >= 0
    q_all = np.where(known, scored_index[vocab_pos], -1)

    # negative grades
    grade_all = qrels.number
    usable = np.ones(len(grade_all), dtype=bool)
    negative = grade_all < 0
    if negative.any():
        if conv.negative == "reject":
            raise StepAside  # the columnar path raises the error, naming the line
        if conv.negative == "zero":
            grade_all = np.where(negative, 0, grade_all)
        elif conv.negative == "unjudged":
            usable = ~negative

    # the run's rows in scored queries, joined with the judgments by key, verified word by word
    keep = q_all >= 0
    rows = np.flatnonzero(keep)
    slot = slot[rows]
    hit = judged.keys[slot] == run_keys[rows]
    row = judged.order[slot]
    hits = np.flatnonzero(hit)
    same = judged.code[row[hits]] == vocab_pos[rows[hits]]
    same &= _same_words(qrels.doc_words.take(row[hits], axis=0), run.doc_words.take(rows[hits], axis=0))
    if not same.all():
        raise StepAside  # a hash collision: the columnar path joins by the strings themselves
    is_judged = hit & usable[row]
    # listed with a negative grade under negative=unjudged: in the pool, not judged
    in_pool = hit & negative[row] if conv.negative == "unjudged" and negative.any() else None
    if conv.unjudged == "drop":
        rows, row, is_judged = rows[is_judged], row[is_judged], is_judged[is_judged]
        in_pool = None
    q = q_all[rows]
    score = run.number[rows]
    if conv.precision == "single":
        with np.errstate(over="ignore"):  # beyond float32's range: inf, as the columnar cast gives
            score = score.astype(np.float32).astype(np.float64)
    if ((score == 0) & np.signbit(score)).any():
        raise StepAside  # -0.0: ordered differently from 0.0 by the columnar sort
    grade = np.where(is_judged, grade_all[row], 0).astype(np.int64)

    # the ranking: query, score descending, the tie convention, then file order (rows are in file order
    # and every sort is stable, so file order needs no key of its own)
    ties: list[np.ndarray] | Callable[[np.ndarray], list[np.ndarray]] = []
    tie = TIE_KEYS[conv.ties]
    if tie is not None and tie[0] == "doc_id":
        ties = partial(_doc_keys, run.doc_words, rows, tie[1])  # taken for the rows of tied blocks only
    elif tie is not None:  # by grade, unjudged rows lowest (lexsort: the last key is the most significant)
        ties = [-grade, ~is_judged] if tie[1] else [grade, is_judged]
    order = rank_order(q, score, n_queries, ties)
    q, score, grade, is_judged = q[order], score[order], grade[order], is_judged[order]
    pooled = in_pool[order] if in_pool is not None and in_pool.any() else None

    block_starts = tied_blocks(q, score) if conv.ties == "average" else None

    # the judgments of the scored queries, best grade first (their order made once, in Judgments: scored
    # queries keep the vocabulary's order, and grade_all orders the grades as the file's do)
    jrows = judged.by_grade
    jq = scored_index[judged.code[jrows]]
    jkeep = (jq >= 0) & usable[jrows]
    jq, jgrade = jq[jkeep], grade_all[jrows[jkeep]]
    return Encoded(
        queries=queries,
        offsets=offsets_of(q, n_queries),
        grade=grade,
        judged=is_judged,
        score=score,
        block_starts=block_starts,
        judged_offsets=offsets_of(jq, n_queries),
        judged_grade=jgrade.astype(np.int64),
        pooled=pooled,
    )


def grades_within(qrels: Columns, scale: Sequence[int]) -> bool:
    """Whether every grade is one of ``scale``'s."""
    return bool(_member(qrels.number, np.array(sorted(set(scale)))).all())


def evaluate_columns(
    qrels: Columns,
    judged: Judgments,
    run: Columns,
    measures: Sequence[Measure],
    conv: Conventions,
    *,
    tie_order: TieOrder | None = None,
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """One run's query set and, per measure, (values, undefined mask): what
    :func:`qrelkit.evaluation.core.evaluate_run` gives for the same files (``tie_order`` gathers what it
    gathers there). Raises
    :class:`~qrelkit.errors.StepAside` when the run is not for this path, or a measure's family is not
    (:data:`qrelkit.engine.registry.REGISTRY`)."""
    if not all(claims(m, SMALL) for m in measures):
        raise StepAside
    cache: dict[tuple[str, ...], Encoded] = {}
    values = {}
    for measure in measures:
        mconv = measure.conventions(conv)
        key = encoding_key(mconv)
        if key not in cache:
            cache[key] = encode_small(qrels, judged, run, mconv)
        values[measure] = compute(cache[key], measure, mconv, SMALL)
        if tie_order is not None:
            tie_order.record(cache[key], measure, mconv)
    return next(iter(cache.values())).queries, values
