"""Adjudication decisions as the admin works with them: which decisions count, undoing one, the recent
decisions, and the order and pages of the adjudication queue.

Decisions are append-only events (the ``adjudications`` table), and so are their undos
(``adjudication_undos``): undoing a decision appends a row naming it, and nothing is deleted. A pair's
decision under a rubric version is its latest adjudication under that version that was not undone
(:func:`live_adjudications`); undoing the current decision therefore brings back the one before it, or
none. Every reader of decisions (the merge into final qrels, the queue, the pair's history) selects
through :func:`live_adjudications`, so an undo shows in the export as soon as it is committed.

The queue's order (:func:`queue_key`), first to last:

1. pairs a labeller marked "unsure" (someone asked for a decision);
2. leverage, largest first, when the queue is ordered by leverage (how far the disagreement can move
   nDCG@10 of the stored runs; a pair without a leverage value counts 0);
3. grade distance, largest first (the spread of the labellers' grades; "unsure" counts as the whole scale);
4. query id, then document id (so that equal pairs keep one order across pages and refreshes).
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from qrelkit.errors import ValidationError

from .store import Store, now

__all__ = [
    "QUEUE_PAGE_SIZE",
    "live_adjudications",
    "queue_key",
    "queue_page",
    "recent_decisions",
    "undo_adjudication",
]

#: Rows of the adjudication queue per page on the admin page (the API takes ``per_page``).
QUEUE_PAGE_SIZE = 25
#: The most rows the API gives per page.
MAX_PAGE_SIZE = 500


def live_adjudications(alias: str = "adjudications") -> str:
    """The adjudications that were not undone, as a subquery to select from (aliased by the caller)."""
    return (
        f"(SELECT * FROM adjudications WHERE event_id NOT IN "
        f"(SELECT adjudication_id FROM adjudication_undos)) AS {alias}"
    )


def queue_key(item: dict[str, Any], method: str) -> tuple[Any, ...]:
    """The sort key of one queue item (the module docstring gives the order)."""
    leverage = (item.get("leverage") or 0.0) if method == "leverage" else 0.0
    return (not item["unsure"], -leverage, -item["distance"], item["query_id"], item["doc_id"])


def queue_page(queue: dict[str, Any], page: int = 1, per_page: int = QUEUE_PAGE_SIZE) -> dict[str, Any]:
    """One page of the queue (1-based; a page past the end gives the last page): its items, the total
    count, the page number and the page count, and the 1-based numbers of the first and last row shown."""
    per_page = max(1, min(int(per_page), MAX_PAGE_SIZE))
    total = len(queue["items"])
    pages = max(1, math.ceil(total / per_page))
    page = max(1, min(int(page), pages))
    start = (page - 1) * per_page
    items = queue["items"][start : start + per_page]
    return {
        "method": queue["method"],
        "order": "unsure first, then leverage (when ordered by leverage), then grade distance, then ids",
        "items": items,
        "total": total,
        "page": page,
        "pages": pages,
        "per_page": per_page,
        "first": start + 1 if items else 0,
        "last": start + len(items),
    }


def undo_adjudication(store: Store, event_id: int, *, by: str | None, note: str | None = None) -> int:
    """Undo the decision ``event_id`` (an adjudication's event id); returns the undo's event id.

    Only a pair's current decision under the project's current rubric can be undone (undo them one at a
    time, latest first); undoing it brings back the decision before it, or none. Refused, with the reason,
    for an unknown id, a decision already undone, one a later decision replaced, or one made under an
    earlier rubric version.
    """
    from .phases import phase_of

    def write(conn: sqlite3.Connection) -> int:
        row = conn.execute(
            "SELECT a.event_id, a.pair_id, a.rubric_hash, p.query_id, p.doc_id, "
            "EXISTS (SELECT 1 FROM adjudication_undos WHERE adjudication_id = a.event_id) AS undone "
            "FROM adjudications a JOIN pairs p USING (pair_id) WHERE a.event_id = ?",
            (event_id,),
        ).fetchone()
        if row is None:
            raise ValidationError(
                "no decision with this id", got=event_id, fix="pick one from the admin page"
            )
        pair = f"({row['query_id']}, {row['doc_id']})"
        if row["undone"]:
            raise ValidationError(f"the decision {event_id} on {pair} was undone already", got=event_id)
        if row["rubric_hash"] != phase_of(conn).rubric_hash:
            raise ValidationError(
                f"the decision {event_id} on {pair} was made under an earlier rubric version",
                fix="decisions under earlier versions are kept as they were; decide the pair again",
            )
        latest = conn.execute(
            f"SELECT MAX(event_id) FROM {live_adjudications('a')} WHERE a.pair_id = ? AND a.rubric_hash = ?",
            (row["pair_id"], row["rubric_hash"]),
        ).fetchone()[0]
        if latest != event_id:
            raise ValidationError(
                f"the decision {event_id} on {pair} was replaced by decision {latest}",
                fix=f"undo decision {latest} first, or decide the pair again",
            )
        user = None
        if by is not None:
            found = conn.execute("SELECT user_id FROM users WHERE name = ?", (by,)).fetchone()
            user = None if found is None else found[0]
        cur = conn.execute(
            "INSERT INTO adjudication_undos (adjudication_id, user_id, note, created_at) VALUES (?, ?, ?, ?)",
            (event_id, user, note or None, now()),
        )
        return int(cur.lastrowid or 0)

    return store.write(write)


def recent_decisions(conn: sqlite3.Connection, rubric_hash: str, limit: int = 10) -> list[dict[str, Any]]:
    """The latest ``limit`` decisions under a rubric version, newest first: the pair, the grade, who and
    when, whether it was undone (and by whom, when), and whether it is the pair's decision now
    (``current``: only that one can be undone)."""
    rows = conn.execute(
        "SELECT a.event_id, p.query_id, p.doc_id, a.grade, a.note, a.created_at, u.name, "
        "x.created_at AS undone_at, ux.name AS undone_by, "
        f"a.event_id = (SELECT MAX(event_id) FROM {live_adjudications('l')} WHERE l.pair_id = a.pair_id "
        "AND l.rubric_hash = a.rubric_hash) AS current "
        "FROM adjudications a JOIN pairs p USING (pair_id) LEFT JOIN users u ON u.user_id = a.user_id "
        "LEFT JOIN adjudication_undos x ON x.adjudication_id = a.event_id "
        "LEFT JOIN users ux ON ux.user_id = x.user_id "
        "WHERE a.rubric_hash = ? ORDER BY a.event_id DESC LIMIT ?",
        (rubric_hash, limit),
    ).fetchall()
    return [dict(r) | {"undone": r["undone_at"] is not None, "current": bool(r["current"])} for r in rows]
