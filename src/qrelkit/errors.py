"""The qrelkit error tree.

Every error qrelkit raises for bad input says four things: what it got, where (file and line when the
input came from a file), what it expected, and how to fix it. The command-line interface prints
``str(error)`` on one line and exits with status 1; it never shows a traceback for a ``QrelkitError``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
else:  # the same class, loaded with the interpreter; collections.abc loads collections (1.5 ms of start-up)
    from _collections_abc import Iterable


class QrelkitError(Exception):
    """Base class of every error qrelkit raises on purpose.

    Parameters
    ----------
    problem:
        What is wrong, stated about the input ("score is not a number").
    source:
        Where: a file path, optionally with ``line``; or a logical name ("run 'bm25'").
    line:
        1-based line number inside ``source``.
    got:
        The offending text or value, shown verbatim (truncated when very long).
    expected:
        What would have been accepted.
    fix:
        What the user can do about it.
    """

    exit_code = 1

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        line: int | None = None,
        got: object = None,
        expected: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.got = got
        self.expected = expected
        self.fix = fix
        super().__init__(self.message)

    @property
    def location(self) -> str | None:
        if self.source is None:
            return None
        return f"{self.source}:{self.line}" if self.line is not None else str(self.source)

    @property
    def message(self) -> str:
        parts = []
        if self.location:
            parts.append(f"{self.location}: ")
        parts.append(self.problem)
        if self.got is not None:
            text = self.got if isinstance(self.got, str) else repr(self.got)
            if len(text) > 120:
                text = text[:117] + "..."
            parts.append(f" (got {text!r})" if isinstance(self.got, str) else f" (got {text})")
        if self.expected:
            parts.append(f"; expected {self.expected}")
        if self.fix:
            parts.append(f". Fix: {self.fix}")
        return "".join(parts)

    def __str__(self) -> str:
        return self.message


class InputFormatError(QrelkitError):
    """A file or frame could not be read as the format it claims to be."""


class OutputError(QrelkitError):
    """An output could not be written (a full disk, a device that fails): nothing partial is left behind."""


class ValidationError(QrelkitError):
    """The input parsed, but breaks a rule (duplicate document, grade outside the scale, ...)."""


class MeasureSyntaxError(QrelkitError):
    """A measure string such as ``nDCG(gain=linear)@10`` could not be parsed (a usage error: exit code 2)."""

    exit_code = 2


class UsageError(QrelkitError):
    """Options that do not go together, or a limit the chosen path cannot honour (a usage error: exit code 2)."""

    exit_code = 2


class ConventionError(QrelkitError):
    """An unknown convention value, or a combination that qrelkit refuses to compute."""


class IncomparableError(QrelkitError):
    """Two results computed under different conventions, measures or judgments were combined."""


class QueryNotFoundError(QrelkitError):
    """A query id asked for by name is in neither the judgments nor the run."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or an empty string."""
    import difflib  # here: the commands that never suggest a name do not load it (nor heapq)

    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return f" (did you mean {lowered[value.lower()]!r}?)"
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class StepAside(Exception):
    """Not an error: a fast reader (or the small-input engine) declines an input it does not take, and the
    caller tries the next reader in the order :mod:`qrelkit.formats.trec` lists. Never reaches a user: the
    last reader, the robust one, takes every input and explains what is wrong with it."""


class Ungrouped(StepAside):
    """A streaming reader declines a run because its lines are not grouped by query, where it needs them
    grouped (every row is kept, or the native scanner is not built). The caller then sorts the run on
    disk (:mod:`qrelkit.formats.external`) rather than reading it whole: the robust reader only explains."""
