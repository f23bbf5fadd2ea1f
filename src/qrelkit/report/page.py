"""The self-contained HTML report: one file, readable offline (no script, no font or image fetched; the
charts are inline SVG from :mod:`qrelkit.report.svg`, each with a text alternative and its data table).

:func:`report_page` renders a :class:`qrelkit.report.dossier.Dossier` section by section; :func:`results_page`
(``qrelkit eval --format html``) and :func:`comparison_page` (``qrelkit compare --format html``) use the
same document shell and the same section builders. Nothing here computes a measure or a statistic.

Large inputs stay small: per-query differences are drawn for the first pairs only (the dossier says which)
and, past :data:`MAX_BARS` queries, as that many bars, each the mean of an equal share of the queries in
sorted order (its hover text names the range); the tables list the queries that moved most, not all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from . import svg
from .tables import _e, number, table

__all__ = ["MAX_BARS", "comparison_page", "report_page", "results_page"]

MAX_BARS = 400
TOP_QUERIES = 10

_CSS = """
:root { --ink:#24292f; --muted:#57606a; --line:#d0d7de; --bg:#fff; --band:#f6f8fa; --blue:#1f6fb4; }
* { box-sizing: border-box; }
body { margin:0; color:var(--ink); background:var(--bg);
  font:15px/1.5 "DejaVu Sans","Liberation Sans",Arial,sans-serif; }
header, main, footer { max-width: 1200px; margin: 0 auto; padding: 0 16px; }
header { padding-top: 20px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; } h2 { font-size: 1.25rem; margin: 32px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 1.05rem; margin: 20px 0 6px; }
nav ol { display:flex; flex-wrap:wrap; gap:4px 14px; padding:0; margin:8px 0; list-style:none; }
nav a, a { color: var(--blue); }
.lead { color: var(--muted); margin: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll > table { max-width: 100%; }
.chart { overflow-x: auto; } .chart > svg { display: block; height: auto; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 0.9rem; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
thead th { background: var(--band); }
figure { margin: 8px 0 20px; } figcaption { color: var(--muted); font-size: 0.9rem; }
details summary { cursor: pointer; color: var(--blue); font-size: 0.9rem; }
details.fold > summary { font-size: 1rem; padding: 6px 0; }
.warning { border-left: 4px solid #d9792b; background: #fff4e8; padding: 6px 10px; margin: 8px 0; }
.verdict-yes { color: #0b6b2e; font-weight: 600; } .verdict-noise { color: #8a4b00; font-weight: 600; }
code, .mono { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 0.85rem;
  overflow-wrap: anywhere; }
footer { color: var(--muted); font-size: 0.85rem; padding-bottom: 24px; }
td { overflow-wrap: break-word; } td.n { white-space: nowrap; }
pre { max-width: 100%; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
td .bounds { display: block; white-space: normal; color: var(--muted); font-size: 0.8rem; }
.bottom-line { font-size: 1.05rem; padding-left: 20px; } .bottom-line li { margin: 4px 0; }
@media (max-width: 600px) { body { font-size: 14px; } th, td { padding: 3px 5px; } }
@media (max-width: 700px) {
  table.stack, table.stack > caption, table.stack > tbody, table.stack > tbody > tr, table.stack td {
    display: block; width: 100%; }
  table.stack > thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
    white-space: nowrap; }
  table.stack > tbody > tr { border-bottom: 2px solid var(--line); padding: 4px 0; }
  table.stack td { border: none; padding: 1px 4px; text-align: left; overflow-wrap: anywhere;
    white-space: normal; }
  table.stack td::before { content: attr(data-label); display: inline-block; min-width: 8.5em;
    margin-right: 6px; font-weight: 600; color: var(--muted); }
  table.stack td[data-label=""]::before { content: none; }
}
"""


def _slug(*parts: str) -> str:
    return "x-" + "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts)


def document(title: str, lead: str, sections: Sequence[tuple[str, str, str]], footer: str = "") -> str:
    """The page: a title, a contents list, and (id, heading, body) sections, every style inline."""
    nav = "".join(f'<li><a href="#{sid}">{_e(h)}</a></li>' for sid, h, _ in sections)
    body = "".join(
        f'<section id="{sid}" aria-labelledby="{sid}-h"><h2 id="{sid}-h">{_e(h)}</h2>{b}</section>'
        for sid, h, b in sections
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{_e(title)}</h1><p class="lead">{_e(lead)}</p>'
        f'<nav aria-label="Sections"><ol>{nav}</ol></nav></header>'
        f"<main>{body}</main><footer>{footer}</footer></body></html>\n"
    )


# -- sections shared by eval, compare and report ---------------------------------------------------------


def warnings_html(results: Any) -> str:
    return "".join(
        f'<p class="warning" role="note"><strong>Warning:</strong> {_e(w)}</p>' for w in results.warnings
    )


def means_section(results: Any) -> str:
    headers, rows = results.mean_grid()
    caption = "Mean over scored queries"
    if results.bounds is not None:  # each mean's judgment bounds beside it, each value named
        from .bounds import cell, title

        rows = [
            [r[0]] + [cell(results, r[0], m, c) for c, m in zip(r[1:], headers[1:], strict=True)]
            for r in rows
        ]
        caption += f"; beside a mean, its {title(results, judged=False)}"
    return warnings_html(results) + table(headers, rows, numeric=range(1, len(headers)), caption=caption)


def conventions_table(results: Any) -> str:
    conv = results.conventions.to_dict()
    rows = [[axis, value] for axis, value in conv.items()]
    rows += [[f"measure {m['name']}", m["full"]] for m in results.provenance()["measures"]]
    return table(["axis", "value"], rows, caption="Every convention behind the numbers (defaults included)")


def provenance_section(results: Any, command: str = "", extra: Sequence[Sequence[object]] = ()) -> str:
    prov = results.provenance()
    rows: list[list[object]] = [["tool", f"qrelkit {prov['tool']['version']}"]]
    if command:
        rows.append(["command", ("html", f"<code>{_e(command)}</code>")])
    q = prov["qrels"]
    rows.append(["qrels", ("html", f"{_e(q['name'])} <code>sha256:{_e(q['fingerprint']['sha256'])}</code>")])
    for run in prov["runs"]:
        fp = run["fingerprint"]["sha256"]
        rows.append(
            [f"run {run['name']}", ("html", f"<code>sha256:{_e(fp)}</code> read by {_e(run['reader'])}")]
        )
    rows += [list(r) for r in extra]
    return table(["input", "identity"], rows) + (
        "<details><summary>The full provenance as JSON</summary><pre class='mono'>"
        + _e(json.dumps(prov, indent=1))
        + "</pre></details>"
    )


def _pair_rows(comparison: Any) -> list[list[object]]:
    from .tables import p_text

    rows = []
    for p in comparison.pairs:
        verdict = p.verdict or ("significant" if p.significant else "not significant")
        cls = (
            "verdict-yes"
            if verdict.startswith("exceeds") or verdict == "significant"
            else ("verdict-noise" if "noise" in verdict else "")
        )
        rows.append([
            p.treatment, p.baseline, p.measure, f"{p.difference:+.4f}",
            f"[{number(p.t_interval[0])}, {number(p.t_interval[1])}]", f"{p.wins}/{p.ties}/{p.losses}", number(p.effect_size, 2),
            p_text(p.p_value), p_text(p.p_adjusted), ("html", f"<span class='{cls}'>{_e(verdict)}</span>"),
        ])  # fmt: skip
    return rows


def bottom_line_section(comparison: Any) -> tuple[str, str, str]:
    """The page's first section: one sentence per measure (:func:`qrelkit.compare.bottom_line.bottom_line`)."""
    from ..compare.bottom_line import bottom_line

    items = "".join(f"<li>{_e(s)}</li>" for s in bottom_line(comparison))
    return ("bottom-line", "Bottom line", f"<ul class='bottom-line'>{items}</ul>")


def comparison_table(comparison: Any) -> str:
    from .tables import options_line

    headers = ["run", "baseline", "measure", "difference", "95% t-interval", "wins/ties/losses", "effect size",
               "p", "p adjusted", "verdict"]  # fmt: skip
    return (
        table(headers, _pair_rows(comparison), numeric=range(3, 9))
        + f"<p class='lead'>{_e(options_line(comparison))}</p>"
    )


def forest_figure(comparison: Any) -> str:
    rows, band, data = [], [], []
    for p in comparison.pairs:
        label = f"{p.treatment} vs {p.baseline}, {p.measure}"
        rows.append((label, p.difference, p.t_interval[0], p.t_interval[1]))
        floor = p.noise.empirical_floor if p.noise is not None else None
        band.append(floor)
        data.append(
            [label, f"{p.difference:+.4f}", number(p.t_interval[0]), number(p.t_interval[1]), number(floor)]
        )
    shaded = any(b for b in band)
    chart = svg.forest(
        rows, title="Difference from the baseline with its 95% t-interval", axis="treatment minus baseline",
        band=band if shaded else None,
    )  # fmt: skip
    caption = "Each run's mean difference from its baseline, per measure, with the 95% t-interval" + (
        "; the shaded band is the labeller-noise floor (empirical, 95th percentile)." if shaded else
        "; no labeller-noise floor was measured (pass --noise-floor A.qrels B.qrels)."
    )  # fmt: skip
    return svg.figure(chart, caption, ["pair", "difference", "low", "high", "noise floor"], data)


def _bucketed(items: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], str]:
    if len(items) <= MAX_BARS:
        return items, ""
    out = []
    n = len(items)
    for b in range(MAX_BARS):
        lo, hi = b * n // MAX_BARS, (b + 1) * n // MAX_BARS
        chunk = items[lo:hi]
        mean = math.fsum(v for _, v in chunk) / len(chunk)
        out.append(
            (f"queries {lo + 1}-{hi} of {n} by difference ({chunk[0][0]} ... {chunk[-1][0]}), mean", mean)
        )
    return out, f"{n} queries drawn as {MAX_BARS} bars, each the mean of an equal share in sorted order."


def per_query_section(results: Any, pairs: Sequence[tuple[str, str]], measure: Any, anchors: set[str]) -> str:
    parts = []
    for baseline, treatment in pairs:
        a, b = results.values(measure, baseline), results.values(measure, treatment)
        items = sorted(
            ((q, b[q] - a[q]) for q in a if q in b and not (math.isnan(a[q]) or math.isnan(b[q]))),
            key=lambda x: (-x[1], x[0]),
        )
        bars, note = _bucketed(items)
        chart = svg.diverging_bars(
            bars,
            title=f"{measure}: {treatment} minus {baseline}, per query",
            axis="queries, sorted by difference",
            note=note,
        )
        up = [x for x in items if x[1] > 0][:TOP_QUERIES]
        down = sorted((x for x in items if x[1] < 0), key=lambda x: (x[1], x[0]))[:TOP_QUERIES]

        def link(q: str, run: str = treatment) -> object:
            sid = _slug("explain", run, q)
            return ("html", f'<a href="#{sid}">{_e(q)}</a>') if sid in anchors else q

        rows = [["improved", link(q), f"{d:+.4f}", number(a[q]), number(b[q])] for q, d in up]
        rows += [["regressed", link(q), f"{d:+.4f}", number(a[q]), number(b[q])] for q, d in down]
        summary = f"{sum(d > 0 for _, d in items)} improved, {sum(d < 0 for _, d in items)} regressed, {sum(d == 0 for _, d in items)} unchanged"
        parts.append(
            f"<h3>{_e(treatment)} against {_e(baseline)}</h3>"
            + svg.figure(chart, f"{measure} per query, {treatment} minus {baseline}: {summary}. {note}".strip(),
                         ["query", "difference"], [[q, f"{d:+.4f}"] for q, d in items[: 2 * MAX_BARS]])
            + table(["", "query", "difference", baseline, treatment], rows, numeric=(2, 3, 4),
                    caption=f"The queries that moved most (up to {TOP_QUERIES} each way)")
        )  # fmt: skip
    return "".join(parts)


# -- report-only sections ------------------------------------------------------------------------------


def _missing_section(d: Any) -> str:
    rows, data = [], []
    judged = {}
    for m in d.results.measures:
        if m.name == "Judged":
            judged = {r: d.results.mean(m, r) for r in d.results.run_names}
            judged_name = str(m)
            break
    for mg in d.missing:
        t = mg.totals
        total = t["gain"] or 1.0
        shares = [t["gain_found"] / total, t["gain_below"] / total, t["gain_never"] / total]
        rows.append((mg.run, shares))
        missing = t["gain_below"] + t["gain_never"]
        data.append([
            mg.run, number(t["gain"], 1), f"{shares[0] * 100:.1f}%", f"{shares[1] * 100:.1f}%", f"{shares[2] * 100:.1f}%",
            f"{t['gain_below'] / missing * 100:.1f}%" if missing else "–", number(t["below"], 1), number(t["never"], 1),
            number(judged.get(mg.run)) if judged else "–",
        ])  # fmt: skip
    chart = svg.stacked_bars(
        rows, [f"in the top {d.k}", f"ranked below {d.k} (ordered badly)", "never retrieved"],
        title=f"Where each run's relevant gain is, at cutoff {d.k}", axis="share of the relevant documents' gain",
    )  # fmt: skip
    headers = ["run", "relevant gain", f"top {d.k}", "below cutoff", "never retrieved",
               "missing gain ordered badly", "documents below", "documents never", judged_name if judged else "Judged@k"]  # fmt: skip
    lead = (
        "<p>nDCG cannot tell a run that ordered badly from one that never had the document. Of each run's "
        "relevant documents (grade 1 or more, weighted by their gain), the share in the top k, ranked below k, "
        "and never retrieved. Under averaged ties a document in a block across the cutoff counts by its expected "
        "share.</p>"
    )
    return lead + svg.figure(chart, "Shares of relevant gain per run.", headers, data)


def _interval(low: Any, high: Any, what: str) -> str:
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{what} undefined"
    return f"{what} [{low:.3f}, {high:.3f}]"


def _why_not_measured(j: dict[str, Any]) -> str:
    """Why the manifest has no kappa, in words (its status and reasons), never an empty interval."""
    cal = j.get("calibration") or {}
    status = j.get("calibration_status")
    if cal.get("not_measurable"):
        return f"not measurable: {cal['not_measurable']}"
    if status == "not measured":
        return "not measured" + (f": {cal['not_measured']}" if cal.get("not_measured") else "")
    if status == "measuring":
        return f"not decided yet: calibration round {j.get('calibration_round')} is still being judged"
    if not j.get("calibration"):
        return "not measured: the manifest has no calibration"
    return "undefined: no pair was graded by both labellers, or both gave every pair the same grade"


def _agreement_rows(j: dict[str, Any]) -> list[list[object]]:
    """One row per two labellers (named) with kappa, its interval and the query bootstrap's, and the
    group's statistic over every labeller; a kappa that was not measured says why."""
    cal = j.get("calibration") or {}
    pairs = j.get("pairs_of_labellers") or ([cal] if cal.get("kappa") is not None else [])
    rows: list[list[object]] = []
    for p in pairs:
        names = " and ".join(p.get("labellers") or ["the two labellers"])
        label = f"kappa ({p.get('weights') or 'linear'}) of {names}"
        if len(pairs) > 1 and p.get("labellers") == cal.get("labellers"):
            label += " (the pair that agrees least: the gate's)"
        if p.get("kappa") is None:
            rows.append([label, _why_not_measured(j)])
            continue
        level = f"{(p.get('level') or 0.95) * 100:g}%"
        rows.append([label, f"{p['kappa']:.3f}, {_interval(p.get('ci_low'), p.get('ci_high'), f'{level} interval')}, "
                     f"{_interval(p.get('bootstrap_low'), p.get('bootstrap_high'), 'query bootstrap')}, on {p.get('n_pairs')} pairs"])  # fmt: skip
    if not pairs:
        rows.append(["kappa", _why_not_measured(j)])
    ga = j.get("group_agreement")
    if ga:
        value = "undefined" if ga.get("value") is None else f"{ga['value']:.3f}"
        interval = _interval(ga.get("bootstrap_low"), ga.get("bootstrap_high"), "query bootstrap")
        rows.append(
            [
                f"{ga['name']} of {', '.join(ga['labellers'])}",
                f"{value}, {interval}, on {ga['n_units']} pairs",
            ]
        )
    return rows


def _judgments_section(d: Any) -> str:
    out = []
    j = d.judgments
    if j is None:
        out.append("<p>No manifest describes these qrels: the rubric, the agreement and the unresolved pairs behind "
                   "them are unknown. Export qrels with <code>qrelkit adjudicate-files</code> or the judging app to get one.</p>")  # fmt: skip
    else:
        rubric = j.get("rubric") or {}
        gate = j.get("gate") or {}
        rows: list[list[object]] = [
            ["rubric", f"{rubric.get('name')} {rubric.get('version')}"],
            ["rubric hash", ("html", f"<code>{_e(rubric.get('content_hash'))}</code>")],
            ["scale", ", ".join(map(str, j.get("scale") or []))],
            ["labellers", ", ".join(j.get("labellers") or [])],
            ["gate", gate.get("message") or "none"],
            ["unresolved pairs left out", j.get("unresolved_left_out")],
            ["overridden pairs", j.get("overridden")],
            ["manifest", j.get("manifest")],
        ]  # fmt: skip
        rows[4:4] = _agreement_rows(j)
        out.append(table(["field", "value"], rows, caption="What the judgments mean (their manifest)"))
        out += [
            f'<p class="warning" role="note"><strong>Warning:</strong> {_e(w)}</p>'
            for w in j.get("warnings", [])
        ]
    noise = d.comparison.noise
    if noise is not None:
        scale = [str(g) for g in noise.scale]
        a, b = noise.labellers
        conf = [[float(v) for v in row] for row in noise.confusion]
        chart = svg.heatmap(
            conf,
            scale,
            title=f"Calibration confusion matrix of {a} and {b}",
            rows=f"{a}'s grade",
            cols=f"{b}'s grade",
        )
        out.append(svg.figure(chart, f"Confusion matrix of {a} and {b}: calibration pairs graded by both, {a}'s "
                              f"grade in rows, {b}'s in columns (the labellers of the noise floor).",
                              [f"{a} \\ {b}", *scale], [[g, *(f"{v:g}" for v in row)] for g, row in zip(scale, conf, strict=True)]))  # fmt: skip
        ma = [sum(row) for row in conf]
        mb = [sum(conf[i][j] for i in range(len(conf))) for j in range(len(conf))]
        chart = svg.bars(scale, [(a, ma), (b, mb)], title="Grades given by each labeller", axis="grade")
        out.append(svg.figure(chart, "How often each labeller used each grade on the calibration pairs.",
                              ["grade", a, b], [[g, f"{x:g}", f"{y:g}"] for g, x, y in zip(scale, ma, mb, strict=True)]))  # fmt: skip
        tau = "; ".join(
            f"{m}: tau {number(t, 3)} (p {number(p, 3)})" for m, (t, p) in noise.kendall_tau.items()
        )
        out.append(
            f"<p>Run rankings under {_e(a)}'s and {_e(b)}'s grades agree as Kendall's tau: {_e(tau)}.</p>"
        )
    else:
        out.append("<p>No second labeller was given, so the calibration matrix and the noise floor are not shown "
                   "(pass <code>--noise-floor A.qrels B.qrels</code> or a judging project's database).</p>")  # fmt: skip
    return "".join(out)


def _conventions_section(d: Any) -> str:
    out = [conventions_table(d.results)]
    rows, data = [], []
    for run, variants in d.sweeps.items():
        dots = []
        for v in variants:
            if v.kind == "default" or v.diff is None:
                continue
            flagged = bool(v.optimistic)
            dots.append((v.label, v.diff, flagged))
            data.append(
                [
                    run,
                    v.label,
                    v.kind,
                    number(v.mean),
                    f"{v.diff:+.4f}",
                    v.moved,
                    "optimistic" if flagged else "",
                ]
            )
        rows.append((run, dots))
    chart = svg.dot_plot(
        rows, title=f"How far each single choice moves the mean {d.measure}", axis="change of the mean"
    )
    out.append(svg.figure(chart, "Each dot: the mean under one profile or one changed axis, minus the mean under "
                          "these conventions, one line per profile or changed axis (named at its left) and one mark per run (named in "
                          "the legend); a choice named in orange is optimistic (it can only raise a score).",
                          ["run", "conventions", "kind", "mean", "change", "queries moved", "flag"], data))  # fmt: skip
    if d.sweep_left_out:
        out.append(f"<p>Not swept (to keep the report quick): {_e(', '.join(d.sweep_left_out))}.</p>")
    return "".join(out)


def folded(summary: str, body: str) -> str:
    """A long section's body folded by default (``<details>``): the page stays short on a phone, and a link
    to an anchor inside opens it."""
    return f'<details class="fold"><summary>{_e(summary)}</summary>{body}</details>'


def _explain_section(d: Any) -> str:
    from .explain import nothing_returned

    if not d.explanations:
        return (
            f"<p>No per-rank explanation: {_e(d.measure)} is not a DCG-family measure, or no query moved.</p>"
        )
    out = []
    for (run, q), e in d.explanations.items():
        sid = _slug("explain", run, q)
        rows = [[r.rank, ("html", f"<span class='mono'>{_e(r.doc_id)}</span>"), "–" if r.grade is None else r.grade,
                 number(r.gain, 3), number(r.discount, 3), number(r.contribution, 3), f"{r.share * 100:.0f}%", r.block or ""]
                for r in e.rows]  # fmt: skip
        if not e.rows:  # the run has no line for the query
            out.append(f'<h3 id="{sid}">{_e(run)}, query {_e(q)}: {_e(e.measure)} {number(e.ndcg)}</h3>'
                       f"<p>{_e(nothing_returned(run, q, e.conventions.missing_queries))}</p>")  # fmt: skip
            continue
        below = ", ".join(f"{doc} (grade {g}, rank {rk})" for doc, g, rk in e.relevant_below_cutoff) or "none"
        never = ", ".join(f"{doc} (grade {g})" for doc, g in e.relevant_never_retrieved) or "none"
        out.append(
            f'<h3 id="{sid}">{_e(run)}, query {_e(q)}: {_e(e.measure)} {number(e.ndcg)}</h3>'
            + table(["rank", "document", "grade", "gain", "discount", "contribution", "share", "tied block"], rows,
                    numeric=(0, 2, 3, 4, 5, 6))
            + f"<p>DCG {number(e.dcg)} / IDCG {number(e.idcg)}; recall at the cutoff {number(e.recall)}. Relevant below the cutoff: "
            f"{_e(below)}. Never retrieved: {_e(never)}.</p>"
        )  # fmt: skip
    return "".join(out)


def summary_sections(estimates: Any, comparison: Any) -> list[tuple[str, str, str]]:
    """The summary, the verdicts and the forest plot. Without people's judgments: the means and the paired
    tests. With them the estimates lead (means and differences, prediction-powered), and the model's own
    means, tests and forest plot follow under a heading that says they are the model's grades alone."""
    res = comparison.results
    plain = means_section(res) + comparison_table(comparison)
    if comparison.human is None:
        return [
            ("summary", "Summary", plain),
            ("forest", "Differences from the baseline", forest_figure(comparison)),
        ]
    from .estimate_tables import MODEL_ALONE, estimation_html

    alone = MODEL_ALONE[0].upper() + MODEL_ALONE[1:]
    return [
        ("summary", f"Summary: estimated means and differences ({comparison.estimator})",
         estimation_html(estimates, comparison)),
        ("model-alone", alone, plain),
        ("forest", f"Differences from the baseline: {MODEL_ALONE}", forest_figure(comparison)),
    ]  # fmt: skip


def report_page(d: Any) -> str:
    """The whole report for a :class:`~qrelkit.report.dossier.Dossier`."""
    res, comp = d.results, d.comparison
    anchors = {_slug("explain", run, q) for run, q in d.explanations}
    pairs = list(dict.fromkeys((p.baseline, p.treatment) for p in comp.pairs if p.measure == str(d.measure)))
    from .dossier import SWEEP_RUNS

    drawn = pairs[:SWEEP_RUNS]
    per_query = per_query_section(res, drawn, d.measure, anchors)
    if len(pairs) > len(drawn):
        per_query += f"<p>Per-query differences drawn for the first {len(drawn)} of {len(pairs)} pairs.</p>"
    extra = []
    if d.labellers is not None:
        extra = [
            [f"labeller {q.name}", ("html", f"<code>sha256:{_e(q.fingerprint.sha256)}</code>")]
            for q in d.labellers
        ]
    from .tables import detail_sections

    design = []
    if d.extra.get("design"):  # a live queue's design chose what people judged: its estimates first
        from .design import design_section

        design = [("design", "Estimates under the live queue's design", design_section(d.extra["design"]))]
    sections = [
        bottom_line_section(comp),
        *design,
        *summary_sections(d.estimates, comp),
        *detail_sections(comp),
        (
            "per-query",
            "Per-query differences",
            folded(f"Show the per-query differences of {len(drawn)} pair(s)", per_query),
        ),
        ("missing", "Ordered badly versus never retrieved", _missing_section(d)),
        ("judgments", "Judgments", _judgments_section(d)),
        ("conventions", "Conventions", _conventions_section(d)),
        (
            "explain",
            "Explain: the queries that moved most",
            folded(
                f"Show the per-rank arithmetic of {len(d.explanations)} run and query pair(s)",
                _explain_section(d),
            )
            if d.explanations
            else _explain_section(d),
        ),
        ("provenance", "Provenance", provenance_section(res, d.command, extra)),
    ]
    lead = f"{len(res.run_names)} runs, {len(res.measures)} measures; baseline: " + ", ".join(
        dict.fromkeys(p.baseline for p in comp.pairs)
    )
    return document("qrelkit report", lead, sections, footer=f"qrelkit {_e(res.version)}")


def results_page(results: Any, per_query: bool = False) -> str:
    """``qrelkit eval --format html``: the means, the conventions and the provenance."""
    sections = [
        ("summary", "Means", means_section(results)),
        ("conventions", "Conventions", conventions_table(results)),
    ]
    if per_query:
        wide = results.to_polars().sort(["run", "query_id"])
        rows = [[v if isinstance(v, str) else number(v) for v in row] for row in wide.iter_rows()]
        sections.append(
            ("per-query", "Per query", table(wide.columns, rows, numeric=range(2, len(wide.columns))))
        )
    sections.append(("provenance", "Provenance", provenance_section(results)))
    return document("qrelkit results", f"{len(results.run_names)} runs, {len(results.measures)} measures", sections,
                    footer=f"qrelkit {_e(results.version)}")  # fmt: skip


def estimates_page(estimates: Any) -> str:
    """``qrelkit eval --human --format html``: each mean by every estimator (the chosen one marked), what
    lambda is, the settings (estimator, both judgments' fingerprints), the conventions and the provenance."""
    from .estimate_tables import COLUMNS, LAMBDA_LINE, reason_lines, rows, settings_lines

    res = estimates.model
    warnings = tuple(dict.fromkeys((*estimates.warnings, *res.warnings)))
    body = "".join(f"<p class='warning' role='note'><strong>Warning:</strong> {_e(w)}</p>" for w in warnings)
    body += table(COLUMNS, rows(estimates), numeric=range(3, 9),
                  caption="Estimated means (* = the chosen estimator; eff. |H| = human-judged queries a "
                  "people-only estimate would need for as narrow an interval)")  # fmt: skip
    notes = [
        LAMBDA_LINE,
        *reason_lines(estimates),
        *settings_lines(estimates.settings(), res.conventions)[:3],
    ]
    body += "<p>" + "<br>".join(_e(line) for line in notes) + "</p>"
    sections = [
        ("summary", f"Estimated means ({estimates.settings()['estimator']})", body),
        ("conventions", "Conventions", conventions_table(res)),
        ("provenance", "Provenance", provenance_section(res)),
    ]
    return document("qrelkit estimates", f"{len(res.run_names)} runs, {len(res.measures)} measures", sections,
                    footer=f"qrelkit {_e(res.version)}")  # fmt: skip


def comparison_page(comparison: Any) -> str:
    """``qrelkit compare --format html``: the comparison table, the forest plot, means and provenance."""
    from .tables import detail_sections

    res = comparison.results
    sections = [
        bottom_line_section(comparison),
        *summary_sections(None, comparison),
        *detail_sections(comparison),
        ("conventions", "Conventions", conventions_table(res)),
        ("provenance", "Provenance", provenance_section(res)),
    ]
    return document(
        "qrelkit comparison", f"{len(res.run_names)} runs", sections, footer=f"qrelkit {_e(res.version)}"
    )
