"""Closed option sets shared by the library and the command line, as documented Literal aliases.

Kept free of heavy imports so that the command line can build its options without loading polars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

#: Input formats. ``auto`` picks by suffix (.jsonl/.ndjson, .csv, .tsv, .parquet; ``.gz`` looked through),
#: TREC whitespace-separated text otherwise.
Format = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]

#: What a document listed twice for one query means: an ``error`` (default), or keep the ``first`` line,
#: the ``last`` line (ir_measures' behaviour), or the line with the ``max`` score (grade, for qrels).
OnDuplicate = Literal["error", "first", "last", "max"]

#: How a mean is estimated from a model's grades and people's grades of a sample of queries
#: (:mod:`qrelkit.estimation.ppi`): ``ppi++`` (the default), ``ppi``, ``human`` alone, ``model`` alone.
Estimator = Literal["ppi++", "ppi", "human", "model"]

FORMAT_CHOICES: tuple[str, ...] = get_args(Format)
ON_DUPLICATE_CHOICES: tuple[str, ...] = get_args(OnDuplicate)
ESTIMATOR_CHOICES: tuple[str, ...] = get_args(Estimator)


def detect_format(path: Path) -> str:
    """The format named by the file's suffix (``.gz`` looked through); TREC text otherwise."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}.get(
        last, "trec"
    )
