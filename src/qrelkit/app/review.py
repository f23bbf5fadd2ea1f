"""A labeller's review of their own grades: the list, its filters (query, grade, unsure) and its pages.

Everything here reads through :func:`.grades.own_grades` (the labeller's current grades on the pairs open
now, under the current rubric) and adds what the list shows of those same pairs: the query's text, the
document's title, and the pair's place among the labeller's open pairs. Nothing of another labeller or
of the pool's provenance is read, so the list is as blind as the labelling page.

A filter is a value (:class:`ReviewFilter`) parsed from a URL's query parameters and printed back as the
list's URL (:meth:`ReviewFilter.url`); the labelling page carries that URL so that a grade changed from
the list returns to it, and :func:`parse_return` accepts nothing else as a place to return to.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from qrelkit.errors import ValidationError
from qrelkit.rubric import Rubric

from .grades import own_grades
from .phases import open_condition, phase_of

__all__ = ["PAGE_SIZE", "REVIEW_PATH", "ReviewFilter", "parse_return", "review_page"]

#: The list's URL.
REVIEW_PATH = "/review"
#: Rows per page of the list.
PAGE_SIZE = 100
_KEYS = ("query", "grade", "unsure", "page")
#: The longest query id a filter may name, in bytes (no query id is longer).
MAX_QUERY_ID = 512


@dataclass(frozen=True)
class ReviewFilter:
    """Which of the labeller's grades the list shows: of one query (``query``: its id), one grade
    (``grade``), only unsure (``unsure=True``) or only sure ones (``False``); ``None``: any. ``page`` is
    1-based."""

    query: str | None = None
    grade: int | None = None
    unsure: bool | None = None
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str], rubric: Rubric) -> ReviewFilter:
        """The filter in URL query parameters (an empty value: any). Unknown parameters, a grade off the
        rubric's scale, an ``unsure`` other than 0 or 1 and a page that is not a positive number are
        :class:`~qrelkit.errors.ValidationError`."""
        extra = sorted(set(params) - set(_KEYS))
        if extra:
            raise ValidationError(f"unknown filter {extra[0]!r}", expected="query, grade, unsure or page")
        grade = params.get("grade") or None
        if grade is not None and grade not in {str(g) for g in rubric.scale}:
            raise ValidationError(
                "filter 'grade' is not a grade of the rubric",
                got=grade[:20],
                expected=", ".join(str(g) for g in rubric.scale),
            )
        unsure = params.get("unsure") or None
        if unsure not in (None, "0", "1"):
            raise ValidationError("filter 'unsure' must be 0 or 1", got=unsure[:20])
        page = params.get("page") or "1"
        if not (page.isascii() and page.isdigit() and 0 < len(page) <= 9 and int(page) > 0):
            raise ValidationError("filter 'page' must be a positive number", got=page[:20])
        query = params.get("query") or None
        if query is not None and len(query.encode("utf-8", "replace")) > MAX_QUERY_ID:
            raise ValidationError(f"filter 'query' is longer than a query id ({MAX_QUERY_ID} bytes)",
                                  got=f"{len(query)} characters")  # fmt: skip
        return cls(
            query=query,
            grade=None if grade is None else int(grade),
            unsure=None if unsure is None else unsure == "1",
            page=int(page),
        )

    def params(self, *, page: int | None = None) -> dict[str, str]:
        """The filter as URL query parameters (only those set; page 1 left out)."""
        out: dict[str, str] = {}
        if self.query is not None:
            out["query"] = self.query
        if self.grade is not None:
            out["grade"] = str(self.grade)
        if self.unsure is not None:
            out["unsure"] = "1" if self.unsure else "0"
        page = self.page if page is None else page
        if page != 1:
            out["page"] = str(page)
        return out

    def url(self, *, page: int | None = None) -> str:
        """The list's URL with this filter."""
        params = self.params(page=page)
        return REVIEW_PATH + ("?" + urlencode(params) if params else "")

    def keeps(self, row: Mapping[str, Any]) -> bool:
        return (
            (self.query is None or row["query_id"] == self.query)
            and (self.grade is None or row["grade"] == self.grade)
            and (self.unsure is None or row["unsure"] == self.unsure)
        )


def parse_return(value: str, rubric: Rubric) -> ReviewFilter | None:
    """The list a grade form returns to (its ``return_to`` field: a URL made by :meth:`ReviewFilter.url`);
    ``None`` for an empty value. Anything else is a :class:`~qrelkit.errors.ValidationError`: the form
    never sends the labeller anywhere but their own list."""
    if not value:
        return None
    from urllib.parse import parse_qsl

    parts = urlsplit(value)
    if parts.scheme or parts.netloc or parts.path != REVIEW_PATH or parts.fragment:
        raise ValidationError("form field 'return_to' is not the review list", got=value[:60])
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValidationError("form field 'return_to' repeats a filter", got=value[:60])
    return ReviewFilter.parse(dict(pairs), rubric)


def review_page(conn: sqlite3.Connection, user_id: int, flt: ReviewFilter, rubric: Rubric) -> dict[str, Any]:
    """One page of the labeller's list under ``flt``: the rows (position, index, query id and text, doc
    id and title, grade and its label, unsure, note, when), how many match and in all, the pages, and the
    queries to filter by (the labeller's graded ones, in the order of their list)."""
    grades = own_grades(conn, user_id)
    phase = phase_of(conn)
    positions = [
        r[0]
        for r in conn.execute(
            f"SELECT a.position FROM assignments a WHERE a.user_id = ? AND {open_condition(phase)} "
            "ORDER BY a.position",
            (user_id,),
        )
    ]
    index = {p: i + 1 for i, p in enumerate(positions)}
    query_ids = list(dict.fromkeys(r["query_id"] for r in grades))
    texts = _texts(conn, "SELECT query_id, text FROM queries WHERE query_id IN ({})", query_ids)
    matching = [r for r in grades if flt.keeps(r)]
    pages = max(1, -(-len(matching) // PAGE_SIZE))
    start = (min(flt.page, pages) - 1) * PAGE_SIZE
    shown = matching[start : start + PAGE_SIZE]
    titles = _texts(conn, "SELECT doc_id, title FROM docs WHERE doc_id IN ({})", [r["doc_id"] for r in shown])
    labels = {lv.grade: lv.label for lv in rubric.levels}
    rows = [
        {**r, "index": index.get(r["position"]), "query": texts.get(r["query_id"], ""),
         "title": titles.get(r["doc_id"], ""), "label": labels.get(r["grade"], "")}
        for r in shown
    ]  # fmt: skip
    return {
        "rows": rows,
        "matching": len(matching),
        "graded": len(grades),
        "open": len(positions),
        "page": min(flt.page, pages),
        "pages": pages,
        "first": start + 1 if shown else 0,
        "queries": [{"query_id": q, "text": texts.get(q, "")} for q in query_ids],
    }


def _texts(conn: sqlite3.Connection, sql: str, keys: list[str]) -> dict[str, str]:
    """``{key: text}`` for ``keys``, read in chunks that stay under SQLite's limit on bound values."""
    out: dict[str, str] = {}
    unique = list(dict.fromkeys(keys))
    for i in range(0, len(unique), 500):
        chunk = unique[i : i + 500]
        out.update(conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall())
    return out
