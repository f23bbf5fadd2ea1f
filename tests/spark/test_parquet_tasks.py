"""One Parquet file read by the tasks themselves (pyarrow, no scan into Spark's rows, no shuffle): every
row read by exactly one task, in whole stretches of one (tag, query); on Spark, the local engine's floats
for a file grouped by query (read by the tasks) and for the same rows in no order (shuffled as before)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qrelkit.data.values import qrels_from_frame, run_from_frame
from qrelkit.errors import QrelkitError
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.spark import TASKS_READ_CONF, _direct_tasks, read_input
from qrelkit.evaluation.spark import evaluate as spark_evaluate
from qrelkit.evaluation.spark_tasks import _owned_chunks, _task_queries

from .test_engine import TIE_MEASURES, assert_bit_identical, generated

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

PAIRS = (("qid", "query_id"), ("docno", "doc_id"), ("score", "score"), ("tag", "tag"))


def _keys(table: pa.Table) -> list[tuple[str, str | None]]:
    return list(zip(table.column("query_id").to_pylist(), table.column("tag").to_pylist(), strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_every_row_once_in_whole_stretches(tmp_path, seed):
    """Any file (grouped by query or not), any row groups, tasks and batch sizes: the tasks' chunks hold
    each row once, with its line, and no stretch of one (tag, query) is cut between two chunks."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    qid = np.sort(rng.integers(0, 9, n)) if rng.random() < 0.7 else rng.integers(0, 9, n)
    tags = rng.choice(["a", "b", None], n) if rng.random() < 0.3 else np.full(n, None)
    table = pa.table(
        {
            "qid": pa.array([f"q{q}" for q in qid]),
            "docno": pa.array([f"d{i}" for i in range(n)]),
            "score": pa.array(rng.random(n)),
            "tag": pa.array(tags.tolist(), pa.string()),
        }
    )
    path = tmp_path / "run.parquet"
    pq.write_table(table, path, row_group_size=int(rng.integers(1, 40)))
    tasks = int(rng.integers(1, 9))
    bounds = tuple(n * i // tasks for i in range(tasks + 1))
    batch = int(rng.integers(1, 30))
    chunks = [c for t in range(tasks) for c in _owned_chunks(str(path), PAIRS, bounds, batch, t)]
    lines = [line for c in chunks for line in c.column("line").to_pylist()]
    assert lines == list(range(1, n + 1))
    assert [d for c in chunks for d in c.column("doc_id").to_pylist()] == table.column("docno").to_pylist()
    # the first pass that routes co-partitioned judgments: each task's query ids, as its chunks hold them
    listed = _task_queries((str(path), PAIRS, bounds, batch))([pa.record_batch({"id": list(range(tasks))})])
    routed = sorted((r["__task"], r["__key"]) for b in listed for r in b.to_pylist())
    expected = sorted(
        (t, q)
        for t in range(tasks)
        for q in {
            q for c in _owned_chunks(str(path), PAIRS, bounds, batch, t) for q in c["query_id"].to_pylist()
        }
    )
    assert routed == expected
    keys = list(zip(table.column("qid").to_pylist(), tags.tolist(), strict=True))
    for chunk in chunks:
        first, last = chunk.column("line")[0].as_py(), chunk.column("line")[-1].as_py()
        assert first == 1 or keys[first - 2] != keys[first - 1]  # a stretch begins at its first row
        assert last == n or keys[last] != keys[last - 1]  # and ends at its last


def _runs_file(path, grouped: bool, seed: int = 3) -> pd.DataFrame:
    """The two runs of ``generated`` in one file with a ``tag`` column: grouped by (tag, query) or in
    no order, small row groups."""
    _, runs = generated(seed)
    if not grouped:
        runs = runs.sample(frac=1.0, random_state=seed)
    else:
        runs = runs.sort_values(["tag", "query_id"], kind="stable")
    runs = runs.reset_index(drop=True)
    pq.write_table(pa.Table.from_pandas(runs, preserve_index=False), path, row_group_size=37)
    return runs


def test_a_task_inside_one_long_stretch_reads_no_further(tmp_path, monkeypatch):
    """Two queries of 20,000 rows each and 20 tasks: most tasks' rows lie inside a stretch begun before
    them, and each stops at its own rows' end instead of reading on to the next query."""
    n = 40_000
    table = pa.table(
        {
            "qid": pa.array(["q1"] * (n // 2) + ["q2"] * (n // 2)),
            "docno": pa.array([f"d{i}" for i in range(n)]),
            "score": pa.array(np.linspace(1.0, 0.0, n)),
            "tag": pa.array([None] * n, pa.string()),
        }
    )
    path = tmp_path / "run.parquet"
    pq.write_table(table, path, row_group_size=1_000)
    read = []
    iter_batches = pq.ParquetFile.iter_batches

    def counted(self, *args, **kwargs):
        for batch in iter_batches(self, *args, **kwargs):
            read.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counted)
    tasks = 20
    bounds = tuple(n * i // tasks for i in range(tasks + 1))
    chunks = [c for t in range(tasks) for c in _owned_chunks(str(path), PAIRS, bounds, 1_000, t)]
    assert sum(c.num_rows for c in chunks) == n
    # each task reads its own rows (2,000) and, for the two that begin a query, that query's rest
    assert sum(read) <= 20 * 3_000 + 2 * n // 2, sum(read)


@pytest.mark.parametrize(
    ("grouped", "broadcast_rows"), [(True, None), (False, None), (True, 10), (False, 10)]
)
def test_a_parquet_file_grouped_or_not_gives_the_local_floats(spark, tmp_path, grouped, broadcast_rows):
    """Judgments broadcast, or past a limit set low (10 rows): co-partitioned, routed to the tasks that
    read their queries (grouped) or shuffled with the run (not grouped)."""
    path = tmp_path / "run.parquet"
    runs = _runs_file(path, grouped)
    qrels, _ = generated(3)
    item = read_input(spark, str(path), "run")
    assert _direct_tasks(spark, item, 5) is not None  # offered to the tasks; taken when grouped
    spark.conf.set(TASKS_READ_CONF, "false")
    try:
        assert _direct_tasks(spark, item, 5) is None  # the session turned it off
    finally:
        spark.conf.unset(TASKS_READ_CONF)
    local = evaluate(
        qrels_from_frame(qrels),
        [run_from_frame(runs[runs.tag == t].drop(columns="tag"), name=t) for t in ("bm25", "dense")],
        TIE_MEASURES,
    )
    # the local run's lines are its rows in each tag's frame; on Spark the file's: only file_order ties
    # read them, and within one query both keep the file's order
    distributed = spark_evaluate(
        spark, spark.createDataFrame(qrels), str(path), TIE_MEASURES, partitions=5, max_records_per_batch=7,
        broadcast_rows=broadcast_rows,
    )  # fmt: skip
    assert_bit_identical(local, distributed)


def test_a_duplicate_in_a_grouped_file_is_the_shuffled_error(spark, tmp_path):
    """A row to refuse sends the file to the shuffled reading, whose error names the file and row."""
    path = tmp_path / "run.parquet"
    frame = pd.DataFrame(
        {
            "query_id": ["1", "1", "1", "2", "2"],
            "doc_id": ["a", "b", "a", "c", "d"],
            "score": [3.0, 2.0, 1.0, 1.0, 0.5],
        }
    )
    frame.to_parquet(path, index=False, row_group_size=2)
    qrels = spark.createDataFrame(
        pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["a", "c"], "grade": [1, 1]})
    )
    with pytest.raises(QrelkitError) as caught:
        spark_evaluate(spark, qrels, str(path), ["nDCG@10"], partitions=3)
    assert caught.value.source == str(path) and caught.value.line == 3
    assert (
        caught.value.problem
        == "document 'a' appears more than once for query '1' (lines 1, 3; 1 duplicated pair(s) in all)"
    )


@pytest.mark.parametrize("profile", [None, "trec_eval", "sklearn", "gdeval"])
def test_profiles_and_column_aliases_on_a_file_the_tasks_read(spark, tmp_path, profile):
    """A grouped file with integer query ids, aliased columns (qid, docno, run) and a rank column, under
    profiles with and without refusals (sklearn refuses a query with one returned document, gdeval
    non-numeric ids: these ids are numeric, so it evaluates): the local engine's floats or its error."""
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.measures.conventions import Conventions

    rng = np.random.default_rng(5)
    rows = [
        (q, f"d{d}", float(rng.choice([0.5, 1.0, 1.5])), r + 1, "bm25")
        for q in (101, 102, 103, 104)
        for r, d in enumerate(rng.choice(30, size=1 if q == 104 else 12, replace=False))
    ]
    run = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank", "run"])
    path = tmp_path / "run.parquet"
    pq.write_table(pa.Table.from_pandas(run, preserve_index=False), path, row_group_size=5)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text(
        "".join(f"{q} 0 d{d} {d % 3}\n" for q in (101, 102, 103, 104) for d in range(0, 30, 2))
    )
    conv = Conventions.from_profile(profile) if profile else None
    measures = ["nDCG@10", "AP", "RR"]
    item = read_input(spark, str(path), "run")
    assert _direct_tasks(spark, item, 3) is not None

    def outcome(call):
        try:
            results = call()
        except QrelkitError as exc:
            return str(exc)
        return [(r.name, {m: r.values[m].tobytes() for m in results.measure_names}) for r in results.runs]

    local = outcome(lambda: evaluate_files(qrels_path, [path], measures, conv))
    on_spark = outcome(
        lambda: spark_evaluate(spark, str(qrels_path), str(path), measures, conv, partitions=3)
    )
    assert on_spark == local
    assert isinstance(local, str) == (profile == "sklearn")  # query 104 returns one document
