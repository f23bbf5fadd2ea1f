"""trec_eval 10's output layout for :class:`qrelkit.evaluation.trec_eval.TrecEvalOutput`.

Per-query lines (``-q``) come first, query by query, each query's measures in trec_eval's order; then the
summary lines with ``all``. The measure name is left-aligned in 22 columns, then a tab, the query, a tab
and the value: ``%6.4f`` for values, ``%ld`` for counts (a sum over queries in the summary), the run's
name for ``runid``, and relstring's characters between single quotes.

:func:`iter_trec_eval` yields the text a block of queries at a time, so that a million queries under
``-q`` stream out in bounded memory (each block's lines are formatted column by column).
"""

from __future__ import annotations

from collections.abc import Iterator

TYPE_CHECKING = False  # typing is not loaded at run time (qrelkit trec_eval's start-up)
if TYPE_CHECKING:
    from typing import Any

#: Queries formatted per block of per-query output.
BLOCK = 4096


def _double(value: float) -> str:
    if value != value:  # NaN: C's printf("%6.4f") of the 0.0 / 0.0 x86 gives (sign bit set)
        return "  -nan"
    return f"{value:6.4f}"


def _value(kind: str, value: Any) -> str:
    if kind == "long":
        return str(int(value))
    if kind == "string":
        return f"'{value}'"
    if kind == "runid":
        return str(value)
    return _double(value)


def _lines(prefix: str, kind: str, qids: list[str], values: Any) -> list[str]:
    """One measure's per-query lines for a block of queries (one f-string a line: the hot loop of -q)."""
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    if kind == "long":
        return [f"{prefix}{q}\t{int(v)}\n" for q, v in zip(qids, items, strict=True)]
    if kind == "string":
        return [f"{prefix}{q}\t'{v}'\n" for q, v in zip(qids, items, strict=True)]
    lines = [f"{prefix}{q}\t{v:6.4f}\n" for q, v in zip(qids, items, strict=True)]
    for i, v in enumerate(items):
        if v != v:
            lines[i] = f"{prefix}{qids[i]}\t{_double(v)}\n"
    return lines


def iter_trec_eval(output: Any, block: int = BLOCK) -> Iterator[str]:
    """The text trec_eval 10 prints for ``output`` (a :class:`qrelkit.evaluation.trec_eval.TrecEvalOutput`),
    in pieces: the per-query lines ``block`` queries at a time, then the summary. An output the native
    reader laid out already (:mod:`qrelkit.evaluation.trec_native`: its ``text``) is that text."""
    from itertools import chain

    if getattr(output, "text", None) is not None:
        yield output.text
        return

    if output.options.per_query:
        columns = [
            (f"{name:<22}\t", kind, values) for name, kind, values, _ in output.lines if values is not None
        ]
        for start in range(0, len(output.query_ids), block):
            qids = output.query_ids[start : start + block]
            per_measure = [
                _lines(p, kind, qids, values[start : start + block]) for p, kind, values in columns
            ]
            yield "".join(chain.from_iterable(zip(*per_measure, strict=True)))
    if output.options.summary:
        yield "".join(
            f"{name:<22}\tall\t{_value(kind, summary)}\n"
            for name, kind, _, summary in output.lines
            if summary is not None
        )


def render_trec_eval(output: Any) -> str:
    """The text trec_eval 10 prints for ``output``, whole (:func:`iter_trec_eval` streams it)."""
    return "".join(iter_trec_eval(output))
