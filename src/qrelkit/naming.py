"""The one run-naming rule, the one labeller-naming rule and the one rule for query and document ids, in a
module that imports nothing heavy (the small path calls it before any dataframe library is loaded)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .errors import InputFormatError, ValidationError

__all__ = ["ID_PATTERN", "MAX_ID_BYTES", "check_id", "check_run_names", "id_problem", "labeller_names"]

#: The longest query or document id, in bytes of UTF-8, that qrelkit takes from any input (the native
#: scanner's ``QK_MAX_ID`` is the same). Longer ids are refused with the line that holds them: they are
#: not ids written by a retrieval system, and columnar readers would otherwise allocate rows x longest id.
MAX_ID_BYTES = 512

#: The characters an id may not hold, as a regular expression that both Python's ``re`` and polars
#: (Rust's ``regex``) read alike: whitespace of any kind (Unicode's White_Space: a space, a tab, a line
#: end, U+00A0, U+2028, ...) and control characters (U+0000-U+001F, U+007F-U+009F). An id with a line
#: end in it would split one qrels line into two when written as TREC text.
ID_PATTERN = r"[\s\x00-\x1f\x7f-\x9f]"

_FORBIDDEN = re.compile(ID_PATTERN)
_SURROGATE = re.compile("[\ud800-\udfff]")

#: What an id must be, as errors say it.
ID_EXPECTED = (
    f"a non-empty id of at most {MAX_ID_BYTES} bytes (UTF-8) without whitespace or control characters"
)


def id_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a query or document id, or ``None`` when it is a valid id."""
    if not isinstance(value, str):
        return "is not a string"
    if not value:
        return "is empty"
    if _SURROGATE.search(value):
        return "holds a lone surrogate (not a Unicode character; cannot be written as UTF-8)"
    found = _FORBIDDEN.search(value)
    if found:
        return f"holds {_describe(found.group())} at character {found.start() + 1}"
    size = len(value.encode("utf-8"))
    if size > MAX_ID_BYTES:
        return f"is {size} bytes long, more than the {MAX_ID_BYTES} an id may have"
    return None


def _describe(char: str) -> str:
    names = {" ": "a space", "\t": "a tab", "\n": "a line end", "\r": "a carriage return"}
    return names.get(char, f"the character U+{ord(char):04X} (whitespace or a control character)")


def check_id(value: object, column: str, source: str | None = None, line: int | None = None) -> str:
    """Return ``value`` if it is a valid id (see :data:`ID_PATTERN`, :data:`MAX_ID_BYTES`); else raise
    :class:`~qrelkit.errors.InputFormatError` naming the column, file and line."""
    problem = id_problem(value)
    if problem is None:
        return value  # type: ignore[return-value]
    got = value if isinstance(value, str) else repr(value)
    return _raise(column, problem, source, line, got)


def _raise(column: str, problem: str, source: str | None, line: int | None, got: str) -> str:
    raise InputFormatError(
        f"{column} {problem}",
        source=source,
        line=line,
        got=got.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"),
        expected=ID_EXPECTED,
        fix=f"correct the {column} (ids are written as TREC text fields: no spaces or line ends inside)",
    )


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


def labeller_names(paths: Sequence[object]) -> list[str]:
    """The labeller each judgments file stands for: the file's name up to its first dot (``alice.qrels``
    and ``alice.qrels.gz`` are ``alice``); when two files give the same name, each of them is followed by
    its position among ``paths`` (``alice (1)``, ``alice (3)``), so no two labellers share a name."""
    from pathlib import Path  # (not at import: qrelkit trec_eval's start-up loads this module)

    names = [Path(str(p)).name.split(".")[0] for p in paths]
    return [n if names.count(n) == 1 else f"{n} ({i + 1})" for i, n in enumerate(names)]
