"""The reads the judging web app runs itself, as named functions over a connection or the store.

The web handlers (:mod:`qrelkit.app.web`) hold no SQL: they call these, or the library functions of
:mod:`.grades` and :mod:`.project`. Each ``(conn, ...)`` function runs inside ``Store.read`` (a read
transaction on the calling thread's connection); each ``(store, ...)`` function opens its own.
"""

from __future__ import annotations

import sqlite3

__all__ = ["adjudications_of_pair", "change_token", "grade_events_of_pair", "pair_by_ids",
           "pair_history", "user_by_id"]  # fmt: skip


def user_by_id(conn: sqlite3.Connection, user_id: int) -> sqlite3.Row | None:
    """The user row (name, role, session epoch, ...) of ``user_id``, or ``None``."""
    return conn.execute("SELECT * FROM users WHERE user_id = ?", (user_id,)).fetchone()


def pair_by_ids(conn: sqlite3.Connection, query_id: str, doc_id: str) -> sqlite3.Row | None:
    """One pair with its query text and its document's title and text (admin side), or ``None``."""
    return conn.execute(
        "SELECT p.*, qu.text AS query, dc.title, dc.text FROM pairs p JOIN queries qu USING (query_id) "
        "JOIN docs dc ON dc.doc_id = p.doc_id WHERE p.query_id = ? AND p.doc_id = ?",
        (query_id, doc_id),
    ).fetchone()


def grade_events_of_pair(conn: sqlite3.Connection, pair_id: int) -> list[sqlite3.Row]:
    """Every grade event of a pair with its labeller's name and the rubric hash it was given under, oldest
    first."""
    return conn.execute(
        "SELECT u.name, e.grade, e.unsure, e.note, e.time_spent_ms, e.rubric_hash, e.created_at FROM grade_events e "
        "JOIN users u USING (user_id) WHERE e.pair_id = ? ORDER BY e.event_id",
        (pair_id,),
    ).fetchall()


def adjudications_of_pair(conn: sqlite3.Connection, pair_id: int) -> list[sqlite3.Row]:
    """Every adjudication of a pair with the deciding user's name (``None`` when none was recorded), and
    when and by whom it was undone (``undone_at`` ``None``: it was not)."""
    return conn.execute(
        "SELECT a.event_id, a.grade, a.note, a.rubric_hash, a.created_at, u.name, x.created_at AS undone_at, "
        "ux.name AS undone_by FROM adjudications a LEFT JOIN users u USING (user_id) "
        "LEFT JOIN adjudication_undos x ON x.adjudication_id = a.event_id "
        "LEFT JOIN users ux ON ux.user_id = x.user_id WHERE a.pair_id = ? ORDER BY a.event_id",
        (pair_id,),
    ).fetchall()


def pair_history(
    conn: sqlite3.Connection, query_id: str, doc_id: str
) -> tuple[sqlite3.Row | None, list[sqlite3.Row], list[sqlite3.Row]]:
    """(the pair, its grade events, its adjudications), read in one transaction; ``(None, [], [])`` if absent."""
    pair = pair_by_ids(conn, query_id, doc_id)
    if pair is None:
        return None, [], []
    return pair, grade_events_of_pair(conn, pair["pair_id"]), adjudications_of_pair(conn, pair["pair_id"])


def change_token(conn: sqlite3.Connection) -> str:
    """A short text that changes whenever anything the admin page shows may have changed: a grade, a
    decision or its undo, a gate event, a round, a user, the current rubric. The admin page polls it and
    reloads its sections only when it moved."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(event_id), 0) FROM grade_events), "
        "(SELECT COALESCE(MAX(event_id), 0) FROM adjudications), "
        "(SELECT COALESCE(MAX(event_id), 0) FROM adjudication_undos), "
        "(SELECT COALESCE(MAX(event_id), 0) FROM gate_events), (SELECT COALESCE(MAX(round), 0) FROM rounds), "
        "(SELECT COUNT(*) FROM users), (SELECT COALESCE(MAX(value), '') FROM meta WHERE key = 'rubric_hash')"
    ).fetchone()
    return "-".join(str(x)[:12] for x in row)
