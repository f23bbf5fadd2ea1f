"""Phases of a judging project: calibration rounds, the gate, the rubric revision loop and the override.

The order of work: write the rubric, measure agreement on the calibration sample, and only then judge
the rest. The store enforces it, for the app and the commands alike.

Rounds
    A project starts in round 1 under the rubric given to ``judge init``. Each round has one rubric
    version (its content hash; no two rounds share one) and its own calibration pairs, each given to the
    project's number of labellers, two by default (:func:`qrelkit.pool.plan_assignments` picks them). Every grade event carries the hash
    of the rubric it was given under, so a round's grades are exactly the events under its rubric.
Phase (:func:`phase_of`), from the latest round and the latest gate event of that round
    ``calibration``: no gate event yet. A labeller sees only their calibration pairs of the round.
    ``paused``: the gate failed, or agreement could not be measured (:class:`Unmeasurable`). A labeller
    sees no pair: judging waits for a rubric revision (or an override).
    ``open``: the gate passed, the admin overrode a failed gate with a written reason, or the project
    was made with ``--no-calibration`` (agreement not measured). A labeller sees every pair assigned to
    them; "graded" always means graded under the current rubric.
The gate (:func:`ensure_gate`)
    Evaluated once, when every calibration pair of the round has a current grade (or "unsure") from all
    of its labellers (two by default; ``judge init --calibration-labellers N``). With the statistic
    ``kappa`` (the default for two labellers per pair): for each two labellers sharing calibration pairs,
    Cohen's kappa with the weights the project chose, on the pairs both graded, compared by the lower end
    of the interval the project chose (normal or query bootstrap) with ``min_kappa``
    (:func:`qrelkit.judgments.adjudication.calibration_agreement`); the round passes when every such pair of
    labellers passes: a rubric two of the labellers cannot apply alike is not ready, whoever they are.
    With a group statistic (``mean_kappa``, the default for more than two labellers per pair,
    ``alpha_interval``, ``alpha_ordinal``, ``fleiss``): the statistic over every labeller of the round
    (:func:`round_group`, :func:`qrelkit.judgments.adjudication.group_calibration`), the lower end of its query
    bootstrap against ``min_kappa``. Both are recorded either way (the pairs and the group).
    The gate is *not measurable* when the number it compares is undefined: no calibration pair graded
    by two labellers (one marked every pair "unsure"), every grade the same (kappa undefined), a round
    with one labeller (:func:`unmeasurable`). That is its own outcome, ``unmeasurable``, recorded with the
    reason ("alice graded 0 of 69 calibration pairs; bob 69"); judging pauses as after a failed gate,
    and the admin revises the rubric or overrides with a reason.
    The verdict is recorded with the last grade event it read, so the round's kappa can be recomputed
    from the history exactly as it was when the gate was decided; later changes to a calibration grade
    (allowed once judging is open) reach the final qrels, not the round's kappa.
The revision loop (:func:`revise`)
    Records a new rubric version (its lint must pass, its content and version string must be new) and
    starts the next round: fresh calibration queries drawn by :func:`qrelkit.pool.draw_calibration` from
    the queries no earlier round used, with the seed :func:`round_seed` derives from the project seed and
    the round number; or, with ``same_queries``, the previous round's pairs and labellers. Earlier rounds'
    grades, kappa and verdict stay as history.
The override (:func:`override_gate`)
    Only after a failed or not measurable gate, only with a written reason; who and when are recorded, and the manifest of
    every export (and so every result computed from it) carries them.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from qrelkit.errors import ValidationError
from qrelkit.rubric import Rubric

from .store import Store, StoreError, now

__all__ = [
    "Phase",
    "PhaseState",
    "Unmeasurable",
    "calibration_sample",
    "ensure_gate",
    "labeller_order",
    "open_condition",
    "override_gate",
    "override_reason",
    "phase_of",
    "reassign",
    "revise",
    "round_agreement",
    "round_complete",
    "round_group",
    "round_seed",
    "rounds_history",
    "rubric_by_hash",
    "seeded_rng",
    "start_first_round",
    "unmeasurable",
    "verdict_event",
    "waiting_for_gate",
]

PhaseState = Literal["calibration", "paused", "open"]
MAX_REASON = 2000


@dataclass(frozen=True)
class Phase:
    """Where the project stands: the current round, its rubric, the state and the gate's last word."""

    round: int
    rubric_hash: str
    state: PhaseState
    outcome: str | None  # passed, failed, unmeasurable, override, not-measured; None while the round measures
    reason: str | None = None  # why the gate is not measurable (or why agreement was not measured)

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "rubric_hash": self.rubric_hash, "state": self.state,
                "outcome": self.outcome, "reason": self.reason}  # fmt: skip

    @property
    def unmeasurable(self) -> bool:
        return self.outcome == "unmeasurable"


@dataclass(frozen=True)
class Unmeasurable:
    """The gate's third verdict: the round's agreement cannot be measured, and why.

    ``graded`` and ``assigned``: per labeller of the round, the calibration pairs they graded (an
    "unsure" without a grade is not a grade) and the pairs they were given. ``reason`` is the one line
    every page and command shows.
    """

    reason: str
    graded: dict[str, int]
    assigned: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "graded": dict(self.graded), "assigned": dict(self.assigned)}


def seeded_rng(seed: int | str, name: str) -> random.Random:
    """The generator of the shuffles drawn for ``name`` under the project seed ``seed``: Python's
    ``random.Random`` seeded with the SHA-256 digest of ``"{seed}:{name}"`` (fixed for a name, different
    between names, the same on any machine)."""
    return random.Random(hashlib.sha256(f"{seed}:{name}".encode()).digest())


def labeller_order(queries: Mapping[int, str], calibration: set[int], seed: int, name: str) -> list[int]:
    """A labeller's order of their pairs (``queries``: pair id -> query id), the one rule every caller uses.

    Calibration pairs first, then the rest. Within each part the pairs of one query come together, so
    the labeller reads a query once and then its documents: the queries in a shuffled order, and the
    documents of each query shuffled. One generator, seeded from the project seed and the labeller's
    name, draws both (fixed for a labeller, different between labellers: two labellers sharing a
    calibration query meet it at different places in their lists, its documents in different orders).
    The shuffles run over sorted ids, so the same project seed gives the same order on any machine.
    """
    rng = seeded_rng(seed, name)
    order: list[int] = []
    for part in (True, False):
        by_query: dict[str, list[int]] = {}
        for pair_id in sorted(p for p in queries if (p in calibration) == part):
            by_query.setdefault(queries[pair_id], []).append(pair_id)
        names = sorted(by_query)
        rng.shuffle(names)
        for query in names:
            pairs = by_query[query]
            rng.shuffle(pairs)
            order += pairs
    return order


def phase_of(conn: sqlite3.Connection) -> Phase:
    """The project's phase, read in one statement (cheap: every labeller request reads it)."""
    row = conn.execute(
        "SELECT r.round, r.rubric_hash, g.outcome, g.reason FROM rounds r LEFT JOIN gate_events g ON "
        "g.event_id = (SELECT MAX(e.event_id) FROM gate_events e WHERE e.round = r.round) "
        "ORDER BY r.round DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise StoreError(
            "the project database has no calibration round", fix="create it with `qrelkit judge init`"
        )
    outcome = None if row[2] == "reassigned" else row[2]  # pairs given to another labeller: measuring again
    paused = outcome in ("failed", "unmeasurable")
    state: PhaseState = "calibration" if outcome is None else "paused" if paused else "open"
    reason = row[3] if outcome in ("unmeasurable", "not-measured") else None
    return Phase(int(row[0]), str(row[1]), state, outcome, reason)


def open_condition(phase: Phase, alias: str = "a") -> str:
    """SQL condition on an ``assignments`` row ``alias``: is the pair open to its labeller now?"""
    if phase.state == "open":
        return "1"
    if phase.state == "paused":
        return "0"
    return (
        f"EXISTS (SELECT 1 FROM round_pairs rp WHERE rp.round = {int(phase.round)} "
        f"AND rp.user_id = {alias}.user_id AND rp.pair_id = {alias}.pair_id)"
    )


def waiting_for_gate(conn: sqlite3.Connection, phase: Phase | None = None) -> set[int]:
    """The pair ids whose final grade waits for the gate: the current round's calibration pairs while
    its gate is not decided (none once it is, or once every pair has its grades: :func:`ensure_gate`
    records the verdict before any decision is written). The queue shows them without grade buttons and a decision
    on one is refused: the gate measures the labellers' own grades, and a decision made before it would
    be made blind to it."""
    phase = phase or phase_of(conn)
    if phase.state != "calibration" or round_complete(conn, phase.round):  # complete: decided on next write
        return set()
    rows = conn.execute("SELECT DISTINCT pair_id FROM round_pairs WHERE round = ?", (phase.round,))
    return {int(r[0]) for r in rows}


def verdict_event(conn: sqlite3.Connection, round_number: int) -> sqlite3.Row | None:
    """The round's gate verdict in force (passed, failed, unmeasurable): the latest, unless its calibration
    pairs were reassigned since (the round then measures again); ``None`` while it measures."""
    row = conn.execute(
        "SELECT * FROM gate_events WHERE round = ? AND outcome IN ('passed', 'failed', 'unmeasurable', "
        "'reassigned') ORDER BY event_id DESC LIMIT 1",
        (round_number,),
    ).fetchone()
    return None if row is None or row["outcome"] == "reassigned" else row


def round_seed(project_seed: int, round_number: int) -> int:
    """The seed of round ``round_number``'s draw: the project seed for round 1, else the first 8 hex
    digits of SHA-256 of ``"{project_seed}:round {round_number}"``."""
    if round_number == 1:
        return int(project_seed)
    return int(hashlib.sha256(f"{project_seed}:round {round_number}".encode()).hexdigest()[:8], 16)


def rubric_by_hash(conn: sqlite3.Connection, rubric_hash: str) -> Rubric:
    row = conn.execute("SELECT body FROM rubrics WHERE rubric_hash = ?", (rubric_hash,)).fetchone()
    if row is None:
        raise StoreError(f"no rubric with hash {rubric_hash[:12]}... in this project")
    return Rubric.from_dict(json.loads(row[0]), source=f"rubric {rubric_hash[:12]} of the project")


def start_first_round(
    conn: sqlite3.Connection, rubric: Rubric, seed: int, admin: str, pairs: Sequence[tuple[int, int]]
) -> None:
    """Round 1 of a new project (in ``init_project``'s transaction): ``pairs`` are (user_id, pair_id) of
    the calibration assignments; none means the project judges without measuring agreement."""
    created = now()
    conn.execute(
        "INSERT INTO rubrics VALUES (?, ?, ?)",
        (rubric.content_hash, json.dumps(rubric.to_dict(), ensure_ascii=False), created),
    )
    rule = "initial" if pairs else "none"
    conn.execute(
        "INSERT INTO rounds VALUES (1, ?, ?, ?, ?, ?, NULL)",
        (rubric.content_hash, rule, seed, created, admin),
    )
    conn.executemany("INSERT INTO round_pairs VALUES (1, ?, ?)", list(pairs))
    if not pairs:
        conn.execute(
            "INSERT INTO gate_events (round, outcome, reason, decided_by, created_at) VALUES (1, 'not-measured', "
            "'judge init --no-calibration: agreement not measured', ?, ?)",
            (admin, created),
        )


# -- the round's grades and agreement --------------------------------------------------------------------


def _round_rows(conn: sqlite3.Connection, round_number: int, upto: int | None) -> list[tuple[Any, ...]]:
    """(pair_id, query_id, doc_id, name, grade, unsure, done) for every calibration assignment of the round,
    with the labeller's latest event under the round's rubric (up to event ``upto``)."""
    limit = "" if upto is None else f" AND e.event_id <= {int(upto)}"
    return conn.execute(
        "SELECT rp.pair_id, p.query_id, p.doc_id, u.name, c.grade, c.unsure, c.event_id IS NOT NULL "
        "FROM round_pairs rp JOIN rounds r USING (round) JOIN pairs p ON p.pair_id = rp.pair_id "
        "JOIN users u ON u.user_id = rp.user_id LEFT JOIN grade_events c ON c.event_id = ("
        "SELECT MAX(e.event_id) FROM grade_events e WHERE e.user_id = rp.user_id AND e.pair_id = rp.pair_id "
        f"AND e.rubric_hash = r.rubric_hash{limit}) WHERE rp.round = ?",
        (round_number,),
    ).fetchall()


def round_complete(conn: sqlite3.Connection, round_number: int) -> bool:
    """Every calibration pair of the round has a current event from both its labellers (and there are some)."""
    total, done = conn.execute(
        "SELECT COUNT(*), SUM(EXISTS (SELECT 1 FROM grade_events e WHERE e.user_id = rp.user_id "
        "AND e.pair_id = rp.pair_id AND e.rubric_hash = r.rubric_hash)) FROM round_pairs rp JOIN rounds r "
        "USING (round) WHERE rp.round = ?",
        (round_number,),
    ).fetchone()
    return bool(total) and total == done


def _settings(conn: sqlite3.Connection) -> dict[str, Any]:
    meta = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('min_kappa', 'kappa_weights', 'gate_use', 'gate_statistic')"
        )
    )
    return {
        "min_kappa": float(meta.get("min_kappa", 0.6)),
        "weights": meta.get("kappa_weights", "linear"),
        "use": meta.get("gate_use", "ci_low"),
        "statistic": meta.get("gate_statistic", "kappa"),
    }


def round_group(conn: sqlite3.Connection, round_number: int, *, upto: int | None = None) -> Any:
    """The agreement of every labeller of the round on its calibration pairs, with the gate on the
    project's statistic (:func:`qrelkit.judgments.adjudication.group_calibration`); ``None`` until every calibration
    pair of the round has its grades (or "unsure") from all its labellers, or with fewer than two labellers."""
    from qrelkit.judgments.adjudication import group_calibration

    rows = _round_rows(conn, round_number, upto)
    if not rows or not all(row[6] for row in rows):
        return None
    grades: dict[str, dict[tuple[str, str], int]] = {}
    for _, q, d, name, grade, _, _ in rows:
        grades.setdefault(name, {})
        if grade is not None:
            grades[name][q, d] = int(grade)
    if len(grades) < 2:
        return None
    rubric_hash = conn.execute("SELECT rubric_hash FROM rounds WHERE round = ?", (round_number,)).fetchone()[
        0
    ]
    scale = rubric_by_hash(conn, rubric_hash).scale
    settings = _settings(conn)
    return group_calibration(dict(sorted(grades.items())), scale, statistic=settings["statistic"],
                             min_kappa=settings["min_kappa"], weights=settings["weights"], use=settings["use"])  # fmt: skip


@dataclass(frozen=True)
class DuoState:
    """Two labellers sharing calibration pairs in a round: progress, and their agreement once both finished."""

    labeller_a: str
    labeller_b: str
    shared: int
    done_a: int
    done_b: int
    grades_a: dict[tuple[str, str], int]
    grades_b: dict[tuple[str, str], int]
    agreement: Any = None  # qrelkit.judgments.adjudication.Calibration once both finished
    queries: int = 0  # the queries their shared pairs lie in

    @property
    def finished(self) -> bool:
        return self.shared > 0 and self.done_a == self.shared and self.done_b == self.shared

    @property
    def warning(self) -> str | None:
        """Too few shared queries for their gate to mean much
        (:func:`qrelkit.judgments.adjudication.few_shared_queries`), or ``None``."""
        from qrelkit.judgments.adjudication import few_shared_queries

        return few_shared_queries((self.labeller_a, self.labeller_b), self.queries)


def round_agreement(
    conn: sqlite3.Connection, round_number: int, *, upto: int | None = None, compute: bool = True
) -> list[DuoState]:
    """Each two labellers sharing calibration pairs in the round, with kappa and gate once both finished."""
    from qrelkit.judgments.adjudication import calibration_agreement

    rows = _round_rows(conn, round_number, upto)
    by_pair: dict[int, dict[str, tuple[Any, ...]]] = {}
    for row in rows:
        by_pair.setdefault(row[0], {})[row[3]] = row
    duos: dict[tuple[str, str], list[int]] = {}
    for pair_id, who in by_pair.items():
        for a, b in combinations(sorted(who), 2):
            duos.setdefault((a, b), []).append(pair_id)
    rubric_hash = conn.execute("SELECT rubric_hash FROM rounds WHERE round = ?", (round_number,)).fetchone()[
        0
    ]
    scale = rubric_by_hash(conn, rubric_hash).scale
    settings = _settings(conn)
    states = []
    for (a, b), ids in sorted(duos.items()):
        grades = []
        for name in (a, b):
            grades.append({(by_pair[p][name][1], by_pair[p][name][2]): int(by_pair[p][name][4]) for p in ids
                           if by_pair[p][name][4] is not None})  # fmt: skip
        done_a = sum(bool(by_pair[p][a][6]) for p in ids)
        done_b = sum(bool(by_pair[p][b][6]) for p in ids)
        queries = len({by_pair[p][a][1] for p in ids})
        state = DuoState(a, b, len(ids), done_a, done_b, grades[0], grades[1], queries=queries)
        if compute and state.finished:
            found = calibration_agreement(grades[0], grades[1], scale, min_kappa=settings["min_kappa"],
                                          labellers=(a, b), weights=settings["weights"], use=settings["use"])  # fmt: skip
            state = DuoState(a, b, len(ids), done_a, done_b, grades[0], grades[1], found, queries)
        states.append(state)
    return states


def _counts_line(graded: Mapping[str, int], assigned: Mapping[str, int]) -> str:
    """``alice graded 0 of 69 calibration pairs; bob 69`` (``of n`` repeated only where n differs)."""
    names = sorted(assigned)
    if not names:
        return "no labeller has calibration pairs"
    first = names[0]
    parts = [f"{first} graded {graded.get(first, 0)} of {assigned[first]} calibration pairs"]
    for name in names[1:]:
        of = "" if assigned[name] == assigned[first] else f" of {assigned[name]}"
        parts.append(f"{name} {graded.get(name, 0)}{of}")
    return "; ".join(parts)


def _undefined(value: float | None) -> bool:
    return value is None or value != value


def unmeasurable(
    rows: Sequence[tuple[Any, ...]], states: Sequence[DuoState], group: Any, statistic: str
) -> Unmeasurable | None:
    """Whether the round's gate cannot be measured (the one rule), and why; ``None`` when it can.

    ``rows`` are the round's calibration assignments with their grades (:func:`_round_rows`), ``states``
    and ``group`` its agreement (:func:`round_agreement`, :func:`round_group`). Not measurable: fewer
    than two labellers; no pair graded by two of them; or the number the gate compares undefined (with
    the statistic ``kappa``: for some two labellers, while none of the defined ones fails); or a labeller
    who graded none of their pairs (whose agreement with the others was never measured).
    """
    assigned: dict[str, int] = {}
    graded: dict[str, int] = {}
    for row in rows:
        assigned[row[3]] = assigned.get(row[3], 0) + 1
        graded[row[3]] = graded.get(row[3], 0) + (row[4] is not None)
    counts = _counts_line(graded, assigned)
    if len(assigned) < 2:
        who = ", ".join(sorted(assigned)) or "none"
        why = f"the round has {len(assigned)} labeller ({who}): agreement needs two; {counts}"
        return Unmeasurable(why, graded, assigned)
    per_pair: dict[int, int] = {}
    for row in rows:
        per_pair[row[0]] = per_pair.get(row[0], 0) + (row[4] is not None)
    if max(per_pair.values()) < 2:
        return Unmeasurable(f"no calibration pair was graded by two labellers: {counts}", graded, assigned)
    idle = sorted(name for name in assigned if not graded[name])
    if idle:  # their agreement with the others was never measured, whatever the statistic
        who = " and ".join(idle)
        return Unmeasurable(
            f"{who} graded none of their calibration pairs (all unsure): {counts}", graded, assigned
        )
    if statistic == "kappa":
        defined = [
            s for s in states if s.agreement is not None and not _undefined(s.agreement.gate.value_used)
        ]
        if any(not s.agreement.gate.passed for s in defined):
            return None
        undefined = [s for s in states if s not in defined]
        if not undefined:
            return None
        s = undefined[0]
        note = (
            "not computed"
            if s.agreement is None
            else s.agreement.report.kappa.note or s.agreement.gate.message
        ).split("; threshold")[0]  # the gate's "threshold ...: FAIL" is no verdict here
        return Unmeasurable(f"{s.labeller_a} and {s.labeller_b}: {note}; {counts}", graded, assigned)
    if group is not None and group.gate is not None and not _undefined(group.gate.value_used):
        return None
    message = "undefined" if group is None or group.gate is None else group.gate.message
    message = message.split("; threshold")[0]  # the gate's "threshold ...: FAIL" is no verdict here
    return Unmeasurable(f"{message}; {counts}", graded, assigned)


def _gate_value(state: DuoState) -> float:
    value = state.agreement.gate.value_used
    return -math.inf if value != value else float(value)


def _evaluate(conn: sqlite3.Connection, round_number: int) -> Phase:
    """In the writer: decide the round's gate if it is still undecided and complete; the phase after."""
    from qrelkit.agreement.group import STATISTIC_NAMES
    from qrelkit.judgments.adjudication import calibration_fields, group_calibration_fields

    phase = phase_of(conn)
    if phase.round != round_number or phase.state != "calibration" or not round_complete(conn, round_number):
        return phase
    upto = conn.execute("SELECT MAX(event_id) FROM grade_events").fetchone()[0]
    states = round_agreement(conn, round_number, upto=upto)
    group = round_group(conn, round_number, upto=upto)
    statistic = _settings(conn)["statistic"]
    unmeasured = unmeasurable(_round_rows(conn, round_number, upto), states, group, statistic)
    if statistic == "kappa":
        passed = bool(states) and all(s.agreement.gate.passed for s in states)
        rule = "the round passes when every two labellers sharing calibration pairs pass"
    else:
        passed = group is not None and group.gate is not None and group.gate.passed
        rule = f"the round passes when the lower end of the query-bootstrap interval of {STATISTIC_NAMES[statistic]} "
        rule += "over every labeller of the round reaches the threshold"
    deciding = min(range(len(states)), key=lambda i: _gate_value(states[i])) if states else None
    detail = {
        "rule": rule,
        "statistic": statistic,
        "deciding": deciding,
        "pairs_of_labellers": [calibration_fields(s.agreement) for s in states],
        "group": group_calibration_fields(group),
        "unmeasurable": None if unmeasured is None else unmeasured.to_dict(),
    }
    outcome = "unmeasurable" if unmeasured is not None else "passed" if passed else "failed"
    conn.execute(
        "INSERT INTO gate_events (round, outcome, detail, last_event, reason, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            round_number,
            outcome,
            json.dumps(detail),
            upto,
            None if unmeasured is None else unmeasured.reason,
            now(),
        ),
    )
    return phase_of(conn)


def ensure_gate(store: Store) -> Phase:
    """The phase, after deciding the gate if the round's calibration just became complete.

    Cheap when nothing is to decide (one read, plus a count while the round measures); the decision runs
    once, in the writer, which checks again so that two requests never decide twice.
    """
    phase = store.read(phase_of)
    if phase.state != "calibration" or not store.read(lambda c: round_complete(c, phase.round)):
        return phase
    return store.write(lambda c: _evaluate(c, phase.round))


# -- the revision loop and the override ------------------------------------------------------------------


def revise(
    store: Store,
    rubric_path: str | Path,
    *,
    same_queries: bool = False,
    calibration: int | None = None,
    by: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Record a new rubric version and start the next calibration round (module docstring for the rules).

    ``calibration``: how many fresh queries to draw (default: as many as the previous round had, or
    :data:`qrelkit.pool.DEFAULT_CALIBRATION` if it had none); not with ``same_queries``. Returns a summary
    with the round, the rubric, the queries, the seed and ``notes`` for the caller to print.
    """
    from qrelkit.rubric import load_rubric, refuse_lint_errors

    rubric = load_rubric(rubric_path)
    refuse_lint_errors(rubric, rubric_path)
    if same_queries and calibration is not None:
        raise ValidationError("--same-queries keeps the previous round's queries; drop --calibration")
    if calibration is not None and (
        isinstance(calibration, bool) or not isinstance(calibration, int) or calibration < 1
    ):
        raise ValidationError(
            "a calibration round needs at least one query", got=calibration, fix="e.g. --calibration 30"
        )
    if note is not None and len(note) > MAX_REASON:
        raise ValidationError(f"a note is at most {MAX_REASON} characters", got=len(note))
    return store.write(lambda c: _revise(c, rubric, str(rubric_path), same_queries, calibration, by, note))


def _revise(
    conn: sqlite3.Connection, rubric: Rubric, source: str, same: bool, calibration: int | None,
    by: str | None, note: str | None,
) -> dict[str, Any]:  # fmt: skip
    from qrelkit.pool import (
        DEFAULT_CALIBRATION,
        calibration_notes,
        draw_calibration,
        plan_assignments,
    )

    known = {h: json.loads(b) for h, b in conn.execute("SELECT rubric_hash, body FROM rubrics")}
    if rubric.content_hash in known:
        raise ValidationError(
            "this rubric is one the project has used already (same content hash)",
            source=source,
            fix="revise the rubric's wording, and raise its version",
        )
    versions = {str(body.get("version", "")) for body in known.values()}
    if str(rubric.version) in versions:
        raise ValidationError(
            f"the rubric's version {rubric.version!r} was used by an earlier round with other wording",
            source=source,
            fix="raise the version in the rubric file (e.g. 1.1 or 2.0), so manifests can tell the two apart",
        )
    phase = phase_of(conn)
    number = phase.round + 1
    project_seed = int(conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0])
    seed = round_seed(project_seed, number)
    labellers = [
        r[0] for r in conn.execute("SELECT name FROM users WHERE role = 'labeller' ORDER BY user_id")
    ]
    ids = dict(conn.execute("SELECT name, user_id FROM users"))
    notes: list[str] = []
    previous = conn.execute(
        "SELECT rp.user_id, rp.pair_id, p.query_id FROM round_pairs rp JOIN pairs p USING (pair_id) "
        "WHERE rp.round = ?",
        (phase.round,),
    ).fetchall()
    if same:
        if not previous:
            raise ValidationError(
                f"round {phase.round} had no calibration queries to keep", fix="leave --same-queries out"
            )
        chosen = sorted({q for _, _, q in previous})
        new_pairs = [(u, p) for u, p, _ in previous]
        rule = "same"
    else:
        if len(labellers) < 2:
            raise ValidationError("calibration needs two labellers", got=",".join(labellers))
        used = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT p.query_id FROM round_pairs rp JOIN pairs p USING (pair_id)"
            )
        }
        sizes = dict(conn.execute("SELECT query_id, COUNT(*) FROM pairs GROUP BY query_id"))
        candidates = sorted(q for q in sizes if q not in used)
        if not candidates:
            raise ValidationError(
                "every query with pairs to judge was a calibration query of an earlier round",
                fix="pass --same-queries to measure again on the previous round's queries",
            )
        n = (
            calibration
            if calibration is not None
            else (len({q for _, _, q in previous}) or DEFAULT_CALIBRATION)
        )
        chosen = list(draw_calibration(candidates, n, seed))
        notes += calibration_notes(n, len(candidates))
        per_query = int(dict(conn.execute("SELECT key, value FROM meta")).get("calibration_labellers", 2))
        plan = plan_assignments({q: sizes[q] for q in chosen}, chosen, labellers, per_query)
        pair_rows = conn.execute(
            f"SELECT pair_id, query_id FROM pairs WHERE query_id IN ({','.join('?' * len(chosen))})", chosen
        ).fetchall()
        new_pairs = [(ids[name], pair_id) for pair_id, q in pair_rows for name in plan[q]]
        rule = "drawn"
    created = now()
    conn.execute(
        "INSERT INTO rubrics VALUES (?, ?, ?)",
        (rubric.content_hash, json.dumps(rubric.to_dict(), ensure_ascii=False), created),
    )
    conn.execute(
        "INSERT INTO rounds VALUES (?, ?, ?, ?, ?, ?, ?)",
        (number, rubric.content_hash, rule, seed, created, by, note),
    )
    names = {v: k for k, v in ids.items()}
    query_of = dict(conn.execute("SELECT pair_id, query_id FROM pairs"))
    for user_id in sorted({u for u, _ in new_pairs}):
        have = {r[0] for r in conn.execute("SELECT pair_id FROM assignments WHERE user_id = ?", (user_id,))}
        missing = sorted(p for u, p in new_pairs if u == user_id and p not in have)
        start = conn.execute(
            "SELECT COALESCE(MAX(position), -1) + 1 FROM assignments WHERE user_id = ?", (user_id,)
        ).fetchone()[0]
        order = labeller_order({p: query_of[p] for p in missing}, set(missing), seed, names[user_id])
        conn.executemany(
            "INSERT INTO assignments VALUES (?, ?, ?)", [(user_id, p, start + i) for i, p in enumerate(order)]
        )
    conn.executemany(f"INSERT INTO round_pairs VALUES ({number}, ?, ?)", new_pairs)
    for key, value in (
        ("rubric", json.dumps(rubric.to_dict(), ensure_ascii=False)),
        ("rubric_hash", rubric.content_hash),
    ):
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    return {
        "round": number,
        "rubric": {"name": rubric.name, "version": rubric.version, "content_hash": rubric.content_hash},
        "queries": chosen,
        "query_rule": rule,
        "seed": seed,
        "pairs": len({p for _, p in new_pairs}),
        "notes": notes,
    }


def override_reason(reason: str | None, by: str | None, fix: str) -> tuple[str, str]:
    """The reason and the name of who decided an override of a gate (a person's round or a model's), checked
    by the one rule both follow: a written reason of at most :data:`MAX_REASON` characters and a name."""
    reason, by = (reason or "").strip(), (by or "").strip()
    if not reason:
        raise ValidationError("an override needs a written reason", fix=fix)
    if len(reason) > MAX_REASON:
        raise ValidationError(f"a reason is at most {MAX_REASON} characters", got=len(reason))
    if not by:
        raise ValidationError("an override needs the name of who decided it", fix="pass --by NAME")
    return reason, by


def override_gate(store: Store, *, reason: str, by: str) -> dict[str, Any]:
    """Open full judging although the round's gate failed or could not be measured: recorded with
    ``reason``, ``by`` and the time."""
    reason, by = override_reason(reason, by, "say why judging may go on although the gate failed")

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        phase = phase_of(conn)
        if phase.outcome not in ("failed", "unmeasurable"):
            raise ValidationError(
                f"the gate of round {phase.round} has not failed (the project is in {phase.state}"
                f"{'' if phase.outcome is None else ', ' + phase.outcome})",
                fix="an override opens judging only after a failed or not measurable gate",
            )
        at = now()
        conn.execute(
            "INSERT INTO gate_events (round, outcome, reason, decided_by, created_at) VALUES (?, 'override', ?, ?, ?)",
            (phase.round, reason, by, at),
        )
        return {"round": phase.round, "reason": reason, "by": by, "at": at}

    return store.write(write)


def reassign(store: Store, *, source: str, targets: Sequence[str], by: str) -> dict[str, Any]:
    """Give ``source``'s calibration pairs of the current round to other labellers, while the round measures
    or after its gate was not measurable: each pair to the first of ``targets`` not already grading it. The
    round then measures again, with their grades in place of the source's (who no longer sees those
    pairs). Recorded as a gate event with who and when; the source's grades stay in the history."""
    by = (by or "").strip()
    targets = list(dict.fromkeys(targets))
    if not by:
        raise ValidationError("a reassignment needs the name of who decided it", fix="pass --by NAME")
    if not targets or source in targets:
        raise ValidationError("a labeller's pairs go to other labellers", got=",".join(targets) or None,
                              fix="pass --to NAME (repeat it to share the pairs out)")  # fmt: skip

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        phase = phase_of(conn)
        if not (phase.state == "calibration" or phase.unmeasurable):
            raise ValidationError(
                f"round {phase.round} is {phase.state}"
                f"{'' if phase.outcome is None else ' (' + phase.outcome + ')'}: its calibration pairs are decided",
                fix="reassign while a round measures or after its gate was not measurable; otherwise revise the rubric",
            )
        users = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT name, user_id, role FROM users")}
        for name in (source, *targets):
            if users.get(name, (None, None))[1] != "labeller":
                raise ValidationError(f"{name!r} is not a labeller of this project",
                                      expected=", ".join(sorted(n for n, (_, r) in users.items() if r == "labeller")))  # fmt: skip
        src = users[source][0]
        on: dict[int, set[int]] = {}
        for pair_id, user_id in conn.execute(
            "SELECT pair_id, user_id FROM round_pairs WHERE round = ?", (phase.round,)
        ):
            on.setdefault(pair_id, set()).add(user_id)
        mine = sorted(p for p, who in on.items() if src in who)
        if not mine:
            raise ValidationError(f"{source} has no calibration pairs in round {phase.round}")
        given: dict[str, list[int]] = {name: [] for name in targets}
        for pair_id in mine:
            free = next((name for name in targets if users[name][0] not in on[pair_id]), None)
            if free is None:
                q, d = conn.execute(
                    "SELECT query_id, doc_id FROM pairs WHERE pair_id = ?", (pair_id,)
                ).fetchone()
                raise ValidationError(
                    f"every labeller given already grades ({q}, {d}) in round {phase.round}: a pair needs two "
                    "different labellers",
                    got=",".join(targets),
                    fix="add a labeller who does not grade it (--to NAME)",
                )
            given[free].append(pair_id)
        query_of = dict(conn.execute("SELECT pair_id, query_id FROM pairs"))
        seed = int(conn.execute("SELECT seed FROM rounds WHERE round = ?", (phase.round,)).fetchone()[0])
        for name, ids in given.items():
            dst = users[name][0]
            have = {r[0] for r in conn.execute("SELECT pair_id FROM assignments WHERE user_id = ?", (dst,))}
            missing = [p for p in ids if p not in have]
            start = conn.execute(
                "SELECT COALESCE(MAX(position), -1) + 1 FROM assignments WHERE user_id = ?", (dst,)
            ).fetchone()[0]
            order = labeller_order({p: query_of[p] for p in missing}, set(missing), seed, name)
            conn.executemany("INSERT INTO assignments VALUES (?, ?, ?)",
                             [(dst, p, start + i) for i, p in enumerate(order)])  # fmt: skip
            conn.executemany(
                f"INSERT INTO round_pairs VALUES ({int(phase.round)}, ?, ?)", [(dst, p) for p in ids]
            )
        conn.execute("DELETE FROM round_pairs WHERE round = ? AND user_id = ?", (phase.round, src))
        shares = ", ".join(f"{len(ids)} to {name}" for name, ids in given.items() if ids)
        reason = f"{source}'s {len(mine)} calibration pairs of round {phase.round} given to others: {shares}"
        at = now()
        conn.execute(
            "INSERT INTO gate_events (round, outcome, reason, decided_by, created_at) VALUES (?, 'reassigned', ?, ?, ?)",
            (phase.round, reason, by, at),
        )
        return {"round": phase.round, "pairs": len(mine), "from": source,
                "to": {name: len(ids) for name, ids in given.items()}, "by": by, "at": at, "reason": reason}  # fmt: skip

    return store.write(write)


# -- history and the material for a revision ---------------------------------------------------------------


def rounds_history(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every round, oldest first: rubric, queries and how they were chosen, seed, verdict, agreement, override.

    ``status``: ``measuring`` (the current round, undecided), ``passed``, ``failed``, ``not measurable``
    (with ``not_measurable``, the reason), ``overridden`` (failed or not measurable, then opened with a
    reason), ``not measured``, or ``superseded`` (revised before its gate).
    """
    rounds = conn.execute("SELECT * FROM rounds ORDER BY round").fetchall()
    last = rounds[-1]["round"] if rounds else None
    out = []
    for r in rounds:
        body = json.loads(
            conn.execute("SELECT body FROM rubrics WHERE rubric_hash = ?", (r["rubric_hash"],)).fetchone()[0]
        )
        meta = body.get("rubric", body)
        events = conn.execute(
            "SELECT * FROM gate_events WHERE round = ? ORDER BY event_id", (r["round"],)
        ).fetchall()
        queries = [q[0] for q in conn.execute(
            "SELECT DISTINCT p.query_id FROM round_pairs rp JOIN pairs p USING (pair_id) WHERE rp.round = ? ORDER BY 1",
            (r["round"],))]  # fmt: skip
        verdict = verdict_event(conn, r["round"])
        override = next((e for e in events if e["outcome"] == "override"), None)
        reassigned = [{"reason": e["reason"], "by": e["decided_by"], "at": e["created_at"]}
                      for e in events if e["outcome"] == "reassigned"]  # fmt: skip
        skipped = next((e for e in events if e["outcome"] == "not-measured"), None)
        if skipped is not None:
            status = "not measured"
        elif override is not None:
            status = "overridden"
        elif verdict is not None:
            status = "not measurable" if verdict["outcome"] == "unmeasurable" else verdict["outcome"]
        else:
            status = "measuring" if r["round"] == last else "superseded"
        detail = json.loads(verdict["detail"]) if verdict is not None and verdict["detail"] else {}
        out.append({
            "round": r["round"],
            "rubric": {"name": meta.get("name"), "version": meta.get("version"), "content_hash": r["rubric_hash"]},
            "query_rule": r["query_rule"],
            "seed": r["seed"],
            "queries": queries,
            "started_at": r["started_at"],
            "started_by": r["started_by"],
            "note": r["note"],
            "status": status,
            "evaluated_at": None if verdict is None else verdict["created_at"],
            "last_grade_event": None if verdict is None else verdict["last_event"],
            "deciding": detail.get("deciding"),
            "agreement": detail.get("pairs_of_labellers", []),
            "statistic": detail.get("statistic", "kappa") if detail else None,
            "gate_rule": detail.get("rule"),
            "group": detail.get("group"),
            "override": None if override is None else
            {"reason": override["reason"], "by": override["decided_by"], "at": override["created_at"]},
            "not_measured": None if skipped is None else skipped["reason"],
            "not_measurable": verdict["reason"] if verdict is not None and verdict["outcome"] == "unmeasurable"
            else None,
            "reassigned": reassigned,
        })  # fmt: skip
    return out


def calibration_sample(conn: sqlite3.Connection, rubric_hash: str) -> dict[str, Any] | None:
    """How the calibration queries of the round under ``rubric_hash`` were chosen, or ``None`` without one.

    ``{"round", "queries", "count", "drawn", "seed", "candidates"}``: ``drawn`` is ``"random"`` when the queries
    are :func:`qrelkit.pool.draw_calibration` of the round's candidates with the recorded seed (round
    1: every query with pairs to judge, under the project seed; a revision: the queries no earlier round used,
    under :func:`round_seed`; ``--same-queries``: the round whose queries it kept), recomputed here, and
    ``"given"`` otherwise (a pool file marked other queries, or a seed the project did not record)."""
    from qrelkit.pool import draw_calibration

    rounds = {r["round"]: r for r in conn.execute("SELECT * FROM rounds").fetchall()}
    number = next((n for n, r in rounds.items() if r["rubric_hash"] == rubric_hash), None)
    while number is not None and rounds[number]["query_rule"] == "same" and number > 1:
        number -= 1  # kept the previous round's queries: their draw is that round's
    if number is None or rounds[number]["query_rule"] == "none":
        return None

    def queries_of(where: str, args: tuple[Any, ...]) -> list[str]:
        sql = f"SELECT DISTINCT p.query_id FROM round_pairs rp JOIN pairs p USING (pair_id) WHERE {where} ORDER BY 1"
        return [q for (q,) in conn.execute(sql, args)]

    chosen = queries_of("rp.round = ?", (number,))
    if not chosen:
        return None
    if number == 1:
        candidates = [q for (q,) in conn.execute("SELECT DISTINCT query_id FROM pairs ORDER BY 1")]
    else:
        used = set(queries_of("rp.round < ?", (number,)))
        candidates = [
            q for (q,) in conn.execute("SELECT DISTINCT query_id FROM pairs ORDER BY 1") if q not in used
        ]
    seed = rounds[number]["seed"]
    drawn = seed is not None and list(draw_calibration(candidates, len(chosen), int(seed))) == chosen
    return {"round": number, "queries": chosen, "count": len(chosen), "drawn": "random" if drawn else "given",
            "seed": None if seed is None else int(seed), "candidates": len(candidates)}  # fmt: skip
