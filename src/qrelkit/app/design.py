"""The live queue: a judging budget spent by a strategy, stored in the project (``designs``, ``design_pairs``).

A **design** is the strategy, the budget (pairs people judge in all, those judged before it included), the seed,
the measure the strategy weighs, the model labeller whose grades it chose with, and the chosen pairs in order,
each with its inclusion probability and the person given it. The strategy itself runs in
:mod:`qrelkit.budget` (the command line calls :func:`qrelkit.budget.live.plan_queue` with the material
:func:`qrelkit.app.design_inputs.planning_material` reads); this module only stores what it chose and makes the
people's queue follow it.

The people's queue beyond calibration follows the latest design. When a design is recorded (:func:`record_plan`)
or asked for before it can be planned (:func:`hold_queue`, ``judge init --order``: a *pending* design),
each person's pairs that are not calibration pairs, not graded by them and not an audit sample of a model
(:mod:`.models.audit`) leave their plan; the chosen pairs not yet graded by people are then added after each
person's last position, in the design's order, each to the person who held its query before (reading a
query once), else to the person with the fewest chosen pairs so far (by name on a tie). Positions only grow,
so a position a labeller has open never names another pair; a pair taken out answers "no pair at this
position". Nothing of the design reaches a labeller's page: they see their next pair as always (blind).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from qrelkit.errors import ValidationError

from .store import Store, now

__all__ = [
    "Design",
    "claimed_by_design",
    "current_design",
    "design_field",
    "design_progress",
    "graded_outside",
    "held_pairs",
    "hold_queue",
    "people_graded_pairs",
    "plan_request",
    "pooled_pairs",
    "record_plan",
]


@dataclass(frozen=True)
class Design:
    """A design as stored; ``pairs``: ``(query_id, doc_id, probability, person)`` in the design's order."""

    design: int
    strategy: str
    budget: int
    seed: int
    measure: str
    state: str  # pending or planned
    model: str | None
    judged_before: int
    created_at: str
    created_by: str | None
    pairs: tuple[tuple[str, str, float, str | None], ...]
    kind: str = "draw"  # draw, or a focused round (judge plan --round): certain pairs, the draw to come

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "pairs"}
        out["pairs"] = [{"query_id": q, "doc_id": d, "probability": p, "order": i}
                        for i, (q, d, p, _) in enumerate(self.pairs)]  # fmt: skip
        return out


def current_design(conn: sqlite3.Connection) -> Design | None:
    """The design in force (the latest), or ``None``."""
    row = conn.execute(
        "SELECT d.*, COALESCE(k.kind, 'draw') AS kind FROM designs d LEFT JOIN design_kinds k USING (design) "
        "ORDER BY d.design DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    pairs = conn.execute(
        "SELECT p.query_id, p.doc_id, x.probability, u.name FROM design_pairs x JOIN pairs p USING (pair_id) "
        "LEFT JOIN users u ON u.user_id = x.user_id WHERE x.design = ? ORDER BY x.position",
        (row["design"],),
    ).fetchall()
    return Design(int(row["design"]), row["strategy"], int(row["budget"]), int(row["seed"]), row["measure"],
                  row["state"], row["model"], int(row["judged_before"]), row["created_at"],
                  row["created_by"], tuple((q, d, float(p), u) for q, d, p, u in pairs), row["kind"])  # fmt: skip


def _people(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return [
        (int(u), n)
        for u, n in conn.execute("SELECT user_id, name FROM users WHERE role = 'labeller' ORDER BY name")
    ]


def _floor_key(user_id: int) -> str:
    """The ``meta`` key of the last position a person was ever given (what a new pair's position follows)."""
    return f"last_position:{user_id}"


def _next_position(conn: sqlite3.Connection, user_id: int) -> int:
    """The position after every one ``user_id`` holds or held: a position never names a second pair."""
    held = conn.execute(
        "SELECT COALESCE(MAX(position), -1) FROM assignments WHERE user_id = ?", (user_id,)
    ).fetchone()[0]
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_floor_key(user_id),)).fetchone()
    return max(int(held), -1 if row is None else int(row[0])) + 1


#: An assignment ``a`` that stays in a person's plan whatever the design: a calibration pair of any round or
#: a model's audit sample given to them.
_STAYS = (
    "(EXISTS (SELECT 1 FROM round_pairs r WHERE r.user_id = a.user_id AND r.pair_id = a.pair_id) "
    "OR EXISTS (SELECT 1 FROM model_audit m WHERE m.person_id = a.user_id AND m.pair_id = a.pair_id))"
)
#: An assignment ``a`` its person has graded.
_GRADED = "EXISTS (SELECT 1 FROM grade_events e WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id)"


def held_pairs(conn: sqlite3.Connection, rubric_hash: str) -> list[tuple[str, str]]:
    """The pooled pairs people will grade whatever a design chooses: in a person's plan and staying there (a
    calibration pair of any round, a model's audit sample given to them, or a pair they graded under an
    earlier rubric, which they are given again), not graded by them under ``rubric_hash`` (the rubric in
    force). A design takes them with certainty: a draw's probability would weight a grade that was always
    coming."""
    return [(q, d) for q, d in conn.execute(
        "SELECT DISTINCT p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) JOIN pairs p "
        f"USING (pair_id) WHERE u.role = 'labeller' AND ({_STAYS} OR {_GRADED}) AND NOT EXISTS (SELECT 1 FROM "
        "grade_events e WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id AND e.rubric_hash = ?)",
        (rubric_hash,))]  # fmt: skip


def claimed_by_design(conn: sqlite3.Connection, user_id: int, pair_id: int) -> bool:
    """Whether the design in force chose ``pair_id`` and gave it to ``user_id`` (a pair it takes with
    certainty that rides on another assignment, such as a model's audit sample, must stay in their plan)."""
    return (
        conn.execute(
            "SELECT 1 FROM design_pairs WHERE design = (SELECT MAX(design) FROM designs) AND pair_id = ? "
            "AND user_id = ? LIMIT 1",
            (pair_id, user_id),
        ).fetchone()
        is not None
    )


def _release(conn: sqlite3.Connection) -> dict[str, int]:
    """Take out of people's plans every pair that is not a calibration pair of any round, not graded by
    them and not a model's audit sample given to them; ``{query_id: person}`` of who held each query."""
    rows = conn.execute(
        "SELECT a.user_id, a.pair_id, p.query_id FROM assignments a JOIN users u USING (user_id) "
        f"JOIN pairs p USING (pair_id) WHERE u.role = 'labeller' AND NOT {_STAYS} AND NOT {_GRADED} "
        "ORDER BY a.user_id, a.position"
    ).fetchall()
    for user_id, top in conn.execute(
        "SELECT a.user_id, MAX(a.position) FROM assignments a JOIN users u USING (user_id) WHERE u.role = 'labeller' "
        "GROUP BY a.user_id"
    ).fetchall():  # positions only grow: the last one given is kept, whatever leaves the plan
        conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS "
                     "INTEGER), CAST(excluded.value AS INTEGER))", (_floor_key(int(user_id)), str(int(top))))  # fmt: skip
    held: dict[str, int] = {}
    for user_id, pair_id, query_id in rows:
        held.setdefault(query_id, int(user_id))
        conn.execute("DELETE FROM assignments WHERE user_id = ? AND pair_id = ?", (user_id, pair_id))
    return held


def _insert_design(conn: sqlite3.Connection, values: dict[str, Any], kind: str = "draw") -> int:
    design = int(conn.execute(
        "INSERT INTO designs (strategy, budget, seed, measure, state, model, judged_before, created_at, "
        "created_by) VALUES (:strategy, :budget, :seed, :measure, :state, :model, :judged_before, "
        ":created_at, :created_by)", values).lastrowid or 0)  # fmt: skip
    if kind != "draw":
        conn.execute("INSERT INTO design_kinds VALUES (?, ?)", (design, kind))
    return design


def _check(strategy: str, budget: int, seed: int, measure: str) -> None:
    if not strategy or not isinstance(strategy, str):
        raise ValidationError("no strategy named", fix="pass --order active")
    for value, what in ((budget, "budget"), (seed, "seed")):
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if what == "budget" else 0):
            raise ValidationError(
                f"the {what} is a whole number >= {1 if what == 'budget' else 0}", got=value
            )
    if not measure:
        raise ValidationError("no measure named", fix="pass --measure nDCG@10")


def calibration_pairs(conn: sqlite3.Connection) -> int:
    """The pairs people judge first whatever the design (every round's calibration sample): a budget no
    larger is spent before anything can be chosen."""
    return int(conn.execute("SELECT COUNT(DISTINCT pair_id) FROM round_pairs").fetchone()[0])


def hold_queue(store: Store, *, strategy: str, budget: int, seed: int, measure: str,
               by: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Record a *pending* design (``judge init --order``: no model labeller has graded yet, so nothing can be
    chosen) and hold the people's queue beyond calibration until it is planned (module docstring)."""
    _check(strategy, budget, seed, measure)

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        released = _release(conn)
        design = _insert_design(conn, {"strategy": strategy, "budget": budget, "seed": seed, "measure": measure,
                                       "state": "pending", "model": None, "judged_before": 0,
                                       "created_at": now(), "created_by": by})  # fmt: skip
        return {"design": design, "held_queries": len(released)}

    return store.write(write)


def record_plan(
    store: Store,
    *,
    strategy: str,
    budget: int,
    seed: int,
    measure: str,
    model: str,
    judged_before: int,
    chosen: Sequence[tuple[str, str, float]],
    by: str | None = None,
    kind: str = "draw",
) -> dict[str, Any]:
    """Record a planned design, its ``chosen`` pairs ``(query_id, doc_id, inclusion probability)`` in order,
    and make the people's queue follow it (module docstring): one transaction. ``kind``: ``draw`` (the rest
    of the budget with known probabilities) or ``round`` (a focused round: every pair with certainty)."""
    _check(strategy, budget, seed, measure)
    if kind not in ("draw", "round"):
        raise ValidationError(f"a design is a draw or a round, not {kind!r}")
    for q, d, p in chosen:
        if not 0.0 < float(p) <= 1.0 or (kind == "round" and float(p) != 1.0):
            raise ValidationError(
                f"the inclusion probability of {q} {d} is {p!r}",
                expected="1 (a focused round takes each pair with certainty)"
                if kind == "round"
                else "in (0, 1]",
            )

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        people = _people(conn)
        if not people:
            raise ValidationError("the project has no labellers to give the chosen pairs to",
                                  fix="invite labellers first (`qrelkit judge init --labellers`)")  # fmt: skip
        ids = {(q, d): int(p) for p, q, d in conn.execute("SELECT pair_id, query_id, doc_id FROM pairs")}
        unknown = [f"{q} {d}" for q, d, _ in chosen if (q, d) not in ids]
        if unknown:
            raise ValidationError(
                f"{len(unknown)} chosen pair(s) are not in the project's pool, first: {unknown[0]}"
            )
        held = _release(conn)
        design = _insert_design(conn, {"strategy": strategy, "budget": budget, "seed": seed, "measure": measure,
                                       "state": "planned", "model": model,
                                       "judged_before": judged_before, "created_at": now(), "created_by": by},
                                kind)  # fmt: skip
        names = dict(people)
        load = {u: 0 for u, _ in people}
        given: dict[int, list[int]] = {}
        rows = []
        for position, (q, d, p) in enumerate(chosen):
            pair_id = ids[q, d]
            planned = [int(r[0]) for r in conn.execute(
                "SELECT a.user_id FROM assignments a JOIN users u USING (user_id) WHERE u.role = 'labeller' "
                "AND a.pair_id = ? ORDER BY a.user_id", (pair_id,))]  # fmt: skip
            graded = {
                int(r[0])
                for r in conn.execute("SELECT user_id FROM grade_events WHERE pair_id = ?", (pair_id,))
            }
            if planned:  # already in someone's plan (an ungraded calibration or audit pair): theirs
                person = planned[0]
            else:
                free = [u for u, _ in people if u not in graded] or [u for u, _ in people]
                owner = held.get(q)
                person = owner if owner in free else min(free, key=lambda u: (load[u], names[u]))
                given.setdefault(person, []).append(pair_id)
            held.setdefault(q, person)
            load[person] += 1
            rows.append((design, pair_id, position, float(p), person))
        conn.executemany("INSERT INTO design_pairs VALUES (?, ?, ?, ?, ?)", rows)
        for person, pair_ids in given.items():
            start = _next_position(conn, person)
            conn.executemany("INSERT INTO assignments VALUES (?, ?, ?)",
                             [(person, p, start + i) for i, p in enumerate(pair_ids)])  # fmt: skip
        return {"design": design, "chosen": len(rows), "people": {names[u]: n for u, n in load.items()}}

    return store.write(write)


def people_graded_pairs(
    conn: sqlite3.Connection,
    *,
    since: str | None = None,
    until: str | None = None,
    rubric_hash: str | None = None,
    marked: bool = False,
) -> list[tuple[str, str]]:
    """Every pooled pair a person (not a model) has graded (``since``: at or after that time stamp;
    ``until``: before it; ``rubric_hash``: under that rubric version only; ``marked``: or marked without a
    grade, such as unsure, which sends it to a decision all the same)."""
    return [(q, d) for q, d in conn.execute(
        "SELECT DISTINCT p.query_id, p.doc_id FROM grade_events e JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) WHERE u.role = 'labeller' AND (? OR e.grade IS NOT NULL) AND e.created_at >= ? "
        "AND (? IS NULL OR e.created_at < ?) AND (? IS NULL OR e.rubric_hash = ?)",
        (marked, since or "", until, until, rubric_hash, rubric_hash))]  # fmt: skip


def graded_outside(conn: sqlite3.Connection, design: Design) -> list[tuple[str, str]]:
    """The pairs of the design's draw frame (pooled before it, no person's grade or mark before it) that
    people graded since, though the design did not choose them: a model's audit given after the plan, say.
    Counted as known, such a pair adds its grade where the draw left it out and its inverse-weighted
    correction where the draw chose it, a bias; the design's estimate leaves their grades out."""
    if design.state != "planned":
        return []
    chosen = {(q, d) for q, d, _, _ in design.pairs}
    before = set(people_graded_pairs(conn, until=design.created_at, marked=True))
    later = {(q, d) for q, d in conn.execute(
        "SELECT p.query_id, p.doc_id FROM segment_pairs x JOIN segments s USING (segment) JOIN pairs p "
        "USING (pair_id) WHERE s.created_at > ?", (design.created_at,))}  # fmt: skip
    since = people_graded_pairs(conn, since=design.created_at)
    return sorted(set(since) - chosen - before - later)


def design_progress(
    conn: sqlite3.Connection,
    design: Design,
    settled: Collection[tuple[str, str]],
    outside: Collection[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """How much of the design's budget people have spent: the pairs settled before it (``judged_before``) and
    the chosen pairs a person graded under the rubric in force (``spent`` is both); how many chosen pairs
    have a settled grade (``settled``: the pairs with a people's final grade, :func:`.grades.final_grades`),
    and how many people graded that still wait for a decision (graded apart: a calibration pair disputed
    before the plan, which the design takes with certainty); how many pairs people graded outside it
    (``outside``, else :func:`graded_outside`); and every pooled pair a person graded."""
    from .phases import phase_of

    chosen = {(q, d) for q, d, _, _ in design.pairs}
    judged = set(people_graded_pairs(conn, rubric_hash=phase_of(conn).rubric_hash))
    decided = chosen & set(settled)
    return {"strategy": design.strategy, "state": design.state, "budget": design.budget,
            "spent": design.judged_before + len(chosen & judged),
            "chosen": len(chosen), "chosen_judged": len(chosen & judged), "chosen_settled": len(decided),
            "awaiting_decision": len((chosen & judged) - decided), "people_pairs": len(judged),
            "graded_outside": len(graded_outside(conn, design) if outside is None else outside),
            "judged_before": design.judged_before, "seed": design.seed, "measure": design.measure,
            "model": design.model}  # fmt: skip


def design_field(conn: sqlite3.Connection, settled: Collection[tuple[str, str]]) -> dict[str, Any] | None:
    """The manifest's ``design``: the strategy, budget, seed, measure, model labeller and every chosen pair with its inclusion probability and order (pairs people judged before it count at 1), with
    :func:`design_progress`' counts (``settled`` as there) and the pairs :func:`graded_outside` it, or ``None``
    without a planned design."""
    design = current_design(conn)
    if design is None or design.state != "planned":
        return None
    kept = ("spent", "chosen_judged", "chosen_settled", "awaiting_decision", "people_pairs")
    outside = graded_outside(conn, design)
    return {
        **design.to_dict(),
        **{k: v for k, v in design_progress(conn, design, settled, outside).items() if k in kept},
        "graded_outside": [{"query_id": q, "doc_id": d} for q, d in outside],
    }


#: The measure a strategy weighs pairs by, unless told.
DEFAULT_MEASURE = "nDCG@10"


def pooled_pairs(conn: sqlite3.Connection) -> int:
    """How many pairs the project pooled (what a budget's share is of)."""
    return int(conn.execute("SELECT COUNT(*) FROM pairs").fetchone()[0])


def plan_request(conn: sqlite3.Connection, *, order: str | None, budget: int | None, measure: str | None,
                 seed: int | None, settled: Collection[tuple[str, str]],
                 replace: bool = False) -> tuple[str, int, str, int]:  # fmt: skip
    """The design ``judge plan`` makes: ``(strategy, budget, measure, seed)``. ``order`` and ``budget`` go
    together, else the pending design's (the one ``judge init --order`` asked for); the measure given, else
    the pending design's, else nDCG@10; the seed given, else the pending design's, else the project's.

    A planned design of which people have judged a pair it drew with a probability below 1 is refused
    unless ``replace``: a pair with a settled grade (``settled``: the pairs with a people's final grade,
    :func:`.grades.final_grades`), or one a person graded since the design was planned (two people's grades
    apart are not settled, but the draw chose it). A new plan counts every settled pair as certain, and
    the draw's intervals would be lost."""
    pending = current_design(conn)
    if pending is not None and pending.state == "planned" and not replace:
        drawn = {(q, d) for q, d, p, _ in pending.pairs if p < 1.0}
        graded = drawn & (set(settled) | set(people_graded_pairs(conn, since=pending.created_at)))
        if graded:
            raise ValidationError(
                f"people judged {len(graded)} of the {len(drawn)} pairs design {pending.design} "
                f"({pending.strategy}, seed {pending.seed}) drew at random: a new plan would count them as "
                "certain, and the design's intervals would be lost",
                fix="estimate under this design (`qrelkit judge export --final`, then eval on the export); "
                "to plan again all the same, pass --replace",
            )
    if order is None and budget is None and pending is not None:
        order, budget = pending.strategy, pending.budget
    elif order is None or budget is None:
        raise ValidationError("pass --order STRATEGY --budget N together (the project has no design asked for)",
                              fix="e.g. --order active --budget 20%")  # fmt: skip
    if seed is None:
        seed = (
            pending.seed
            if pending is not None
            else int(conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0])
        )
    measure = measure or (pending.measure if pending is not None else DEFAULT_MEASURE)
    return order, budget, measure, seed
