"""``qrelkit trec_eval``: trec_eval 10's command line and output, byte for byte."""

from __future__ import annotations

from typing import Any

import click


@click.command(
    "trec_eval",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="trec_eval 10's command line and output (a drop-in replacement).",
)
@click.option("-q", "per_query", is_flag=True, help="also print each query's values")
@click.option("-c", "complete", is_flag=True, help="average over every judged query; missing ones score 0")
@click.option("-J", "judged_only", is_flag=True, help="drop returned documents that are not judged")
@click.option("-n", "no_summary", is_flag=True, help="print no summary lines")
@click.option("-l", "rel_level", type=int, default=1, show_default=True, help="lowest relevant grade")
@click.option(
    "-m",
    "measures",
    multiple=True,
    metavar="MEASURE[.PARAMS]",
    help="measure or nickname (official, set, all_trec), e.g. -m map -m P.5,10 [default: official]",
)
@click.option("-M", "max_per_topic", type=int, default=None, help="keep the first N documents per query")
@click.option("-N", "num_docs", type=int, default=0, help="documents in the collection (for utility)")
@click.option(
    "--trec-eval-parsing",
    is_flag=True,
    help="read scores with C's atof and grades with atol, as trec_eval does (nan, inf, 0x1p3, 1.5abc, "
    "abc as 0, a grade 1.5 as 1) instead of refusing them",
)
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
def command(
    per_query: bool,
    complete: bool,
    judged_only: bool,
    no_summary: bool,
    rel_level: int,
    measures: tuple[str, ...],
    max_per_topic: int | None,
    num_docs: int,
    trec_eval_parsing: bool,
    qrels: str,
    run: str,
) -> None:
    """Evaluate RUN against QRELS exactly as trec_eval 10 does, and print its output.

    Ranking: score descending, ties by document id descending; negative grades mean "in the pool,
    unjudged"; without -c every judged query must be in the run. See `qrelkit.evaluation.trec_eval`."""
    # long: trec_eval's eight options, and the output it prints before it stops with an exit code
    from ..evaluation.trec_lean import lean_trec_eval
    from ..report.trec_eval import iter_trec_eval

    kwargs: dict[str, Any] = dict(per_query=per_query, complete=complete, judged_only=judged_only)
    kwargs.update(summary=not no_summary, rel_level=rel_level, max_per_topic=max_per_topic)
    kwargs.update(num_docs=num_docs, measures=measures)
    lean = lean_trec_eval(qrels, run, **kwargs, trec_eval_parsing=trec_eval_parsing)  # small files, no numpy
    if lean is not None:
        click.echo("".join(iter_trec_eval(lean)), nl=False)
        return
    from ..evaluation.trec_eval import TrecEvalStop, TrecOptions, trec_eval_files
    from ..measures.trec_names import select

    options = TrecOptions(**kwargs, trec_eval_parsing=trec_eval_parsing)
    from ..errors import MeasureSyntaxError

    try:
        select(list(measures))
    except MeasureSyntaxError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        output = trec_eval_files(qrels, run, options)
    except TrecEvalStop as stop:  # what trec_eval has printed before it stops, then its exit code
        if stop.partial is not None:
            for text in iter_trec_eval(stop.partial):
                click.echo(text, nl=False)
        raise
    for text in iter_trec_eval(output):  # a block of queries at a time: -q on a million queries streams
        click.echo(text, nl=False)
