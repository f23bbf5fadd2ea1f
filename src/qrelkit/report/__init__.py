"""Rendering: JSON, TSV, trec_eval-style text, Markdown, HTML and terminal tables.

Renderers never compute a measure; they format :class:`~qrelkit.evaluation.results.Results`. Every machine-readable
output carries the provenance (tool version, conventions in full, measure definitions, fingerprints of the
judgments and every run) in the same file as the numbers: JSON as fields, text formats as ``#`` header lines.
Machine formats print floats with ``repr`` (the shortest text that reads back to the same double).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing is not loaded at run time: qrelkit trec_eval's start-up imports this package
if TYPE_CHECKING:  # the trec_eval layout (report/trec_eval.py) is printed without numpy
    from typing import Any

    from ..evaluation.results import Results

    FORMATS: tuple[str, ...]


def __getattr__(name: str) -> object:
    """``FORMATS``, what :func:`render` writes (:data:`qrelkit._typing.RESULT_FORMATS`), loaded on use."""
    if name == "FORMATS":
        from .._typing import RESULT_FORMATS

        return RESULT_FORMATS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _num(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    return repr(float(value))


def header_lines(results: Results) -> list[str]:
    """Provenance as ``# key: value`` lines (values are JSON)."""
    import json  # here: trec_eval's layout (report/trec_eval.py) loads this package without it

    prov = results.provenance()
    lines = [
        f"# qrelkit {prov['tool']['version']}",
        "# conventions: " + json.dumps(prov["conventions"], separators=(",", ":")),
        "# measures: " + json.dumps([m["full"] for m in prov["measures"]], separators=(",", ":")),
        "# qrels: " + json.dumps(prov["qrels"], separators=(",", ":")),
    ]
    if prov["judgments"] is not None:
        lines.append("# judgments: " + json.dumps(prov["judgments"], separators=(",", ":")))
    for run in prov["runs"]:
        lines.append("# run: " + json.dumps(run, separators=(",", ":")))
    lines += [f"# warning: {w}" for w in results.warnings]
    if results.bounds is not None:
        lines.append("# judgment_bounds: " + json.dumps(results.bounds.to_dict(), separators=(",", ":")))
    return lines


#: The second line of every piped TSV: where the full provenance is.
FULL_PROVENANCE = "# full provenance (conventions, measures, fingerprints, reader counts): --format json or --provenance FILE"


def pipe_header(version: str, profile: str | None, qrels_sha: str, runs: list[tuple[str, str]],
                full: str = FULL_PROVENANCE) -> list[str]:  # fmt: skip
    """The two ``#`` lines before TSV printed to a pipe, for any command: the version, the profile, the
    first 12 hex digits of the qrels' and each run's sha256; then where the full provenance is."""
    profile = profile or "none"
    named = " ".join(f"{name}={sha[:12]}" for name, sha in runs)
    return [
        f"# qrelkit {version} · profile {profile if profile != 'none' else 'none (default conventions)'}"
        f" · qrels={qrels_sha[:12]} · runs {named}",
        full,
    ]


def short_header_lines(results: Results) -> list[str]:
    """The two ``#`` lines before TSV or CSV printed to a pipe (the rule of :mod:`qrelkit.cli.output`):
    the version, the profile, the first 12 hex digits of each input's sha256; then where the full
    provenance is (then each warning, and the judgment bounds when asked for). A file written with ``-o`` carries
    :func:`header_lines` instead."""
    import json

    runs = [(run.name, run.fingerprint.sha256) for run in results.runs]
    bounds = (
        []
        if results.bounds is None
        else ["# judgment_bounds: " + json.dumps(results.bounds.to_dict(), separators=(",", ":"))]
    )  # asked for with --bounds
    return [
        *pipe_header(results.version, results.conventions.profile, results.qrels_fingerprint.sha256, runs),
        *(f"# warning: {w}" for w in results.warnings),
        *bounds,
    ]


def render_json(results: Results) -> str:
    import json

    return json.dumps(results.to_dict(), indent=2, allow_nan=False) + "\n"


def render_tsv(results: Results, per_query: bool = False, short: bool = False) -> str:
    """Tab-separated ``run query_id measure value`` (``all`` for the means) after the ``#`` provenance lines
    (the two of :func:`short_header_lines` when ``short``)."""
    lines = short_header_lines(results) if short else header_lines(results)
    lines.append("run\tquery_id\tmeasure\tvalue")
    for row in results.summary_rows():
        lines.append(f"{row['run']}\tall\t{row['measure']}\t{_num(row['mean'])}")
    if per_query:
        for run, qid, measure, value in results.rows(by_run_name=True):
            lines.append(f"{run}\t{qid}\t{measure}\t{_num(value)}")
    return "\n".join(lines) + "\n"


def render_csv(results: Results, per_query: bool = False, short: bool = False) -> str:
    """Comma-separated ``run,query_id,measure,value`` (``all`` for the means) after the ``#`` provenance
    lines (``pandas.read_csv(path, comment="#")`` reads it); ids with a comma or quote are quoted."""
    import csv
    import io

    buf = io.StringIO()
    buf.write("\n".join(short_header_lines(results) if short else header_lines(results)) + "\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["run", "query_id", "measure", "value"])
    for row in results.summary_rows():
        writer.writerow([row["run"], "all", row["measure"], _num(row["mean"])])
    if per_query:
        for run, qid, measure, value in results.rows(by_run_name=True):
            writer.writerow([run, qid, measure, _num(value)])
    return buf.getvalue()


def render_trec(results: Results, per_query: bool = False) -> str:
    """trec_eval's layout, one block per run after the ``#`` provenance lines: ``%-22s<TAB>query<TAB>%6.4f``,
    ``all`` for the summary, trec_eval's measure names where a measure has one (``P_10``, ``map``,
    ``ndcg_cut_10``; qrelkit's name otherwise, and for measures two of which would share a name), and its
    summary rules: counts (``num_ret``, ...) are summed, ``summary=gmean`` measures (gm_map) are geometric
    means and print no per-query lines, every other measure the mean."""
    from ..measures.trec_names import is_count, trec_name

    names: dict[str, str] = {}
    for m in results.measures:
        names[str(m)] = trec_name(m) or str(m)
    shared = {n for n in names.values() if list(names.values()).count(n) > 1}
    names = {k: (k if v in shared else v) for k, v in names.items()}
    counts = {str(m) for m in results.measures if is_count(m)}
    summary_only = {str(m) for m in results.measures if dict(m.params).get("summary") == "gmean"}

    def value(measure: str, v: float) -> str:
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        return str(int(v)) if measure in counts else f"{v:6.4f}"

    lines = header_lines(results)
    for run in results.run_names:
        lines.append(f"# run {run}")
        if per_query:
            for name, qid, measure, v in results.rows():
                if name == run and measure not in summary_only:
                    lines.append(f"{names[measure]:<22}\t{qid}\t{value(measure, v)}")
        for measure in results.measure_names:
            if measure in counts:
                total = math.fsum(x for x in results.values(measure, run).values() if not math.isnan(x))
                lines.append(f"{names[measure]:<22}\tall\t{int(total)}")
            else:
                lines.append(f"{names[measure]:<22}\tall\t{value(measure, results.mean(measure, run))}")
    return "\n".join(lines) + "\n"


def _mean_grid(results: Results) -> tuple[list[str], list[list[str]]]:
    return results.mean_grid()


def render_markdown(results: Results, per_query: bool = False) -> str:
    from .tables import markdown_comment, markdown_text, number

    headers, rows = _mean_grid(results)
    out = ["| " + " | ".join(map(markdown_text, headers)) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(map(markdown_text, r)) + " |" for r in rows]
    out += bounds_markdown(results)
    out.append("")
    out.append(f"Conventions: {markdown_text(results.conventions)}.")
    out += [f"\n**Warning:** {markdown_text(w)}." for w in results.warnings]
    out.append("")
    for line in header_lines(results):
        out.append(markdown_comment(line))
    if per_query:
        wide = results.to_polars().sort(["run", "query_id"])
        out.append("")
        cols = wide.columns
        out.append("| " + " | ".join(map(markdown_text, cols)) + " |")
        out.append("|" + "---|" * len(cols))
        for row in wide.iter_rows():
            out.append(
                "| " + " | ".join(markdown_text(v) if isinstance(v, str) else number(v) for v in row) + " |"
            )
    return "\n".join(out) + "\n"


def render_latex(results: Results, per_query: bool = False) -> str:
    """The means as a booktabs ``tabular`` (and each query's values in a second one with ``per_query``),
    with the provenance as ``%`` comment lines."""
    from .tables import number
    from .tex import tex as _tex

    def tabular(headers: list[str], rows: list[list[str]]) -> list[str]:
        out = ["\\begin{tabular}{l" + "r" * (len(headers) - 1) + "}", "\\toprule"]
        out += [" & ".join(_tex(h) for h in headers) + " \\\\", "\\midrule"]
        out += [" & ".join(_tex(c) for c in r) + " \\\\" for r in rows]
        return [*out, "\\bottomrule", "\\end{tabular}"]

    out = ["% " + line.lstrip("# ") for line in header_lines(results)]
    out += tabular(*_mean_grid(results))
    if per_query:
        wide = results.to_polars().sort(["run", "query_id"])
        rows = [[v if isinstance(v, str) else number(v) for v in row] for row in wide.iter_rows()]
        out += ["", *tabular(list(wide.columns), rows)]
    out.append(f"% conventions: {results.conventions}")
    return "\n".join(out) + "\n"


def bounds_markdown(results: Results) -> list[str]:
    """The judgment bounds as a Markdown table under their title (nothing without bounds)."""
    if results.bounds is None:
        return []
    from . import bounds
    from .tables import markdown_text

    out = [
        "",
        f"Judgment bounds: {markdown_text(bounds.title(results).removeprefix('judgment bounds '))}.",
        "",
    ]
    out += ["| " + " | ".join(bounds.columns(results)) + " |", "|" + "---|" * len(bounds.columns(results))]
    return out + ["| " + " | ".join(map(markdown_text, r)) + " |" for r in bounds.rows(results)]


def print_bounds(results: Results, console: Any) -> None:
    """The judgment bounds as a rich table under their title (nothing without bounds)."""
    if results.bounds is None:
        return
    from rich.table import Table

    from . import bounds

    table = Table(title=bounds.title(results), title_justify="left")
    for i, h in enumerate(bounds.columns(results)):
        table.add_column(h, justify="left" if i < 2 else "right")
    for r in bounds.rows(results):
        table.add_row(*r)
    console.print(table, highlight=False)


def render_html_table(results: Results) -> str:
    """The means as an HTML table with the conventions and warnings (the notebook view of Results)."""
    return results._repr_html_()


def render_html(results: Results, per_query: bool = False) -> str:
    """A self-contained page (:func:`qrelkit.report.page.results_page`, the report's shell and sections)."""
    from .page import results_page

    return results_page(results, per_query)


def render(results: Results, fmt: str, per_query: bool = False, short: bool = False) -> str:
    """``results`` in ``fmt`` (``short``: TSV or CSV with the two-line header of a pipe)."""
    if fmt == "json":
        return render_json(results)
    if fmt == "tsv":
        return render_tsv(results, per_query, short)
    if fmt == "csv":
        return render_csv(results, per_query, short)
    if fmt == "latex":
        return render_latex(results, per_query)
    if fmt == "trec":
        return render_trec(results, per_query)
    if fmt == "markdown":
        return render_markdown(results, per_query)
    if fmt == "html":
        return render_html(results, per_query)
    raise ValueError(fmt)


def data_console(**options: Any) -> Any:
    """The console data is printed to: rich's highlighter off (it would colour part of a sha256 as an IPv6
    address and ``R(rel=1)`` as a call), no soft wrap. :func:`print_table` also escapes every value, so a
    run or file named with brackets is printed as it is, not read as markup."""
    from rich.console import Console

    return Console(soft_wrap=False, highlight=False, **options)


def print_table(results: Results, per_query: bool, console: Any) -> None:
    """A rich table of means (and per-query values), followed by the conventions and inputs, printed as
    they are (values escaped, nothing highlighted: see :func:`data_console`)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from .tables import number

    table = Table(title="qrelkit results (means over scored queries)", title_justify="left")
    headers, rows = _mean_grid(results)
    for i, h in enumerate(headers):
        table.add_column(Text(h), justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    console.print(table)
    print_bounds(results, console)
    if per_query:
        wide = results.to_polars().sort(["run", "query_id"])
        pq = Table(title="per query", title_justify="left")
        for i, c in enumerate(wide.columns):
            pq.add_column(Text(c), justify="left" if i < 2 else "right")
        for row in wide.iter_rows():
            pq.add_row(*[Text(v if isinstance(v, str) else number(v)) for v in row])
        console.print(pq)
    console.print(f"[dim]conventions:[/dim] {escape(str(results.conventions))}")
    console.print(
        f"[dim]qrels:[/dim] {escape(results.qrels_name)} sha256:{results.qrels_fingerprint.sha256[:16]}"
    )
    j = results.judgments
    if j is not None:
        rubric = j.get("rubric") or {}
        cal = j.get("calibration") or {}
        kappa = "not measured"
        if cal.get("kappa") is not None:
            kappa = f"{cal['kappa']:.3f} [{cal['ci_low']:.3f}, {cal['ci_high']:.3f}]"
            if cal.get("labellers"):
                kappa += f" ({escape(' and '.join(cal['labellers']))})"
        gate = j.get("gate") or {}
        ga = j.get("group_agreement")
        if ga:
            kappa += f", {ga['name']} {number(ga['value'], 3)} [{number(ga['bootstrap_low'], 3)}, {number(ga['bootstrap_high'], 3)}]"
        console.print(
            f"[dim]judgments:[/dim] rubric {escape(str(rubric.get('name')))} {escape(str(rubric.get('version')))} "
            f"({str(rubric.get('content_hash'))[:12]}), scale {j.get('scale')}, kappa {kappa}, "
            f"gate {'PASS' if gate.get('passed') else 'FAIL' if gate else 'none'}, "
            f"unresolved pairs left out {j.get('unresolved_left_out')}"
        )
    for w in results.warnings:
        console.print(f"[bold yellow]warning:[/bold yellow] {escape(w)}", highlight=False)
    for run in results.runs:
        counts = run.queries.counts()
        notes = [f"{counts['scored']} scored"]
        if counts["missing_from_run_scored_zero"]:
            notes.append(
                f"{counts['missing_from_run_scored_zero']} judged but missing from the run, scored 0"
            )
        if counts["missing_from_run_skipped"]:
            notes.append(f"{counts['missing_from_run_skipped']} judged but missing from the run, skipped")
        if counts["absent_from_qrels_skipped"]:
            notes.append(f"{counts['absent_from_qrels_skipped']} without judgments, skipped")
        undefined = {m: n for m, n in run.undefined.items() if n}
        if undefined:
            verb = {"zero": "scored 0", "one": "scored 1"}.get(results.conventions.no_relevant, "skipped")
            notes.append(
                "no relevant documents ("
                + verb
                + "): "
                + ", ".join(f"{escape(m)} {n}" for m, n in undefined.items())
            )
        console.print(
            f"[dim]run:[/dim] {escape(run.name)} sha256:{run.fingerprint.sha256[:16]}; queries: "
            + "; ".join(notes)
        )
    console.print(f"[dim]qrelkit {results.version}[/dim]")
