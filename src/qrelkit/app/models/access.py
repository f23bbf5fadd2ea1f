"""Whether a model labeller's full pool is open, and whose grades count: the people's round open, and its
own gate passed or overridden under the current rubric for a labeller, decided (whatever the outcome) for a
predictor, never for a retired model (the one rule :mod:`.runner` and :mod:`.status` read).

Only labellers whose gate passed or was overridden count in the final merge, the adjudication queue and
the progress counts (:func:`closed_model_names`); a predictor's grades and a retired model's never do
(:mod:`.roles`). A counted model's grade on a pair two or more people graded alike does not reopen it
(:func:`overruled_model_votes`): that is the model's disagreement, counted in its status
(:func:`qrelkit.app.models.audit.agreed_disagreements`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar

from ..phases import Phase

__all__ = [
    "closed_model_names",
    "counted_model_ids",
    "counting_votes",
    "full_pool_open",
    "latest_model_gate",
    "overruled_model_votes",
    "role_of",
    "uncounted_model_ids",
]


def latest_model_gate(conn: sqlite3.Connection, user_id: int, rubric_hash: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM model_gate_events WHERE user_id = ? AND rubric_hash = ? ORDER BY event_id DESC LIMIT 1",
        (user_id, rubric_hash),
    ).fetchone()


def role_of(conn: sqlite3.Connection, user_id: int) -> str:
    """The model labeller's role now: ``labeller``, ``predictor`` or ``retired`` (:mod:`.roles`)."""
    row = conn.execute(
        "SELECT role FROM model_role_events WHERE user_id = ? ORDER BY event_id DESC LIMIT 1", (user_id,)
    ).fetchone()
    return "labeller" if row is None else str(row[0])


def full_pool_open(conn: sqlite3.Connection, user_id: int, phase: Phase) -> bool:
    """Is the model's whole assignment open? The people's round open and, for a labeller, its gate passed
    or overridden; for a predictor, its gate decided whatever the outcome; for a retired model, never."""
    if phase.state != "open":
        return False
    role = role_of(conn, user_id)
    if role == "retired":
        return False
    gate = latest_model_gate(conn, user_id, phase.rubric_hash)
    if role == "predictor":
        return gate is not None
    return gate is not None and gate["outcome"] in ("passed", "override")


def closed_model_names(conn: sqlite3.Connection, rubric_hash: str) -> set[str]:
    """Model labellers whose grades take no part in the final qrels, the queue or the progress counts under
    ``rubric_hash`` (:func:`qrelkit.app.grades.final_grades`): a labeller whose gate has not passed (nor
    been overridden), every predictor and every retired model."""
    rows = conn.execute("SELECT user_id, name FROM users WHERE role = 'model'").fetchall()
    closed = set()
    for user_id, name in rows:
        if role_of(conn, user_id) != "labeller":
            closed.add(name)
            continue
        gate = latest_model_gate(conn, user_id, rubric_hash)
        if gate is None or gate["outcome"] not in ("passed", "override"):
            closed.add(name)
    return closed


def counted_model_ids(conn: sqlite3.Connection, rubric_hash: str) -> set[int]:
    """The user ids of the model labellers whose grades count (the complement of :func:`closed_model_names`)."""
    closed = closed_model_names(conn, rubric_hash)
    return {
        u for u, n in conn.execute("SELECT user_id, name FROM users WHERE role = 'model'") if n not in closed
    }


def uncounted_model_ids(conn: sqlite3.Connection, rubric_hash: str) -> str:
    """The user ids of the model labellers whose grades do not count, as an SQL list (``-1``, no user, for
    none: ``NOT IN (NULL)`` would hold for no row)."""
    counted = counted_model_ids(conn, rubric_hash)
    rows = conn.execute("SELECT user_id FROM users WHERE role = 'model'")
    return ", ".join(str(int(u)) for (u,) in rows if u not in counted) or "-1"


_Row = TypeVar("_Row")


def counting_votes(
    conn: sqlite3.Connection,
    rubric_hash: str,
    rows: Sequence[_Row],
    fields: Callable[[_Row], tuple[Any, str, int | None, bool]],
    *,
    people_only: bool = False,
) -> list[_Row]:
    """The votes (``rows``; ``fields(row)``: pair, labeller, grade, unsure) that take part in a pair's merge
    and in the queue: the people's, and those of the model labellers that count (:func:`closed_model_names`;
    none with ``people_only``) except on pairs two or more people graded alike (:func:`overruled_model_votes`)."""
    models = {n for (n,) in conn.execute("SELECT name FROM users WHERE role = 'model'")}
    closed = models if people_only else closed_model_names(conn, rubric_hash)
    kept = [r for r in rows if fields(r)[1] not in closed]
    overruled = overruled_model_votes((fields(r) for r in kept), models - closed)
    return [r for r in kept if fields(r)[:2] not in overruled]


def overruled_model_votes(
    votes: Iterable[tuple[Any, str, int | None, bool]], models: Collection[str]
) -> set[tuple[Any, str]]:
    """The (pair, model) votes that take no part in a pair's merge: a model's grade (or "unsure") that differs
    from the grade two or more people gave the pair alike, none of them unsure. ``votes``: (pair, labeller,
    grade, unsure) of the labellers that count; ``models``: the names among them that are model labellers."""
    people: dict[Any, list[tuple[int | None, bool]]] = {}
    voted: dict[Any, list[tuple[str, int | None, bool]]] = {}
    for pair, name, grade, unsure in votes:
        if name in models:
            voted.setdefault(pair, []).append((name, grade, bool(unsure)))
        else:
            people.setdefault(pair, []).append((grade, bool(unsure)))
    out: set[tuple[Any, str]] = set()
    for pair, mine in voted.items():
        theirs = people.get(pair, [])
        grades = {g for g, _ in theirs}
        if len(theirs) < 2 or any(u for _, u in theirs) or len(grades) != 1 or None in grades:
            continue
        out.update((pair, n) for n, g, unsure in mine if unsure or g not in grades)
    return out
