"""Diagnostics: the per-rank arithmetic behind one query's nDCG (``explain``).

``explain`` reproduces the chapter's hand calculation for one query from the same encoded arrays the
kernels use: each rank's document, grade, gain, discount, contribution and share of DCG; the ideal ordering
with its contributions; DCG, IDCG and nDCG; recall at the same cutoff; the tied blocks and how they were
resolved; and which relevant documents were ranked below the cutoff versus never retrieved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .conventions import DEFAULT, Conventions
from .data import Qrels, Run
from .engine import kernels as K
from .engine.encode import encode, resolve_negative, select_queries
from .errors import QueryNotFoundError, ValidationError, did_you_mean
from .measures import Measure, parse


@dataclass(frozen=True)
class RankRow:
    rank: int
    doc_id: str
    score: float
    grade: int | None  # None: unjudged
    gain: float  # under averaged ties: the expected gain at this rank (the block's mean gain)
    discount: float
    contribution: float
    share: float  # of DCG@k
    block: str | None  # tie block label, e.g. "T1 (ranks 3-5)"


@dataclass(frozen=True)
class IdealRow:
    rank: int
    doc_id: str
    grade: int
    gain: float
    discount: float
    contribution: float


@dataclass(frozen=True)
class TieBlock:
    label: str
    first_rank: int
    last_rank: int
    score: float
    doc_ids: tuple[str, ...]
    resolution: str


@dataclass(frozen=True)
class Explanation:
    query_id: str
    run_name: str
    measure: Measure
    conventions: Conventions
    k: int | None
    rows: tuple[RankRow, ...]
    ideal: tuple[IdealRow, ...]
    dcg: float
    idcg: float
    ndcg: float | None  # None when IDCG is 0
    recall: float | None
    relevant_total: int
    relevant_below_cutoff: tuple[tuple[str, int, int], ...]  # doc, grade, rank
    relevant_never_retrieved: tuple[tuple[str, int], ...]  # doc, grade
    tie_blocks: tuple[TieBlock, ...]
    in_run: bool

    def to_dict(self) -> dict:
        return {
            "query_id": self.query_id,
            "run": self.run_name,
            "measure": str(self.measure),
            "measure_full": self.measure.describe(self.conventions),
            "conventions": self.measure.conventions(self.conventions).to_dict(),
            "rows": [r.__dict__ for r in self.rows],
            "ideal": [r.__dict__ for r in self.ideal],
            "dcg": self.dcg,
            "idcg": self.idcg,
            "ndcg": self.ndcg,
            "recall": self.recall,
            "relevant_total": self.relevant_total,
            "relevant_below_cutoff": [list(x) for x in self.relevant_below_cutoff],
            "relevant_never_retrieved": [list(x) for x in self.relevant_never_retrieved],
            "tie_blocks": [b.__dict__ | {"doc_ids": list(b.doc_ids)} for b in self.tie_blocks],
        }


_RESOLUTION = {
    "average": "averaged over all orderings (expected gain at each rank)",
    "docid_desc": "ordered by document id, descending",
    "docid_asc": "ordered by document id, ascending",
    "file_order": "kept in file order",
    "optimistic": "higher grade first (optimistic)",
    "pessimistic": "lower grade first (pessimistic)",
}


def explain(
    qrels: Qrels,
    run: Run,
    query_id: str,
    measure: str | Measure = "nDCG@10",
    conventions: Conventions | None = None,
) -> Explanation:
    """The per-rank arithmetic of nDCG/DCG at ``measure``'s cutoff for one query of one run."""
    m = parse(measure)
    if m.name not in ("nDCG", "DCG", "IDCG"):
        raise ValidationError(
            f"explain shows the DCG arithmetic; {m.name} is not a DCG-family measure",
            fix="pass -m nDCG@k (recall at the same cutoff is shown too)",
        )
    conv = m.conventions(conventions or DEFAULT)
    queries = select_queries(qrels, run, conv.with_(missing_queries="zero", extra_queries="skip"))
    if query_id not in queries.query_ids:
        in_run = query_id in set(run.frame.get_column("query_id").unique().to_list())
        if in_run:
            raise QueryNotFoundError(
                f"query {query_id!r} is in the run but has no judgments, so it has no nDCG",
                fix="judge the query, or pick a judged one",
            )
        raise QueryNotFoundError(
            f"query {query_id!r} is in neither the judgments nor the run"
            f"{did_you_mean(query_id, queries.query_ids)}",
        )
    enc = encode(qrels, run, conv, queries)
    qi = queries.query_ids.index(query_id)
    lo, hi = int(enc.offsets[qi]), int(enc.offsets[qi + 1])
    k = m.k
    cut = hi - lo if k is None else min(k, hi - lo)

    gain_rows = K.block_mean(K.gains(enc.grade, enc.judged, conv.gain), enc)[lo:hi]
    disc = K.discounts(np.arange(hi - lo, dtype=np.int64), conv.discount)
    ranking = enc.ranking.slice(lo, hi - lo)
    docs = ranking.get_column("doc_id").to_list()
    scores = ranking.get_column("score").to_list()
    grades = ranking.get_column("grade").to_list()

    tie_blocks: list[TieBlock] = []
    block_label: dict[int, str] = {}
    i = 0
    while i < len(docs):
        j = i
        while j + 1 < len(docs) and scores[j + 1] == scores[i]:
            j += 1
        if j > i:
            label = f"T{len(tie_blocks) + 1}"
            tie_blocks.append(
                TieBlock(label, i + 1, j + 1, scores[i], tuple(docs[i : j + 1]), _RESOLUTION[conv.ties])
            )
            for b in range(i, j + 1):
                block_label[b] = f"{label} (ranks {i + 1}-{j + 1})"
        i = j + 1

    contributions = gain_rows[:cut] * disc[:cut]
    dcg = float(K.dcg(enc, k, conv)[qi])
    rows = tuple(
        RankRow(
            rank=r + 1,
            doc_id=docs[r],
            score=scores[r],
            grade=grades[r],
            gain=float(gain_rows[r]),
            discount=float(disc[r]),
            contribution=float(contributions[r]),
            share=float(contributions[r] / dcg) if dcg else 0.0,
            block=block_label.get(r),
        )
        for r in range(cut)
    )

    judged = resolve_negative(qrels, conv)
    judged = judged.filter(judged.get_column("query_id") == query_id)
    if conv.ideal == "judged":
        pool = list(
            zip(judged.get_column("doc_id").to_list(), judged.get_column("grade").to_list(), strict=True)
        )
    else:
        pool = [(d, g) for d, g in zip(docs, grades, strict=True) if g is not None]
    pool_gains = [(d, g, conv.gain_of(g)) for d, g in pool]
    pool_gains = sorted((x for x in pool_gains if x[2] > 0), key=lambda x: (-x[2], x[0]))
    ideal_cut = pool_gains if k is None else pool_gains[:k]
    ideal_disc = K.discounts(np.arange(len(ideal_cut), dtype=np.int64), conv.discount)
    ideal = tuple(
        IdealRow(i + 1, d, g, gain, float(ideal_disc[i]), float(gain * ideal_disc[i]))
        for i, (d, g, gain) in enumerate(ideal_cut)
    )
    idcg = float(K.idcg(enc, k, conv)[qi])

    rel_threshold = 1
    relevant = {
        d: g
        for d, g in zip(
            judged.get_column("doc_id").to_list(), judged.get_column("grade").to_list(), strict=True
        )
        if g >= rel_threshold
    }
    rank_of = {d: r + 1 for r, d in enumerate(docs)}
    below = tuple(
        sorted(
            ((d, g, rank_of[d]) for d, g in relevant.items() if d in rank_of and rank_of[d] > cut),
            key=lambda x: x[2],
        )
    )
    never = tuple(
        sorted(((d, g) for d, g in relevant.items() if d not in rank_of), key=lambda x: (-x[1], x[0]))
    )
    recall_values, _ = K.recall(enc, k, rel_threshold, conv.with_(no_relevant="skip"))
    recall = float(recall_values[qi])
    return Explanation(
        query_id=query_id,
        run_name=run.name,
        measure=m,
        conventions=conventions or DEFAULT,
        k=k,
        rows=rows,
        ideal=ideal,
        dcg=dcg,
        idcg=idcg,
        ndcg=dcg / idcg if idcg > 0 else None,
        recall=None if math.isnan(recall) else recall,
        relevant_total=len(relevant),
        relevant_below_cutoff=below,
        relevant_never_retrieved=never,
        tie_blocks=tuple(tie_blocks),
        in_run=bool(queries.in_run[qi]),
    )
