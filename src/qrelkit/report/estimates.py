"""Rendering of :class:`~qrelkit.estimation.Estimates` (``qrelkit eval --human``) and of a comparison's
estimated differences (``qrelkit compare --human``): text, JSON, Markdown, TSV and CSV.

Renderers never compute a statistic. Every format carries the estimator, lambda, |H|, |U|, both qrels'
fingerprints and the conventions: JSON as fields, the text formats as header or comment lines.
"""

from __future__ import annotations

import json
from typing import Any

from .tables import _f, _grid, p_text

FORMATS = ("table", "json", "markdown", "tsv", "csv")

COLUMNS = ("run", "measure", "estimator", "estimate", "interval", "lambda", "|H|", "|U|", "eff. |H|")
PAIR_COLUMNS = ("baseline", "treatment", "measure", "diff", "interval", "lambda", "|H|", "|U|", "eff. |H|",
                "model diff", "human diff", "p", "p adj", "")  # fmt: skip
POWER_COLUMNS = ("baseline", "treatment", "measure", "delta", "|H| now", "|H| needed", "of", "people-only")


def _eff(x: float | None) -> str:
    return "–" if x is None else _f(x, 1)


def _interval_cells(i: Any) -> list[str]:
    return [_f(i.value), f"[{_f(i.low)}, {_f(i.high)}]", _f(i.lam, 3) if i.lam is not None else "–",
            str(i.human_queries), str(i.unlabeled_queries), _eff(i.effective_human_queries)]  # fmt: skip


def rows(estimates: Any, every: bool = True) -> list[list[str]]:
    """One row per run, measure and estimator (the chosen one first, marked ``*``), or the chosen only."""
    out = []
    for r in estimates.rows:
        order = [r.estimator] + [e for e in r.intervals if e != r.estimator] if every else [r.estimator]
        for e in order:
            mark = "*" if e == r.estimator else ""
            out.append([r.run, r.measure, e + mark, *_interval_cells(r.intervals[e])])
    return out


def settings_lines(settings: dict[str, Any], conventions: Any) -> list[str]:
    """The estimator, level, both judgments with their fingerprints, and the conventions, one a line."""
    m, h = settings["model_qrels"], settings["human_qrels"]
    return [
        f"estimator: {settings['estimator']} (interval {settings['interval_level']:.0%}); "
        "ppi and ppi++ rest on HUMAN_QRELS' queries being a random sample of the scored ones",
        f"model qrels: {m['name']} sha256:{m['fingerprint']['sha256'][:16]}",
        f"human qrels: {h['name']} sha256:{h['fingerprint']['sha256'][:16]}",
        f"conventions: {conventions}",
    ]


def render_estimates_text(estimates: Any) -> str:
    res = estimates.model
    out = ["qrelkit eval --human (* = the chosen estimator; eff. |H| = human-judged queries a people-only "
           "estimate would need for as narrow an interval)", ""]  # fmt: skip
    out += _grid(COLUMNS, rows(estimates))
    out += ["", *settings_lines(estimates.settings(), res.conventions)]
    out += [f"run: {r.name} sha256:{r.fingerprint.sha256[:16]}" for r in res.runs]
    out += [f"warning: {w}" for w in (*estimates.warnings, *res.warnings)]
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
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows(estimates)]
    out += [
        "",
        *(f"{line}." for line in settings_lines(estimates.settings(), estimates.model.conventions)),
        "",
    ]
    out += [f"<!-- {line.lstrip('# ')} -->" for line in _comment_lines(estimates)]
    return "\n".join(out) + "\n"


def render_estimates_delimited(estimates: Any, sep: str) -> str:
    """TSV or CSV: the provenance as ``#`` lines, then one row per run, measure and estimator."""
    head = ("run", "measure", "estimator", "chosen", "estimate", "low", "high", "lambda", "human_queries",
            "unlabeled_queries", "effective_human_queries")  # fmt: skip
    out = [*_comment_lines(estimates), sep.join(head)]
    for r in estimates.rows:
        for e, i in r.intervals.items():
            d = i.to_dict()
            cells = [r.run, r.measure, e, str(e == r.estimator).lower(), *(d["value"], *d["interval"]),
                     d["lambda"], i.human_queries, i.unlabeled_queries, d["effective_human_queries"]]  # fmt: skip
            out.append(sep.join("" if c is None else str(c) for c in cells))
    return "\n".join(out) + "\n"


def render_estimates(estimates: Any, fmt: str) -> str:
    if fmt == "table":
        return render_estimates_text(estimates)
    if fmt == "json":
        return render_estimates_json(estimates)
    if fmt == "markdown":
        return render_estimates_markdown(estimates)
    if fmt in ("tsv", "csv"):
        return render_estimates_delimited(estimates, "\t" if fmt == "tsv" else ",")
    raise ValueError(fmt)


# -- a comparison's estimated differences ----------------------------------------------------------------


def pair_rows(comparison: Any) -> list[list[str]]:
    out = []
    for p in comparison.estimated:
        mark = "*" if p.significant else ""
        out.append([p.baseline, p.treatment, p.measure, *_interval_cells(p.estimate), _f(p.model_difference),
                    _f(p.human_difference), p_text(p.estimate.p_value), p_text(p.p_adjusted), mark])  # fmt: skip
        if p.verdict is not None:
            out[-1][-1] = f"{mark} {p.verdict}".strip()
    return out


def power_rows(comparison: Any) -> list[list[str]]:
    out = []
    for p in comparison.estimated:
        w = p.power
        if w is None:
            continue
        needed = str(w.queries_needed) if w.queries_needed is not None else "unreachable"
        people = _f(w.classical_queries, 1) if w.classical_queries is not None else "–"
        out.append([p.baseline, p.treatment, p.measure, _f(w.delta), str(w.queries_now), needed, str(w.total),
                    people])  # fmt: skip
    return out


def estimation_text(comparison: Any) -> list[str]:
    """The estimated differences' section of ``compare``'s text (empty without ``--human``)."""
    if comparison.human is None:
        return []
    o = comparison.options
    out = ["", f"estimated differences ({comparison.estimator}, from the model's grades on every query and the "
           f"people's on HUMAN_QRELS' queries; * = adjusted p < alpha, {o.correction} over {o.family}):"]  # fmt: skip
    out += _grid(PAIR_COLUMNS, pair_rows(comparison))
    power = power_rows(comparison)
    if power:
        out += [
            "",
            f"human-judged queries needed ({comparison.estimator}, alpha {o.alpha}, power {o.power_target}):",
        ]
        out += _grid(POWER_COLUMNS, power)
    out += settings_lines(comparison.estimation_settings(), comparison.results.conventions)[:3]
    return out


def estimation_markdown(comparison: Any) -> list[str]:
    if comparison.human is None:
        return []
    out = ["", "| " + " | ".join(PAIR_COLUMNS[:-1]) + " | sig |", "|" + "---|" * len(PAIR_COLUMNS)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in pair_rows(comparison)]
    power = power_rows(comparison)
    if power:
        out += ["", "| " + " | ".join(POWER_COLUMNS) + " |", "|" + "---|" * len(POWER_COLUMNS)]
        out += ["| " + " | ".join(r) + " |" for r in power]
    lines = settings_lines(comparison.estimation_settings(), comparison.results.conventions)[:3]
    return [*out, "", *(f"{line}." for line in lines)]
