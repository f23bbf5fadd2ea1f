"""Text renderings of model labellers for ``qrelkit judge model``: the status table, a run's summary, the
probes; the values come from :mod:`qrelkit.app.models`."""

from __future__ import annotations

from typing import Any

__all__ = ["ranking_lines", "render_model_status", "render_probes", "render_run"]


def _num(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def probabilities_line(status: dict[str, Any]) -> str | None:
    """One line on the model's grade probabilities: asked or printed, how many grades carry them, and
    whether the endpoint refused log-probabilities (asked without them since). None when it has none."""
    found = status.get("probabilities") or {}
    asked, carried, refusals = (
        found.get("top_logprobs"),
        found.get("graded_with", 0),
        found.get("refusals") or [],
    )
    if asked is None and not carried:
        return None
    how = f"log-probabilities asked (top {asked})" if asked is not None else "printed by the program"
    line = f"grade probabilities: {how}; {carried} of {status['graded']} graded pairs carry them"
    if refusals:
        last = refusals[-1]
        line += (f"; the endpoint refused log-probabilities ({last['reason']}) at {last['at']}: asked without "
                 "them since" + (f" ({len(refusals)} runs)" if len(refusals) > 1 else ""))  # fmt: skip
    return line


def render_model_status(status: dict[str, Any]) -> str:
    """``judge model status``'s table (:func:`qrelkit.app.models.status.model_status`)."""
    lab, gate = status["labeller"], status["gate"]
    where = lab["endpoint_host"] or f"command {lab['command']}"
    out = [
        f"model labeller {lab['name']} (model {lab['model_id']}, {where}, temperature {lab['temperature']:g}, "
        f"prompt {lab['template_hash'][:12]})",
        f"round {status['round']}: {status['graded']} / {status['pairs']} pairs graded, calibration "
        f"{status['calibration_graded']} / {status['calibration_pairs']}; full pool "
        f"{'open' if status['full_pool_open'] else 'closed'}",
        f"gate: {status['gate_outcome'] or 'not decided'}"
        + ("" if gate.get("decided") else f" ({gate.get('waiting', '')})")
        + (
            f" (failing: {', '.join(gate['failing'])})" if gate.get("decided") and gate.get("failing") else ""
        ),
    ]
    role = status.get("role") or "labeller"
    if role != "labeller":
        out.insert(1, f"role: {role} ({_ROLE_WORDS[role]})")
    for event in status.get("role_history") or ():
        out.append(f"  {event['at']}  made {event['role']}" + (f": {event['reason']} (by {event['by']})"
                                                               if event["reason"] else ""))  # fmt: skip
    out += [f"warning: {w}" for w in gate.get("warnings") or ()]
    for part in gate.get("parts", []):
        mark = (
            "pass" if part["passed"] else "----" if part.get("not_run") else "FAIL"
        )  # not run is not failed
        out.append(f"  {mark}  {part['part']:<16} {part['why']}")
    rows = ([gate["versus_adjudicated"]] if gate.get("versus_adjudicated") else []) + gate.get(
        "versus_people", []
    )
    if rows:
        out.append("against         pairs   kappa   interval           leniency   interval")
        for r in rows:
            out.append(f"{r['reference']:<14} {r['n_pairs']:>6}  {_num(r['kappa']):>6}   "
                       f"[{_num(r['bootstrap_low'])}, {_num(r['bootstrap_high'])}]   {_num(r['leniency']):>8}   "
                       f"[{_num(r['leniency_low'])}, {_num(r['leniency_high'])}]")  # fmt: skip
        adj = gate.get("versus_adjudicated")
        if adj:
            out.append(
                "recall per adjudicated grade: "
                + ", ".join(f"{g}: {_num(v)}" for g, v in adj["recall"].items())
            )
    probes = gate.get("probes")
    if probes:
        out.append(render_probes(probes))
    audit = status.get("audit") or {}
    if audit.get("sample"):
        found = audit.get("agreement") or {}
        line = (
            f"audit: {audit['sample']} pairs given to people, {audit['graded_by_people']} graded by them; kappa "
            f"{_num(found.get('kappa'))} [{_num(found.get('bootstrap_low'))}, {_num(found.get('bootstrap_high'))}]"
        )
        out.append(line + ("; DRIFT: the interval's lower end is below the gate's threshold "
                           f"{_num(audit.get('threshold'))}" if audit.get("drift") else ""))  # fmt: skip
    agreed = status.get("agreed_disagreements") or {}
    if agreed.get("pairs"):
        out.append(f"pairs people agreed on: the model graded {agreed['pairs']}, and graded "
                   f"{agreed['disagreements']} of them otherwise (its disagreement: the people's grade stands)")  # fmt: skip
    flagged = status.get("instruction_like") or {}
    if flagged.get("pairs"):
        shown = ", ".join(f"{p['query_id']} {p['doc_id']} ({p['phrase']!r})" for p in flagged["listed"][:5])
        more = flagged["pairs"] - min(5, len(flagged["listed"]))
        out.append(f"instruction-like documents: {flagged['pairs']} of its pairs ({flagged['graded']} graded, "
                   f"{flagged['in_audit']} given to people in the audit sample): {shown}"
                   + (f" and {more} more (--format json lists {len(flagged['listed'])})" if more > 0 else ""))  # fmt: skip
    cost, fail = status["cost"], status["failures"]
    out.append(f"cost: {cost['grades']} grades, {cost['prompt_tokens']} prompt + {cost['completion_tokens']} "
               f"completion tokens, {cost['latency_ms'] / 1000:.1f} s; failures: {fail['attempts']} attempts, "
               f"{fail['pairs_given_up']} pairs given up")  # fmt: skip
    carried = probabilities_line(status)
    if carried:
        out.append(carried)
    for event in status["gate_history"]:
        extra = (
            f": {event['reason']} (by {event['by']})"
            if event["outcome"] == "override"
            else (f" ({', '.join(event['failing'])})" if event["failing"] else "")
        )
        out.append(f"  {event['at']}  round {event['round']}  {event['outcome']}{extra}")
    if status.get("ranking_agreement"):
        out.extend(ranking_lines(status["ranking_agreement"]))
    return "\n".join(out)


def ranking_lines(ranking: dict[str, Any]) -> list[str]:
    """A model labeller's ranking agreement (:func:`qrelkit.compare.decisions.model_ranking`): the
    decision-level agreement's text, or why it was not measured, and the ranking gate when asked for."""
    from .agreement import decision_lines

    role = ranking["role"]
    found = ranking["decision_agreement"]
    out = []
    if found is None:
        out.append(f"ranking agreement ({role}): not measured: {ranking['note']}")
    else:
        left = ranking["pairs_left_out"]
        out.append(
            f"the model's grades against the people's, as decisions ({role}; the calibration pairs with "
            "the people's settled grade and the model's"
            + (f", {left} left out" if left else "")
            + f"; {ranking['runs_from']}):"
        )
        out.extend(decision_lines(found))
    if ranking.get("gate"):
        out.append(ranking["gate"]["message"])
    return out


_ROLE_WORDS = {
    "predictor": "its grades only predict, corrected by people's; they never join the final qrels",
    "retired": "its grades left the progress counts, the queue and the final export; its events stay",
}


def render_probes(rates: dict[str, Any]) -> str:
    s, i, o = rates["stuffing"], rates["injection"], rates["order"]
    return (f"probes: keyword stuffing raised {s['raised']}/{s['answered']} ({_num(s['raised_rate'])}), "
            f"instruction injection raised {i['raised']}/{i['answered']} ({_num(i['raised_rate'])}), "
            f"order consistent {o['consistent']}/{o['answered']} ({_num(o['consistency'])})")  # fmt: skip


def render_run(summary: dict[str, Any]) -> str:
    gate = summary.get("gate") or {}
    outcome = gate.get("outcome") or ("not decided: " + gate.get("waiting", "") if gate else "not decided")
    failing = f" (failing: {', '.join(gate['failing'])})" if gate.get("failing") else ""
    audit = summary.get("audit") or {}
    audited = (
        f"; {audit['assigned']} pairs added to the people's audit sample" if audit.get("assigned") else ""
    )
    wide = gate.get("wide_interval")
    if wide:
        failing += (f"; non-inferiority rests on {wide['queries']} calibration queries: more calibration queries "
                    "would narrow its interval")  # fmt: skip
    warned = "".join(f"; warning: {w}" for w in gate.get("warnings") or ())
    return (f"model labeller {summary['model']}: {summary['graded']} pairs graded ({summary['asked']} asked, "
            f"{summary['cached']} from the cache), {summary['failed_pairs']} left ungraded after "
            f"{summary['failed_attempts']} failed attempts, {summary['left']} left by --budget-pairs; "
            f"gate: {outcome}{failing}{audited}{warned}")  # fmt: skip
