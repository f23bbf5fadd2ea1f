"""The tables of prediction-powered estimates, shared by the text, Markdown and HTML renderings of
``eval --human``, ``compare --human`` and ``report --human``. Imports nothing of the report's own but
:mod:`qrelkit.report.tables`, so every renderer can use it without a cycle."""

from __future__ import annotations

from typing import Any

from .tables import _e, _grid, number, p_text, table

COLUMNS = ("run", "measure", "estimator", "estimate", "interval", "lambda", "|H|", "|U|", "eff. |H|")
PAIR_COLUMNS = ("baseline", "treatment", "measure", "diff", "interval", "lambda", "|H|", "|U|", "eff. |H|",
                "model diff", "human diff", "p", "p adj", "sig")  # fmt: skip
POWER_COLUMNS = ("baseline", "treatment", "measure", "delta", "|H| now", "|H| needed", "of", "people-only")
#: What the interval cell says when the values it rests on do not vary (the reason follows the table).
NOT_MEASURABLE = "not measurable"
#: Said under every table of estimates: what lambda is, and that an interval is not clipped to the range.
LAMBDA_LINE = (
    "lambda: how much the model's grades are trusted (0 = people only, 1 = fully); an interval may pass the "
    "measure's range (e.g. above 1): it is not clipped"
)


def _interval_cells(i: Any) -> list[str]:
    shown = NOT_MEASURABLE if i.reason else f"[{number(i.low)}, {number(i.high)}]"
    return [number(i.value), shown, number(i.lam, 3),
            str(i.human_queries), str(i.unlabeled_queries), number(i.effective_human_queries, 1)]  # fmt: skip


def reason_lines(estimates: Any = None, comparison: Any = None) -> list[str]:
    """One line per estimate whose interval is not measurable, with the reason (the chosen estimator's in a
    comparison, every estimator's in the means)."""
    out = []
    if estimates is not None:
        for r in estimates.rows:
            why: dict[str, list[str]] = {}
            for e, i in r.intervals.items():
                if i.reason:
                    why.setdefault(i.reason, []).append(e)
            out += [f"{r.run} {r.measure} ({', '.join(es)}): {NOT_MEASURABLE}: {w}" for w, es in why.items()]
    if comparison is not None:
        for p in comparison.estimated:
            if p.estimate.reason:
                out.append(f"{p.treatment} - {p.baseline} {p.measure}: {NOT_MEASURABLE}: {p.estimate.reason}")
    return out


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
        f"estimator: {settings['estimator']}, {settings['interval_level']:.0%} interval {settings['interval']} "
        f"({settings['interval_method']}); ppi and ppi++ rest on HUMAN_QRELS' queries being a random sample of "
        "the scored ones",
        f"model qrels: {m['name']} sha256:{m['fingerprint']['sha256'][:16]}",
        f"human qrels: {h['name']} sha256:{h['fingerprint']['sha256'][:16]}",
        f"conventions: {conventions}",
    ]


# -- a comparison's estimated differences ----------------------------------------------------------------


def pair_rows(comparison: Any) -> list[list[str]]:
    out = []
    for p in comparison.estimated:
        mark = "*" if p.significant else ""
        out.append([p.baseline, p.treatment, p.measure, *_interval_cells(p.estimate), number(p.model_difference),
                    number(p.human_difference), p_text(p.estimate.p_value), p_text(p.p_adjusted), mark])  # fmt: skip
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
        people = number(w.classical_queries, 1)
        out.append([p.baseline, p.treatment, p.measure, number(w.delta), str(w.queries_now), needed, str(w.total),
                    people])  # fmt: skip
    return out


def gate_lines(results: Any) -> list[str]:
    """The model's judgments' calibration gate from their manifest (nothing without one)."""
    gate = (results.judgments or {}).get("gate")
    if not gate:
        return []
    outcome = "passed" if gate.get("passed") else "failed"
    return [
        f"model qrels' calibration gate: {outcome}" + (f" ({gate['message']})" if gate.get("message") else "")
    ]


def estimation_lines(comparison: Any) -> list[str]:
    """The estimator, both judgments with their fingerprints, and the model's calibration gate."""
    lines = settings_lines(comparison.estimation_settings(), comparison.results.conventions)[:3]
    return lines + gate_lines(comparison.results)


#: The title of a comparison's tables computed from the model's grades alone, when it also estimated.
MODEL_ALONE = "model's grades alone (biased; for contrast)"


def differences_title(comparison: Any) -> str:
    o = comparison.options
    return (f"estimated differences ({comparison.estimator}, from the model's grades on every query and the "
            f"people's on HUMAN_QRELS' queries; * = adjusted p < alpha, {o.correction} over {o.family})")  # fmt: skip


def power_title(comparison: Any) -> str:
    o = comparison.options
    return (f"human-judged queries needed ({comparison.estimator} on the model's and the people's grades, "
            f"alpha {o.alpha}, power {o.power_target})")  # fmt: skip


def estimation_text(comparison: Any) -> list[str]:
    """The estimated differences' section of ``compare``'s text (empty without ``--human``): the first table
    after the bottom line."""
    if comparison.human is None:
        return []
    out = ["", differences_title(comparison) + ":"]
    out += _grid(PAIR_COLUMNS, pair_rows(comparison))
    out += [LAMBDA_LINE, *reason_lines(comparison=comparison)]
    power = power_rows(comparison)
    if power:
        out += ["", power_title(comparison) + ":"]
        out += _grid(POWER_COLUMNS, power)
    out += settings_lines(comparison.estimation_settings(), comparison.results.conventions)[:3]
    out += [f"warning: {w}" for w in comparison.estimation_warnings]
    return out + gate_lines(comparison.results)


def estimation_markdown(comparison: Any) -> list[str]:
    if comparison.human is None:
        return []
    from .tables import markdown_text

    out = ["", f"**{markdown_text(differences_title(comparison))}**", ""]
    out += ["| " + " | ".join(PAIR_COLUMNS) + " |", "|" + "---|" * len(PAIR_COLUMNS)]
    out += ["| " + " | ".join(map(markdown_text, r)) + " |" for r in pair_rows(comparison)]
    out += [
        "",
        f"{LAMBDA_LINE}.",
        *(f"{markdown_text(line)}." for line in reason_lines(comparison=comparison)),
    ]
    power = power_rows(comparison)
    if power:
        out += ["", f"**{markdown_text(power_title(comparison))}**", ""]
        out += ["| " + " | ".join(POWER_COLUMNS) + " |", "|" + "---|" * len(POWER_COLUMNS)]
        out += ["| " + " | ".join(map(markdown_text, r)) + " |" for r in power]
    lines = settings_lines(comparison.estimation_settings(), comparison.results.conventions)[:3]
    out += [f"\n**Warning:** {markdown_text(w)}." for w in comparison.estimation_warnings]
    return [*out, "", *(f"{markdown_text(line)}." for line in (*lines, *gate_lines(comparison.results)))]


def estimation_html(estimates: Any, comparison: Any) -> str:
    """The page's section: each mean by every estimator (with ``estimates``), each estimated difference with
    its corrected p-value and verdict, and the settings (estimator, both judgments' fingerprints)."""
    settings = comparison.estimation_settings()
    warnings = tuple(dict.fromkeys((*(estimates.warnings if estimates is not None else ()),
                                    *comparison.estimation_warnings)))  # fmt: skip
    out = [f"<p role='alert'><strong>Warning:</strong> {_e(w)}</p>" for w in warnings]
    out.append(
        "<p>The model's grades (QRELS) cover every query; people judged a random sample (HUMAN_QRELS). "
        f"<strong>{_e(comparison.estimator)}</strong> estimates what the people's grades would give on every "
        "query; its interval is valid when the sample was drawn at random and both were evaluated under the "
        "same conventions (see docs/prediction-powered.md).</p>"
    )
    if estimates is not None:
        out.append(table(COLUMNS, rows(estimates), numeric=range(3, 9), caption="Estimated means"))
    caption = "Estimated differences (* = adjusted p < alpha)"
    out.append(table(PAIR_COLUMNS, pair_rows(comparison), numeric=range(3, 13), caption=caption))
    notes = [LAMBDA_LINE, *reason_lines(estimates, comparison)]
    out.append("<p class='lambda-note'>" + "<br>".join(_e(line) for line in notes) + "</p>")
    power = power_rows(comparison)
    if power:
        title = power_title(comparison)
        out.append(table(POWER_COLUMNS, power, numeric=range(3, 8), caption=title[0].upper() + title[1:]))
    lines = [*settings_lines(settings, comparison.results.conventions)[:3], *gate_lines(comparison.results)]
    out.append("<p>" + "<br>".join(_e(line) for line in lines) + "</p>")
    return "".join(out)
