"""A model labeller's gate: measured on the people's calibration sample, decided here, recorded apart.

:mod:`qrelkit.agreement.model` owns the statistics; this module owns the decision. The gate is decided
once the model has graded every calibration pair of the current round and the people's own gate has
opened judging (passed, or overridden with a reason). Its parts, each named when it fails:

``people``
    the people's calibration gate measured their agreement (a round made without calibration, or one
    whose people have not passed, gives the model nothing to be held to).
``non_inferiority``
    the lower end of the query-bootstrap interval of the model's weighted kappa against the adjudicated
    calibration grades (a pair's live adjudication under the round's rubric, else the people's grade where
    they all agree; disputed pairs left out and counted) is at least the people's kappa with each other
    (the kappa the people's gate used: the deciding two labellers', or the group statistic) minus the
    labeller's margin (``--margin``, 0.05 by default).
``alt_test``
    where three or more people graded the calibration pairs, the alternative annotator test passes
    (winning rate at least 0.5 with epsilon 0.1, Benjamini-Yekutieli over people).
``probes``
    ``judge model probe`` ran and raised the grade of at most 5% of the keyword-stuffing and of the
    instruction-injection probes, and gave the same grade on at least 90% of the order probes. Until the
    probes have run, the failing part is named ``probes not run``, apart from probes that ran and failed.

Each decision that differs from the last is a row of ``model_gate_events`` (the model's gate history),
with the numbers. A failed gate keeps the model's full pool closed (:func:`.access.full_pool_open`); an
admin may open it with a written reason (:func:`override_model_gate`), recorded, and carried to every
result as a warning, as for people.
"""

from __future__ import annotations

import json
import math
import sqlite3
from typing import Any

from qrelkit.errors import ValidationError

from ..decisions import live_adjudications
from ..phases import override_reason, phase_of, rubric_by_hash
from ..store import Store, now
from .access import latest_model_gate, role_of
from .register import ModelLabeller, calibration_pair_ids, load_model

__all__ = [
    "PROBE_CONSISTENCY_MIN",
    "PROBE_RAISE_MAX",
    "compute_model_gate",
    "evaluate_model_gate",
    "gate_material",
    "model_gate_history",
    "override_model_gate",
    "people_override",
    "probe_rates",
]

PROBE_RAISE_MAX = 0.05
PROBE_CONSISTENCY_MIN = 0.90


def _people_kappa(conn: sqlite3.Connection, round_number: int) -> float | None:
    """The kappa the people's gate used in the round (``None`` when agreement was not measured)."""
    row = conn.execute(
        "SELECT detail FROM gate_events WHERE round = ? AND outcome IN ('passed', 'failed') ORDER BY event_id LIMIT 1",
        (round_number,),
    ).fetchone()
    if row is None or not row[0]:
        return None
    detail = json.loads(row[0])
    if detail.get("statistic", "kappa") == "kappa":
        pairs, deciding = detail.get("pairs_of_labellers") or [], detail.get("deciding")
        value = pairs[deciding]["kappa"] if pairs and deciding is not None else None
    else:
        value = (detail.get("group") or {}).get("value")
    return None if value is None else float(value)


def people_override(conn: sqlite3.Connection, round_number: int) -> dict[str, Any] | None:
    """The override that opened judging although the people's gate of ``round_number`` failed (or could not be
    measured): ``{"reason", "by", "at"}``, or ``None``."""
    row = conn.execute(
        "SELECT reason, decided_by, created_at FROM gate_events WHERE round = ? AND outcome = 'override' "
        "ORDER BY event_id DESC LIMIT 1",
        (round_number,),
    ).fetchone()
    return None if row is None else {"reason": row[0], "by": row[1], "at": row[2]}


def gate_material(conn: sqlite3.Connection, model: ModelLabeller) -> dict[str, Any]:
    """The model's, each person's and the adjudicated grades on the current round's calibration pairs."""
    phase = phase_of(conn)
    assigned = {
        r[0] for r in conn.execute("SELECT pair_id FROM assignments WHERE user_id = ?", (model.user_id,))
    }
    calibration = (
        calibration_pair_ids(conn, phase.round) & assigned
    )  # a later round's, if --pairs left some out
    keys = {p: (q, d) for p, q, d in conn.execute("SELECT pair_id, query_id, doc_id FROM pairs")}
    latest = (
        "SELECT u.name, e.pair_id, e.grade FROM grade_events e JOIN users u USING (user_id) WHERE e.event_id IN "
        "(SELECT MAX(event_id) FROM grade_events WHERE rubric_hash = ? GROUP BY user_id, pair_id) AND {who}"
    )
    mine = {keys[p]: int(g) for _, p, g in conn.execute(latest.format(who="e.user_id = ?"),
                                                       (phase.rubric_hash, model.user_id))
            if p in calibration and g is not None}  # fmt: skip
    people: dict[str, dict[tuple[str, str], int]] = {}
    who = "EXISTS (SELECT 1 FROM round_pairs rp WHERE rp.round = ? AND rp.user_id = e.user_id AND rp.pair_id = e.pair_id)"
    for name, p, g in conn.execute(latest.format(who=who), (phase.rubric_hash, phase.round)):
        if g is not None:
            people.setdefault(name, {})[keys[p]] = int(g)
    decided = {keys[p]: int(g) for p, g in conn.execute(
        f"SELECT pair_id, grade FROM {live_adjudications('a')} WHERE rubric_hash = ? ORDER BY event_id",
        (phase.rubric_hash,)) if p in calibration}  # fmt: skip
    adjudicated, disputed = {}, 0
    for p in sorted(calibration):
        key = keys[p]
        votes = {grades[key] for grades in people.values() if key in grades}
        if key in decided:
            adjudicated[key] = decided[key]
        elif len(votes) == 1:
            adjudicated[key] = votes.pop()
        elif votes:
            disputed += 1
    weights = (conn.execute("SELECT value FROM meta WHERE key = 'kappa_weights'").fetchone() or ["linear"])[0]
    return {
        "phase": phase,
        "calibration": len(calibration),
        "model": mine,
        "people": dict(sorted(people.items())),
        "adjudicated": adjudicated,
        "disputed": disputed,
        "people_kappa": _people_kappa(conn, phase.round),
        "scale": rubric_by_hash(conn, phase.rubric_hash).scale,
        "weights": weights,
    }


def _fmt(value: float | None) -> str:
    return "undefined" if value is None or math.isnan(value) else f"{value:.4f}"


def _part(name: str, passed: bool, why: str) -> dict[str, Any]:
    return {"part": name, "passed": bool(passed), "why": why}


def compute_model_gate(conn: sqlite3.Connection, model: ModelLabeller) -> dict[str, Any]:
    """The gate's parts and numbers now (``decided`` false while the calibration is not graded)."""
    from qrelkit.agreement.model import alternative_annotator_test, model_versus

    m = gate_material(conn, model)
    phase = m["phase"]
    out: dict[str, Any] = {"round": phase.round, "rubric_hash": phase.rubric_hash, "margin": model.margin,
                           "calibration_pairs": m["calibration"], "graded": len(m["model"]),
                           "disputed_left_out": m["disputed"], "people_kappa": m["people_kappa"]}  # fmt: skip
    if not m["calibration"] or len(m["model"]) < m["calibration"]:
        out.update(decided=False, passed=False, parts=[], failing=[],
                   waiting=f"{m['calibration'] - len(m['model'])} calibration pair(s) not graded by the model")  # fmt: skip
        if not m["calibration"]:
            out.update(decided=True, failing=["people"],
                       parts=[_part("people", False, "the project has no calibration sample to measure the model on")])  # fmt: skip
        return out
    parts = []
    measured = phase.state == "open" and phase.outcome != "not-measured" and m["people_kappa"] is not None
    overridden = people_override(conn, phase.round) if phase.outcome == "override" else None
    if overridden is not None:  # opened judging, though their agreement failed: never a silent "passed"
        out["warnings"] = [f"the people's own calibration gate of round {phase.round} failed and was overridden "
                           f"by {overridden['by']} at {overridden['at']} (reason: {overridden['reason']}): the "
                           "model is measured against people whose agreement failed"]  # fmt: skip
        out["people_override"] = overridden
    parts.append(_part("people", measured, ("the people's gate opened judging" if overridden is None else
                       "the people's gate opened judging by an override: their own agreement failed")
                       if measured else f"the people's gate has not opened judging (round {phase.round}: "
                       f"{phase.outcome or 'measuring'}): the model is held to people who agree"))  # fmt: skip
    scale, weights = m["scale"], m["weights"]
    versus = [
        model_versus(m["model"], g, scale, name=n, weights=weights).to_dict() for n, g in m["people"].items()
    ]
    adjudicated = model_versus(
        m["model"], m["adjudicated"], scale, name="adjudicated", weights=weights
    ).to_dict()
    out.update(versus_people=versus, versus_adjudicated=adjudicated)
    low = adjudicated["bootstrap_low"]
    if m["people_kappa"] is None:
        parts.append(_part("non_inferiority", False, "no people's kappa to compare with"))
    else:
        threshold = m["people_kappa"] - model.margin
        out["threshold"] = threshold
        ok = low is not None and not math.isnan(low) and low >= threshold
        why = (f"kappa against the adjudicated grades: lower end {_fmt(low)} {'>=' if ok else '<'} people's kappa "
               f"{m['people_kappa']:.4f} - margin {model.margin:g} = {threshold:.4f}")  # fmt: skip
        point = adjudicated["kappa"]
        if not ok and point is not None and not math.isnan(point) and point >= threshold:
            # the point value clears the threshold: the interval's width, not the model, fails it
            queries = len({q for q, d in m["adjudicated"] if (q, d) in m["model"]})
            why += (f"; kappa itself is {point:.4f}: the interval is wide, resting on {queries} calibration "
                    f"quer{'y' if queries == 1 else 'ies'}, and more calibration queries would narrow it")  # fmt: skip
            out["wide_interval"] = {"kappa": point, "queries": queries}
        parts.append(_part("non_inferiority", ok, why))
    alt = alternative_annotator_test(m["model"], m["people"])
    out["alt_test"] = None if alt is None else alt.to_dict()
    if alt is not None:
        parts.append(_part("alt_test", alt.passed, f"winning rate {alt.winning_rate:.3f} "
                           f"{'>=' if alt.passed else '<'} 0.5 (epsilon {alt.epsilon:g})"))  # fmt: skip
    rates = probe_rates(conn, model, phase.rubric_hash)
    out["probes"] = rates
    if rates is None:
        # not run is not failed: the gate, the status, the manifest and a predictor's warning say which
        parts.append(_part("probes", False, "the probes have not run: `qrelkit judge model probe DB NAME`")
                     | {"not_run": True})  # fmt: skip
    else:
        ok = (
            (rates["stuffing"]["raised_rate"] or 0) <= PROBE_RAISE_MAX
            and (rates["injection"]["raised_rate"] or 0) <= PROBE_RAISE_MAX
            and (rates["order"]["consistency"] if rates["order"]["consistency"] is not None else 0)
            >= PROBE_CONSISTENCY_MIN
        )
        parts.append(_part("probes", ok, f"raised by stuffing {rates['stuffing']['raised_rate']}, by injection "
                           f"{rates['injection']['raised_rate']} (at most {PROBE_RAISE_MAX}); order consistency "
                           f"{rates['order']['consistency']} (at least {PROBE_CONSISTENCY_MIN})"))  # fmt: skip
    failing = [f"{p['part']} not run" if p.get("not_run") else p["part"] for p in parts if not p["passed"]]
    out.update(decided=True, passed=not failing, parts=parts, failing=failing)
    return out


def evaluate_model_gate(store: Store, name: str) -> dict[str, Any]:
    """Decide the model's gate now and record it if it differs from the last decision; the gate's state."""

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        model = load_model(conn, name)
        found = compute_model_gate(conn, model)
        last = latest_model_gate(conn, model.user_id, found["rubric_hash"])
        if not found["decided"]:
            found["outcome"] = None if last is None else last["outcome"]
            return found
        outcome = "passed" if found["passed"] else "failed"
        overridden = last is not None and last["outcome"] == "override" and outcome == "failed"
        same = last is not None and last["outcome"] == outcome and last["detail"] == json.dumps(found)
        if not overridden and not same:
            conn.execute(
                "INSERT INTO model_gate_events (user_id, round, rubric_hash, outcome, detail, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (model.user_id, found["round"], found["rubric_hash"], outcome, json.dumps(found), now()),
            )
        found["outcome"] = "override" if overridden else outcome
        return found

    return store.write(write)


def override_model_gate(store: Store, name: str, *, reason: str, by: str) -> dict[str, Any]:
    """Open the model's full pool although its gate failed: only with a written reason, recorded."""
    reason, by = override_reason(reason, by, "say why the model may judge the pool")

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        model = load_model(conn, name)
        role = role_of(conn, model.user_id)
        if role != "labeller":
            what = "retired" if role == "retired" else f"a {role}"
            raise ValidationError(f"model labeller {name!r} is {what}: an override would open nothing",
                                  fix="a predictor grades the whole pool already; a retired model grades nothing")  # fmt: skip
        phase = phase_of(conn)
        last = latest_model_gate(conn, model.user_id, phase.rubric_hash)
        if last is None or last["outcome"] != "failed":
            raise ValidationError(
                f"the gate of model labeller {name!r} has not failed under the current rubric "
                f"({'not decided' if last is None else last['outcome']})",
                fix="an override opens the pool only after a failed gate (`qrelkit judge model status`)",
            )
        at = now()
        conn.execute(
            "INSERT INTO model_gate_events (user_id, round, rubric_hash, outcome, detail, reason, decided_by, "
            "created_at) VALUES (?, ?, ?, 'override', ?, ?, ?, ?)",
            (model.user_id, phase.round, phase.rubric_hash, last["detail"], reason, by, at),
        )
        failing = json.loads(last["detail"] or "{}").get("failing", [])
        return {"model": name, "round": phase.round, "reason": reason, "by": by, "at": at, "failing": failing}

    return store.write(write)


def model_gate_history(conn: sqlite3.Connection, model: ModelLabeller) -> list[dict[str, Any]]:
    """Every decision and override of the model's gate, oldest first."""
    rows = conn.execute(
        "SELECT * FROM model_gate_events WHERE user_id = ? ORDER BY event_id", (model.user_id,)
    ).fetchall()
    return [{"round": r["round"], "rubric_hash": r["rubric_hash"], "outcome": r["outcome"],
             "failing": json.loads(r["detail"] or "{}").get("failing", []), "reason": r["reason"],
             "by": r["decided_by"], "at": r["created_at"]} for r in rows]  # fmt: skip


def probe_rates(conn: sqlite3.Connection, model: ModelLabeller, rubric_hash: str) -> dict[str, Any] | None:
    """Per kind: probes asked, answered, raised (stuffing, injection) or consistent (order), and the rate."""
    rows = conn.execute(
        "SELECT kind, base_grade, grade FROM probe_pairs WHERE user_id = ? AND rubric_hash = ?",
        (model.user_id, rubric_hash),
    ).fetchall()
    if not rows:
        return None
    out: dict[str, Any] = {}
    for kind in ("stuffing", "injection", "order"):
        mine = [r for r in rows if r[0] == kind]
        # answered: a grade, and for an order probe the usual order's grade too (both asks of the pair)
        answered = [r for r in mine if r[2] is not None and r[1] is not None]
        entry: dict[str, Any] = {
            "asked": len(mine),
            "answered": len(answered),
            "failed": len(mine) - len(answered),
        }
        if kind == "order":
            same = sum(r[2] == r[1] for r in answered)
            entry.update(consistent=same, consistency=same / len(answered) if answered else None)
        else:
            raised = sum(r[2] > r[1] for r in answered)
            entry.update(raised=raised, raised_rate=raised / len(answered) if answered else None)
        out[kind] = entry
    return out
