"""A Spark partition's rows through the small engine (Arrow's string buffers straight into its id words)
against the same rows through the columnar path (``finish_run`` and ``evaluate_run``), outside Spark: the
same rows out, floats compared bit for bit; and every value the columnar checks must judge makes the small
engine step aside (the columnar path then raises the error)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from qrelkit.errors import QrelkitError, StepAside
from qrelkit.evaluation.spark_tasks import _columnar_part, _Judged, _small_part, _spans_of
from qrelkit.fingerprint import Fingerprint
from qrelkit.measures.conventions import DEFAULT, Conventions
from qrelkit.measures.grammar import parse_measures

from .test_engine import TIE_MEASURES

FP = Fingerprint("", "", "run.parquet")


def _chunk(seed: int) -> tuple[pa.Table, pl.DataFrame]:
    """A chunk of whole queries as a partition gets it (sorted by query, then line), and judgments sorted
    by query then line: heavy ties (three score values, two equal only in single precision), negative
    grades, queries judged but absent, queries unjudged, ids of several lengths (words past the first)."""
    rng = np.random.default_rng(seed)
    judged = []
    for q in range(12):
        for d in rng.choice(60, size=int(rng.integers(0, 25)), replace=False):
            judged.append((f"q{q:02d}", f"doc-{d:0{1 + q}d}", int(rng.choice([-1, 0, 0, 1, 2, 3]))))
    qrels = pl.DataFrame(judged, schema=["query_id", "doc_id", "grade"], orient="row")
    qrels = qrels.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    qrels = qrels.sort("query_id", "line").select("query_id", "doc_id", "grade", "line")
    rows = []
    for q in [*range(2, 14), 40]:
        for d in rng.choice(60, size=int(rng.integers(1, 40)), replace=False):
            score = float(rng.choice([0.5, 1.0, 1.5]))
            if rng.random() < 0.15:
                score = 2.0 + 1e-12 if rng.random() < 0.5 else 2.0
            rows.append((f"q{q:02d}", f"doc-{d:0{1 + q % 13}d}", score))
    order = rng.permutation(len(rows))  # file order is not score order
    lines = np.empty(len(rows), dtype=np.int64)
    lines[order] = np.arange(1, len(rows) + 1)
    run = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    run = run.with_columns(pl.Series("line", lines), pl.lit("bm25").alias("tag"))
    return run.sort("query_id", "line").to_arrow(), qrels


def _same(a: list[dict], b: list[dict]) -> bool:
    """Rows equal, with every float compared by its bits (NaN included)."""

    def bits(rows: list[dict]) -> list[dict]:
        return [
            {
                k: np.array(v, dtype=np.float64).tobytes() if k == "vals" and v is not None else v
                for k, v in r.items()
            }
            for r in rows
        ]

    return bits(a) == bits(b)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("profile", [None, "trec_eval", "ranx"])
def test_the_small_engine_gives_the_columnar_rows(seed, profile):
    run, qrels = _chunk(seed)
    conv = DEFAULT if profile is None else Conventions.from_profile(profile)
    conv = conv.with_(missing_queries="skip", extra_queries="skip")  # as each partition evaluates
    measures = parse_measures(TIE_MEASURES)
    judged = _Judged.of(*(qrels.to_arrow().column(c) for c in ("query_id", "doc_id", "grade")))
    for digest in (False, True):
        small = _small_part(run, "bm25", judged, measures, conv, FP, "run.parquet", False, digest)
        columnar = _columnar_part(
            run,
            "bm25",
            qrels,
            _spans_of(qrels),
            measures,
            conv,
            FP,
            "run.parquet",
            "error",
            False,
            digest,
            None,
        )
        assert _same(small, columnar)
    queries = [r for r in small if r["kind"] == "query"]
    judged_queries = set(qrels["query_id"].to_list()) & set(run.column("query_id").to_pylist())
    assert len(queries) == 13 and {r["query_id"] for r in queries if r["vals"] is not None} == judged_queries
    assert small[-1] == {"kind": "count", "run": "bm25", "rows": run.num_rows, "removed": 0}


def test_integer_query_ids_are_read_as_their_text():
    qrels = pl.DataFrame(
        {"query_id": ["7", "7", "12"], "doc_id": ["a", "b", "c"], "grade": [1, 2, 1], "line": [1, 2, 3]}
    )
    qrels = qrels.sort("query_id", "line")
    run = pa.table(
        {"query_id": pa.array([7, 7, 12], pa.int64()), "doc_id": ["b", "a", "c"], "score": [2.0, 1.0, 0.5],
         "line": pa.array([1, 2, 3], pa.int64()), "tag": pa.nulls(3, pa.string())}
    )  # fmt: skip
    judged = _Judged.of(*(qrels.to_arrow().column(c) for c in ("query_id", "doc_id", "grade")))
    measures = parse_measures(["RR", "AP"])
    small = _small_part(run, "r", judged, measures, DEFAULT, FP, "x", False, False)
    columnar = _columnar_part(
        run, "r", qrels, _spans_of(qrels), measures, DEFAULT, FP, "x", "error", False, False, None
    )
    assert _same(small, columnar)
    # hand arithmetic: query 7 ranks b (grade 2) then a (grade 1): RR 1, AP (1/1 + 2/2) / 2 = 1
    assert [r["vals"] for r in small if r["kind"] == "query"] == [[1.0, 1.0], [1.0, 1.0]]


def _with(column: str, values: list, kind: pa.DataType | None = None) -> pa.Table:
    base = {
        "query_id": ["q1", "q1", "q1"],
        "doc_id": ["a", "b", "c"],
        "score": [3.0, 2.0, 1.0],
        "rank": pa.array([1, 2, 3], pa.int64()),
        "line": pa.array([1, 2, 3], pa.int64()),
        "tag": pa.nulls(3, pa.string()),
    }
    base[column] = pa.array(values, kind) if kind is not None else values
    return pa.table(base)


HOSTILE = {
    "an empty document id": _with("doc_id", ["a", "", "c"]),
    "a document id of spaces": _with("doc_id", ["a", "  ", "c"]),
    "a space inside an id": _with("doc_id", ["a", "b c", "c"]),
    "a no-break space inside an id": _with("query_id", ["q1", "q\u00a01", "q1"]),
    "a control character inside an id": _with("doc_id", ["a", "b\x85", "c"]),
    "an id past 512 bytes": _with("doc_id", ["a", "b" * 513, "c"]),
    "a missing document id": _with("doc_id", ["a", None, "c"], pa.string()),
    "a missing score": _with("score", [3.0, None, 1.0], pa.float64()),
    "a NaN score": _with("score", [3.0, float("nan"), 1.0]),
    "an infinite score": _with("score", [3.0, float("inf"), 1.0]),
    "a score that is not a number": _with("score", ["3", "x", "1"]),
    "a missing rank": _with("rank", [1, None, 3], pa.int64()),
    "floating-point query ids": _with("query_id", [1.0, 1.0, 1.0]),
    "a document given twice": _with("doc_id", ["a", "b", "a"]),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_what_the_checks_must_judge_steps_aside(name):
    """The small engine never judges: it steps aside, and the columnar path raises the error a local
    evaluation of the same rows raises."""
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "grade": [1], "line": [1]})
    judged = _Judged.of(*(qrels.to_arrow().column(c) for c in ("query_id", "doc_id", "grade")))
    measures = parse_measures(["AP"])
    part = HOSTILE[name]
    with pytest.raises(StepAside):
        _small_part(part, "r", judged, measures, DEFAULT, FP, "x", False, False)
    with pytest.raises(QrelkitError):
        _columnar_part(
            part, "r", qrels, _spans_of(qrels), measures, DEFAULT, FP, "x", "error", False, False, None
        )
