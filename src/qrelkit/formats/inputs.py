"""Reading an input file whole: the one wording of the errors a reader gives when a file cannot be read
(missing, a folder, not readable). The TREC robust reader, the judging project's JSON-lines readers, the
rubric, manifest and decisions readers call :func:`read_input`; what the bytes mean (gzip, text, TOML,
JSON) is each reader's own."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFormatError


def read_input(path: Path, what: str = "file", fix: str | None = None) -> bytes:
    """The bytes of ``path`` as stored; a missing file, a folder or a file that cannot be read is an
    :class:`~qrelkit.errors.InputFormatError` naming the path and the fix. ``what`` names the file in the
    message ("rubric file not found"), ``fix`` replaces the fix of a missing file."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputFormatError(
            f"{what} not found",
            source=str(path),
            fix=fix or "check the path (relative paths start from the current folder)",
        ) from None
    except IsADirectoryError:
        raise InputFormatError(
            "is a folder, not a file", source=str(path), fix="name a file inside it"
        ) from None
    except PermissionError:
        raise InputFormatError("cannot be read (permission denied)", source=str(path)) from None
    except OSError as exc:  # a device that fails, a name too long, ...
        raise InputFormatError(
            f"cannot be read ({exc.strerror or type(exc).__name__})", source=str(path)
        ) from None
