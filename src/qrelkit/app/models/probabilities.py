"""A model labeller's grade probabilities, as recorded with its grades (``model_grade_probabilities``), and
their side file beside its exported qrels (:mod:`qrelkit.formats.probabilities`).

A grade carries probabilities when the endpoint gave token log-probabilities (``judge model add --logprobs
N``) or the program printed them (docs/model-labellers.md, "Grade probabilities"). The side file holds the
labeller's current grades' probabilities (the same events as :func:`qrelkit.app.grades.labeller_grades`),
one line a pair that has them; a pair graded without them is absent, and the export says how many.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ..phases import phase_of, rubric_by_hash

__all__ = ["labeller_probabilities", "labeller_side_file", "side_file"]


def labeller_probabilities(
    conn: sqlite3.Connection, name: str, *, rubric_hash: str | None = None
) -> dict[tuple[str, str], dict[int, float]]:
    """``{(query_id, doc_id): {grade: probability}}`` of the labeller's current, non-empty grades under one
    rubric version (default: the current one) that carry probabilities."""
    rows = conn.execute(
        "SELECT p.query_id, p.doc_id, g.grade, g.probability FROM grade_events e "
        "JOIN (SELECT MAX(event_id) AS event_id FROM grade_events WHERE rubric_hash = :rubric "
        "GROUP BY user_id, pair_id) AS last USING (event_id) JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) JOIN model_grade_probabilities g ON g.event_id = e.event_id "
        "WHERE u.name = :name AND e.grade IS NOT NULL ORDER BY e.event_id, g.grade",
        {"name": name, "rubric": rubric_hash or phase_of(conn).rubric_hash},
    )
    out: dict[tuple[str, str], dict[int, float]] = {}
    for q, d, grade, p in rows:
        out.setdefault((q, d), {})[int(grade)] = float(p)
    return out


def side_file(
    probabilities: dict[tuple[str, str], dict[int, float]], scale: Sequence[int], qrels_name: str
) -> tuple[str, str, dict[str, Any]] | None:
    """``(file name, text, manifest entry)`` of the side file beside the qrels named ``qrels_name``, or
    ``None`` when no grade carries probabilities or the scale has a grade below 0 (a side file holds grades
    0..G; the manifest entry says so)."""
    import hashlib

    from qrelkit.formats.probabilities import probabilities_path, probabilities_text

    if not probabilities or min(scale) < 0:
        return None
    top = max(scale)
    rows = {key: [found.get(g, 0.0) for g in range(top + 1)] for key, found in probabilities.items()}
    text = probabilities_text(rows, top)
    name = probabilities_path(qrels_name).name
    entry = {"path": name, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "pairs": len(rows),
             "grades": f"0..{top}"}  # fmt: skip
    return name, text, entry


def labeller_side_file(
    conn: sqlite3.Connection, name: str, qrels_name: str, *, rubric_hash: str | None = None
) -> tuple[str, str, dict[str, Any]] | None:
    """:func:`side_file` of the labeller's grades under one rubric version (default: the current one)."""
    version = rubric_hash or phase_of(conn).rubric_hash
    found = labeller_probabilities(conn, name, rubric_hash=version)
    return side_file(found, rubric_by_hash(conn, version).scale, qrels_name) if found else None
