"""What every TREC reader shares: the id bound, the gzip errors, the one wording of each of their
errors, and the check that a file is text (kept apart from the package so its readers import it without
importing the package)."""

from __future__ import annotations

import codecs
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache

from ...errors import InputFormatError
from ...naming import ID_PATTERN, MAX_ID_BYTES  # the one id rule (:mod:`qrelkit.naming`); re-exported

__all__ = [
    "GZIP_ERRORS",
    "MAX_GZIP_RATIO",
    "MAX_ID_BYTES",
    "MAX_LINE_BYTES",
    "TEXT_PROBE_BYTES",
    "TextCheck",
    "check_inputs",
    "check_trec_input",
    "corrupt_gzip",
    "first_long_line",
    "forbidden_in_text",
    "gunzip",
    "gzip_limit",
    "long_id",
]

#: A gzip file read whole may expand to at most this many times its stored size (or
#: :data:`GZIP_FLOOR` bytes, whichever is larger). TREC text compresses about 4 to 10 times; a file that
#: expands 1000 times (a "gzip bomb": 150 KB of zeros is 150 MB) is refused before it fills memory.
MAX_GZIP_RATIO = 100

#: Expansion below this many bytes is always allowed, whatever the ratio.
GZIP_FLOOR = 64 << 20

#: Errors that a damaged gzip stream raises while it is read.
GZIP_ERRORS = (OSError, EOFError, zlib.error)

#: A gzip file's text is taken as at least this many times its stored size when memory is planned (TREC
#: text compresses 4 to 10 times; the trailer's size is taken when it says more).
GZIP_TEXT_RATIO = 5


def text_bytes(path: str | os.PathLike[str]) -> int:
    """The bytes of text a file holds, for planning memory: its size, or for a gzip file the larger of
    :data:`GZIP_TEXT_RATIO` times its stored size and the size its trailer records (modulo 2**32, so a
    lower bound past 4 GiB). 0 for what is not a regular file or cannot be read (the reader reports it)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return 0  # a FIFO is never opened here
        with open(path, "rb") as probe:
            size = os.fstat(probe.fileno()).st_size
            if size < 18 or probe.read(2) != b"\x1f\x8b":
                return size
            probe.seek(size - 4)
            return max(GZIP_TEXT_RATIO * size, int.from_bytes(probe.read(4), "little"))
    except (OSError, ValueError):
        return 0


#: The memory limit (bytes) under which gzip files read whole are decompressed (see :func:`gzip_limit`).
_GZIP_LIMIT: ContextVar[int | None] = ContextVar("gzip_limit", default=None)


@contextmanager
def gzip_limit(limit: int | None) -> Iterator[None]:
    """Within this block (in this thread), a gzip file read whole may expand to at most ``limit`` bytes too:
    ``--memory-limit`` caps what a compressed file may become once read whole."""
    token = _GZIP_LIMIT.set(limit)
    try:
        yield
    finally:
        _GZIP_LIMIT.reset(token)


def current_gzip_limit() -> int | None:
    """The bound of :func:`gzip_limit` in force here (``None``: none), for a reader that decompresses in
    chunks and must refuse what :func:`gunzip` refuses."""
    return _GZIP_LIMIT.get()


def corrupt_gzip(source: str, exc: BaseException) -> InputFormatError:
    """The one error for gzip data that cannot be decompressed."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputFormatError(
        f"gzip data is corrupt or truncated ({detail})",
        source=source,
        fix="re-create or re-download the file",
    )


def gunzip(raw: bytes, source: str, limit: int | None = None) -> bytes:
    """Decompress gzip bytes read whole, in blocks, stopping with an error once the text passes
    :data:`MAX_GZIP_RATIO` times the stored size (at least :data:`GZIP_FLOOR`) or ``limit`` bytes (by
    default the memory limit of :func:`gzip_limit`)."""
    import gzip
    import io

    if limit is None:
        limit = _GZIP_LIMIT.get()
    bound = max(GZIP_FLOOR, MAX_GZIP_RATIO * len(raw))
    capped = limit is not None and limit < bound
    if limit is not None:
        bound = min(bound, limit)
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            while block := stream.read(1 << 20):
                out += block
                if len(out) > bound:
                    raise InputFormatError(
                        f"gzip data expands to more than {bound:,} bytes (stored: {len(raw):,} bytes)",
                        source=source,
                        expected=f"at most {MAX_GZIP_RATIO} times the stored size"
                        + (f" and the memory limit of {limit:,} bytes" if limit is not None else ""),
                        fix=(
                            "raise --memory-limit, or decompress the file first and pass the text"
                            if capped
                            else "check the file (a compressed file that expands this much is not TREC "
                            "text), or decompress it yourself and pass the text"
                        ),
                    )
    except GZIP_ERRORS as exc:
        raise corrupt_gzip(source, exc) from None
    return bytes(out)


@cache
def _forbidden_utf8() -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
    """The characters above ASCII that :data:`~qrelkit.naming.ID_PATTERN` forbids, as UTF-8: (lead bytes,
    two-byte codes, three-byte codes). Read off the rule itself, once (whitespace and control characters
    all lie in the Basic Multilingual Plane)."""
    import re

    rule = re.compile(ID_PATTERN)
    found = [chr(c).encode() for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000 and rule.match(chr(c))]
    two = frozenset(int.from_bytes(b, "big") for b in found if len(b) == 2)
    three = frozenset(int.from_bytes(b, "big") for b in found if len(b) == 3)
    return frozenset(b[0] for b in found), two, three


def forbidden_in_text(data: bytes | memoryview) -> bool:
    """Whether valid UTF-8 TREC text holds a character that the id rule forbids
    (:data:`~qrelkit.naming.ID_PATTERN`) other than the spaces and line ends that separate fields: a tab, a
    control character, DEL, U+00A0... The fast readers step aside on it and the robust reader, which splits
    fields on ASCII whitespace only, reports the id (or takes the line, for a carriage return). Vectorised
    over the bytes: a few passes of numpy, no Python per line."""
    import numpy as np

    raw = data if isinstance(data, bytes) else bytes(data)
    buf = np.frombuffer(raw, dtype=np.uint8)
    if b"\x7f" in raw or np.count_nonzero(buf < 0x20) != raw.count(b"\n"):
        return True
    if raw.isascii():
        return False
    leads, two, three = _forbidden_utf8()
    at = np.flatnonzero(np.isin(buf, np.fromiter(leads, dtype=np.uint8)))
    if not len(at):
        return False
    padded = np.concatenate([buf, np.zeros(2, dtype=np.uint8)]).astype(np.int64)
    code2 = (padded[at] << 8) | padded[at + 1]
    code3 = (code2 << 8) | padded[at + 2]
    return bool(
        np.isin(code2, np.fromiter(two, dtype=np.int64)).any()
        or np.isin(code3, np.fromiter(three, dtype=np.int64)).any()
    )


def long_id(source: str, line: int, column: str, size: int) -> InputFormatError:
    """The one error for an id longer than :data:`MAX_ID_BYTES`."""
    return InputFormatError(
        f"{column} is {size} bytes long, more than the {MAX_ID_BYTES} a TREC id may have",
        source=source,
        line=line,
        expected=f"ids of at most {MAX_ID_BYTES} bytes",
        fix="check the column order and the separators (a long id is usually several fields run together), "
        "or shorten the ids",
    )


class TextCheck:
    """Find the first byte that makes a file not text: a NUL byte or invalid UTF-8, fed block by block in
    file order; :meth:`feed` raises the error naming its line and byte offset (in the text: of a gzipped
    file, once uncompressed)."""

    def __init__(self, source: str):
        self.source = source
        self.offset = 0  # bytes fed before the current block
        self._lines = 0  # line ends of the blocks fed before the last one
        self._last = b""  # the last block fed, its line ends counted only if another block or a fault follows
        self._last_lines: int | None = None  # those line ends, once counted
        self._decoder = codecs.getincrementaldecoder("utf-8")()

    @property
    def lines(self) -> int:
        """Line ends fed so far (counted when asked, each block once: a file checked in one block is never
        counted)."""
        if self._last_lines is None:
            self._last_lines = self._last.count(b"\n")
        return self._lines + self._last_lines

    def feed(self, block: bytes | memoryview, final: bool = False) -> None:
        """Check the next block; ``final`` for the last one (a multi-byte character cut off at the end
        of the file is invalid)."""
        data = bytes(block)
        found: list[tuple[int, int]] = []  # (offset in this block, the byte); NUL is the byte 0
        nul = data.find(b"\x00")
        if nul >= 0:
            found.append((nul, 0))
        held = self._decoder.getstate()[0]  # the start of a character begun in the last block
        if held or not data.isascii():
            try:
                self._decoder.decode(data, final)
            except UnicodeDecodeError as exc:
                found.append((exc.start - len(held), (held + data)[exc.start]))
        if found:
            where, byte = min(found)
            self._raise(where, byte, self.lines + data.count(b"\n", 0, max(where, 0)) + 1)
        self._lines, self._last, self._last_lines = self.lines, data, None
        self.offset += len(data)

    def _raise(self, where: int, byte: int, line: int) -> None:
        offset = self.offset + where
        if byte == 0:
            raise InputFormatError(
                f"file holds binary data (a NUL byte at byte offset {offset})",
                source=self.source,
                line=line,
                fix="pass a text TREC file, or name the format",
            )
        raise InputFormatError(
            f"file is not valid UTF-8 text (byte 0x{byte:02x} at byte offset {offset})",
            source=self.source,
            line=line,
            fix="re-encode the file as UTF-8",
        )


#: The longest line of TREC text any reader takes (1 MiB). A line holds at most two 512-byte ids, a rank, a
#: score and a tag, so a longer one is not TREC text (or lost its line ends); it is refused, with its line,
#: before Arrow's parser sees it (Arrow's threaded CSV reader fails on a line longer than its block, and
#: can abort the process while it unwinds).
MAX_LINE_BYTES = 1 << 20


def first_long_line(data: bytes | memoryview, limit: int = MAX_LINE_BYTES) -> int | None:
    """The offset at which the first line longer than ``limit`` bytes (its line end not counted) starts,
    or ``None``. Linear and cheap on text of short lines: a line longer than ``limit`` covers a whole
    aligned window of ``limit // 2`` bytes, so only a window without a line end is looked at closely."""
    raw = data if isinstance(data, bytes) else bytes(data)
    width = max(limit // 2, 1)
    start = 0
    while start < len(raw):
        if raw.find(b"\n", start, start + width) >= 0:
            start += width
            continue
        begin = raw.rfind(b"\n", 0, start) + 1
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        if end - begin > limit:
            return begin
        start = end + 1
    return None


def long_line_error(raw: bytes, begin: int, source: str) -> InputFormatError:
    """The one error for a line past :data:`MAX_LINE_BYTES` starting at offset ``begin`` of ``raw``."""
    return InputFormatError(
        f"line is longer than {MAX_LINE_BYTES:,} bytes (the bound of a TREC line)",
        source=source,
        line=raw.count(b"\n", 0, begin) + 1,
        expected="fields separated by spaces, ids of at most 512 bytes",
        fix="check the file: it is not TREC text, or its lines lost their line ends",
    )


#: The first bytes of a TREC file :func:`check_trec_input` reads at once (the rest is read block by block):
#: a file whose first bytes are not text (a NUL byte, invalid UTF-8) or whose first lines are longer than
#: :data:`MAX_LINE_BYTES` is refused at once, whatever its size.
TEXT_PROBE_BYTES = 2 * MAX_LINE_BYTES + 2

#: The blocks in which :func:`check_trec_input` reads the rest of a plain TREC file: what it holds at once.
TEXT_SCAN_BLOCK_BYTES = 4 * MAX_LINE_BYTES


def check_trec_input(path: object, kind: str) -> None:
    """What every TREC reader of every engine checks first (:func:`qrelkit.formats.inputs.check_input`: a
    regular file within the bound of ``kind``, ``"run"`` or ``"qrels"``), then, for a plain file, all of its
    text block by block (:data:`TEXT_SCAN_BLOCK_BYTES`) with :class:`TextCheck` (a NUL byte, invalid UTF-8)
    and for a line past :data:`MAX_LINE_BYTES`: the first fault of a file is reported, wherever it lies,
    before any reader reads the file, in the words the robust reader would use, with memory bounded by a
    block whatever the file's size."""
    from ..inputs import open_input

    source = str(path)
    with open_input(source, kind) as handle:
        head = handle.read(TEXT_PROBE_BYTES)
        if head[:2] == b"\x1f\x8b":
            return  # gzip: its readers bound what it expands to (:func:`gunzip`) and check the text as it comes
        check = TextCheck(source)
        pending = 0  # bytes of the line not yet ended before the current block
        block = head
        while block:
            following = handle.read(TEXT_SCAN_BLOCK_BYTES)
            check_lines = check.lines
            check.feed(block, final=not following)
            first_end = block.find(b"\n")
            if first_end < 0:
                pending += len(block)
                if pending > MAX_LINE_BYTES:
                    raise _long_line(source, check_lines + 1)
            else:
                if pending + first_end > MAX_LINE_BYTES:
                    raise _long_line(source, check_lines + 1)
                long = first_long_line(block)
                if long is not None and long > first_end:
                    raise _long_line(source, check_lines + block.count(b"\n", 0, long) + 1)
                pending = len(block) - block.rfind(b"\n") - 1
            block = following


def _long_line(source: str, line: int) -> InputFormatError:
    return InputFormatError(
        f"line is longer than {MAX_LINE_BYTES:,} bytes (the bound of a TREC line)",
        source=source,
        line=line,
        expected="fields separated by spaces, ids of at most 512 bytes",
        fix="check the file: it is not TREC text, or its lines lost their line ends",
    )


def check_inputs(qrels_path: object, run_paths: Iterable[object], input_format: str = "auto") -> None:
    """:func:`check_trec_input` (or, for a file in another format, the file rule alone) of an evaluation's
    judgments then each run, before any reader is tried: what every engine and route checks first."""
    from pathlib import Path

    from ..._typing import detect_format
    from .. import is_dataset
    from ..inputs import check_input

    named = is_dataset(qrels_path)  # a dataset name is checked by its resolver (formats.irds)
    for path, kind in [*([] if named else [(qrels_path, "qrels")]), *((p, "run") for p in run_paths)]:
        where = Path(str(path))
        fmt = detect_format(where) if input_format == "auto" else input_format
        (check_trec_input if fmt == "trec" else check_input)(where, kind)


def has_comment_lines(path: object) -> bool:
    """Whether a TREC file (plain or gzipped) has a line beginning with ``#``: a comment line for trec_eval
    10 (get_qrels.c, get_trec_results.c: ``#`` in the first column). When comments are allowed, only the
    native scanner and the robust reader skip them: Arrow's parse, the numpy tokenizer and DuckDB's own
    reader step aside for such a file. A missing file has none (its reader reports it)."""
    import gzip
    from pathlib import Path

    path = Path(str(path))
    if not path.is_file():
        return False
    with path.open("rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    tail = b"\n"  # the start of the file is the start of a line
    try:
        with opener(path, "rb") as handle:
            while block := handle.read(1 << 24):
                if (tail + block).find(b"\n#") >= 0:
                    return True
                tail = block[-1:]
    except GZIP_ERRORS:
        return False  # the reader reports the damaged file
    return False
