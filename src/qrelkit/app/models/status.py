"""What the admin sees of a model labeller: its record, progress, cost, failures, gate, probes, and how many
of its grades carry grade probabilities (with each run in which the endpoint refused log-probabilities).

:func:`model_status` only reads (``judge model status`` opens the project read-only): the gate's parts
are computed as they stand, beside the last decision recorded in the model's gate history.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..phases import phase_of
from ..store import Store
from .access import full_pool_open, latest_model_gate, role_of
from .audit import agreed_disagreements, audit_agreement
from .flags import instruction_like_summary
from .gate import compute_model_gate, model_gate_history
from .register import ModelLabeller, calibration_pair_ids, load_model, model_labellers
from .roles import role_history

__all__ = ["model_status", "models_overview"]


def _status(conn: sqlite3.Connection, model: ModelLabeller) -> dict[str, Any]:
    phase = phase_of(conn)
    calibration = calibration_pair_ids(conn, phase.round)
    graded = {r[0] for r in conn.execute(
        "SELECT DISTINCT pair_id FROM grade_events WHERE user_id = ? AND rubric_hash = ?",
        (model.user_id, phase.rubric_hash))}  # fmt: skip
    assigned = [
        r[0] for r in conn.execute("SELECT pair_id FROM assignments WHERE user_id = ?", (model.user_id,))
    ]
    cost = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(m.prompt_tokens), 0), COALESCE(SUM(m.completion_tokens), 0), "
        "COALESCE(SUM(m.latency_ms), 0) FROM model_grades m JOIN grade_events e USING (event_id) WHERE e.user_id = ?",
        (model.user_id,),
    ).fetchone()
    attempts = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(final), 0) FROM model_attempts WHERE user_id = ?", (model.user_id,)
    ).fetchone()
    last = latest_model_gate(conn, model.user_id, phase.rubric_hash)
    carried = conn.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT e.pair_id FROM grade_events e WHERE e.user_id = ? AND e.rubric_hash = ? "
        "AND EXISTS (SELECT 1 FROM model_grade_probabilities g WHERE g.event_id = e.event_id))",
        (model.user_id, phase.rubric_hash),
    ).fetchone()[0]
    refusals = [{"at": r[0], "reason": r[1]} for r in conn.execute(
        "SELECT created_at, reason FROM model_logprobs_refusals WHERE user_id = ? ORDER BY event_id",
        (model.user_id,))]  # fmt: skip
    gate = compute_model_gate(conn, model)
    return {
        "labeller": model.to_dict(),
        "round": phase.round,
        "pairs": len(assigned),
        "graded": len(graded & set(assigned)),
        "calibration_pairs": len(calibration & set(assigned)),
        "calibration_graded": len(calibration & graded),
        "full_pool_open": full_pool_open(conn, model.user_id, phase),
        "gate_outcome": None if last is None else last["outcome"],
        "gate": gate,
        "gate_history": model_gate_history(conn, model),
        "cost": {
            "grades": cost[0],
            "prompt_tokens": cost[1],
            "completion_tokens": cost[2],
            "latency_ms": cost[3],
        },
        "failures": {"attempts": attempts[0], "pairs_given_up": attempts[1]},
        "probabilities": {
            "top_logprobs": model.top_logprobs,
            "graded_with": int(carried),
            "refusals": refusals,
        },
        "audit": audit_agreement(conn, model, gate.get("threshold")),
        "agreed_disagreements": agreed_disagreements(conn, model),
        "role": role_of(conn, model.user_id),
        "role_history": role_history(conn, model.user_id),
        "instruction_like": instruction_like_summary(conn, model.user_id),
    }


def model_status(store: Store, name: str) -> dict[str, Any]:
    return store.read(lambda c: _status(c, load_model(c, name)))


def models_overview(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every model labeller's status (the admin page lists them beside the people)."""
    return [_status(conn, m) for m in model_labellers(conn)]
