"""``qrelkit conventions``: how much each convention moves one run's score, and why two profiles differ."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES
from .evaluate import convention_options, conventions_from, load_inputs, profile_option

_ARROW = {"up": "up", "down": "down", "none": "none", "refused": "-"}


def _num(value: float | None, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def _inputs(qrels_obj: Any, run_obj: Any) -> dict[str, Any]:
    from .._version import __version__

    return {
        "tool": {"name": "qrelkit", "version": __version__},
        "qrels": {"name": qrels_obj.name, "fingerprint": qrels_obj.fingerprint.to_dict()},
        "run": {"name": run_obj.name, "fingerprint": run_obj.fingerprint.to_dict()},
    }


def _sweep_output(variants: list[Any], measure: str, fmt: str, header: dict[str, Any]) -> str:
    if fmt == "json":
        return (
            json.dumps(header | {"measure": measure, "rows": [v.to_dict() for v in variants]}, indent=2)
            + "\n"
        )
    headers = ["kind", "conventions", "mean", "diff", "direction", "moved", "at 1.0", "flag"]
    rows = []
    for v in variants:
        if v.kind == "axis":
            what = v.label
        elif v.kind == "profile":
            changed = [f"{axis}={new}" for axis, _, new in variants[0].conventions.differences(v.conventions)]
            what = f"{v.label}: " + (",".join(changed) if changed else "as default")
        else:
            what = "default" if v.conventions.profile is None else f"base: {v.conventions.profile_label()}"
        flag = "optimistic: " + ",".join(v.optimistic) if v.optimistic else ""
        if v.refused:
            flag = f"refused: {v.refused}"
        rows.append(
            [
                v.kind,
                what,
                _num(v.mean),
                _num(v.diff, signed=True) if v.kind != "default" else "",
                _ARROW[v.direction] if v.kind != "default" else "",
                str(v.moved) if v.kind != "default" and not v.refused else "",
                str(v.perfect) if not v.refused else "",
                flag,
            ]
        )
    if fmt == "tsv":
        return "\n".join("\t".join(r) for r in [headers, *rows]) + "\n"
    title = f"{measure} of run {header['run']['name']!r} under every profile and every single-axis change\n"
    note = (
        "diff: mean minus the default's; moved: queries whose value changed; at 1.0: queries scoring exactly 1;"
        " optimistic: a choice that can only raise the score\n"
    )
    return title + _table(headers, rows) + note


def _diff_output(att: Any, names: tuple[str, str], measure: str, fmt: str, header: dict[str, Any]) -> str:
    if fmt == "json":
        body = header | {"measure": measure, "profiles": list(names)} | att.to_dict()
        return json.dumps(body, indent=2) + "\n"
    rows = [
        [
            q.query_id,
            _num(q.a),
            _num(q.b),
            _num(q.b - q.a, True) if q.a is not None and q.b is not None else "-",
            ",".join(q.axes) if q.axes else "only the axes together",
        ]
        for q in att.queries
    ]
    headers = ["query", names[0], names[1], "diff", "explained by"]
    if fmt == "tsv":
        return "\n".join("\t".join(r) for r in [headers, *rows]) + "\n"
    axes = "; ".join(f"{axis}: {a} vs {b}" for axis, a, b in att.axes) or "none"
    effects = "; ".join(f"{axis} {_num(d, True)}" for axis, d in att.mean_effects.items()) or "none"
    return (
        f"{measure}: {names[0]} {_num(att.mean_a)} vs {names[1]} {_num(att.mean_b)} "
        f"({len(att.queries)} queries differ)\n"
        f"differing axes: {axes}\n"
        f"mean change from {names[0]} when one axis takes {names[1]}'s value: {effects}\n"
        + (_table(headers, rows) if rows else "")
    )


def _list_output(fmt: str) -> str:
    from ..profiles import PROFILES

    if fmt == "json":
        return json.dumps([p.to_dict() for p in PROFILES.values()], indent=2) + "\n"
    axes = list(next(iter(PROFILES.values())).conventions.axes())
    rows = [
        [p.name, *p.conventions.axes().values(), p.on_duplicate, ",".join(p.refuses)]
        for p in PROFILES.values()
    ]
    headers = ["profile", *axes, "on_duplicate", "refuses"]
    if fmt == "tsv":
        return "\n".join("\t".join(r) for r in [headers, *rows]) + "\n"
    return _table(headers, rows)


@click.command("conventions")
@click.argument("qrels", type=click.Path(dir_okay=False), required=False)
@click.argument("run", type=click.Path(dir_okay=False), required=False)
@click.option("-m", "--measure", default="nDCG@10", show_default=True, help="the measure to compare")
@click.option(
    "--diff",
    nargs=2,
    metavar="PROFILE_A PROFILE_B",
    default=None,
    help="list the queries that differ between two profiles and the axis that explains each "
    "('default' names the default conventions)",
)
@click.option("--list", "list_profiles", is_flag=True, help="list the profiles and their conventions")
@click.option(
    "-f",
    "--format",
    "out_format",
    type=click.Choice(["table", "json", "tsv"]),
    default="table",
    show_default=True,
)
@click.option("--input-format", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True)
@click.option("--on-duplicate", type=click.Choice(ON_DUPLICATE_CHOICES), default="error", show_default=True)
@profile_option
@convention_options
def command(
    qrels: str | None,
    run: str | None,
    measure: str,
    diff: tuple[str, str] | None,
    list_profiles: bool,
    out_format: str,
    input_format: str,
    on_duplicate: str,
    **options: Any,
) -> None:
    """Score RUN under every profile and under each single-axis change from the default conventions.

    The table gives each mean, its difference from the default, the direction, how many queries moved,
    how many score exactly 1, and flags the optimistic choices (the returned-only ideal, dropping unjudged
    documents, optimistic ties). --profile or axis flags change the base the others are compared with.
    --diff A B lists the queries on which two profiles disagree and the axis that explains each.
    """
    from ..diagnose import attribute, sweep
    from ..errors import ValidationError
    from ..measures import parse
    from ..profiles import get_profile

    if list_profiles:
        click.echo(_list_output(out_format), nl=False)
        return
    if qrels is None or run is None:
        raise ValidationError(
            "conventions needs QRELS and RUN", fix="run `qrelkit conventions QRELS RUN -m nDCG@10`, or --list"
        )
    base = conventions_from(options)
    m = parse(measure)
    qrels_obj, (run_obj,) = load_inputs(qrels, (run,), input_format, on_duplicate, None)
    header = _inputs(qrels_obj, run_obj)
    if diff:
        for name in diff:
            if name != "default":
                get_profile(name).check(qrels_obj, [run_obj])  # a profile's refusals hold here too
        convs = [base if name == "default" else get_profile(name).conventions for name in diff]
        att = attribute(qrels_obj, run_obj, m, convs[0], convs[1])
        click.echo(_diff_output(att, diff, str(m), out_format, header), nl=False)
        return
    variants = sweep(qrels_obj, run_obj, m, base)
    click.echo(_sweep_output(variants, str(m), out_format, header), nl=False)
