"""The one run-naming rule, in a module that imports nothing heavy (the small path calls it before any
dataframe library is loaded)."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ValidationError

__all__ = ["check_run_names"]


def check_run_names(names: Sequence[str], sources: Sequence[str | None]) -> None:
    """The one run-naming rule: every run has its own name (its tag, else its file name), or it is an error.

    ``eval``, ``compare``, ``pool``, ``judge init`` and the Python API all call this, so a name never
    changes silently between them (a renamed duplicate would print one thing and record another).
    """
    first: dict[str, str | None] = {}
    for name, source in zip(names, sources, strict=True):
        if name in first:
            raise ValidationError(
                f"two runs are both named {name!r}",
                source=source or None,
                got=f"{first[name] or '?'} and {source or '?'}",
                expected="one name per run (the run's tag, else its file name)",
                fix="give each run its own tag (the sixth column), or in Python pass name= when reading",
            )
        first[name] = source
