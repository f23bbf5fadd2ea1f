"""Judgments and runs as validated, columnar values.

A :class:`Qrels` holds one row per judged (query, document) pair; a :class:`Run` holds one row per returned
(query, document) pair with its score. Both wrap a polars ``DataFrame`` whose schema is fixed and checked on
construction, and both carry where they came from and a SHA-256 fingerprint, so that every number computed
from them can name its inputs.

Reading files lives in :mod:`qrelkit.formats`; this module never parses text. It owns what a frame of
rows must satisfy, however it was read: the column names and their aliases, ids that are present, scores
that are finite numbers, integer grades, one run tag, the duplicate policy, a rubric's scale. The readers
in :mod:`qrelkit.formats` hand their columns to :func:`finish_run` and :func:`finish_qrels`, and frames
built in memory come through :func:`run_from_frame` and :func:`qrels_from_frame`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import polars as pl

from .._typing import ON_DUPLICATE_CHOICES, OnDuplicate
from ..errors import InputFormatError, ValidationError, did_you_mean
from ..fingerprint import Fingerprint
from ..naming import ID_PATTERN, MAX_ID_BYTES, check_id, check_run_names

__all__ = [
    "COLUMN_ALIASES",
    "DIVERSITY_SCHEMA",
    "QRELS_SCHEMA",
    "RUN_SCHEMA",
    "DiversityQrels",
    "Fingerprint",
    "Qrels",
    "Run",
    "canonical_fingerprint",
    "check_choice",
    "check_id_column",
    "check_run_names",
    "diversity_qrels_from_frame",
    "finish_diversity_qrels",
    "finish_qrels",
    "finish_run",
    "id_column",
    "on_common_queries",
    "qrels_from_frame",
    "rename_columns",
    "run_from_frame",
]

QRELS_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64, "line": pl.Int64}
DIVERSITY_SCHEMA = {
    "query_id": pl.String,
    "subtopic": pl.String,
    "doc_id": pl.String,
    "grade": pl.Int64,
    "line": pl.Int64,
}
RUN_SCHEMA = {
    "query_id": pl.String,
    "doc_id": pl.String,
    "score": pl.Float64,
    "rank": pl.Int64,
    "line": pl.Int64,
}


def canonical_fingerprint(frame: pl.DataFrame, columns: list[str], source: str) -> Fingerprint:
    """Fingerprint in-memory rows: SHA-256 of the rows sorted and written as tab-separated text."""
    rows = frame.select(columns).sort(columns)
    text = rows.write_csv(separator="\t", include_header=True, float_precision=None)
    return Fingerprint(hashlib.sha256(text.encode()).hexdigest(), "canonical-rows", source)


def _check_schema(frame: pl.DataFrame, schema: Mapping[str, pl.DataType], what: str) -> pl.DataFrame:
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise ValidationError(
            f"{what} frame lacks column(s) {', '.join(missing)}",
            got=", ".join(frame.columns),
            expected=", ".join(schema),
            fix="read files with qrelkit.formats, or build frames with these columns",
        )
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])


class _Replace:
    """The one way to rebuild a value with some fields changed."""

    def replace(self, **changes: Any) -> Self:
        """This value with ``changes`` (field name -> value) and every other field as it is: a new value,
        built as :func:`dataclasses.replace` builds it (its frame checked as every frame is)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]  # only dataclasses inherit it


class _Rows(_Replace):
    """What judgments and runs share: rows keyed by (query_id, doc_id) with one value column."""

    frame: pl.DataFrame
    fingerprint: Fingerprint
    name: str
    _value: ClassVar[str]  # the value column: "grade" or "score"
    _noun: ClassVar[str]  # what a row is called in the repr

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{query_id: {doc_id: value}}`` (the pytrec_eval shape)."""
        out: dict[str, dict[str, Any]] = {}
        for q, d, v in self.frame.select("query_id", "doc_id", self._value).iter_rows():
            out.setdefault(q, {})[d] = v
        return out

    @property
    def query_ids(self) -> list[str]:
        return self.frame.get_column("query_id").unique(maintain_order=True).to_list()

    def __len__(self) -> int:
        return self.frame.height

    def __repr__(self) -> str:
        q = self.frame.get_column("query_id").n_unique()
        return (
            f"{type(self).__name__}({self.name!r}: {q} queries, {self.frame.height} {self._noun}, "
            f"sha256 {self.fingerprint.sha256[:12]})"
        )


@dataclass(frozen=True, eq=False, repr=False)
class Qrels(_Rows):
    """Relevance judgments: ``query_id``, ``doc_id``, integer ``grade`` (and the source ``line``, or null).

    Grades are kept exactly as given, negative ones included: what a negative grade means is a
    convention (``Conventions.negative``), applied when evaluating, never when reading. The value is not
    changed in place (its frame neither): its fingerprint, and what ``evaluate`` keeps of it between
    calls (:func:`qrelkit.engine.encoding.encode.judgments_of`), are taken once.
    """

    frame: pl.DataFrame
    fingerprint: Fingerprint
    name: str = "qrels"
    scale: tuple[int, ...] | None = None
    rubric_hash: str | None = None
    meta: Mapping[str, object] = field(default_factory=dict)

    _value: ClassVar[str] = "grade"
    _noun: ClassVar[str] = "judgments"

    def __post_init__(self) -> None:
        object.__setattr__(self, "frame", _check_schema(self.frame, QRELS_SCHEMA, "qrels"))

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, int]], name: str = "qrels") -> Qrels:
        """Build from ``{query_id: {doc_id: grade}}`` (the pytrec_eval shape)."""
        rows = [(str(q), str(d), g) for q, docs in judgments.items() for d, g in docs.items()]
        frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "grade"], orient="row")
        return qrels_from_frame(frame, name=name, source="dict")

    @classmethod
    def from_grades(cls, grades: Mapping[tuple[str, str], int], name: str = "qrels") -> Qrels:
        """Build from ``{(query_id, doc_id): grade}`` (a merge's or a labeller's grades), rows sorted by
        (query_id, doc_id) so the same grades give the same qrels whatever order they came in."""
        nested: dict[str, dict[str, int]] = {}
        for (q, d), g in sorted(grades.items()):
            nested.setdefault(q, {})[d] = int(g)
        return cls.from_dict(nested, name=name)


@dataclass(frozen=True, eq=False, repr=False)
class DiversityQrels(_Replace):
    """Diversity judgments (TREC Web track, ndeval's format ``query_id subtopic doc_id grade``): one row per
    judged (query, subtopic, document), in ``frame`` with the source ``line``.

    Diversity measures (``alpha_nDCG``, ``ERR_IA``) read the subtopics; the query set, the ranking and the
    unjudged and tie conventions read :meth:`projection`, one row per judged (query, document).
    """

    frame: pl.DataFrame
    fingerprint: Fingerprint
    name: str = "qrels"
    meta: Mapping[str, object] = field(default_factory=dict)
    rubric_hash: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "frame", _check_schema(self.frame, DIVERSITY_SCHEMA, "diversity qrels"))

    def projection(self) -> Qrels:
        """One row per judged (query, document), its grade the highest over the document's subtopics (so a
        document is judged when any subtopic judged it); carries this file's fingerprint and provenance."""
        frame = (
            self.frame.group_by("query_id", "doc_id")
            .agg(pl.col("grade").max(), pl.col("line").min())
            .sort("line")
        )
        return Qrels(frame, self.fingerprint, self.name, None, self.rubric_hash, dict(self.meta))

    def __len__(self) -> int:
        return self.frame.height

    def __repr__(self) -> str:
        q = self.frame.get_column("query_id").n_unique()
        return (
            f"DiversityQrels({self.name!r}: {q} queries, {self.frame.height} judgments, "
            f"sha256 {self.fingerprint.sha256[:12]})"
        )


@dataclass(frozen=True, eq=False, repr=False)
class Run(_Rows):
    """A ranked result list per query: ``query_id``, ``doc_id``, ``score``, ``rank`` and file ``line``.

    Rows stay in file order; ``line`` (1-based, or the row number for frames) is that order, which is what
    the ``file_order`` tie convention uses. The ``rank`` column is kept for reference only: like trec_eval,
    qrelkit ranks by score and breaks ties by the tie convention.
    """

    frame: pl.DataFrame
    fingerprint: Fingerprint
    name: str = "run"
    meta: Mapping[str, object] = field(default_factory=dict)

    _value: ClassVar[str] = "score"
    _noun: ClassVar[str] = "rows"

    def __post_init__(self) -> None:
        object.__setattr__(self, "frame", _check_schema(self.frame, RUN_SCHEMA, "run"))

    @classmethod
    def from_dict(cls, scores: Mapping[str, Mapping[str, float]], name: str = "run") -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (the pytrec_eval shape); file order is dict order."""
        rows = [(str(q), str(d), float(s)) for q, docs in scores.items() for d, s in docs.items()]
        frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
        return run_from_frame(frame, name=name, source="dict")


def on_common_queries(
    qrels_a: Qrels, qrels_b: Qrels, *, who: str, expected: str, fix: str
) -> tuple[Qrels, Qrels]:
    """``qrels_a`` and ``qrels_b`` kept to the queries both judge (their rubric hash and meta dropped: the two
    are then compared, not read as one file's judgments); none in common is refused, naming ``who`` (e.g.
    "the two labellers") and the caller's ``expected`` and ``fix``."""
    common = (
        qrels_a.frame.select("query_id")
        .unique()
        .join(qrels_b.frame.select("query_id").unique(), on="query_id")
    )
    if common.height == 0:
        raise ValidationError(
            f"{who} judge no query in common",
            got=f"{qrels_a.name} and {qrels_b.name}",
            expected=expected,
            fix=fix,
        )
    a, b = (
        q.replace(frame=q.frame.join(common, on="query_id", how="semi"), rubric_hash=None, meta={})
        for q in (qrels_a, qrels_b)
    )
    return a, b


def stretch_starts(ids: pl.Series) -> np.ndarray:
    """The rows where a stretch of equal values begins (a query's rows in a file grouped by query)."""
    return np.flatnonzero((ids != ids.shift(1)).fill_null(True).to_numpy())


# ---------------------------------------------------------------------------------------------- validation

#: Column names accepted in tabular inputs, mapped to qrelkit's names. Anything else is ignored.
COLUMN_ALIASES = {
    "query_id": "query_id",
    "qid": "query_id",
    "q_id": "query_id",
    "doc_id": "doc_id",
    "docid": "doc_id",
    "docno": "doc_id",
    "score": "score",
    "grade": "grade",
    "relevance": "grade",
    "rank": "rank",
    "tag": "tag",
    "run": "tag",
}


def check_choice(value: str, choices: Sequence[str], option: str) -> None:
    if value not in choices:
        raise ValidationError(
            f"unknown {option} {value!r}{did_you_mean(value, choices)}",
            expected="one of " + ", ".join(choices),
            fix=f"pass {option}={choices[0]!r} or another listed value",
        )


def _cast_numeric(
    frame: pl.DataFrame, column: str, dtype: pl.DataType, source: str, *, what: str, expected: str, fix: str
) -> pl.DataFrame:
    """Cast a column to ``dtype``; the first value that does not convert is reported with its line."""
    col = frame.get_column(column)
    if col.dtype == pl.String:
        text = col.str.strip_chars()
        converted = text.cast(dtype, strict=False)
        if dtype == pl.Int64:
            # polars accepts "+3" and rejects "3.0": both fine; but reject what would silently truncate.
            pass
        bad = converted.is_null() & col.is_not_null()
    else:
        converted = col.cast(dtype, strict=False) if col.dtype != dtype else col
        bad = converted.is_null() & col.is_not_null()
        if dtype == pl.Int64 and col.dtype.is_float():
            frac = (col.fill_null(0) % 1) != 0
            bad = bad | frac | col.is_nan().fill_null(False)
    null_rows = col.is_null()
    if null_rows.any():
        line = frame.filter(null_rows).item(0, "line")
        raise InputFormatError(f"{what} is missing", source=source, line=line, expected=expected, fix=fix)
    if bad.any():
        row = frame.filter(bad).row(0, named=True)
        got = str(row.get("text") or row[column])
        raise InputFormatError(
            f"{what} {str(row[column]).strip()!r} is not {expected}",
            source=source,
            line=row["line"],
            got=got.strip() if "text" in row else None,
            fix=fix,
        )
    out = frame.with_columns(converted.alias(column))
    if dtype == pl.Float64:
        nonfinite = ~out.get_column(column).is_finite()
        if nonfinite.any():
            row = out.filter(nonfinite).row(0, named=True)
            raise InputFormatError(
                f"{what} is {row[column]!r}, not a finite number",
                source=source,
                line=row["line"],
                got=(row.get("text") or "").strip() or None,
                expected="a finite decimal number such as 12.5 or 1e-3",
                fix="replace NaN/inf scores (an inf or NaN score has no defined rank)",
            )
    return out


def duplicate_mask(frame: pl.DataFrame, keys: tuple[str, ...] = ("query_id", "doc_id")) -> pl.Series | None:
    """Which rows share ``keys`` with another row (query_id, doc_id; diversity judgments add the subtopic),
    or ``None`` when none does: a hash of the keys first, the exact comparison only when two hashes meet."""
    hashed = pl.col("doc_id").hash(1) ^ (pl.col("query_id").hash(2) * 0x9E3779B97F4A7C15)
    if "subtopic" in keys:
        hashed = hashed ^ (pl.col("subtopic").hash(3) * 0x632BE59BD9B4E019)
    if frame.select(hashed.n_unique()).item() == frame.height:
        return None  # all key hashes distinct: no duplicates (collisions only cause the exact check)
    mask = frame.select(pl.struct(*keys).is_duplicated()).to_series()
    return mask if mask.any() else None


def _duplicated_rows(frame: pl.DataFrame, value: str) -> pl.DataFrame:
    """Every copy of a (query, document) pair given twice, recorded (``meta["duplicates"]``) when a
    policy removed duplicates: query_id, doc_id and the score or grade of each copy."""
    mask = duplicate_mask(frame, ("query_id", "doc_id"))
    rows = frame if mask is None else frame.filter(mask)
    return rows.select("query_id", "doc_id", value)


def _dedupe(
    frame: pl.DataFrame,
    value: str,
    policy: str,
    source: str,
    what: str,
    option: str,
    keys: tuple[str, ...] = ("query_id", "doc_id"),
) -> tuple[pl.DataFrame, int]:
    """Apply the duplicate policy to rows sharing ``keys`` (query_id, doc_id; diversity judgments add the
    subtopic); return the frame and rows removed."""
    dup_mask = duplicate_mask(frame, keys)
    if dup_mask is None:
        return frame, 0
    if policy == "error":
        dups = frame.filter(dup_mask).sort("line")
        first = dups.row(0, named=True)
        same = pl.lit(True)
        for key in keys:
            same = same & (pl.col(key) == first[key])
        twin = dups.filter(same).get_column("line")
        n_pairs = dups.select(pl.struct(*keys).n_unique()).item()
        within = f", subtopic {first['subtopic']!r}" if "subtopic" in keys else ""
        raise ValidationError(
            f"document {first['doc_id']!r} appears more than once for query {first['query_id']!r}{within} "
            f"(lines {', '.join(str(x) for x in twin.to_list()[:5])}; {n_pairs} duplicated pair(s) in all)",
            source=source,
            line=twin[1],
            fix=f"remove the duplicates, or choose a policy with {option} first|last|max",
        )
    if policy == "first":
        kept = frame.sort("line").unique(list(keys), keep="first", maintain_order=True)
    elif policy == "last":
        kept = frame.sort("line").unique(list(keys), keep="last", maintain_order=True)
    else:  # max
        kept = (
            frame.sort([value, "line"], descending=[True, False])
            .unique(list(keys), keep="first")
            .sort("line")
        )
    return kept, frame.height - kept.height


def rename_columns(frame: pl.DataFrame, required: tuple[str, ...], source: str) -> pl.DataFrame:
    mapping: dict[str, str] = {}
    for col in frame.columns:
        target = COLUMN_ALIASES.get(col.strip().lower())
        if target is None or col == "line":
            continue
        if target in mapping.values():
            other = next(k for k, v in mapping.items() if v == target)
            raise InputFormatError(
                f"columns {other!r} and {col!r} both name {target}",
                source=source,
                fix=f"keep one of them (qrelkit will not guess which holds the {target})",
            )
        mapping[col] = target
    frame = frame.rename(mapping)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        names = [c for c in frame.columns if c != "line"]
        hints = "".join(did_you_mean(m, names) for m in missing)
        raise InputFormatError(
            f"missing column(s) {', '.join(missing)}{hints}",
            source=source,
            got=", ".join(names),
            expected="columns " + ", ".join(required) + " (aliases: qid, docid, relevance)",
            fix="rename the columns",
        )
    return frame


def id_column(frame: pl.DataFrame, column: str, source: str) -> pl.DataFrame:
    dtype = frame.schema[column]
    if dtype.is_float():
        raise InputFormatError(
            f"{column} column holds floating-point numbers",
            source=source,
            got=str(frame.item(0, column)),
            expected="string or integer ids",
            fix=f"store {column} as text (1.0 and 1 would otherwise be different ids)",
        )
    frame = frame.with_columns(pl.col(column).cast(pl.String))
    empty = frame.get_column(column).is_null() | (frame.get_column(column).str.strip_chars() == "")
    if empty.any():
        line = frame.filter(empty).item(0, "line")
        raise InputFormatError(
            f"{column} is empty", source=source, line=line, fix=f"give every row a {column}"
        )
    check_id_column(frame, column, source)
    return frame


def check_id_column(frame: pl.DataFrame, column: str, source: str | None) -> None:
    """Raise the error of :func:`qrelkit.naming.check_id` for the first id of ``column`` that breaks the
    id rule (whitespace, a control character, more than :data:`~qrelkit.naming.MAX_ID_BYTES` bytes), naming
    its line when the frame has a ``line`` column. One pass of polars expressions over the column."""
    ids = pl.col(column)
    bad = ids.str.contains(ID_PATTERN) | (ids.str.len_bytes() > MAX_ID_BYTES) | (ids.str.len_bytes() == 0)
    found = frame.select(bad.arg_true().first()).item()
    if found is None:
        return
    line = frame.item(found, "line") if "line" in frame.columns else None
    check_id(frame.item(found, column), column, source, line)


def cast_run_numbers(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    """A run's score and rank columns as numbers (a rank column added, empty, when there is none); the
    first value that does not convert is reported with its line."""
    frame = _cast_numeric(
        frame,
        "score",
        pl.Float64,
        source,
        what="score",
        expected="a number",
        fix="the fifth column of a TREC run is the score: check the column order 'query_id Q0 doc_id rank score tag'",
    )
    if "rank" in frame.columns:
        frame = _cast_numeric(
            frame,
            "rank",
            pl.Int64,
            source,
            what="rank",
            expected="an integer",
            fix="the fourth column of a TREC run is an integer rank: check the column order",
        )
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("rank"))
    return frame


def finish_run(
    frame: pl.DataFrame,
    fingerprint: Fingerprint,
    name: str | None,
    source: str,
    on_duplicate: str,
    option: str,
    mixed_tags: bool = False,
) -> Run:
    """A run's frame checked and named (by ``name``, else its tag, else the file's stem). ``mixed_tags``
    (trec_eval's reading): a file of several tags is one run named by the tag of its last line
    (``get_trec_results.c`` line 22: "the run_id field of the last line is kept")."""
    frame = cast_run_numbers(frame, source)
    tags: list[str] = []
    if "tag" in frame.columns:
        tags = frame.get_column("tag").cast(pl.String).unique(maintain_order=True).drop_nulls().to_list()
        if len(tags) > 1 and mixed_tags:
            tags = [str(frame.sort("line").get_column("tag").drop_nulls()[-1])]
        if len(tags) > 1:
            second = frame.filter(pl.col("tag").cast(pl.String) == tags[1]).item(0, "line")
            raise ValidationError(
                f"file mixes run tags {tags[0]!r} and {tags[1]!r}"
                + (f" and {len(tags) - 2} more" if len(tags) > 2 else ""),
                source=source,
                line=second,
                expected="one system's run per file",
                fix="split the file by tag (one file per run)",
            )
    extra = int(frame.get_column("extra").sum()) if "extra" in frame.columns else 0
    given = frame
    frame, removed = _dedupe(frame, "score", on_duplicate, source, "run", option)
    run_name = name or (tags[0] if tags else Path(source).stem)
    meta: dict[str, Any] = {"source": source, "duplicates_removed": removed, "on_duplicate": on_duplicate}
    if removed:
        meta["duplicates"] = _duplicated_rows(given, "score")
    if extra:
        meta["lines_with_trailing_fields_ignored"] = extra
    return Run(frame.select("query_id", "doc_id", "score", "rank", "line"), fingerprint, run_name, meta)


#: A grade written as a negative zero ("-0", "-00"): not a grade (a sign on zero is a typo, or a negative
#: grade that lost its digits); every TREC reader steps aside for it so that this check reports it.
NEGATIVE_ZERO = r"^-0+$"


def _refuse_negative_zero(frame: pl.DataFrame, source: str) -> None:
    grade = frame.get_column("grade")
    if grade.dtype != pl.String:
        return
    found = frame.select(pl.col("grade").str.strip_chars().str.contains(NEGATIVE_ZERO).arg_true().first())
    row = found.item()
    if row is not None:
        raise InputFormatError(
            "grade is a negative zero",
            source=source,
            line=frame.item(row, "line"),
            got=str(frame.item(row, "text") if "text" in frame.columns else grade[row]).strip(),
            expected="an integer grade without a sign on zero",
            fix="write 0, or the negative grade meant",
        )


def check_scale(frame: pl.DataFrame, scale: Sequence[int] | None, source: str) -> None:
    """Refuse the first grade outside a rubric's scale, naming its line (nothing to check without one)."""
    if scale is None:
        return
    allowed = sorted(set(scale))
    outside = ~frame.get_column("grade").is_in(allowed)
    if outside.any():
        row = frame.filter(outside).row(0, named=True)
        raise ValidationError(
            f"grade {row['grade']} is outside the rubric's scale {allowed}",
            source=source,
            line=row["line"],
            got=(row.get("text") or "").strip() or None,
            fix="correct the grade, or use the rubric these judgments were made with",
        )


def finish_qrels(
    frame: pl.DataFrame,
    fingerprint: Fingerprint,
    name: str | None,
    source: str,
    scale: Sequence[int] | None,
    on_duplicate: str,
    option: str,
) -> Qrels:
    _refuse_negative_zero(frame, source)
    frame = _cast_numeric(
        frame,
        "grade",
        pl.Int64,
        source,
        what="grade",
        expected="an integer",
        fix="grades are whole numbers such as 0, 1, 2, 3; use a custom gain map for fractional gains",
    )
    check_scale(frame, scale, source)
    given = frame
    frame, removed = _dedupe(frame, "grade", on_duplicate, source, "qrels", option)
    meta: dict[str, Any] = {"source": source, "duplicates_removed": removed, "on_duplicate": on_duplicate}
    if removed:
        meta["duplicates"] = _duplicated_rows(given, "grade")
    return Qrels(
        frame.select("query_id", "doc_id", "grade", "line"),
        fingerprint,
        name or Path(source).name,
        tuple(sorted(set(scale))) if scale is not None else None,
        None,
        meta,
    )


def finish_diversity_qrels(
    frame: pl.DataFrame,
    fingerprint: Fingerprint,
    name: str | None,
    source: str,
    on_duplicate: str,
    option: str,
    scale: Sequence[int] | None = None,
) -> DiversityQrels:
    """Diversity judgments from string columns (line, query_id, subtopic, doc_id, grade, text): integer
    grades, ids under the id rule (the subtopic too), the duplicate policy over (query, subtopic, document)."""
    check_id_column(frame, "subtopic", source)
    _refuse_negative_zero(frame, source)
    frame = _cast_numeric(
        frame,
        "grade",
        pl.Int64,
        source,
        what="grade",
        expected="an integer",
        fix="grades are whole numbers such as 0, 1, 2, 3 (a subtopic's document is relevant at grade >= rel)",
    )
    check_scale(frame, scale, source)
    keys = ("query_id", "subtopic", "doc_id")
    frame, removed = _dedupe(frame, "grade", on_duplicate, source, "qrels", option, keys)
    meta = {
        "source": source,
        "duplicates_removed": removed,
        "on_duplicate": on_duplicate,
        "kind": "diversity",
    }
    return DiversityQrels(
        frame.select("query_id", "subtopic", "doc_id", "grade", "line"),
        fingerprint,
        name or Path(source).name,
        meta,
    )


def _to_polars(frame: Any, source: str) -> pl.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas absent
        pd = None
    if pd is not None and isinstance(frame, pd.DataFrame):
        return pl.from_pandas(frame.reset_index(drop=True))
    raise ValidationError(
        f"cannot read a {type(frame).__name__} as a table",
        source=source,
        expected="a polars or pandas DataFrame",
        fix="convert it to a DataFrame with columns query_id, doc_id and score (runs) or grade (qrels)",
    )


def _prepare_frame(
    frame: Any, name: str, source: str | None, on_duplicate: str, value: str
) -> tuple[pl.DataFrame, str]:
    """A caller's frame as validated columns (row number as ``line``), and the label errors will use."""
    check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    label = source or f"{type(frame).__module__.split('.')[0]} DataFrame {name!r}"
    df = _to_polars(frame, label)
    df = rename_columns(
        df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64)),
        ("query_id", "doc_id", value),
        label,
    )
    return id_column(id_column(df, "query_id", label), "doc_id", label), label


def run_from_frame(
    frame: Any, *, name: str = "run", source: str | None = None, on_duplicate: OnDuplicate = "error"
) -> Run:
    """A :class:`Run` from a pandas or polars frame with columns query_id, doc_id, score (rank, tag optional).

    Row order is file order (used by the ``file_order`` tie convention). The fingerprint is SHA-256 of the
    sorted rows, so the same content always has the same identity.
    """
    df, label = _prepare_frame(frame, name, source, on_duplicate, "score")
    run = finish_run(df, Fingerprint("", "", label), name, label, on_duplicate, "on_duplicate=")
    fp = canonical_fingerprint(run.frame, ["query_id", "doc_id", "score"], label)
    return run.replace(fingerprint=fp)


def qrels_from_frame(
    frame: Any,
    *,
    name: str = "qrels",
    source: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: OnDuplicate = "error",
) -> Qrels:
    """A :class:`Qrels` from a pandas or polars frame with columns query_id, doc_id, grade."""
    df, label = _prepare_frame(frame, name, source, on_duplicate, "grade")
    qrels = finish_qrels(df, Fingerprint("", "", label), name, label, scale, on_duplicate, "on_duplicate=")
    fp = canonical_fingerprint(qrels.frame, ["query_id", "doc_id", "grade"], label)
    return qrels.replace(fingerprint=fp, name=name)


def diversity_qrels_from_frame(
    frame: Any,
    *,
    name: str = "qrels",
    source: str | None = None,
    on_duplicate: OnDuplicate = "error",
) -> DiversityQrels:
    """A :class:`DiversityQrels` from a pandas or polars frame with columns query_id, subtopic, doc_id,
    grade. The fingerprint is SHA-256 of the sorted rows."""
    df, label = _prepare_frame(frame, name, source, on_duplicate, "grade")
    if "subtopic" not in df.columns:
        raise InputFormatError(
            "missing column subtopic",
            source=label,
            got=", ".join(c for c in df.columns if c != "line"),
            expected="columns query_id, subtopic, doc_id, grade",
            fix="name the column of subtopic ids 'subtopic'",
        )
    df = id_column(df, "subtopic", label)
    dq = finish_diversity_qrels(df, Fingerprint("", "", label), name, label, on_duplicate, "on_duplicate=")
    fp = canonical_fingerprint(dq.frame, ["query_id", "subtopic", "doc_id", "grade"], label)
    return dq.replace(fingerprint=fp, name=name)
