"""``qrelkit rubric``: lint a rubric file and show its levels.

A thin skin over :mod:`qrelkit.rubric`: it loads, calls the library and prints. Bad input (a
:class:`~qrelkit.errors.QrelkitError`) is printed on one line on stderr with exit status 1, without
a traceback. ``lint`` also exits 1 when the rubric has an error-severity finding, so it can gate CI.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from qrelkit.errors import QrelkitError
from qrelkit.rubric import Rubric, format_findings, lint, load_rubric

__all__ = ["command"]


def _load(path: Path) -> Rubric:
    try:
        return load_rubric(path)
    except QrelkitError as exc:
        click.echo(" ".join(str(exc).split("\n")), err=True)
        click.get_current_context().exit(exc.exit_code)


def _identity(rubric: Rubric) -> str:
    return f"rubric {rubric.name!r} version {rubric.version} (sha256 {rubric.short_hash})"


@click.group(name="rubric")
def command() -> None:
    """Check and show relevance rubrics (rubric.toml)."""


@command.command(name="lint")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line per finding and a summary; json: one JSON object.",
)
def lint_command(file: Path, output_format: str) -> None:
    """Check FILE against the rubric rules; exit 1 if any finding is an error.

    Errors are wordings or scales that cannot give checkable grades (comparative words such as
    "best", statements instead of questions, gaps or duplicate grades); warnings are wordings
    that probably will not (hedges such as "somewhat", "is it relevant?").
    """
    rubric = _load(file)
    findings = lint(rubric)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    if output_format == "json":
        payload = {
            "rubric": {
                "name": rubric.name,
                "version": rubric.version,
                "content_hash": rubric.content_hash,
                "source": rubric.source,
            },
            "errors": errors,
            "warnings": warnings,
            "findings": [f.to_dict() for f in findings],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        if findings:
            click.echo(format_findings(findings, rubric))
        plural = "s" if errors != 1 else ""
        wplural = "s" if warnings != 1 else ""
        verdict = "clean" if not findings else f"{errors} error{plural}, {warnings} warning{wplural}"
        click.echo(f"{_identity(rubric)}: {verdict}")
    click.get_current_context().exit(1 if errors else 0)


@command.command(name="show")
@click.argument("file", type=click.Path(path_type=Path))
def show_command(file: Path) -> None:
    """Print the levels of FILE (grade, label, question), each level's examples, and its content hash.

    Examples are the documents the rubric gives at a level (``examples_at``) and just below it
    (``examples_below``, where labellers disagree); levels without examples are left out of that part.
    """
    rubric = _load(file)
    if sys.stdout.isatty():
        _show_rich(rubric)
    else:
        _show_plain(rubric)


def _show_plain(rubric: Rubric) -> None:
    rows = [("grade", "label", "question")]
    rows += [(str(lv.grade), lv.label, lv.question) for lv in rubric.levels]
    grade_width = max(len(r[0]) for r in rows)
    label_width = max(len(r[1]) for r in rows)
    click.echo(f"rubric: {rubric.name} {rubric.version}")
    click.echo(f"scale: {', '.join(str(g) for g in rubric.scale)}")
    click.echo(f"sha256: {rubric.content_hash}")
    click.echo("")
    for grade, label, question in rows:
        click.echo(f"{grade.rjust(grade_width)}  {label.ljust(label_width)}  {question}".rstrip())
    for indent, text in _example_lines(rubric):
        click.echo(" " * indent + text if text else "")


def _example_lines(rubric: Rubric) -> list[tuple[int, str]]:
    """The examples of each level that has any, as (indent, text) lines, each part after a blank line."""
    lines: list[tuple[int, str]] = []
    for level in rubric.levels:
        if not (level.examples_at or level.examples_below):
            continue
        lines += [(0, ""), (0, f"examples of grade {level.grade} ({level.label})")]
        for heading, items in (("at this level", level.examples_at), ("just below it", level.examples_below)):
            if items:
                lines.append((2, f"{heading}:"))
                lines += [(4, f"- {item}") for item in items]
    return lines


def _show_rich(rubric: Rubric) -> None:
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(f"{rubric.name} {rubric.version}"), caption=f"sha256 {rubric.content_hash}")
    table.add_column("grade", justify="right")
    table.add_column("label")
    table.add_column("question")
    for level in rubric.levels:
        table.add_row(Text(str(level.grade)), Text(level.label), Text(level.question))
    console = Console(highlight=False)
    console.print(f"scale: {', '.join(str(g) for g in rubric.scale)}", markup=False, highlight=False)
    console.print(table)
    for indent, text in _example_lines(rubric):
        if indent == 4:  # an example: wrapped lines hang under its text, not under the dash
            item = Table.grid(padding=(0, 1))
            item.add_row(Text("-"), Text(text[2:]))
            console.print(Padding(item, (0, 0, 0, indent)))
        else:
            console.print(Padding(Text(text, style="" if indent else "bold"), (0, 0, 0, indent)))
