"""Reading an input file whole: the one wording of the errors a reader gives when a file cannot be read
(missing, a folder, not readable). The TREC robust reader and the judging project's JSON-lines readers call
:func:`read_input`; what the bytes mean (gzip, text, JSON) is each reader's own."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFormatError


def read_input(path: Path) -> bytes:
    """The bytes of ``path`` as stored; a missing file, a folder or a file that cannot be read is an
    :class:`~qrelkit.errors.InputFormatError` naming the path and the fix."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputFormatError(
            "file not found",
            source=str(path),
            fix="check the path (relative paths start from the current folder)",
        ) from None
    except IsADirectoryError:
        raise InputFormatError(
            "is a folder, not a file", source=str(path), fix="name a file inside it"
        ) from None
    except PermissionError:
        raise InputFormatError("cannot be read (permission denied)", source=str(path)) from None
