"""The audit sample: a share of a model labeller's grades outside calibration, given to people as well,
and the model's running agreement on it (drift).

A pair the model graded outside calibration is in the sample when the first 16 hex digits of SHA-256 of
``"{project seed}:audit:{model}:{query id}\\t{doc id}"``, read as a fraction of 16**16, fall below the
share (5% by default): the draw is fixed by the project seed, and a pair's membership never changes as
the model grades more. A pair whose document carries instruction-like text (:mod:`.flags`) is in the
sample whatever its digest: a person grades it too. Each sampled pair goes to one person (the project's labellers in name order,
chosen by the same digest), appended after their plan, blind as any other pair. :func:`audit_agreement`
compares the model with the people on the sampled pairs they graded (:func:`qrelkit.agreement.model.model_versus`)
and flags drift when the lower end of the kappa interval falls below the gate's threshold (the people's
kappa minus the margin).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from typing import Any

from qrelkit.errors import ValidationError

from ..design import claimed_by_design
from ..phases import labeller_order, phase_of
from ..store import Store, now
from .flags import flagged_docs
from .register import ModelLabeller, calibration_pair_ids, load_model

__all__ = [
    "DEFAULT_AUDIT_SHARE",
    "agreed_disagreements",
    "assign_audit",
    "audit_agreement",
    "withdraw_audit",
]

DEFAULT_AUDIT_SHARE = 0.05


def _added_key(model_id: int) -> str:
    """The ``meta`` key listing the assignments the model's audit added to people's plans ([person, pair]
    pairs): what :func:`withdraw_audit` may take back, apart from pairs a person had in their plan anyway."""
    return f"model_audit_added:{model_id}"


def _digest(seed: str, name: str, query_id: str, doc_id: str) -> int:
    return int(hashlib.sha256(f"{seed}:audit:{name}:{query_id}\t{doc_id}".encode()).hexdigest()[:16], 16)


def _assign(conn: sqlite3.Connection, model: ModelLabeller, share: float) -> dict[str, Any]:
    phase = phase_of(conn)
    calibration = calibration_pair_ids(conn, phase.round)
    seed = conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0]
    people = conn.execute("SELECT user_id, name FROM users WHERE role = 'labeller' ORDER BY name").fetchall()
    if not people:
        return {"assigned": 0, "sample": 0}
    done = {
        r[0] for r in conn.execute("SELECT pair_id FROM model_audit WHERE model_id = ?", (model.user_id,))
    }
    graded = conn.execute(
        "SELECT DISTINCT p.pair_id, p.query_id, p.doc_id FROM grade_events e JOIN pairs p USING (pair_id) "
        "WHERE e.user_id = ? AND e.rubric_hash = ?",
        (model.user_id, phase.rubric_hash),
    ).fetchall()
    limit = share * 16**16
    flagged = flagged_docs(conn)
    new: dict[int, list[int]] = {}
    for pair_id, q, d in graded:
        if pair_id in calibration or pair_id in done:
            continue
        digest = _digest(seed, model.name, q, d)
        if digest < limit or d in flagged:
            new.setdefault(people[digest % len(people)][0], []).append(pair_id)
    queries = dict(conn.execute("SELECT pair_id, query_id FROM pairs"))
    names = dict(people)
    assigned = 0
    for person_id, pair_ids in sorted(new.items()):
        have = {r[0] for r in conn.execute("SELECT pair_id FROM assignments WHERE user_id = ?", (person_id,))}
        fresh = [p for p in pair_ids if p not in have]
        start = conn.execute(
            "SELECT COALESCE(MAX(position), -1) + 1 FROM assignments WHERE user_id = ?", (person_id,)
        ).fetchone()[0]
        order = labeller_order({p: queries[p] for p in fresh}, set(), int(seed), names[person_id])
        conn.executemany(
            "INSERT INTO assignments VALUES (?, ?, ?)",
            [(person_id, p, start + i) for i, p in enumerate(order)],
        )
        conn.executemany(
            "INSERT INTO model_audit VALUES (?, ?, ?, ?)",
            [(model.user_id, p, person_id, now()) for p in pair_ids],
        )
        _record_added(conn, model.user_id, [(person_id, p) for p in order])
        assigned += len(pair_ids)
    return {"assigned": assigned, "sample": len(done) + assigned}


def _record_added(conn: sqlite3.Connection, model_id: int, added: list[tuple[int, int]]) -> None:
    if not added:
        return
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_added_key(model_id),)).fetchone()
    known = [] if row is None else json.loads(row[0])
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                 (_added_key(model_id), json.dumps(known + [list(a) for a in added])))  # fmt: skip


def withdraw_audit(conn: sqlite3.Connection, model_id: int) -> int:
    """Take back from people's plans the assignments the model's audit added that no one graded yet (in the
    writer, when the model is retired); how many. Its ``model_audit`` rows and every grade event stay; a
    pair a person graded, had in their plan anyway, was also given for another model's audit, or that the
    live queue's design in force chose for them (:func:`qrelkit.app.design.claimed_by_design`) stays."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_added_key(model_id),)).fetchone()
    if row is None:
        return 0
    taken = 0
    for person_id, pair_id in json.loads(row[0]):
        graded = conn.execute(
            "SELECT 1 FROM grade_events WHERE user_id = ? AND pair_id = ? LIMIT 1", (person_id, pair_id)
        ).fetchone()
        other = conn.execute(
            "SELECT 1 FROM model_audit WHERE pair_id = ? AND person_id = ? AND model_id != ? LIMIT 1",
            (pair_id, person_id, model_id),
        ).fetchone()
        if graded is None and other is None and not claimed_by_design(conn, person_id, pair_id):
            taken += conn.execute(
                "DELETE FROM assignments WHERE user_id = ? AND pair_id = ?", (person_id, pair_id)
            ).rowcount
    return taken


def assign_audit(store: Store, name: str, *, share: float = DEFAULT_AUDIT_SHARE) -> dict[str, Any]:
    """Give people the audit pairs among the model's grades not yet sampled; how many were added."""
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise ValidationError("--audit-share is a share between 0 and 1", got=share, fix="e.g. 0.05")
    return store.write(lambda c: _assign(c, load_model(c, name), float(share)))


def audit_agreement(
    conn: sqlite3.Connection, model: ModelLabeller, threshold: float | None
) -> dict[str, Any]:
    """The model against the people on the audit pairs they graded, and whether it drifted."""
    from qrelkit.agreement.model import model_versus

    phase = phase_of(conn)
    rows = conn.execute(
        "SELECT p.query_id, p.doc_id, e.user_id, e.grade FROM model_audit a JOIN pairs p USING (pair_id) "
        "JOIN grade_events e ON e.pair_id = a.pair_id AND e.user_id IN (a.model_id, a.person_id) "
        "WHERE a.model_id = ? AND e.rubric_hash = ? AND e.grade IS NOT NULL ORDER BY e.event_id",
        (model.user_id, phase.rubric_hash),
    ).fetchall()
    sample = conn.execute("SELECT COUNT(*) FROM model_audit WHERE model_id = ?", (model.user_id,)).fetchone()[
        0
    ]
    mine: dict[tuple[str, str], int] = {}
    theirs: dict[tuple[str, str], int] = {}
    for q, d, user_id, grade in rows:  # the latest event of each wins
        (mine if user_id == model.user_id else theirs)[q, d] = int(grade)
    shared = {k: v for k, v in theirs.items() if k in mine}
    out: dict[str, Any] = {"sample": sample, "graded_by_people": len(shared), "threshold": threshold,
                           "agreement": None, "drift": False}  # fmt: skip
    if len(shared) >= 2:
        scale = conn.execute("SELECT value FROM meta WHERE key = 'kappa_weights'").fetchone()
        weights: Any = scale[0] if scale else "linear"
        from ..phases import rubric_by_hash

        found = model_versus(mine, shared, rubric_by_hash(conn, phase.rubric_hash).scale, name="audit",
                             weights=weights).to_dict()  # fmt: skip
        out["agreement"] = found
        low = found["bootstrap_low"]
        out["drift"] = threshold is not None and (low is None or math.isnan(low) or low < threshold)
    return out


def agreed_disagreements(conn: sqlite3.Connection, model: ModelLabeller) -> dict[str, Any]:
    """The model's grades on pairs two or more people graded alike (none unsure), under the current rubric:
    how many it graded and on how many it gave another grade. Such a pair is not reopened as a dispute
    (:func:`.access.overruled_model_votes`): the disagreement is the model's, counted here."""
    phase = phase_of(conn)
    rows = conn.execute(
        "SELECT e.pair_id, e.user_id, e.grade, e.unsure, u.role FROM grade_events e JOIN users u USING (user_id) "
        "WHERE e.event_id IN (SELECT MAX(event_id) FROM grade_events WHERE rubric_hash = ? GROUP BY user_id, pair_id)",
        (phase.rubric_hash,),
    ).fetchall()
    people: dict[int, list[tuple[int | None, int]]] = {}
    mine: dict[int, int | None] = {}
    for pair_id, user_id, grade, unsure, role in rows:
        if user_id == model.user_id:
            mine[pair_id] = grade
        elif role == "labeller":
            people.setdefault(pair_id, []).append((grade, unsure))
    graded = differ = 0
    for pair_id, grade in mine.items():
        theirs = people.get(pair_id, [])
        agreed = {g for g, _ in theirs}
        if len(theirs) >= 2 and not any(u for _, u in theirs) and len(agreed) == 1 and None not in agreed:
            graded += 1
            differ += grade is not None and grade not in agreed
    return {"pairs": graded, "disagreements": differ, "rate": differ / graded if graded else None}
