"""A comparison as rows and frames, and how it shows itself in a console and a notebook: the flat rows of
:meth:`Comparison.rows <qrelkit.compare.Comparison.rows>` (one per pair and measure, an interval as its two
ends, None for an undefined value), ``to_polars``/``to_pandas``, the text repr (the bottom line) and the
HTML repr."""

from __future__ import annotations

from typing import Any

from ..provenance import json_number

#: The columns of :func:`pair_rows`, with their polars types.
COLUMNS = {
    "baseline": "str", "treatment": "str", "measure": "str", "queries": "int", "mean_baseline": "float",
    "mean_treatment": "float", "difference": "float", "wins": "int", "ties": "int", "losses": "int",
    "t_low": "float", "t_high": "float", "bootstrap_low": "float", "bootstrap_high": "float",
    "effect_size": "float", "test": "str", "p_value": "float", "p_adjusted": "float", "significant": "bool",
}  # fmt: skip


def pair_rows(comparison: Any) -> list[dict[str, Any]]:
    """One row per pair and measure, in the order of :data:`COLUMNS` (and ``verdict``, the pair against the
    labeller-noise floor, when the comparison has one)."""
    out = []
    for p in comparison.pairs:
        values = (p.baseline, p.treatment, p.measure, p.queries, json_number(p.mean_baseline),
                  json_number(p.mean_treatment), json_number(p.difference), p.wins, p.ties, p.losses,
                  json_number(p.t_interval[0]), json_number(p.t_interval[1]), json_number(p.bootstrap_interval[0]),
                  json_number(p.bootstrap_interval[1]), json_number(p.effect_size), p.test, json_number(p.p_value),
                  json_number(p.p_adjusted), p.significant)  # fmt: skip
        row = dict(zip(COLUMNS, values, strict=True))
        if comparison.noise is not None:
            row["verdict"] = p.verdict
        out.append(row)
    return out


#: The columns of :func:`estimated_rows`: each pair's estimated difference (with ``--human``).
ESTIMATED_COLUMNS = (
    "baseline", "treatment", "measure", "estimator", "interval_kind", "difference", "low", "high", "reason",
    "lambda", "human_queries", "unlabeled_queries", "effective_human_queries", "model_difference",
    "human_difference", "p_value", "p_adjusted", "significant",
)  # fmt: skip


def estimated_rows(comparison: Any) -> list[dict[str, Any]]:
    """One row per pair and measure of the estimated differences (``comparison.estimated``), in the order
    of :data:`ESTIMATED_COLUMNS`: an interval that is not measurable has no ends and its reason."""
    out = []
    for p in comparison.estimated:
        d = p.to_dict()
        low, high = d["interval"] or (None, None)
        row = {name: d.get(name) for name in ESTIMATED_COLUMNS} | {"low": low, "high": high}
        if comparison.noise is not None:
            row["verdict"] = p.verdict
        out.append(row)
    return out


#: The polars types of :data:`ESTIMATED_COLUMNS` (and of ``verdict``).
ESTIMATED_TYPES = {
    "baseline": "str", "treatment": "str", "measure": "str", "estimator": "str", "interval_kind": "str",
    "difference": "float", "low": "float", "high": "float", "reason": "str", "lambda": "float",
    "human_queries": "int", "unlabeled_queries": "int", "effective_human_queries": "float",
    "model_difference": "float", "human_difference": "float", "p_value": "float", "p_adjusted": "float",
    "significant": "bool", "verdict": "str",
}  # fmt: skip


def frame_rows(comparison: Any, model_alone: bool = False) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows a frame holds and their types: the estimated differences when the comparison estimated
    (``human``), as its bottom line, repr and piped TSV do; the model's grades alone (biased) with
    ``model_alone=True`` or without ``human``."""
    if comparison.human is not None and not model_alone:
        rows = estimated_rows(comparison)
        names = [*ESTIMATED_COLUMNS, *(["verdict"] if comparison.noise is not None else [])]
        return rows, {name: ESTIMATED_TYPES[name] for name in names}
    types = dict(COLUMNS) | ({"verdict": "str"} if comparison.noise is not None else {})
    return pair_rows(comparison), types


def to_polars(comparison: Any, model_alone: bool = False) -> Any:
    import polars as pl

    rows, kinds = frame_rows(comparison, model_alone)
    types = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}
    schema = {name: types[kind] for name, kind in kinds.items()}
    return pl.DataFrame([[r.get(n) for n in schema] for r in rows], schema=schema, orient="row")


def to_pandas(comparison: Any, model_alone: bool = False) -> Any:
    from ..evaluation.results import pandas_frame

    return pandas_frame(to_polars(comparison, model_alone))


def text_repr(comparison: Any) -> str:
    """``Comparison(3 run(s), 2 pair(s); test ..., correction ..., alpha ...)`` and the bottom line."""
    o = comparison.options
    lines = [
        f"Comparison({len(comparison.results.runs)} run(s), {len(comparison.pairs)} pair(s); test {o.test}, "
        f"correction {o.correction}, alpha {o.alpha})"
    ]
    return "\n".join([*lines, *(f"  {sentence}" for sentence in comparison.bottom_line())])


def html_repr(comparison: Any) -> str:
    """The bottom line and the rows of :func:`frame_rows` as an HTML table with the conventions (a notebook's
    view)."""
    import html

    def cell(value: Any) -> str:
        if value is None:
            return "–"
        if isinstance(value, float):
            return f"{value:.4g}"
        return html.escape(str(value))

    lines = "".join(f"<p>{html.escape(s)}</p>" for s in comparison.bottom_line())
    rows, kinds = frame_rows(comparison)  # the estimated differences with people's grades, as the bottom line
    head = "".join(f"<th>{html.escape(h)}</th>" for h in kinds)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(h))}</td>" for h in kinds) + "</tr>" for r in rows)
    conv = html.escape(str(comparison.results.conventions))
    return f"{lines}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><p><small>{conv}</small></p>"
