"""Whether a model labeller's full pool is open: the people's round open, and its own gate passed or
overridden under the current rubric (the one rule :mod:`.runner` and :mod:`.status` read)."""

from __future__ import annotations

import sqlite3

from ..phases import Phase

__all__ = ["closed_model_names", "full_pool_open", "latest_model_gate"]


def latest_model_gate(conn: sqlite3.Connection, user_id: int, rubric_hash: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM model_gate_events WHERE user_id = ? AND rubric_hash = ? ORDER BY event_id DESC LIMIT 1",
        (user_id, rubric_hash),
    ).fetchone()


def full_pool_open(conn: sqlite3.Connection, user_id: int, phase: Phase) -> bool:
    """Is the model's whole assignment open: people's round open and the model's gate passed or overridden?"""
    if phase.state != "open":
        return False
    gate = latest_model_gate(conn, user_id, phase.rubric_hash)
    return gate is not None and gate["outcome"] in ("passed", "override")


def closed_model_names(conn: sqlite3.Connection, rubric_hash: str) -> set[str]:
    """Model labellers whose gate has not passed (nor been overridden) under ``rubric_hash``: their grades
    take no part in the final qrels (:func:`qrelkit.app.grades.final_grades`)."""
    rows = conn.execute("SELECT user_id, name FROM users WHERE role = 'model'").fetchall()
    closed = set()
    for user_id, name in rows:
        gate = latest_model_gate(conn, user_id, rubric_hash)
        if gate is None or gate["outcome"] not in ("passed", "override"):
            closed.add(name)
    return closed
