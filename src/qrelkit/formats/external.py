"""Runs larger than memory: DuckDB reads, validates and sorts them under a memory cap, spilling to disk,
and hands them back as batches of whole queries for the same kernels that evaluate runs in memory.

Used by :func:`qrelkit.evaluation.files.evaluate_files` for a run that cannot stream in bounded memory: a measure
needs every document and the lines are not grouped by query, or under ``memory_limit`` the run would not
fit beside what the process holds and cannot stream (a measure needs every document), or a document is
given twice and ``on_duplicate`` resolves it (first, last or max; the streaming readers keep no rows they
could drop later).

Two ways in, the same table:

* the native scanner (:mod:`qrelkit._native`), when it is built: the run is scanned block by block, as the
  streaming readers scan it (every layout they take: whitespace layouts, blank lines, fields after the
  sixth), and each block's rows are inserted into DuckDB's table as Arrow columns, line numbers those of
  the file. Blocks are scanned two at a time; the rows a block holds are the only ones in memory;
* DuckDB's own CSV reader, for clean files (fields separated by single spaces) the scanner does not take
  or without the scanner. The error for another layout says how to normalise it.

This path words no error of its own for a bad file: when neither way in takes a file, or a check below
finds a fault (a value that does not convert, two tags, a duplicate document, an id that is too long, an
empty file), the robust reader (:mod:`qrelkit.formats.trec.robust`) reads the file and raises its error,
so a bad file gets the same message with and without ``--memory-limit`` (the price: a bad file is read
whole once, whatever the limit). A file the robust reader takes but neither way in does raises
:class:`LayoutRefused`. Bytes that are not text, and tabs or carriage returns, are found while the file is
hashed (:class:`qrelkit.formats.trec.TextCheck`), before DuckDB's reader reads it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import numpy as np
import polars as pl

from ..data.values import Run, duplicate_mask
from ..errors import InputFormatError, ValidationError
from ..fingerprint import Fingerprint, file_sha256
from .trec import GZIP_ERRORS, MAX_ID_BYTES, TextCheck, corrupt_gzip, has_comment_lines

BATCH_ROWS = 1 << 20
#: Memory per row of a batch while it is evaluated (the frame, its encoding and the kernels' arrays).
BATCH_ROW_BYTES = 400
#: Rows the native scanner's blocks gather before they are inserted into DuckDB's table together.
INSERT_ROWS = 1 << 19
#: Without a memory limit, DuckDB sorts within at most this much memory (and a quarter of the machine's).
SORT_BYTES = 2 << 30


def process_bytes() -> int:
    """The resident memory of this process now (Linux: ``/proc/self/statm``; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def sort_budget() -> int:
    """DuckDB's memory when no limit is given: :data:`SORT_BYTES`, or a quarter of the machine's memory."""
    try:
        machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return SORT_BYTES
    return max(min(SORT_BYTES, machine // 4), 256 << 20)


#: The least memory a run is read in beside what the process holds: DuckDB's own least limit (see
#: :func:`budget`) and the smallest batch of whole queries.
MIN_RUN_BYTES = (64 << 20) + (1 << 14) * BATCH_ROW_BYTES
#: What a run sorted on disk holds beyond DuckDB's own ``memory_limit`` and the batch being evaluated:
#: DuckDB's buffers outside its limit (the table's insert buffers, the sort's runs being merged, the Arrow
#: batch handed back and polars' copy of it). 150 to 160 MiB measured for 3 and 6 million rows, whatever
#: the limit (benchmarks/memory_limit.py). At 1.5 million rows on one thread, counting 200 MiB, the process
#: peaked at 0.89-0.96 of the smallest limit on one machine and at 1.10 (473 MB under 430 MB) on another
#: of the same kind (tests/evaluation/test_memory_limit_peaks.py), so 256 MiB is counted.
DUCKDB_OVERHEAD_BYTES = 256 << 20
#: The least memory a run sorted on disk by DuckDB is read in beside what the process holds.
DUCKDB_RUN_BYTES = DUCKDB_OVERHEAD_BYTES + MIN_RUN_BYTES
#: DuckDB's own limit is shared by its threads, each needing at least this much (DuckDB's documented least,
#: 128 MB a thread): more threads than the limit holds run out of memory sorting, and each adds buffers
#: outside the limit (at the smallest limit, 0.91-0.96 of it at peak on one thread, 1.0-1.07 on four).
DUCKDB_THREAD_BYTES = 128 << 20


def duckdb_threads(duck_bytes: int) -> int:
    """The threads DuckDB sorts with under its own limit of ``duck_bytes``: one per
    :data:`DUCKDB_THREAD_BYTES` of it, at least one, at most the cores this process may run on."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, duck_bytes // DUCKDB_THREAD_BYTES))


def budget(memory_limit: int) -> tuple[int, int]:
    """(DuckDB's memory limit, rows per batch) for a process that must stay within ``memory_limit`` bytes
    in all: what the process holds now (interpreter, libraries, judgments) and what DuckDB holds beyond its
    own limit (:data:`DUCKDB_OVERHEAD_BYTES`) are taken off, and what is left is shared between DuckDB's
    sort and the evaluation of one batch of whole queries."""
    spare = max(memory_limit - process_bytes() - DUCKDB_OVERHEAD_BYTES, 0)
    rows = min(BATCH_ROWS, max(spare // 2 // BATCH_ROW_BYTES, 1 << 14))
    return max(spare - rows * BATCH_ROW_BYTES, 64 << 20), rows


def parse_size(text: str) -> int:
    """'2GB', '512MB', '1.5GiB', '800000000' -> bytes (decimal units are powers of 1000, binary of 1024)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?)B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ValidationError(
            f"cannot read memory size {text!r}", expected="a size such as 2GB, 512MB or 1.5GiB"
        )
    number, unit, binary = match.groups()
    base = 1024 if binary else 1000
    power = " KMGT".index(unit.upper() or " ")
    value = int(float(number) * base**power)
    if value < 64 * 2**20:
        raise ValidationError(f"memory limit {text!r} is below 64 MB", fix="allow at least 256MB")
    return value


def _first(con, sql: str) -> tuple | None:
    rows = con.execute(sql).fetchall()  # fetch everything (queries here return one row at most)
    return rows[0] if rows else None


#: Whitespace that the robust reader splits fields on and DuckDB's reader (single spaces) would keep
#: inside a field.
OTHER_WHITESPACE = (b"\t", b"\x0b", b"\x0c", b"\r")


def _hash_and_check(path: Path) -> tuple[str, bool]:
    """SHA-256 of the file as stored, checking meanwhile that it is text (no NUL byte, valid UTF-8); and
    whether it holds :data:`OTHER_WHITESPACE`."""
    source = str(path)
    check = TextCheck(source)
    other = False
    with path.open("rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    if gz:
        try:
            with gzip.open(path, "rb") as text:
                while block := text.read(16 << 20):
                    check.feed(block)
                    other = other or any(w in block for w in OTHER_WHITESPACE)
        except GZIP_ERRORS as exc:
            raise corrupt_gzip(source, exc) from None
        except InputFormatError:
            from .trec.robust import read_bytes

            read_bytes(path, "run")  # the robust reader decompresses first: a gzip bomb is its error
            raise
        check.feed(b"", final=True)
        return file_sha256(path), other
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(16 << 20):
            digest.update(block)
            check.feed(block)
            other = other or any(w in block for w in OTHER_WHITESPACE)
    check.feed(b"", final=True)
    return digest.hexdigest(), other


class LayoutRefused(InputFormatError):
    """A run the robust reader takes but this path does not (a layout neither the native scanner nor
    DuckDB's reader takes, such as a score written ``+1`` between tabs): a caller without a memory limit
    may then read it whole instead."""


def _explain(path: Path, on_duplicate: str, otherwise: LayoutRefused, comments: bool = False) -> NoReturn:
    """Raise the robust reader's error for a file this path found fault with; ``otherwise`` when the robust
    reader takes the file."""
    from .trec import read_run

    read_run(path, on_duplicate=on_duplicate, reader="robust", comments=comments)
    raise otherwise


def _scanned_into(
    con, path: Path, on_bytes: Callable[[int], None] | None, comments: bool = False
) -> tuple[str, str | None, int] | None:
    """Insert every row of a run into DuckDB's table ``raw`` through the native scanner (documents given
    twice kept, for the duplicate policy): (the file's SHA-256, its tag, lines with trailing fields
    ignored), or ``None`` (``raw`` dropped) when the scanner refuses a block or the file mixes tags.
    ``comments``: lines whose first byte is ``#`` are skipped."""
    import pyarrow as pa

    from .._native import scan_run
    from ..errors import StepAside
    from .trec.blocks import RunTag, _cut_at_line, _scanned

    def strings(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
        return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))

    con.execute("CREATE TABLE raw (query_id VARCHAR, doc_id VARCHAR, score DOUBLE, rank BIGINT, line BIGINT)")
    tag = RunTag()
    lines = trailing = rows = pending_rows = 0
    digest = ""
    pending: list[pa.Table] = []

    def insert() -> None:  # a few blocks at a time: DuckDB's cost per insert is not small
        nonlocal pending, pending_rows
        if pending:
            con.register("scanned_blocks", pa.concat_tables(pending))
            con.execute("INSERT INTO raw SELECT * FROM scanned_blocks")
            con.unregister("scanned_blocks")
        pending, pending_rows = [], 0

    try:
        for block in _scanned(
            path,
            on_bytes,
            _cut_at_line,
            lambda b: scan_run(b, None, False, any_order=True, duplicates=True, comments=comments),
        ):
            if isinstance(block, str):
                digest = block
                break
            tag.add(block.tag, block.rows)
            names = ["query_id", "doc_id", "score", "rank", "line"]
            columns = [
                strings(block.q_off, block.q_data),
                strings(block.d_off, block.d_data),
                pa.array(block.score),
                pa.array(block.rank),
                pa.array(block.row + (lines + 1)),  # row: the line in the block, blank ones counted
            ]
            pending.append(pa.Table.from_arrays(columns, names=names))
            pending_rows += block.kept
            if pending_rows >= INSERT_ROWS:
                insert()
            lines += block.lines
            rows += block.rows
            trailing += block.trailing
        insert()
    except StepAside:
        con.execute("DROP TABLE raw")
        return None
    if not rows:
        con.execute("DROP TABLE raw")
        return None  # an empty file: the robust reader says so
    return digest, tag.text(), trailing


def run_batches(
    path: Path,
    *,
    memory_limit: int,
    name: str | None = None,
    on_duplicate: str = "error",
    batch_rows: int | None = None,
    reason: str = "the file would not fit under the memory limit",
    on_bytes: Callable[[int], None] | None = None,
    comments: bool = False,
) -> tuple[Iterator[Run], Fingerprint, str, dict[str, object]]:
    """(batches of whole queries as Runs, fingerprint, run name, meta). Validation errors name the line.

    ``memory_limit`` is the whole process's: DuckDB's own limit and the rows per batch come from what is
    left of it (:func:`budget`), and DuckDB spills to a temporary directory beyond that. ``reason`` (why
    the run is sorted on disk) is recorded in the provenance as ``sorted_on_disk``. ``on_bytes(n)`` is
    called as the native scanner reads the file. ``comments``: lines whose first byte is ``#`` are skipped
    (by the native scanner; DuckDB's own reader refuses a file that has one)."""
    import duckdb

    from .._native import built
    from .trec.common import check_trec_input

    check_trec_input(path, "run")
    source = str(path)
    tmp = tempfile.TemporaryDirectory(prefix="qrelkit-duckdb-")
    # an in-memory database spills to temp_directory beyond memory_limit, and writes nothing it need not
    con = duckdb.connect(":memory:")
    try:  # the connection and its directory go on any error before the batches own them
        duck_bytes, rows = budget(memory_limit)
        con.execute(f"SET memory_limit = '{duck_bytes // 2**20}MB'")
        threads = duckdb_threads(duck_bytes)
        con.execute(f"SET threads = {threads}")
        con.execute(f"SET temp_directory = '{tmp.name}'")
        con.execute("SET preserve_insertion_order = true")

        def refuse(problem: LayoutRefused) -> NoReturn:
            con.close()
            tmp.cleanup()
            _explain(path, on_duplicate, problem, comments)

        scanned = _scanned_into(con, path, on_bytes, comments) if built() else None
        trailing = 0
        if scanned is not None:
            sha, tag, trailing = scanned
            score, rank = "score", "rank"
        else:
            sha, other_whitespace = _hash_and_check(path)
            if other_whitespace:
                refuse(_layout_error(source, "a tab, vertical tab, form feed or carriage return"))
            if comments and has_comment_lines(path):
                refuse(
                    _layout_error(
                        source,
                        "a comment line",
                        "remove the comment lines first (grep -v '^#' run > clean.run), or evaluate without "
                        "--memory-limit",
                    )
                )
            score, rank = "CAST(score_text AS DOUBLE)", "CAST(rank_text AS BIGINT)"
            columns = (
                "{'c0':'VARCHAR','c1':'VARCHAR','c2':'VARCHAR','c3':'VARCHAR','c4':'VARCHAR','c5':'VARCHAR'}"
            )
            try:
                con.execute(
                    f"""CREATE TABLE raw AS SELECT c0 AS query_id, c2 AS doc_id, c3 AS rank_text,
                        c4 AS score_text, c5 AS tag, row_number() OVER () AS line
                        FROM read_csv(?, delim=' ', header=false, quote='', escape='', columns={columns},
                                      auto_detect=false, strict_mode=true, null_padding=false, all_varchar=true)""",
                    [source],
                )
            except duckdb.Error as exc:
                refuse(_layout_error(source, str(exc).strip().splitlines()[0][:300]))
            fault = _fault(con)
            if fault is not None:
                refuse(_layout_error(source, fault))
            tags = [t for (t,) in con.execute("SELECT DISTINCT tag FROM raw LIMIT 2").fetchall()]
            tag = tags[0] if tags else None
        fingerprint = Fingerprint(sha, "file-bytes", source)
        removed = 0
        read = _first(con, "SELECT count(*) FROM raw")[0]  # every row of the file
        if on_duplicate != "error" and _has_duplicate(con):  # under "error" each batch is checked below
            order = {"first": "line ASC", "last": "line DESC", "max": f"{score} DESC, line ASC"}
            con.execute(
                "CREATE TABLE dedup AS SELECT * FROM raw QUALIFY row_number() OVER "
                f"(PARTITION BY query_id, doc_id ORDER BY {order[on_duplicate]}) = 1"
            )
            con.execute("DROP TABLE raw")
            con.execute("ALTER TABLE dedup RENAME TO raw")
            removed = read - _first(con, "SELECT count(*) FROM raw")[0]
        run_name = name or tag or path.stem
        meta: dict[str, object] = {
            "source": source,
            "duplicates_removed": removed,
            "on_duplicate": on_duplicate,
            "reader": "duckdb",
            "memory_limit_bytes": memory_limit,
            "duckdb_memory_limit_bytes": duck_bytes,
            "duckdb_threads": threads,
            "sorted_on_disk": reason,
            "rows_read": read,
        }
        if trailing:
            meta["lines_with_trailing_fields_ignored"] = trailing
    except duckdb.OutOfMemoryException:
        con.close()
        tmp.cleanup()
        _out_of_memory(source, memory_limit)
    except BaseException:
        con.close()
        tmp.cleanup()
        raise

    def checked(frame: pl.DataFrame) -> Run:
        """A batch of whole queries, so a document given twice lies within one batch; under "error" the
        robust reader words the error (the file's first such line, which a batch may not hold)."""
        if on_duplicate == "error" and duplicate_mask(frame) is not None:
            con.close()
            problem = _layout_error(source, "a document appears more than once for a query")
            _explain(path, on_duplicate, problem, comments)
        return Run(frame, fingerprint, run_name, meta)

    def batches() -> Iterator[Run]:
        try:
            reader = con.sql(
                f"SELECT query_id, doc_id, {score} AS score, {rank} AS rank,"
                " CAST(line AS BIGINT) AS line FROM raw ORDER BY query_id, line"
            ).to_arrow_reader(batch_rows or rows)
            carry: pl.DataFrame | None = None
            for record_batch in reader:
                frame = pl.DataFrame(pl.from_arrow(record_batch))
                if carry is not None:
                    frame = pl.concat([carry, frame])
                last = frame.item(-1, "query_id")
                complete = frame.filter(pl.col("query_id") != last)
                carry = frame.filter(pl.col("query_id") == last)
                if complete.height:
                    yield checked(complete)
            if carry is not None and carry.height:
                yield checked(carry)
        except duckdb.OutOfMemoryException:
            _out_of_memory(source, memory_limit)
        except OSError as exc:  # while batches are fetched, the Arrow reader hands DuckDB's error on as this
            if "Out of Memory Error" not in str(exc):
                raise
            _out_of_memory(source, memory_limit)
        finally:
            con.close()
            tmp.cleanup()

    return batches(), fingerprint, run_name, meta


def _out_of_memory(source: str, memory_limit: int) -> NoReturn:
    """DuckDB could not sort the run within its share of ``memory_limit``: one line naming the file and the
    limit, and what to give instead."""
    raise ValidationError(
        f"DuckDB ran out of memory sorting the run within the memory limit of {memory_limit // 1_000_000} MB",
        source=source,
        fix=f"give a larger limit (--memory-limit {2 * memory_limit // 1_000_000}MB), or free disk space in "
        "the temporary directory DuckDB spills to",
    )


def _layout_error(source: str, detail: str, fix: str | None = None) -> LayoutRefused:
    """The error for a file the robust reader takes but this path does not (other whitespace than single
    spaces between fields, or comment lines, without the native scanner)."""
    return LayoutRefused(
        f"cannot read as a TREC run with single-space separated fields ({detail})",
        source=source,
        expected="6 fields 'query_id Q0 doc_id rank score tag' separated by single spaces",
        fix=fix
        or "normalise the whitespace first (tr -d '\\r' < run | tr -s ' \\t' ' ' > clean.run), or evaluate "
        "without --memory-limit",
    )


def _fault(con) -> str | None:
    """What is wrong with the rows DuckDB read, or ``None``; the robust reader then reports the error.
    One pass over the rows for every check but the duplicate documents."""
    # what the robust reader's casts (polars) take: DuckDB's also take '1_0', and '.2' or '1e2' as integers
    bad_score = "TRY_CAST(score_text AS DOUBLE) IS NULL OR contains(score_text, '_')"
    bad_rank = "TRY_CAST(rank_text AS BIGINT) IS NULL OR NOT regexp_full_match(rank_text, '[+-]?[0-9]+')"
    # the id rule (qrelkit.naming.ID_PATTERN) in RE2, whose \s is ASCII only: \p{Z} adds the rest of Unicode's
    # whitespace (U+0085 is among the controls)
    rule = r"[\s\x00-\x1f\x7f-\x9f\p{Z}]"
    long = (
        f"strlen(query_id) > {MAX_ID_BYTES} OR strlen(doc_id) > {MAX_ID_BYTES}"
        f" OR regexp_matches(query_id, '{rule}') OR regexp_matches(doc_id, '{rule}')"
    )
    summary = _first(
        con,
        f"""SELECT count(*), min(line) FILTER (WHERE {bad_score}), min(line) FILTER (WHERE {bad_rank}),
            bool_or(NOT isfinite(TRY_CAST(score_text AS DOUBLE))), bool_or({long}),
            count(DISTINCT tag) FROM raw""",
    )
    assert summary is not None  # an aggregate without GROUP BY returns one row
    rows, score_line, rank_line, infinite, too_long, tags = summary
    if not rows:
        return "file is empty (no lines)"
    if score_line is not None:
        return f"line {score_line}: the score does not convert"
    if rank_line is not None:
        return f"line {rank_line}: the rank does not convert"
    if infinite:
        return "a score is not a finite number"
    if too_long:
        return "an id is too long or holds whitespace or a control character"
    if tags > 1:
        return "the file mixes run tags"
    return None  # a document given twice: each batch is checked as it is read


def _has_duplicate(con) -> bool:
    return _first(con, "SELECT 1 FROM raw GROUP BY query_id, doc_id HAVING count(*) > 1 LIMIT 1") is not None
