"""trec_eval 10's output layout for :class:`qrelkit.evaluation.trec_eval.TrecEvalOutput`.

Per-query lines (``-q``) come first, query by query, each query's measures in trec_eval's order; then the
summary lines with ``all``. The measure name is left-aligned in 22 columns, then a tab, the query, a tab
and the value: ``%6.4f`` for values, ``%ld`` for counts (a sum over queries in the summary), the run's
name for ``runid``, and relstring's characters between single quotes.
"""

from __future__ import annotations

from typing import Any


def _value(kind: str, value: Any) -> str:
    if kind == "long":
        return str(int(value))
    if kind == "string":
        return f"'{value}'"
    if kind == "runid":
        return str(value)
    if value != value:  # NaN: C's printf("%6.4f") of the 0.0 / 0.0 x86 gives (sign bit set)
        return "  -nan"
    return f"{value:6.4f}"


def render_trec_eval(output: Any) -> str:
    """The text trec_eval 10 prints for ``output`` (a :class:`qrelkit.evaluation.trec_eval.TrecEvalOutput`)."""
    lines: list[str] = []
    if output.options.per_query:
        for q, qid in enumerate(output.query_ids):
            for name, kind, values, _ in output.lines:
                if values is not None:
                    lines.append(f"{name:<22}\t{qid}\t{_value(kind, values[q])}")
    if output.options.summary:
        for name, kind, _, summary in output.lines:
            if summary is not None:
                lines.append(f"{name:<22}\tall\t{_value(kind, summary)}")
    return "".join(line + "\n" for line in lines)
