"""What the manifest of exported qrels records of model labellers (``model_labellers``).

For each model labeller: its name, model id, the endpoint's host (never the path or a key) or the
command, the prompt template's hash, temperature and seed, its gate under the exported rubric (outcome,
failing parts, an override's reason, who and when) and its probe rates; and which final grades came from
it: ``final_grades_from_model_alone`` (pairs whose final grade rests on model grades only: no person
graded them and no adjudication decided them), ``final_grades_with_model_vote`` and the share of the
final grades each is. Only labellers whose gate passed or was overridden count in the final qrels. Its
``role`` (``labeller``, ``predictor``: its grades only predict and never count; ``retired``) with the
decision that made it so (``role_decision``: reason, who, when), and ``people_override`` when its gate
was measured against people whose own gate failed and was overridden (reason, who, when); and
``instruction_like``: its pairs whose document carries instruction-like text (:mod:`.flags`), how many it
graded, how many a person graded too (its audit sample), and the first of them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

from ..decisions import live_adjudications
from .access import closed_model_names, counting_votes, latest_model_gate, role_of
from .flags import instruction_like_summary
from .gate import probe_rates
from .register import model_labellers
from .roles import role_history

__all__ = ["model_manifest_fields"]


def model_manifest_fields(
    conn: sqlite3.Connection, rubric_hash: str, final: Collection[tuple[str, str]]
) -> list[dict[str, Any]]:
    models = model_labellers(conn)
    if not models:
        return []
    closed = closed_model_names(conn, rubric_hash)
    voters: dict[tuple[str, str], set[str]] = {}
    rows = conn.execute(
        "SELECT p.query_id, p.doc_id, u.name, e.grade, e.unsure FROM grade_events e JOIN users u USING (user_id) "
        "JOIN pairs p USING (pair_id) WHERE e.event_id IN (SELECT MAX(event_id) FROM grade_events "
        "WHERE rubric_hash = ? GROUP BY user_id, pair_id)",
        (rubric_hash,),
    ).fetchall()
    # the votes that take part in the merge: a model's grade on a pair people agreed on is not one
    for q, d, name, grade, _ in counting_votes(
        conn, rubric_hash, rows, lambda r: ((r[0], r[1]), r[2], r[3], r[4])
    ):
        if grade is not None:
            voters.setdefault((q, d), set()).add(name)
    decided = {(q, d) for q, d in conn.execute(
        f"SELECT p.query_id, p.doc_id FROM {live_adjudications('a')} JOIN pairs p USING (pair_id) "
        "WHERE a.rubric_hash = ?", (rubric_hash,))}  # fmt: skip
    names = {m.name for m in models}
    final = set(final)
    total = len(final)
    out = []
    for m in models:
        gate = latest_model_gate(conn, m.user_id, rubric_hash)
        detail = json.loads(gate["detail"] or "{}") if gate is not None else {}
        counted = m.name not in closed
        alone = with_vote = 0
        if counted:
            for key in final:
                who = voters.get(key, set()) - closed
                if m.name in who:
                    with_vote += 1
                    if who <= names and key not in decided:
                        alone += 1
        role = role_of(conn, m.user_id)
        decision = next((e for e in reversed(role_history(conn, m.user_id)) if e["role"] == role), None)
        out.append({
            "role": role, "role_decision": decision, "people_override": detail.get("people_override"),
            "name": m.name, "model_id": m.model_id, "kind": m.kind, "endpoint_host": m.host,
            "command": m.command, "prompt_hash": m.template_hash, "temperature": m.temperature, "seed": m.seed,
            "gate": None if gate is None else gate["outcome"], "failing": detail.get("failing", []),
            "override": None if gate is None or gate["outcome"] != "override"
            else {"reason": gate["reason"], "by": gate["decided_by"], "at": gate["created_at"]},
            "probes": probe_rates(conn, m, rubric_hash), "counted_in_final": counted,
            "final_grades_from_model_alone": alone, "final_grades_with_model_vote": with_vote,
            "share_alone": alone / total if total else 0.0, "share_with_vote": with_vote / total if total else 0.0,
            "instruction_like": instruction_like_summary(conn, m.user_id),
        })  # fmt: skip
    return out
