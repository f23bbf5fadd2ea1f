"""The live queue in words: estimates under a design (:func:`qrelkit.budget.queue.estimate_export`), as text
or JSON, ``judge plan``'s lines on what it chose, and ``judge status``'s on the design, the budget spent and
the estimates."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "FORMATS",
    "design_section",
    "render_design_differences",
    "render_design_estimates",
    "render_live_status",
    "render_plan",
]

#: What ``eval`` writes of estimates under a design.
FORMATS = ("table", "json")


def _withheld_line(found: dict[str, Any]) -> list[str]:
    """The text outputs' line on why no interval is given (``intervals_withheld``), if any."""
    return [f"# no intervals: {found['intervals_withheld']}"] if found.get("intervals_withheld") else []


def render_design_estimates(found: dict[str, Any], fmt: str = "table") -> str:
    """``found``: :meth:`qrelkit.budget.queue.ExportEstimate.to_dict`."""
    if fmt == "json":
        return json.dumps(found, indent=2, ensure_ascii=False) + "\n"
    design = found["design"]
    rows = found["estimates"]
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    out = [
        f"# estimates under the live queue's design: {design['strategy']} (budget {design['budget']} pairs, seed "
        f"{design['seed']}, {design.get('chosen', 0)} chosen pairs)",
        f"# estimator: {'; '.join(estimators)}",
        f"# model labeller {design['model']}: {found['sources']['model']}; people: {found['sources']['people']}",
        *_withheld_line(found),
        f"{'run':<20} {'measure':<10} {'estimate':>9}  interval (95%)",
    ]
    for r in rows:
        low, high = r["low"], r["high"]
        interval = "no interval" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
        out.append(f"{r['run']:<20} {r['measure']:<10} {r['estimate']:>9.4f}  {interval}")
    return "\n".join(out) + "\n"


def render_plan(plan: dict[str, Any]) -> list[str]:
    """``judge plan``'s lines: what the plan (or focused round) chose, of what budget, and what comes next."""
    notes = (
        [f"{plan['apart']} of them graded apart before the plan, awaiting a decision"]
        if plan["apart"]
        else []
    )
    notes += (
        [f"{plan['held']} held in people's plans (calibration or a model's audit)"] if plan["held"] else []
    )
    waiting = f" ({'; '.join(notes)})" if notes else ""
    kind = "took a focused round of" if plan["round"] else "chose"
    people = ", ".join(f"{n} {k}" for n, k in sorted(plan["people"].items()))
    lines = [f"live queue: {plan['strategy']} {kind} {plan['chosen']} pairs{waiting} for people beyond the "
             f"{plan['settled']} settled (a budget of {plan['budget']} of {plan['pooled']} pooled pairs, seed "
             f"{plan['seed']}, weighed by {plan['measure']} over {plan['runs']} runs with model labeller "
             f"{plan['model']}'s grades); given to: {people}"]  # fmt: skip
    if plan["round"]:
        lines.append(f"each taken with certainty; once people have graded them, plan the next round (`qrelkit "
                     f"judge plan {plan['db']} --round N`) or the final draw of the rest (`qrelkit judge plan "
                     f"{plan['db']}`)")  # fmt: skip
    return lines


def render_live_status(status: dict[str, Any] | None) -> list[str]:
    """``judge status``'s lines on the live queue (the values :func:`qrelkit.cli.judge_plan.status_lines` gathers)."""
    if status is None:
        return []
    design, spent = status["design"], status["spent"]
    if design["state"] != "planned":
        return [f"live queue: {design['strategy']}, a budget of {design['budget']} pairs, not planned yet (the "
                "people's queue beyond calibration waits for `qrelkit judge plan`)"]  # fmt: skip
    waiting = spent["awaiting_decision"]
    kind = ", a focused round" if design.get("kind") == "round" else ""
    lines = [f"live queue: {design['strategy']}{kind} (seed {design['seed']}, model labeller {design['model']}, "
             f"{design['measure']}); budget {design['budget']} pairs, {spent['spent']} spent ({design['judged_before']} "
             f"settled before the plan, {spent['chosen_judged']} of the {spent['chosen']} pairs it chose judged"
             + (f", {waiting} of them graded apart and awaiting a decision" if waiting else "") + ")"]  # fmt: skip
    if spent.get("graded_outside"):
        lines.append(f"{spent['graded_outside']} pairs the draw left out were graded since the plan (a model's audit, "
                     "say): the estimates leave their grades out, as the design did not choose them")  # fmt: skip
    if "estimates" not in status:
        return [*lines, f"estimates: not available ({status.get('unavailable')})"]
    withheld = status.get("intervals_withheld")
    partial = f", not valid yet: {withheld}" if withheld else ""
    lines.append(f"estimates of {design['measure']} ({status['estimator']}; 95% intervals{partial}):")
    for row in status["estimates"]:
        low, high = row["low"], row["high"]
        interval = "no interval" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
        lines.append(f"  {row['run']}: {row['estimate']:.4f} {interval}")
    return lines


def render_design_differences(found: dict[str, Any], rows: list[dict[str, Any]], fmt: str = "table") -> str:
    """``compare`` of an export under its design: each run against the baseline, the estimated difference
    and its interval (``rows``: :meth:`qrelkit.budget.queue.ExportEstimate.differences`)."""
    if fmt == "json":
        return json.dumps({**found, "differences": rows}, indent=2, ensure_ascii=False) + "\n"
    design = found["design"]
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    out = [f"# differences under the live queue's design: {design['strategy']} (seed {design['seed']})",
           f"# estimator: {'; '.join(estimators)}",
           *_withheld_line(found),
           f"{'run':<20} {'baseline':<20} {'measure':<10} {'difference':>10}  interval (95%)  verdict"]  # fmt: skip
    for r in rows:
        low, high = r["low"], r["high"]
        if low is None or high is None:
            interval, verdict = "no interval", "not decided (no interval)"
        else:
            interval = f"[{low:+.4f}, {high:+.4f}]"
            verdict = "better" if low > 0 else "worse" if high < 0 else "not distinguishable"
        out.append(
            f"{r['run']:<20} {r['baseline']:<20} {r['measure']:<10} {r['difference']:>+10.4f}  {interval}  {verdict}"
        )
    return "\n".join(out) + "\n"


def design_section(found: dict[str, Any]) -> str:
    """``qrelkit report``'s section on an export a live queue's design chose: every run's estimate and each
    difference from the baseline under the design's estimator, named (``found``: the values of
    :meth:`qrelkit.budget.queue.ExportEstimate.to_dict`)."""
    from .tables import _e, number, table

    design = found["design"]
    estimators = "; ".join(dict.fromkeys(r["estimator"] for r in found["estimates"]))
    lead = (f"<p>People judged the pairs a live queue chose: {_e(design['strategy'])}, a budget of "
            f"{_e(design['budget'])} pairs, seed {_e(design['seed'])}, with model labeller {_e(design['model'])}'s "
            f"grades. The numbers below are estimated under that design, by the {_e(estimators)}; the rest of "
            "the page reads the exported qrels as they are.</p>")  # fmt: skip
    if found.get("intervals_withheld"):
        lead += f"<p>No intervals: {_e(found['intervals_withheld'])}.</p>"

    def interval(r: dict[str, Any], signed: bool = False) -> str:
        if r["low"] is None or r["high"] is None:
            return "no interval"
        return f"[{number(r['low'], signed=signed)}, {number(r['high'], signed=signed)}]"

    means = table(["run", "measure", "estimate", "95% interval"],
                  [[r["run"], r["measure"], number(r["estimate"]), interval(r)] for r in found["estimates"]],
                  numeric=(2,), caption="Estimates under the design")  # fmt: skip
    differences = table(["run", "baseline", "measure", "difference", "95% interval"],
                        [[r["run"], r["baseline"], r["measure"], number(r["difference"], signed=True),
                          interval(r, signed=True)] for r in found["differences"]],
                        numeric=(3,), caption="Differences under the design")  # fmt: skip
    return lead + means + differences
