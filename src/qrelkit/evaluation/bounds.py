"""How far the missing judgments could move each mean: the judgment bounds of a run.

A run retrieves documents nobody judged. Each measure is computed twice for each run, by
:func:`qrelkit.evaluation.core.evaluate` itself (the same kernels, nothing new computed here):

* **as 0**: the measure with every unjudged document worth nothing (``unjudged = "zero"`` set on the
  measure itself, so a measure written ``nDCG(unjudged=drop)@10`` is bounded as 0 too, not as dropped);
* **as the top grade**: the judgments with every unjudged document the run retrieves *within the measure's
  cutoff* added at the highest grade (the measure again with ``unjudged = "zero"``). They are added to the
  judgments, not only to the ranking, so the
  number of relevant documents (R@k's and AP's denominator, R-precision's R) and nDCG's ideal ordering
  count them too: the numbers are what the measure would give had those documents been judged top grade.

The rules, in one place:

* the **highest grade** is the rubric's (its scale's largest grade, when the judgments were read with a
  rubric) or else the largest grade in the judgments;
* **unjudged** means absent from the judgments for that query: a document judged with a negative grade was
  judged and is never raised; only queries the judgments hold are touched (a run's queries without
  judgments are not scored either way);
* **within the cutoff** follows the measure's tie convention: under one that orders a tied block by
  document id or file order (``docid_desc``, ``docid_asc``, ``file_order``: trec_eval's and the other
  tools' profiles) it is the first k documents of the ranking the engine makes (score descending, the
  scores rounded to float32 under ``precision = "single"``, then the tie key,
  :data:`qrelkit.engine.encoding.encoded.TIE_KEYS`), since a document below them stays below them when raised; under
  ``average``, ``optimistic`` and ``pessimistic`` it is the documents fewer than k others of the query beat
  by score, the tied block at the cutoff included, since any of its documents can be ranked within k
  (averaged ties) or the block's order depends on the grades being raised: the same cut as the depth an
  evaluation reads (:func:`qrelkit.measures.grammar.required_depth`). For a measure without a cutoff, or
  one that reads past it (R-precision, FallOut), every retrieved document; under
  ``nonpositive = "not_retrieved"`` documents scored 0 or less are not retrieved and are not raised;
* **Judged@k** beside each measure is the share of the documents the run returns within the measure's
  cutoff that are judged (``Judged(cutoff_denominator=returned)@10`` for nDCG@10, under the conventions
  given with ``unjudged = "zero"``: a run returning 20 documents is judged 1.0 at 100 when all 20 are),
  averaged over the judged queries the run returns (``missing_queries = "skip"``: a query it lacks returns
  nothing to judge, where the mean beside it may score that query 0); for a measure without a cutoff,
  the share of every returned document (``@D``, D the run's deepest query);
* Judged@k itself is not bounded (as the top grade every document within k is judged).

The two numbers are named for what they do, ``zero`` and ``top``; ``low`` and ``high`` are their smaller
and larger. For most measures ``zero <= top``; nDCG can be the exception: a perfect ranking followed by an
unjudged document gains less DCG from it than its ideal gains, so the top grade can lower the value. These
are bounds of each run's mean, not of a difference between runs (each run's unjudged documents are its
own), and not a confidence interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..formats.trec.small import SMALL_FILE_BYTES
from ..measures.conventions import DEFAULT, MEASURE_AXES, Conventions
from ..measures.grammar import Measure, parse, parse_measures

if TYPE_CHECKING:
    from ..data.values import Qrels, Run

__all__ = [
    "AUTO_BYTES",
    "CONVENTION",
    "Bounds",
    "MeasureBounds",
    "bounds_by_default",
    "bounds_files",
    "judgment_bounds",
    "top_grade_of",
]

CONVENTION = (
    "zero: the measure with each run's unjudged documents counted as 0; top: the judgments with every "
    "unjudged document the run retrieves within the measure's cutoff (its first k under ties ordered by "
    "document id or file order; the tied block at the cutoff included under averaged or grade-ordered "
    "ties; every retrieved document for a measure without a cutoff) added at the highest grade, so R "
    "and the ideal ordering count them too; low and high: the smaller and larger of the two. Bounds of "
    "each run's mean, not of a difference, and not a confidence interval"
)

#: ``--bounds`` is on by default for the table when RUNS add up to at most this many bytes (the small
#: path's bound on one file): the bounds read each run again and evaluate it once as 0 and once per distinct cutoff.
AUTO_BYTES = SMALL_FILE_BYTES


@dataclass(frozen=True)
class MeasureBounds:
    """One run's bounds on one measure's mean."""

    measure: str
    zero: float  # the mean with unjudged documents counted as 0
    top: float  # the mean with unjudged documents within the cutoff judged at the highest grade
    judged: float  # the mean of judged_measure: how much of what the measure reads is judged
    judged_measure: str
    unjudged: int  # (query, document) pairs added at the highest grade
    k: int | None = None  # the cutoff they were raised within; None: every retrieved document

    @property
    def low(self) -> float:
        return _nan_min(self.zero, self.top)

    @property
    def high(self) -> float:
        return _nan_max(self.zero, self.top)

    def to_dict(self) -> dict[str, Any]:
        from .results import _json_float

        return {
            "zero": _json_float(self.zero),
            "top": _json_float(self.top),
            "low": _json_float(self.low),
            "high": _json_float(self.high),
            "judged": _json_float(self.judged),
            "judged_measure": self.judged_measure,
            "unjudged_raised": self.unjudged,
            "raised_within": self.k if self.k is not None else "every retrieved document",
        }


@dataclass(frozen=True)
class Bounds:
    """Every run's bounds on every measure but Judged: ``runs[run][measure]``."""

    top_grade: int
    top_grade_from: str  # "rubric" or "qrels"
    runs: dict[str, dict[str, MeasureBounds]]

    def get(self, run: str, measure: str | Measure) -> MeasureBounds | None:
        """One run's bounds on one measure (named as the grammar reads it), or None (Judged, or absent)."""
        return self.runs.get(run, {}).get(str(parse(measure)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "convention": CONVENTION,
            "top_grade": self.top_grade,
            "top_grade_from": self.top_grade_from,
            "runs": {
                run: {m: b.to_dict() for m, b in measures.items()} for run, measures in self.runs.items()
            },
        }


def _nan_min(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _nan_max(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def top_grade_of(qrels: Qrels) -> tuple[int, str]:
    """The highest grade and where it came from: the rubric's scale when the judgments carry one, else the
    largest grade in the judgments (0 for judgments with no rows)."""
    if qrels.scale:
        return int(max(qrels.scale)), "rubric"
    grades = qrels.frame.get_column("grade")
    return (int(grades.max()) if grades.len() else 0), "qrels"  # type: ignore[arg-type]  # an Int64 column's max is an int


def _reach(measure: Measure, conv: Conventions) -> tuple[int | None, bool, bool, str]:
    """(the cutoff the unjudged documents are raised within, or None for every retrieved one; single
    precision; nonpositive scores not retrieved; the tie convention): the measures sharing it share one
    augmented judgment."""
    mconv = measure.conventions(conv)
    k = None if measure.k is None or measure.info.past_cutoff else measure.k
    return k, mconv.precision == "single", mconv.nonpositive == "not_retrieved", mconv.ties


def as_zero(measure: Measure, conv: Conventions) -> Measure:
    """``measure`` with its unjudged documents counted as 0 whatever it or the conventions say: its own
    ``unjudged`` parameter set to ``zero`` (a measure's own parameter overrides the conventions')."""
    if measure.conventions(conv).unjudged == "zero":
        return measure
    given = dict(measure.overrides) | {"unjudged": "zero"}
    ordered = tuple((axis, given[axis]) for axis in MEASURE_AXES if axis in given)
    return replace(measure, overrides=ordered)


def unjudged_within(
    qrels: Qrels,
    run: Run,
    k: int | None,
    single: bool = False,
    positive_only: bool = False,
    ties: str = "average",
) -> Any:
    """The (query_id, doc_id) of the documents ``run`` retrieves within ``k`` (module docstring) for a query
    the judgments hold, that the judgments do not hold: a polars frame, sorted. Under a tie convention that
    orders a tied block by document id or file order, within ``k`` is the first ``k`` of the ranking it
    makes (:data:`qrelkit.engine.encoding.encoded.TIE_KEYS`); under ``average``, ``optimistic`` and ``pessimistic``
    it is every document fewer than ``k`` others beat by score, the tied block at the cutoff whole."""
    import polars as pl

    from ..engine.encoding.encoded import TIE_KEYS

    judged_queries = qrels.frame.select("query_id").unique()
    rows = run.frame.select("query_id", "doc_id", "score", "line").join(
        judged_queries, on="query_id", how="semi"
    )
    if positive_only:
        rows = rows.filter(pl.col("score") > 0)
    if k is not None:
        by = pl.col("score")
        if single:
            by = by.cast(pl.Float32).cast(pl.Float64)
        tie = TIE_KEYS[ties]
        if ties in ("average", "optimistic", "pessimistic"):
            rows = rows.filter(by.rank("min", descending=True).over("query_id") <= k)
        else:  # the ranking the engine makes: score descending, the tie key, then file order
            keys: list[Any] = ["query_id", by.alias("_by")]
            descending = [False, True]
            if tie is not None:
                keys.append(tie[0])
                descending.append(tie[1])
            keys.append("line")
            descending.append(False)
            rows = rows.sort(keys, descending=descending).filter(pl.int_range(pl.len()).over("query_id") < k)
    judged = qrels.frame.select("query_id", "doc_id")
    return (
        rows.join(judged, on=["query_id", "doc_id"], how="anti")
        .select("query_id", "doc_id")
        .sort("query_id", "doc_id")
    )


def augmented(qrels: Qrels, pairs: Any, grade: int) -> Qrels:
    """``qrels`` with ``pairs`` (query_id, doc_id) added at ``grade`` (no source line): the judgments the
    upper bound is computed against."""
    import polars as pl

    from ..data.values import QRELS_SCHEMA, Qrels

    extra = pairs.with_columns(
        pl.lit(grade, dtype=pl.Int64).alias("grade"), pl.lit(None, dtype=pl.Int64).alias("line")
    )
    frame = pl.concat([qrels.frame.select(list(QRELS_SCHEMA)), extra.select(list(QRELS_SCHEMA))])
    return Qrels(frame, qrels.fingerprint, qrels.name, qrels.scale, qrels.rubric_hash, qrels.meta)


def _judged_measure(k: int | None, run: Run) -> Measure:
    """Judged@k dividing by the documents returned within k (all of them without a cutoff)."""
    if k is not None:
        return parse(f"Judged(cutoff_denominator=returned)@{k}")
    counts = run.frame.group_by("query_id").len().get_column("len")
    deepest = int(counts.max()) if counts.len() else 1  # type: ignore[arg-type]  # a len column's max is an int
    return parse(f"Judged(cutoff_denominator=returned)@{max(deepest, 1)}")


def judgment_bounds(
    qrels: Qrels,
    runs: Run | Sequence[Run],
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    top_grade: int | None = None,
) -> Bounds:
    """Each run's bounds on each measure's mean (the module docstring gives every rule). ``measures`` and
    ``conventions`` default as :func:`qrelkit.evaluation.core.evaluate`'s; ``top_grade`` defaults to
    :func:`top_grade_of`."""
    from ..data.values import Run
    from .core import evaluate

    conv = conventions or DEFAULT
    run_list = [runs] if isinstance(runs, Run) else list(runs)
    bounded = [m for m in parse_measures(measures) if m.name != "Judged"]
    grade, source = (top_grade, "given") if top_grade is not None else top_grade_of(qrels)
    zero_conv = conv.with_(unjudged="zero")
    # each measure as 0 under its own name: its own unjudged=drop would win over the conventions'
    zero_of = {m: as_zero(m, zero_conv) for m in bounded}
    returned_conv = zero_conv.with_(missing_queries="skip")
    out: dict[str, dict[str, MeasureBounds]] = {}
    for run in run_list:
        out[run.name] = {}
        if not bounded:
            continue
        groups: dict[tuple[int | None, bool, bool, str], list[Measure]] = {}
        for m in bounded:
            groups.setdefault(_reach(m, conv), []).append(m)
        judged_of = {key: as_zero(_judged_measure(key[0], run), zero_conv) for key in groups}
        # one evaluation as 0, one of every Judged@k (unjudged=zero is how they count what is judged), one
        # per cutoff with the unjudged documents within it raised
        low = evaluate(qrels, run, list(dict.fromkeys(zero_of.values())), zero_conv)
        # what is judged, over the queries the run returns (one it lacks returns nothing to judge)
        shares = evaluate(qrels, run, list(dict.fromkeys(judged_of.values())), returned_conv)
        for key, members in groups.items():
            pairs = unjudged_within(qrels, run, *key)
            forced = [zero_of[m] for m in members]
            high = evaluate(augmented(qrels, pairs, grade), run, forced, zero_conv) if pairs.height else low
            judged = shares.mean(judged_of[key], run.name)
            for m in members:
                out[run.name][str(m)] = MeasureBounds(
                    str(m),
                    low.mean(zero_of[m], run.name),
                    high.mean(zero_of[m], run.name),
                    judged,
                    str(judged_of[key]),
                    pairs.height,
                    key[0],
                )
        out[run.name] = {str(m): out[run.name][str(m)] for m in bounded}  # the measures' order
    return Bounds(grade, source, out)


def bounds_by_default(run_paths: Sequence[str | Path]) -> bool:
    """Whether a command computes the bounds when neither ``--bounds`` nor ``--no-bounds`` is given: when
    its runs add up to at most :data:`AUTO_BYTES` (regular files only; a table name or folder never)."""
    total = 0
    for path in run_paths:
        p = Path(path)
        if not p.is_file():
            return False
        total += p.stat().st_size
    return total <= AUTO_BYTES


def bounds_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    measures: Iterable[str | Measure] | None,
    conventions: Conventions,
    reader: Any = None,
) -> Bounds:
    """:func:`judgment_bounds` of files, read whole by the plan for every row
    (:func:`qrelkit.evaluation.plan.whole_plan`) (``reader``'s options, a :class:`qrelkit.evaluation.plan.ReaderOptions`, those unset the profile's).
    An evaluation that wants its bounds reads once for both (:func:`qrelkit.evaluation.files.evaluate_bounded`)."""
    from .plan import read_whole, whole_plan

    qrels, runs = read_whole(whole_plan(qrels_path, run_paths, conventions, reader))
    return judgment_bounds(qrels, runs, measures, conventions)
