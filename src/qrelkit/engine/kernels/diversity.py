"""Diversity measures over subtopic judgments: alpha-nDCG@k (Clarke et al. 2008) and ERR-IA@k (Chapelle
et al. 2009), as ndeval (the TREC Web track's evaluation program) computes them.

A document d is relevant to subtopic s when its grade for s is >= ``rel`` (ndeval: grade > 0, rel = 1);
grades above are not told apart. C_s(i) counts the documents in the top i relevant to s. A query's
subtopics are those with at least one relevant document; a query with none has no ideal and follows
``no_relevant``. Documents the judgments do not name are relevant to nothing (``unjudged = "drop"`` removes
them before ranking; a document is judged when any subtopic judged it).

- alpha-DCG@k = sum over ranks i <= k of sum_s J(d_i, s) (1 - alpha)^C_s(i-1) / log2(i + 1); alpha-nDCG@k
  divides it by the alpha-DCG@k of ndeval's ideal ordering. The exact ideal is NP-hard (Clarke et al.
  2008), so ndeval builds it greedily: at each rank the judged document of greatest gain given the
  subtopics covered above, the ties among equal gains going to the greatest document id (ndeval keeps
  the first maximum in descending document-id order; gains within a relative 1e-12 count as equal). A run
  can beat the greedy ideal, so alpha-nDCG can exceed 1, as in ndeval.
- ERR-IA@k = mean over the query's subtopics of ERR_s@k / max@k with ERR_s@k = sum over ranks i <= k of
  J(d_i, s) 0.5 (1 - 0.5)^C_s(i-1) / i (ERR with binary grades: a relevant document stops the user with
  probability 0.5) and max@k = sum over i <= k of 0.5^i / i, the ERR of a ranking relevant to s at every
  rank: ndeval's collection-independent normalisation (its ``ERR-IA``; ir_measures' ``ERR_IA``). At k = 1
  ndeval leaves ERR-IA unnormalised (the number of subtopics the first document covers); here k = 1 is
  normalised like every other cutoff.

Averaged ties, exactly. Both sums are, subtopic by subtopic, a sum over relevant documents x of
q^(documents above x relevant to s) * D(rank x) (q = 1 - alpha and D = 1/log2(rank + 1) for alpha-DCG;
q = 0.5 and D = 0.5/rank for ERR). In a tied block of n rows starting below rank p, m of them relevant to
s, c of the rows above relevant to s: every ordering of the block is equally likely, so x sits at block
position t with probability 1/n, and given t the rows above it in the block are a uniform (t-1)-subset of
the other n - 1, of which the H relevant to s follow the hypergeometric law (n - 1, m - 1, t - 1). The
block's expected share is q^c * m/n * sum over t of D(p + t) * E[q^H | t], the sum running over the block's
ranks within k, and the count below the block is c + m whatever the order. The ideal does not depend on
the run, so alpha-nDCG averages exactly too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConventionError, ValidationError
from ...measures.conventions import Conventions
from ...measures.grammar import DIVERSITY_MEASURES, Measure
from ..encoding.encoded import Encoded, apply_no_relevant

if TYPE_CHECKING:  # polars loads only when diversity judgments are read (the small path imports this module)
    from ...data.values import DiversityQrels

NAMES = DIVERSITY_MEASURES

#: ERR-IA's stopping probability of a relevant document (binary grades: (2^1 - 1) / 2^1), as ndeval.
ERR_IA_STOP = 0.5

#: Greedy gains within this relative distance are equal (the ideal's tie rule then decides).
GAIN_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Subtopics:
    """Subtopic judgments of an encoding. Ranked rows: ``row_offsets`` (rows + 1) delimit each row's
    (subtopic code, grade) pairs. Queries: ``doc_offsets`` (Q + 1) delimit each query's judged documents,
    in descending document-id order, and ``doc_sub_offsets`` (documents + 1) each document's pairs. Subtopic
    codes count from 0 within each query."""

    row_offsets: np.ndarray
    row_subtopic: np.ndarray
    row_grade: np.ndarray
    doc_offsets: np.ndarray
    doc_sub_offsets: np.ndarray
    doc_subtopic: np.ndarray
    doc_grade: np.ndarray


def _csr(owner: np.ndarray, n: int) -> np.ndarray:
    offsets = np.zeros(n + 1, dtype=np.int64)
    if len(owner):
        np.cumsum(np.bincount(owner, minlength=n), out=offsets[1:])
    return offsets


def attach(enc: Encoded, judgments: DiversityQrels) -> Encoded:
    """``enc`` (encoded against ``judgments.projection()`` with ``ranking=True``) with its subtopics."""
    import polars as pl

    if enc.ranking is None:
        raise ValueError("attach needs an encoding made with ranking=True")
    qmap = pl.DataFrame(
        {"query_id": enc.queries.query_ids, "q": np.arange(enc.n_queries, dtype=np.int64)},
        schema={"query_id": pl.String, "q": pl.Int64},
    )
    judged = judgments.frame.join(qmap, on="query_id", how="inner").with_columns(
        (pl.col("subtopic").rank("dense").over("q") - 1).cast(pl.Int64).alias("s")
    )
    rows = (
        enc.ranking.select("query_id", "doc_id")
        .with_row_index("row")
        .join(judged.select("query_id", "doc_id", "s", "grade"), on=["query_id", "doc_id"], how="inner")
        .sort("row", "s")
    )
    row_index = rows.get_column("row").to_numpy().astype(np.int64)
    docs = judged.sort(["q", "doc_id", "s"], descending=[False, True, False])
    new_doc = docs.select(
        (pl.col("q") != pl.col("q").shift(1)) | (pl.col("doc_id") != pl.col("doc_id").shift(1))
    ).to_series()
    doc_index = (new_doc.fill_null(True).cast(pl.Int64).cum_sum() - 1).to_numpy()
    n_docs = int(doc_index[-1]) + 1 if len(doc_index) else 0
    doc_query = np.zeros(n_docs, dtype=np.int64)
    doc_query[doc_index] = docs.get_column("q").to_numpy()
    subtopics = Subtopics(
        row_offsets=_csr(row_index, len(enc.grade)),
        row_subtopic=rows.get_column("s").to_numpy().astype(np.int64),
        row_grade=rows.get_column("grade").to_numpy().astype(np.int64),
        doc_offsets=_csr(doc_query, enc.n_queries),
        doc_sub_offsets=_csr(doc_index, n_docs),
        doc_subtopic=docs.get_column("s").to_numpy().astype(np.int64),
        doc_grade=docs.get_column("grade").to_numpy().astype(np.int64),
    )
    return replace(enc, subtopics=subtopics)


def compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of a diversity measure and the mask of queries without a relevant subtopic."""
    if enc.subtopics is None:
        raise ValidationError(
            f"{measure} needs diversity judgments (query_id subtopic doc_id grade)",
            fix="read the judgments with read_diversity_qrels (qrelkit eval --diversity QRELS ...)",
        )
    if conv.ties in ("optimistic", "pessimistic"):
        raise ConventionError(
            f"{measure.name} has no {conv.ties} tie order: it ranks a tied block by one grade, while a "
            "diversity measure's best order depends on the subtopics each document covers",
            fix=f"average the ties (ties=average) or order them, e.g. {measure.name}(ties=docid_desc)",
        )
    k = measure.k
    assert k is not None  # the grammar requires a cutoff
    rel = measure.rel if measure.rel is not None else 1
    n = enc.n_queries
    values = np.zeros(n)
    undefined = np.zeros(n, dtype=bool)
    ranks = np.arange(1, max(k, 1) + 1, dtype=np.float64)
    if measure.name == "alpha_nDCG":
        q = 1.0 - float(measure.param("alpha"))
        discount = 1.0 / np.log2(ranks + 1.0)
    else:
        q = 1.0 - ERR_IA_STOP
        discount = ERR_IA_STOP / ranks
        bound = float(np.sum(ERR_IA_STOP * (1.0 - ERR_IA_STOP) ** (ranks - 1.0) / ranks))
    for query in range(n):
        docs = _query_docs(enc.subtopics, query, rel)
        if docs.shape[1] == 0:
            undefined[query] = True
            continue
        sums = _expected_sums(enc, query, rel, docs.shape[1], k, q, discount)
        if measure.name == "alpha_nDCG":
            values[query] = float(sums.sum()) / greedy_ideal(docs, k, q)
        else:
            values[query] = float(sums.mean()) / bound
    return apply_no_relevant(values, undefined, conv)


def _relevant_codes(subtopic: np.ndarray, grade: np.ndarray, rel: int) -> np.ndarray:
    return np.unique(subtopic[grade >= rel])


def _query_docs(sub: Subtopics, query: int, rel: int) -> np.ndarray:
    """The query's judged documents relevant to some subtopic, in descending document-id order, as a
    (documents x relevant subtopics) boolean matrix; its columns are the query's relevant subtopics in
    code order (the row matrix of :func:`_expected_sums` uses the same columns)."""
    lo, hi = int(sub.doc_offsets[query]), int(sub.doc_offsets[query + 1])
    a, b = int(sub.doc_sub_offsets[lo]), int(sub.doc_sub_offsets[hi])
    subtopic, grade = sub.doc_subtopic[a:b], sub.doc_grade[a:b]
    codes = _relevant_codes(subtopic, grade, rel)
    owner = np.repeat(np.arange(hi - lo), np.diff(sub.doc_sub_offsets[lo : hi + 1]))
    live = grade >= rel
    matrix = np.zeros((hi - lo, len(codes)), dtype=bool)
    matrix[owner[live], np.searchsorted(codes, subtopic[live])] = True
    return matrix[matrix.any(axis=1)]


def greedy_ideal(docs: np.ndarray, k: int, q: float) -> float:
    """alpha-DCG@k of ndeval's greedy ideal ordering of ``docs`` (rows in descending document-id order)."""
    counts = np.zeros(docs.shape[1])
    left = np.ones(docs.shape[0], dtype=bool)
    total = 0.0
    for i in range(min(k, docs.shape[0])):
        gains = np.where(left, (docs * q**counts).sum(axis=1), -1.0)
        top = float(gains.max())
        if top <= 0.0:
            break
        best = int(np.flatnonzero(gains >= top - GAIN_TOLERANCE * top)[0])
        total += float(gains[best]) / math.log2(i + 2.0)
        counts += docs[best]
        left[best] = False
    return total


def _expected_sums(
    enc: Encoded, query: int, rel: int, n_subtopics: int, k: int, q: float, discount: np.ndarray
) -> np.ndarray:
    """Per relevant subtopic, the expected sum over its relevant documents within k of q^(relevant
    documents above) * discount(rank), over the orderings of tied blocks (module docstring)."""
    sub = enc.subtopics
    r0, r1 = int(enc.offsets[query]), int(enc.offsets[query + 1])
    lo, hi = int(sub.doc_offsets[query]), int(sub.doc_offsets[query + 1])
    a, b = int(sub.doc_sub_offsets[lo]), int(sub.doc_sub_offsets[hi])
    codes = _relevant_codes(sub.doc_subtopic[a:b], sub.doc_grade[a:b], rel)
    starts = None
    end = min(r1, r0 + k)
    if enc.block_starts is not None:
        first, last = np.searchsorted(enc.block_starts, [r0, r1])
        local = enc.block_starts[first:last]
        beyond = local[local >= r0 + k]
        end = int(beyond[0]) if len(beyond) else r1
        starts = local[local < end] - r0
    matrix = np.zeros((end - r0, n_subtopics), dtype=bool)
    ea, eb = int(sub.row_offsets[r0]), int(sub.row_offsets[end])
    owner = np.repeat(np.arange(end - r0), np.diff(sub.row_offsets[r0 : end + 1]))
    subtopic, grade = sub.row_subtopic[ea:eb], sub.row_grade[ea:eb]
    live = (grade >= rel) & np.isin(subtopic, codes)
    matrix[owner[live], np.searchsorted(codes, subtopic[live])] = True
    if starts is None or len(starts) == len(matrix):
        above = np.cumsum(matrix, axis=0) - matrix
        shares = np.where(matrix, q**above, 0.0) * discount[: len(matrix), None]
        return shares[:k].sum(axis=0)
    out = np.zeros(n_subtopics)
    above = np.zeros(n_subtopics)
    for s, e in zip(starts.tolist(), [*starts[1:].tolist(), len(matrix)], strict=True):
        n = e - s
        m = matrix[s:e].sum(axis=0)
        depth = min(n, k - s)
        for col in np.flatnonzero(m).tolist():
            means = _hypergeometric_means(n - 1, int(m[col]) - 1, depth, q)
            out[col] += q ** above[col] * m[col] / n * float(np.dot(discount[s : s + depth], means))
        above += m
    return out


def _hypergeometric_means(others: int, relevant: int, depth: int, q: float) -> np.ndarray:
    """E[q^H] for H ~ hypergeometric(others, relevant, j), j = 0..depth-1: H relevant rows among j drawn
    without replacement from ``others`` rows of which ``relevant`` are relevant."""
    if relevant == 0 or depth == 1:
        return np.ones(depth)
    from scipy.stats import hypergeom

    draws = np.arange(depth)[:, None]
    hits = np.arange(min(relevant, depth - 1) + 1)[None, :]
    pmf = hypergeom.pmf(hits, others, relevant, draws)
    return np.nansum(pmf * q**hits, axis=1)
