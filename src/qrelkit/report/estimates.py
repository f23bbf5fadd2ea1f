"""Rendering of :class:`~qrelkit.estimation.Estimates` (``qrelkit eval --human``) and of a comparison's
estimated differences (``qrelkit compare --human``): text, JSON, Markdown, TSV, CSV, LaTeX and HTML.

Renderers never compute a statistic. Every format carries the estimator, lambda, |H|, |U|, both qrels'
fingerprints and the conventions: JSON as fields, the text formats as header or comment lines.
"""

from __future__ import annotations

import json
from typing import Any

from .._typing import ESTIMATES_FORMATS
from .estimate_tables import COLUMNS, LAMBDA_LINE, reason_lines, rows, settings_lines
from .tables import _grid

FORMATS = ESTIMATES_FORMATS


def render_estimates_text(estimates: Any) -> str:
    res = estimates.model
    out = ["qrelkit eval --human (* = the chosen estimator; eff. |H| = human-judged queries a people-only "
           "estimate would need for as narrow an interval)", ""]  # fmt: skip
    out += _grid(COLUMNS, rows(estimates))
    out += [LAMBDA_LINE, *reason_lines(estimates)]
    out += ["", *settings_lines(estimates.settings(), res.conventions)]
    out += [f"run: {r.name} sha256:{r.fingerprint.sha256[:16]}" for r in res.runs]
    out += [f"warning: {w}" for w in dict.fromkeys((*estimates.warnings, *res.warnings))]
    out.append(f"qrelkit {res.version}")
    return "\n".join(out) + "\n"


def render_estimates_json(estimates: Any) -> str:
    return json.dumps(estimates.to_dict(), indent=2, allow_nan=False) + "\n"


def _comment_lines(estimates: Any) -> list[str]:
    from . import header_lines

    lines = header_lines(estimates.model)
    lines.append("# estimation: " + json.dumps(estimates.settings(), separators=(",", ":")))
    return lines + [f"# warning: {w}" for w in estimates.warnings]


def render_estimates_markdown(estimates: Any) -> str:
    from .tables import markdown_comment, markdown_text

    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(map(markdown_text, r)) + " |" for r in rows(estimates)]
    out += ["", f"{LAMBDA_LINE}.", *(f"{markdown_text(line)}." for line in reason_lines(estimates))]
    out += [
        "",
        *(
            f"{markdown_text(line)}."
            for line in settings_lines(estimates.settings(), estimates.model.conventions)
        ),
        "",
    ]
    out += [markdown_comment(line) for line in _comment_lines(estimates)]
    return "\n".join(out) + "\n"


def render_estimates_delimited(estimates: Any, sep: str, short: bool = False) -> str:
    """TSV or CSV: the provenance as ``#`` lines (``short``: the two lines of a pipe,
    :func:`qrelkit.report.short_header_lines`), then one row per run, measure and estimator."""
    from . import short_header_lines

    head = ("run", "measure", "estimator", "chosen", "estimate", "low", "high", "lambda", "human_queries",
            "unlabeled_queries", "effective_human_queries", "interval_kind", "reason")  # fmt: skip
    lines = [*short_header_lines(estimates.model), *(f"# warning: {w}" for w in estimates.warnings)]
    out = [*(lines if short else _comment_lines(estimates)), sep.join(head)]
    for r in estimates.rows:
        for e, i in r.intervals.items():
            d = i.to_dict()
            low, high = d["interval"] or (None, None)
            cells = [r.run, r.measure, e, str(e == r.estimator).lower(), d["value"], low, high, d["lambda"],
                     i.human_queries, i.unlabeled_queries, d["effective_human_queries"], d["interval_kind"],
                     d["reason"]]  # fmt: skip
            out.append(sep.join("" if c is None else str(c) for c in cells))
    return "\n".join(out) + "\n"


def render_estimates_latex(estimates: Any) -> str:
    """A ``tabular`` (booktabs) of the estimates, the provenance, lambda's meaning, the reasons and the
    settings as comment lines (as compare's LaTeX)."""
    from .tables import latex_comment
    from .tex import tex

    out = [latex_comment(line) for line in _comment_lines(estimates)]
    out += ["\\begin{tabular}{lll" + "r" * (len(COLUMNS) - 3) + "}", "\\toprule",
            " & ".join(tex(h) for h in COLUMNS) + " \\\\", "\\midrule"]  # fmt: skip
    out += [" & ".join(tex(c) for c in r) + " \\\\" for r in rows(estimates)]
    out += ["\\bottomrule", "\\end{tabular}"]
    notes = [
        LAMBDA_LINE,
        *reason_lines(estimates),
        *settings_lines(estimates.settings(), estimates.model.conventions),
    ]
    out += [latex_comment(line) for line in notes]
    return "\n".join(out) + "\n"


def render_estimates(estimates: Any, fmt: str, short: bool = False) -> str:
    """``estimates`` in ``fmt`` (``short``: TSV or CSV with the two-line header of a pipe)."""
    if fmt == "table":
        return render_estimates_text(estimates)
    if fmt == "json":
        return render_estimates_json(estimates)
    if fmt == "markdown":
        return render_estimates_markdown(estimates)
    if fmt in ("tsv", "csv"):
        return render_estimates_delimited(estimates, "\t" if fmt == "tsv" else ",", short)
    if fmt == "latex":
        return render_estimates_latex(estimates)
    if fmt == "html":
        from .page import estimates_page

        return estimates_page(estimates)
    raise ValueError(fmt)
