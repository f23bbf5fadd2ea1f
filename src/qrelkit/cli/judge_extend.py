"""``qrelkit judge extend``: add the pairs of runs that arrived after the pool closed to a project."""

from __future__ import annotations

from pathlib import Path

import click

from .._typing import FORMAT_CHOICES
from .options import file_or_dataset

__all__ = ["command"]


@click.command(name="extend")
@click.argument("db", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--depth", type=click.IntRange(min=1), default=20, show_default=True,
              help="Each new run's top DEPTH documents per query.")  # fmt: skip
@click.option("--docs", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="docs.jsonl (as `judge init` reads it) with the text of documents the project has not seen.")  # fmt: skip
@click.option("--queries", callback=file_or_dataset, default=None,
              help="queries.tsv (as `judge init` reads it), or irds:ID, a dataset's queries, for a query whose "
                   "text the project lacks.")  # fmt: skip
@click.option("--by", default=None, help="Who added the segment (recorded).")
@click.option("--note", default=None, help="Why (recorded).")
@click.option("--input-format", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
              help="Format of the runs.")  # fmt: skip
def command(db: Path, runs: tuple[Path, ...], depth: int, docs: Path | None, queries: str | None,
            by: str | None, note: str | None, input_format: str) -> None:  # fmt: skip
    """Add the pairs RUNS bring within --depth that the project does not hold, as a new segment.

    Judging must be open under the current rubric (its gate passed, was overridden, or the project judges
    without calibration): the new pairs are then judged without a new calibration round, assigned as
    `judge init` assigns (each query whole to one labeller, blind, one query's pairs together) after each
    labeller's other pairs. `qrelkit pool --extend DB RUNS` lists the same pairs without writing.
    """
    from qrelkit.app.extend import extend_project

    summary = extend_project(db, runs, depth=depth, docs=docs, queries=queries, by=by, note=note,
                             input_format=input_format)  # fmt: skip
    ext = summary["extends"] or {}
    for note_line in summary["notes"]:
        click.echo(f"warning: {note_line}", err=True)
    if not summary["pairs"]:
        held, left = ext.get("already_judged", 0), ext.get("left_out_pairs", 0)
        parts = [f"{held} in the project already"] * bool(held) + [
            f"{left} left out (queries it never held)"
        ] * bool(left)
        click.echo(f"nothing to add: of the {ext.get('pairs_in_depth', 0)} pairs of {', '.join(summary['runs'])} "
                   f"within depth {depth}, {' and '.join(parts) or 'none is new'}")  # fmt: skip
        return
    click.echo(
        f"segment {summary['segment']}: {summary['pairs']} new pairs in {summary['queries']} queries from "
        f"{', '.join(summary['runs'])} (depth {depth}; {ext.get('already_judged', 0)} already in the project), "
        f"under round {summary['round']}'s rubric (gate: {summary['gate']}); no calibration round"
    )
    click.echo("assigned: " + ", ".join(f"{n} {k} pairs" for n, k in summary["labellers"].items()))
    if summary["docs_added"] or summary["queries_added"]:
        click.echo(f"texts added: {summary['docs_added']} documents, {summary['queries_added']} queries")
