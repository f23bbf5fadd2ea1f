"""Datasets by name: ``irds:ID`` read through the ``ir-datasets`` package (the ``irds`` extra).

Wherever qrelkit reads judgments (``eval``, ``compare``, ``report``, ``explain``, ``conventions``,
``agree``, ``adjudicate``), ``irds:msmarco-passage/trec-dl-2019/judged`` names the judgments of an
ir_datasets dataset, and ``judge init --queries irds:ID`` its queries. This module is the one resolver: it
turns the name into a :class:`~qrelkit.data.values.Qrels` value (or a dict of query texts) and records
what was read (:class:`DatasetSource`: the id, ir_datasets' version, each file read with its size, SHA-256
and MD5 beside the MD5 ir_datasets documents for it), which every result carries under ``qrels.dataset``.

qrelkit never downloads. The files ir_datasets would read are found before anything is read (the
dataset's ``Download`` and ``Cache`` objects, under ``IR_DATASETS_HOME``); one that is not there is a
one-line error naming the command that downloads it, and while the judgments are read every network
source of ir_datasets is closed, so a file that could not be found in advance is the same error, never a
wait on the network.

Judgments kept by ir_datasets as one plain TREC qrels file are read by qrelkit's own TREC readers (the
same rows, errors and fingerprint as passing that file's path); any other judgments are taken from
ir_datasets' ``qrels_iter()`` and checked as a frame (fingerprint: SHA-256 of the sorted rows).

``ir_datasets`` is imported only when an ``irds:`` name is given.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputFormatError
from . import DATASET_PREFIX

if TYPE_CHECKING:
    from ..data.values import Qrels

__all__ = [
    "MAX_QUERIES",
    "MAX_ROWS",
    "PREFIX",
    "DatasetSource",
    "dataset_files",
    "read_dataset_qrels",
    "read_dataset_queries",
    "resolve",
]

#: What names a dataset instead of a file (the rule is :func:`qrelkit.formats.is_dataset`'s).
PREFIX = DATASET_PREFIX
#: The most judgments read from a dataset's ``qrels_iter()`` (the largest public sets hold a few million).
MAX_ROWS = 50_000_000
#: The most queries read from a dataset (MS MARCO's training set, the largest, holds 808,731).
MAX_QUERIES = 10_000_000

INSTALL_FIX = "install the extra: pip install 'qrelkit[irds]' (the ir-datasets package)"

_LOCK = threading.Lock()


@dataclass(frozen=True)
class DatasetFile:
    """One file ir_datasets reads for a dataset: where, how large, its digests, and the MD5 ir_datasets
    documents for it (``None`` for a file it builds itself, such as an extracted copy)."""

    path: Path
    size: int
    sha256: str
    md5: str
    expected_md5: str | None

    def to_dict(self, home: Path) -> dict[str, Any]:
        try:
            shown = str(self.path.relative_to(home))
        except ValueError:
            shown = str(self.path)
        return {
            "path": shown,
            "bytes": self.size,
            "sha256": self.sha256,
            "md5": self.md5,
            "expected_md5": self.expected_md5,
            "matches_expected": None if self.expected_md5 is None else self.md5 == self.expected_md5,
        }


@dataclass(frozen=True)
class DatasetSource:
    """What an ``irds:ID`` was read from: recorded in the provenance as ``dataset``."""

    dataset_id: str
    what: str  # "qrels" or "queries"
    version: str  # ir_datasets' version
    home: Path  # IR_DATASETS_HOME
    files: tuple[DatasetFile, ...]

    @property
    def source(self) -> str:
        return PREFIX + self.dataset_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.dataset_id,
            "entity": self.what,
            "ir_datasets": self.version,
            "home": str(self.home),
            "files": [f.to_dict(self.home) for f in self.files],
        }


def _ir_datasets(source: str) -> Any:
    """ir_datasets, imported (it makes folders under ``IR_DATASETS_HOME`` as it loads: a home that is not a
    folder, or cannot be made, is one line naming the variable)."""
    named = os.environ.get("IR_DATASETS_HOME")
    home = Path(named) if named else Path.home() / ".ir_datasets"
    if home.exists() and not home.is_dir():
        raise _home_error(home, source, "is not a folder")
    try:
        import ir_datasets
    except OSError as exc:
        raise _home_error(home, source, f"cannot be used ({exc.strerror or type(exc).__name__})") from None
    except ImportError:
        raise InputFormatError(
            "a dataset name (irds:ID) needs the ir-datasets package, which is not installed",
            source=source,
            fix=INSTALL_FIX,
        ) from None
    return ir_datasets


def _dataset(source: str) -> tuple[Any, Any, str]:
    """(ir_datasets, the dataset, its id) for ``irds:ID``; an unknown id names the closest ids."""
    dataset_id = source[len(PREFIX) :].strip()
    if not dataset_id:
        raise InputFormatError(
            "no dataset id after irds:",
            source=source,
            fix="name a dataset: irds:msmarco-passage/trec-dl-2019/judged (`ir_datasets list` lists them)",
        )
    irds = _ir_datasets(source)
    home = Path(irds.util.home_path())
    try:
        return irds, irds.load(dataset_id), dataset_id
    except OSError as exc:  # the folder ir_datasets makes under IR_DATASETS_HOME cannot be made
        raise _home_error(home, source, f"cannot be used ({exc.strerror or type(exc).__name__})") from None
    except KeyError:
        import difflib

        close = difflib.get_close_matches(dataset_id, list(irds.registry), n=3, cutoff=0.6)
        hint = (
            "did you mean " + " or ".join(PREFIX + c for c in close) + "?"
            if close
            else "`ir_datasets list` lists the ids"
        )
        raise InputFormatError(
            f"no dataset {dataset_id!r} in ir_datasets {irds.__version__}", source=source, fix=hint
        ) from None


def _home_error(home: Path, source: str, problem: str) -> InputFormatError:
    """The one line of a dataset folder that cannot be used, naming the variable that sets it."""
    named = (
        "IR_DATASETS_HOME"
        if os.environ.get("IR_DATASETS_HOME")
        else "ir_datasets' folder (IR_DATASETS_HOME unset)"
    )
    return InputFormatError(
        f"{named} is {str(home)!r}, which {problem}",
        source=source,
        fix="set IR_DATASETS_HOME to the folder ir_datasets downloads datasets into (by default ~/.ir_datasets), "
        "or unset it",
    )


def _handler(dataset: Any, what: str, source: str, dataset_id: str) -> Any:
    if not getattr(dataset, f"has_{what}")():
        raise InputFormatError(
            f"dataset {dataset_id!r} has no {what}",
            source=source,
            fix=f"name a dataset that provides {what} (its page on ir-datasets.com lists what it provides)",
        )
    return getattr(dataset, f"{what}_handler")()


def _walk(handler: Any) -> tuple[list[tuple[Path, str | None]], list[tuple[Path | None, str, bool]]]:
    """The files ``handler`` reads (path, documented MD5) and those it would have to download (where the
    file goes, or ``None`` when ir_datasets keeps no copy; where it comes from; whether what goes there is
    its extracted content, for a download ir_datasets keeps only extracted), found in its ``Download`` and
    ``Cache`` objects. A ``Cache`` whose file is there is read instead of what it was built from."""
    from ir_datasets.util import Cache
    from ir_datasets.util.download import Download, LocalDownload

    found: list[tuple[Path, str | None]] = []
    missing: list[tuple[Path | None, str, bool]] = []
    seen: set[int] = set()

    def origin(download: Any) -> str:
        urls = [getattr(m, "url", None) for m in download.mirrors]
        return next((u for u in urls if u), "its documented source")

    def visit(obj: Any, depth: int, cache: Path | None = None) -> None:
        if id(obj) in seen or depth > 24:
            return
        seen.add(id(obj))
        if isinstance(obj, Download):
            paths = [Path(obj._cache_path)] if obj._cache_path else []
            paths += [m._path for m in obj.mirrors if isinstance(m, LocalDownload)]
            here = next((p for p in paths if p.is_file()), None)
            if here is not None:
                found.append((here, obj.expected_md5))
            elif paths:
                missing.append((paths[0], origin(obj), False))
            else:
                missing.append((cache, origin(obj), cache is not None))
            return
        if isinstance(obj, Cache):
            if Path(obj._path).is_file():
                found.append((Path(obj._path), None))
                return
            cache = Path(obj._path)
        if isinstance(obj, (list, tuple, set, frozenset)):
            for item in obj:
                visit(item, depth + 1, cache)
        elif isinstance(obj, dict):
            for item in obj.values():
                visit(item, depth + 1, cache)
        elif type(obj).__module__.startswith("ir_datasets") and hasattr(obj, "__dict__"):
            for item in vars(obj).values():
                visit(item, depth + 1, cache)

    visit(handler, 0)
    return found, missing


def _digest(path: Path) -> DatasetFile:
    from .inputs import check_input

    size = check_input(path, "qrels")
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(16 << 20):
            sha.update(block)
            md5.update(block)
    return DatasetFile(path, size, sha.hexdigest(), md5.hexdigest(), None)


def _not_downloaded(
    source: str, dataset_id: str, what: str, path: Path | None, origin: str, extracted: bool = False
) -> InputFormatError:
    where = f"{path} is missing" if path is not None else f"ir_datasets keeps no copy of {origin}"
    content = "the file from" if not extracted else "the extracted content of"
    place = f", or place {content} {origin} at {path}" if path is not None else ""
    return InputFormatError(
        f"the {what} of dataset {dataset_id!r} are not downloaded ({where})",
        source=source,
        fix=f"download them once, with network access: `ir_datasets export {dataset_id} {what} > /dev/null`"
        f"{place} (IR_DATASETS_HOME sets the folder)",
    )


def resolve(source: str, what: str = "qrels") -> tuple[Any, DatasetSource]:
    """(ir_datasets' handler of ``what``, the :class:`DatasetSource`) for ``irds:ID``, every file it reads
    found on disk first. Raises :class:`~qrelkit.errors.InputFormatError` for the package not installed,
    an unknown id (with the closest ids), a dataset without ``what``, or a file not downloaded (naming
    the command that downloads it)."""
    irds, dataset, dataset_id = _dataset(source)
    handler = _handler(dataset, what, source, dataset_id)
    found, missing = _walk(handler)
    if missing:
        raise _not_downloaded(source, dataset_id, what, *missing[0])
    files = []
    for path, expected in dict.fromkeys(found):
        digest = _digest(path)
        files.append(DatasetFile(path, digest.size, digest.sha256, digest.md5, expected))
    home = Path(irds.util.home_path())
    return handler, DatasetSource(dataset_id, what, irds.__version__, home, tuple(files))


def dataset_files(source: str) -> list[Path]:
    """The files the judgments of ``irds:ID`` are read from (for planning memory): an error as
    :func:`resolve` gives for a dataset that cannot be read offline."""
    return [f.path for f in resolve(source, "qrels")[1].files]


@contextlib.contextmanager
def _offline(source: str, dataset_id: str, what: str) -> Iterator[None]:
    """Every network source of ir_datasets closed while it reads: a file not found beforehand is the
    not-downloaded error, never a wait on the network."""
    from ir_datasets.util import download

    classes = [
        getattr(download, name)
        for name in ("RequestsDownload", "GoogleDriveDownload", "GoogleCloudBucketStream")
        if hasattr(download, name)
    ]

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _not_downloaded(source, dataset_id, what, None, getattr(self, "url", None) or "the network")

    import logging

    log = logging.getLogger("ir_datasets")
    with _LOCK:
        saved = [(cls, cls.__dict__.get("stream"), cls.__dict__.get("__iter__")) for cls in classes]
        level = log.level
        try:
            log.setLevel(logging.CRITICAL)  # its "download failed" lines: the error below says it once
            for cls in classes:
                cls.stream = refuse
                cls.__iter__ = refuse
            yield
        except InputFormatError:
            raise
        except Exception as exc:  # ir_datasets' own failure (all sources failed, a damaged file ...)
            raise _failure(exc, source) from None
        finally:
            log.setLevel(level)
            for cls, stream, iterate in saved:
                for name, value in (("stream", stream), ("__iter__", iterate)):
                    if value is None:
                        if name in cls.__dict__:
                            delattr(cls, name)
                    else:
                        setattr(cls, name, value)


def _failure(exc: BaseException, source: str) -> InputFormatError:
    """``exc`` as one line: the not-downloaded error it wraps (ir_datasets gathers each source's error),
    else ir_datasets' own message."""
    stack: list[object] = [exc]
    while stack:
        item = stack.pop()
        if isinstance(item, InputFormatError):
            return item
        if isinstance(item, BaseException):
            stack.extend(item.args)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    text = " ".join(str(exc).split())[:300] or type(exc).__name__
    return InputFormatError(
        f"ir_datasets could not read the dataset ({type(exc).__name__}: {text})",
        source=source,
        fix="check the files under IR_DATASETS_HOME (delete a damaged one and download it again)",
    )


def _plain_trec_file(handler: Any, info: DatasetSource) -> Path | None:
    """The one TREC qrels file ``handler`` reads as it is stored (a ``TrecQrels`` over one downloaded
    file, four columns), else ``None``."""
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util.download import Download

    if type(handler) is not TrecQrels or handler._format_3col or len(info.files) != 1:
        return None
    return info.files[0].path if isinstance(handler._qrels_dlc, Download) else None


def read_dataset_qrels(
    source: str,
    *,
    name: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: str = "error",
    comments: bool = False,
) -> Qrels:
    """The judgments of ``irds:ID`` as :class:`~qrelkit.data.values.Qrels`, named ``irds:ID`` unless
    ``name`` is given, with ``meta["dataset"]`` the :class:`DatasetSource` as a dict."""
    from ..data.values import Qrels, canonical_fingerprint, finish_qrels, id_column
    from ..fingerprint import Fingerprint

    handler, info = resolve(source, "qrels")
    label = name or source
    plain = _plain_trec_file(handler, info)
    if plain is not None:
        from . import trec

        qrels = trec.read_qrels(plain, name=label, scale=scale, on_duplicate=on_duplicate, comments=comments)
        return Qrels(qrels.frame, qrels.fingerprint, label, qrels.scale, None, _with(qrels.meta, info))
    import polars as pl

    rows: list[tuple[str, str, int, int]] = []
    with _offline(source, info.dataset_id, "qrels"):
        for number, qrel in enumerate(handler.qrels_iter(), start=1):
            if number > MAX_ROWS:
                raise InputFormatError(
                    f"dataset has more than {MAX_ROWS:,} judgments, the bound for a dataset read by name",
                    source=source,
                    fix=f"export them to a file (`ir_datasets export {info.dataset_id} qrels > judgments.qrels`) "
                    "and pass it",
                )
            rows.append((str(qrel.query_id), str(qrel.doc_id), int(qrel.relevance), number))
    if not rows:
        raise InputFormatError("dataset has no judgments", source=source, fix="name a dataset with qrels")
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "grade", "line"], orient="row")
    frame = id_column(id_column(frame, "query_id", source), "doc_id", source)
    qrels = finish_qrels(
        frame, Fingerprint("", "", source), label, source, scale, on_duplicate, "--on-duplicate"
    )
    fingerprint = canonical_fingerprint(qrels.frame, ["query_id", "doc_id", "grade"], source)
    return Qrels(qrels.frame, fingerprint, label, qrels.scale, None, _with(qrels.meta, info))


def _with(meta: Any, info: DatasetSource) -> dict[str, Any]:
    return {**dict(meta), "source": info.source, "dataset": info.to_dict()}


def read_dataset_queries(source: str) -> tuple[dict[str, str], DatasetSource]:
    """The query texts of ``irds:ID`` (``{query_id: text}``, each query's default text: its title for
    TREC topics) and the :class:`DatasetSource` they were read from."""
    from ..naming import check_id

    handler, info = resolve(source, "queries")
    queries: dict[str, str] = {}
    with _offline(source, info.dataset_id, "queries"):
        for number, query in enumerate(handler.queries_iter(), start=1):
            if number > MAX_QUERIES:
                raise InputFormatError(
                    f"dataset has more than {MAX_QUERIES:,} queries, the bound for queries read by name",
                    source=source,
                    fix="name a smaller subset of the dataset",
                )
            query_id = check_id(str(query.query_id), "query_id", source, number)
            text = query.default_text() if hasattr(query, "default_text") else query.text
            text = " ".join(str(text).split())
            if not text:
                raise InputFormatError(f"query {query_id!r} has no text", source=source, line=number)
            if query_id in queries:
                raise InputFormatError(f"query {query_id!r} is listed twice", source=source, line=number)
            queries[query_id] = text
    if not queries:
        raise InputFormatError("dataset has no queries", source=source, fix="name a dataset with queries")
    return queries, info
