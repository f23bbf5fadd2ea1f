"""Judgments and runs as validated, columnar values.

A :class:`Qrels` holds one row per judged (query, document) pair; a :class:`Run` holds one row per returned
(query, document) pair with its score. Both wrap a polars ``DataFrame`` whose schema is fixed and checked on
construction, and both carry where they came from and a SHA-256 fingerprint, so that every number computed
from them can name its inputs.

Reading files lives in :mod:`qrelkit.formats`; this module never parses text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl

from .errors import ValidationError
from .fingerprint import Fingerprint

__all__ = ["QRELS_SCHEMA", "RUN_SCHEMA", "Fingerprint", "Qrels", "Run", "canonical_fingerprint"]

QRELS_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64, "line": pl.Int64}
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


class _Rows:
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
    convention (``Conventions.negative``), applied when evaluating, never when reading.
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
        from .formats import qrels_from_frame

        rows = [(str(q), str(d), g) for q, docs in judgments.items() for d, g in docs.items()]
        frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "grade"], orient="row")
        return qrels_from_frame(frame, name=name, source="dict")


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
        from .formats import run_from_frame

        rows = [(str(q), str(d), float(s)) for q, docs in scores.items() for d, s in docs.items()]
        frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
        return run_from_frame(frame, name=name, source="dict")


def stretch_starts(ids: pl.Series) -> np.ndarray:
    """The rows where a stretch of equal values begins (a query's rows in a file grouped by query)."""
    return np.flatnonzero((ids != ids.shift(1)).fill_null(True).to_numpy())


def check_run_names(names: Sequence[str], sources: Sequence[str | None]) -> None:
    """The one run-naming rule: every run has its own name (its tag, else its file name), or it is an error.

    ``eval``, ``compare``, ``pool``, ``judge init`` and the Python API all call this, so a name never
    changes silently between them (a renamed duplicate would print one thing and record another).
    """
    first: dict[str, str | None] = {}
    for name, source in zip(names, sources, strict=True):
        if name in first:
            raise ValidationError(
                f"two runs are both named {name!r}",
                source=source or None,
                got=f"{first[name] or '?'} and {source or '?'}",
                expected="one name per run (the run's tag, else its file name)",
                fix="give each run its own tag (the sixth column), or in Python pass name= when reading",
            )
        first[name] = source
