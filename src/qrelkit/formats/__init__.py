"""Readers and writers for runs and judgments: the only place qrelkit parses text.

Supported: TREC run (``query_id Q0 doc_id rank score tag``) and qrels (``query_id iteration doc_id grade``),
plain or gzipped, columns separated by any run of spaces or tabs; JSON lines, CSV, TSV and Parquet with named
columns; pandas and polars data frames in memory.

Every reader validates strictly and reports the first problem with file, line, the offending text and a fix:
wrong column count, a score that is not a finite number, a grade that is not an integer, an empty file, a
document listed twice for one query (an error unless ``on_duplicate`` says otherwise), a grade outside the
rubric's scale.

TREC text has one front door, :mod:`qrelkit.formats.trec`: it lists the order in which its readers are
tried and what a clean file is. Files in the other formats are read in :mod:`qrelkit.formats.tabular`; what
a frame of rows must satisfy, however it was read, is checked in :mod:`qrelkit.data.values`.

Names load on first use, so that the small-input path (:mod:`qrelkit.formats.trec.small`) imports neither
polars nor pyarrow.

Judgments and queries may be named by dataset instead of by file: ``irds:ID`` (:func:`is_dataset`), read by
:mod:`qrelkit.formats.irds` through the ir-datasets package, which only such a name imports.
"""

from __future__ import annotations

TYPE_CHECKING = False  # neither typing nor pathlib is loaded by this package (qrelkit trec_eval's start-up)
if TYPE_CHECKING:
    from typing import Any

    from .._typing import FORMAT_CHOICES, ON_DUPLICATE_CHOICES, Format, OnDuplicate, detect_format

_EXPORTS = {
    "FORMAT_CHOICES": "qrelkit._typing",
    "ON_DUPLICATE_CHOICES": "qrelkit._typing",
    "Format": "qrelkit._typing",
    "OnDuplicate": "qrelkit._typing",
    "detect_format": "qrelkit._typing",
    "read_run": "qrelkit.formats.tabular",
    "read_qrels": "qrelkit.formats.tabular",
    "write_run": "qrelkit.formats.tabular",
    "write_qrels": "qrelkit.formats.tabular",
    "qrels_text": "qrelkit.formats.tabular",
    "read_run_streaming": "qrelkit.formats.trec",
    "read_diversity_qrels": "qrelkit.formats.trec.diversity",
    "run_from_frame": "qrelkit.data.values",
    "qrels_from_frame": "qrelkit.data.values",
    "diversity_qrels_from_frame": "qrelkit.data.values",
}

#: What names a dataset (read by :mod:`qrelkit.formats.irds`) instead of a file.
DATASET_PREFIX = "irds:"


def is_dataset(source: object) -> bool:
    """Whether ``source`` names a dataset (``irds:ID``, a string) rather than a file."""
    return isinstance(source, str) and source.startswith(DATASET_PREFIX)


__all__ = [
    "DATASET_PREFIX",
    "FORMAT_CHOICES",
    "ON_DUPLICATE_CHOICES",
    "Format",
    "OnDuplicate",
    "detect_format",
    "diversity_qrels_from_frame",
    "is_dataset",
    "qrels_from_frame",
    "qrels_text",
    "read_diversity_qrels",
    "read_qrels",
    "read_run",
    "read_run_streaming",
    "run_from_frame",
    "write_qrels",
    "write_run",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit.formats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
