"""Opening an input file: the one rule every reader applies before it reads a byte, and the one wording of
the errors of a file that cannot be read (missing, a folder, a FIFO or a device, too large for its kind, not
readable). The TREC readers (every engine's), the tabular readers, the judging project's JSON-lines readers,
the rubric, manifest and decisions readers go through :func:`check_input` (directly or by
:func:`read_input` / :func:`open_input`); what the bytes mean (gzip, text, TOML, JSON) is each reader's own.

A reader reads a file more than once (it is fingerprinted, probed for gzip, then parsed), so what is not a
regular file (a FIFO, ``/dev/stdin``, ``/dev/zero``, a socket) is refused before it is opened: opening a
FIFO with no writer would block, and a device never ends. Each kind of file has a size bound
(:data:`LIMITS`, with the reason for each; ``docs/limits.md`` lists them), checked on the stored size before
anything is read, so an 8 GB sparse file given as a rubric is refused at once. A text file read line by
line goes through :func:`read_lines`: streamed in blocks, a NUL byte refused where it lies, each line within
its kind's bound (:data:`LINE_LIMITS`), so memory follows the longest line, not the file.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator

from ..errors import InputFormatError

TYPE_CHECKING = False  # neither typing nor pathlib at run time (qrelkit trec_eval's start-up checks inputs)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

__all__ = ["LIMITS", "LINE_LIMITS", "check_input", "open_input", "read_input", "read_lines"]

_MiB = 1 << 20
_GiB = 1 << 30

#: The largest stored size of each kind of input, and why. A file past its bound is refused before it is
#: read, in one line naming the bound. Every reader may take a lower ``limit`` as a parameter.
LIMITS: dict[str, tuple[int, str]] = {
    "rubric": (1 * _MiB, "a rubric is a scale and its descriptions: a few kilobytes"),
    "prompt": (
        400_000,
        "a model labeller's prompt template is the rubric and a few sentences: a few kilobytes",
    ),
    "manifest": (16 * _MiB, "a manifest holds hashes, the gate and its statistics: a few kilobytes"),
    "queries": (256 * _MiB, "query texts, read whole into the judging project"),
    "docs": (4 * _GiB, "document texts, read whole into the judging project's database"),
    "pool": (4 * _GiB, "the pooled pairs, read whole into the judging project"),
    "decisions": (4 * _GiB, "adjudication decisions, read whole"),
    "project_decisions": (
        256 * _MiB,
        "a judging project's decisions, one line a pair with a note of at most 2000 characters",
    ),
    "qrels": (4 * _GiB, "judgments are held in memory whole; the largest public sets are under 1 GB"),
    "probabilities": (
        8 * _GiB,
        "a model's grade probabilities, one line a judged pair, held in memory whole as qrels are",
    ),
    "run": (
        256 * _GiB,
        "runs stream or are sorted on disk; past this, pass a Parquet folder or a table to --engine spark",
    ),
    "file": (16 * _GiB, "a file read whole"),
}

#: The longest line :func:`read_lines` takes of each kind of line-oriented text file, and why (a kind not
#: listed: :data:`MAX_LINE_DEFAULT`). Memory follows the longest line, not the file.
LINE_LIMITS: dict[str, tuple[int, str]] = {
    "docs": (64 * _MiB, "one document, its id and title, as one JSON line"),
    "pool": (1 * _MiB, "one pooled pair with the ranks of the runs that returned it"),
    "queries": (1 * _MiB, "one query id and its text"),
}
MAX_LINE_DEFAULT = 1 * _MiB
#: The blocks :func:`read_lines` reads a file in.
LINE_BLOCK_BYTES = 1 * _MiB

_WHAT = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _size_words(n: int) -> str:
    if n % _GiB == 0:
        return f"{n // _GiB} GiB"
    if n % _MiB == 0:
        return f"{n // _MiB} MiB"
    return f"{n:,} bytes"


def check_input(
    path: str | Path,
    kind: str = "file",
    *,
    what: str | None = None,
    fix: str | None = None,
    limit: int | None = None,
) -> int:
    """The stored size of ``path`` if it is a regular file within the bound of ``kind`` (:data:`LIMITS`, or
    ``limit`` bytes when given), else an :class:`~qrelkit.errors.InputFormatError` naming the path, the
    problem and the fix. Nothing is opened: a FIFO, a device or a socket is refused on its ``stat``.
    ``what`` names the file in the message of a missing one ("rubric file not found"), ``fix`` replaces
    its fix."""
    source = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        from . import is_dataset

        if is_dataset(source):  # a dataset name where only a file is read (a run, trec_eval's judgments)
            fix = (
                "a dataset name (irds:ID) stands for judgments (eval, compare, report, pool --extend, ...) "
                "and for the queries of judge init and judge extend only; pass a file here"
            )
        raise InputFormatError(
            f"{what or 'file'} not found",
            source=source,
            fix=fix or "check the path (relative paths start from the current folder)",
        ) from None
    except PermissionError:
        raise InputFormatError("cannot be read (permission denied)", source=source) from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL in the name, a loop of links ...
        raise InputFormatError(
            f"cannot be read ({getattr(exc, 'strerror', None) or type(exc).__name__})", source=source
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputFormatError("is a folder, not a file", source=source, fix="name a file inside it")
    if not stat.S_ISREG(info.st_mode):
        kind_of = _WHAT.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise InputFormatError(
            f"is {kind_of}, not a regular file (an input is read more than once: fingerprinted, then parsed)",
            source=source,
            fix="write the stream to a file first (e.g. `cmd > run.txt`) and pass that file",
        )
    bound, reason = LIMITS.get(kind, LIMITS["file"])
    if limit is not None:
        bound, reason = limit, "the limit given"
    if info.st_size > bound:
        raise InputFormatError(
            f"{kind} file is {info.st_size:,} bytes, larger than the bound of {_size_words(bound)} for a "
            f"{kind} file ({reason})",
            source=source,
            fix="check that the right file was passed (docs/limits.md lists every bound)",
        )
    return info.st_size


def open_input(path: str | Path, kind: str = "file", *, limit: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary after :func:`check_input` (the caller closes it)."""
    check_input(path, kind, limit=limit)
    try:
        return open(path, "rb")
    except PermissionError:
        raise InputFormatError("cannot be read (permission denied)", source=str(path)) from None
    except OSError as exc:
        raise InputFormatError(
            f"cannot be read ({exc.strerror or type(exc).__name__})", source=str(path)
        ) from None


def read_input(
    path: str | Path,
    what: str = "file",
    fix: str | None = None,
    *,
    kind: str = "file",
    limit: int | None = None,
) -> bytes:
    """The bytes of ``path`` as stored, after :func:`check_input` (a missing file, a folder, a FIFO or
    device, a file past its kind's bound or one that cannot be read is an
    :class:`~qrelkit.errors.InputFormatError` naming the path and the fix). ``what`` names the file in
    the message ("rubric file not found"), ``fix`` replaces the fix of a missing file. At most the bound
    is read even if the file grows meanwhile."""
    size = check_input(path, kind, what=what if what != "file" else None, fix=fix, limit=limit)
    bound = limit if limit is not None else LIMITS.get(kind, LIMITS["file"])[0]
    with open_input(path, kind, limit=limit) as handle:
        try:
            data = handle.read(max(size, 0) + 1)
            if len(data) > size:  # grown since its stat: read on, to the bound at most
                data += handle.read(bound + 1 - len(data))
        except OSError as exc:  # a device that fails, a file on a lost mount ...
            raise InputFormatError(
                f"cannot be read ({exc.strerror or type(exc).__name__})", source=str(path)
            ) from None
    if len(data) > bound:
        raise InputFormatError(
            f"{kind} file grew past the bound of {_size_words(bound)} while it was read",
            source=str(path),
            fix="pass a file that is not being written",
        )
    return data


_LINE_END = re.compile(rb"\r\n?|\n")


def read_lines(path: str | Path, kind: str = "file", *, what: str = "file") -> Iterator[tuple[int, bytes]]:
    """The lines of a text file, streamed: ``(number, line)`` with its line end taken off, after
    :func:`check_input`. A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (text mode's universal
    newlines; :meth:`str.splitlines` would also cut at U+2028 and others, which JSON strings may hold). The
    file is read in blocks of :data:`LINE_BLOCK_BYTES`; a NUL byte is refused where it is met, wherever it
    lies, and a line past its kind's bound (:data:`LINE_LIMITS`) as soon as it passes it, so memory follows
    the longest line allowed, not the file. A gzip file is refused at its first bytes: these readers take
    plain text."""
    source = str(path)
    bound = LINE_LIMITS.get(kind, (MAX_LINE_DEFAULT, ""))[0]
    with open_input(path, kind) as handle:
        buf = bytearray()
        offset = 0  # the file offset of buf[0]
        checked = 0  # buf[:checked] holds no NUL byte
        number = 0  # lines yielded or passed
        first = True
        while True:
            try:
                data = handle.read(LINE_BLOCK_BYTES)
            except OSError as exc:
                raise InputFormatError(
                    f"cannot be read ({exc.strerror or type(exc).__name__})", source=source
                ) from None
            if first and data[:2] == b"\x1f\x8b":
                raise InputFormatError(
                    "file is gzip-compressed (it starts with gzip's magic bytes 1f 8b)",
                    source=source,
                    fix=f"decompress it (`gunzip {path}`) and pass the plain file",
                )
            first = False
            final = not data
            buf += data
            nul = buf.find(b"\x00", checked)
            end = len(buf) if nul < 0 else nul  # lines wholly before the NUL byte are given first
            pos = 0
            while (found := _LINE_END.search(buf, pos, end)) is not None:
                if found.group() == b"\r" and found.end() == len(buf) and not final:
                    break  # a "\r" at the end of the block: "\r\n" may follow
                if found.start() - pos > bound:
                    raise _long_line(source, number + 1, kind, bound, what)
                number += 1
                yield number, bytes(buf[pos : found.start()])
                pos = found.end()
            if nul >= 0:
                raise InputFormatError(
                    f"{what} holds binary data (a NUL byte at byte offset {offset + nul})",
                    source=source,
                    line=number + 1,
                    fix=f"pass a UTF-8 text {what} (one record a line)",
                )
            del buf[:pos]
            offset += pos
            checked = len(buf)
            if len(buf) > bound + 1:  # + 1: a "\r" held back
                raise _long_line(source, number + 1, kind, bound, what)
            if final:
                if buf:
                    number += 1
                    yield number, bytes(buf)
                return


def _long_line(source: str, line: int, kind: str, bound: int, what: str) -> InputFormatError:
    reason = LINE_LIMITS.get(kind, (0, "one record"))[1]
    return InputFormatError(
        f"line is longer than {_size_words(bound)}, the bound of a line of a {what} ({reason})",
        source=source,
        line=line,
        fix="check the file: one record a line (a file that lost its line ends, or is not text, looks so)",
    )


#: The largest file :func:`is_blank` reads: a file past it holds more than blank lines in practice (one
#: that does not is refused by the readers as empty, as before).
BLANK_CHECK_BYTES = 1 << 16


def is_blank(path: str | Path) -> bool:
    """Whether ``path`` is a regular file holding no line but blank ones (an empty run file), gzip or not;
    False for anything else (a missing file, a folder: the readers word those errors). Reads at most
    :data:`BLANK_CHECK_BYTES`."""
    import gzip
    import zlib
    from pathlib import Path

    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > BLANK_CHECK_BYTES:
            return False
        raw = p.read_bytes()[:BLANK_CHECK_BYTES]
    except OSError:
        return False
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unpacked:
                raw = unpacked.read(BLANK_CHECK_BYTES + 1)
        except (OSError, EOFError, zlib.error):
            return False  # a corrupt gzip file: the readers say so
    return len(raw) <= BLANK_CHECK_BYTES and not raw.strip()
