"""Readers and writers for runs and judgments: the only place qrelkit parses text.

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
from typing import Any

import polars as pl

from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES, Format, OnDuplicate, detect_format
from ..data import Fingerprint, Qrels, Run, canonical_fingerprint
from ..errors import InputFormatError, ValidationError, did_you_mean
from . import trec
from .fast import _reduce, read_qrels_fast, read_run_fast

#: Column names accepted in tabular inputs, mapped to qrelkit's names. Anything else is ignored.
COLUMN_ALIASES = {
    "query_id": "query_id",
    "qid": "query_id",
    "q_id": "query_id",
    "doc_id": "doc_id",
    "docid": "doc_id",
    "docno": "doc_id",
    "score": "score",
    "grade": "grade",
    "relevance": "grade",
    "rank": "rank",
    "tag": "tag",
    "run": "tag",
}

__all__ = [
    "FORMAT_CHOICES",
    "ON_DUPLICATE_CHOICES",
    "Format",
    "OnDuplicate",
    "detect_format",
    "qrels_from_frame",
    "qrels_text",
    "read_qrels",
    "read_run",
    "run_from_frame",
    "write_qrels",
    "write_run",
]


def _check_choice(value: str, choices: Sequence[str], option: str) -> None:
    if value not in choices:
        raise ValidationError(
            f"unknown {option} {value!r}{did_you_mean(value, choices)}",
            expected="one of " + ", ".join(choices),
            fix=f"pass {option}={choices[0]!r} or another listed value",
        )


# ---------------------------------------------------------------------------------------------- validation


def _cast_numeric(
    frame: pl.DataFrame, column: str, dtype: pl.DataType, source: str, *, what: str, expected: str, fix: str
) -> pl.DataFrame:
    """Cast a column to ``dtype``; the first value that does not convert is reported with its line."""
    col = frame.get_column(column)
    if col.dtype == pl.String:
        text = col.str.strip_chars()
        converted = text.cast(dtype, strict=False)
        if dtype == pl.Int64:
            # polars accepts "+3" and rejects "3.0": both fine; but reject what would silently truncate.
            pass
        bad = converted.is_null() & col.is_not_null()
    else:
        converted = col.cast(dtype, strict=False) if col.dtype != dtype else col
        bad = converted.is_null() & col.is_not_null()
        if dtype == pl.Int64 and col.dtype.is_float():
            frac = (col.fill_null(0) % 1) != 0
            bad = bad | frac | col.is_nan().fill_null(False)
    null_rows = col.is_null()
    if null_rows.any():
        line = frame.filter(null_rows).item(0, "line")
        raise InputFormatError(f"{what} is missing", source=source, line=line, expected=expected, fix=fix)
    if bad.any():
        row = frame.filter(bad).row(0, named=True)
        got = str(row.get("text") or row[column])
        raise InputFormatError(
            f"{what} {str(row[column]).strip()!r} is not {expected}",
            source=source,
            line=row["line"],
            got=got.strip() if "text" in row else None,
            fix=fix,
        )
    out = frame.with_columns(converted.alias(column))
    if dtype == pl.Float64:
        nonfinite = ~out.get_column(column).is_finite()
        if nonfinite.any():
            row = out.filter(nonfinite).row(0, named=True)
            raise InputFormatError(
                f"{what} is {row[column]!r}, not a finite number",
                source=source,
                line=row["line"],
                got=(row.get("text") or "").strip() or None,
                expected="a finite decimal number such as 12.5 or 1e-3",
                fix="replace NaN/inf scores (an inf or NaN score has no defined rank)",
            )
    return out


def _dedupe(
    frame: pl.DataFrame, value: str, policy: str, source: str, what: str, option: str
) -> tuple[pl.DataFrame, int]:
    """Apply the duplicate policy to rows sharing (query_id, doc_id); return the frame and rows removed."""
    hashed = pl.col("doc_id").hash(1) ^ (pl.col("query_id").hash(2) * 0x9E3779B97F4A7C15)
    if frame.select(hashed.n_unique()).item() == frame.height:
        return (
            frame,
            0,
        )  # all (query, doc) hashes distinct: no duplicates (collisions only cause the exact check)
    dup_mask = frame.select(pl.struct("query_id", "doc_id").is_duplicated()).to_series()
    if not dup_mask.any():
        return frame, 0
    if policy == "error":
        dups = frame.filter(dup_mask).sort("line")
        first = dups.row(0, named=True)
        twin = dups.filter(
            (pl.col("query_id") == first["query_id"]) & (pl.col("doc_id") == first["doc_id"])
        ).get_column("line")
        n_pairs = dups.select(pl.struct("query_id", "doc_id").n_unique()).item()
        raise ValidationError(
            f"document {first['doc_id']!r} appears more than once for query {first['query_id']!r} "
            f"(lines {', '.join(str(x) for x in twin.to_list()[:5])}; {n_pairs} duplicated pair(s) in all)",
            source=source,
            line=twin[1],
            fix=f"remove the duplicates, or choose a policy with {option} first|last|max",
        )
    if policy == "first":
        kept = frame.sort("line").unique(["query_id", "doc_id"], keep="first", maintain_order=True)
    elif policy == "last":
        kept = frame.sort("line").unique(["query_id", "doc_id"], keep="last", maintain_order=True)
    else:  # max
        kept = (
            frame.sort([value, "line"], descending=[True, False])
            .unique(["query_id", "doc_id"], keep="first")
            .sort("line")
        )
    return kept, frame.height - kept.height


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


def _rename_columns(frame: pl.DataFrame, required: tuple[str, ...], source: str) -> pl.DataFrame:
    mapping: dict[str, str] = {}
    for col in frame.columns:
        target = COLUMN_ALIASES.get(col.strip().lower())
        if target is None or col == "line":
            continue
        if target in mapping.values():
            other = next(k for k, v in mapping.items() if v == target)
            raise InputFormatError(
                f"columns {other!r} and {col!r} both name {target}",
                source=source,
                fix=f"keep one of them (qrelkit will not guess which holds the {target})",
            )
        mapping[col] = target
    frame = frame.rename(mapping)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        names = [c for c in frame.columns if c != "line"]
        hints = "".join(did_you_mean(m, names) for m in missing)
        raise InputFormatError(
            f"missing column(s) {', '.join(missing)}{hints}",
            source=source,
            got=", ".join(names),
            expected="columns " + ", ".join(required) + " (aliases: qid, docid, relevance)",
            fix="rename the columns",
        )
    return frame


def _id_column(frame: pl.DataFrame, column: str, source: str) -> pl.DataFrame:
    dtype = frame.schema[column]
    if dtype.is_float():
        raise InputFormatError(
            f"{column} column holds floating-point numbers",
            source=source,
            got=str(frame.item(0, column)),
            expected="string or integer ids",
            fix=f"store {column} as text (1.0 and 1 would otherwise be different ids)",
        )
    frame = frame.with_columns(pl.col(column).cast(pl.String))
    empty = frame.get_column(column).is_null() | (frame.get_column(column).str.strip_chars() == "")
    if empty.any():
        line = frame.filter(empty).item(0, "line")
        raise InputFormatError(
            f"{column} is empty", source=source, line=line, fix=f"give every row a {column}"
        )
    return frame


# ------------------------------------------------------------------------------------------------- public


def _finish_run(
    frame: pl.DataFrame,
    fingerprint: Fingerprint,
    name: str | None,
    source: str,
    on_duplicate: str,
    option: str,
) -> Run:
    frame = _cast_numeric(
        frame,
        "score",
        pl.Float64,
        source,
        what="score",
        expected="a number",
        fix="the fifth column of a TREC run is the score: check the column order 'query_id Q0 doc_id rank score tag'",
    )
    if "rank" in frame.columns:
        frame = _cast_numeric(
            frame,
            "rank",
            pl.Int64,
            source,
            what="rank",
            expected="an integer",
            fix="the fourth column of a TREC run is an integer rank: check the column order",
        )
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("rank"))
    tags: list[str] = []
    if "tag" in frame.columns:
        tags = frame.get_column("tag").cast(pl.String).unique(maintain_order=True).drop_nulls().to_list()
        if len(tags) > 1:
            second = frame.filter(pl.col("tag").cast(pl.String) == tags[1]).item(0, "line")
            raise ValidationError(
                f"file mixes run tags {tags[0]!r} and {tags[1]!r}"
                + (f" and {len(tags) - 2} more" if len(tags) > 2 else ""),
                source=source,
                line=second,
                expected="one system's run per file",
                fix="split the file by tag (one file per run)",
            )
    extra = int(frame.get_column("extra").sum()) if "extra" in frame.columns else 0
    frame, removed = _dedupe(frame, "score", on_duplicate, source, "run", option)
    run_name = name or (tags[0] if tags else Path(source).stem)
    meta = {"source": source, "duplicates_removed": removed, "on_duplicate": on_duplicate}
    if extra:
        meta["lines_with_trailing_fields_ignored"] = extra
    return Run(frame.select("query_id", "doc_id", "score", "rank", "line"), fingerprint, run_name, meta)


def _finish_qrels(
    frame: pl.DataFrame,
    fingerprint: Fingerprint,
    name: str | None,
    source: str,
    scale: Sequence[int] | None,
    on_duplicate: str,
    option: str,
) -> Qrels:
    frame = _cast_numeric(
        frame,
        "grade",
        pl.Int64,
        source,
        what="grade",
        expected="an integer",
        fix="grades are whole numbers such as 0, 1, 2, 3; use a custom gain map for fractional gains",
    )
    if scale is not None:
        allowed = sorted(set(scale))
        outside = ~frame.get_column("grade").is_in(allowed)
        if outside.any():
            row = frame.filter(outside).row(0, named=True)
            raise ValidationError(
                f"grade {row['grade']} is outside the rubric's scale {allowed}",
                source=source,
                line=row["line"],
                got=(row.get("text") or "").strip() or None,
                fix="correct the grade, or use the rubric these judgments were made with",
            )
    frame, removed = _dedupe(frame, "grade", on_duplicate, source, "qrels", option)
    meta = {"source": source, "duplicates_removed": removed, "on_duplicate": on_duplicate}
    return Qrels(
        frame.select("query_id", "doc_id", "grade", "line"),
        fingerprint,
        name or Path(source).name,
        tuple(sorted(set(scale))) if scale is not None else None,
        None,
        meta,
    )


def read_run(
    path: str | Path,
    *,
    format: Format = "auto",
    name: str | None = None,
    on_duplicate: OnDuplicate = "error",
    keep_top: int | None = None,
    rank_single: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    reader: str = "auto",
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
    skips the fast path (both give identical results; the fast path only takes clean files).
    """
    _check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    _check_choice(format, FORMAT_CHOICES, "format")
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format
    source = str(path)
    _check_choice(reader, ("auto", "robust"), "reader")
    if fmt == "trec" and reader == "auto" and path.is_file():
        fast = read_run_streaming(
            path,
            name=name,
            on_duplicate=on_duplicate,
            keep_top=keep_top,
            rank_single=rank_single,
            on_bytes=on_bytes,
        )
        if fast is not None:
            return fast
    raw, fingerprint = trec.read_bytes(path)
    if fmt == "trec":
        frame = trec.parse_run_text(raw, source)
    else:
        frame = _rename_columns(_read_tabular(path, fmt, raw), ("query_id", "doc_id", "score"), source)
        if frame.height == 0:
            raise InputFormatError("file has no rows", source=source, fix="check the right file was passed")
        frame = _id_column(_id_column(frame, "query_id", source), "doc_id", source)
    run = _finish_run(frame, fingerprint, name, source, on_duplicate, "--on-duplicate")
    if keep_top is None:
        return run
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
) -> Run | None:
    """The fast path of :func:`read_run` alone: a Run, or ``None`` when the file needs the robust reader."""
    fast = read_run_fast(path, keep_top=keep_top, rank_single=rank_single, on_bytes=on_bytes)
    if fast is None:
        return None
    frame, fingerprint, meta = fast
    tag = meta.pop("tag", None)
    run_name = name or (str(tag) if tag is not None else path.stem)
    meta.update({"source": str(path), "duplicates_removed": 0, "on_duplicate": on_duplicate})
    return Run(frame, fingerprint, run_name, meta)


def read_qrels(
    path: str | Path,
    *,
    format: Format = "auto",
    name: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: OnDuplicate = "error",
    reader: str = "auto",
) -> Qrels:
    """Read judgments. ``scale`` (a rubric's grades) makes any other grade an error naming its line.

    ``reader="robust"`` skips the fast path for clean files (both give identical results)."""
    _check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    _check_choice(format, FORMAT_CHOICES, "format")
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format
    source = str(path)
    _check_choice(reader, ("auto", "robust"), "reader")
    if fmt == "trec" and reader == "auto" and path.is_file():
        fast = read_qrels_fast(path)
        if fast is not None:
            frame, fingerprint = fast
            return _finish_qrels(frame, fingerprint, name, source, scale, on_duplicate, "--on-duplicate")
    raw, fingerprint = trec.read_bytes(path)
    if fmt == "trec":
        frame = trec.parse_qrels_text(raw, source)
    else:
        frame = _rename_columns(_read_tabular(path, fmt, raw), ("query_id", "doc_id", "grade"), source)
        if frame.height == 0:
            raise InputFormatError("file has no rows", source=source, fix="check the right file was passed")
        frame = _id_column(_id_column(frame, "query_id", source), "doc_id", source)
    return _finish_qrels(frame, fingerprint, name, source, scale, on_duplicate, "--on-duplicate")


def _to_polars(frame: Any, source: str) -> pl.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas absent
        pd = None
    if pd is not None and isinstance(frame, pd.DataFrame):
        return pl.from_pandas(frame.reset_index(drop=True))
    raise ValidationError(
        f"cannot read a {type(frame).__name__} as a table",
        source=source,
        expected="a polars or pandas DataFrame",
        fix="convert it to a DataFrame with columns query_id, doc_id and score (runs) or grade (qrels)",
    )


def _prepare_frame(
    frame: Any, name: str, source: str | None, on_duplicate: str, value: str
) -> tuple[pl.DataFrame, str]:
    """A caller's frame as validated columns (row number as ``line``), and the label errors will use."""
    _check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    label = source or f"{type(frame).__module__.split('.')[0]} DataFrame {name!r}"
    df = _to_polars(frame, label)
    df = _rename_columns(
        df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64)),
        ("query_id", "doc_id", value),
        label,
    )
    return _id_column(_id_column(df, "query_id", label), "doc_id", label), label


def run_from_frame(
    frame: Any, *, name: str = "run", source: str | None = None, on_duplicate: OnDuplicate = "error"
) -> Run:
    """A :class:`Run` from a pandas or polars frame with columns query_id, doc_id, score (rank, tag optional).

    Row order is file order (used by the ``file_order`` tie convention). The fingerprint is SHA-256 of the
    sorted rows, so the same content always has the same identity.
    """
    df, label = _prepare_frame(frame, name, source, on_duplicate, "score")
    run = _finish_run(df, Fingerprint("", "", label), name, label, on_duplicate, "on_duplicate=")
    fp = canonical_fingerprint(run.frame, ["query_id", "doc_id", "score"], label)
    return Run(run.frame, fp, run.name, run.meta)


def qrels_from_frame(
    frame: Any,
    *,
    name: str = "qrels",
    source: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: OnDuplicate = "error",
) -> Qrels:
    """A :class:`Qrels` from a pandas or polars frame with columns query_id, doc_id, grade."""
    df, label = _prepare_frame(frame, name, source, on_duplicate, "grade")
    qrels = _finish_qrels(df, Fingerprint("", "", label), name, label, scale, on_duplicate, "on_duplicate=")
    fp = canonical_fingerprint(qrels.frame, ["query_id", "doc_id", "grade"], label)
    return Qrels(qrels.frame, fp, name, qrels.scale, None, qrels.meta)


def write_run(run: Run, path: str | Path) -> None:
    """Write a TREC run, ranked by score (ties by file order), scores with full float precision."""
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
    Path(path).write_text("\n".join(text.to_list()) + "\n")


def qrels_text(qrels: Qrels) -> str:
    """TREC qrels text (``query_id 0 doc_id grade``, one line each) in query, then document order."""
    frame = qrels.frame.sort(["query_id", "doc_id"])
    lines = frame.select(pl.format("{} 0 {} {}\n", "query_id", "doc_id", "grade")).to_series()
    return "".join(lines.to_list())


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    """Write TREC qrels (:func:`qrels_text`) to ``path``."""
    Path(path).write_text(qrels_text(qrels))
