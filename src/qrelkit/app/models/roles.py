"""A model labeller's role: ``labeller`` (its grades may replace people's once its gate passed),
``predictor`` (its grades only predict, corrected by people's: they never join the final merge) or
``retired`` (it leaves the progress counts, the queue and the final export). The table is
:data:`.schema.ROLES_MIGRATION` (migration 9 of :mod:`qrelkit.app.store`).

Roles are events, as gates are: ``model_role_events`` is append-only; the latest event is the role, and a
labeller with none is a ``labeller``. ``judge model add --role predictor`` records the first; ``judge model
predict`` turns a labeller into a predictor (for instance after its gate failed) and ``judge model retire``
retires one, each with a written reason, who and when, as an override is recorded. A retired model's
events stay; the audit pairs it added to people's plans that no one graded yet leave them
(:func:`.audit.withdraw_audit`).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from qrelkit.errors import ValidationError

from ..phases import override_reason
from ..store import Store, now
from .audit import withdraw_audit
from .register import load_model

__all__ = ["Role", "change_role", "model_role", "model_roles", "role_history"]

Role = Literal["labeller", "predictor", "retired"]


def _latest(conn: sqlite3.Connection, user_id: int) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM model_role_events WHERE user_id = ? ORDER BY event_id DESC LIMIT 1", (user_id,)
    ).fetchone()


def model_role(conn: sqlite3.Connection, user_id: int) -> Role:
    """The model labeller's role now (``labeller`` when no event says otherwise)."""
    row = _latest(conn, user_id)
    return "labeller" if row is None else row["role"]


def model_roles(conn: sqlite3.Connection) -> dict[str, Role]:
    """Every model labeller's name -> its role now."""
    rows = conn.execute(
        "SELECT u.name, (SELECT r.role FROM model_role_events r WHERE r.user_id = u.user_id ORDER BY r.event_id "
        "DESC LIMIT 1) FROM users u WHERE u.role = 'model'"
    ).fetchall()
    return {name: role or "labeller" for name, role in rows}


def role_history(conn: sqlite3.Connection, user_id: int) -> list[dict[str, Any]]:
    """Every role event of the model labeller, oldest first: role, reason, who and when."""
    rows = conn.execute(
        "SELECT * FROM model_role_events WHERE user_id = ? ORDER BY event_id", (user_id,)
    ).fetchall()
    return [
        {"role": r["role"], "reason": r["reason"], "by": r["decided_by"], "at": r["created_at"]} for r in rows
    ]


def change_role(store: Store, name: str, role: Role, *, reason: str, by: str | None = None) -> dict[str, Any]:
    """Make the model labeller ``name`` a ``predictor`` or ``retired``, with a written reason, who (``by``;
    default: the project's admin) and when.

    A retired model stays retired; a predictor is never made a labeller again (its grades were never held
    to replace people's: add it again under a new name)."""
    if role not in ("predictor", "retired"):
        raise ValidationError(f"a model labeller is made a predictor or retired, not {role!r}")
    what = "say why the model only predicts" if role == "predictor" else "say why the model is retired"
    if by is None:
        by = store.read(lambda c: (c.execute("SELECT name FROM users WHERE role = 'admin' ORDER BY user_id")
                                   .fetchone() or [None])[0])  # fmt: skip
    reason, by = override_reason(reason, by, what)

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        model = load_model(conn, name)
        now_role = model_role(conn, model.user_id)
        if now_role == "retired":
            raise ValidationError(
                f"model labeller {name!r} is retired",
                fix="add the model again under a new name (`qrelkit judge model add`)",
            )
        if now_role == role:
            raise ValidationError(f"model labeller {name!r} is a {role} already")
        at = now()
        conn.execute(
            "INSERT INTO model_role_events (user_id, role, reason, decided_by, created_at) VALUES (?, ?, ?, ?, ?)",
            (model.user_id, role, reason, by, at),
        )
        # a retired model's audit pairs no one graded leave people's plans; its events stay
        withdrawn = withdraw_audit(conn, model.user_id) if role == "retired" else 0
        return {"model": name, "role": role, "was": now_role, "reason": reason, "by": by, "at": at,
                "audit_withdrawn": withdrawn}  # fmt: skip

    return store.write(write)
