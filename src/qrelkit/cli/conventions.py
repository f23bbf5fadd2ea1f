"""``qrelkit conventions``: how much each convention moves each run's score, and why two profiles differ."""

from __future__ import annotations

from typing import Any

import click

from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES
from .options import convention_options, conventions_from, load_inputs, profile_option, reader_of


@click.command("conventions")
@click.argument("qrels", type=click.Path(dir_okay=False), required=False)
@click.argument("runs", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", default="nDCG@10", show_default=True, help="the measure to compare")
@click.option(
    "--diff",
    nargs=2,
    metavar="PROFILE_A PROFILE_B",
    default=None,
    help="list the queries that differ between two profiles and the axis that explains each "
    "('default' names the default conventions)",
)
@click.option("--list", "list_profiles", is_flag=True, help="list the profiles and their conventions")
@click.option("--hide-unmoved", is_flag=True,
              help="leave out the profiles and axes that move no query of the run (their names are listed)")  # fmt: skip
@click.option(
    "-f",
    "--format",
    "out_format",
    type=click.Choice(["table", "tsv", "json"]),
    default=None,
    help="output format [default: table on a terminal, tsv otherwise]",
)
@click.option("--input-format", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True)
@click.option(
    "--on-duplicate",
    type=click.Choice(ON_DUPLICATE_CHOICES),
    default=None,
    help="a document listed twice for one query [default: the profile's choice, else error]",
)
@profile_option
@convention_options
def command(
    qrels: str | None,
    runs: tuple[str, ...],
    measure: str,
    diff: tuple[str, str] | None,
    list_profiles: bool,
    hide_unmoved: bool,
    out_format: str | None,
    input_format: str,
    on_duplicate: str | None,
    **options: Any,
) -> None:
    """Score each of RUNS under every profile and under each single-axis change from the default conventions.

    One block per run, in the order given. The table gives each mean, its difference from the default,
    the direction, how many queries moved, how many score exactly 1, and flags the optimistic choices
    (the returned-only ideal, dropping unjudged documents, optimistic ties); the conventions come last,
    wrapped. --hide-unmoved leaves out the rows that move no query. --profile or axis flags change the base the others are compared with.
    --diff A B lists the queries on which two profiles disagree and the axis that explains each.
    """
    # long: its docstring is the command's --help; the body parses, calls one function and renders
    from ..evaluation.diagnose import attribute_profiles, sweep
    from ..measures.grammar import parse
    from ..provenance import header
    from ..report.conventions import render_diffs, render_profiles, render_sweeps
    from .output import default_format

    out_format = default_format(out_format)
    if list_profiles:
        click.echo(render_profiles(out_format), nl=False)
        return
    if qrels is None or not runs:
        raise click.UsageError(
            "conventions needs QRELS and at least one RUN: `qrelkit conventions QRELS RUN... -m nDCG@10`, "
            "or --list"
        )
    base = conventions_from(options)
    m = parse(measure)
    qrels_obj, run_objs = load_inputs(qrels, runs, base, reader_of(input_format, on_duplicate))
    head = header(
        qrels={"name": qrels_obj.name, "fingerprint": qrels_obj.fingerprint.to_dict()},
        runs=[{"name": r.name, "fingerprint": r.fingerprint.to_dict()} for r in run_objs],
    )
    if diff:
        found = [(r.name, attribute_profiles(qrels_obj, r, m, diff, base)) for r in run_objs]
        click.echo(render_diffs(found, diff, str(m), out_format, head, base.profile), nl=False)
        return
    swept = [(r.name, sweep(qrels_obj, r, m, base)) for r in run_objs]
    click.echo(render_sweeps(swept, str(m), out_format, head, hide_unmoved, base.profile), nl=False)
