"""The same evaluation on Spark: qrelkit's own kernels, run per partition of whole queries.

:func:`evaluate` takes judgments and runs as Spark DataFrames, TREC text files, Parquet files or folders
(partitioned ones included) or catalog tables, and returns the :class:`~qrelkit.evaluation.results.Results` that
:func:`qrelkit.evaluate` returns on the same data, to the last bit. No measure is written twice:

1. the judgments are read on the driver (they are small next to the runs: a file through
   :mod:`qrelkit.formats`, anything else collected through Arrow) and validated by the same functions
   as locally; up to :data:`BROADCAST_ROWS` rows (10^7) they travel to the executors as one broadcast
   value; past it (or past ``broadcast_rows``, or the session's ``spark.qrelkit.judgments.broadcastMaxRows``)
   they are co-partitioned with each run instead: both are shuffled by query id, so a task holds only
   its own queries' judgments, each just before its queries' run rows;
2. one Parquet file is read by the tasks themselves: task i of n reads, with pyarrow, the stretches of
   one (tag, query id) that begin in its n-th of the file's rows
   (:func:`qrelkit.evaluation.spark_tasks._owned_chunks`), so Spark neither scans the rows into its own
   format nor shuffles them (co-partitioned judgments are routed to the tasks that read their queries,
   which a first pass over the query ids lists: :func:`qrelkit.evaluation.spark_tasks._task_queries`). When the file is not grouped by query (a query comes back from two tasks)
   or holds a row to refuse, it is evaluated as every other input instead: each run is
   ``repartition``-ed by (run tag, query id) (by query id alone when the judgments are co-partitioned)
   and sorted within its partitions, so every query sits whole in one partition; ``mapInArrow`` hands a
   partition over as Arrow batches, and :func:`qrelkit.evaluation.spark_tasks._chunks` carries the
   query that a batch boundary splits into the next batch;
3. each run's rows of a chunk of whole queries go to the small engine (:mod:`qrelkit.engine.encoding.small`),
   their ids read straight from Arrow's buffers (:func:`qrelkit.formats.arrow.from_arrow`); what it steps
   aside for (a row the checks must refuse or a policy must change, a profile's refusals) goes through
   :func:`qrelkit.data.values.finish_run` (the duplicate policy and the checks of scores and ids, with their
   errors) and :func:`qrelkit.evaluation.core.evaluate_run` (encode, then the kernels). Both give the same
   floats; they come back as per-query float64 values in Arrow, which holds them exactly;
4. the driver applies the query-set policies once, over every partition (queries only in the judgments
   are scored there, as :func:`qrelkit.evaluation.core.evaluate_run_batches` scores them), and
   :func:`qrelkit.evaluation.results.assemble` builds the Results, means included.

A bad row is reported by the partition that finds it as a value, and the driver raises the same
:class:`~qrelkit.errors.QrelkitError` a local evaluation raises (the first by line when several partitions
find one), naming the file and its line, or the frame and its row.

Row order (the ``line`` of each row, which the ``file_order`` tie convention and error messages use): a
``line`` column when the input has one; in one Parquet file, its rows in stored order (numbered from
Parquet's row index, with no job to count them); in a Parquet folder, its files in the order of their paths and the
rows of each file in stored order; in a DataFrame or a table, the order in which Spark enumerates its
partitions and their rows (1, 2, ... as :func:`qrelkit.data.values.run_from_frame` numbers a frame).

Fingerprints: a file, the SHA-256 of its bytes as locally (``file-bytes``); a folder, the SHA-256 of one
line ``relative/path<TAB>sha256-of-its-bytes`` per data file, in the order of the paths (``folder-files``;
files whose name starts with ``_`` or ``.`` are not data); a DataFrame or table, the SHA-256 of one line
``query_id<TAB>sha256`` per query in query order, where each query's digest is over its rows (after the
duplicate policy) as ``query_id<TAB>doc_id<TAB>score`` lines sorted (``canonical-rows-per-query``). A
catalog table or a remote folder the driver cannot read gets the per-query fingerprint too.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors as _errors
from ..engine.registry import SPARK, refuse_unclaimed
from ..errors import QrelkitError, ValidationError
from ..fingerprint import Fingerprint, file_sha256
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import Measure, parse_measures
from ..naming import check_run_names
from .core import check_gains
from .results import Results, RunValues, assemble
from .spark_tasks import _JUDGED, _evaluator, _task_queries

if TYPE_CHECKING:
    from .plan import ReadingPlan

__all__ = [
    "INSTALL_HINT",
    "SparkInput",
    "copartitioned",
    "evaluate",
    "evaluate_planned",
    "folder_fingerprint",
    "read_input",
    "require_pyspark",
    "session",
]

#: What to do when pyspark is missing.
INSTALL_HINT = "pip install 'qrelkit[spark]' (pyspark 4.0 or later; Java 17 or 21 on the machine)"

#: The columns of what each partition returns (one row per query, per chunk's counts, or per error).
_OUT_SCHEMA = (
    "kind string, run string, query_id string, vals array<double>, undef array<boolean>, "
    "tied array<boolean>, digest string, rows long, removed long, error string, first long"
)


def require_pyspark() -> Any:
    """The pyspark module, or an error that says how to install it."""
    try:
        import pyspark
    except ImportError:
        raise QrelkitError(
            "the Spark engine needs pyspark, which is not installed", fix=INSTALL_HINT
        ) from None
    return pyspark


def session(master: str = "local[*]", *, shuffle_partitions: int | None = None, **conf: str) -> Any:
    """A Spark session for qrelkit: Arrow on, the UI off, the driver bound to loopback in local mode.

    An active session is returned as it is (its master and settings are the cluster's)."""
    require_pyspark()
    import os
    import sys

    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName("qrelkit")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    if master.startswith("local"):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class SparkInput:
    """Judgments or a run as Spark reads them: the frame with qrelkit's column names and a ``line``
    column, where it came from, and its fingerprint when the driver can compute it from files."""

    frame: Any  # pyspark DataFrame: query_id, doc_id, score|grade, [rank], [tag], line
    label: str  # the source errors and provenance name
    name: str  # the run's name when the rows carry no tag (the qrels' name for judgments)
    fingerprint: Fingerprint | None = None  # None: per query, from the rows
    files: tuple[tuple[str, int], ...] = ()  # (file, its first line) when the rows come from several files
    local: Any = None  # a Qrels or Run read on the driver by qrelkit's own readers (files only)
    #: one Parquet file on a path the driver reads, without a ``line`` column: the path, and its columns
    #: as (name in the file, qrelkit's name), which tasks may read themselves (:func:`_direct_tasks`)
    parquet: tuple[str, tuple[tuple[str, str], ...]] | None = None


def read_input(
    spark: Any,
    source: Any,
    kind: str,
    *,
    input_format: str = "auto",
    name: str | None = None,
    on_duplicate: str = "error",
    scale: Sequence[int] | None = None,
    comments: bool = False,
) -> SparkInput:
    """``source`` (a Spark DataFrame, a path to a TREC, JSONL, CSV, TSV or Parquet file, a Parquet folder,
    or a catalog table's name) as a :class:`SparkInput`; ``kind`` is ``"run"`` or ``"qrels"``.
    ``comments`` skips lines beginning with ``#`` in TREC files (read on the driver)."""
    value = "score" if kind == "run" else "grade"
    if isinstance(source, SparkInput):
        return source
    if not isinstance(source, (str, Path)):
        label = f"Spark DataFrame {name or kind!r}"
        return SparkInput(_renamed(source, value, label, with_line=True), label, name or kind)
    path = Path(source)
    if path.exists() and not path.is_dir():  # a FIFO or a device refused, a file past its bound too
        from ..formats.inputs import check_input

        check_input(path, kind)
    if path.is_file() and not (path.suffix.lower() == ".parquet" and kind == "run"):
        return _read_file(spark, path, kind, input_format, name, on_duplicate, scale, comments)
    if path.exists() or "://" in str(source):
        return _read_parquet(spark, str(source), value, name or path.stem or kind)
    if _table_exists(spark, str(source)):
        label = f"table {source}"
        frame = spark.table(str(source))
        return SparkInput(_renamed(frame, value, label, with_line=True), label, name or str(source))
    raise _errors.InputFormatError(
        f"no such file, folder or table: {source}",
        expected="a TREC/Parquet file, a Parquet folder or a table in Spark's catalog",
        fix="check the path or the table's name",
    )


def _table_exists(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # not a table name at all (a path that does not exist, say): Spark's parse error
        return False


def _read_file(
    spark: Any,
    path: Path,
    kind: str,
    input_format: str,
    name: str | None,
    on_duplicate: str,
    scale: Sequence[int] | None,
    comments: bool = False,
) -> SparkInput:
    """A file read and validated on the driver by qrelkit's own readers, handed to Spark as Arrow."""
    from ..formats import read_qrels, read_run

    if kind == "qrels":
        qrels = read_qrels(
            path, format=input_format, name=name, scale=scale, on_duplicate=on_duplicate, comments=comments
        )
        return SparkInput(None, str(path), qrels.name, qrels.fingerprint, local=qrels)
    run = read_run(path, format=input_format, name=name, on_duplicate=on_duplicate, comments=comments)
    frame = spark.createDataFrame(run.frame.to_pandas(use_pyarrow_extension_array=False))
    return SparkInput(frame, str(path), run.name, run.fingerprint, local=run)


def _renamed(frame: Any, value: str, label: str, *, with_line: bool) -> Any:
    """The frame with qrelkit's column names (the aliases of :data:`qrelkit.data.values.COLUMN_ALIASES`, checked
    by :func:`qrelkit.data.values.rename_columns`) and a ``line`` column."""
    import polars as pl

    from ..data.values import rename_columns

    present = [c for c in frame.columns if c != "line"]
    probe = pl.DataFrame(schema={c: pl.String for c in present})
    renamed = rename_columns(probe, ("query_id", "doc_id", value), label).columns
    keep = {"query_id", "doc_id", value, "rank", "tag"}
    from pyspark.sql import functions as F

    cols = [F.col(f"`{a}`").alias(b) for a, b in zip(present, renamed, strict=True) if b in keep]
    if "line" in frame.columns:
        return frame.select(*cols, F.col("line").cast("long").alias("line"))
    out = frame.select(*cols)
    return _numbered(out) if with_line else out


def _numbered(frame: Any) -> Any:
    """``line`` = 1, 2, ... in the order Spark enumerates the frame's partitions and rows (one pass that
    counts each partition's rows, then offsets: no sort, no single partition)."""
    from pyspark.sql import functions as F

    tagged = frame.withColumn("__pid", F.spark_partition_id()).withColumn(
        "__mid", F.monotonically_increasing_id()
    )
    counts = sorted(tagged.groupBy("__pid").count().collect())
    offsets, total = [], 0
    for pid, n in counts:
        offsets += [F.lit(int(pid)), F.lit(total)]
        total += int(n)
    if not offsets:
        return frame.withColumn("line", F.lit(None).cast("long"))
    base = F.create_map(*offsets)[F.col("__pid")]
    within = F.col("__mid") - F.shiftleft(F.col("__pid").cast("long"), 33)
    return tagged.withColumn("line", base + within + 1).drop("__pid", "__mid")


def _read_parquet(spark: Any, source: str, value: str, name: str) -> SparkInput:
    """A Parquet file or folder: rows numbered in the order of the files' paths, then stored order."""
    from pyspark.sql import functions as F

    raw = spark.read.parquet(source)
    meta = raw.select(
        "*", F.col("_metadata.file_path").alias("__file"), F.col("_metadata.row_index").alias("__row")
    )
    path = Path(source)
    frame = _renamed(raw, value, source, with_line=False)
    firsts: list[tuple[str, int]] = []
    if path.is_file():  # one file: its lines are its stored rows, 1, 2, ...; no job to count them
        if "line" not in raw.columns:
            numbered = meta.withColumn("line", F.col("__row") + 1)
            frame = _renamed(numbered.drop("__file", "__row"), value, source, with_line=False)
    else:  # a folder: each file's rows counted by a job, then numbered on from the files before it
        counts = sorted((str(f), int(n)) for f, n in meta.groupBy("__file").count().collect())
        total, pairs = 0, []
        for file, n in counts:
            firsts.append((file, total + 1))
            pairs += [F.lit(file), F.lit(total)]
            total += n
        if "line" not in raw.columns:
            line = F.create_map(*pairs)[F.col("__file")] + F.col("__row") + 1 if pairs else F.lit(None)
            numbered = meta.withColumn("line", line)
            frame = _renamed(numbered.drop("__file", "__row"), value, source, with_line=False)
    fingerprint = None
    if path.is_file():
        fingerprint = Fingerprint(file_sha256(path), "file-bytes", source)
    elif path.is_dir():
        fingerprint = folder_fingerprint(path)
    shown = [(_local_path(f), first) for f, first in firsts] if len(firsts) > 1 else []
    direct = None
    if path.is_file() and "line" not in raw.columns:
        direct = (str(path), _column_pairs(raw.columns, value, source))
    return SparkInput(frame, source, name, fingerprint, tuple(shown), parquet=direct)


def _column_pairs(columns: Sequence[str], value: str, label: str) -> tuple[tuple[str, str], ...]:
    """(name in the input, qrelkit's name) of the columns :func:`_renamed` keeps."""
    import polars as pl

    from ..data.values import rename_columns

    present = [c for c in columns if c != "line"]
    probe = pl.DataFrame(schema={c: pl.String for c in present})
    renamed = rename_columns(probe, ("query_id", "doc_id", value), label).columns
    keep = {"query_id", "doc_id", value, "rank", "tag"}
    return tuple((a, b) for a, b in zip(present, renamed, strict=True) if b in keep)


def _local_path(uri: str) -> str:
    """A path as Spark reports it (``file:/a%20b/c``), as the user wrote it (``/a b/c``)."""
    from urllib.parse import unquote

    return "/" + unquote(uri[len("file:") :]).lstrip("/") if uri.startswith("file:") else uri


def folder_fingerprint(folder: Path) -> Fingerprint:
    """SHA-256 over ``relative/path<TAB>sha256`` lines of a folder's data files in path order."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts)
    )
    text = "".join(f"{p.relative_to(folder).as_posix()}\t{file_sha256(p)}\n" for p in files)
    return Fingerprint(hashlib.sha256(text.encode()).hexdigest(), "folder-files", str(folder))


def _qrels_on_driver(item: SparkInput, scale: Sequence[int] | None, on_duplicate: str) -> Any:
    """Judgments as a :class:`qrelkit.data.values.Qrels`, validated by the same functions as locally."""
    import polars as pl

    from ..data.values import Qrels, canonical_fingerprint, finish_qrels, id_column

    if item.local is not None:
        return item.local
    table = pl.from_arrow(item.frame.toArrow())
    assert isinstance(table, pl.DataFrame)  # a table converts to a DataFrame, a column to a Series
    frame = table.sort("line")
    label = item.label
    try:
        frame = id_column(id_column(frame, "query_id", label), "doc_id", label)
        qrels = finish_qrels(
            frame, Fingerprint("", "", label), item.name, label, scale, on_duplicate, "on_duplicate="
        )
    except QrelkitError as exc:
        raise _in_file(exc, item) from None
    fp = item.fingerprint or canonical_fingerprint(qrels.frame, ["query_id", "doc_id", "grade"], label)
    return Qrels(qrels.frame, fp, qrels.name, qrels.scale, None, qrels.meta)


def _in_file(exc: QrelkitError, item: SparkInput) -> QrelkitError:
    """An error whose line counts rows across several files, restated with the file and its own line."""
    if not item.files or exc.line is None or exc.source != item.label:
        return exc
    i = bisect_right([first for _, first in item.files], exc.line) - 1
    if i < 0:
        return exc
    file, first = item.files[i]
    return type(exc)(
        exc.problem, source=file, line=exc.line - first + 1, got=exc.got, expected=exc.expected, fix=exc.fix
    )


# ----------------------------------------------------------------------------------------- partitions

#: Judgments of more rows than this are co-partitioned with the runs by query id (a shuffle of both
#: before the kernels) instead of broadcast whole to every task; a Spark conf of this name overrides it.
BROADCAST_ROWS = 10_000_000
BROADCAST_CONF = "spark.qrelkit.judgments.broadcastMaxRows"

#: ``false`` in the session turns off the tasks' own reading of one Parquet file (:func:`_direct_tasks`):
#: Spark then scans and shuffles it as every other input (the same floats).
TASKS_READ_CONF = "spark.qrelkit.parquet.readByTasks"


def _raise(rows: list[dict[str, Any]], item: SparkInput) -> None:
    """Raise the first error (by line) that partitions reported, as the error class they raised."""
    if not rows:
        return
    found = [json.loads(r["error"]) for r in rows]
    first = min(found, key=lambda e: (e["line"] is None, e["line"] or 0, e["problem"]))
    cls = getattr(_errors, first["class"], QrelkitError)
    if not (isinstance(cls, type) and issubclass(cls, QrelkitError)):
        cls = QrelkitError
    exc = cls(
        first["problem"],
        source=first["source"],
        line=first["line"],
        got=first["got"],
        expected=first["expected"],
        fix=first["fix"],
    )
    raise _in_file(exc, item)


# ------------------------------------------------------------------------------------------- evaluate


def evaluate(
    spark: Any,
    qrels: Any,
    runs: Any,
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    input_format: str = "auto",
    on_duplicate: str | None = None,
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
    partitions: int | None = None,
    max_records_per_batch: int | None = None,
    refusals: bool = True,
    comments: bool | None = None,
    broadcast_rows: int | None = None,
) -> Results:
    """Evaluate runs against judgments on Spark; the same :class:`Results` as :func:`qrelkit.evaluate`.

    ``qrels`` and each run are a Spark DataFrame, a path (TREC text or another file qrelkit reads, a
    Parquet file or folder) or a table's name (see :func:`read_input`); ``runs`` is one of them, a list,
    or a mapping from run name to one of them. A run's rows may carry a ``tag`` (or ``run``) column:
    each tag is then a run of its own (a lake partitioned by run). ``partitions`` is the number of
    partitions runs are spread over (default: ``spark.sql.shuffle.partitions``);
    ``max_records_per_batch`` the Arrow batch size handed to each partition (default: Spark's).
    ``refusals`` (on by default, as :func:`qrelkit.evaluate` always does) applies the profile's refusals
    (:meth:`qrelkit.measures.profiles.Profile.check`): the judgments' on the driver, each query's in its partition.
    ``on_duplicate`` and ``comments`` left at ``None`` take the profile's reader options, as
    :func:`qrelkit.evaluation.files.evaluate_files` does (:func:`qrelkit.evaluation.plan.plan_reading`).
    ``broadcast_rows``: judgments of more rows than this are co-partitioned with each run by query id (both
    shuffled, each query's judgments beside its rows) instead of broadcast whole to every task (default:
    the Spark conf ``spark.qrelkit.judgments.broadcastMaxRows``, else :data:`BROADCAST_ROWS`, 10^7).
    """
    from .plan import Inputs, ReaderOptions, plan_reading

    reader = ReaderOptions.given(input_format, on_duplicate, comments, scale, rubric_hash)
    # the judgments and runs are handed to the evaluation as given (DataFrames, paths or tables): the inputs
    # carry what the plan needs, and a name that is no file is the reader's error, as for any other input
    inputs = Inputs.build(None, (), parse_measures(measures), conventions or DEFAULT, reader, engine="spark")
    return _evaluate_planned(
        spark, plan_reading(inputs), qrels, runs, partitions, max_records_per_batch, refusals, broadcast_rows
    )


def evaluate_planned(plan: ReadingPlan, *, master: str | None = None) -> Results:
    """``qrelkit eval --engine spark``: ``plan``'s inputs (paths or table names) evaluated on a session for
    ``master`` (the active session when there is one, else ``local[*]``), the profile's refusals applied."""
    require_pyspark()
    spark = session(master or "local[*]")
    assert plan.inputs is not None
    return _evaluate_planned(spark, plan, plan.inputs.qrels, list(plan.inputs.runs), None, None, True)


def _evaluate_planned(
    spark: Any,
    plan: ReadingPlan,
    qrels: Any,
    runs: Any,
    partitions: int | None,
    max_records_per_batch: int | None,
    refusals: bool,
    broadcast_rows: int | None = None,
) -> Results:
    """:func:`evaluate` by ``plan`` (the ``spark`` route of :func:`qrelkit.evaluation.plan.plan_reading`)."""
    assert plan.inputs is not None
    parsed, conv, options = list(plan.inputs.measures), plan.inputs.conventions, plan.options
    input_format, on_duplicate, comments, scale = (
        options.input_format,
        plan.on_duplicate,
        plan.comments,
        options.scale,
    )
    refuse_unclaimed(parsed, SPARK)  # the families Spark's partitions do not compute (REGISTRY)
    require_pyspark()
    q_in = read_input(
        spark, qrels, "qrels", input_format=input_format, on_duplicate=on_duplicate, scale=scale,
        comments=comments,
    )  # fmt: skip
    judgments = _qrels_on_driver(q_in, scale, on_duplicate)
    if options.rubric_hash is not None:
        judgments = judgments.replace(rubric_hash=options.rubric_hash)
    _check_negative(judgments, parsed, conv)
    check_gains(judgments, parsed, conv)  # a grade whose gain overflows: refused as on every engine
    profile = (
        plan.inputs.profile
        if refusals and plan.inputs.profile is not None and plan.inputs.profile.refuses
        else None
    )
    if profile is not None:
        profile.check(judgments, [])
    how: dict[str, Any] = {"input_format": input_format, "on_duplicate": on_duplicate, "comments": comments}
    if isinstance(runs, Mapping):
        inputs = [read_input(spark, r, "run", name=n, **how) for n, r in runs.items()]
    elif isinstance(runs, (list, tuple)):
        inputs = [read_input(spark, r, "run", **how) for r in runs]
    else:
        inputs = [read_input(spark, runs, "run", **how)]
    if not inputs:
        raise ValidationError("no runs to evaluate", fix="pass at least one run")
    shipped, judged = None, None
    if copartitioned(spark, judgments.frame.height, broadcast_rows):  # with each run, by query id
        from pyspark.sql import functions as F

        table = spark.createDataFrame(judgments.frame.to_pandas(use_pyarrow_extension_array=False))
        judged = table.select(
            *[F.col(c).alias(a) for c, a in _JUDGED.items() if c in table.columns], F.lit(0).alias("__side")
        )
    else:  # one broadcast value, read once per task
        import io

        buffer = io.BytesIO()  # sorted once here, not in every task
        judgments.frame.sort("query_id", "line").write_ipc(buffer)
        shipped = spark.sparkContext.broadcast(buffer.getvalue())
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    if max_records_per_batch is not None:
        spark.conf.set(key, str(max_records_per_batch))
    try:
        pairs = [
            pair
            for item in inputs
            for pair in _evaluate_input(
                spark, judgments, shipped, item, parsed, conv, on_duplicate, partitions, profile, judged
            )
        ]
    finally:
        spark.conf.set(key, before)
        if shipped is not None:
            shipped.unpersist()
    check_run_names([v.name for _, v in pairs], [source for source, _ in pairs])
    return assemble(judgments, parsed, conv, [v for _, v in pairs]).with_reading(plan)


def copartitioned(spark: Any, rows: int, broadcast_rows: int | None = None) -> bool:
    """Whether judgments of ``rows`` rows are co-partitioned with the runs rather than broadcast: past
    ``broadcast_rows``, else past the session's ``spark.qrelkit.judgments.broadcastMaxRows``, else past
    :data:`BROADCAST_ROWS`."""
    limit = broadcast_rows if broadcast_rows is not None else spark.conf.get(BROADCAST_CONF, None)
    if limit is None:
        limit = BROADCAST_ROWS
    try:
        limit = int(limit)
    except ValueError:
        raise ValidationError(
            f"{BROADCAST_CONF} is not a number of rows",
            got=str(limit),
            fix="give a whole number, e.g. 10000000",
        ) from None
    return rows > limit


def _check_negative(qrels: Any, measures: Sequence[Measure], conv: Conventions) -> None:
    """``negative=reject`` refuses negative grades anywhere in the judgments, as locally (the partitions
    see only their own queries' judgments)."""
    from ..engine.encoding.encode import resolve_negative

    for m in measures:
        resolve_negative(qrels, m.conventions(conv))


def _evaluate_input(
    spark: Any,
    qrels: Any,
    shipped: Any,
    item: SparkInput,
    measures: Sequence[Measure],
    conv: Conventions,
    on_duplicate: str,
    partitions: int | None,
    profile: Any,
    judged: Any = None,
) -> list[tuple[str, RunValues]]:
    """Every run an input holds (one per tag), as (source, values); ``judged``, when given, the judgments
    as a DataFrame in the columns of :data:`_JUDGED`, co-partitioned with the run's rows by query id."""
    from pyspark.sql import functions as F

    frame = item.frame
    tag = F.col("tag").cast("string") if "tag" in frame.columns else F.lit(None).cast("string")
    frame = frame.withColumn("tag", tag)
    if item.local is not None:
        frame = frame.withColumn("tag", F.lit(item.name))
    n = partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
    digest = item.fingerprint is None
    out = None
    direct = _direct_tasks(spark, item, n)
    if direct is not None:  # tasks that read their own rows: no scan into Spark's rows, no shuffle of them
        tasks = len(direct[2]) - 1
        numbers = spark.range(0, tasks, 1, tasks)
        if judged is None:
            fn = _evaluator(shipped, measures, conv, item, on_duplicate, digest, profile, direct=direct)
        else:  # each task's queries' judgments routed to it: the queries it reads listed by a first pass
            schema = {c: t for c, t in qrels.frame.schema.items() if c in _JUDGED}
            fn = _evaluator(None, measures, conv, item, on_duplicate, digest, profile, schema, direct)
            owned = numbers.mapInArrow(_task_queries(direct), "__key string, __task long")
            routed = judged.join(owned, "__key")
            every = numbers.select(F.col("id").alias("__task"))  # a task whose queries nobody judged runs too
            numbers = routed.unionByName(every, allowMissingColumns=True).repartition(tasks, "__task")
        try:
            out = _collect(numbers, fn, item)
        except QrelkitError:  # the executors could not read the file: Spark's reader says why, or reads it
            out = None
        keys = [(r["run"], r["query_id"]) for r in out or () if r["kind"] == "query"]
        # not grouped by query, or a row to refuse: shuffled as every other input (the same error)
        if out is not None and (any(r["kind"] == "error" for r in out) or len(set(keys)) < len(keys)):
            out = None
    if out is None and judged is None:
        fn = _evaluator(shipped, measures, conv, item, on_duplicate, digest, profile)
        spread = frame.repartition(n, "tag", "query_id").sortWithinPartitions("tag", "query_id", "line")
        out = _collect(spread, fn, item)
    elif out is None:  # every query's judgments and run rows in one partition, the judgments first
        schema = {c: t for c, t in qrels.frame.schema.items() if c in _JUDGED}
        fn = _evaluator(None, measures, conv, item, on_duplicate, digest, profile, schema)
        rows = frame.withColumn("__key", F.col("query_id").cast("string")).withColumn("__side", F.lit(1))
        both = rows.unionByName(judged, allowMissingColumns=True)
        spread = both.repartition(n, "__key").sortWithinPartitions("__key", "__side", "tag", "line")
        out = _collect(spread, fn, item)
    _raise([r for r in out if r["kind"] == "error"], item)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in out:
        by_run.setdefault(row["run"], []).append(row)
    if not by_run:  # a run with no rows
        by_run[item.name] = []
    results = []
    for name in sorted(by_run):
        rows = by_run[name]
        results.append((item.label, _run_values(qrels, name, rows, item, measures, conv, on_duplicate)))
    return results


def _collect(frame: Any, fn: Any, item: SparkInput) -> list[dict[str, Any]]:
    """What ``fn`` returns over ``frame``'s partitions (``mapInArrow``), as rows on the driver."""
    try:
        out: list[dict[str, Any]] = frame.mapInArrow(fn, _OUT_SCHEMA).toArrow().to_pylist()
    except Exception as exc:  # Spark's own failures (a lost executor, a file gone): one line, not Java's
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise QrelkitError(
            f"the Spark job evaluating {item.label} failed: {first.strip()[:300]}",
            source=item.label,
            fix="check the input and the cluster (Spark's log has the details)",
        ) from None
    return out


def _direct_tasks(
    spark: Any, item: SparkInput, n: int
) -> tuple[str, tuple[tuple[str, str], ...], tuple[int, ...], int] | None:
    """How ``n`` tasks read a Parquet file's rows themselves (:func:`_owned_chunks`): (path, columns, each
    task's first row and the end, rows per Arrow batch), or ``None`` when the input is not one Parquet
    file the driver reads (a folder, a table, a frame: Spark reads those) or holds a column of a type
    Spark might read otherwise than pyarrow, or the session's ``spark.qrelkit.parquet.readByTasks`` is
    ``false``."""
    if item.parquet is None or item.local is not None:
        return None
    if str(spark.conf.get(TASKS_READ_CONF, "true")).strip().lower() == "false":
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, pairs = item.parquet
    try:
        file = pq.ParquetFile(path)
    except (OSError, pa.ArrowException):
        return None  # Spark's reader reports it
    schema, rows = file.schema_arrow, file.metadata.num_rows
    for name, ours in pairs:
        kind = schema.field(name).type
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        fits = {
            "query_id": text or pa.types.is_integer(kind),
            "doc_id": text or pa.types.is_integer(kind),
            "score": pa.types.is_floating(kind) or pa.types.is_integer(kind),
            "rank": pa.types.is_integer(kind),
            "tag": text,
        }[ours]
        if not fits:
            return None
    if not rows:
        return None
    tasks = max(1, min(n, rows))
    bounds = tuple(rows * i // tasks for i in range(tasks + 1))
    batch = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"))
    return path, pairs, bounds, batch if batch > 0 else rows


def _run_values(
    qrels: Any,
    name: str,
    rows: list[dict[str, Any]],
    item: SparkInput,
    measures: Sequence[Measure],
    conv: Conventions,
    on_duplicate: str,
) -> RunValues:
    """One run's values from its partitions' rows, with the query-set policies applied once, as
    :func:`qrelkit.evaluation.core.evaluate_run_batches` applies them."""
    import polars as pl

    from ..data.values import RUN_SCHEMA, Qrels, Run
    from ..engine.encoding.encoded import query_set
    from .core import evaluate_run

    queries = [r for r in rows if r["kind"] == "query"]
    seen = {r["query_id"] for r in queries}
    # the run's queries by their first line (summation=run_order), the earliest where rows of one query
    # came from several partitions
    first = sorted((-1 if r.get("first") is None else r["first"], r["query_id"]) for r in queries)
    in_order = list(dict.fromkeys(q for _, q in first))
    judged_set = set(qrels.frame.get_column("query_id").unique().to_list())
    # the query set's rule, applied once over all partitions (before the empty rankings are scored)
    policy = query_set(sorted(judged_set), in_order, sorted(seen - judged_set), conv, name, item.label)
    scored = [r for r in queries if r["vals"] is not None]
    ids = [r["query_id"] for r in scored]
    value_parts = [np.array([r["vals"][j] for r in scored], dtype=np.float64) for j in range(len(measures))]
    undefined_parts = [np.array([r["undef"][j] for r in scored], dtype=bool) for j in range(len(measures))]
    missing = policy.missing_scored_zero
    if missing:
        sub = Qrels(qrels.frame.filter(pl.col("query_id").is_in(missing)), qrels.fingerprint, qrels.name)
        empty = Run(pl.DataFrame(schema=dict(RUN_SCHEMA)), Fingerprint("", "", ""), "empty")
        zero_q, zero_v = evaluate_run(sub, empty, measures, conv, SPARK)
        ids += zero_q.query_ids
        for j, m in enumerate(measures):
            value_parts[j] = np.concatenate([value_parts[j], zero_v[m][0]])
            undefined_parts[j] = np.concatenate([undefined_parts[j], zero_v[m][1]])
    order = np.argsort(np.array(ids, dtype=object), kind="stable") if ids else np.zeros(0, dtype=np.int64)
    assert [ids[i] for i in order] == policy.query_ids  # every scored query, once
    values = {m: (value_parts[j][order], undefined_parts[j][order]) for j, m in enumerate(measures)}
    tie_order = {
        str(m): tuple(sorted(r["query_id"] for r in scored if r["tied"] and r["tied"][j]))
        for j, m in enumerate(measures)
    }
    if item.local is not None:
        fingerprint, meta = item.local.fingerprint, dict(item.local.meta)
    else:
        fingerprint = item.fingerprint or _digest_fingerprint(queries, item.label)
        counts = [r for r in rows if r["kind"] == "count"]
        meta = {
            "source": item.label,
            "duplicates_removed": sum(int(r["removed"]) for r in counts),
            "on_duplicate": on_duplicate,
            "rows_read": sum(int(r["rows"]) for r in counts),
            "reader": "spark",
        }
    found = {m: ids for m, ids in tie_order.items() if ids}
    return RunValues(name, fingerprint, meta, policy, values, found)


def _digest_fingerprint(queries: list[dict[str, Any]], label: str) -> Fingerprint:
    pairs = sorted((r["query_id"], r["digest"]) for r in queries)
    text = "".join(f"{q}\t{d}\n" for q, d in pairs)
    return Fingerprint(hashlib.sha256(text.encode()).hexdigest(), "canonical-rows-per-query", label)
