"""TREC run and qrels text: the one front door, the order of its readers and what a clean file is.

A run is ``query_id Q0 doc_id rank score tag`` per line, judgments ``query_id iteration doc_id grade``,
plain or gzipped. Several readers read this text; they differ in speed, never in the rows or the errors.

The order in which readers are tried
------------------------------------
Each reader either returns exactly what the robust reader would, or steps aside by raising
:class:`~qrelkit.errors.StepAside` (the one signal for "not mine, try the next"). In this order, and
nowhere else (:func:`qrelkit.evaluation.files.evaluate_files` tries step 1, then :func:`read_run` /
:func:`read_qrels` below try steps 2 to 4):

1. ``small`` (:mod:`qrelkit.formats.trec.small` with :mod:`qrelkit.engine.encoding.small`): a whole evaluation of
   plain clean files up to :data:`~qrelkit.formats.trec.small.SMALL_FILE_BYTES` each, with numpy alone (no
   dataframe library is imported). Fields are split by the native scanner when it is built (clean files
   and whitespace layouts, below), by numpy otherwise (clean files only). When every measure has a cutoff
   and the native scanner is built, a run past that size (plain or gzip) joins it, read only to the
   measures' depth by step 2's own pass (:func:`~qrelkit.formats.trec.small.top_columns`: the same rows
   and provenance, ``reader: fast``, as columns instead of a frame). Tried by
   :func:`qrelkit.evaluation.files.evaluate_files` only, before anything is read.
2. ``native`` (:mod:`qrelkit.formats.trec.streaming` with :mod:`qrelkit._native`): the compiled scanner,
   blocks of about 4 MB cut where a query begins, two at a time; when the scanner is built. It takes clean
   files and whitespace layouts. Lines may come in any order: a query that comes back is merged with what
   was kept of it (``merged_across_blocks`` in the provenance).
3. ``arrow`` (:mod:`qrelkit.formats.trec.streaming`): Arrow's CSV reader on chunks of about 16 MB, reduced
   by polars as they stream, in any order of lines too (a query that comes back is merged with what was
   kept of it). Clean files only: its parse splits on single spaces, so without the native scanner a
   whitespace layout goes to step 4. Steps 2 and 3 record ``reader: fast``.
4. ``robust`` (:mod:`qrelkit.formats.trec.robust`): takes every layout the format allows (runs of ASCII
   whitespace, blank lines, trailing fields in runs, comment lines under ``comments``) and is the reader
   that explains errors: every other reader steps aside on an input it would refuse, so this one reports
   it. A run is read in chunks of about 4 MB of whole lines, each split, checked and cast by this reader's
   functions, holding only the columns a run keeps (about 1.5 times the streaming readers' memory a row);
   a fault in any chunk sends it back to the whole file, read with its text, which words the error. A
   clean file, or with the native scanner a file in a whitespace layout, never reaches it but to have an
   error explained; what does reach it is a layout only it takes (a score written ``+1`` between tabs, a
   byte-order mark after the first line...) or a file with comment lines.

When every row is kept (a measure needs every document), :func:`qrelkit.evaluation.files.evaluate_files` asks
steps 2-3 for grouped runs only (``grouped_only``): a run whose lines are not grouped by query is sorted on
disk by DuckDB instead of held whole (:mod:`qrelkit.formats.external`, ``reader: duckdb``, with the reason
in ``sorted_on_disk``). So is a run too large for the small path with a document given twice when
``on_duplicate`` is first, last or max (the streaming readers keep no row they might have to drop later, so
they step aside for a duplicate). Under ``memory_limit`` a run whose file would not fit beside what the
process holds is streamed by steps 2-3 when the measures need only each query's top documents, else read by
DuckDB. DuckDB's table is fed from the native scanner's rows (every layout it takes), or, without the
scanner or for a file it refuses, by DuckDB's own reader, which takes clean files only; a layout neither
takes raises :class:`~qrelkit.formats.external.LayoutRefused` (saying how to normalise it), after which a
caller without a memory limit reads the run with the robust reader. For a file it finds fault with, DuckDB's
path raises the robust reader's error for that file (reading the file whole to word it).

A clean file
------------
What the fast readers (steps 1-3) take. Anything else makes them step aside:

* UTF-8 text without NUL bytes. Byte-order marks: the robust reader drops one at the very start of the
  file and keeps any other as part of an id; a fast reader steps aside wherever it could not do the same
  (the small path for one at the start, the native scanner for an id that begins with one, Arrow for one
  at the start of a chunk after the first);
* lines of exactly 6 (run) or 4 (judgments) fields separated by single spaces (0x20) and ended by
  ``\\n`` (the last line may lack it): no tab, vertical tab, form feed or carriage return, no leading or
  trailing space, no empty field, no blank line, nothing after the last line end;
* query and document ids of at most :data:`MAX_ID_BYTES` bytes (the robust reader refuses longer ones),
  and no character that :data:`qrelkit.naming.ID_PATTERN` forbids anywhere in the text but the separating
  spaces and line ends (U+00A0, DEL, a C1 control...: :func:`~qrelkit.formats.trec.common.forbidden_in_text`;
  the robust reader, splitting at ASCII whitespace only, reports such an id with its line);
* finite scores, integer ranks and grades, as the robust reader converts them. Steps 1-2 take only the
  plain spellings (scores ``-?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][-+]?[0-9]+)?``, ``.5``, ``5.`` and ``-0.0``
  included, ranks and grades ``-?[0-9]{1,18}``) and step aside for others such as ``+1``, which Arrow
  converts;
* for runs: one tag, no document twice for a query (lines in any order); for the small path, no judgment
  twice either;
* the small path also refuses gzip and files over its size bound; the streaming readers take gzip.

Whitespace layouts
------------------
The native scanner (steps 1 and 2) also takes what the robust reader takes of the separators, split
exactly as it splits them (Arrow's ``ascii_split_whitespace`` on each line): fields separated by runs of
spaces, tabs, vertical tabs and form feeds, whitespace at a line's start and end, ``\r\n`` line ends, and
blank lines (nothing but such whitespace: skipped, and counted so that line numbers stay those of the
file), whitespace after the last line end included. A carriage return anywhere but before ``\n`` (the
robust reader's line splitting ends a line there), another control character, DEL or a character above
ASCII that the id rule forbids makes it step aside: it applies
:func:`~qrelkit.formats.trec.common.forbidden_in_text`'s test in its own pass over the bytes (the numpy
test stays for Arrow's parse and the numpy tokenizer). Fields after the sixth in a run, which trec_eval
and the robust reader ignore, are ignored by the scanner too, their bytes checked as any field's, and the
lines that hold them are counted in ``lines_with_trailing_fields_ignored`` on every path; Arrow's parse
and the numpy tokenizer leave such runs to the others.

Comment lines
-------------
trec_eval 10 skips lines whose first character is ``#`` in both files (``get_qrels.c``,
``get_trec_results.c``); qrelkit does so under ``comments=True`` (``--comments``, on in the trec_eval
profiles, and always in ``qrelkit trec_eval``) and otherwise reads such a line as any other. Under
``comments`` the native scanner (steps 1 and 2, and DuckDB's table) skips such a line as it skips a blank
one, counting it so that line numbers stay the file's; Arrow's parse, the numpy tokenizer and DuckDB's
own reader step aside for a file that has one (``has_comment_lines``), and the robust reader skips it too.

Errors
------
A bad file gets the same error from every path, because only the robust reader (and :mod:`qrelkit.data.values`,
for what a frame must satisfy) words errors. Bytes that are not text (a NUL byte, invalid UTF-8) are
reported with their line and byte offset by :class:`TextCheck`, which the robust and DuckDB paths share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...errors import StepAside

__all__ = [
    "MAX_ID_BYTES",
    "StepAside",
    "TextCheck",
    "read_qrels",
    "read_run",
    "read_run_streaming",
]

from .common import (  # noqa: F401
    GZIP_ERRORS,
    MAX_ID_BYTES,
    TextCheck,
    check_trec_input,
    corrupt_gzip,
    has_comment_lines,
    long_id,
)

TYPE_CHECKING = False  # neither typing nor pathlib at run time (qrelkit trec_eval's start-up)
if TYPE_CHECKING:  # the small path imports this module without polars
    from pathlib import Path

    from ...data.values import Qrels, Run


def kept_top(run: Run, keep_top: int, rank_single: bool) -> Run:
    """A run read whole, reduced to each query's top ``keep_top`` rows as the streaming readers keep them."""
    from ...data.values import Run
    from .streaming import _reduce

    return Run(
        _reduce(run.frame, keep_top, rank_single),
        run.fingerprint,
        run.name,
        {**run.meta, "kept_top": keep_top, "kept_top_precision": "single" if rank_single else "double"},
    )


def read_run_streaming(
    path: Path,
    *,
    name: str | None = None,
    on_duplicate: str = "error",
    keep_top: int | None = None,
    rank_single: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    grouped_only: bool = False,
    comments: bool = False,
    native: bool = True,
) -> Run | None:
    """Steps 2-3 alone (native scanner, then Arrow): a Run, or ``None`` when the robust reader is needed.
    ``grouped_only`` (every row kept): a run not grouped by query raises :class:`~qrelkit.errors.Ungrouped`.
    ``comments``: lines whose first byte is ``#`` are skipped. ``native=False`` starts at Arrow's step, for
    a run whose native pass (with the same ``keep_top`` and ``rank_single``) already stepped aside."""
    from ...data.values import Run
    from .blocks import run_provenance
    from .streaming import read_run_fast

    check_trec_input(path, "run")
    fast = read_run_fast(
        path,
        keep_top=keep_top,
        rank_single=rank_single,
        on_bytes=on_bytes,
        grouped_only=grouped_only,
        comments=comments,
        native=native,
    )
    if fast is None:
        return None
    frame, fingerprint, meta = fast
    run_name, meta = run_provenance(path, meta, on_duplicate, name)
    return Run(frame, fingerprint, run_name, meta)


def read_run(
    path: Path,
    *,
    name: str | None = None,
    on_duplicate: str = "error",
    keep_top: int | None = None,
    rank_single: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    reader: str = "auto",
    comments: bool = False,
    mixed_tags: bool = False,
) -> Run:
    """A TREC run through steps 2-4 (``reader="robust"``: step 4 alone). See
    :func:`qrelkit.formats.read_run` for the parameters; ``mixed_tags`` reads a file of several tags as
    trec_eval does (:func:`qrelkit.data.values.finish_run`)."""
    from ...data.values import finish_run
    from .robust import parse_run_chunked, parse_run_text, read_bytes

    check_trec_input(path, "run")
    if reader == "auto" and path.is_file():
        fast = read_run_streaming(
            path,
            name=name,
            on_duplicate=on_duplicate,
            keep_top=keep_top,
            rank_single=rank_single,
            on_bytes=on_bytes,
            comments=comments,
        )
        if fast is not None:
            return fast
    source = str(path)
    chunked = parse_run_chunked(path, comments) if path.is_file() else None
    if chunked is not None:  # a good file, held at about the streaming readers' size a row
        frame, fingerprint, tag = chunked
        name = name or tag
    else:  # the whole file and its text, also to word its error
        raw, fingerprint = read_bytes(path, "run")
        frame = parse_run_text(raw, source, comments)
        del raw
    run = finish_run(frame, fingerprint, name, source, on_duplicate, "--on-duplicate", mixed_tags)
    return run if keep_top is None else kept_top(run, keep_top, rank_single)


def _negative_zero(path: Path) -> bool:
    """Whether a line of the TREC judgments in ``path`` ends with a grade written ``-0`` (or ``-00``...)."""
    import re

    from .robust import read_bytes

    raw, _ = read_bytes(path, "qrels")
    return re.search(rb"[ \t]-0+[ \t\r]*(?:\n|\Z)", raw) is not None


def read_qrels(
    path: Path,
    *,
    name: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: str = "error",
    reader: str = "auto",
    comments: bool = False,
) -> Qrels:
    """TREC judgments through steps 2-4 (``reader="robust"``: step 4 alone)."""
    from ...data.values import finish_qrels
    from .robust import parse_qrels_text, read_bytes
    from .streaming import read_qrels_fast

    source = str(path)
    check_trec_input(path, "qrels")
    fast = read_qrels_fast(path, comments) if reader == "auto" and path.is_file() else None
    if fast is not None and (fast[0].get_column("grade") == 0).any() and _negative_zero(path):
        fast = None  # a grade written "-0": the robust reader's frame refuses it with its line
    if fast is not None:
        frame, fingerprint = fast
    else:
        raw, fingerprint = read_bytes(path, "qrels")
        frame = parse_qrels_text(raw, source, comments)
    return finish_qrels(frame, fingerprint, name, source, scale, on_duplicate, "--on-duplicate")
