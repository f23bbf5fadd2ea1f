"""``qrelkit budget``: judging budgets. ``budget replay`` replays strategies of choosing what people judge
on a collection whose every pooled pair people already graded (:mod:`qrelkit.budget.replay`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .help import ShortHelp

__all__ = ["command", "replay_command"]

OUTPUT_SUFFIXES = {".json": "json", ".tsv": "tsv", ".html": "html", ".txt": "table"}
FORMATS = ("table", "tsv", "json", "html")
#: The strategies replayed when none is named (:data:`qrelkit.budget.replay.DEFAULT_STRATEGIES`; that module
#: imports numpy, so its names are spelt here for --help and a test holds the two equal).
DEFAULT_STRATEGIES = "random-queries,random-pairs,pool-order,mtc,bandit,active"


@click.group("budget")
def command() -> None:
    """Judging budgets: replay ways of choosing which pairs people judge, on judgments you already have."""


def _strategy_names(values: tuple[str, ...]) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or DEFAULT_STRATEGIES.split(",")


@command.command(
    "replay",
    cls=ShortHelp,
    common={
        "budgets": "shares of the pooled pairs (5%,10%,20%) or counts (500,1000)",
        "strategies": "strategies to replay, comma-separated or repeated [default: all six]",
        "measure": "nDCG@k, P@k or R@k [default: nDCG@10]",
        "repeat": "repetitions of each strategy and budget",
        "out_format": "table, tsv, json, html [default: table on a terminal, else tsv]",
    },
    example="qrelkit budget replay full.qrels model.qrels runs/*.run \\\n"
    "    --budget 5%,10%,20% --strategy random-queries,random-pairs -o replay.html",
)
@click.argument("full", type=click.Path(dir_okay=False))
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--budget", "budgets", default="5%,10%,20%", show_default=True, metavar="5%,10%|500,1000",
              help="people's pairs to spend: shares of the pooled pairs or counts, comma-separated")  # fmt: skip
@click.option("--strategy", "strategies", multiple=True, metavar="NAME[,NAME...]",
              help=f"strategies to replay [default: {DEFAULT_STRATEGIES}]")  # fmt: skip
@click.option(
    "-m",
    "--measure",
    default="nDCG@10",
    show_default=True,
    metavar="MEASURE",
    help="the measure: nDCG@k, P@k or R@k",
)
@click.option("--repeat", type=click.IntRange(1, 10_000), default=20, show_default=True, metavar="N",
              help="repetitions of each strategy and budget")  # fmt: skip
@click.option(
    "--seed", type=int, default=0, show_default=True, help="seed of every repetition's random draws"
)
@click.option("--depth", type=click.IntRange(min=1), default=20, show_default=True,
              help="pool depth: only pairs some run ranks within it are pooled (FULL's pairs below it are "
              "left out, of the ideal ordering too)")  # fmt: skip
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="intervals at 1 - alpha")  # fmt: skip
@click.option("--rubric", type=click.Path(dir_okay=False), default=None,
              help="rubric.toml: the grade scale of both files (grades outside it are errors); without it, "
              "FULL's lowest and highest grades are the scale the model must keep to")  # fmt: skip
@click.option("--probabilities", type=click.Path(dir_okay=False), default=None,
              help="the model's grade probabilities (MODEL's .probabilities.tsv), for strategies that need them")  # fmt: skip
@click.option("-f", "--format", "out_format", type=click.Choice(FORMATS), default=None,
              help="output format [default: table on a terminal, tsv otherwise; -o: by suffix]")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="write to this file")
def replay_command(full: str, model: str, runs: tuple[str, ...], budgets: str, strategies: tuple[str, ...],
                   measure: str, repeat: int, seed: int, depth: int, alpha: float, rubric: str | None,
                   probabilities: str | None, out_format: str | None, output: str | None) -> None:  # fmt: skip
    """Replay strategies of choosing which pairs people judge, on FULL's grades of every pooled pair.

    FULL.qrels are people's grades of every pooled pair (a past round, a TREC collection); MODEL.qrels a model
    labeller's grades of the same pairs. For each strategy, budget and repetition the strategy buys people's
    grades from FULL up to the budget, then estimates each run's mean and each difference of two runs with
    intervals; the rows score those against every people's grade: Kendall's tau and tau_AP of the runs'
    order, coverage of the intervals, the share of run pairs decided and decided with the wrong sign, the
    people's pairs spent. The default conventions apply (docs/judging-budget.md).
    """
    # long: its docstring is the command's --help; the body reads the inputs and calls one function
    from ..budget import strategy
    from ..budget.replay import replay_inputs
    from ..formats import read_qrels
    from ..naming import check_run_names
    from .options import load_runs, rubric_scale
    from .output import note, reporter

    fmt = _output_format(out_format, output)
    names = _strategy_names(strategies)
    for name in names:  # a misspelt name is said before any input is read
        strategy(name)
    scale, _ = rubric_scale(rubric)
    full_qrels = read_qrels(full, name=Path(full).name, scale=scale)
    model_qrels = read_qrels(model, name=Path(model).name, scale=scale)
    run_objs = load_runs(runs)
    check_run_names([r.name for r in run_objs], list(runs))
    probs = None
    if probabilities:
        from ..formats.probabilities import read_probabilities

        probs = read_probabilities(probabilities)

    def said(problem: Any) -> None:
        if problem.unpooled:
            note(
                f"note: {problem.unpooled} of FULL's judged pairs lie below depth {depth} of every run and are "
                "left out of the replay (pass a larger --depth to pool them)"
            )

    bars: list[Any] = []

    def tick(done: int, total: int) -> None:
        if not bars:  # the total is known once the budgets are read against the pool
            bars.append(reporter("budget replay", total, unit="repetitions"))
        bars[0].update(done)

    try:
        result = replay_inputs(
            full_qrels, model_qrels, run_objs, budgets, names, measure=measure, repeat=repeat, seed=seed,
            depth=depth, alpha=alpha, probabilities=probs, probabilities_source=probabilities, progress=tick,
            before=said,
        )  # fmt: skip
    finally:
        for bar in bars:
            bar.close()
    _write(result, fmt, output)


def _output_format(out_format: str | None, output: str | None) -> str:
    """The format to write, and ``-o``'s folder checked now rather than after the whole replay."""
    from ..formats.outputs import check_output
    from .output import default_format

    if output:
        check_output(output)
    if output and not out_format and Path(output).suffix.lower() not in OUTPUT_SUFFIXES:
        raise click.UsageError(
            f"cannot tell the output format from {output!r}: name it with --format {'|'.join(FORMATS)}, "
            "or use a suffix .json, .tsv, .html or .txt"
        )
    return default_format(out_format, OUTPUT_SUFFIXES.get(Path(output).suffix.lower()) if output else None)


def _write(result: Any, fmt: str, output: str | None) -> None:
    from ..report.budget import render_replay

    if output:
        from ..formats.outputs import write_output

        write_output(output, render_replay(result, fmt))
        click.echo(
            f"wrote {output} ({fmt}: the replay with its settings, conventions, fingerprints)", err=True
        )
    else:
        click.echo(render_replay(result, fmt, short=True), nl=False)
