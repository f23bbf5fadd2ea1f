"""Grades and what is derived from them: labeller views, progress, calibration kappa, the queue, exports.

Grades are append-only events; a labeller's current grade for a pair is their latest event for it. The
functions that serve a labeller (:func:`pair_view`, :func:`own_grades`, :func:`labeller_progress`) read
only that labeller's assignments and events, the query and the document: never the pool's provenance
(systems and ranks) and never another labeller's events. That is what "blind" means here, and it is
enforced by what these functions select, not by what a page chooses to hide.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError, ValidationError, did_you_mean
from qrelkit.rubric import Rubric

from .store import Store, now

__all__ = [
    "MAX_NOTE",
    "NotAssigned",
    "adjudicate",
    "adjudication_queue",
    "calibration_status",
    "export_final",
    "export_labeller",
    "final_grades",
    "final_qrels_text",
    "labeller_grades",
    "labeller_progress",
    "labeller_qrels_text",
    "next_position",
    "own_grades",
    "pair_view",
    "progress",
    "record_grade",
]

MAX_NOTE = 2000
MAX_TIME_MS = 24 * 3600 * 1000


class NotAssigned(ValidationError):
    """The labeller has no pair at that position (not theirs, or out of range)."""


# the labeller's side


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

    The grade must be on the rubric's scale, or ``None`` with ``unsure`` set; a note is at most
    :data:`MAX_NOTE` characters. Every caller (the app, scripts) goes through these checks.
    """
    if grade is None:
        if not unsure:
            raise ValidationError("give a grade, or mark the pair unsure", fix="pass a grade or unsure=True")
    else:
        rubric.check_grade(grade)
    if note is not None and len(note) > MAX_NOTE:
        raise ValidationError(f"a note is at most {MAX_NOTE} characters", got=len(note))
    row = conn.execute(
        "SELECT pair_id FROM assignments WHERE user_id = ? AND position = ?", (user_id, position)
    ).fetchone()
    if row is None:
        raise NotAssigned("no pair at this position for this labeller", got=position)
    cur = conn.execute(
        "INSERT INTO grade_events (user_id, pair_id, grade, unsure, note, rubric_hash, time_spent_ms, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, row[0], grade, int(unsure), note or None, rubric.content_hash, time_spent_ms, now()),
    )
    return {
        "event_id": int(cur.lastrowid or 0),
        "position": position,
        "next": next_position(conn, user_id, position),
    }


def labeller_progress(conn: sqlite3.Connection, user_id: int) -> dict[str, int]:
    total, done = conn.execute(
        "SELECT COUNT(*), COUNT(e.pair_id) FROM assignments a LEFT JOIN "
        "(SELECT DISTINCT user_id, pair_id FROM grade_events WHERE user_id = ?) e USING (user_id, pair_id) "
        "WHERE a.user_id = ?",
        (user_id, user_id),
    ).fetchone()
    return {"total": int(total), "done": int(done)}


def next_position(conn: sqlite3.Connection, user_id: int, after: int = -1) -> int | None:
    """The first position after ``after`` not yet graded, else the first anywhere; ``None`` when all done."""
    sql = (
        "SELECT MIN(a.position) FROM assignments a WHERE a.user_id = ? AND a.position > ? AND NOT EXISTS "
        "(SELECT 1 FROM grade_events e WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id)"
    )
    pos = conn.execute(sql, (user_id, after)).fetchone()[0]
    if pos is None and after >= 0:
        pos = conn.execute(sql, (user_id, -1)).fetchone()[0]
    return None if pos is None else int(pos)


def pair_view(conn: sqlite3.Connection, user_id: int, position: int) -> dict[str, Any] | None:
    """What the labeller sees at ``position``: the query, the document and their own current grade."""
    row = conn.execute(
        "SELECT a.position, q.text AS query, d.doc_id, d.title, d.text "
        "FROM assignments a JOIN pairs p USING (pair_id) JOIN queries q USING (query_id) "
        "JOIN docs d ON d.doc_id = p.doc_id WHERE a.user_id = ? AND a.position = ?",
        (user_id, position),
    ).fetchone()
    if row is None:
        return None
    mine = conn.execute(
        "SELECT e.grade, e.unsure, e.note FROM grade_events e JOIN assignments a USING (user_id, pair_id) "
        "WHERE a.user_id = ? AND a.position = ? ORDER BY e.event_id DESC LIMIT 1",
        (user_id, position),
    ).fetchone()
    view = dict(row)
    view["grade"] = None if mine is None else mine["grade"]
    view["unsure"] = bool(mine and mine["unsure"])
    view["note"] = None if mine is None else mine["note"]
    view["graded"] = mine is not None
    return view


def own_grades(conn: sqlite3.Connection, user_id: int) -> list[dict[str, Any]]:
    """The labeller's current grades, by position (their own, and nothing about the pool)."""
    rows = conn.execute(
        "SELECT a.position, p.query_id, p.doc_id, c.grade, c.unsure, c.note, c.created_at "
        "FROM current_grades c JOIN assignments a USING (user_id, pair_id) JOIN pairs p USING (pair_id) "
        "WHERE c.user_id = ? ORDER BY a.position",
        (user_id,),
    )
    return [dict(r) | {"unsure": bool(r["unsure"])} for r in rows]


# the admin's side


def progress(conn: sqlite3.Connection) -> dict[str, Any]:
    """Progress per labeller and per query."""
    labellers = [
        dict(r)
        for r in conn.execute(
            "SELECT u.name, COUNT(a.pair_id) AS assigned, COUNT(c.pair_id) AS done, "
            "COALESCE(SUM(c.unsure), 0) AS unsure, "
            "COALESCE(SUM(p.calibration), 0) AS calibration_assigned, "
            "COALESCE(SUM(p.calibration AND c.pair_id IS NOT NULL), 0) AS calibration_done "
            "FROM users u JOIN assignments a USING (user_id) JOIN pairs p USING (pair_id) "
            "LEFT JOIN current_grades c ON c.user_id = a.user_id AND c.pair_id = a.pair_id "
            "WHERE u.role = 'labeller' GROUP BY u.user_id ORDER BY u.name"
        )
    ]
    for r in conn.execute("SELECT name FROM users WHERE role = 'labeller' ORDER BY name"):
        if r[0] not in {x["name"] for x in labellers}:
            labellers.append({"name": r[0], "assigned": 0, "done": 0, "unsure": 0,
                              "calibration_assigned": 0, "calibration_done": 0})  # fmt: skip
    queries = [
        dict(r)
        for r in conn.execute(
            "SELECT p.query_id, q.text, MAX(p.calibration) AS calibration, COUNT(DISTINCT p.pair_id) AS pairs, "
            "COUNT(a.user_id) AS assigned, COUNT(c.pair_id) AS done, "
            "GROUP_CONCAT(DISTINCT u.name) AS labellers "
            "FROM pairs p JOIN queries q USING (query_id) "
            "LEFT JOIN assignments a USING (pair_id) LEFT JOIN users u ON u.user_id = a.user_id "
            "LEFT JOIN current_grades c ON c.user_id = a.user_id AND c.pair_id = a.pair_id "
            "GROUP BY p.query_id ORDER BY p.query_id"
        )
    ]
    events = conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]
    return {"labellers": labellers, "queries": queries, "events": int(events)}


def labeller_grades(conn: sqlite3.Connection, name: str, *, calibration_only: bool = False) -> dict:
    """``{(query_id, doc_id): grade}`` of a labeller's current, non-empty grades."""
    sql = (
        "SELECT p.query_id, p.doc_id, c.grade FROM current_grades c JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) WHERE u.name = ? AND c.grade IS NOT NULL"
    )
    if calibration_only:
        sql += " AND p.calibration = 1"
    return {(q, d): int(g) for q, d, g in conn.execute(sql, (name,))}


@dataclass(frozen=True)
class Calibration:
    """The calibration state of two labellers who share calibration pairs."""

    labeller_a: str
    labeller_b: str
    shared: int
    done_a: int
    done_b: int
    report: Any = None  # AgreementReport once both finished
    gate: Any = None  # GateResult once both finished
    agreement: Any = None  # the adjudication.Calibration they come from

    @property
    def finished(self) -> bool:
        return self.shared > 0 and self.done_a == self.shared and self.done_b == self.shared

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "labellers": [self.labeller_a, self.labeller_b],
            "shared_pairs": self.shared,
            "done": {self.labeller_a: self.done_a, self.labeller_b: self.done_b},
            "finished": self.finished,
        }
        if self.report is not None:
            k = self.report.kappa
            out["kappa"] = _num(k.kappa)
            out["ci"] = [_num(k.ci_low), _num(k.ci_high)]
            out["level"] = k.level
            out["bootstrap_ci"] = [_num(self.report.bootstrap.low), _num(self.report.bootstrap.high)]
            out["bootstrap_resamples"] = self.report.bootstrap.n_resamples
            out["bootstrap_seed"] = self.report.bootstrap.seed
            out["n_pairs"] = k.n
            out["weights"] = k.weights
            out["scale"] = list(k.scale)
            out["exact_agreement"] = _num(k.exact_agreement)
            out["gate"] = {"passed": self.gate.passed, "threshold": self.gate.threshold,
                           "message": self.gate.message}  # fmt: skip
        return out


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def calibration_status(store: Store, rubric: Rubric) -> list[Calibration]:
    """For each two labellers sharing calibration pairs: progress, and kappa with gate once both are done.

    Kappa, its intervals and the gate come from :func:`qrelkit.adjudication.calibration_agreement` (the
    same numbers ``qrelkit agree`` gives for the two labellers' exported calibration grades): linear
    weights over the rubric's full scale, on the pairs both graded (an "unsure" without a grade takes no
    part), the gate on the lower end of the 95% interval against the project's ``min_kappa``.
    """
    from qrelkit.adjudication import calibration_agreement

    def load(conn: sqlite3.Connection) -> tuple[list[Calibration], dict[str, dict]]:
        rows = conn.execute(
            "SELECT a.pair_id, u.name, c.pair_id IS NOT NULL AS done FROM assignments a "
            "JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "LEFT JOIN current_grades c ON c.user_id = a.user_id AND c.pair_id = a.pair_id "
            "WHERE p.calibration = 1"
        ).fetchall()
        by_pair: dict[int, dict[str, bool]] = {}
        for pair_id, name, done in rows:
            by_pair.setdefault(pair_id, {})[name] = bool(done)
        duos: dict[tuple[str, str], list[int]] = {}
        for pair_id, who in by_pair.items():
            for a, b in combinations(sorted(who), 2):
                duos.setdefault((a, b), []).append(pair_id)
        states = []
        grades = {}
        for (a, b), ids in sorted(duos.items()):
            done_a = sum(by_pair[p][a] for p in ids)
            done_b = sum(by_pair[p][b] for p in ids)
            states.append(Calibration(a, b, len(ids), done_a, done_b))
            for name in (a, b):
                if name not in grades:
                    grades[name] = labeller_grades(conn, name, calibration_only=True)
        return states, grades

    states, grades = store.read(load)
    out = []
    min_kappa = float(store.meta("min_kappa", "0.6") or 0.6)
    for s in states:
        if s.finished:
            a, b = s.labeller_a, s.labeller_b
            found = calibration_agreement(
                grades[a], grades[b], rubric.scale, min_kappa=min_kappa, labellers=(a, b)
            )
            s = Calibration(a, b, s.shared, s.done_a, s.done_b, found.report, found.gate, found)
        out.append(s)
    return out


def _leverage_function() -> Any:
    try:
        from qrelkit.leverage import disagreement_leverage
    except ImportError:
        return None
    return disagreement_leverage


def adjudication_queue(store: Store, rubric: Rubric) -> dict[str, Any]:
    """Pairs graded differently (or marked unsure) by their labellers and not yet adjudicated.

    Ordered by judgment leverage (how far the disagreement can move nDCG@10 of the stored runs) when the
    project has runs and :mod:`qrelkit.leverage` is available, else by grade distance. Unsure pairs sort
    as the widest disagreement on the scale.
    """

    def load(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], bool]:
        rows = conn.execute(
            "SELECT p.pair_id, p.query_id, p.doc_id, p.calibration, u.name, c.grade, c.unsure, c.note "
            "FROM current_grades c JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "WHERE p.pair_id NOT IN (SELECT pair_id FROM adjudications) ORDER BY p.pair_id, u.name"
        ).fetchall()
        has_runs = conn.execute("SELECT EXISTS (SELECT 1 FROM run_rows)").fetchone()[0]
        return [dict(r) for r in rows], bool(has_runs)

    rows, has_runs = store.read(load)
    by_pair: dict[int, dict[str, Any]] = {}
    for r in rows:
        item = by_pair.setdefault(
            r["pair_id"],
            {"query_id": r["query_id"], "doc_id": r["doc_id"], "calibration": bool(r["calibration"]),
             "grades": {}, "unsure": [], "notes": {}},
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
            method = _apply_leverage(store, queue, leverage) or method
        except QrelkitError as exc:  # e.g. runs that share no query with the disputed pairs
            method = f"grade distance (leverage unavailable: {exc.problem})"
    if method == "leverage":
        queue.sort(key=lambda i: (-(i["leverage"] or 0.0), -i["distance"], i["query_id"], i["doc_id"]))
    else:
        queue.sort(key=lambda i: (-i["distance"], i["query_id"], i["doc_id"]))
    return {"method": method, "items": queue}


def _apply_leverage(store: Store, queue: list[dict[str, Any]], leverage: Any) -> str | None:
    """Fill ``leverage`` from qrelkit.leverage for pairs with two grades; ``"leverage"`` on success.

    Both sides share every settled grade (adjudicated, agreed, single labeller), so a pair's leverage is
    measured in the context of the rest of the judgments; they differ only on the disputed pairs, where
    side A takes the grade of the first labeller by name and side B the second's.
    """
    import polars as pl

    from qrelkit.formats import run_from_frame

    settled, _ = final_grades(store)
    side_a, side_b = dict(settled), dict(settled)
    for item in queue:
        given = [v for _, v in sorted(item["grades"].items()) if v is not None]
        if len(given) >= 2:
            side_a[item["query_id"], item["doc_id"]] = given[0]
            side_b[item["query_id"], item["doc_id"]] = given[1]
    if side_a == side_b:
        return None
    runs_rows = store.read(
        lambda c: c.execute("SELECT run, query_id, doc_id, score FROM run_rows").fetchall()
    )
    runs: dict[str, list[tuple[str, str, float]]] = {}
    for run, q, d, s in runs_rows:
        runs.setdefault(run, []).append((q, d, s))
    run_values = [
        run_from_frame(pl.DataFrame(v, schema=["query_id", "doc_id", "score"], orient="row"), name=k)
        for k, v in sorted(runs.items())
    ]
    table = leverage(_qrels(side_a, "a"), _qrels(side_b, "b"), run_values, k=10)
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
    ``allow_override``: the rule is :func:`qrelkit.adjudication.check_decision`, as for the file-based
    merge; the export counts every override in the manifest.
    """
    from qrelkit.adjudication import check_decision

    rubric.check_grade(grade)
    if note is not None and len(note) > MAX_NOTE:
        raise ValidationError(f"a note is at most {MAX_NOTE} characters", got=len(note))

    def write(conn: sqlite3.Connection) -> int:
        pair = conn.execute(
            "SELECT pair_id FROM pairs WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
        ).fetchone()
        if pair is None:
            docs = [r[0] for r in conn.execute("SELECT doc_id FROM pairs WHERE query_id = ?", (query_id,))]
            raise ValidationError(
                f"pair ({query_id}, {doc_id}) is not in this project's pool{did_you_mean(doc_id, docs)}"
            )
        check_decision((query_id, doc_id), _pair_votes(conn, pair[0]), allow_override=allow_override)
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

    return store.write(write)


def _pair_votes(conn: sqlite3.Connection, pair_id: int) -> list[Any]:
    from qrelkit.adjudication import Vote

    rows = conn.execute(
        "SELECT u.name, c.grade, c.unsure FROM current_grades c JOIN users u USING (user_id) WHERE c.pair_id = ?",
        (pair_id,),
    )
    return [Vote(name, grade, bool(unsure)) for name, grade, unsure in rows]


def final_grades(
    store: Store, *, undecided: str = "leave-out"
) -> tuple[dict[tuple[str, str], int], dict[str, Any]]:
    """The final grade of every pair that has one, and counts of how each was decided.

    The merge is :func:`qrelkit.adjudication.merge` over every pair of the pool: a pair's final grade is
    its latest adjudication; without one, the grade its labellers agree on (one labeller's grade when
    only one judged it). Disputed pairs without a decision follow ``undecided``: ``leave-out`` here (the
    adjudication queue and the leverage context need the settled grades while work goes on); the export
    refuses by default. Adjudications recorded with an override were allowed when recorded.
    """
    from qrelkit.adjudication import Vote, merge

    def load(conn: sqlite3.Connection) -> tuple[list, list, list, int]:
        pairs = conn.execute("SELECT query_id, doc_id FROM pairs").fetchall()
        adj = conn.execute(
            "SELECT p.query_id, p.doc_id, a.grade FROM current_adjudications a JOIN pairs p USING (pair_id)"
        ).fetchall()
        cur = conn.execute(
            "SELECT p.query_id, p.doc_id, u.name, c.grade, c.unsure FROM current_grades c "
            "JOIN pairs p USING (pair_id) JOIN users u USING (user_id)"
        ).fetchall()
        prejudged = conn.execute("SELECT COUNT(*) FROM prejudged").fetchone()[0]
        return pairs, adj, cur, int(prejudged)

    pairs, adj, cur, prejudged = store.read(load)
    votes: dict[tuple[str, str], list[Vote]] = {(q, d): [] for q, d in pairs}
    for q, d, name, g, unsure in cur:
        votes[q, d].append(Vote(name, None if g is None else int(g), bool(unsure)))
    merged = merge(votes, {(q, d): int(g) for q, d, g in adj}, undecided=undecided, allow_override=True)
    counts = {**merged.counts, "pairs": len(pairs), "judged_before_pooling_left_out": prejudged}
    return merged.grades, counts


def labeller_qrels_text(store: Store, name: str) -> str:
    """One labeller's current grades as TREC qrels text; unsure pairs without a grade are left out. An
    unknown ``name`` is a ``ValidationError`` with a "did you mean"."""
    from qrelkit.formats import qrels_text

    from .project import find_user

    user = find_user(store, name)
    grades = store.read(lambda c: labeller_grades(c, user["name"]))
    return qrels_text(_qrels(grades, f"{name}.qrels"))


def export_labeller(store: Store, name: str, path: str | Path) -> dict[str, Any]:
    """Write one labeller's current grades as TREC qrels (:func:`labeller_qrels_text`)."""
    import hashlib

    text = labeller_qrels_text(store, name)
    Path(path).write_bytes(text.encode("utf-8"))
    judgments = text.count("\n")
    return {
        "path": str(path),
        "labeller": name,
        "judgments": judgments,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }


def final_qrels_text(
    store: Store,
    rubric: Rubric,
    *,
    name: str = "final.qrels",
    relevance_threshold: int = 1,
    undecided: str = "refuse",
) -> tuple[str, str, dict[str, Any]]:
    """The final qrels and their manifest as text, and the counts of how each grade was decided.

    Disputed pairs without a decision make this refuse (naming them) unless ``undecided="leave-out"``,
    which leaves them out and records how many. The manifest records the rubric, its scale, the
    labellers, the calibration kappa and gate (of the first two labellers who finished the calibration
    sample), and how each final grade was decided (:mod:`qrelkit.adjudication`).
    """
    from qrelkit.adjudication import calibration_fields
    from qrelkit.manifest import qrels_with_manifest_text

    grades, counts = final_grades(store, undecided=undecided)
    calibration = next(
        (s.agreement for s in calibration_status(store, rubric) if s.agreement is not None), None
    )
    labellers = store.read(
        lambda c: [r[0] for r in c.execute("SELECT name FROM users WHERE role='labeller'")]
    )
    fields = {
        "rubric": {"name": rubric.name, "version": rubric.version, "content_hash": rubric.content_hash},
        "scale": list(rubric.scale),
        "relevance_threshold": relevance_threshold,
        "labellers": sorted(labellers),
        "calibration": calibration_fields(calibration),
        "adjudication": {k: v for k, v in counts.items() if k != "pairs"},
    }
    qrels, manifest = qrels_with_manifest_text(_qrels(grades, name), name, fields)
    return qrels, manifest, counts


def export_final(
    store: Store,
    rubric: Rubric,
    path: str | Path,
    *,
    relevance_threshold: int = 1,
    undecided: str = "refuse",
) -> dict[str, Any]:
    """Write the final qrels and their manifest beside them (:func:`final_qrels_text`)."""
    from qrelkit.manifest import manifest_path

    path = Path(path)
    qrels, manifest, counts = final_qrels_text(
        store, rubric, name=path.name, relevance_threshold=relevance_threshold, undecided=undecided
    )
    path.write_bytes(qrels.encode("utf-8"))
    manifest_path(path).write_bytes(manifest.encode("utf-8"))
    judgments = counts["total"]
    return {"path": str(path), "manifest": str(manifest_path(path)), "judgments": judgments, "counts": counts}


def _qrels(grades: dict[tuple[str, str], int], name: str) -> Any:
    from qrelkit.data import Qrels

    return Qrels.from_dict(_nested(grades), name=name)


def _nested(grades: dict[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (q, d), grade in sorted(grades.items()):
        out.setdefault(q, {})[d] = grade
    return out
