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
    """One row per pair and measure, in the order of :data:`COLUMNS`."""
    out = []
    for p in comparison.pairs:
        values = (p.baseline, p.treatment, p.measure, p.queries, json_number(p.mean_baseline),
                  json_number(p.mean_treatment), json_number(p.difference), p.wins, p.ties, p.losses,
                  json_number(p.t_interval[0]), json_number(p.t_interval[1]), json_number(p.bootstrap_interval[0]),
                  json_number(p.bootstrap_interval[1]), json_number(p.effect_size), p.test, json_number(p.p_value),
                  json_number(p.p_adjusted), p.significant)  # fmt: skip
        out.append(dict(zip(COLUMNS, values, strict=True)))
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
        out.append({name: d.get(name) for name in ESTIMATED_COLUMNS} | {"low": low, "high": high})
    return out


def to_polars(comparison: Any) -> Any:
    import polars as pl

    types = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}
    schema = {name: types[kind] for name, kind in COLUMNS.items()}
    return pl.DataFrame(pair_rows(comparison), schema=schema, orient="row")


def to_pandas(comparison: Any) -> Any:
    try:
        import pandas  # noqa: F401
    except ImportError:
        from ..errors import QrelkitError

        raise QrelkitError(
            "to_pandas needs pandas, which is not installed",
            fix="pip install pandas (or use to_polars(), which needs nothing more)",
        ) from None
    return to_polars(comparison).to_pandas()


def text_repr(comparison: Any) -> str:
    """``Comparison(3 run(s), 2 pair(s); test ..., correction ..., alpha ...)`` and the bottom line."""
    o = comparison.options
    lines = [
        f"Comparison({len(comparison.results.runs)} run(s), {len(comparison.pairs)} pair(s); test {o.test}, "
        f"correction {o.correction}, alpha {o.alpha})"
    ]
    return "\n".join([*lines, *(f"  {sentence}" for sentence in comparison.bottom_line())])


def html_repr(comparison: Any) -> str:
    """The bottom line and the pairs as an HTML table with the conventions (a notebook's view)."""
    import html

    def cell(value: Any) -> str:
        if value is None:
            return "–"
        if isinstance(value, float):
            return f"{value:.4g}"
        return html.escape(str(value))

    lines = "".join(f"<p>{html.escape(s)}</p>" for s in comparison.bottom_line())
    head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(r[h])}</td>" for h in COLUMNS) + "</tr>" for r in pair_rows(comparison)
    )
    conv = html.escape(str(comparison.results.conventions))
    return f"{lines}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><p><small>{conv}</small></p>"
