"""``qrelkit trec_eval``: trec_eval 10's command line and output, byte for byte. Its options are
:data:`qrelkit.evaluation.trec_options.OPTIONS`' (the one table the reader before click reads too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..evaluation.trec_options import ARGUMENTS, OPTIONS, Option, trec_options


def _click_option(option: Option) -> Callable[[Any], Any]:
    """The click option of one row of :data:`OPTIONS`."""
    kwargs: dict[str, Any] = {"help": option.help}
    if option.type == "flag":
        kwargs["is_flag"] = True
    elif option.multiple:
        kwargs.update(multiple=True, metavar=option.metavar)
    else:
        kwargs.update(type=int, default=option.default)
        if option.show_default:
            kwargs["show_default"] = True
    return click.option(option.flag, option.dest, **kwargs)


def _with_options(f: Callable[..., None]) -> Callable[..., None]:
    """``f`` with the table's options, in its order, then the two files."""
    for name in reversed(ARGUMENTS):
        f = click.argument(name, type=click.Path(dir_okay=False))(f)
    for option in reversed(OPTIONS):
        f = _click_option(option)(f)
    return f


@click.command(
    "trec_eval",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="trec_eval 10's command line and output (a drop-in replacement).",
)
@_with_options
def command(qrels: str, run: str, **values: Any) -> None:
    """Evaluate RUN against QRELS exactly as trec_eval 10 does, and print its output.

    Ranking: score descending, ties by document id descending; negative grades mean "in the pool,
    unjudged"; without -c every judged query must be in the run. See `qrelkit.evaluation.trec_eval`."""
    from ..evaluation.trec_lean import lean_route
    from ..report.trec_eval import iter_trec_eval

    kwargs: dict[str, Any] = trec_options(values)
    lean = lean_route(qrels, run, **kwargs)  # the route's readers without numpy: small files
    if lean is not None:
        click.echo("".join(iter_trec_eval(lean)), nl=False)
        return
    from ..errors import MeasureSyntaxError
    from ..evaluation.trec_eval import TrecEvalStop, TrecOptions, trec_eval_files
    from ..measures.trec_names import select

    options = TrecOptions(**kwargs)
    try:
        select(list(kwargs["measures"]))
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
