"""What each task of the Spark engine runs (:mod:`qrelkit.evaluation.spark`): a partition's Arrow batches, or
the rows a task reads itself from one Parquet file grouped by query, cut into chunks of whole queries, each
run's rows of a chunk evaluated by the small engine (their ids straight from Arrow's buffers,
:func:`qrelkit.formats.arrow.from_arrow`) or, for whatever it steps aside for, by the columnar path, which
raises the errors; out come one row per query (its float64 values, exact in Arrow), the counts, or the error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.registry import SPARK
from ..errors import QrelkitError
from ..fingerprint import Fingerprint
from ..measures.conventions import Conventions
from ..measures.grammar import Measure

#: The judgments' columns as they travel beside a run's rows when co-partitioned (names a run cannot have).
_JUDGED = {"query_id": "__key", "doc_id": "__qdoc", "grade": "__grade", "line": "__qline"}


def _chunks(batches: Iterable[Any], keys: Sequence[str] = ("tag", "query_id")) -> Iterator[Any]:
    """Arrow batches sorted by ``keys`` (tag, query_id) as tables of whole queries: the rows of the last
    query of a batch are carried into the next batch, since that query may go on there. With judgments
    co-partitioned, ``keys`` is (query_id,): a query's judgments and every run's rows for it stay together."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def equal_to_last(column: Any) -> Any:
        last = column[-1]
        return pc.fill_null(pc.equal(column, last), False) if last.is_valid else pc.is_null(column)

    carry = None
    for batch in batches:
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        if table.num_rows == 0:
            continue
        same = equal_to_last(table.column(keys[0]))
        for key in keys[1:]:
            same = pc.and_kleene(same, equal_to_last(table.column(key)))
        cut = table.num_rows - int(pc.sum(same).as_py() or 0)  # sorted: the last query's rows end the table
        if cut:
            yield table.slice(0, cut)
        carry = table.slice(cut)
    if carry is not None and carry.num_rows:
        yield carry


def _error_row(exc: QrelkitError, run: str | None) -> dict[str, Any]:
    fields = {
        "class": type(exc).__name__,
        "problem": exc.problem,
        "source": exc.source,
        "line": exc.line,
        "got": None if exc.got is None else str(exc.got),
        "expected": exc.expected,
        "fix": exc.fix,
    }
    return {"kind": "error", "run": run, "error": json.dumps(fields)}


def _query_digests(frame: Any) -> dict[str, str]:
    """SHA-256 of each query's rows written as sorted ``query_id<TAB>doc_id<TAB>score`` lines."""
    import polars as pl

    rows = frame.select("query_id", "doc_id", "score").sort("query_id", "doc_id", "score")
    text = rows.select(
        pl.format("{}\t{}\t{}", "query_id", "doc_id", pl.col("score").cast(pl.String))
    ).to_series()
    ids = rows.get_column("query_id")
    heads = np.flatnonzero((ids != ids.shift(1)).fill_null(True).to_numpy())
    ends = np.append(heads[1:], rows.height)
    lines = text.to_list()
    return {
        ids[int(a)]: hashlib.sha256(("\n".join(lines[a:b]) + "\n").encode()).hexdigest()
        for a, b in zip(heads.tolist(), ends.tolist(), strict=True)
    }


def _tag_parts(table: Any) -> list[tuple[Any, Any]]:
    """A chunk's rows per tag, as (tag, Arrow table) in the order of the tags (the rows are sorted by tag):
    the whole chunk when it holds one tag (or none), the common case."""
    import pyarrow.compute as pc

    tags = table.column("tag")
    if not len(tags):  # co-partitioned judgments of queries no run has
        return []
    if tags.null_count == len(tags):
        return [(None, table)]
    if tags.null_count == 0:
        ends = pc.min_max(tags)
        if ends["min"] == ends["max"]:
            return [(ends["min"].as_py(), table)]
    import polars as pl

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return [(tag, part.to_arrow()) for (tag,), part in frame.group_by(["tag"], maintain_order=True)]


@dataclass(frozen=True)
class _Judged:
    """Judgments indexed for the small engine (:func:`qrelkit.formats.arrow.from_arrow`): their columns,
    sorted by query then line, and each query's span of rows."""

    columns: Any  # qrelkit.data.columns.Columns
    spans: dict[str, tuple[int, int]]

    @classmethod
    def of(cls, query: Any, doc: Any, grade: Any) -> _Judged:
        from ..formats.arrow import from_arrow

        columns = from_arrow(query, doc, grade, Fingerprint("", "", ""), "qrels", integer=True)
        heads = np.flatnonzero(columns.query_change)
        ends = np.append(heads[1:], columns.rows)[: len(heads)]
        ids = [q.decode() for q in columns.query[heads].tolist()]
        spans = dict(zip(ids, zip(heads.tolist(), ends.tolist(), strict=True), strict=True))
        return cls(columns, spans)

    def of_queries(self, queries: Sequence[str]) -> Any:
        """The judgments of ``queries`` (sorted), in the same order."""
        rows = [np.arange(*self.spans[q]) for q in queries]
        return self.columns.take(np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))


def _evaluator(
    qrels_ipc: Any,
    measures: Sequence[Measure],
    conv: Conventions,
    item: Any,  # qrelkit.evaluation.spark.SparkInput
    on_duplicate: str,
    digest: bool,
    profile: Any = None,
    qrels_schema: Mapping[str, Any] | None = None,
    direct: tuple[str, tuple[tuple[str, str], ...], tuple[int, ...], int] | None = None,
) -> Any:
    """The function ``mapInArrow`` runs on each partition (everything it needs travels in its closure).

    ``qrels_ipc`` is the judgments' broadcast (Arrow IPC, sorted by query id then line); ``None`` when they
    are co-partitioned with the runs instead: each chunk, cut by ``__key`` (the query id as text), then holds
    its queries' judgments (``__side`` 0, in the columns of :data:`_JUDGED`) before their run rows
    (``__side`` 1). ``direct`` (a Parquet file's path, its columns, the tasks' first rows and the rows of
    an Arrow batch): each partition holds task numbers instead of rows, and each task reads its own rows of
    the file (:func:`_owned_chunks`); with judgments co-partitioned as well, a partition holds, for each
    of its tasks (``__task``), the judgments of the queries that task reads (:func:`_task_queries`) and
    one row with the task's number alone.

    Each run's rows of a chunk go first to the small engine (:mod:`qrelkit.engine.encoding.small`), their
    ids read straight from Arrow's buffers (:func:`qrelkit.formats.arrow.from_arrow`); whatever it steps
    aside for (a row the checks must refuse or a policy must change, a profile's refusals, a family it does
    not compute) goes through :func:`qrelkit.data.values.finish_run` and
    :func:`qrelkit.evaluation.core.evaluate_run`, which raise the errors. The floats are the same either way
    (the property tests hold the small engine to the columnar one)."""
    from ..engine.registry import SMALL, claims

    label, default_name, prepared = item.label, item.name, item.local is not None
    per_batch = conv.with_(missing_queries="skip", extra_queries="skip")
    joined = qrels_ipc is None
    small = profile is None and all(claims(m, SMALL) for m in measures)

    def run_partition(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..errors import StepAside

        fp = Fingerprint("", "", label)
        whole: dict[str, Any] = {}  # the broadcast judgments: Arrow, polars, indexed, each made on first use

        def broadcast_table() -> Any:
            if "table" not in whole:
                whole["table"] = pa.ipc.open_file(pa.BufferReader(qrels_ipc.value)).read_all()
            return whole["table"]

        def broadcast_frame() -> tuple[Any, dict[str, tuple[int, int]]]:
            if "frame" not in whole:
                import polars as pl

                frame = pl.from_arrow(broadcast_table())
                assert isinstance(frame, pl.DataFrame)
                frame = frame.sort("query_id", "line")
                whole["frame"] = (frame, _spans_of(frame))
            return whole["frame"]

        def broadcast_judged() -> _Judged:
            if "judged" not in whole:
                table = broadcast_table()
                whole["judged"] = _Judged.of(table["query_id"], table["doc_id"], table["grade"])
            return whole["judged"]

        def emit(rows: list[dict[str, Any]]) -> Any:
            return pa.RecordBatch.from_pylist(rows, schema=schema)

        def evaluated(chunk: Any, small_judged: Any, columnar_judged: Any) -> Iterator[Any]:
            """A chunk's runs evaluated against judgments that the two functions give."""
            for tag, part in _tag_parts(chunk):
                name = default_name if tag is None else str(tag)
                try:
                    out = None
                    if small:
                        try:
                            out = _small_part(part, name, small_judged(), measures, per_batch, fp, label,
                                              prepared, digest)  # fmt: skip
                        except StepAside:
                            out = None
                    if out is None:
                        qrels_frame, spans = columnar_judged()
                        out = _columnar_part(
                            part, name, qrels_frame, spans, measures, per_batch, fp, label, on_duplicate,
                            prepared, digest, profile,
                        )  # fmt: skip
                except QrelkitError as exc:
                    out = [_error_row(exc, name)]
                yield emit(out)

        def co_judged(qrels_part: Any) -> tuple[Any, Any]:
            """Judgments that came beside the rows, indexed for each path on first use."""
            made: dict[str, Any] = {}

            def small_judged() -> _Judged:
                if "small" not in made:
                    made["small"] = _joined_judged(qrels_part)
                return made["small"]

            def columnar_judged() -> tuple[Any, dict[str, tuple[int, int]]]:
                if "frame" not in made:
                    assert qrels_schema is not None
                    made["frame"] = _joined_frame(qrels_part, qrels_schema)
                return made["frame"]

            return small_judged, columnar_judged

        if direct is not None and joined:  # tasks that read their rows, each beside its queries' judgments
            received = list(batches)
            if not received:  # no task hashed to this partition
                return
            table = pa.Table.from_batches(received)
            tasks = table.column("__task")
            for task in sorted(set(tasks.to_pylist())):
                mine = table.filter(pc.and_(pc.equal(tasks, task), pc.is_valid(table.column("__key"))))
                small_judged, columnar_judged = co_judged(mine)
                for chunk in _owned_chunks(*direct, task):
                    yield from evaluated(chunk, small_judged, columnar_judged)
        elif direct is not None:
            for batch in batches:
                for task in batch.column(0).to_pylist():
                    for chunk in _owned_chunks(*direct, task):
                        yield from evaluated(chunk, broadcast_judged, broadcast_frame)
        elif joined:  # each chunk: its judgments, as the driver validated them, then its run rows
            for chunk in _chunks(batches, ("__key",)):
                side = chunk.column("__side")
                small_judged, columnar_judged = co_judged(chunk.filter(pc.equal(side, 0)))
                rows = chunk.filter(pc.equal(side, 1)).drop_columns(["__side", *_JUDGED.values()])
                yield from evaluated(rows, small_judged, columnar_judged)
        else:
            for chunk in _chunks(batches, ("tag", "query_id")):
                yield from evaluated(chunk, broadcast_judged, broadcast_frame)

    import pyarrow as pa

    schema = pa.schema(
        [
            ("kind", pa.string()),
            ("run", pa.string()),
            ("query_id", pa.string()),
            ("vals", pa.list_(pa.float64())),
            ("undef", pa.list_(pa.bool_())),
            ("tied", pa.list_(pa.bool_())),
            ("digest", pa.string()),
            ("rows", pa.int64()),
            ("removed", pa.int64()),
            ("error", pa.string()),
            ("first", pa.int64()),
        ]
    )
    return run_partition


def _task_queries(direct: tuple[str, tuple[tuple[str, str], ...], tuple[int, ...], int]) -> Any:
    """The function that lists, for each task of ``direct`` (a partition's task numbers), the query ids
    (as text) of the rows it reads (:func:`_owned_chunks`), reading only the query id and tag columns: a
    row ``(__key, __task)`` per query, which routes co-partitioned judgments to the tasks that need them."""
    path, pairs, bounds, batch_rows = direct
    keep = tuple((a, b) for a, b in pairs if b in ("query_id", "tag"))

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = pa.schema([("__key", pa.string()), ("__task", pa.int64())])
        for batch in batches:
            for task in batch.column(0).to_pylist():
                seen: set[str] = set()
                for chunk in _owned_chunks(path, keep, bounds, batch_rows, task):
                    seen.update(pc.unique(pc.cast(chunk.column("query_id"), pa.string())).to_pylist())
                seen.discard(None)
                keys = sorted(seen)
                yield pa.RecordBatch.from_pydict({"__key": keys, "__task": [task] * len(keys)}, schema=schema)

    return run


def _changes(column: Any, before: Any) -> np.ndarray:
    """Whether each value differs from the one before it (``before``: the value before the first, a Python
    value; a null equals a null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    out = np.ones(n, dtype=bool)
    if n > 1:
        a, b = column.slice(1), column.slice(0, n - 1)
        same = pc.or_kleene(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        out[1:] = ~same.to_numpy(zero_copy_only=False)
    if n and before is not _NOTHING:
        out[0] = column[0].as_py() != before
    return out


_NOTHING = object()


def _owned_chunks(
    path: str, pairs: tuple[tuple[str, str], ...], bounds: tuple[int, ...], batch_rows: int, task: int
) -> Iterator[Any]:
    """Task ``task``'s rows of the Parquet file at ``path``, read with pyarrow, as tables of whole
    stretches of one (tag, query id): the stretches that begin in its rows ``bounds[task]`` to
    ``bounds[task + 1]``, with each row's ``line`` (its row index + 1, as :func:`_read_parquet` numbers
    them). A stretch that goes on past the task's last row is read to its end; one that began before its
    first row is left to the task before. In a file grouped by query every query is one stretch, read by
    one task; otherwise a query comes back from several stretches, which the driver sees."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    start, end = bounds[task], bounds[task + 1]
    if start >= end:
        return
    file = pq.ParquetFile(path)
    sizes = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
    firsts = np.concatenate([[0], np.cumsum(sizes)])
    group = int(np.searchsorted(firsts, max(start - 1, 0), side="right")) - 1
    names = [b for _, b in pairs]
    batches = file.iter_batches(
        batch_size=batch_rows, row_groups=range(group, len(sizes)), columns=[a for a, _ in pairs],
        use_threads=False,
    )  # fmt: skip
    row = int(firsts[group])
    last: tuple[Any, Any] = (_NOTHING, _NOTHING)  # the (query id, tag) of the row before this batch
    carry, begun = None, False
    for batch in batches:
        table = pa.Table.from_batches([batch]).rename_columns(names)
        n, first_row = table.num_rows, row
        row += n
        if not n:
            continue
        if "tag" not in names:
            table = table.append_column("tag", pa.nulls(n, pa.string()))
        table = table.append_column("line", pa.array(np.arange(first_row + 1, row + 1), pa.int64()))
        change = _changes(table.column("query_id"), last[0]) | _changes(table.column("tag"), last[1])
        if first_row == 0:
            change[0] = True
        last = (table.column("query_id")[-1].as_py(), table.column("tag")[-1].as_py())
        at = np.arange(first_row, row)
        lo = 0
        if not begun:
            heads = np.flatnonzero(change & (at >= start))
            if not len(heads):
                if row >= end:
                    return  # no stretch begins in this task's rows: one that began before covers them
                continue
            lo, begun = int(heads[0]), True
        stops = np.flatnonzero(change & (at >= end))
        hi = int(stops[0]) if len(stops) else n
        piece = table.slice(lo, hi - lo)
        heads = np.flatnonzero(change[lo:hi])
        if carry is not None:
            piece = pa.concat_tables([carry, piece])
            heads = heads + carry.num_rows
        if len(stops):  # the last stretch ends here
            if piece.num_rows:
                yield piece
            return
        cut = int(heads[-1]) if len(heads) else 0  # the last stretch may go on in the next batch
        if cut:
            yield piece.slice(0, cut)
        carry = piece.slice(cut)
    if carry is not None and carry.num_rows:
        yield carry


def _spans_of(qrels_frame: Any) -> dict[str, tuple[int, int]]:
    """Each query's rows in judgments sorted by query id."""
    if qrels_frame.height == 0:  # a chunk of queries nobody judged
        return {}
    ids = qrels_frame.get_column("query_id")
    heads = np.flatnonzero((ids != ids.shift(1)).fill_null(True).to_numpy())
    ends = np.append(heads[1:], qrels_frame.height)
    return dict(
        zip(ids.gather(heads).to_list(), zip(heads.tolist(), ends.tolist(), strict=True), strict=True)
    )


def _joined_frame(qrels_part: Any, qrels_schema: Mapping[str, Any]) -> tuple[Any, dict[str, tuple[int, int]]]:
    """A chunk's co-partitioned judgments as the driver validated them (polars), sorted by query then line."""
    import polars as pl

    frame = pl.from_arrow(qrels_part)
    assert isinstance(frame, pl.DataFrame)
    qrels_frame = frame.select([pl.col(_JUDGED[c]).cast(t).alias(c) for c, t in qrels_schema.items()]).sort(
        "query_id", "line"
    )
    return qrels_frame, _spans_of(qrels_frame)


def _joined_judged(qrels_part: Any) -> _Judged:
    """A chunk's co-partitioned judgments for the small engine, sorted by query then line."""
    import pyarrow.compute as pc

    order = pc.sort_indices(qrels_part, sort_keys=[("__key", "ascending"), ("__qline", "ascending")])
    table = qrels_part.take(order)
    return _Judged.of(table["__key"], table["__qdoc"], table["__grade"])


def _out_rows(
    name: str,
    queries: Sequence[str],
    values: Mapping[str, tuple[list[float], list[bool]]],
    tied: Mapping[str, list[bool]],
    digests: Mapping[str, str],
    firsts: Mapping[str, int],
    rows: int,
    removed: int,
) -> list[dict[str, Any]]:
    """What a partition returns for one run's rows of a chunk: a row per query, then the counts."""
    out: list[dict[str, Any]] = []
    for q in queries:
        vals, undef = values.get(q, (None, None))
        out.append(
            {
                "kind": "query",
                "run": name,
                "query_id": q,
                "vals": vals,
                "undef": undef,
                "tied": tied.get(q),
                "digest": digests.get(q),
                "first": firsts.get(q),
            }
        )
    out.append({"kind": "count", "run": name, "rows": rows, "removed": removed})
    return out


def _scored(
    scored: Any, per_measure: Any, ties: Any, measures: Sequence[Measure]
) -> tuple[dict[str, tuple[list[float], list[bool]]], dict[str, list[bool]]]:
    """Per query, its values and undefined flags, and whether each measure follows the tool's tie order."""
    values: dict[str, tuple[list[float], list[bool]]] = {}
    for i, q in enumerate(scored.query_ids):
        values[q] = (
            [float(per_measure[m][0][i]) for m in measures],
            [bool(per_measure[m][1][i]) for m in measures],
        )
    tied: dict[str, list[bool]] = {}
    found = ties.queries() if ties is not None else {}
    for j, m in enumerate(measures):
        for q in found.get(str(m), ()):
            tied.setdefault(q, [False] * len(measures))[j] = True
    return values, tied


def _small_part(
    part: Any,
    name: str,
    judged: _Judged,
    measures: Sequence[Measure],
    conv: Conventions,
    fp: Fingerprint,
    label: str,
    prepared: bool,
    digest: bool,
) -> list[dict[str, Any]]:
    """One run's rows of a chunk (Arrow) through the small engine; :class:`~qrelkit.errors.StepAside` for
    anything the columnar path must judge (it raises the errors, applies the duplicate policy)."""
    import pyarrow as pa

    from ..engine.encoding.small import Judgments, evaluate_columns
    from ..errors import StepAside
    from ..formats.arrow import from_arrow
    from .core import tie_order_for

    names = part.column_names
    if "line" not in names:
        raise StepAside
    line = part.column("line")
    if line.null_count or not pa.types.is_integer(line.type):
        raise StepAside
    if not prepared and "rank" in names:  # ranks are checked (not used): integers, none missing
        rank = part.column("rank")
        if rank.null_count or not pa.types.is_integer(rank.type):
            raise StepAside
    run = from_arrow(part.column("query_id"), part.column("doc_id"), part.column("score"), fp, label)
    heads = np.flatnonzero(run.query_change)
    stretch_ids = [q.decode() for q in run.query[heads].tolist()]
    queries = sorted(set(stretch_ids))
    judged_queries = [q for q in queries if q in judged.spans]
    if not judged_queries:
        raise StepAside  # nothing to score: the columnar path checks the rows for duplicates
    firsts: dict[str, int] = {}  # each query's first line: the run's order of its queries
    lines = line.to_numpy()
    for q, first in zip(stretch_ids, np.minimum.reduceat(lines, heads).tolist(), strict=True):
        firsts[q] = min(first, firsts.get(q, first))
    sub = judged.of_queries(judged_queries)
    ties = tie_order_for(conv)
    scored, per_measure = evaluate_columns(sub, Judgments.build(sub), run, measures, conv, tie_order=ties)
    values, tied = _scored(scored, per_measure, ties, measures)
    digests = {}
    if digest:
        import polars as pl

        frame = pl.from_arrow(part.select(["query_id", "doc_id", "score"]))
        assert isinstance(frame, pl.DataFrame)
        digests = _query_digests(frame.with_columns(pl.col("query_id", "doc_id").cast(pl.String)))
    return _out_rows(name, queries, values, tied, digests, firsts, part.num_rows, 0)


def _columnar_part(
    part_table: Any,
    name: str,
    qrels_frame: Any,
    spans: Mapping[str, tuple[int, int]],
    measures: Sequence[Measure],
    conv: Conventions,
    fp: Fingerprint,
    label: str,
    on_duplicate: str,
    prepared: bool,
    digest: bool,
    profile: Any,
) -> list[dict[str, Any]]:
    """One run's rows of a chunk through :func:`qrelkit.data.values.finish_run` (the duplicate policy, the
    checks of scores and ids, with their errors) and :func:`qrelkit.evaluation.core.evaluate_run`."""
    import polars as pl

    from ..data.values import Qrels, Run, finish_run, id_column
    from .core import evaluate_run, tie_order_for

    part = pl.from_arrow(part_table)
    assert isinstance(part, pl.DataFrame)
    part = part.drop("tag")
    if prepared:  # read and validated by qrelkit's readers on the driver
        run = Run(part, fp, name, {"source": label})
        removed = 0
    else:
        part = id_column(id_column(part, "query_id", label), "doc_id", label)
        run = finish_run(part, fp, name, label, on_duplicate, "on_duplicate=")
        removed = int(run.meta["duplicates_removed"])  # type: ignore[call-overload]
    queries = run.frame.get_column("query_id").unique().sort().to_list()
    digests = _query_digests(run.frame) if digest else {}
    firsts: dict[str, int] = {}  # each query's first line: the run's order of its queries
    if "line" in run.frame.columns:
        first_rows = run.frame.group_by("query_id").agg(pl.col("line").min()).iter_rows()
        firsts = {str(q): int(line) for q, line in first_rows}
    judged = [q for q in queries if q in spans]
    values: dict[str, tuple[list[float], list[bool]]] = {}
    tied: dict[str, list[bool]] = {}  # per query, whether each measure follows tie order
    if judged:
        sub = pl.concat([qrels_frame.slice(spans[q][0], spans[q][1] - spans[q][0]) for q in judged])
        if profile is not None:  # the refusals that look at a query's rows
            profile.check(Qrels(sub, fp, meta={"source": "qrels"}), [run])
        ties = tie_order_for(conv)
        scored, per_measure = evaluate_run(Qrels(sub, fp), run, measures, conv, SPARK, tie_order=ties)
        values, tied = _scored(scored, per_measure, ties, measures)
    return _out_rows(name, queries, values, tied, digests, firsts, part_table.num_rows, removed)
