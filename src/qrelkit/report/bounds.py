"""The judgment bounds as every renderer shows them: a title that says what they are, one row per run and
measure, and what a summary table puts beside a mean (each value named, never as an interval). Renders
:class:`qrelkit.evaluation.bounds.Bounds`; computes nothing. Imports nothing of the report's own
but :mod:`qrelkit.report.tables`."""

from __future__ import annotations

from typing import Any

from .tables import number


def title(results: Any, judged: bool = True) -> str:
    """What the bounds are, in one line (with the highest grade and where it came from; ``judged``: with
    what the judged column holds)."""
    b = results.bounds
    source = {"rubric": "the rubric's highest", "qrels": "the judgments' highest"}.get(
        b.top_grade_from, "given"
    )
    return (
        f"judgment bounds (not a confidence interval): each mean with the run's unjudged documents within "
        f"the cutoff as 0 and as grade {b.top_grade} ({source}; added to the judgments, so R and the ideal "
        "count them)"
        + (
            "; judged: the share of the documents returned within the cutoff that are judged, over the "
            "queries the run returns"
            if judged
            else ""
        )
    )


def columns(results: Any) -> tuple[str, ...]:
    """The headers of :func:`rows`."""
    return ("run", "measure", "mean", "as 0", f"as {results.bounds.top_grade}", "judged", "raised")


def _judged_at(measure: str, deepest: bool) -> str:
    return "of all" if deepest else "@" + measure.rsplit("@", 1)[1]


def rows(results: Any) -> list[list[str]]:
    """One row per run and bounded measure: the mean, the mean with the unjudged documents as 0 and as the
    highest grade, the share judged (Judged@k at the measure's cutoff, or of every retrieved document) and
    the number of unjudged (query, document) pairs raised."""
    out = []
    means = {(r["run"], r["measure"]): r["mean"] for r in results.summary_rows()}
    for run in results.run_names:
        for measure in results.measure_names:
            b = results.bounds.get(run, measure)
            if b is None:
                continue
            out.append(
                [
                    run,
                    measure,
                    number(means.get((run, measure))),
                    number(b.zero),
                    number(b.top),
                    f"{number(b.judged)} {_judged_at(b.judged_measure, b.k is None)}",
                    str(b.unjudged),
                ]
            )
    return out


def suffix(results: Any, run: str, measure: str, digits: int = 4) -> str:
    """`` (unjudged as 0: 0.7435, as 3: 0.7266)`` beside one run's mean (worded so that it does not read as
    an interval, with the mean's own decimals), or "" when the results carry no bounds for it."""
    if results.bounds is None:
        return ""
    b = results.bounds.get(run, measure)
    if b is None:
        return ""
    return (
        f" (unjudged as 0: {number(b.zero, digits)}, as {results.bounds.top_grade}: {number(b.top, digits)})"
    )


def cell(results: Any, run: str, measure: str, mean: str) -> object:
    """A summary table's cell: the mean, and under it (a line of its own that wraps, so that a table of
    several measures fits its page) the :func:`suffix`; the mean alone when there are no bounds."""
    import html

    bounds = suffix(results, run, measure)
    if not bounds:
        return mean
    return ("html", f"{html.escape(mean)}<span class='bounds'>{html.escape(bounds)}</span>")
