"""``qrelkit conventions``: how much each convention moves one run's score, and why two profiles differ."""

from __future__ import annotations

from typing import Any

import click

from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES
from .evaluate import convention_options, conventions_from, load_inputs, profile_option


@click.command("conventions")
@click.argument("qrels", type=click.Path(dir_okay=False), required=False)
@click.argument("run", type=click.Path(dir_okay=False), required=False)
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
@click.option(
    "-f",
    "--format",
    "out_format",
    type=click.Choice(["table", "json", "tsv"]),
    default="table",
    show_default=True,
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
    run: str | None,
    measure: str,
    diff: tuple[str, str] | None,
    list_profiles: bool,
    out_format: str,
    input_format: str,
    on_duplicate: str | None,
    **options: Any,
) -> None:
    """Score RUN under every profile and under each single-axis change from the default conventions.

    The table gives each mean, its difference from the default, the direction, how many queries moved,
    how many score exactly 1, and flags the optimistic choices (the returned-only ideal, dropping unjudged
    documents, optimistic ties). --profile or axis flags change the base the others are compared with.
    --diff A B lists the queries on which two profiles disagree and the axis that explains each.
    """
    # long: its docstring is the command's --help; the body parses, calls one function and renders
    from ..evaluation.diagnose import attribute_profiles, sweep
    from ..measures.grammar import parse
    from ..provenance import header
    from ..report.conventions import render_diff, render_profiles, render_sweep

    if list_profiles:
        click.echo(render_profiles(out_format), nl=False)
        return
    if qrels is None or run is None:
        raise click.UsageError(
            "conventions needs QRELS and RUN: `qrelkit conventions QRELS RUN -m nDCG@10`, or --list"
        )
    base = conventions_from(options)
    m = parse(measure)
    qrels_obj, (run_obj,) = load_inputs(qrels, (run,), input_format, on_duplicate, base)
    head = header(
        qrels={"name": qrels_obj.name, "fingerprint": qrels_obj.fingerprint.to_dict()},
        run={"name": run_obj.name, "fingerprint": run_obj.fingerprint.to_dict()},
    )
    if diff:
        att = attribute_profiles(qrels_obj, run_obj, m, diff, base)
        click.echo(render_diff(att, diff, str(m), out_format, head), nl=False)
        return
    variants = sweep(qrels_obj, run_obj, m, base)
    click.echo(render_sweep(variants, str(m), out_format, head), nl=False)
