"""Blocks of TREC text for the streaming readers and the native scanner: a file read in chunks that end at
a line end (or where a query begins), hashed (SHA-256) in a second thread as it is read, gzip streamed
within a bound, and each chunk scanned on one of two threads (:func:`_scanned`).

Free of dataframes, so that a caller that needs no dataframe (``qrelkit trec_eval``'s fast
path, :mod:`qrelkit.evaluation.trec_fast`) loads neither polars nor pyarrow. The checks here are the clean-text
checks every fast reader shares: anything else makes the caller step aside
(:class:`~qrelkit.errors.StepAside`) to the robust reader, which reports the line.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._native import Scanned, TopRows, group_start, scan_run
from ...errors import StepAside
from ...fingerprint import digest_ahead, file_sha256, identity
from .common import (
    GZIP_ERRORS,
    GZIP_FLOOR,
    MAX_GZIP_RATIO,
    MAX_LINE_BYTES,
    first_long_line,
    forbidden_in_text,
)

CHUNK_BYTES = 16 << 20
#: Blocks for the native scanner: smaller, so that even a 20 MB file is scanned on both cores.
NATIVE_BLOCK_BYTES = 4 << 20


def _chunks(
    path: Path,
    on_bytes: Callable[[int], None] | None,
    cutter: Callable[[bytes, int, bool], int] | None = None,
    block_bytes: int | None = None,
    hashed: bool = True,
):
    """Yield (text chunk ending at a newline, 0), then (SHA-256 of the stored bytes, -1); the digest is ""
    when not ``hashed`` (a caller that writes no fingerprint).

    The digest is computed in a second thread while the main thread parses: block by block for plain
    files, over the compressed file for gzip ones (the fingerprint is always of the bytes as stored).
    ``cutter(block, end, starts_line)`` moves each cut back from the block's last line end ``end`` (to the
    first line of the last query, see :func:`qrelkit._native.group_start`), 0 for no cut in this block.
    A cutter's caller is the native scanner, which checks the separators and the id rule's characters in
    its own pass (and takes whitespace after the last line end, a blank line); without a cutter, both are
    checked here (:func:`_check_separators`, :func:`~qrelkit.formats.trec.common.forbidden_in_text`).
    """
    size = block_bytes or CHUNK_BYTES
    native = cutter is not None
    if _small(path, size):
        yield from _whole(path, on_bytes, native, hashed)
        return
    with path.open("rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    pool = ThreadPoolExecutor(1)
    digest = hashlib.sha256()
    ahead = digest_ahead(path) if hashed else None  # hashed while the libraries loaded (hash_ahead)
    whole = pool.submit(file_sha256, path) if gz and ahead is None and hashed else None
    pending = None
    try:
        with gzip.open(path, "rb") if gz else path.open("rb") as text:
            rest = b""
            first = True
            expanded, bound = 0, max(GZIP_FLOOR, MAX_GZIP_RATIO * path.stat().st_size)
            while True:
                try:
                    block = text.read(size)
                except GZIP_ERRORS:
                    raise StepAside from None  # corrupt gzip: the robust reader reports it
                expanded += len(block)
                if gz and expanded > bound:
                    raise StepAside  # a gzip bomb: the robust reader stops at the same bound and says so
                if cutter is None:
                    _check_separators(block)
                if block and not gz and ahead is None and hashed:
                    if pending is not None:
                        pending.result()
                    pending = pool.submit(digest.update, block)
                if not block:
                    break
                cut = block.rfind(b"\n") + 1
                if cut and cutter is not None:
                    cut = cutter(block, cut, not rest or rest.endswith(b"\n"))
                if cut == 0:
                    rest += block
                    if len(rest) > MAX_LINE_BYTES:
                        raise StepAside  # a line past the bound: the robust reader refuses it with its line
                    continue
                view = memoryview(block)
                chunk = rest + view[:cut] if rest else view[:cut]  # one copy at most, none when rest is empty
                if not first and chunk[:3] == b"\xef\xbb\xbf":
                    raise StepAside  # Arrow drops a byte-order mark at the start of each parse
                first = False
                rest = bytes(view[cut:])
                if first_long_line(chunk) is not None or len(rest) > MAX_LINE_BYTES:
                    raise StepAside  # a line past the bound: the robust reader refuses it with its line
                if not native and forbidden_in_text(chunk):
                    raise StepAside  # a character the id rule forbids: the robust reader reports its line
                yield chunk, 0
                if on_bytes is not None:
                    on_bytes(len(chunk))
            if rest.strip() or (rest and native):  # the scanner skips a blank last line
                if (not first and rest[:3] == b"\xef\xbb\xbf") or (not native and forbidden_in_text(rest)):
                    raise StepAside
                yield (rest if rest.endswith(b"\n") else rest + b"\n"), 0
            elif rest:
                raise StepAside  # trailing whitespace after the last newline: the robust reader judges
        if pending is not None:
            pending.result()
        if ahead is not None:
            if identity(path) != ahead[0]:
                raise StepAside  # the file changed while it was read: the robust reader reads it again
            yield ahead[1].result(), -1
            return
        if not hashed:
            yield "", -1
            return
        yield (whole.result() if whole is not None else digest.hexdigest()), -1
    finally:
        pool.shutdown(wait=True)


def _check_separators(data: bytes) -> None:
    """Refuse whitespace other than spaces and line ends: the robust reader splits fields on tabs, vertical
    tabs and form feeds too, where Arrow's parser (splitting on spaces) would keep them inside a field; and
    NUL bytes, which Arrow keeps inside a field and the robust reader refuses."""
    if b"\t" in data or b"\x0b" in data or b"\x0c" in data or b"\x00" in data:
        raise StepAside


def _small(path: Path, size: int | None = None) -> bool:
    """A plain file of one chunk at most: read, hashed and parsed without starting threads."""
    if path.stat().st_size > (size or CHUNK_BYTES):
        return False
    with path.open("rb") as probe:
        return probe.read(2) != b"\x1f\x8b"


def _whole(path: Path, on_bytes: Callable[[int], None] | None, native: bool = False, hashed: bool = True):
    """:func:`_chunks` for a small plain file: one read, hashed in the calling thread, no threads started.
    ``native``: for the native scanner, which checks separators and characters itself."""
    stored = path.read_bytes()
    cut = stored.rfind(b"\n") + 1
    rest = stored[cut:]
    if rest and not rest.strip() and not native:
        raise StepAside  # trailing whitespace after the last newline: the robust reader judges
    chunk = stored + b"\n" if rest else stored  # a last line without its newline gets one
    if first_long_line(stored) is not None:
        raise StepAside  # a line past the bound: the robust reader refuses it with its line
    if not native:
        _check_separators(stored)
        if forbidden_in_text(stored):
            raise StepAside  # a character the id rule forbids: the robust reader reports its line
    if chunk:
        yield chunk, 0
        if on_bytes is not None:
            on_bytes(len(chunk))
    yield (hashlib.sha256(stored).hexdigest() if hashed else ""), -1


class RunTag:
    """The one tag of a run read in scanned blocks. A block without rows (blank or comment lines only) has
    none; a second tag makes the reader step aside, and the robust reader names its line."""

    def __init__(self) -> None:
        self.tag: bytes | None = None

    def add(self, tag: bytes, rows: int) -> None:
        if not rows:
            return
        if self.tag is None:
            self.tag = tag
        elif tag != self.tag:
            raise StepAside  # two tags

    def text(self) -> str | None:
        return None if self.tag is None else self.tag.decode()


def _cut_at_query(block: bytes, end: int, starts_line: bool) -> int:
    return group_start(block, end, starts_line)


def _cut_at_line(block: bytes, end: int, starts_line: bool) -> int:
    return end


def _scanned(path: Path, on_bytes, cutter, scan: Callable[[bytes], object], hashed: bool = True):
    """Yield ``scan(block)`` for each block in file order, two blocks scanned at once (the native scanner
    releases the GIL), then the file's digest. A block ``scan`` refuses (``None``) raises
    :class:`StepAside`."""
    pool = ThreadPoolExecutor(2)
    pending: list = []

    def result(future):
        scanned = future.result()
        if scanned is None:
            raise StepAside
        return scanned

    try:
        for chunk, flag in _chunks(path, on_bytes, cutter, NATIVE_BLOCK_BYTES, hashed):
            if flag < 0:
                while pending:
                    yield result(pending.pop(0))
                yield chunk
                return
            pending.append(pool.submit(scan, chunk))
            if len(pending) > 2:
                yield result(pending.pop(0))
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)


class _Pairs:
    """The (query, document) hashes of every line, kept only once a query came back (a grouped run's
    duplicates are all found within a stretch, by the scanner): then the lines read before are scanned
    again for their hashes, and every later block's are added, in one array sized from the file (8 bytes a
    line)."""

    def __init__(self, path: Path, comments: bool = False):
        self.path = path
        self.comments = comments
        self.size = path.stat().st_size
        self.data = np.zeros(0, dtype=np.uint64)
        self.n = 0
        self.bytes = 0
        self.active = False

    def came_back(self, rows_before: int) -> None:
        """A query came back in the block that follows the first ``rows_before`` rows (lines not blank)."""
        if self.active:
            return
        self.active = True
        if rows_before:
            for pair, size in _line_pairs(self.path, rows_before, self.comments):
                self.add(pair, size)

    def add(self, pair: np.ndarray | None, block_bytes: int) -> None:
        """Add a block's hashes (``block_bytes``: the bytes it was scanned from), once a query came back."""
        if not self.active or pair is None:
            return
        need = self.n + len(pair)
        self.bytes += block_bytes
        if need > len(self.data):
            # the lines still to come, from the bytes per line so far (gzip: the stored size is a floor)
            ahead = max(self.size - self.bytes, 0) * need // self.bytes if self.bytes else need
            grown = np.empty(max(need + ahead + ahead // 16 + 1024, len(self.data) * 3 // 2), dtype=np.uint64)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n : need] = pair
        self.n = need

    def check(self) -> None:
        """Step aside when two lines may share a (query, document) pair: equal 64-bit hashes, a duplicate
        document or (about once in 10^8 files of 50M lines) a collision; the robust reader decides."""
        every = self.data[: self.n]
        every.sort()  # in place
        if len(every) > 1 and bool((every[1:] == every[:-1]).any()):
            raise StepAside
        self.data = np.zeros(0, dtype=np.uint64)


def _line_pairs(path: Path, rows: int, comments: bool = False):
    """The (query, document) hashes of the first ``rows`` rows (lines not blank) of a run, block by block
    (read again, the blocks cut at line ends)."""
    with path.open("rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    rest = b""
    with gzip.open(path, "rb") if gz else path.open("rb") as text:
        while rows > 0:
            try:
                block = rest + text.read(NATIVE_BLOCK_BYTES)
            except GZIP_ERRORS:
                raise StepAside from None
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                raise StepAside  # the file changed since it was read
            rest = block[cut:]
            scanned = scan_run(block[:cut], 1, False, any_order=True, comments=comments)
            if scanned is None or scanned.pair is None:
                raise StepAside
            yield scanned.pair[:rows], cut
            rows -= scanned.rows


@dataclass(frozen=True)
class TopScan:
    """What :func:`top_rows` read: each query's top rows (``None`` when the file has no row), the rows
    read (lines that are not blank), the digest, the tag, whether a query came back after another, and
    the lines with fields after the sixth."""

    scanned: Scanned | None
    rows: int
    fingerprint: str
    tag: str | None
    merged: bool
    trailing: int


def top_rows(
    path: Path,
    keep_top: int,
    rank_single: bool,
    on_bytes: Callable[[int], None] | None,
    comments: bool = False,
) -> TopScan:
    """Each query's top ``keep_top`` rows of a clean TREC run in any order, by the native scanner: blocks
    cut where a query begins, scanned two at a time and merged in file order by
    :class:`qrelkit._native.TopRows` (bounded memory: each query's top rows), a document twice in a query
    found within a stretch by the scanner and across stretches by :class:`_Pairs`. Both the streaming
    reader's frame and the small engine's columns are made from it. :class:`StepAside` for a block the
    scanner refuses, two tags or a possible duplicate."""
    top = TopRows(keep_top, rank_single, comments)
    pairs = _Pairs(path, comments)
    tag = RunTag()
    rows = lines = trailing = 0  # rows: lines that are not blank
    fingerprint = ""
    try:
        for block in _scanned(path, on_bytes, _cut_at_query, top.scan):
            if isinstance(block, str):
                fingerprint = block
                break
            tag.add(block.tag, block.rows)
            top.add(block, lines)
            if not pairs.active and top.came_back():
                pairs.came_back(rows)
            pairs.add(block.pair, block.size)
            rows += block.rows
            lines += block.lines
            trailing += block.trailing
        pairs.check()
        scanned = top.result() if rows else None
    finally:
        top.close()
    return TopScan(scanned, rows, fingerprint, tag.text(), pairs.active, trailing)


def run_meta(
    rows: int, keep_top: int | None, rank_single: bool, tag: str | None, merged: bool, trailing: int
) -> dict[str, object]:
    """What a run read by the streaming readers records of its reading (the small engine's columns of
    :func:`top_rows` record the same): the rows read, the reader, the lines with trailing fields ignored,
    the depth kept and the precision it was chosen by, the tag, whether a query came back."""
    meta: dict[str, object] = {"rows_read": rows, "reader": "fast"}
    if trailing:
        meta["lines_with_trailing_fields_ignored"] = trailing
    if keep_top is not None:
        meta["kept_top"] = keep_top
        meta["kept_top_precision"] = "single" if rank_single else "double"
    if tag is not None:
        meta["tag"] = tag
    if merged:
        meta["merged_across_blocks"] = True
    return meta


def run_provenance(
    path: Path, meta: dict[str, object], on_duplicate: str, name: str | None = None
) -> tuple[str, dict[str, object]]:
    """The name and meta of a run read by the native scanner or the streaming readers (``meta``:
    :func:`run_meta`'s): named by ``name``, else its tag, else the file's stem; with its source, no
    duplicate removed and the duplicate policy."""
    meta = dict(meta)
    tag = meta.pop("tag", None)
    run_name = name or (str(tag) if tag is not None else path.stem)
    meta.update({"source": str(path), "duplicates_removed": 0, "on_duplicate": on_duplicate})
    return run_name, meta
