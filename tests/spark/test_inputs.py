"""Files, folders and the command line on Spark: TREC text, a Parquet lake partitioned by run, the real
TREC judgments, the same errors as locally, and ``qrelkit eval --engine spark``."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.data.values import qrels_from_frame, run_from_frame
from qrelkit.errors import QrelkitError
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import evaluate_files
from qrelkit.evaluation.spark import evaluate as spark_evaluate
from qrelkit.evaluation.spark import folder_fingerprint
from qrelkit.formats import read_qrels, read_run
from qrelkit.measures.conventions import DEFAULT

from ..conftest import data_path
from .test_engine import assert_bit_identical

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

MEASURES = [
    "nDCG@10",
    "nDCG(ties=file_order)@10",
    "AP(rel=2)",
    "RR(rel=2,ties=docid_desc)",
    "R(rel=2)@100",
    "Judged@10",
]


def trec_run(qrels_path, seed: int) -> pd.DataFrame:
    """A run over real judgments: judged and unjudged documents, scores with many ties."""
    judged = read_qrels(qrels_path).frame.to_pandas()
    rng = np.random.default_rng(seed)
    rows = []
    for q, docs in judged.groupby("query_id", sort=False):
        picked = list(rng.choice(docs.doc_id.to_numpy(), size=min(len(docs), 30), replace=False))
        picked += [f"u{q}-{i}" for i in range(10)]
        for d in picked:
            rows.append((q, d, float(rng.integers(0, 6)) / 2))
    rows.append(("999999", "x", 1.0))  # a query absent from the judgments
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def write_trec(frame: pd.DataFrame, path, tag: str) -> None:
    with open(path, "w") as fh:
        for i, (q, d, s) in enumerate(frame.itertuples(index=False), start=1):
            fh.write(f"{q} Q0 {d} {i} {s!r} {tag}\n")


@pytest.mark.parametrize("name", ["qrels.dl19-passage.txt", "qrels.covid-round1.txt"])
def test_real_trec_judgments_and_a_trec_run_file(spark, tmp_path, name):
    qrels_path = data_path("trec", name)
    run_path = tmp_path / "bm25.run"
    write_trec(trec_run(qrels_path, 1), run_path, "bm25")
    local = evaluate_files(qrels_path, [run_path], MEASURES, DEFAULT)
    distributed = spark_evaluate(
        spark, str(qrels_path), [str(run_path)], MEASURES, DEFAULT, max_records_per_batch=50
    )
    assert_bit_identical(local, distributed)
    assert distributed.provenance()["qrels"] == local.provenance()["qrels"]
    assert distributed.runs[0].fingerprint == local.runs[0].fingerprint  # SHA-256 of the file's bytes


def test_parquet_lake_partitioned_by_run(spark, tmp_path):
    qrels_path = data_path("trec", "qrels.dl20-passage.txt")
    lake = tmp_path / "runs"
    parts = {}
    for tag, seed in [("bm25", 2), ("dense", 3)]:
        frame = trec_run(qrels_path, seed)
        halves = np.array_split(np.arange(len(frame)), 2)
        parts[tag] = frame
        for i, rows in enumerate(halves):
            (lake / f"run={tag}").mkdir(parents=True, exist_ok=True)
            frame.iloc[rows].to_parquet(lake / f"run={tag}" / f"part-{i}.parquet", index=False)
    qrels = read_qrels(qrels_path)
    local = evaluate(qrels, [run_from_frame(parts[t], name=t) for t in ("bm25", "dense")], MEASURES, DEFAULT)
    distributed = spark_evaluate(spark, str(qrels_path), str(lake), MEASURES, DEFAULT, partitions=3)
    assert_bit_identical(local, distributed)
    fingerprint = distributed.runs[0].fingerprint
    assert fingerprint.kind == "folder-files" and fingerprint == folder_fingerprint(lake)
    # the folder's fingerprint by hand: one line per data file, in path order
    import hashlib

    files = sorted(lake.rglob("*.parquet"))
    text = "".join(
        f"{p.relative_to(lake).as_posix()}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in files
    )
    assert fingerprint.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_one_parquet_file_numbers_its_rows_in_stored_order(spark, tmp_path):
    # a single file's lines are its stored rows (no job counts them): row 4 repeats the pair of row 2
    path = tmp_path / "run.parquet"
    frame = pd.DataFrame(
        {"query_id": ["2", "1", "2", "1"], "doc_id": ["c", "a", "d", "a"], "score": [1.0, 2.0, 0.5, 3.0]}
    )
    frame.to_parquet(path, index=False, row_group_size=2)
    qrels = spark.createDataFrame(pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "grade": [1]}))
    with pytest.raises(QrelkitError) as caught:
        spark_evaluate(spark, qrels, str(path), ["nDCG@10"])
    assert caught.value.source == str(path) and caught.value.line == 4
    assert caught.value.problem.startswith("document 'a' appears more than once for query '1'")


def test_a_duplicate_in_a_lake_names_its_file_and_row(spark, tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [1.0, 2.0]}).to_parquet(
        lake / "p0.parquet", index=False
    )
    second = pd.DataFrame({"query_id": ["2", "1", "1"], "doc_id": ["c", "d", "a"], "score": [1.0, 0.5, 3.0]})
    second.to_parquet(lake / "p1.parquet", index=False)
    qrels = spark.createDataFrame(pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "grade": [1]}))
    with pytest.raises(QrelkitError) as caught:
        spark_evaluate(spark, qrels, str(lake), ["nDCG@10"])
    error = caught.value
    # the pair (1, a) is row 1 of p0 and row 3 of p1: the error points at the second
    assert error.source.endswith("p1.parquet") and error.line == 3
    assert error.problem.startswith("document 'a' appears more than once for query '1'")


def test_bad_values_in_a_frame_give_the_local_error(spark):
    qrels = pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["a", "b"], "grade": [1, 1]})
    run = pd.DataFrame(
        {"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "b"], "score": ["1.5", "high", "2"]}
    )
    with pytest.raises(QrelkitError) as here:
        run_from_frame(run)
    with pytest.raises(QrelkitError) as there:
        spark_evaluate(spark, spark.createDataFrame(qrels), spark.createDataFrame(run), ["nDCG@10"])
    assert type(there.value) is type(here.value)
    assert (there.value.problem, there.value.line, there.value.fix) == (
        here.value.problem,
        here.value.line,
        here.value.fix,
    )
    assert there.value.line == 2


def test_extra_queries_reject_and_a_bad_trec_line(spark, tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n2 0 b 2\n")
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2.0 t\n3 Q0 z 1 1.0 t\n")
    with pytest.raises(QrelkitError) as there:
        spark_evaluate(spark, str(qrels), [str(run)], ["nDCG@10"], DEFAULT.with_(extra_queries="reject"))
    with pytest.raises(QrelkitError) as here:
        evaluate(read_qrels(qrels), read_run(run), ["nDCG@10"], DEFAULT.with_(extra_queries="reject"))
    assert str(there.value) == str(here.value)
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 two t\n")
    with pytest.raises(QrelkitError) as there:
        spark_evaluate(spark, str(qrels), [str(run)], ["nDCG@10"])
    with pytest.raises(QrelkitError) as here:
        read_run(run)
    assert str(there.value) == str(here.value) and there.value.line == 2


def test_eval_engine_spark_writes_what_eval_writes(spark, tmp_path):
    qrels_path = data_path("trec", "qrels.dl19-passage.txt")
    run_path = tmp_path / "bm25.run"
    write_trec(trec_run(qrels_path, 4), run_path, "bm25")
    args = [
        "eval",
        str(qrels_path),
        str(run_path),
        "-m",
        "nDCG@10",
        "-m",
        "AP(rel=2)",
        "--profile",
        "trec_eval",
    ]
    runner = CliRunner()
    local = runner.invoke(main, [*args, "-o", str(tmp_path / "local.json")])
    distributed = runner.invoke(main, [*args, "--engine", "spark", "-o", str(tmp_path / "spark.json")])
    assert local.exit_code == 0 and distributed.exit_code == 0, distributed.output
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("local.json", "spark.json"))
    assert a["results"] == b["results"]
    assert (
        a["conventions"] == b["conventions"] and a["measures"] == b["measures"] and a["qrels"] == b["qrels"]
    )
    assert [r["fingerprint"] for r in a["runs"]] == [r["fingerprint"] for r in b["runs"]]


def test_without_pyspark_the_engine_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # what an environment without the extra has
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n")
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2.0 t\n")
    result = CliRunner().invoke(main, ["eval", str(qrels), str(run), "--engine", "spark"])
    assert result.exit_code == 1
    assert "pip install 'qrelkit[spark]'" in result.output and "Traceback" not in result.output


def test_a_table_by_name_and_an_input_that_is_nowhere(spark):
    qrels = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "c"], "grade": [2, 0, 1]})
    run = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["b", "a", "c"], "score": [3.0, 2.0, 1.0]})
    spark.createDataFrame(run).createOrReplaceTempView("qrelkit_test_run")
    distributed = spark_evaluate(spark, spark.createDataFrame(qrels), "qrelkit_test_run", ["RR", "nDCG@10"])
    local = evaluate(qrels_from_frame(qrels), run_from_frame(run, name="qrelkit_test_run"), ["RR", "nDCG@10"])
    assert_bit_identical(local, distributed)
    assert distributed.value("RR", "1") == 0.5  # the relevant document is second
    with pytest.raises(QrelkitError, match=r"no such file, folder or table: /nowhere/run\.parquet"):
        spark_evaluate(spark, spark.createDataFrame(qrels), "/nowhere/run.parquet", ["RR"])


def test_a_profile_refuses_on_spark_what_it_refuses_locally(spark, tmp_path):
    """sklearn's ndcg_score refuses a query with one returned document: checked in the partitions."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n2 Q0 c 1 1.0 t\n")
    args = ["eval", str(qrels), str(run), "-m", "nDCG@10", "--profile", "sklearn"]
    local = CliRunner().invoke(main, args)
    distributed = CliRunner().invoke(main, [*args, "--engine", "spark"])
    assert local.exit_code == distributed.exit_code == 1
    error = [line for line in distributed.output.splitlines() if line.startswith("qrelkit: error:")]
    assert error and error == [
        line for line in local.output.splitlines() if line.startswith("qrelkit: error:")
    ]
    assert "returns 1 document for query '2'" in error[0]
