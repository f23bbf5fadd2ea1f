"""The streaming readers for TREC files (steps 2 and 3 of :mod:`qrelkit.formats.trec`): chunked,
multithreaded parsing with bounded memory.

Clean files (as :mod:`qrelkit.formats.trec` defines them) are parsed in chunks of about
16 MB by Arrow's multithreaded CSV reader, hashed (SHA-256) in a second thread as they are read, and reduced
as they stream:

* a run is kept whole, or, when the caller only needs each query's top ``keep_top`` documents, reduced to
  them: every row whose score is beaten by fewer than ``keep_top`` others in its query (so the tied block
  that straddles the cutoff is kept whole, and any tie convention can still be applied exactly);
* with Arrow's parse, rows of a query are processed once the query is complete while the file is grouped
  by query (every TREC tool writes runs that way). From a query id that reappears after another query
  started, each chunk is reduced on its own and what was kept is selected again whenever it doubles; a
  document twice in a query is found by hashes of every line's (query, document) pair.

When qrelkit's native scanner is built (:mod:`qrelkit._native`, ``scan.c``), it does the parsing instead of
Arrow, for runs and judgments alike: blocks of about 4 MB, cut where a query begins, are each split,
checked and reduced in one compiled pass, two at a time. It takes the clean files described here, and the
whitespace layouts of :mod:`qrelkit.formats.trec` (fields split on runs of ASCII whitespace, blank lines),
in any order of lines (shards concatenated, lines shuffled or sorted by score or document): a query that
comes back is reduced again with what was kept of it before, so the kept rows stay bounded by each query's
top rows, and a document twice in a query is found across blocks by hashes of every line's (query,
document) pair, kept from the block where a query first comes back (the lines before it are hashed
again then): a grouped run keeps none. It gives the same rows; whatever it refuses goes to Arrow's parse,
and from there as below.

Every row kept (no ``keep_top``), a caller may ask for grouped runs only: a query that comes back then
raises :class:`~qrelkit.errors.Ungrouped`, and the caller sorts the run on disk instead of holding it.

Anything else steps aside (:class:`~qrelkit.errors.StepAside` inside, ``None`` from the public
functions): the caller then uses the robust reader in :mod:`qrelkit.formats.trec.robust`, which finds and
reports the exact line. So the fast path never changes a result and never has to explain an error.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv

from ..._native import built, scan_qrels, scan_run
from ...data.values import stretch_starts
from ...errors import StepAside, Ungrouped
from ...fingerprint import Fingerprint
from .blocks import (
    RunTag,
    _chunks,
    _cut_at_line,
    _cut_at_query,
    _Pairs,
    _scanned,
    _small,
    _whole,
    run_meta,
    top_rows,
)
from .common import MAX_ID_BYTES, has_comment_lines

_RUN_NAMES = ["query_id", "iteration", "doc_id", "rank", "score", "tag"]
_RUN_READ = pcsv.ReadOptions(column_names=_RUN_NAMES, block_size=1 << 22)
# Small files are parsed in the calling thread without Arrow's thread pool: a parse that fails there can
# leave pool tasks running while the process exits on the error it reports, which aborts the process.
_RUN_READ_INLINE = pcsv.ReadOptions(column_names=_RUN_NAMES, block_size=1 << 22, use_threads=False)
_PARSE = pcsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=False)
_RUN_CONVERT = pcsv.ConvertOptions(
    include_columns=["query_id", "doc_id", "rank", "score", "tag"],
    column_types={
        "query_id": pa.string(),
        "doc_id": pa.string(),
        "rank": pa.int64(),
        "score": pa.float64(),
        "tag": pa.dictionary(pa.int32(), pa.string()),
    },
    null_values=[],  # "NaN", "NULL", "N/A" are values to judge, never silently missing
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
)
_QRELS_NAMES = ["query_id", "iteration", "doc_id", "grade"]
_QRELS_READ = pcsv.ReadOptions(column_names=_QRELS_NAMES, block_size=1 << 22)
_QRELS_READ_INLINE = pcsv.ReadOptions(column_names=_QRELS_NAMES, block_size=1 << 22, use_threads=False)
_QRELS_CONVERT = pcsv.ConvertOptions(
    include_columns=["query_id", "doc_id", "grade"],
    column_types={"query_id": pa.string(), "doc_id": pa.string(), "grade": pa.int64()},
    null_values=[],
    strings_can_be_null=False,
)


def _has_empty(table: pa.Table, *columns: str) -> bool:
    """Whether an id column holds an empty value (two spaces in a row made an empty field, which the robust
    reader, splitting on runs of whitespace, does not see as a field at all) or one longer than
    :data:`~qrelkit.formats.trec.MAX_ID_BYTES`, which the robust reader refuses. Read from the arrays'
    offsets (importing ``pyarrow.compute`` would cost more than the check)."""
    for column in columns:
        for chunk in table.column(column).chunks:
            width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
            offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[
                chunk.offset : chunk.offset + len(chunk) + 1
            ]
            if len(offsets) > 1:
                sizes = offsets[1:] - offsets[:-1]
                if not sizes.all() or int(sizes.max()) > MAX_ID_BYTES:
                    return True
    return False


def _parse(chunk: bytes, read: pcsv.ReadOptions, convert: pcsv.ConvertOptions) -> pa.Table:
    """Arrow's parse of a chunk of whole lines. Checked over the whole chunk, as Arrow checks only the
    columns it converts (not the iteration column): valid UTF-8, and no empty field (two spaces in a row,
    or a space at a line's start or end), which the robust reader, splitting on runs of whitespace, does
    not count as a field."""
    data = bytes(chunk)
    if b"  " in data or b"\n " in data or b" \n" in data or data[:1] == b" ":
        raise StepAside
    try:
        codecs.utf_8_decode(data, "strict", True)
    except UnicodeDecodeError:
        raise StepAside from None
    try:
        return pcsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=read,
            parse_options=_PARSE,
            convert_options=convert,
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        raise StepAside from None


def read_run_fast(
    path: Path,
    *,
    keep_top: int | None = None,
    rank_single: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    grouped_only: bool = False,
    comments: bool = False,
    native: bool = True,
) -> tuple[pl.DataFrame, Fingerprint, dict[str, object]] | None:
    """Parse a clean TREC run; ``None`` if the file needs the robust reader.

    Returns (frame with query_id, doc_id, score, rank, line; fingerprint; meta). ``rank_single`` selects
    the top rows by scores rounded to float32 (a superset of the double-precision selection, since the
    rounding is monotone), for evaluations that use single-precision scores. Lines may come in any order;
    with ``grouped_only`` and no ``keep_top`` (every row kept), a run whose lines are not grouped by query
    raises :class:`~qrelkit.errors.Ungrouped` instead, for a caller that would rather sort it on disk.
    ``comments``: lines whose first byte is ``#`` are skipped (the native scanner only: Arrow's parse
    steps aside for a file that has one). ``native=False`` leaves the native scanner out (its pass already
    stepped aside for these options).
    """
    grouped_only = grouped_only and keep_top is None
    if native and built() and (keep_top is None or keep_top > 0):
        try:
            return _read_run_native(path, keep_top, rank_single, on_bytes, grouped_only, comments)
        except Ungrouped:
            raise
        except StepAside:
            pass  # Arrow's reader decides (it takes a few layouts the native scanner leaves to it)
    if comments and has_comment_lines(path):
        return None
    try:
        return _read_run(path, keep_top, rank_single, on_bytes, grouped_only)
    except Ungrouped:
        raise
    except StepAside:
        return None


def _reduce(
    frame: pl.DataFrame, keep_top: int | None, rank_single: bool, group: str = "query_id"
) -> pl.DataFrame:
    """Rows whose score is beaten by fewer than ``keep_top`` others in their query (``group`` column)."""
    if keep_top is None:
        return frame
    score = pl.col("score").cast(pl.Float32) if rank_single else pl.col("score")
    beaten_by = score.rank("min", descending=True).over(group)
    return frame.filter(beaten_by <= keep_top)


def _select_top(part: pl.DataFrame, starts: np.ndarray, keep_top: int, rank_single: bool) -> pl.DataFrame:
    """Rows beaten by fewer than ``keep_top`` others in their query; queries start at ``starts``.

    When every query's scores are already non-increasing (ranked runs are written that way) this is O(n):
    a row is kept if it is among the first ``keep_top`` or ties the score at that depth. Otherwise the
    rank-based selection of :func:`_reduce` decides.
    """
    s = part.get_column("score").to_numpy()
    if rank_single:
        s = s.astype(np.float32)
    n = len(s)
    sizes = np.diff(np.append(starts, n))
    first_of_row = np.repeat(starts, sizes)
    descending = s[1:] <= s[:-1]
    descending[starts[1:] - 1] = True  # comparisons across a query boundary do not count
    if not descending.all():
        group = pl.Series("_group", np.repeat(np.arange(len(starts)), sizes))
        return _reduce(part.with_columns(group), keep_top, rank_single, group="_group").drop("_group")
    pos = np.arange(n) - first_of_row
    kth = np.repeat(s[starts + np.minimum(sizes, keep_top) - 1], sizes)
    keep = (pos < keep_top) | (s >= kth)
    return part if keep.all() else part.filter(pl.Series(keep))


def _parsed_chunks(path: Path, on_bytes: Callable[[int], None] | None):
    """(table, None) per chunk, the next chunk parsed on a second thread meanwhile; then (None, digest).

    A small file is one chunk, parsed in the calling thread."""
    if _small(path):
        for chunk, flag in _whole(path, on_bytes):
            yield (None, chunk) if flag < 0 else (_parse(chunk, _RUN_READ_INLINE, _RUN_CONVERT), None)
        return
    pool = ThreadPoolExecutor(1)
    pending = None
    try:
        for chunk, flag in _chunks(path, on_bytes):
            if flag < 0:
                if pending is not None:
                    yield pending.result(), None
                yield None, chunk
                return
            following = pool.submit(_parse, chunk, _RUN_READ, _RUN_CONVERT)
            if pending is not None:
                yield pending.result(), None
            pending = following
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _read_run(path, keep_top, rank_single, on_bytes, grouped_only=False):
    """Arrow's parse of a run. Grouped by query, each query is reduced once it is complete; once a query
    comes back (the run is in another order) each chunk is reduced on its own and what was kept is
    selected again whenever it doubles (as :class:`qrelkit._native.TopRows` does), or, with
    ``grouped_only``, :class:`~qrelkit.errors.Ungrouped` is raised. A document twice in a query is found by
    the (query, document) hashes of every line (8 bytes a line)."""
    kept: list[pl.DataFrame] = []
    finished: set[str] = set()
    carry: pl.DataFrame | None = None
    tags: set[str] = set()
    pairs: list[np.ndarray] = []
    rows = 0
    fingerprint = ""
    came_back = False
    selected = 0  # rows kept by the last selection (any order)

    def process(part: pl.DataFrame, starts: np.ndarray) -> None:
        """One block of whole queries; ``starts`` are the rows where each query begins."""
        reduced = part if keep_top is None else _select_top(part, starts, keep_top, rank_single)
        if reduced.height < part.height:
            # compact the strings: a filtered polars string column still holds the whole chunk's buffers
            reduced = pl.DataFrame(reduced.to_arrow(compat_level=pl.CompatLevel.oldest()))
        kept.append(reduced)

    def merge(part: pl.DataFrame) -> None:
        """Any order: keep the chunk's top rows per query, and select again when the kept rows double."""
        nonlocal kept, selected
        if keep_top is None:
            kept.append(part)
            return
        reduced = _reduce(part, keep_top, rank_single)
        kept.append(pl.DataFrame(reduced.to_arrow(compat_level=pl.CompatLevel.oldest())))
        if sum(k.height for k in kept) > 2 * max(selected, 1 << 16):
            merged = _reduce(pl.concat(kept), keep_top, rank_single)
            kept = [pl.DataFrame(merged.to_arrow(compat_level=pl.CompatLevel.oldest()))]
            selected = kept[0].height

    for table, digest in _parsed_chunks(path, on_bytes):
        if table is None:
            fingerprint = digest  # the digest, after the last chunk
            break
        first_line = rows + 1  # no blank lines on this path: rows and lines coincide
        for piece in table.column("tag").chunks:
            tags.update(piece.dictionary.to_pylist())
        if len(tags) > 1 or "" in tags or _has_empty(table, "query_id", "doc_id"):
            raise StepAside  # two tags, or an empty field (two spaces, a space at a line's end or start)
        frame = pl.from_arrow(table.drop_columns(["tag"]), rechunk=False).with_columns(
            (pl.int_range(0, pl.len(), dtype=pl.Int64) + first_line).alias("line")
        )
        score = frame.get_column("score")
        if score.null_count() or not score.is_finite().all() or frame.get_column("rank").null_count():
            raise StepAside
        rows += frame.height
        pairs.append(frame.select(pl.struct("query_id", "doc_id").hash(7)).to_series().to_numpy())
        if came_back:
            merge(frame)
            continue
        if carry is not None:
            frame = pl.concat([carry, frame])
        starts = stretch_starts(frame.get_column("query_id"))
        firsts = frame.get_column("query_id").gather(starts).to_list()
        if len(set(firsts)) != len(firsts) or finished.intersection(firsts):
            if grouped_only:
                raise Ungrouped
            came_back, carry = True, None
            merge(frame)
            continue
        finished.update(firsts[:-1])
        tail_start = int(starts[-1])  # the last query may go on in the next chunk
        carry = frame.slice(tail_start)
        if tail_start:
            process(frame.slice(0, tail_start), starts[:-1])
    if carry is not None and carry.height:
        if carry.item(0, "query_id") in finished:
            if grouped_only:
                raise Ungrouped
            came_back = True
            merge(carry)
        else:
            process(carry, stretch_starts(carry.get_column("query_id")))
    every = np.concatenate(pairs) if pairs else np.zeros(0, dtype=np.uint64)
    del pairs
    every.sort()
    if len(every) > 1 and bool((every[1:] == every[:-1]).any()):
        raise StepAside  # a duplicate document (or a hash collision): the robust reader decides
    del every
    if came_back and keep_top is not None:
        kept = [_reduce(pl.concat(kept), keep_top, rank_single)]
    tag = next(iter(tags)) if tags else None
    return _finished_run(path, kept, rows, fingerprint, keep_top, rank_single, tag, came_back)


def _finished_run(path, kept, rows, fingerprint, keep_top, rank_single, tag, merged=False, trailing=0):
    """What both streaming readers return: (frame of kept rows, fingerprint, meta); ``merged``: a query
    came back after another (the run is not grouped by query) and was merged with what was kept of it;
    ``trailing``: lines whose fields after the sixth were ignored (the native scanner's count)."""
    if rows == 0:
        raise StepAside
    frame = pl.concat(kept) if kept else pl.DataFrame()
    meta = run_meta(rows, keep_top, rank_single, tag, merged, trailing)
    return (
        frame.select("query_id", "doc_id", "score", "rank", "line"),
        Fingerprint(fingerprint, "file-bytes", str(path)),
        meta,
    )


class _ArrowArray:
    """An Arrow array handed to polars through the Arrow PyCapsule interface (``__arrow_c_array__``)
    rather than as a pyarrow object, which ``pl.from_arrow`` would pass through ``pyarrow.compute`` (an
    import of about 60 ms on an idle machine, for chunked dictionary arrays these columns never are)."""

    __slots__ = ("array",)

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        return self.array.__arrow_c_array__(requested_schema)


def _strings(name: str, offsets: np.ndarray, data: np.ndarray) -> pl.Series:
    """A polars string column from Arrow offsets and bytes. Polars converts 32-bit offsets many times
    faster than 64-bit ones (0.01 s against 0.15 s for 734k ids), so those are used below 2 GiB."""
    n = len(offsets) - 1
    if len(data) < 2**31:
        array = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data))
    else:
        array = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return pl.Series(_ArrowArray(array)).alias(name)


def _read_run_native(path, keep_top, rank_single, on_bytes, grouped_only=False, comments=False):
    """:func:`_read_run` with the native scanner, for a run in any order. Blocks are cut where a query
    begins, so a grouped run's queries each lie in one block; each block is scanned on its own (two at a
    time), each stretch of one query's lines reduced on its own. With ``keep_top``, the stretches are merged in
    file order by :class:`qrelkit._native.TopRows`, which keeps each query's top rows across blocks in
    bounded memory; without it every row is kept, or, with ``grouped_only``, a query that comes back raises
    :class:`~qrelkit.errors.Ungrouped` (the caller sorts the run on disk instead of holding it). A
    document twice in a query may fall in two stretches once a query came back: from then on the (query,
    document) hashes of every line are compared (:class:`_Pairs`). The same rows as Arrow's parse followed
    by :func:`_select_top`; a block the scanner refuses, or a possible duplicate, raises
    :class:`StepAside`."""
    if keep_top is not None:
        return _read_run_native_top(path, keep_top, rank_single, on_bytes, comments)
    kept: list[pl.DataFrame] = []
    seen: set[str] = set()
    pairs = _Pairs(path, comments)
    tag = RunTag()
    rows = lines = trailing = 0  # rows: lines that are not blank
    fingerprint = ""

    def scan(block):  # the scanned block and its size in bytes
        scanned = scan_run(block, None, rank_single, any_order=not grouped_only, comments=comments)
        if scanned is None and grouped_only:  # refused, perhaps for a query that came back in the block:
            scanned = scan_run(block, None, rank_single, any_order=True, comments=comments)  # Ungrouped below
        return None if scanned is None else (scanned, len(block))

    for item in _scanned(path, on_bytes, _cut_at_query, scan):
        if isinstance(item, str):
            fingerprint = item
            break
        scanned, size = item
        frame = _scanned_frame(scanned, lines + 1)
        tag.add(scanned.tag, scanned.rows)
        firsts = frame.get_column("query_id").gather(scanned.group_first).to_list()
        if len(set(firsts)) < len(firsts) or not seen.isdisjoint(firsts):
            if grouped_only:
                raise Ungrouped
            pairs.came_back(rows)
        seen.update(firsts)
        pairs.add(scanned.pair, size)
        rows += scanned.rows
        lines += scanned.lines
        trailing += scanned.trailing
        kept.append(frame)
    pairs.check()
    return _finished_run(
        path, kept, rows, fingerprint, keep_top, rank_single, tag.text(), pairs.active, trailing
    )


def _scanned_frame(scanned, first_line: int) -> pl.DataFrame:
    """A frame of scanned rows; ``first_line`` is the line number of ``row`` 0."""
    # polars Series from numpy and Arrow arrays: pa.table() over numpy arrays would import pandas
    return pl.DataFrame(
        [
            _strings("query_id", scanned.q_off, scanned.q_data),
            _strings("doc_id", scanned.d_off, scanned.d_data),
            pl.Series("score", scanned.score),
            pl.Series("rank", scanned.rank),
            pl.Series("line", scanned.row + first_line),  # row: the line in the block, blank ones counted
        ]
    )


def _read_run_native_top(path, keep_top, rank_single, on_bytes, comments=False):
    """:func:`_read_run_native` keeping each query's top ``keep_top`` rows across blocks
    (:func:`~qrelkit.formats.trec.blocks.top_rows`)."""
    top = top_rows(path, keep_top, rank_single, on_bytes, comments)
    kept = [_scanned_frame(top.scanned, 1)] if top.scanned is not None else []
    return _finished_run(
        path, kept, top.rows, top.fingerprint, keep_top, rank_single, top.tag, top.merged, top.trailing
    )


def _read_qrels_native(path: Path, comments: bool = False) -> tuple[pl.DataFrame, Fingerprint]:
    """:func:`read_qrels_fast` with the native scanner; :class:`StepAside` when it refuses a block."""
    parts: list[pl.DataFrame] = []
    rows = lines = 0  # rows: lines that are not blank
    fingerprint = ""
    for scanned in _scanned(path, None, _cut_at_line, lambda block: scan_qrels(block, comments)):
        if isinstance(scanned, str):
            fingerprint = scanned
            break
        parts.append(
            pl.DataFrame(
                [
                    _strings("query_id", scanned.q_off, scanned.q_data),
                    _strings("doc_id", scanned.d_off, scanned.d_data),
                    pl.Series("grade", scanned.grade),
                    pl.Series("line", scanned.row + (lines + 1)),
                ]
            )
        )
        rows += scanned.rows
        lines += scanned.lines
    if rows == 0:
        raise StepAside
    return pl.concat(parts), Fingerprint(fingerprint, "file-bytes", str(path))


def read_qrels_fast(path: Path, comments: bool = False) -> tuple[pl.DataFrame, Fingerprint] | None:
    """Parse clean TREC qrels (single spaces, integer grades); ``None`` if the robust reader is needed.
    ``comments``: lines whose first byte is ``#`` are skipped (by the native scanner).

    Duplicate judgments are left in: the caller's duplicate policy handles them the same on both paths.
    """
    if built():
        try:
            return _read_qrels_native(path, comments)
        except StepAside:
            pass  # Arrow's reader decides
    if comments and has_comment_lines(path):
        return None
    try:
        parts = []
        fingerprint = ""
        rows = 0
        read = _QRELS_READ_INLINE if _small(path) else _QRELS_READ
        for chunk, flag in _chunks(path, None):
            if flag < 0:
                fingerprint = chunk
                break
            table = _parse(chunk, read, _QRELS_CONVERT)
            if table.column("grade").null_count or _has_empty(table, "query_id", "doc_id"):
                return None
            parts.append(
                pl.from_arrow(table, rechunk=False).with_columns(
                    (pl.int_range(0, pl.len(), dtype=pl.Int64) + rows + 1).alias("line")
                )
            )
            rows += table.num_rows
        if not parts:
            return None
        return pl.concat(parts), Fingerprint(fingerprint, "file-bytes", str(path))
    except StepAside:
        return None
