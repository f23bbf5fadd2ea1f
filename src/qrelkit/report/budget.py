"""The judging-budget replay's outputs (``qrelkit budget replay``): a table, TSV, JSON with the full
provenance, and an HTML page with the budget curves (Kendall's tau and the mean interval width against the
people's pairs spent, one line per strategy) drawn by :mod:`qrelkit.report.svg`. Nothing here computes."""

from __future__ import annotations

import json
from typing import Any

from .tables import number

__all__ = ["COLUMNS", "render_replay"]

#: The columns of the table and TSV, in order, with what each is.
COLUMNS = (
    ("strategy", "the strategy"),
    ("budget", "the budget as given"),
    ("human_pairs", "people's pairs spent (median over the repetitions)"),
    ("tau_median", "Kendall's tau of the runs' order against the people's, median"),
    ("tau_p10", "Kendall's tau, 10th percentile"),
    ("tau_ap_median", "tau_AP, median"),
    ("tau_ap_p10", "tau_AP, 10th percentile"),
    ("coverage_means", "share of the means' intervals holding the people's mean (- where none is reported)"),
    ("coverage_differences", "the same for the differences of every two runs"),
    ("decided_pairs", "share of run pairs whose difference interval excludes 0"),
    ("wrong_sign", "share of run pairs decided with the wrong sign"),
    ("interval_width", "mean width of the means' intervals, median"),
)


def _cells(row: dict[str, Any]) -> list[str]:
    def share(v: Any) -> str:
        return number(v, 3, "-")

    return [
        str(row["strategy"]),
        str(row["budget"]),
        str(row["human_pairs"]),
        share(row["kendall_tau"]["median"]),
        share(row["kendall_tau"]["p10"]),
        share(row["tau_ap"]["median"]),
        share(row["tau_ap"]["p10"]),
        share(row["coverage_means"]),
        share(row["coverage_differences"]),
        share(row["decided_pairs"]),
        share(row["wrong_sign"]),
        number(row["interval_width"], 4, "-"),
    ]


def _text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        out = [
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]) + "\n"


def _summary(result: Any) -> str:
    p, s = result.pool, result.settings
    alone = result.model_alone
    reference = (
        f"; the model's grades alone: tau {number(alone['kendall_tau'], 3)}, tau_AP {number(alone['tau_ap'], 3)}"
        if alone
        else ""
    )
    return (
        f"{result.measure}: {p['runs']} runs, {p['queries']} queries, {p['pairs']} pooled pairs (pool depth "
        f"{p['depth'] if p['depth'] is not None else 'all'}; {p['full_pairs_below_depth']} of FULL's pairs below it left "
        f"out); {s['repeat']} repetitions, seed {s['seed']}, intervals at {1 - s['alpha']:.0%}{reference}"
    )


def _estimators(result: Any) -> list[str]:
    return [f"{name}: {estimator}" for name, estimator in result.settings["estimators"].items()]


def render_replay(result: Any, fmt: str, short: bool = False) -> str:
    """The replay in ``fmt`` (table, tsv, json, html); ``short``: TSV printed to a pipe (two ``#`` lines)."""
    if fmt == "json":
        return json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n"
    if fmt == "html":
        return replay_page(result)
    headers = [name for name, _ in COLUMNS]
    rows = [_cells(r) for r in result.rows]
    if fmt == "tsv":
        from . import pipe_header

        inputs = result.inputs
        runs = [(r["name"], r["fingerprint"]["sha256"]) for r in inputs["runs"]]
        head = pipe_header(
            result.provenance()["tool"]["version"],
            None,
            inputs["full"]["fingerprint"]["sha256"],
            runs,
            "# full provenance (fingerprints of FULL, MODEL and the runs; the measure's conventions): --format json",
        )
        if not short:
            head = [f"# {json.dumps(result.provenance(), separators=(',', ':'), allow_nan=False)}"]
        return "\n".join([*head, "\t".join(headers), *("\t".join(r) for r in rows)]) + "\n"
    notes = "\n".join(f"  {line}" for line in _estimators(result))
    return f"{_summary(result)}\n\n{_text_table(headers, rows)}\nestimators:\n{notes}\n"


def replay_page(result: Any) -> str:
    """The HTML page: the table, the two budget curves (each with its data table), the estimators, the
    provenance."""
    from . import svg
    from .page import document
    from .tables import table

    rows = result.rows
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    tau_series = [
        (
            s,
            [
                (float(r["human_pairs"]), _float(r["kendall_tau"]["median"]))
                for r in rows
                if r["strategy"] == s
            ],
        )
        for s in strategies
    ]
    if result.model_alone:  # where every strategy starts: no people's pair
        tau_series.append(("model alone", [(0.0, _float(result.model_alone["kendall_tau"]))]))
    width_series = [
        (s, [(float(r["human_pairs"]), _float(r["interval_width"])) for r in rows if r["strategy"] == s])
        for s in strategies
    ]
    no_width = [s for s, pts in width_series if all(v != v for _, v in pts)]
    tau_chart = svg.figure(
        svg.lines(
            tau_series,
            title=f"Kendall's tau against people's pairs ({result.measure})",
            x_axis="people's pairs spent",
            y_axis="Kendall's tau (median)",
        ),
        "Median Kendall's tau of each strategy's order of the runs against the order by every people's grade, "
        "by the people's pairs it spent.",
        ["strategy", "people's pairs", "tau (median)"],
        [[s, int(x), number(y, 4)] for s, pts in tau_series for x, y in pts],
    )
    width_chart = svg.figure(
        svg.lines(
            [(s, pts) for s, pts in width_series if s not in no_width],
            title="Mean interval width against people's pairs",
            x_axis="people's pairs spent",
            y_axis="mean interval width (median)",
        ),
        "Median over the repetitions of the mean width of the runs' intervals"
        + (f"; no interval: {', '.join(no_width)}" if no_width else "")
        + ".",
        ["strategy", "people's pairs", "width (median)"],
        [[s, int(x), number(y, 4)] for s, pts in width_series for x, y in pts],
    )
    headers = [name for name, _ in COLUMNS]
    body_table = table(headers, [_cells(r) for r in rows], numeric=range(2, len(headers)))
    legend = table(["column", "what it is"], [list(c) for c in COLUMNS])
    estimators = table(["strategy", "estimator"], [list(i) for i in result.settings["estimators"].items()])
    provenance = f"<pre>{_escape(json.dumps(result.provenance(), indent=2, allow_nan=False))}</pre>"
    sections = [
        ("replay", "The replay", f"<p>{_escape(_summary(result))}</p>{body_table}{legend}"),
        ("curves", "Budget curves", tau_chart + width_chart),
        ("estimators", "Estimators", estimators),
        ("provenance", "Provenance", provenance),
    ]
    return document(
        f"Judging budget replay: {result.measure}",
        "Each strategy buys people's grades up to each budget; its estimates are scored against every "
        "people's grade.",
        sections,
        footer=f"qrelkit {result.provenance()['tool']['version']}",
    )


def _float(v: Any) -> float:
    return float("nan") if v is None else float(v)


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)
