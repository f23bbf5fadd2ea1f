"""Grades and what is derived from them: labeller views, progress, calibration kappa, the queue, exports.

Grades are append-only events; a labeller's current grade for a pair is their latest event for it. The
functions that serve a labeller (:func:`pair_view`, :func:`own_grades`, :func:`labeller_progress`) read
only that labeller's assignments and events, the query and the document: never the pool's provenance
(systems and ranks) and never another labeller's events. That is what "blind" means here, and it is
enforced by what these functions select, not by what a page chooses to hide.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError, ValidationError, did_you_mean
from qrelkit.provenance import json_number as _num
from qrelkit.rubric import Rubric

from .decisions import live_adjudications, queue_key
from .phases import (
    DuoState,
    Phase,
    open_condition,
    phase_of,
    round_agreement,
    round_group,
    rubric_by_hash,
    verdict_event,
    waiting_for_gate,
)
from .store import Store, now

__all__ = [
    "MAX_NOTE",
    "NotAssigned",
    "PairClosed",
    "RubricChanged",
    "adjudicate",
    "adjudication_queue",
    "calibration_status",
    "closed_message",
    "decide",
    "export_final",
    "export_labeller",
    "final_grades",
    "final_qrels_text",
    "group_status",
    "labeller_grades",
    "labeller_progress",
    "labeller_qrels_text",
    "last_open_position",
    "manifest_key",
    "next_position",
    "own_event_count",
    "own_grades",
    "pair_view",
    "progress",
    "record_grade",
    "round_material",
    "stored_runs",
]

MAX_NOTE = 2000
MAX_TIME_MS = 24 * 3600 * 1000


class NotAssigned(ValidationError):
    """The labeller has no pair at that position (not theirs, or out of range)."""


class PairClosed(ValidationError):
    """The pair is the labeller's, but not open in the project's phase (:mod:`.phases`)."""


class RubricChanged(ValidationError):
    """The grade was given under a rubric that is no longer the project's current one."""


# the labeller's side


def _latest(param: str = ":rubric") -> str:
    """Each labeller's latest event per pair under one rubric version (a subquery, aliased by the caller)."""
    return (
        "(SELECT e.* FROM grade_events e JOIN (SELECT MAX(event_id) AS event_id FROM grade_events "
        f"WHERE rubric_hash = {param} GROUP BY user_id, pair_id) AS last USING (event_id))"
    )


def record_grade(
    conn: sqlite3.Connection,
    user_id: int,
    position: int,
    grade: int | None,
    *,
    unsure: bool,
    note: str | None,
    time_spent_ms: int | None,
    rubric: Rubric,
) -> dict[str, Any]:
    """Append one grade event for the labeller's pair at ``position`` (run in the writer).

    The grade must be on the rubric's scale, or ``None`` with ``unsure`` set (never both); a note is at most
    :data:`MAX_NOTE` characters; ``rubric`` must be the project's current rubric (:class:`RubricChanged`
    otherwise), and the pair must be open to the labeller in the project's phase (:class:`PairClosed`
    otherwise: a non-calibration pair before the gate passed, any pair while judging is paused). Every
    caller (the app, scripts) goes through these checks. Returns the store's ``event_id``, the labeller's
    own count of events (``labeller_event``: what the labeller is shown), the position and the next one.
    """
    if grade is None:
        if not unsure:
            raise ValidationError("give a grade, or mark the pair unsure", fix="pass a grade or unsure=True")
    elif unsure:  # stored as both, the export would read the grade and the queue the "unsure"
        raise ValidationError(
            "a pair is either graded or marked unsure, not both",
            got=f"grade={grade}, unsure=1",
            fix="send the grade alone, or unsure=1 without a grade",
        )
    else:
        rubric.check_grade(grade)
    if note is not None and len(note) > MAX_NOTE:
        raise ValidationError(f"a note is at most {MAX_NOTE} characters", got=len(note))
    phase = phase_of(conn)
    if rubric.content_hash != phase.rubric_hash:
        raise RubricChanged(
            "the rubric was revised since this page was loaded",
            got=rubric.content_hash[:12],
            expected=phase.rubric_hash[:12],
            fix="reload the page and grade under the current rubric",
        )
    row = conn.execute(
        f"SELECT a.pair_id, {open_condition(phase)} FROM assignments a WHERE a.user_id = ? AND a.position = ?",
        (user_id, position),
    ).fetchone()
    if row is None:
        raise NotAssigned("no pair at this position for this labeller", got=position)
    if not row[1]:
        raise PairClosed(closed_message(phase), got=position)
    cur = conn.execute(
        "INSERT INTO grade_events (user_id, pair_id, grade, unsure, note, rubric_hash, time_spent_ms, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, row[0], grade, int(unsure), note or None, rubric.content_hash, time_spent_ms, now()),
    )
    return {
        "event_id": int(cur.lastrowid or 0),
        # the labeller's own count of events, shown to them instead of the global id (which counts everyone's)
        "labeller_event": own_event_count(conn, user_id),
        "position": position,
        "next": next_position(conn, user_id, position, phase=phase),
    }


def own_event_count(conn: sqlite3.Connection, user_id: int) -> int:
    """How many grade events ``user_id`` has, in the writer's transaction, just after one was added.

    The writer carries each labeller's count in its connection's ``memo`` (:class:`..store.Connection`)
    instead of counting their events at every grade: the memo is emptied when anything rolls back, and
    here when another connection committed since it was filled (``PRAGMA data_version``). On any other
    connection the events are counted.
    """
    memo: dict[str, Any] | None = getattr(conn, "memo", None)
    if memo is None:
        return int(
            conn.execute("SELECT COUNT(*) FROM grade_events WHERE user_id = ?", (user_id,)).fetchone()[0]
        )
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    counts: dict[int, int] | None = memo.get("own_events")
    if counts is None or memo.get("own_events_version") != version:
        counts = memo["own_events"] = {}
        memo["own_events_version"] = version
    known = counts.get(user_id)
    if known is None:
        known = int(
            conn.execute("SELECT COUNT(*) FROM grade_events WHERE user_id = ?", (user_id,)).fetchone()[0]
        )
    else:
        known += 1
    counts[user_id] = known
    return known


def closed_message(phase: Phase) -> str:
    """Why a pair is closed to labellers in ``phase``."""
    if phase.unmeasurable:
        return (f"judging is paused for a rubric revision (the calibration gate of round {phase.round} "
                f"could not be measured: {phase.reason})")  # fmt: skip
    if phase.state == "paused":
        return f"judging is paused for a rubric revision (the calibration gate of round {phase.round} failed)"
    return f"this pair opens when the calibration gate of round {phase.round} passes"


def labeller_progress(
    conn: sqlite3.Connection, user_id: int, *, phase: Phase | None = None
) -> dict[str, Any]:
    """The labeller's pairs open now (``total``), how many are graded under the current rubric, the phase."""
    phase = phase or phase_of(conn)
    total, done = conn.execute(
        "SELECT COUNT(*), SUM(EXISTS (SELECT 1 FROM grade_events e WHERE e.user_id = a.user_id "
        f"AND e.pair_id = a.pair_id AND e.rubric_hash = ?)) FROM assignments a WHERE a.user_id = ? "
        f"AND {open_condition(phase)}",
        (phase.rubric_hash, user_id),
    ).fetchone()
    return {"total": int(total), "done": int(done or 0), "phase": phase.state, "round": phase.round}


def next_position(
    conn: sqlite3.Connection, user_id: int, after: int = -1, *, phase: Phase | None = None
) -> int | None:
    """The first open position after ``after`` not yet graded under the current rubric, else the first
    anywhere; ``None`` when all open pairs are graded."""
    phase = phase or phase_of(conn)
    sql = (
        f"SELECT MIN(a.position) FROM assignments a WHERE a.user_id = ? AND a.position > ? AND a.position <= ? "
        f"AND {open_condition(phase)} AND NOT EXISTS (SELECT 1 FROM grade_events e WHERE e.user_id = a.user_id "
        "AND e.pair_id = a.pair_id AND e.rubric_hash = ?)"
    )
    pos = conn.execute(sql, (user_id, after, _LAST_POSITION, phase.rubric_hash)).fetchone()[0]
    if pos is None and after >= 0:  # none after it: the first up to it (those after it scanned once only)
        pos = conn.execute(sql, (user_id, -1, after, phase.rubric_hash)).fetchone()[0]
    return None if pos is None else int(pos)


_LAST_POSITION = 2**63 - 1  # the largest position SQLite holds


def last_open_position(conn: sqlite3.Connection, user_id: int) -> int | None:
    """The labeller's last open position (the "back" link of the all-done page), or ``None``."""
    phase = phase_of(conn)
    pos = conn.execute(
        f"SELECT MAX(a.position) FROM assignments a WHERE a.user_id = ? AND {open_condition(phase)}",
        (user_id,),
    ).fetchone()[0]
    return None if pos is None else int(pos)


def pair_view(conn: sqlite3.Connection, user_id: int, position: int) -> dict[str, Any] | None:
    """What the labeller sees at ``position``: the query, the document and their own current grade.

    ``None`` when the labeller has no pair there; :class:`PairClosed` when the pair is not open in the
    project's phase (nothing of it is read). ``index`` is the pair's place among the open ones (1-based)
    and ``back`` the open position before it.
    """
    phase = phase_of(conn)
    cond = open_condition(phase)
    found = conn.execute(
        f"SELECT {cond} FROM assignments a WHERE a.user_id = ? AND a.position = ?", (user_id, position)
    ).fetchone()
    if found is None:
        return None
    if not found[0]:
        raise PairClosed(closed_message(phase), got=position)
    row = conn.execute(
        "SELECT a.position, q.text AS query, d.doc_id, d.title, d.text "
        "FROM assignments a JOIN pairs p USING (pair_id) JOIN queries q USING (query_id) "
        "JOIN docs d ON d.doc_id = p.doc_id WHERE a.user_id = ? AND a.position = ?",
        (user_id, position),
    ).fetchone()
    mine = conn.execute(
        "SELECT e.grade, e.unsure, e.note FROM grade_events e JOIN assignments a USING (user_id, pair_id) "
        "WHERE a.user_id = ? AND a.position = ? AND e.rubric_hash = ? ORDER BY e.event_id DESC LIMIT 1",
        (user_id, position, phase.rubric_hash),
    ).fetchone()
    index, back = conn.execute(
        f"SELECT COUNT(*), MAX(CASE WHEN a.position < ? THEN a.position END) FROM assignments a "
        f"WHERE a.user_id = ? AND a.position <= ? AND {cond}",
        (position, user_id, position),
    ).fetchone()
    view = dict(row)
    view["grade"] = None if mine is None else mine["grade"]
    view["unsure"] = bool(mine and mine["unsure"])
    view["note"] = None if mine is None else mine["note"]
    view["graded"] = mine is not None
    view["index"] = int(index)
    view["back"] = back
    return view


def own_grades(
    conn: sqlite3.Connection, user_id: int, *, rubric_hash: str | None = None
) -> list[dict[str, Any]]:
    """The labeller's current grades under a rubric version (default: the current one, on the pairs open
    now), by position: their own, and nothing about the pool."""
    phase = phase_of(conn)
    cond = open_condition(phase) if rubric_hash is None else "1"
    rows = conn.execute(
        f"SELECT a.position, p.query_id, p.doc_id, c.grade, c.unsure, c.note, c.created_at FROM {_latest()} c "
        "JOIN assignments a USING (user_id, pair_id) JOIN pairs p USING (pair_id) "
        f"WHERE c.user_id = :user AND {cond} ORDER BY a.position",
        {"rubric": rubric_hash or phase.rubric_hash, "user": user_id},
    )
    return [dict(r) | {"unsure": bool(r["unsure"])} for r in rows]


# the admin's side


def progress(conn: sqlite3.Connection) -> dict[str, Any]:
    """Progress per labeller and per query under the current rubric (only grades that count: :mod:`.models.access`)."""
    from .models.access import uncounted_model_ids

    phase = phase_of(conn)
    args = {"rubric": phase.rubric_hash, "round": phase.round}
    left_out = uncounted_model_ids(conn, phase.rubric_hash)
    cal = "EXISTS (SELECT 1 FROM round_pairs rp WHERE rp.round = :round AND rp.pair_id = a.pair_id AND rp.user_id = a.user_id)"
    labellers = [
        dict(r)
        for r in conn.execute(
            "SELECT u.name, COUNT(a.pair_id) AS assigned, COUNT(c.pair_id) AS done, "
            "COALESCE(SUM(c.unsure), 0) AS unsure, "
            f"COALESCE(SUM({cal}), 0) AS calibration_assigned, "
            f"COALESCE(SUM({cal} AND c.pair_id IS NOT NULL), 0) AS calibration_done "
            f"FROM users u JOIN assignments a USING (user_id) LEFT JOIN {_latest()} c "
            "ON c.user_id = a.user_id AND c.pair_id = a.pair_id "
            "WHERE u.role = 'labeller' GROUP BY u.user_id ORDER BY u.name",
            args,
        )
    ]
    for r in conn.execute("SELECT name FROM users WHERE role = 'labeller' ORDER BY name"):
        if r[0] not in {x["name"] for x in labellers}:
            labellers.append({"name": r[0], "assigned": 0, "done": 0, "unsure": 0,
                              "calibration_assigned": 0, "calibration_done": 0})  # fmt: skip
    queries = [
        dict(r)
        for r in conn.execute(
            f"SELECT p.query_id, q.text, MAX({cal}) AS calibration, "
            "COUNT(DISTINCT p.pair_id) AS pairs, COUNT(a.user_id) AS assigned, COUNT(c.pair_id) AS done, "
            "GROUP_CONCAT(DISTINCT u.name) AS labellers "
            "FROM pairs p JOIN queries q USING (query_id) "
            f"LEFT JOIN assignments a ON a.pair_id = p.pair_id AND a.user_id NOT IN ({left_out}) "
            "LEFT JOIN users u ON u.user_id = a.user_id "
            f"LEFT JOIN {_latest()} c ON c.user_id = a.user_id AND c.pair_id = a.pair_id "
            "GROUP BY p.query_id ORDER BY p.query_id",
            args,
        )
    ]
    for q in queries:
        q["calibration"] = bool(q["calibration"])
    (events,) = conn.execute(f"SELECT COUNT(*) FROM grade_events WHERE user_id NOT IN ({left_out})").fetchone()  # fmt: skip
    return {"labellers": labellers, "queries": queries, "events": int(events), "phase": phase.to_dict()}


def labeller_grades(conn: sqlite3.Connection, name: str, *, rubric_hash: str | None = None) -> dict:
    """``{(query_id, doc_id): grade}`` of a labeller's current, non-empty grades under one rubric (default: now)."""
    sql = (
        f"SELECT p.query_id, p.doc_id, c.grade FROM {_latest()} c JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) WHERE u.name = :name AND c.grade IS NOT NULL"
    )
    args = {"name": name, "rubric": rubric_hash or phase_of(conn).rubric_hash}
    return {(q, d): int(g) for q, d, g in conn.execute(sql, args)}


@dataclass(frozen=True)
class Calibration:
    """The calibration state of two labellers who share calibration pairs in a round."""

    labeller_a: str
    labeller_b: str
    shared: int
    done_a: int
    done_b: int
    report: Any = None  # AgreementReport once both finished
    gate: Any = None  # GateResult once both finished
    agreement: Any = None  # the adjudication.Calibration they come from
    round: int = 1
    warning: str | None = None  # too few shared queries (judgments.adjudication.few_shared_queries)

    @property
    def finished(self) -> bool:
        return self.shared > 0 and self.done_a == self.shared and self.done_b == self.shared

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "round": self.round,
            "labellers": [self.labeller_a, self.labeller_b],
            "shared_pairs": self.shared,
            "done": {self.labeller_a: self.done_a, self.labeller_b: self.done_b},
            "finished": self.finished,
        }
        if self.warning:
            out["warning"] = self.warning
        if self.agreement is not None:  # the manifest's keys and spelling (calibration_fields), and the scale
            from qrelkit.judgments.adjudication import calibration_fields

            out.update(calibration_fields(self.agreement) or {})
            k = self.agreement.report.kappa
            out["scale"] = list(k.scale)
            out["exact_agreement"] = _num(k.exact_agreement)
        return out


def calibration_status(
    store: Store, rubric: Rubric | None = None, *, round: int | None = None
) -> list[Calibration]:
    """For each two labellers sharing calibration pairs in a round (default: the current one): progress,
    and kappa with the gate once both are done.

    Kappa, its intervals and the gate come from :func:`qrelkit.judgments.adjudication.calibration_agreement` (the
    same numbers ``qrelkit agree`` gives for the two labellers' exported calibration grades): the
    project's weights over the round's rubric's full scale, on the pairs both graded under that rubric
    (an "unsure" without a grade takes no part), the gate on the project's interval against its
    ``min_kappa``. A decided round is computed on the grades as they stood when its gate was decided.
    ``rubric`` is accepted for symmetry with the other functions; the round's own rubric is used.
    """

    def load(conn: sqlite3.Connection) -> tuple[int, list[Any]]:
        number = round if round is not None else phase_of(conn).round
        verdict = verdict_event(conn, number)
        upto = None if verdict is None else (verdict["last_event"],)
        return number, round_agreement(conn, number, upto=None if upto is None else upto[0])

    number, states = store.read(load)
    out = []
    for s in states:
        found = s.agreement
        out.append(Calibration(s.labeller_a, s.labeller_b, s.shared, s.done_a, s.done_b,
                               None if found is None else found.report, None if found is None else found.gate,
                               found, number, s.warning))  # fmt: skip
    return out


def group_status(store: Store, *, round: int | None = None) -> Any:
    """The agreement of every labeller of a round (default: the current one) on its calibration pairs,
    once all are done: :func:`qrelkit.judgments.adjudication.group_calibration` (alpha, Fleiss' kappa, the pairwise
    kappa matrix, the gate on the project's statistic), on the grades as they stood when the round's gate
    was decided; ``None`` before."""

    def load(conn: sqlite3.Connection) -> Any:
        number = round if round is not None else phase_of(conn).round
        verdict = verdict_event(conn, number)
        upto = None if verdict is None else (verdict["last_event"],)
        return round_group(conn, number, upto=None if upto is None else upto[0])

    return store.read(load)


def _leverage_function() -> Any:
    try:
        from qrelkit.judgments.leverage import disagreement_leverage
    except ImportError:
        return None
    return disagreement_leverage


def adjudication_queue(store: Store, rubric: Rubric) -> dict[str, Any]:
    """Pairs graded differently (or marked unsure) by their labellers under ``rubric`` and not yet
    adjudicated under it.

    Ordered by :func:`.decisions.queue_key`: unsure pairs first, then judgment leverage (how far the
    disagreement can move nDCG@10 of the stored runs) when the project has runs and :mod:`qrelkit.judgments.leverage`
    is available, then grade distance (unsure counts as the whole scale), then the ids. A decision that
    was undone does not take a pair out of the queue. ``waits_for_gate`` marks a calibration pair of a
    round whose gate is not decided: it cannot be decided yet (:func:`.phases.waiting_for_gate`).
    """

    from .models.access import counting_votes

    def load(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], bool]:
        rows = conn.execute(
            "SELECT p.pair_id, p.query_id, p.doc_id, EXISTS (SELECT 1 FROM round_pairs rp JOIN rounds r "
            "USING (round) WHERE rp.pair_id = p.pair_id AND r.rubric_hash = :rubric) AS calibration, "
            f"u.name, c.grade, c.unsure, c.note FROM {_latest()} c JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE p.pair_id NOT IN "
            f"(SELECT pair_id FROM {live_adjudications()} WHERE rubric_hash = :rubric) "
            "ORDER BY p.pair_id, u.name",
            {"rubric": rubric.content_hash},
        ).fetchall()
        has_runs = conn.execute("SELECT EXISTS (SELECT 1 FROM run_rows)").fetchone()[0]
        waiting = waiting_for_gate(conn)
        kept = counting_votes(conn, rubric.content_hash, rows, lambda r: (r[0], r["name"], r["grade"], r["unsure"]))  # fmt: skip
        return [dict(r) | {"waits": r["pair_id"] in waiting} for r in kept], bool(has_runs)

    rows, has_runs = store.read(load)
    by_pair: dict[int, dict[str, Any]] = {}
    for r in rows:
        item = by_pair.setdefault(
            r["pair_id"],
            {"query_id": r["query_id"], "doc_id": r["doc_id"], "calibration": bool(r["calibration"]),
             "waits_for_gate": r["waits"], "grades": {}, "unsure": [], "notes": {}},
        )  # fmt: skip
        item["grades"][r["name"]] = r["grade"]
        if r["unsure"]:
            item["unsure"].append(r["name"])
        if r["note"]:
            item["notes"][r["name"]] = r["note"]
    span = rubric.max_grade - rubric.min_grade
    queue = []
    for item in by_pair.values():
        values = [g for g in item["grades"].values() if g is not None]
        if item["unsure"]:
            item["distance"] = span
        elif len(values) >= 2 and max(values) != min(values):
            item["distance"] = max(values) - min(values)
        else:
            continue
        item["leverage"] = None
        queue.append(item)
    method = "grade distance"
    leverage = _leverage_function() if has_runs else None
    if leverage is not None and queue:
        try:
            method = _apply_leverage(store, rubric, queue, leverage) or method
        except QrelkitError as exc:  # e.g. runs that share no query with the disputed pairs
            method = f"grade distance (leverage unavailable: {exc.problem})"
    queue.sort(key=lambda i: queue_key(i, method))
    return {"method": method, "items": queue}


def stored_runs(store: Store) -> list[Any]:
    """The runs ``judge init --runs`` stored, as qrelkit Runs (for leverage)."""
    import polars as pl

    from qrelkit.formats import run_from_frame

    rows = store.read(lambda c: c.execute("SELECT run, query_id, doc_id, score FROM run_rows").fetchall())
    runs: dict[str, list[tuple[str, str, float]]] = {}
    for run, q, d, s in rows:
        runs.setdefault(run, []).append((q, d, s))
    return [
        run_from_frame(pl.DataFrame(v, schema=["query_id", "doc_id", "score"], orient="row"), name=k)
        for k, v in sorted(runs.items())
    ]


def _apply_leverage(store: Store, rubric: Rubric, queue: list[dict[str, Any]], leverage: Any) -> str | None:
    """Fill ``leverage`` from qrelkit.judgments.leverage for pairs with two grades; ``"leverage"`` on success.

    Both sides share every settled grade (adjudicated, agreed, single labeller), so a pair's leverage is
    measured in the context of the rest of the judgments; they differ only on the disputed pairs, where
    side A takes the grade of the first labeller by name and side B the second's.
    """
    settled, _ = final_grades(store, rubric_hash=rubric.content_hash)
    side_a, side_b = dict(settled), dict(settled)
    for item in queue:
        given = [v for _, v in sorted(item["grades"].items()) if v is not None]
        if len(given) >= 2:
            side_a[item["query_id"], item["doc_id"]] = given[0]
            side_b[item["query_id"], item["doc_id"]] = given[1]
    if side_a == side_b:
        return None
    table = leverage(_qrels(side_a, "a"), _qrels(side_b, "b"), stored_runs(store), k=10)
    values = {(q, d): lv for q, d, lv in table.select("query_id", "doc_id", "leverage_max").iter_rows()}
    for item in queue:
        item["leverage"] = values.get((item["query_id"], item["doc_id"]))
    return "leverage"


def adjudicate(
    store: Store,
    rubric: Rubric,
    query_id: str,
    doc_id: str,
    grade: int,
    *,
    by: str | None,
    note: str | None,
    allow_override: bool = False,
) -> int:
    """Record the final grade of a pair (append-only); returns the adjudication's event id.

    A pair the labellers did not dispute (they agreed, or one labeller graded it) is refused unless
    ``allow_override``: the rule is :func:`qrelkit.judgments.adjudication.check_decision`, as for the file-based
    merge; the export counts every override in the manifest.
    """
    from .phases import ensure_gate

    rubric.check_grade(grade)
    if note is not None and len(note) > MAX_NOTE:
        raise ValidationError(f"a note is at most {MAX_NOTE} characters", got=len(note))
    ensure_gate(store)  # a round whose pairs are all graded has its gate decided before a decision
    return store.write(
        lambda conn: decide(
            conn, rubric, query_id, doc_id, grade, by=by, note=note, allow_override=allow_override
        )
    )


def decide(
    conn: sqlite3.Connection,
    rubric: Rubric,
    query_id: str,
    doc_id: str,
    grade: int,
    *,
    by: str | None,
    note: str | None,
    allow_override: bool = False,
    waiting: set[int] | None = None,
) -> int:
    """Record one decision inside the writer's transaction ``conn``: the pair must be in the pool, the
    rubric the current one, the pair not waiting for its round's gate and the decision allowed by
    :func:`qrelkit.judgments.adjudication.check_decision`; returns the adjudication's event id. The grade
    and the note are checked by the caller (:func:`adjudicate`, :func:`qrelkit.app.bulk.apply_decisions`).

    ``waiting`` is :func:`.phases.waiting_for_gate` of this transaction, read once by a caller deciding
    many pairs (a decision changes neither the phase nor the labellers' grades); ``None`` reads it here."""
    from qrelkit.judgments.adjudication import check_decision

    pair = conn.execute(
        "SELECT pair_id FROM pairs WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
    ).fetchone()
    if pair is None:
        docs = [r[0] for r in conn.execute("SELECT doc_id FROM pairs WHERE query_id = ?", (query_id,))]
        raise ValidationError(
            f"pair ({query_id}, {doc_id}) is not in this project's pool{did_you_mean(doc_id, docs)}"
        )
    current = phase_of(conn).rubric_hash
    if rubric.content_hash != current:
        raise RubricChanged("the rubric was revised since this page was loaded", fix="reload the page")
    if pair[0] in (waiting_for_gate(conn) if waiting is None else waiting):
        raise ValidationError(
            f"pair ({query_id}, {doc_id}) is a calibration pair of round {phase_of(conn).round}, whose gate "
            "is not decided yet",
            fix="decide it once every calibration pair is graded and the gate is decided (`qrelkit judge kappa`)",
        )
    votes = _pair_votes(conn, pair[0], current)
    check_decision((query_id, doc_id), votes, allow_override=allow_override)
    user = None
    if by is not None:
        found = conn.execute("SELECT user_id FROM users WHERE name = ?", (by,)).fetchone()
        user = None if found is None else found[0]
    cur = conn.execute(
        "INSERT INTO adjudications (pair_id, grade, user_id, note, rubric_hash, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (pair[0], grade, user, note or None, rubric.content_hash, now()),
    )
    return int(cur.lastrowid or 0)


def _pair_votes(conn: sqlite3.Connection, pair_id: int, rubric_hash: str) -> list[Any]:
    from qrelkit.judgments.adjudication import Vote

    rows = conn.execute(
        f"SELECT u.name, c.grade, c.unsure FROM {_latest()} c JOIN users u USING (user_id) WHERE c.pair_id = :pair",
        {"rubric": rubric_hash, "pair": pair_id},
    )
    return [Vote(name, grade, bool(unsure)) for name, grade, unsure in rows]


def final_grades(
    store: Store, *, undecided: str = "leave-out", rubric_hash: str | None = None, people_only: bool = False
) -> tuple[dict[tuple[str, str], int], dict[str, Any]]:
    """The final grade of every pair that has one under one rubric version (default: the current one),
    and counts of how each was decided. Grades and decisions under other versions take no part.

    The merge is :func:`qrelkit.judgments.adjudication.merge` over every pair of the pool: a pair's final grade is
    its latest adjudication that was not undone (:mod:`.decisions`); without one, the grade its labellers agree on (one labeller's grade when
    only one judged it). Disputed pairs without a decision follow ``undecided``: ``leave-out`` here (the
    adjudication queue and the leverage context need the settled grades while work goes on); the export
    refuses by default. Adjudications recorded with an override were allowed when recorded.
    ``people_only``: model labellers' grades take no part (the people's own grades and the decisions);
    otherwise :func:`.models.access.counting_votes` says which do.
    """
    from qrelkit.judgments.adjudication import Vote, merge

    from .models.access import counting_votes

    def load(conn: sqlite3.Connection) -> tuple[list, list, list, int]:
        pairs = conn.execute("SELECT query_id, doc_id FROM pairs").fetchall()
        version = {"rubric": rubric_hash or phase_of(conn).rubric_hash}
        adj = conn.execute(
            "SELECT p.query_id, p.doc_id, a.grade FROM adjudications a JOIN pairs p USING (pair_id) WHERE "
            f"a.event_id IN (SELECT MAX(event_id) FROM {live_adjudications()} WHERE rubric_hash = :rubric "
            "GROUP BY pair_id)",
            version,
        ).fetchall()
        cur = conn.execute(
            f"SELECT p.query_id, p.doc_id, u.name, c.grade, c.unsure FROM {_latest()} c "
            "JOIN pairs p USING (pair_id) JOIN users u USING (user_id)",
            version,
        ).fetchall()
        prejudged = conn.execute("SELECT COUNT(*) FROM prejudged").fetchone()[0]
        kept = counting_votes(conn, version["rubric"], cur, lambda r: ((r[0], r[1]), r[2], r[3], r[4]),
                              people_only=people_only)  # fmt: skip
        return pairs, adj, kept, int(prejudged)

    pairs, adj, cur, prejudged = store.read(load)
    votes: dict[tuple[str, str], list[Vote]] = {(q, d): [] for q, d in pairs}
    for q, d, name, g, unsure in cur:
        votes[q, d].append(Vote(name, None if g is None else int(g), bool(unsure)))
    merged = merge(votes, {(q, d): int(g) for q, d, g in adj}, undecided=undecided, allow_override=True)
    counts = {**merged.counts, "pairs": len(pairs), "judged_before_pooling_left_out": prejudged}
    return merged.grades, counts


def labeller_qrels_text(store: Store, name: str, *, rubric_hash: str | None = None) -> str:
    """One labeller's current grades under one rubric version (default: the current one) as TREC qrels
    text; unsure pairs without a grade are left out. An unknown ``name`` is a ``ValidationError`` with a
    "did you mean"."""
    from qrelkit.formats import qrels_text

    from .project import find_user

    user = find_user(store, name)
    grades = store.read(lambda c: labeller_grades(c, user["name"], rubric_hash=rubric_hash))
    return qrels_text(_qrels(grades, f"{name}.qrels"))


def export_labeller(
    store: Store, name: str, path: str | Path, *, rubric_hash: str | None = None
) -> dict[str, Any]:
    """Write one labeller's current grades as TREC qrels (:func:`labeller_qrels_text`); a model labeller's
    grade probabilities go beside them in ``<path>.probabilities.tsv`` (:mod:`.models.probabilities`)."""
    import hashlib

    from qrelkit.formats.outputs import write_outputs

    from .models.probabilities import labeller_side_file

    text = labeller_qrels_text(store, name, rubric_hash=rubric_hash)
    side = store.read(lambda c: labeller_side_file(c, name, Path(path).name, rubric_hash=rubric_hash))
    files = [(Path(path), text)] + ([] if side is None else [(Path(path).with_name(side[0]), side[1])])
    write_outputs(files)
    return {"path": str(path), "labeller": name, "judgments": text.count("\n"),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "probabilities": None if side is None else {**side[2], "path": str(files[1][0])}}  # fmt: skip


def final_qrels_text(
    store: Store,
    rubric: Rubric,
    *,
    name: str = "final.qrels",
    relevance_threshold: int = 1,
    undecided: str = "refuse",
    estimation: bool = False,
) -> tuple[str, str, dict[str, Any]]:
    """The final qrels under ``rubric`` (a version of the project's rubric; grades and decisions under
    other versions take no part) and their manifest as text, and the counts of how each grade was decided.

    Disputed pairs without a decision make this refuse (naming them) unless ``undecided="leave-out"``,
    which leaves them out and records how many. The manifest, signed with the project's key, records the rubric, its scale, the
    labellers, the calibration story (:func:`qrelkit.judgments.adjudication.gated_calibration_fields`: the round
    of this rubric version with its kappa per two labellers and the gate, an override with its reason,
    who and when, and every round of the project), and how each final grade was decided.

    With ``estimation``, when model labellers' grades count in the final qrels, the manifest also records
    ``prediction_powered`` and the counts hold ``files``: every file of the export as ``(name, text)``, the
    model's qrels and the people's qrels of the calibration queries among them, the model's with its own
    manifest (:func:`qrelkit.app.models.estimation_parts.estimation_parts`).
    """
    from qrelkit.judgments.adjudication import adjudication_fields, gated_calibration_fields, manifest_fields
    from qrelkit.judgments.manifest import manifest_path, qrels_with_manifest_text

    from .design import current_design, design_field
    from .models.manifest_fields import model_manifest_fields
    from .phases import ensure_gate, rounds_history

    ensure_gate(store)  # a calibration completed since the last request is decided before it is exported
    grades, counts = final_grades(store, undecided=undecided, rubric_hash=rubric.content_hash)
    history = store.read(rounds_history)
    mine = [r for r in history if r["rubric"]["content_hash"] == rubric.content_hash]
    if not mine:
        raise ValidationError(
            f"rubric {rubric.name!r} {rubric.version} ({rubric.content_hash[:12]}) is not one of this project's",
            fix="export under a rubric version the project used (`qrelkit judge kappa DB` lists the rounds)",
        )
    labellers = store.read(
        lambda c: [r[0] for r in c.execute("SELECT name FROM users WHERE role='labeller'")]
    )
    # two labellers sharing too few calibration queries: every result read with the qrels says so
    few = store.read(lambda c: [s.warning for s in round_agreement(c, mine[0]["round"], compute=False) if s.warning])  # fmt: skip
    fields = manifest_fields(
        rubric=rubric, scale=rubric.scale, relevance_threshold=relevance_threshold, labellers=sorted(labellers),
        calibration=gated_calibration_fields(mine[0], history, warnings=few),
        adjudication=adjudication_fields({k: v for k, v in counts.items() if k != "pairs"}),  # pairs: the pool's size
        model_labellers=store.read(lambda c: model_manifest_fields(c, rubric.content_hash, grades)),
    )  # fmt: skip
    live = store.read(current_design)  # a live queue's design: its probabilities, and how far people are
    settled = final_grades(store, rubric_hash=rubric.content_hash, people_only=True)[0] if live else {}
    fields["design"] = store.read(lambda c: design_field(c, settled))
    key = bytes.fromhex(store.meta("manifest_key") or "") or None  # signed with the project's key
    if not estimation:
        qrels, manifest = qrels_with_manifest_text(_qrels(grades, name), name, fields, key=key)
        return qrels, manifest, counts
    from .models.estimation_parts import estimation_parts

    field, parts = estimation_parts(
        store, rubric.content_hash, name, fields["model_labellers"],
        people=lambda: final_grades(store, rubric_hash=rubric.content_hash, people_only=True)[0],
        grades_of=lambda n: store.read(lambda c: labeller_grades(c, n, rubric_hash=rubric.content_hash)),
    )  # fmt: skip
    fields = {**fields, "prediction_powered": field}
    qrels, manifest = qrels_with_manifest_text(_qrels(grades, name), name, fields, key=key)
    files = [(name, qrels), (manifest_path(name).name, manifest)]
    for part_name, text, model, part_grades in parts:
        files.append((part_name, text))
        if model:  # its own manifest, so that `qrelkit eval MODEL_QRELS` finds the people's qrels
            own = {**fields, "labellers": [], "adjudication": None, "model_labellers": [model]}
            _, part_manifest = qrels_with_manifest_text(
                _qrels(part_grades, part_name), part_name, own, key=key
            )
            files.append((manifest_path(part_name).name, part_manifest))
    return qrels, manifest, {**counts, "files": files}


def manifest_key(db: str | Any) -> bytes:
    """The key a judging project signs its exports' manifests with (read-only: the file is not changed)."""
    from .store import Store, StoreError

    with Store(db, read_only=True) as store:
        value = store.meta("manifest_key")
    if not value:
        raise StoreError(
            "the project has no manifest key (its database predates signed manifests)",
            source=str(db),
            fix="open it once with a command that changes it (e.g. `qrelkit judge kappa`): the key is made then",
        )
    return bytes.fromhex(value)


def export_final(
    store: Store,
    rubric: Rubric,
    path: str | Path,
    *,
    relevance_threshold: int = 1,
    undecided: str = "refuse",
) -> dict[str, Any]:
    """Write the final qrels and their manifest beside them (:func:`final_qrels_text`), and, when model
    labellers' grades count in them, the model's qrels (each with its manifest) and the people's qrels of the
    calibration queries (``also``), all in one atomic write."""
    from qrelkit.judgments.manifest import manifest_path

    path = Path(path)
    qrels, manifest, counts = final_qrels_text(
        store, rubric, name=path.name, relevance_threshold=relevance_threshold, undecided=undecided,
        estimation=True,
    )  # fmt: skip
    from qrelkit.formats.outputs import write_outputs

    files = counts.pop("files", None) or [(path.name, qrels), (manifest_path(path).name, manifest)]
    write_outputs([(path.with_name(n), text) for n, text in files])
    judgments = counts["total"]
    return {"path": str(path), "manifest": str(manifest_path(path)), "judgments": judgments, "counts": counts,
            "also": [str(path.with_name(n)) for n, _ in files[2:]]}  # fmt: skip


def _qrels(grades: dict[tuple[str, str], int], name: str) -> Any:
    from qrelkit.data.values import Qrels

    return Qrels.from_grades(grades, name=name)


def round_material(store: Store, round_number: int | None = None) -> list[dict[str, Any]]:
    """What a rubric revision starts from, per two labellers of the round (default: the current one):
    the confusion matrix over the scale, the grades where they split most, and the disagreeing pairs by
    leverage (nDCG@10 over the stored runs; by grade distance without runs)."""

    def load(conn: sqlite3.Connection) -> tuple[list[DuoState], tuple[int, ...], bool]:
        number = round_number if round_number is not None else phase_of(conn).round
        verdict = verdict_event(conn, number)
        upto = None if verdict is None else (verdict["last_event"],)
        states = round_agreement(conn, number, upto=None if upto is None else upto[0])
        rubric_hash = conn.execute("SELECT rubric_hash FROM rounds WHERE round = ?", (number,)).fetchone()[0]
        has_runs = conn.execute("SELECT EXISTS (SELECT 1 FROM run_rows)").fetchone()[0]
        return states, rubric_by_hash(conn, rubric_hash).scale, bool(has_runs)

    states, scale, has_runs = store.read(load)
    out = []
    for s in states:
        if s.agreement is None:
            continue
        report = s.agreement.report
        confusion = [[int(x) for x in row] for row in report.confusion]
        splits = []
        for i, g in enumerate(scale):
            given = sum(confusion[i]) + sum(row[i] for row in confusion) - confusion[i][i]
            if given:
                splits.append({"grade": g, "pairs": given, "agreed": confusion[i][i],
                               "split": (given - confusion[i][i]) / given})  # fmt: skip
        splits.sort(key=lambda x: (-x["split"], -x["pairs"], x["grade"]))
        pairs, method = _disagreements(store, s, has_runs)
        out.append({"labellers": [s.labeller_a, s.labeller_b], "scale": list(scale), "confusion": confusion,
                    "splits": splits, "pairs": pairs, "method": method,
                    "message": s.agreement.gate.message})  # fmt: skip
    return out


def _disagreements(store: Store, s: DuoState, has_runs: bool) -> tuple[list[dict[str, Any]], str]:
    from qrelkit.errors import QrelkitError

    rows = [{"query_id": d.query_id, "doc_id": d.doc_id, "grade_a": d.grade_a, "grade_b": d.grade_b,
             "distance": d.distance, "leverage": None} for d in s.agreement.report.disagreements]  # fmt: skip
    if not rows or not has_runs:
        return rows, "grade distance"
    try:
        from qrelkit.judgments.leverage import disagreement_leverage

        table = disagreement_leverage(
            _qrels(s.grades_a, "a"), _qrels(s.grades_b, "b"), stored_runs(store), k=10
        )
    except (ImportError, QrelkitError) as exc:
        return rows, f"grade distance (leverage unavailable: {getattr(exc, 'problem', exc)})"
    values = {(q, d): lv for q, d, lv in table.select("query_id", "doc_id", "leverage_max").iter_rows()}
    for row in rows:
        row["leverage"] = values.get((row["query_id"], row["doc_id"]))
    rows.sort(key=lambda r: (-(r["leverage"] or 0.0), -r["distance"], r["query_id"], r["doc_id"]))
    return rows, "leverage"
