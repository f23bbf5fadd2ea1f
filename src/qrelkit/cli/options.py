"""Options several commands share, declared once: ``--labellers`` (a list of names) and ``--seed``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["labellers_option", "parse_labellers", "seed_option"]


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
