"""Rendering of ``qrelkit conventions``: the sweep of each run under every profile and single-axis change,
the per-query attribution of two profiles' difference, and the list of profiles (text, TSV, JSON).

With one run the outputs are :func:`render_sweep`'s and :func:`render_diff`'s; with several
(:func:`render_sweeps`, :func:`render_diffs`) the text gives one block per run, TSV a leading ``run``
column, and JSON the header and ``"runs": [{"run": name, "fingerprint": ..., ...one run's fields}]``."""

from __future__ import annotations

import json
import re
from typing import Any

from .tables import number

__all__ = ["render_diff", "render_diffs", "render_profiles", "render_sweep", "render_sweeps"]

_ARROW = {"up": "up", "down": "down", "none": "none", "refused": "-"}


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


#: The conventions column of the text table wraps at this width, under itself (the numbers stay first).
WRAP = 64


def _wrapped_table(headers: list[str], rows: list[list[str]], wrap: int) -> str:
    """:func:`_table` with the last column wrapped at ``wrap`` characters (after a comma, a semicolon or a
    space), each further line under the column."""
    lead = [r[:-1] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in lead)) if lead else len(h) for i, h in enumerate(headers[:-1])]
    indent = sum(widths) + 2 * len(widths)

    def pieces(text: str) -> list[str]:
        out, line = [], ""
        for token in re.findall(r"[^,;\s]+[,;]?\s*", text):
            if line and len(line + token.rstrip()) > wrap:
                out.append(line.rstrip())
                line = ""
            line += token
        return [*out, line.rstrip()]

    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, [*widths, 0], strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in [*widths, min(wrap, max((len(r[-1]) for r in rows), default=0))]))
    for r in rows:
        first, *more = pieces(r[-1])
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip([*r[:-1], first], [*widths, 0], strict=True)).rstrip()
        )
        lines += [" " * indent + piece for piece in more]
    return "\n".join(lines) + "\n"


def _unmoved(v: Any) -> bool:
    """A change from the default that moves no query (a mean that differs in its last bits moves none)."""
    return v.kind != "default" and not v.refused and v.moved == 0


def render_sweep(
    variants: list[Any], measure: str, fmt: str, header: dict[str, Any], hide_unmoved: bool = False
) -> str:
    """The sweep of one run. The text table puts the numbers first and the conventions last, wrapped;
    ``hide_unmoved`` leaves out the profiles and axes that move no query (their count is said)."""
    hidden = [v for v in variants if _unmoved(v)] if hide_unmoved else []
    variants = [v for v in variants if v not in hidden]
    left_out = [v.label for v in hidden]
    if fmt == "json":
        body = header | {"measure": measure, "rows": [v.to_dict() for v in variants]}
        if hide_unmoved:
            body["hidden_unmoved"] = left_out  # the profiles and axes that move no query, left out
        return json.dumps(body, indent=2) + "\n"
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
                number(v.mean, 4, "-"),
                number(v.diff, 4, "-", signed=True) if v.kind != "default" else "",
                _ARROW[v.direction] if v.kind != "default" else "",
                str(v.moved) if v.kind != "default" and not v.refused else "",
                str(v.perfect) if not v.refused else "",
                flag,
            ]
        )
    if fmt == "tsv":
        lines = ["\t".join(r) for r in [headers, *rows]]
        if hidden:
            lines.append(
                f"# {len(hidden)} profiles and axes that move no query left out: {', '.join(left_out)}"
            )
        return "\n".join(lines) + "\n"
    title = f"{measure} of run {header['run']['name']!r} under every profile and every single-axis change\n"
    import textwrap

    note = (
        "diff: mean minus the default's; moved: queries whose value changed; at 1.0: queries scoring exactly 1;"
        " optimistic: a choice that can only raise the score"
    )
    if hidden:
        note += f"\n{len(hidden)} profiles and axes that move no query left out: " + ", ".join(
            v.label for v in hidden
        )
    note = "\n".join(textwrap.fill(line, 110, break_on_hyphens=False) for line in note.splitlines()) + "\n"
    # the numbers first; the conventions last, wrapped, with the flag after them
    text_rows = [[*r[2:7], r[0], r[1] + (f"; {r[7]}" if r[7] else "")] for r in rows]
    return title + _wrapped_table([*headers[2:7], "kind", "conventions; flag"], text_rows, WRAP) + note


def _one_run(header: dict[str, Any], name: str) -> dict[str, Any]:
    out = {k: v for k, v in header.items() if k != "runs"}
    out["run"] = next(r for r in header["runs"] if r["name"] == name)
    return out


def _several(
    found: list[tuple[str, Any]],
    fmt: str,
    header: dict[str, Any],
    one: Any,
    fields: dict[str, Any],
    named: bool = False,
) -> str:
    """``one(value, fmt, header)`` per run, joined as the module docstring says."""
    if fmt == "json":
        runs = []
        for name, value in found:
            body = json.loads(one(value, "json", _one_run(header, name)))
            fingerprint = body["run"]["fingerprint"]
            rest = {k: v for k, v in body.items() if k not in header and k not in fields and k != "run"}
            runs.append({"run": name, "fingerprint": fingerprint, **rest})
        return json.dumps(header | fields | {"runs": runs}, indent=2) + "\n"
    if fmt == "tsv":
        out = []
        for i, (name, value) in enumerate(found):
            lines = one(value, "tsv", _one_run(header, name)).splitlines()
            out += (["run\t" + lines[0]] if i == 0 else []) + [
                f"# run {name}: {line[2:]}" if line.startswith("# ") else f"{name}\t{line}"
                for line in lines[1:]
            ]
        return "\n".join(out) + "\n"
    return "\n".join(
        (f"run {name!r}\n" if named else "") + one(value, fmt, _one_run(header, name))
        for name, value in found
    )


def pipe_lines(header: dict[str, Any], profile: str | None) -> str:
    """The two ``#`` lines of a piped TSV (:func:`qrelkit.report.pipe_header`) from a provenance ``header``
    (tool, qrels, runs), ``profile`` the base conventions' profile."""
    from . import pipe_header

    runs = [(r["name"], r["fingerprint"]["sha256"]) for r in header["runs"]]
    full = "# full provenance (fingerprints, each row's conventions): --format json"
    lines = pipe_header(
        header["tool"]["version"], profile, header["qrels"]["fingerprint"]["sha256"], runs, full
    )
    return "\n".join(lines) + "\n"


def render_sweeps(swept: list[tuple[str, list[Any]]], measure: str, fmt: str, header: dict[str, Any],
                  hide_unmoved: bool = False, profile: str | None = None) -> str:  # fmt: skip
    """The sweep of each run (``(name, variants)``); one run gives :func:`render_sweep`'s output. TSV
    starts with the two lines of a pipe."""
    head = pipe_lines(header, profile) if fmt == "tsv" else ""
    if len(swept) == 1:
        return head + render_sweep(swept[0][1], measure, fmt, _one_run(header, swept[0][0]), hide_unmoved)
    return head + _several(swept, fmt, header, lambda v, f, h: render_sweep(v, measure, f, h, hide_unmoved),
                           {"measure": measure} | ({"hide_unmoved": True} if hide_unmoved else {}))  # fmt: skip


def render_diffs(found: list[tuple[str, Any]], names: tuple[str, str], measure: str, fmt: str,
                 header: dict[str, Any], profile: str | None = None) -> str:  # fmt: skip
    """Two profiles' difference on each run (``(name, attribution)``); one run gives :func:`render_diff`'s.
    TSV starts with the two lines of a pipe."""
    head = pipe_lines(header, profile) if fmt == "tsv" else ""
    if len(found) == 1:
        return head + render_diff(found[0][1], names, measure, fmt, _one_run(header, found[0][0]))
    fields = {"measure": measure, "profiles": list(names)}
    return head + _several(
        found, fmt, header, lambda a, f, h: render_diff(a, names, measure, f, h), fields, True
    )


def render_diff(att: Any, names: tuple[str, str], measure: str, fmt: str, header: dict[str, Any]) -> str:
    if fmt == "json":
        body = header | {"measure": measure, "profiles": list(names)} | att.to_dict()
        return json.dumps(body, indent=2) + "\n"
    rows = [
        [
            q.query_id,
            number(q.a, 4, "-"),
            number(q.b, 4, "-"),
            number(q.b - q.a, 4, "-", signed=True) if q.a is not None and q.b is not None else "-",
            ",".join(q.axes) if q.axes else "only the axes together",
        ]
        for q in att.queries
    ]
    headers = ["query", names[0], names[1], "diff", "explained by"]
    if fmt == "tsv":
        return "\n".join("\t".join(r) for r in [headers, *rows]) + "\n"
    axes = "; ".join(f"{axis}: {a} vs {b}" for axis, a, b in att.axes) or "none"
    effects = (
        "; ".join(f"{axis} {number(d, 4, '-', signed=True)}" for axis, d in att.mean_effects.items())
        or "none"
    )
    return (
        f"{measure}: {names[0]} {number(att.mean_a, 4, '-')} vs {names[1]} {number(att.mean_b, 4, '-')} "
        f"({len(att.queries)} queries differ)\n"
        f"differing axes: {axes}\n"
        f"mean change from {names[0]} when one axis takes {names[1]}'s value: {effects}\n"
        + (_table(headers, rows) if rows else "")
    )


def render_profiles(fmt: str) -> str:
    from ..measures.profiles import PROFILES

    if fmt == "json":
        return json.dumps([p.to_dict() for p in PROFILES.values()], indent=2) + "\n"
    axes = list(next(iter(PROFILES.values())).conventions.axes())
    rows = [
        [p.name, *p.conventions.axes().values(), p.on_duplicate, ",".join(p.refuses)]
        for p in PROFILES.values()
    ]
    headers = ["profile", *axes, "on_duplicate", "refuses"]
    if fmt == "tsv":  # the pipe's two lines: no inputs, so the version alone
        from .._version import __version__

        head = [
            f"# qrelkit {__version__} · the profiles' conventions",
            "# each profile's tool, evidence and notes: --format json",
        ]
        return "\n".join([*head, *("\t".join(r) for r in [headers, *rows])]) + "\n"
    return _table(headers, rows)
