"""Text renderings of the judging project's state for ``qrelkit judge status|kappa|queue|show``; the
values come from :mod:`qrelkit.app` (the admin page shows the same values as HTML)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["render_history", "render_kappa", "render_queue", "render_status"]


def render_status(status: dict[str, Any]) -> str:
    """Progress per labeller and per query (:func:`qrelkit.app.grades.progress`)."""
    phase = status["phase"]
    out = [f"phase: {phase['state']} (round {phase['round']}); done counts grades under the current rubric"]
    if phase.get("outcome") == "unmeasurable":
        out.append(f"gate: not measurable: {phase.get('reason')}")
    pace = status.get("pace", {})
    out.append("labeller      done / assigned   done %   calibration   unsure   pairs/hour   median s/pair")
    for r in status["labellers"]:
        pct = 100 * r["done"] / r["assigned"] if r["assigned"] else 0
        cal = f"{r['calibration_done']}/{r['calibration_assigned']}"
        p = pace.get(r["name"], {})
        per_hour, median = p.get("pairs_per_hour"), p.get("median_seconds_per_pair")
        speed = f"{'-' if per_hour is None else f'{per_hour:.1f}':>10}   {'-' if median is None else f'{median:.1f}':>13}"
        out.append(
            f"{r['name']:<12} {r['done']:>5} / {r['assigned']:<8}   {pct:5.1f}%   {cal:>11}   {r['unsure']:>6}   {speed}"
        )
    out += ["", "query    done / assigned  labellers"]
    for q in status["queries"]:
        flag = " (calibration)" if q["calibration"] else ""
        out.append(f"{q['query_id']:<8} {q['done']:>4} / {q['assigned']:<4}  {q['labellers'] or ''}{flag}")
    out.append(f"\n{status['events']} grade events")
    if pace:
        out.append(
            "pace: the gaps between a labeller's grades; a gap over 10 minutes is a break, not counted"
        )
    return "\n".join(out) + "\n"


def render_kappa(
    phase: Any, history: Sequence[dict[str, Any]], states: Sequence[Any], group: dict[str, Any] | None = None
) -> str:
    """The phase, every calibration round, each pair of labellers' agreement and gate, and, with more than
    two labellers or a group statistic, the group's (:func:`qrelkit.report.agreement.group_lines`)."""
    out = [f"phase: {phase.state} (round {phase.round})"]
    if phase.outcome == "unmeasurable":
        out.append(f"gate: not measurable: {phase.reason}")
        out.append(
            "  give a labeller's pairs to another (`qrelkit judge reassign`), revise the rubric (`qrelkit judge "
            "revise`), or open judging with a reason (`qrelkit judge override`)"
        )
    for r in history:
        rub = r["rubric"]
        line = f"round {r['round']}: rubric {rub['name']} {rub['version']} ({rub['content_hash'][:12]}), "
        line += f"{len(r['queries'])} queries ({r['query_rule']}), {r['status']}"
        if r.get("not_measurable") and r["round"] != phase.round:
            line += f": {r['not_measurable']}"
        if r["override"]:
            o = r["override"]
            line += f"; overridden by {o['by']} at {o['at']}: {o['reason']}"
        out.append(line)
    if not states:
        out.append("no calibration pairs shared by two labellers in this round")
    for s in states:
        head = f"{s.labeller_a} and {s.labeller_b} ({s.shared} shared pairs)"
        if s.report is None:
            out.append(
                f"{head}: waiting, {s.labeller_a} {s.done_a}/{s.shared}, {s.labeller_b} {s.done_b}/{s.shared}"
            )
        else:
            out.append(f"{head}: {s.gate.message}")
        if getattr(s, "warning", None):
            out.append(f"  warning: {s.warning}")
    if group is not None and (len(group["labellers"]) > 2 or group["statistic"] != "kappa"):
        from .agreement import group_lines

        out += ["", *group_lines(group)]
    return "\n".join(out) + "\n"


def render_queue(queue: dict[str, Any], items: Sequence[dict[str, Any]]) -> str:
    """The adjudication queue (:func:`qrelkit.app.grades.adjudication_queue`), ``items`` of it shown."""
    out = [f"{len(queue['items'])} pairs to adjudicate, ordered by {queue['method']}"]
    measure = ("leverage (the largest nDCG change one regrade causes; else the grade distance)"
               if queue["method"] == "leverage" else "grade distance (unsure counts as the whole scale)")  # fmt: skip
    out.append(f"query_id\tdoc_id\tgrades\t{measure}")
    for i in items:
        grades = ", ".join(
            f"{n}: {'-' if v is None else v}{' unsure' if n in i['unsure'] else ''}"
            for n, v in sorted(i["grades"].items())
        )
        leverage = queue["method"] == "leverage" and i["leverage"] is not None
        out.append(f"{i['query_id']}\t{i['doc_id']}\t{grades}\t{i['leverage']:.4f}" if leverage else
                   f"{i['query_id']}\t{i['doc_id']}\t{grades}\t{i['distance']}")  # fmt: skip
    return "\n".join(out) + "\n"


def render_history(query_id: str, doc_id: str, events: Sequence[Any], adjudications: Sequence[Any]) -> str:
    """Every grade event and adjudication of one pair, oldest first
    (:func:`qrelkit.app.queries.pair_history`)."""
    rows = [(e["created_at"], "grade", e["name"], e["grade"], e["unsure"], e["note"]) for e in events]
    rows += [(a["created_at"], "final", a["name"] or "-", a["grade"], 0,
              f"[decision {a['event_id']}]" + (f" {a['note']}" if a["note"] else ""))
             for a in adjudications]  # fmt: skip
    rows += [(a["undone_at"], "undo", a["undone_by"] or "-", a["grade"], 0, None)
             for a in adjudications if a["undone_at"]]  # fmt: skip
    if not rows:
        return f"no grades for ({query_id}, {doc_id})\n"
    out = []
    for at, kind, name, grade, unsure, note in sorted(rows, key=lambda r: r[0]):
        shown = "-" if grade is None else str(grade)
        out.append(
            f"{at}  {kind:<5} {name:<12} {shown}{' unsure' if unsure else ''}{'  ' + note if note else ''}"
        )
    return "\n".join(out) + "\n"


def render_init(db: Any, summary: dict[str, Any], min_kappa: float) -> list[tuple[str, bool]]:
    """What ``qrelkit judge init`` prints about the project it created, as (line, to stderr) in order:
    the pairs and queries, the calibration queries and the gate, warnings, the seed, each labeller's
    pairs, the stored runs and how to invite the admin."""
    from qrelkit.agreement.group import STATISTIC_NAMES

    out = [(f"created {db}: {summary['pairs']} pairs over {summary['queries']} queries to judge", False)]
    if summary["prejudged"]:
        out.append((f"  {summary['prejudged']} pooled pairs were judged already and are left out", False))
    cal = summary["calibration_queries"]
    out.append((f"  calibration queries ({len(cal)}): {', '.join(cal) if cal else 'none'}", False))
    if cal:
        out.append((f"  {summary['calibration_labellers']} labellers per calibration query; gate: "
                    f"{STATISTIC_NAMES[summary['gate_statistic']]}, {summary['gate_use']} >= {min_kappa:g}", False))  # fmt: skip
    else:
        out.append(("  judging is open at once; agreement not measured (recorded in the manifest)", False))
    out += [(f"warning: {note}", True) for note in summary["notes"]]
    out.append((f"  seed: {summary['seed']}", False))
    out += [(f"  {name}: {n} pairs", False) for name, n in summary["labellers"].items()]
    if summary["runs"]:
        out.append((f"  runs stored: {', '.join(summary['runs'])}", False))
    out.append(
        (f"  admin: {summary['admin']} (invite with: qrelkit judge invite {db} {summary['admin']})", False)
    )
    return out
