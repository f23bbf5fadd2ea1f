"""The Spark engine gives the local engine's per-query floats bit for bit (the local engine is checked
against pytrec_eval, trec_eval and the other peers in tests/crosscheck), with the same query-set accounting
and the same errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from qrelkit.data.values import qrels_from_frame, run_from_frame
from qrelkit.errors import ValidationError
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.spark import BROADCAST_CONF, copartitioned
from qrelkit.evaluation.spark import evaluate as spark_evaluate
from qrelkit.measures.conventions import CHOICES, DEFAULT, PROFILE_NAMES, Conventions

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

# every tie policy, and the other ranking axes, as per-measure conventions: one Spark job covers them
TIE_MEASURES = [
    f"{m}(ties={t}){k}"
    for t in CHOICES["ties"]
    for m, k in [("nDCG", "@10"), ("AP", ""), ("RR", ""), ("P", "@5"), ("Rprec", "")]
] + [
    "nDCG(precision=single)@10",
    "AP(precision=single,ties=docid_desc)",
    "nDCG(unjudged=drop)@10",
    "nDCG(negative=zero)@10",
    "nDCG(negative=gain,gain=linear)@10",
    "R@20",
    "Judged@10",
    "NumRelRet",
]


def generated(seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgments and two runs (a ``tag`` column) with heavy ties: scores from three values, two scores
    equal only in single precision, a query of 60 rows (past several Arrow batches), queries only in the
    judgments (j*) and only in the runs (x*), negative grades, queries with nothing relevant."""
    rng = np.random.default_rng(seed)
    judged = [
        (f"q{q:02d}", f"d{d}", int(rng.choice([-1, 0, 0, 1, 2, 3])))
        for q in range(24)
        for d in range(0, 40, 2)
    ]
    judged += [(f"j{q}", f"d{d}", 1) for q in range(3) for d in range(4)]
    judged += [("q_none", f"d{d}", 0) for d in range(5)]
    rows = []
    for tag in ("bm25", "dense"):
        for q in [*range(24), "x0", "x1", "none"]:
            qid = f"q{q:02d}" if isinstance(q, int) else (f"{q}" if q.startswith("x") else "q_none")
            n = 60 if q == 3 else int(rng.integers(1, 30))
            docs = rng.choice(80, size=n, replace=False)
            for d in docs:
                score = float(rng.choice([0.5, 1.0, 1.5]))
                if rng.random() < 0.1:
                    score = 2.0 + 1e-12  # equal to 2.0 in float32, not in float64
                elif rng.random() < 0.1:
                    score = 2.0
                rows.append((qid, f"d{d}", score, tag))
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "grade"])
    runs = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "tag"])
    return qrels, runs


def local_results(qrels: pd.DataFrame, runs: pd.DataFrame, measures, conv: Conventions):
    q = qrels_from_frame(qrels)
    rs = [
        run_from_frame(runs[runs.tag == tag].drop(columns="tag"), name=tag)
        for tag in sorted(runs.tag.unique())
    ]
    return evaluate(q, rs, measures, conv)


def assert_bit_identical(local, distributed) -> None:
    assert [str(m) for m in local.measures] == [str(m) for m in distributed.measures]
    assert local.conventions == distributed.conventions
    assert local.run_names == distributed.run_names
    for a, b in zip(local.runs, distributed.runs, strict=True):
        assert a.queries.query_ids == b.queries.query_ids
        assert a.queries.counts() == b.queries.counts()
        assert a.queries.missing_scored_zero == b.queries.missing_scored_zero
        assert a.queries.missing_skipped == b.queries.missing_skipped
        assert a.queries.extra_skipped == b.queries.extra_skipped
        assert a.undefined == b.undefined
        for m in local.measure_names:
            assert a.values[m].tobytes() == b.values[m].tobytes(), (a.name, m)

    def means(results):
        return [
            (r["run"], r["measure"], np.float64(r["mean"]).tobytes(), r["queries"], r["undefined_skipped"])
            for r in results.summary_rows()
        ]

    assert means(local) == means(distributed)


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_bit_identical_with_ties_split_queries_and_query_set_policies(spark, missing):
    qrels, runs = generated()
    conv = DEFAULT.with_(missing_queries=missing)
    local = local_results(qrels, runs, TIE_MEASURES, conv)
    distributed = spark_evaluate(
        spark, spark.createDataFrame(qrels), spark.createDataFrame(runs), TIE_MEASURES, conv,
        max_records_per_batch=7,  # every query of more than 7 rows is split across Arrow batches
        partitions=5,
    )  # fmt: skip
    assert_bit_identical(local, distributed)
    run = distributed.runs[0]
    assert run.queries.extra_skipped == ["x0", "x1"]
    assert "j0" in (run.queries.missing_scored_zero if missing == "zero" else run.queries.missing_skipped)
    assert run.meta["reader"] == "spark" and run.meta["rows_read"] == int((runs.tag == "bm25").sum())


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_judgments_copartitioned_with_the_runs_give_the_same_floats(spark, missing):
    """Judgments past a broadcast limit set low (10 rows; these are 497) travel beside the runs' rows,
    shuffled by query id, instead of broadcast whole: the same floats, query sets and means."""
    qrels, runs = generated()
    assert len(qrels) > 10
    conv = DEFAULT.with_(missing_queries=missing)
    local = local_results(qrels, runs, TIE_MEASURES, conv)
    distributed = spark_evaluate(
        spark, spark.createDataFrame(qrels), spark.createDataFrame(runs), TIE_MEASURES, conv,
        max_records_per_batch=7, partitions=5, broadcast_rows=10,
    )  # fmt: skip
    assert_bit_identical(local, distributed)
    assert distributed.runs[0].queries.extra_skipped == ["x0", "x1"]


def test_copartitioned_judgments_meet_integer_query_ids_and_a_duplicate(spark):
    """Integer query ids in the run meet the judgments' text ids in the same partition (the key is the
    id as text); a duplicate is still reported with its line."""
    qrels = pd.DataFrame(
        {"query_id": ["1", "1", "2", "3"], "doc_id": ["a", "b", "c", "d"], "grade": [1, 2, 1, 1]}
    )
    run = pd.DataFrame(
        {"query_id": [1, 1, 2, 2], "doc_id": ["b", "a", "c", "x"], "score": [2.0, 1.0, 0.5, 0.7]}
    )
    local = evaluate(qrels_from_frame(qrels), run_from_frame(run), ["RR", "AP"], DEFAULT)
    distributed = spark_evaluate(
        spark, spark.createDataFrame(qrels), spark.createDataFrame(run), ["RR", "AP"], broadcast_rows=0,
        partitions=3,
    )  # fmt: skip
    assert_bit_identical(local, distributed)
    # hand arithmetic: query 1 ranks b (2) then a (1): RR 1, AP (1/1 + 2/2) / 2 = 1; query 2 ranks x, c: RR 1/2
    assert distributed.value("RR", "1") == 1.0 and distributed.value("RR", "2") == 0.5
    twice = pd.DataFrame({"query_id": [1, 1, 1], "doc_id": ["a", "b", "a"], "score": [1.0, 2.0, 3.0]})
    with pytest.raises(ValidationError) as caught:
        spark_evaluate(
            spark, spark.createDataFrame(qrels), spark.createDataFrame(twice), ["RR"], broadcast_rows=0
        )
    assert caught.value.line == 3


def test_the_broadcast_limit_from_the_parameter_or_the_session(spark):
    assert not copartitioned(spark, 10_000_000) and copartitioned(spark, 10_000_001)
    assert copartitioned(spark, 11, broadcast_rows=10) and not copartitioned(spark, 10, broadcast_rows=10)
    spark.conf.set(BROADCAST_CONF, "100")
    try:
        assert copartitioned(spark, 101) and not copartitioned(spark, 100)
        assert not copartitioned(spark, 101, broadcast_rows=1000)  # the parameter wins over the session
        spark.conf.set(BROADCAST_CONF, "lots")
        with pytest.raises(ValidationError, match="is not a number of rows"):
            copartitioned(spark, 1)
    finally:
        spark.conf.unset(BROADCAST_CONF)


def test_empty_partitions_and_a_line_column(spark):
    """Two queries over 16 partitions: most partitions are empty. A ``line`` column gives file order."""
    qrels = pd.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["1", "2", "3"], "grade": [1, 2, 1]})
    run = pd.DataFrame(
        {"query_id": ["a", "a", "a", "b"], "doc_id": ["2", "1", "9", "3"], "score": [1.0, 1.0, 1.0, 0.5],
         "line": [3, 1, 2, 4]}
    )  # fmt: skip
    measures = ["nDCG(ties=file_order)@10", "RR(ties=file_order)", "AP"]
    conv = DEFAULT
    local = evaluate(
        qrels_from_frame(qrels), run_from_frame(run.sort_values("line").drop(columns="line")), measures, conv
    )
    distributed = spark_evaluate(
        spark, spark.createDataFrame(qrels), spark.createDataFrame(run), measures, conv, partitions=16
    )
    assert_bit_identical(local, distributed)
    # file order puts doc 1 (grade 2) first: RR = 1; hand arithmetic
    assert distributed.value("RR(ties=file_order)", "a") == 1.0


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_every_profile(spark, profile):
    qrels, runs = generated(seed=11)
    qrels = (
        qrels[qrels.grade >= 0] if profile in ("sklearn", "torchmetrics") else qrels
    )  # they refuse negatives
    if profile == "gdeval":  # gdeval.pl reads query ids as numbers, and qrelkit refuses others under it

        def numeric(ids):  # q07, j7, x7, q_none (both, judgments only, run only, nothing relevant) -> digits
            return ids.map(lambda s: "4" if s == "q_none" else {"q": "1", "j": "2", "x": "3"}[s[0]] + s[1:])

        qrels = qrels.assign(query_id=numeric(qrels.query_id))
        runs = runs.assign(query_id=numeric(runs.query_id))
    conv = Conventions.from_profile(profile)
    if profile == "cwl_eval":  # cwl_eval reads gains of at most 1: the grades' scale is given
        conv = conv.with_(max_grade=int(qrels.grade.max()))
    measures = ["nDCG@10", "AP", "RR", "P@5", "R@100", "Judged@10", "nDCG"]
    local = local_results(qrels, runs, measures, conv)
    distributed = spark_evaluate(
        spark,
        spark.createDataFrame(qrels),
        spark.createDataFrame(runs),
        measures,
        conv,
        max_records_per_batch=11,
    )
    assert_bit_identical(local, distributed)
