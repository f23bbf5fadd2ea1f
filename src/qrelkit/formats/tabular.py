"""Reading and writing runs and judgments in every supported format (see :mod:`qrelkit.formats`).

Supported: TREC run (``query_id Q0 doc_id rank score tag``) and qrels (``query_id iteration doc_id grade``),
plain or gzipped, columns separated by any run of spaces or tabs; JSON lines, CSV, TSV and Parquet with named
columns; pandas and polars data frames in memory.

Every reader validates strictly and reports the first problem with file, line, the offending text and a fix:
wrong column count, a score that is not a finite number, a grade that is not an integer, an empty file, a
document listed twice for one query (an error unless ``on_duplicate`` says otherwise), a grade outside the
rubric's scale.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES, Format, OnDuplicate, detect_format
from ..data.values import (
    Qrels,
    Run,
    check_choice,
    check_id_column,
    finish_qrels,
    finish_run,
    id_column,
    rename_columns,
)
from ..errors import InputFormatError
from . import trec
from .trec.robust import read_bytes

# ------------------------------------------------------------------------------------------------ tabular


def _read_tabular(path: Path, fmt: str, raw: bytes) -> pl.DataFrame:
    """Read JSONL/CSV/TSV/Parquet bytes into string-or-native columns plus a 1-based ``line`` column."""
    import io

    try:
        if fmt == "parquet":
            frame = pl.read_parquet(io.BytesIO(raw))
            return frame.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
        if fmt in ("csv", "tsv"):
            frame = pl.read_csv(io.BytesIO(raw), separator="," if fmt == "csv" else "\t", infer_schema=False)
            # header is line 1
            return frame.with_row_index("line", offset=2).with_columns(pl.col("line").cast(pl.Int64))
        # jsonl: map rows to the non-blank lines they came from
        lines = [i + 1 for i, text in enumerate(raw.split(b"\n")) if text.strip()]
        frame = pl.read_ndjson(io.BytesIO(raw), infer_schema_length=None)
    except (pl.exceptions.ComputeError, pl.exceptions.PolarsError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputFormatError(
            f"cannot be read as {fmt.upper()} ({first})",
            source=str(path),
            fix=f"check the file is valid {fmt.upper()}, or pass --format to name its real format",
        ) from None
    if frame.height != len(lines):
        lines = list(range(1, frame.height + 1))
    return frame.with_columns(pl.Series("line", lines, dtype=pl.Int64))


def _reader_rules(profile: str | None, on_duplicate: str | None, comments: bool | None) -> tuple[str, bool]:
    """The rules ``--profile`` gives the readers (:func:`qrelkit.measures.profiles.reader_rules`)."""
    from .._typing import DEFAULT_COMMENTS, DEFAULT_ON_DUPLICATE

    if profile is None:
        return (on_duplicate or DEFAULT_ON_DUPLICATE), (DEFAULT_COMMENTS if comments is None else comments)
    from ..measures.profiles import get_profile, reader_rules

    return reader_rules(get_profile(profile), on_duplicate, comments)


# ------------------------------------------------------------------------------------------------- public


def read_run(
    path: str | Path,
    *,
    format: Format = "auto",
    name: str | None = None,
    on_duplicate: OnDuplicate | None = None,
    keep_top: int | None = None,
    rank_single: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    reader: str = "auto",
    comments: bool | None = None,
    profile: str | None = None,
) -> Run:
    """Read a run file. ``format="auto"`` picks by suffix (.jsonl, .csv, .tsv, .parquet), TREC otherwise.

    ``on_duplicate`` decides what a document listed twice for one query means: ``error`` (default),
    keep the ``first`` or ``last`` line, or the line with the ``max`` score. The run's name is ``name``,
    else its (single) tag, else the file name without suffix.

    ``keep_top`` keeps only each query's top ``keep_top`` documents (and the whole tied block at that
    depth), which is all that measures with cutoffs up to ``keep_top`` need: large runs then stream through
    bounded memory. The run records it (``meta["kept_top"]``) and :func:`qrelkit.evaluate` refuses measures
    that would need more. ``rank_single`` ranks that selection by scores rounded to float32.
    ``on_bytes`` is called with the size of each chunk read (progress reporting). ``reader="robust"``
    skips the fast readers (both give identical results; the fast readers only take clean files, see
    :mod:`qrelkit.formats.trec`). ``comments`` skips TREC lines beginning with ``#``, as trec_eval 10 does.

    ``profile`` (a name, as ``--profile`` takes it) reads the file as that tool does: ``on_duplicate`` and
    ``comments`` left at ``None`` take the profile's rules (:func:`qrelkit.measures.profiles.reader_rules`),
    else the defaults (``error``; no comment lines).
    """
    rule, skip = _reader_rules(profile, on_duplicate, comments)
    check_choice(rule, ON_DUPLICATE_CHOICES, "on_duplicate")
    check_choice(format, FORMAT_CHOICES, "format")
    check_choice(reader, ("auto", "robust"), "reader")
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format
    source = str(path)
    if fmt == "trec":
        return trec.read_run(
            path,
            name=name,
            on_duplicate=rule,
            keep_top=keep_top,
            rank_single=rank_single,
            on_bytes=on_bytes,
            reader=reader,
            comments=skip,
        )
    raw, fingerprint = read_bytes(path, "run")
    frame = rename_columns(_read_tabular(path, fmt, raw), ("query_id", "doc_id", "score"), source)
    if frame.height == 0:
        raise InputFormatError("file has no rows", source=source, fix="check the right file was passed")
    frame = id_column(id_column(frame, "query_id", source), "doc_id", source)
    run = finish_run(frame, fingerprint, name, source, rule, "--on-duplicate")
    return run if keep_top is None else trec.kept_top(run, keep_top, rank_single)


def read_qrels(
    path: str | Path,
    *,
    format: Format = "auto",
    name: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: OnDuplicate | None = None,
    reader: str = "auto",
    comments: bool | None = None,
    profile: str | None = None,
) -> Qrels:
    """Read judgments. ``scale`` (a rubric's grades) makes any other grade an error naming its line.

    ``reader="robust"`` skips the fast readers for clean files (both give identical results).
    ``comments`` skips TREC lines beginning with ``#``, as trec_eval 10 does. ``irds:ID`` names the
    judgments of an ir_datasets dataset instead of a file (:mod:`qrelkit.formats.irds`).

    ``profile`` (a name, as ``--profile`` takes it) reads the judgments as that tool does: with
    ``profile="trec_eval"`` lines beginning with ``#`` are skipped; ``on_duplicate`` and ``comments`` left at
    ``None`` take the profile's rules (:func:`qrelkit.measures.profiles.reader_rules`), else the defaults."""
    rule, skip = _reader_rules(profile, on_duplicate, comments)
    check_choice(rule, ON_DUPLICATE_CHOICES, "on_duplicate")
    check_choice(format, FORMAT_CHOICES, "format")
    check_choice(reader, ("auto", "robust"), "reader")
    from . import is_dataset

    if is_dataset(path):
        from .irds import read_dataset_qrels

        return read_dataset_qrels(str(path), name=name, scale=scale, on_duplicate=rule, comments=skip)
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format
    source = str(path)
    if fmt == "trec":
        return trec.read_qrels(path, name=name, scale=scale, on_duplicate=rule, reader=reader, comments=skip)
    raw, fingerprint = read_bytes(path, "qrels")
    frame = rename_columns(_read_tabular(path, fmt, raw), ("query_id", "doc_id", "grade"), source)
    if frame.height == 0:
        raise InputFormatError("file has no rows", source=source, fix="check the right file was passed")
    frame = id_column(id_column(frame, "query_id", source), "doc_id", source)
    return finish_qrels(frame, fingerprint, name, source, scale, rule, "--on-duplicate")


def write_run(run: Run, path: str | Path) -> None:
    """Write a TREC run, ranked by score (ties by file order), scores with full float precision. Ids that
    break the id rule (:mod:`qrelkit.naming`) are refused: written as text they would change the rows."""
    _check_ids(run.frame, f"run {run.name!r}")
    frame = run.frame.sort(["query_id", "score", "line"], descending=[False, True, False])
    frame = frame.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))
    text = frame.select(
        pl.format(
            "{} Q0 {} {} {} {}",
            "query_id",
            "doc_id",
            "rank",
            pl.col("score").cast(pl.String),
            pl.lit(run.name),
        )
    ).to_series()
    from .outputs import write_output

    write_output(path, "\n".join(text.to_list()) + "\n")


def qrels_text(qrels: Qrels) -> str:
    """TREC qrels text (``query_id 0 doc_id grade``, one line each) in query, then document order.

    Every qrels file qrelkit writes goes through here, so an id that breaks the id rule
    (:mod:`qrelkit.naming`: whitespace, a line end, a control character, too long) is refused rather than
    written as two lines that would read back as another query's judgment."""
    _check_ids(qrels.frame, f"judgments {qrels.name!r}")
    frame = qrels.frame.sort(["query_id", "doc_id"])
    lines = frame.select(pl.format("{} 0 {} {}\n", "query_id", "doc_id", "grade")).to_series()
    return "".join(lines.to_list())


def _check_ids(frame: pl.DataFrame, source: str) -> None:
    for column in ("query_id", "doc_id"):
        check_id_column(frame.select(column), column, source)


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    """Write TREC qrels (:func:`qrels_text`) to ``path``."""
    from .outputs import write_output

    write_output(path, qrels_text(qrels))
