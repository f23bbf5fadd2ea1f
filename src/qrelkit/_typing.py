"""Closed option sets shared by the library and the command line, as documented Literal aliases.

Kept free of heavy imports so that the command line can build its options without loading polars.
"""

from __future__ import annotations

from typing import Literal, get_args

#: Input formats. ``auto`` picks by suffix (.jsonl/.ndjson, .csv, .tsv, .parquet; ``.gz`` looked through),
#: TREC whitespace-separated text otherwise.
Format = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]

#: What a document listed twice for one query means: an ``error`` (default), or keep the ``first`` line,
#: the ``last`` line (ir_measures' behaviour), or the line with the ``max`` score (grade, for qrels).
OnDuplicate = Literal["error", "first", "last", "max"]

FORMAT_CHOICES: tuple[str, ...] = get_args(Format)
ON_DUPLICATE_CHOICES: tuple[str, ...] = get_args(OnDuplicate)
