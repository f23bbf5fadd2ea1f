"""Tables shared by the comparison's renderers and the HTML page: the rows of the pairs, noise-floor,
topic-set-size and ANOVA/Tukey tables, how a number, an option set and a p-value are printed, and the
accessible HTML table. Imports nothing of the report's own, so the renderers that use it form no cycle."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def markdown_text(text: object) -> str:
    """``text`` as Markdown shows it and nothing more: on one line, with HTML (``&``, ``<``, ``>``) escaped as
    the HTML outputs escape it, and the marks that would end a table cell, open code or make a link or an
    image (``|``, a backtick, ``](``, a backslash) escaped. Every Markdown writer passes each value it did
    not write itself (ids, run and file names, model ids, warnings) through here."""
    out = " ".join(str(text).splitlines()).replace("\\", "\\\\")
    for mark, escaped in (("|", "\\|"), ("`", "\\`"), ("](", "]\\(")):
        out = out.replace(mark, escaped)
    return html.escape(out, quote=False)


def markdown_comment(line: str) -> str:
    """A provenance line as a Markdown (HTML) comment that nothing in it can end: ``<`` and ``>`` are written
    as JSON's escapes ``\\u003c`` and ``\\u003e`` (the JSON values read back the same), on one line."""
    text = " ".join(line.lstrip("# ").splitlines()).replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<!-- {text} -->"


def latex_comment(line: str) -> str:
    """A provenance line as a LaTeX comment, on one line: a line break in a value would end the comment."""
    return "% " + " ".join(line.lstrip("# ").splitlines())


def wrappable(text: object) -> str:
    """``text`` escaped, with a line-break opportunity after each comma not followed by a space: a long
    measure string (``nDCG(gain=exponential,discount=log2,...)@10``) wraps inside its cell instead of
    widening the table, and copies as one string."""
    return re.sub(r",(?=\S)", ",<wbr>", _e(text))


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[int] = (), caption: str = ""
) -> str:
    """An accessible table (scoped headers, optional caption) that fits its page: cells wrap (long measure
    strings after their commas, see :func:`wrappable`) and, on a narrow screen, each row stacks as a list of
    "header value" lines (``class="stack"``; every cell carries its header as ``data-label``). Cells are
    escaped unless given as ``("html", markup)``."""
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    head = "".join(
        f'<th scope="col"{" class=n" if i in numeric else ""}>{_e(h)}</th>' for i, h in enumerate(headers)
    )
    labels = [_e(h) for h in headers]
    body = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            if isinstance(c, tuple) and c and c[0] == "html":
                text = c[1]
            else:
                text = _e(c) if i in numeric else wrappable(c)
            label = labels[i] if i < len(labels) else ""
            cells.append(f'<td data-label="{label}"{" class=n" if i in numeric else ""}>{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f"<div class='scroll'><table class='stack'>{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0] in "+-–[0123456789" or cell in ("inf", "unreachable"))


def _grid(headers: Any, rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    out = [line, "  ".join("-" * w for w in widths).rstrip()]
    for r in rows:
        cells = zip(r, widths, strict=True)
        out.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in cells).rstrip())
    return out


COLUMNS = ("baseline", "treatment", "measure", "n", "base", "treat", "diff", "W/T/L", "t-interval",
           "bootstrap interval", "ES", "p", "p adj", "sig")  # fmt: skip


def number(x: float | None, digits: int = 4, missing: str = "–", *, signed: bool = False) -> str:
    """A number as every report shows it: ``digits`` decimals (with its sign when ``signed``; an infinity
    as ``inf`` or ``-inf``), or ``missing`` (a dash unless the renderer says otherwise) for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def p_text(x: float | None) -> str:
    """A p-value as printed: 4 decimals, or scientific below 1e-4 (never a bare 0.0000)."""
    if x is None or math.isnan(x):
        return "–"
    return f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}"


def options_line(comparison: Any) -> str:
    o = comparison.options
    if o.test == "randomization":
        if o.permutations == "auto":
            test = f"randomization (exact when at most 24 queries differ, else {o.monte_carlo_permutations} permutations)"
        elif o.permutations == "exact":
            test = "randomization (exact enumeration)"
        else:
            test = f"randomization ({o.permutations} permutations)"
    elif o.test == "wilcoxon":
        test = "wilcoxon (zero_method=wilcox, correction=False, exact when n<=50 without ties)"
    elif o.test == "bootstrap":
        test = f"bootstrap ({o.bootstrap} resamples, shifted)"
    else:
        test = "paired t"
    return (
        f"test: {test}; correction: {o.correction} over {o.family}; alpha: {o.alpha}; seed: {o.seed}; "
        f"intervals: {o.level:.0%} (t, and paired bootstrap with B={o.bootstrap})"
    )


def _rows(comparison: Any) -> list[list[str]]:
    rows = []
    for p in comparison.pairs:
        rows.append(
            [
                p.baseline,
                p.treatment,
                p.measure,
                str(p.queries),
                number(p.mean_baseline),
                number(p.mean_treatment),
                f"{p.difference:+.4f}" if math.isfinite(p.difference) else "–",
                f"{p.wins}/{p.ties}/{p.losses}",
                f"[{number(p.t_interval[0])}, {number(p.t_interval[1])}]",
                f"[{number(p.bootstrap_interval[0])}, {number(p.bootstrap_interval[1])}]",
                number(p.effect_size, 2),
                p_text(p.p_value),
                p_text(p.p_adjusted),
                "*" if p.significant else "",
            ]
        )
    return rows


def _noise_rows(comparison: Any) -> list[list[str]]:
    out = []
    for p in comparison.pairs:
        if p.noise is None:
            continue
        n = p.noise
        out.append(
            [
                p.baseline,
                p.treatment,
                p.measure,
                f"{p.difference:+.4f}",
                number(n.empirical_floor),
                f"[{number(n.simulated_low)}, {number(n.simulated_high)}]",
                number(n.sign_flip, 3),
                p.verdict or "",
            ]
        )
    return out


NOISE_COLUMNS = (
    "baseline",
    "treatment",
    "measure",
    "diff",
    "floor",
    "simulated 95% range",
    "P(flip)",
    "verdict",
)
POWER_COLUMNS = ("baseline", "treatment", "measure", "delta", "sd(d)", "n now", "power now", "n for power")
MULTI_COLUMNS = (
    "baseline",
    "treatment",
    "diff",
    "q",
    "p (Tukey)",
    "simultaneous interval",
    "ES_E",
    "p (randomised)",
)


def _power_rows(comparison: Any) -> list[list[str]]:
    out = []
    for p in comparison.pairs:
        if p.power is None:
            continue
        w = p.power
        out.append(
            [p.baseline, p.treatment, p.measure, f"{w.delta:+.4f} ({w.delta_source})", number(w.sd), str(w.queries_now),
             number(w.power_now, 3), str(w.queries_needed) if w.queries_needed is not None else "unreachable"]
        )  # fmt: skip
    return out


def multi_columns(m: Any) -> tuple[str, ...]:
    """The Tukey table's columns: ``p (randomised)`` only when the randomised Tukey HSD was run
    (``--multi randomized-tukey``), never a column of dashes."""
    return MULTI_COLUMNS if m.randomized_p is not None else MULTI_COLUMNS[:-1]


def _multi_rows(m: Any) -> list[list[str]]:
    out = []
    for i, t in enumerate(m.pairs):
        row = [m.runs[t.first], m.runs[t.second], f"{t.difference:+.4f}", number(t.q, 3), p_text(t.p_value),
               f"[{number(t.ci_low)}, {number(t.ci_high)}]", number(t.effect_size, 2)]  # fmt: skip
        out.append(row if m.randomized_p is None else [*row, p_text(m.randomized_p[i])])
    return out


def _anova_line(m: Any) -> str:
    a = m.anova
    return (
        f"{m.measure}: two-way ANOVA without replication over {m.queries} queries x {len(m.runs)} runs: "
        f"systems F({a.df_systems}, {a.df_error}) = {number(a.f_systems, 3)}, p = {p_text(a.p_systems)}; "
        f"queries F({a.df_queries}, {a.df_error}) = {number(a.f_queries, 3)}, p = {p_text(a.p_queries)}; "
        f"residual MS = {number(a.ms_error, 6)}"
    )


def detail_sections(comparison: Any) -> list[tuple[str, str, str]]:
    """(id, heading, html) for the noise-floor, topic-set-size and ANOVA/Tukey tables, when present: the
    HTML comparison page and the report show them the same way."""
    out = []
    if comparison.noise is not None:
        out.append(("noise", "Labeller-noise floor", table(NOISE_COLUMNS, _noise_rows(comparison))))
    if _power_rows(comparison):
        heading = "Topic-set size" + (
            " (paired t on the model's grades alone)" if comparison.human is not None else ""
        )
        out.append(("power", heading, table(POWER_COLUMNS, _power_rows(comparison))))
    for i, m in enumerate(comparison.multi):
        body = f"<p>{html.escape(_anova_line(m))}</p>" + table(multi_columns(m), _multi_rows(m))
        out.append((f"multi-{i}", f"{m.measure}: all runs together (ANOVA, Tukey HSD)", body))
    return out
