"""Options several commands share, declared once: ``--labellers`` (a list of names), ``--seed`` and
``--run-model RUN=ID``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = [
    "file_or_dataset",
    "labellers_option",
    "parse_labellers",
    "parse_run_models",
    "run_model_option",
    "seed_option",
]


def parse_labellers(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> tuple[str, ...]:
    """``alice,bob`` -> ``("alice", "bob")``; nothing given -> ``()``. An empty or repeated name is a usage
    error (exit status 2) naming the value."""
    if value is None or value == "":
        return ()
    names = tuple(n.strip() for n in value.split(","))
    if any(not n for n in names):
        raise click.BadParameter(f"empty name in {value!r}; write names separated by commas: alice,bob")
    if len(set(names)) != len(names):
        raise click.BadParameter(f"a name is repeated in {value!r}")
    return names


def labellers_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--labellers alice,bob``, handed to the command as a tuple of names (empty when not given)."""
    return click.option("--labellers", callback=parse_labellers, metavar="NAME,NAME,...", help=help_text)


def seed_option(
    help_text: str, default: int | None = 0
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed N``: a whole number >= 0 (numpy's ``default_rng`` refuses a negative one); ``default=None``
    when the command draws a seed of its own and prints it."""
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def parse_run_models(values: tuple[str, ...]) -> dict[str, str]:
    """``("bm25-llm=gpt-4o", ...)`` -> ``{"bm25-llm": "gpt-4o"}``; a value without ``=`` or a run named
    twice is a usage error (exit status 2)."""
    out: dict[str, str] = {}
    for value in values:
        run, sep, model = value.partition("=")
        if not sep or not run.strip() or not model.strip():
            raise click.BadParameter(f"{value!r} is not RUN=MODEL_ID", param_hint="--run-model")
        if run.strip() in out:
            raise click.BadParameter(f"run {run.strip()!r} is named twice", param_hint="--run-model")
        out[run.strip()] = model.strip()
    return out


run_model_option = click.option(
    "--run-model",
    "run_model",
    multiple=True,
    metavar="RUN=ID",
    help="the model a run was made with (recorded; a warning when it is the model that judged the qrels)",
)


def file_or_dataset(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> str | None:
    """A file that exists, or a dataset's name (``irds:ID``, which the readers route to ir_datasets): a
    missing file is a usage error (exit status 2) naming it."""
    from pathlib import Path

    from ..formats import is_dataset

    if value is None or is_dataset(value):
        return value
    if not Path(value).is_file():
        what = "a directory" if Path(value).is_dir() else "not found"
        raise click.BadParameter(f"file {value!r}: {what}; name an existing file or a dataset (irds:ID)")
    return value
