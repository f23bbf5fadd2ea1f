"""A judging project's calibration grades as two Qrels: the labeller-noise floor's input from a project
(``qrelkit compare --noise-floor project.db``, ``qrelkit report --noise-floor project.db``).

Two labellers named, the two labellers with calibration grades, or, with more, every pair of labellers who
share calibration queries (:func:`calibration_qrels` says how the two sides are made, and records which
labellers judged which queries in the Qrels' ``meta["labeller_pairs"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qrelkit.errors import ValidationError

from .store import Store

__all__ = ["calibration_qrels"]


def calibration_qrels(db: str | Path, names: Sequence[str] | None = None) -> tuple[Any, Any]:
    """Two labellers' grades of a judging project's calibration pairs, as Qrels named ``{db}:{name}``
    (sorted by query and document): the two ``names``, the two labellers with calibration grades, or,
    with more than two, every pair of labellers who share calibration queries.

    Every pair: each calibration query is judged by the labellers its plan gave it (two by default); its
    grades go to the first side from the first of them by name and to the second side from the second
    (``alice`` on one side, ``bob+carol`` on the other when alice shares q1 with bob and q2 with carol).
    A query with more than two labellers gives the first two by name. Both Qrels carry ``meta
    ["labeller_pairs"]``: each pair of labellers, its queries, and who was left out where
    (:func:`qrelkit.compare.noise.labeller_pairs_note` says it in one line).

    Each labeller's current grades under the project's current rubric version count, on the pairs marked
    calibration; the project file is opened read-only. An error names the labellers with calibration
    grades when there are fewer than two (or ``names`` are not two distinct ones of them)."""
    from dataclasses import replace
    from functools import partial

    from qrelkit.data.values import Qrels

    sql = (
        "SELECT DISTINCT u.name FROM current_grades c JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) WHERE p.calibration = 1 AND c.grade IS NOT NULL ORDER BY u.name"
    )
    from .grades import labeller_grades

    with Store(db, read_only=True) as store:
        graded = [row[0] for row in store.read(lambda conn: conn.execute(sql).fetchall())]
        chosen = list(names) if names else graded
        if (
            names and (len(chosen) != 2 or len(set(chosen)) != 2 or any(n not in graded for n in chosen))
        ) or (len(graded) < 2):
            raise ValidationError(
                f"the project has calibration grades from {len(graded)} labeller(s) "
                f"({', '.join(graded) or 'none'}); cannot pick two",
                source=str(db),
                got=",".join(names) if names else None,
                fix="name two of them with --labellers A,B",
            )
        rows = store.read(
            lambda c: c.execute("SELECT query_id, doc_id FROM pairs WHERE calibration = 1").fetchall()
        )
        calibration = {(q, d) for q, d in rows}
        grades: dict[str, dict[tuple[str, str], int]] = {}
        for name in chosen:
            given: dict[tuple[str, str], int] = store.read(partial(labeller_grades, name=name))
            grades[name] = {k: g for k, g in given.items() if k in calibration}
    if len(chosen) == 2:
        sides = [grades[chosen[0]], grades[chosen[1]]]
        pairs = [
            {"labellers": chosen, "queries": sorted({q for q, _ in sides[0]} & {q for q, _ in sides[1]})}
        ]
        labels = chosen
        left_out: dict[str, list[str]] = {}
    else:
        sides, pairs, labels, left_out = _every_pair(grades)
    meta = {"labeller_pairs": pairs, "left_out": left_out}
    first, second = (
        replace(Qrels.from_grades(g, name=f"{db}:{n}"), meta=meta) for n, g in zip(labels, sides, strict=True)
    )
    return first, second


def _every_pair(grades: dict[str, dict[tuple[str, str], int]]) -> tuple[list, list, list, dict]:
    """Two sides over every calibration query judged by two or more labellers (:func:`calibration_qrels`)."""
    by_query: dict[str, list[str]] = {}
    for name in sorted(grades):
        for q in sorted({q for q, _ in grades[name]}):
            by_query.setdefault(q, []).append(name)
    sides: list[dict[tuple[str, str], int]] = [{}, {}]
    names: list[set[str]] = [set(), set()]
    pairs: dict[tuple[str, str], list[str]] = {}
    left_out: dict[str, list[str]] = {}
    for q, who in sorted(by_query.items()):
        if len(who) < 2:
            continue
        x, y = who[:2]
        if len(who) > 2:
            left_out[q] = who[2:]
        for side, name in enumerate((x, y)):
            names[side].add(name)
            sides[side].update({k: g for k, g in grades[name].items() if k[0] == q})
        pairs.setdefault((x, y), []).append(q)
    listed = [{"labellers": list(k), "queries": v} for k, v in sorted(pairs.items())]
    return sides, listed, ["+".join(sorted(n)) for n in names], left_out
