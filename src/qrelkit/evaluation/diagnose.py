"""Diagnostics: the per-rank arithmetic behind one query's nDCG (``explain``), and the conventions sweep
(the same run under every single-axis change and every profile: ``sweep``, ``attribute``).

``explain`` reproduces the chapter's hand calculation for one query from the same encoded arrays the
kernels use: each rank's document, grade, gain, discount, contribution and share of DCG; the ideal ordering
with its contributions; DCG, IDCG and nDCG; recall at the same cutoff; the tied blocks and how they were
resolved; and which relevant documents were ranked below the cutoff versus never retrieved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..data.values import Qrels, Run
from ..engine.encoding.encode import encode, resolve_negative, select_queries
from ..engine.encoding.encoded import block_mean
from ..engine.kernels import ranked as K
from ..errors import QueryNotFoundError, ValidationError, did_you_mean
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import Measure, parse
from ..measures.profiles import PROFILES, Profile, optimistic_axes


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
    from .core import check_gains

    check_gains(qrels, [m], conventions or DEFAULT)  # the judgments are refused as evaluate refuses them
    # one query's arithmetic needs only that query's rows (every measure is computed per query)
    whole_qrels, whole_run = qrels, run
    qrels = replace(qrels, frame=qrels.frame.filter(qrels.frame.get_column("query_id") == query_id))
    run = replace(run, frame=run.frame.filter(run.frame.get_column("query_id") == query_id))
    queries = select_queries(qrels, run, conv.with_(missing_queries="zero", extra_queries="skip"))
    if query_id not in queries.query_ids:
        if run.frame.height:
            raise QueryNotFoundError(
                f"query {query_id!r} is in the run but has no judgments, so it has no nDCG",
                fix="judge the query, or pick a judged one",
            )
        raise QueryNotFoundError(
            f"query {query_id!r} is in neither the judgments nor the run"
            f"{did_you_mean(query_id, whole_qrels.query_ids + whole_run.query_ids)}",
        )
    enc = encode(qrels, run, conv, queries)
    qi = queries.query_ids.index(query_id)
    lo, hi = int(enc.offsets[qi]), int(enc.offsets[qi + 1])
    k = m.k
    cut = hi - lo if k is None else min(k, hi - lo)

    gain_rows = block_mean(K.gains(enc.grade, enc.judged, conv.gain), enc)[lo:hi]
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

    contributions = gain_rows[:cut] / K.log_ranks(np.arange(cut, dtype=np.int64), conv.discount)
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
    ideal_log = K.log_ranks(np.arange(len(ideal_cut), dtype=np.int64), conv.discount)
    ideal_disc = 1.0 / ideal_log
    ideal = tuple(
        IdealRow(i + 1, d, g, gain, float(ideal_disc[i]), float(gain / ideal_log[i]))
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


# -- ordered badly versus never retrieved ---------------------------------------------------------------


@dataclass(frozen=True)
class MissingGain:
    """Where the relevant documents of a run's queries are, at cutoff ``k``, in gain and in documents.

    Per query (``per_query``: query_id, relevant, gain, gain_found, gain_below, gain_never, found, below,
    never) and summed over the scored queries (``totals``). A relevant document (grade >= 1) is *found*
    in the top k, *below* the cutoff (ranked, but after k: the run ordered badly) or *never* retrieved.
    Gains are the conventions' gains. Under averaged ties a document in a tied block that straddles the
    cutoff counts as found with the share of the block's positions that lie within k (its expected
    share over all orderings of the block), so these are expectations, like the measures.
    """

    run: str
    k: int
    conventions: Conventions
    per_query: Any  # polars DataFrame
    totals: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "k": self.k,
            "conventions": self.conventions.to_dict(),
            "totals": self.totals,
        }


def missing_gain(qrels: Qrels, run: Run, k: int, conventions: Conventions | None = None) -> MissingGain:
    """Ordered badly versus never retrieved, for every scored query of ``run`` (:class:`MissingGain`)."""
    import polars as pl

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError("the cutoff k must be a positive integer", got=k, fix="pass k=10")
    conv = conventions or DEFAULT
    queries = select_queries(qrels, run, conv)
    enc = encode(qrels, run, conv, queries)
    ranked = enc.ranking.with_row_index("row")
    q_of_row = np.repeat(np.arange(len(queries.query_ids)), np.diff(enc.offsets))
    ranked = ranked.with_columns(pl.Series("start", enc.offsets[q_of_row], dtype=pl.Int64))
    blocks = ranked.group_by("block").agg(
        pl.col("row").min().alias("block_first"), pl.len().alias("block_size")
    )
    ranked = ranked.join(blocks, on="block").with_columns(
        (pl.col("block_first") - pl.col("start") + 1).alias("block_rank")
    )
    inside = (pl.lit(k) - pl.col("block_rank") + 1).clip(0, pl.col("block_size")) / pl.col("block_size")
    ranked = ranked.select("query_id", "doc_id", inside.cast(pl.Float64).alias("p_in"))
    judged = resolve_negative(qrels, conv).filter(pl.col("grade") >= 1)
    judged = judged.filter(pl.col("query_id").is_in(list(queries.query_ids)))
    grades = judged.get_column("grade").unique().to_list()
    gain_of = {g: float(conv.gain_of(g)) for g in grades}
    rel = judged.select(
        "query_id", "doc_id", pl.col("grade").replace_strict(gain_of, return_dtype=pl.Float64).alias("gain")
    ).join(ranked, on=["query_id", "doc_id"], how="left")
    retrieved = pl.col("p_in").is_not_null()
    p_in = pl.col("p_in").fill_null(0.0)
    per_query = (
        rel.group_by("query_id")
        .agg(
            pl.len().alias("relevant"),
            pl.col("gain").sum().alias("gain"),
            (pl.col("gain") * p_in).sum().alias("gain_found"),
            (pl.col("gain") * (1.0 - p_in)).filter(retrieved).sum().alias("gain_below"),
            pl.col("gain").filter(~retrieved).sum().alias("gain_never"),
            p_in.sum().alias("found"),
            (1.0 - p_in).filter(retrieved).sum().alias("below"),
            (~retrieved).sum().cast(pl.Float64).alias("never"),
        )
        .sort("query_id")
    )
    cols = ["relevant", "gain", "gain_found", "gain_below", "gain_never", "found", "below", "never"]
    totals = {c: float(per_query.get_column(c).sum()) for c in cols}
    totals["queries"] = len(queries.query_ids)
    return MissingGain(run.name, k, conv, per_query, totals)


# -- the conventions sweep: the same run under every single-axis change and every profile ----------------


_EPS = 1e-12


@dataclass(frozen=True)
class Variant:
    """One run scored under one set of conventions, compared with the same run under the base."""

    label: str  # "default", "trec_eval", "gain=linear", ...
    kind: str  # "default", "profile" or "axis"
    conventions: Conventions
    values: dict[str, float]
    mean: float | None  # None when the conventions refuse the input
    diff: float | None  # mean minus the base's mean
    direction: str  # "up", "down", "none" (or "refused")
    moved: int  # queries whose value (or whether they have one) differs from the base
    perfect: int  # queries scoring exactly 1
    optimistic: tuple[str, ...]
    refused: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "conventions": self.conventions.to_dict(),
            "mean": self.mean,
            "diff": self.diff,
            "direction": self.direction,
            "queries_moved": self.moved,
            "queries_scored": sum(1 for v in self.values.values() if v == v),
            "queries_at_1": self.perfect,
            "optimistic": list(self.optimistic),
            "refused": self.refused,
        }


def single_axis_changes(base: Conventions) -> list[tuple[str, Conventions]]:
    """Every convention that differs from ``base`` on exactly one axis (gain maps and discount bases other
    than ln and log10 left out: they are open-ended; ``printed_decimals`` and ``summation`` too: they
    reproduce a tool's printing and adding, and move a mean by its last digits, not by a choice of
    method)."""
    from ..measures.conventions import CHOICES, GAIN_NAMES

    out = []
    for gain in GAIN_NAMES:
        if gain != base.gain:
            out.append((f"gain={gain}", base.with_(gain=gain, profile=None)))
    for discount in ("ln", "log10"):
        if base.axes()["discount"] != discount:
            out.append((f"discount={discount}", base.with_(discount=discount, profile=None)))
    for axis, choices in CHOICES.items():
        if axis == "summation":
            continue
        for value in choices:
            if getattr(base, axis) != value:
                out.append((f"{axis}={value}", base.with_(**{axis: value}, profile=None)))
    return out


def score(qrels: Any, run: Any, measure: Any, conv: Conventions) -> tuple[dict[str, float], float]:
    """Per-query values of one measure and their mean under ``conv`` (the ``mean`` axis applied)."""
    from .core import evaluate

    results = evaluate(qrels, run, [measure], conv)
    return results.values(measure), results.mean(measure)


def _moved(a: dict[str, float], b: dict[str, float]) -> list[str]:
    out = []
    for q in sorted(set(a) | set(b)):
        x, y = a.get(q, float("nan")), b.get(q, float("nan"))
        if (x != x) != (y != y) or (x == x and y == y and abs(x - y) > _EPS):
            out.append(q)
    return out


def sweep(
    qrels: Any,
    run: Any,
    measure: Any = "nDCG@10",
    base: Conventions | None = None,
    profiles: dict[str, Profile] | None = None,
) -> list[Variant]:
    """The same run under ``base`` (the default conventions), every profile and every single-axis change
    from ``base``: means, the difference from the base, its direction, and how many queries moved."""
    from ..errors import QrelkitError
    from ..measures.grammar import parse

    base = base or Conventions()
    m = parse(measure)
    base_values, base_mean = score(qrels, run, m, base)
    rows: list[tuple[str, str, Conventions, Profile | None]] = [("default", "default", base, None)]
    rows += [(p.name, "profile", p.conventions, p) for p in (profiles or PROFILES).values()]
    rows += [(label, "axis", conv, None) for label, conv in single_axis_changes(base)]
    out = []
    for label, kind, conv, profile in rows:
        try:
            if profile is not None:
                profile.check(qrels, run)
            values, mean = score(qrels, run, m, conv)
        except QrelkitError as exc:
            out.append(Variant(label, kind, conv, {}, None, None, "refused", 0, 0, (), exc.problem))
            continue
        diff = mean - base_mean
        direction = "up" if diff > _EPS else "down" if diff < -_EPS else "none"
        perfect = sum(1 for v in values.values() if abs(v - 1.0) <= _EPS)
        optimistic = tuple(optimistic_axes(conv))
        moved = len(_moved(base_values, values))
        out.append(Variant(label, kind, conv, values, mean, diff, direction, moved, perfect, optimistic))
    return out


@dataclass(frozen=True)
class QueryDifference:
    query_id: str
    a: float | None
    b: float | None
    axes: tuple[str, ...]  # the differing axes that alone move this query; empty: only their combination

    def to_dict(self) -> dict[str, Any]:
        diff = None if self.a is None or self.b is None else self.b - self.a
        return {"query_id": self.query_id, "a": self.a, "b": self.b, "diff": diff, "axes": list(self.axes)}


@dataclass(frozen=True)
class Attribution:
    a: Conventions
    b: Conventions
    axes: tuple[tuple[str, str, str], ...]  # (axis, value under a, value under b)
    mean_a: float
    mean_b: float
    mean_effects: dict[str, float]  # axis -> change of a's mean when only that axis takes b's value
    queries: tuple[QueryDifference, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "differing_axes": [{"axis": x, "a": va, "b": vb} for x, va, vb in self.axes],
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_effects": self.mean_effects,
            "queries": [q.to_dict() for q in self.queries],
        }


def attribute_profiles(
    qrels: Any, run: Any, measure: Any, names: tuple[str, str], base: Conventions = DEFAULT
) -> Attribution:
    """:func:`attribute` between two named profiles (``"default"`` stands for ``base``), each profile's
    refusals applied first, as everywhere else a profile's numbers are given (``qrelkit conventions
    --diff A B``)."""
    from ..measures.profiles import get_profile

    for name in names:
        if name != "default":
            get_profile(name).check(qrels, [run])
    a, b = (base if name == "default" else get_profile(name).conventions for name in names)
    return attribute(qrels, run, measure, a, b)


def attribute(qrels: Any, run: Any, measure: Any, a: Conventions, b: Conventions) -> Attribution:
    """Which queries differ between conventions ``a`` and ``b``, and which axis explains each: ``a`` is
    recomputed with one differing axis at a time set to ``b``'s value, and a query is attributed to every
    axis that alone moves it."""
    from ..measures.grammar import parse

    m = parse(measure)
    values_a, mean_a = score(qrels, run, m, a)
    values_b, mean_b = score(qrels, run, m, b)
    axes = tuple(a.differences(b))
    moved_by: dict[str, set[str]] = {}
    effects: dict[str, float] = {}
    for axis, _, value in axes:
        values_c, mean_c = score(qrels, run, m, a.with_(**{axis: value}))
        moved_by[axis] = set(_moved(values_a, values_c))
        effects[axis] = mean_c - mean_a

    def get(values: dict[str, float], q: str) -> float | None:
        v = values.get(q)
        return None if v is None or v != v else v

    queries = tuple(
        QueryDifference(
            q, get(values_a, q), get(values_b, q), tuple(x for x, _, _ in axes if q in moved_by[x])
        )
        for q in _moved(values_a, values_b)
    )
    return Attribution(a, b, axes, mean_a, mean_b, effects, queries)
