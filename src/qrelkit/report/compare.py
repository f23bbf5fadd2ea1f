"""Rendering of :class:`~qrelkit.compare.Comparison`: text, JSON, Markdown, LaTeX and a standalone HTML table.

Renderers never compute a statistic. Every format carries the comparison's options (test, permutations,
seed, correction, family, alpha) beside the Results' own provenance (conventions, fingerprints, version):
JSON as fields, the text formats as header or comment lines built by :func:`qrelkit.report.header_lines`.
"""

from __future__ import annotations

import json
from typing import Any

from .._typing import COMPARE_FORMATS
from . import bounds_markdown, header_lines, short_header_lines
from .estimate_tables import (
    MODEL_ALONE,
    PAIR_COLUMNS,
    differences_title,
    estimation_lines,
    estimation_markdown,
    estimation_text,
    pair_rows,
)
from .tables import (
    COLUMNS,
    NOISE_COLUMNS,
    POWER_COLUMNS,
    _anova_line,
    _grid,
    _multi_rows,
    _noise_rows,
    _power_rows,
    _rows,
    latex_comment,
    multi_columns,
    number,
    options_line,
)
from .tex import tex as _tex

FORMATS = COMPARE_FORMATS


def render_compare_text(comparison: Any) -> str:
    """A plain-text report: the bottom line (one sentence per measure), the pairs, the noise floor, topic-set sizes, ANOVA and Tukey, then the options,
    the conventions and the inputs (as ``eval`` prints them)."""
    res = comparison.results
    from ..compare.bottom_line import bottom_line

    out = ["qrelkit compare (difference = treatment - baseline; * = adjusted p < alpha)", "", "bottom line:"]
    out += [f"  {sentence}" for sentence in bottom_line(comparison)]
    if comparison.human is not None:  # the estimates lead; the model's own numbers follow, named as such
        out += estimation_text(comparison)
        out += ["", f"{MODEL_ALONE}:"]
    out += ["", *_grid(COLUMNS, _rows(comparison))]
    if comparison.noise is not None:
        nf = comparison.noise
        out += ["", f"labeller-noise floor ({nf.labellers[0]} vs {nf.labellers[1]}, {len(nf.calibration_queries)} "
                f"calibration queries, {nf.replicates} relabelled copies, smoothing {nf.smoothing:g}):"]  # fmt: skip
        out += _grid(NOISE_COLUMNS, _noise_rows(comparison))
        taus = "; ".join(f"{m} {number(t, 3)}" for m, (t, _) in nf.kendall_tau.items())
        out.append(f"Kendall's tau of the run rankings under {nf.labellers[0]} and {nf.labellers[1]}: {taus}")
    power = _power_rows(comparison)
    if power:
        o = comparison.options
        out += [
            "",
            f"topic-set size (paired t{_on_grades(comparison)}, alpha {o.alpha}, power {o.power_target}):",
        ]
        out += _grid(POWER_COLUMNS, power)
    for m in comparison.multi:
        out += ["", _anova_line(m)]
        out += _grid(multi_columns(m), _multi_rows(m))
        if m.permutations:
            out.append(f"randomised Tukey HSD: {m.permutations} trials, seed {comparison.options.seed}")
    if res.bounds is not None:
        from . import bounds

        out += ["", bounds.title(res) + ":", *_grid(bounds.columns(res), bounds.rows(res))]
    out += ["", options_line(comparison), f"conventions: {res.conventions}"]
    out.append(f"qrels: {res.qrels_name} sha256:{res.qrels_fingerprint.sha256[:16]}")
    out += [f"warning: {w}" for w in res.warnings]
    for run in res.runs:
        out.append(f"run: {run.name} sha256:{run.fingerprint.sha256[:16]}")
    out.append(f"qrelkit {res.version}")
    return "\n".join(out) + "\n"


def _on_grades(comparison: Any) -> str:
    """Which grades the paired t's topic-set size rests on, said when the comparison also estimated."""
    return " on the model's grades alone" if comparison.human is not None else ""


def render_compare_json(comparison: Any) -> str:
    return json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n"


def _provenance_lines(comparison: Any) -> list[str]:
    lines = header_lines(comparison.results)
    lines.append("# comparison: " + json.dumps(comparison.options.to_dict(), separators=(",", ":")))
    return lines


def render_compare_markdown(comparison: Any) -> str:
    from .tables import markdown_comment, markdown_text

    def table(headers: Any, rows: list[list[str]]) -> list[str]:
        out = ["| " + " | ".join(map(markdown_text, headers)) + " |", "|" + "---|" * len(headers)]
        return out + ["| " + " | ".join(map(markdown_text, r)) + " |" for r in rows]

    out = []
    if comparison.human is not None:  # the estimates lead; the model's own numbers follow, named as such
        out += [*estimation_markdown(comparison)[1:], "", f"**{MODEL_ALONE}**", ""]
    out += table(COLUMNS, _rows(comparison))
    if comparison.noise is not None:
        out += ["", *table(NOISE_COLUMNS, _noise_rows(comparison))]
    if _power_rows(comparison):
        out += ["", f"**topic-set size (paired t{_on_grades(comparison)})**", ""]
        out += table(POWER_COLUMNS, _power_rows(comparison))
    for m in comparison.multi:
        out += ["", markdown_text(_anova_line(m)), "", *table(multi_columns(m), _multi_rows(m))]
    out += bounds_markdown(comparison.results)
    out += ["", markdown_text(options_line(comparison)) + ".", "",
            f"Conventions: {markdown_text(comparison.results.conventions)}."]  # fmt: skip
    out += [
        f"\n**Warning:** {markdown_text(w)}." for w in comparison.results.warnings
    ]  # visible, as in eval's
    out += ["", *map(markdown_comment, _provenance_lines(comparison))]
    return "\n".join(out) + "\n"


def render_compare_latex(comparison: Any) -> str:
    """``tabular`` environments (booktabs) of the pairs, the noise floor, the topic-set sizes and the
    Tukey HSD, with the options, conventions and inputs as comment lines."""

    def tabular(headers: Any, rows: list[list[str]]) -> list[str]:
        out = ["\\begin{tabular}{" + "l" * min(3, len(headers)) + "r" * max(0, len(headers) - 3) + "}"]
        out += ["\\toprule", " & ".join(_tex(h) for h in headers) + " \\\\", "\\midrule"]
        out += [" & ".join(_tex(c) for c in r) + " \\\\" for r in rows]
        return [*out, "\\bottomrule", "\\end{tabular}"]

    out = [latex_comment(line) for line in _provenance_lines(comparison)]
    if comparison.human is not None:  # the estimates lead; the model's own numbers follow, named as such
        out += [latex_comment(differences_title(comparison)), *tabular(PAIR_COLUMNS, pair_rows(comparison))]
        out += [latex_comment(line) for line in estimation_lines(comparison)]
        out += ["", latex_comment(MODEL_ALONE)]
    out += tabular(COLUMNS, _rows(comparison))
    if comparison.noise is not None:
        out += ["", "% labeller-noise floor", *tabular(NOISE_COLUMNS, _noise_rows(comparison))]
    if _power_rows(comparison):
        out += ["", f"% topic-set size (paired t{_on_grades(comparison)})"]
        out += tabular(POWER_COLUMNS, _power_rows(comparison))
    for m in comparison.multi:
        out += ["", latex_comment(_anova_line(m)), *tabular(multi_columns(m), _multi_rows(m))]
    out += [
        latex_comment(options_line(comparison)),
        latex_comment(f"conventions: {comparison.results.conventions}"),
    ]
    return "\n".join(out) + "\n"


def render_compare_html(comparison: Any) -> str:
    """The comparison page (:func:`qrelkit.report.page.comparison_page`, the report's shell and sections)."""
    from .page import comparison_page

    return comparison_page(comparison)


def render_compare_delimited(comparison: Any, sep: str = "\t", short: bool = False) -> str:
    """The pairs as TSV (``sep`` a tab) or CSV, one row per pair and measure (:meth:`Comparison.rows
    <qrelkit.compare.Comparison.rows>`: numbers as ``repr``, an undefined one empty), after the ``#``
    provenance lines and the comparison's options (the two lines of a pipe when ``short``). With ``--human``
    the rows are the estimated differences (:func:`qrelkit.compare.frames.estimated_rows`), as the estimates
    lead every other format; the model's grades alone are in ``--format json``. With a labeller-noise floor,
    a ``verdict`` column says where each difference stands against it."""
    import csv
    import io

    lines = short_header_lines(comparison.results) if short else header_lines(comparison.results)
    if not short:
        lines.append("# comparison: " + json.dumps(comparison.options.to_dict(), separators=(",", ":")))
    if comparison.human is not None:
        lines.append(f"# {differences_title(comparison)}; the model's grades alone (biased): --format json")
        lines += [f"# warning: {w}" for w in comparison.estimation_warnings]
    rows = comparison.rows()
    buf = io.StringIO()
    buf.write("\n".join(lines) + "\n")
    writer = csv.writer(buf, delimiter=sep, lineterminator="\n")
    names = list(rows[0]) if rows else ["baseline", "treatment", "measure"]
    writer.writerow(names)
    for row in rows:
        writer.writerow(
            ["" if row[n] is None else repr(row[n]) if isinstance(row[n], float) else row[n] for n in names]
        )
    return buf.getvalue()


def render_compare(comparison: Any, fmt: str, short: bool = False) -> str:
    """``comparison`` in ``fmt`` (``short``: TSV or CSV with the two-line header of a pipe)."""
    if fmt == "tsv":
        return render_compare_delimited(comparison, "\t", short)
    if fmt == "csv":
        return render_compare_delimited(comparison, ",", short)
    if fmt == "table":
        return render_compare_text(comparison)
    if fmt == "json":
        return render_compare_json(comparison)
    if fmt == "markdown":
        return render_compare_markdown(comparison)
    if fmt == "latex":
        return render_compare_latex(comparison)
    if fmt == "html":
        return render_compare_html(comparison)
    raise ValueError(fmt)
