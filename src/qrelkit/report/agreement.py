"""Rendering of agreement and leverage: the text, TSV and JSON forms of what ``qrelkit agree`` and
``qrelkit leverage`` computed (:class:`qrelkit.judgments.adjudication.AgreementDocument`, leverage tables)."""

from __future__ import annotations

import json
from typing import Any

from .tables import number, p_text

__all__ = ["decision_lines", "group_lines", "render_agreement", "render_leverage"]


def render_agreement(doc: Any, fmt: str, *, show_disagreements: bool = False) -> str:
    """``json`` (the document's :meth:`to_dict`) or ``table`` (the text report), of two labellers'
    :class:`~qrelkit.judgments.adjudication.AgreementDocument` or a group's
    :class:`~qrelkit.judgments.adjudication.GroupAgreementDocument`."""
    if fmt == "json":
        return json.dumps(doc.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
    if hasattr(doc, "disagreements"):
        return _group_text(doc.to_dict(), show_disagreements)
    return _agree_text(doc.to_dict(), doc.calibration.report, show_disagreements)


def group_lines(g: dict[str, Any]) -> list[str]:
    """The text of a group's agreement (:func:`qrelkit.judgments.adjudication.group_calibration_fields`): every
    statistic with its query-bootstrap interval, the matrix of pairwise weighted kappas, the gate. The
    admin page shows the same fields as HTML, ``judge kappa`` and ``agree`` as this text."""
    from ..agreement.group import STATISTIC_NAMES

    names = {**STATISTIC_NAMES, "mean_kappa": f"mean pairwise weighted kappa ({g['weights']})"}
    level = f"{g['level'] * 100:g}%"
    out = [
        f"agreement of {len(g['labellers'])} labellers ({', '.join(g['labellers'])}) on {g['n_units']} pairs "
        f"graded by two or more, in {g['n_queries']} queries"
        + (f" ({g['n_single']} pairs graded by one labeller only take no part)" if g["n_single"] else ""),
        f"  {'statistic':<40} {'value':>7}   {level} query bootstrap ({g['bootstrap_resamples']} resamples, "
        f"seed {g['bootstrap_seed']})",
    ]
    for stat, v in g["statistics"].items():
        mark = "*" if stat == g["statistic"] else " "
        out.append(
            f"{mark} {names[stat]:<40} {number(v['value'], 3, 'n/a'):>7}   [{number(v['bootstrap_low'], 3, 'n/a')}, {number(v['bootstrap_high'], 3, 'n/a')}]"
        )
    width = max(7, *(len(n) for n in g["labellers"])) + 2
    out += ["", f"pairwise weighted kappa ({g['weights']}; pairs graded by both in parentheses)"]
    out.append(" " * width + "".join(n.rjust(width + 6) for n in g["labellers"]))
    for i, name in enumerate(g["labellers"]):
        cells = []
        for j, k in enumerate(g["kappa_matrix"][i]):
            cells.append(
                ("-" if i == j else f"{number(k, 3, 'n/a')} ({g['pairs_matrix'][i][j]})").rjust(width + 6)
            )
        out.append(name.ljust(width) + "".join(cells))
    gate = g.get("gate")
    out += ["", f"gate on {STATISTIC_NAMES[g['statistic']]}: {gate['message']}" if gate else
            "gate: none (pass --min-kappa 0.6 to gate on agreement)"]  # fmt: skip
    return out


def _group_text(p: dict[str, Any], show_disagreements: bool) -> str:
    out = []
    for i, lab in enumerate(p["labellers"]):
        out.append(f"{chr(65 + i) if i < 26 else i + 1}: {lab['path']} ({lab['judgments']} judgments, "
                   f"sha256 {lab['fingerprint']['sha256'][:12]})")  # fmt: skip
    rubric = p["rubric"]
    where = (
        f"rubric {rubric['name']} {rubric['version']} (sha256 {rubric['content_hash'][:12]})"
        if rubric
        else "grades seen"
    )
    out.append(f"scale: {', '.join(map(str, p['scale']))} (from {where}); weights: {p['weights']}")
    group = p["group"]
    out.append("")
    out += group_lines(group)
    out.append("")
    out.append(f"disagreements (pairs two labellers graded differently): {len(p['disagreements'])}")
    if show_disagreements:
        for d in p["disagreements"]:
            grades = ", ".join(f"{n} {'-' if v is None else int(v)}" for n, v in d["grades"].items())
            out.append(f"  {d['query_id']}\t{d['doc_id']}\t{grades}")
    elif p["disagreements"]:
        out.append("  (list them with --show-disagreements)")
    return "\n".join(out) + "\n"


def render_leverage(table: Any, shown: Any, k: int, fmt: str, header: dict[str, Any] | None = None) -> str:
    """The regrade-leverage table: ``json`` (after the provenance ``header``: tool, qrels, runs), ``tsv``
    (after the two lines of a pipe) or ``table`` (the ``shown`` rows of ``table``)."""
    header = header or {}
    if fmt == "json":
        body = header | {"k": k, "judgments": table.height, "rows": shown.to_dicts()}
        return json.dumps(body, indent=2) + "\n"
    if fmt == "tsv":
        head = ""
        if header:
            from . import pipe_header

            runs = [(r["name"], r["fingerprint"]["sha256"]) for r in header["runs"]]
            full = "# full provenance (fingerprints): --format json"
            lines = pipe_header(
                header["tool"]["version"], None, header["qrels"]["fingerprint"]["sha256"], runs, full
            )
            head = "\n".join(lines) + "\n"
        return head + str(shown.write_csv(separator="\t", float_precision=6))
    lines = [f"{table.height} judgments; largest nDCG@{k} swing of a one-step regrade (top {shown.height}):"]
    lines.append(f"  {'query':<10} {'doc':<40} grade -> regrade  max     mean    retrieved")
    for r in shown.iter_rows(named=True):
        lines.append(
            f"  {r['query_id']:<10} {r['doc_id']:<40} {r['grade']:>5} -> {r['regrade']!s:<7} "
            f"{r['leverage_max']:.4f}  {r['leverage_mean']:.4f}  {r['retrieved'] or '-'}"
        )
    return "\n".join(lines) + "\n"


def _agree_text(p: dict[str, Any], report: Any, show_disagreements: bool) -> str:
    out: list[str] = []
    add = out.append
    la, lb = p["labellers"]["a"], p["labellers"]["b"]
    add(f"A: {la['path']} ({la['judgments']} judgments, sha256 {la['fingerprint']['sha256'][:12]})")
    add(f"B: {lb['path']} ({lb['judgments']} judgments, sha256 {lb['fingerprint']['sha256'][:12]})")
    rubric = p["rubric"]
    where = (
        f"rubric {rubric['name']} {rubric['version']} (sha256 {rubric['content_hash'][:12]})"
        if rubric
        else "grades seen"
    )
    add(f"scale: {', '.join(map(str, p['scale']))} (from {where}); weights: {p['weights']}")
    k, boot = report.kappa, report.bootstrap
    add(
        f"pairs judged by both: {k.n} in {len(report.per_query)} queries "
        f"(only A: {report.n_only_a}, only B: {report.n_only_b})"
    )
    add("")
    add(
        f"kappa ({p['weights']}) {number(k.kappa, 3, 'n/a')}  SE {number(k.std_error, 3, 'n/a')}  {k.level * 100:g}% CI "
        f"[{number(k.ci_low, 3, 'n/a')}, {number(k.ci_high, 3, 'n/a')}]  (Fleiss-Cohen-Everitt)"
    )
    add(
        f"query bootstrap {boot.level * 100:g}% CI [{number(boot.low, 3, 'n/a')}, {number(boot.high, 3, 'n/a')}] "
        f"({boot.n_resamples} resamples of {boot.n_queries} queries, seed {boot.seed})"
    )
    alpha = p["alpha"]
    add(
        f"Krippendorff's alpha: ordinal {number(alpha['ordinal']['alpha'], 3, 'n/a')}, "
        f"interval {number(alpha['interval']['alpha'], 3, 'n/a')}"
    )
    add(f"exact agreement: {number(k.exact_agreement * 100 if k.n else None, 1, 'n/a')}%")
    if k.note:
        add(f"note: {k.note}")
    add("")
    add("confusion (rows: A, columns: B)")
    scale = report.scale
    width = max(6, *(len(str(int(x))) + 2 for x in k.confusion.ravel()))
    add("A \\ B".ljust(8) + "".join(str(g).rjust(width) for g in scale) + "total".rjust(width + 2))
    for i, g in enumerate(scale):
        row = "".join(str(int(x)).rjust(width) for x in k.confusion[i])
        add(str(g).ljust(8) + row + str(int(k.marginal_a[i])).rjust(width + 2))
    add(
        "total".ljust(8) + "".join(str(int(x)).rjust(width) for x in k.marginal_b) + str(k.n).rjust(width + 2)
    )
    add("")
    add("per grade: " + "; ".join(f"{g}: A {a}, B {b}" for g, (a, b) in report.marginals.items()))
    add("")
    add("per query:  pairs  exact   kappa")
    for q in report.per_query:
        add(
            f"  {q.query_id:<10} {q.n_pairs:>4}  {q.exact_agreement * 100:5.1f}%  {number(q.kappa, 3, 'n/a')}"
        )
    n_dis = len(report.disagreements)
    by_distance: dict[int, int] = {}
    for d in report.disagreements:
        by_distance[d.distance] = by_distance.get(d.distance, 0) + 1
    detail = ", ".join(
        f"{n} by {dist} grade{'s' if dist > 1 else ''}" for dist, n in sorted(by_distance.items())
    )
    add("")
    add(f"disagreements: {n_dis}" + (f" ({detail})" if detail else ""))
    if show_disagreements:
        for d in report.disagreements:
            add(f"  {d.query_id}\t{d.doc_id}\tA {d.grade_a}\tB {d.grade_b}")
    elif n_dis:
        add("  (list them with --show-disagreements)")
    metric = p.get("metric_agreement")
    if metric:
        add("")
        add(f"metric-level agreement ({', '.join(metric['measures'])}; queries judged by both)")
        add(f"  {'run':<12} {'nDCG A':>8} {'nDCG B':>8} {'R A':>7} {'R B':>7}  nDCG moves, recall identical")
        for run, m in metric["means"].items():
            add(
                f"  {run:<12} {m['ndcg_a']:8.4f} {m['ndcg_b']:8.4f} {m['recall_a']:7.4f} {m['recall_b']:7.4f}"
                f"  {m['queries_ndcg_moves_recall_not']} of {m['queries']} queries"
            )
        add("  per query (* = nDCG moves while recall is identical):")
        for r in metric["per_query"]:
            mark = "*" if r["ndcg_moves_recall_not"] else " "
            add(
                f"  {mark} {r['run']:<10} {r['query_id']:<12} nDCG {r['ndcg_a']:.4f} -> {r['ndcg_b']:.4f} "
                f"({r['ndcg_delta']:+.4f})  R {r['recall_a']:.4f} / {r['recall_b']:.4f}"
            )
    if p.get("decision_agreement"):
        add("")
        out.extend(decision_lines(p["decision_agreement"]))
    gate = p.get("gate")
    add("")
    add(f"gate: {gate['message']}" if gate else "gate: none (pass --min-kappa 0.6 to gate on agreement)")
    return "\n".join(out) + "\n"


#: Flips and changed significant differences listed in the text (JSON lists every one).
SHOWN_PAIRS = 20


def decision_lines(d: dict[str, Any]) -> list[str]:
    """The text of a decision-level agreement (:meth:`qrelkit.compare.decisions.DecisionAgreement.to_dict`):
    the rank correlations with their intervals, each run's mean and rank under both, the pairs whose order
    flips and the fate under B of the differences significant under A. ``agree --runs``, ``judge model
    status`` and the report show this text."""
    la, lb = d["labellers"]["a"], d["labellers"]["b"]
    tau = d["kendall_tau"]
    out = [
        f"ranking agreement ({d['measure']} means of {len(d['runs'])} runs on the {d['queries']} queries both "
        f"judged; A = {la} is the truth, B = {lb})",
    ]
    rows = [
        ("Kendall's tau-b", tau),
        ("tau_AP, B against A", d["tau_ap"]),
        ("tau_AP, A against B", d["tau_ap_reverse"]),
        ("tau_AP, symmetric", d["tau_ap_symmetric"]),
    ]
    for label, r in rows:
        low, high = r["interval"]
        out.append(
            f"  {label:<20} {number(r['value'], 3, 'n/a'):>7}  {r['level'] * 100:g}% CI "
            f"[{number(low, 3, 'n/a')}, {number(high, 3, 'n/a')}]"
        )
    note = f"; {tau['note']}" if tau.get("note") else ""
    out.append(
        f"  (query bootstrap: {tau['n_resamples']} resamples of {tau['n_queries']} queries, seed {tau['seed']}"
        f"{note}; ties: {d['tied_groups']['a']} tied group(s) under A, {d['tied_groups']['b']} under B; tau_AP "
        "counts a tied pair as right half of the time)"
    )
    width = max(12, *(len(r["run"]) for r in d["runs"]))
    out.append(f"  {'run':<{width}} {'mean A':>8} {'rank':>5} {'mean B':>8} {'rank':>5}")
    for r in sorted(d["runs"], key=lambda r: (r["rank_a"], r["run"])):
        out.append(
            f"  {r['run']:<{width}} {number(r['mean_a'], 4, 'n/a'):>8} {r['rank_a']:>5} "
            f"{number(r['mean_b'], 4, 'n/a'):>8} {r['rank_b']:>5}"
        )
    n = len(d["runs"])
    flips = d["flips"]
    out.append(f"  order flips: {len(flips)} of {n * (n - 1) // 2} pairs of runs")
    for f in flips[:SHOWN_PAIRS]:
        (ta, tb), (oa, ob) = f["truth"], f["other"]
        out.append(
            f"    {f['above_under_truth']} above {f['below_under_truth']} under A ({number(ta, 4)} / "
            f"{number(tb, 4)}), below under B ({number(oa, 4)} / {number(ob, 4)})"
        )
    if len(flips) > SHOWN_PAIRS:
        out.append(f"    ... {len(flips) - SHOWN_PAIRS} more (-f json lists every one)")
    s = d["significance"]
    o = s["options"]
    out.append(
        f"  significant differences ({o['test']} test, {o['correction']} correction over {s['pairs']} pairs, "
        f"alpha {o['alpha']:g}): {s['significant_under_a']} under A; under B {s['kept']} kept, "
        f"{s['reversed']} reversed, {s['lost']} lost; {s['gained']} significant under B only"
    )
    changed = [c for c in s["changed_pairs"] if c["outcome"] in ("reversed", "lost")]
    for c in changed[:SHOWN_PAIRS]:
        out.append(
            f"    {c['outcome']}: {c['second']} - {c['first']}: {number(c['difference_a'], 4, signed=True)} under A "
            f"(p {p_text(c['p_adjusted_a'])}), {number(c['difference_b'], 4, signed=True)} under B "
            f"(p {p_text(c['p_adjusted_b'])})"
        )
    if len(changed) > SHOWN_PAIRS:
        out.append(f"    ... {len(changed) - SHOWN_PAIRS} more (-f json lists every one)")
    return out
