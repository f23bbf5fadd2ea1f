"""The robust TREC reader (step 4 of :mod:`qrelkit.formats.trec`): every layout the format allows, and the
reader that explains errors.

Parsing is columnar: the file is read by Arrow's multithreaded CSV reader as one string column (blank lines
kept, so row i is line i+1), split on runs of spaces or tabs with an Arrow kernel, and cast with polars. No
Python object is built per line. Validation finds the *first* offending line and reports it with its text.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv

from ...errors import InputFormatError
from ...fingerprint import Fingerprint
from ...naming import ID_PATTERN, check_id, id_problem
from ..inputs import read_input
from .common import (
    MAX_ID_BYTES,
    TextCheck,
    current_gzip_limit,
    first_long_line,
    gunzip,
    long_id,
    long_line_error,
)

RUN_COLUMNS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")
QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "grade")
RUN_LAYOUT = "query_id Q0 doc_id rank score tag"
QRELS_LAYOUT = "query_id iteration doc_id grade"


def read_bytes(path: Path, kind: str = "file") -> tuple[bytes, Fingerprint]:
    """Read a file (gunzipping it when its first bytes say gzip) and fingerprint the bytes as stored;
    ``kind`` (``"run"``, ``"qrels"``) picks the size bound of :data:`qrelkit.formats.inputs.LIMITS`."""
    raw = read_input(path, kind=kind)
    fingerprint = Fingerprint(hashlib.sha256(raw).hexdigest(), "file-bytes", str(path))
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, str(path))  # bounded: a gzip bomb is refused before it fills memory
    return raw, fingerprint


def _lines(raw: bytes, source: str, layout: str) -> pa.ChunkedArray:
    if not raw.strip():
        raise InputFormatError(
            "file is empty (no non-blank lines)",
            source=source,
            expected=f"one line per row: {layout}",
            fix="check that the right file was passed and that it was written completely",
        )
    TextCheck(source).feed(raw, final=True)  # a NUL byte or invalid UTF-8
    long = first_long_line(raw)
    if long is not None:  # before Arrow's parser, which cannot hold a line longer than its block
        raise long_line_error(raw, long, source)
    # a whole line per row: split on a control character the text does not hold (an id holding one is
    # then reported by the id rule, not as a parse error)
    delimiter = next(
        (chr(c) for c in (0x1F, *range(1, 0x1F)) if c not in (10, 13) and bytes([c]) not in raw), None
    )
    if delimiter is None:
        raise InputFormatError(
            "file holds every ASCII control character", source=source, fix="pass a text TREC file"
        )
    try:
        table = pcsv.read_csv(
            io.BytesIO(raw),
            read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}),
        )
    except pa.ArrowInvalid as exc:
        raise InputFormatError(f"cannot be read as text lines ({exc})", source=source) from None
    return table.column("line")


def split_columns(
    raw: bytes,
    source: str,
    columns: tuple[str, ...],
    layout: str,
    other: str,
    *,
    trailing_ok: bool = False,
    comments: bool = False,
    first_line: int = 1,
) -> pl.DataFrame:
    """Split whitespace-separated text into string columns, with the 1-based line number of each row.

    Blank lines are skipped. A line with the wrong number of fields raises an error naming its line; a
    count that matches the *other* TREC format (run vs qrels) says the files were probably swapped.
    With ``trailing_ok``, fields after the last column are allowed and ignored (trec_eval reserves them
    "for future expansion" in run files); the count of such lines is in the ``extra`` column's sum.
    With ``comments``, a line whose first character is ``#`` is a comment and skipped, as trec_eval 10
    skips it; line numbers still count it. ``first_line`` is the number of the text's first line (a chunk
    of a file).
    """
    import pyarrow.compute as pc  # the robust path only: clean files never pay for this import

    lines = _lines(raw, source, layout)
    trimmed = pc.ascii_trim_whitespace(lines)
    parts = pc.ascii_split_whitespace(trimmed)
    counts = pc.list_value_length(parts)
    frame = pl.DataFrame(pa.table({"parts": parts, "n": counts, "text": lines}))
    frame = frame.with_row_index("line", offset=first_line).with_columns(pl.col("line").cast(pl.Int64))
    blank = pl.col("n") == 1
    blank = blank & (pl.col("parts").list.first() == "")
    if comments:
        blank = blank | pl.col("text").str.starts_with("#")
    frame = frame.filter(~blank)
    if frame.height == 0:
        raise InputFormatError(
            "file is empty (no non-blank lines)",
            source=source,
            expected=f"one line per row: {layout}",
            fix="check that the right file was passed and that it was written completely",
        )
    wrong = (pl.col("n") < len(columns)) if trailing_ok else (pl.col("n") != len(columns))
    bad = frame.filter(wrong)
    if bad.height:
        line, n, text = bad.row(0, named=True)["line"], bad.item(0, "n"), bad.item(0, "text")
        hint = f"replace it with {len(columns)} fields"
        other_n = 6 if len(columns) == 4 else 4
        if n == other_n:
            hint = f"this line looks like a {other} line: were the QRELS and RUN arguments swapped?"
        more = f" ({bad.height} such lines in all)" if bad.height > 1 else ""
        raise InputFormatError(
            f"line has {n} field{'s' if n != 1 else ''}{more}",
            source=source,
            line=line,
            got=text.strip(),
            expected=f"{len(columns)} fields '{layout}' separated by spaces or tabs",
            fix=hint,
        )
    frame = frame.select(
        "line",
        *[pl.col("parts").list.get(i).alias(name) for i, name in enumerate(columns)],
        "text",
        (pl.col("n") > len(columns)).alias("extra"),
    )
    size = pl.max_horizontal(pl.col("query_id").str.len_bytes(), pl.col("doc_id").str.len_bytes())
    long = frame.filter(size > MAX_ID_BYTES)
    if long.height:
        row = long.row(0, named=True)
        column = "query_id" if len(row["query_id"].encode()) > MAX_ID_BYTES else "doc_id"
        raise long_id(source, row["line"], column, len(row[column].encode()))
    forbidden = pl.col("query_id").str.contains(ID_PATTERN) | pl.col("doc_id").str.contains(ID_PATTERN)
    found = frame.select(forbidden.arg_true().first()).item()
    if found is not None:  # the id rule of qrelkit.naming, with its error (fields split on ASCII whitespace)
        row = frame.row(found, named=True)
        column = "query_id" if id_problem(row["query_id"]) else "doc_id"
        check_id(row[column], column, source, row["line"])
    return frame


def parse_run_text(raw: bytes, source: str, comments: bool = False) -> pl.DataFrame:
    """Columns: line, query_id, iteration, doc_id, rank, score, tag, text, extra (trailing fields seen)."""
    return split_columns(raw, source, RUN_COLUMNS, RUN_LAYOUT, "qrels", trailing_ok=True, comments=comments)


#: Chunks of a run read by :func:`parse_run_chunked`. The memory the allocators keep after a chunk grows
#: with its size: at 3M lines (100 MB), 16 MB chunks left the process at 598 MB, 4 MB chunks at 378 MB
#: (the streaming reader: 317 MB), and read faster (3.0 s against 3.5 s).
CHUNK_BYTES = 4 << 20


def _line_count(chunk: bytes) -> int:
    """The lines of a chunk as the robust reader's line splitting ends them: at "\n", "\r\n" or a lone "\r"."""
    return chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")


def parse_run_chunked(
    path: Path, comments: bool = False
) -> tuple[pl.DataFrame, Fingerprint, str | None] | None:
    """A run read in chunks of whole lines (about :data:`CHUNK_BYTES`), each
    split, checked and cast by this reader's own functions (:func:`split_columns`,
    :func:`qrelkit.data.values.cast_run_numbers`) and reduced to the columns a run keeps, so that a good file is
    held at about the streaming readers' size a row rather than whole with its text: (frame with line,
    query_id, doc_id, score, rank, extra; fingerprint of the stored bytes; the tag), for
    :func:`qrelkit.data.values.finish_run`. ``None`` when any chunk finds a fault, the file mixes tags or a cut
    could change a line (a byte-order mark at a chunk's start, a gzip stream past its bound...): the whole
    file is then read as before, and its error worded from all of it."""
    from ...data.values import cast_run_numbers
    from ...errors import QrelkitError, StepAside
    from .blocks import _chunks, _cut_at_line

    source = str(path)
    parts: list[pl.DataFrame] = []
    tags: set[str] = set()
    line = 1
    digest = ""
    expanded = 0
    try:
        with path.open("rb") as probe:
            limit = current_gzip_limit() if probe.read(2) == b"\x1f\x8b" else None
        for chunk, flag in _chunks(path, None, _cut_at_line, CHUNK_BYTES):
            if flag < 0:
                digest = chunk
                break
            data = bytes(chunk)
            expanded += len(data)
            if limit is not None and expanded > limit:
                return None  # gzip text past the memory limit: the whole file's reading says so
            frame = split_columns(
                data,
                source,
                RUN_COLUMNS,
                RUN_LAYOUT,
                "qrels",
                trailing_ok=True,
                comments=comments,
                first_line=line,
            )
            line += _line_count(data)
            frame = cast_run_numbers(frame, source)
            tags.update(frame.get_column("tag").unique().to_list())
            if len(tags) > 1:
                return None
            kept = frame.select("line", "query_id", "doc_id", "score", "rank", "extra")
            # compact the ids: split out of the chunk's lines, they still hold the whole chunk's buffers
            parts.append(pl.DataFrame(kept.to_arrow(compat_level=pl.CompatLevel.oldest())))
    except (QrelkitError, StepAside, OSError):
        return None  # an unreadable file too: read_input words its error
    if not parts:
        return None
    tag = next(iter(tags)) if tags else None
    return pl.concat(parts, rechunk=False), Fingerprint(digest, "file-bytes", source), tag


def parse_qrels_text(raw: bytes, source: str, comments: bool = False) -> pl.DataFrame:
    """Columns: line, query_id, iteration, doc_id, grade, text, extra (always False: qrels are strict)."""
    return split_columns(raw, source, QRELS_COLUMNS, QRELS_LAYOUT, "run", comments=comments)
