"""Readers: real TREC files with their quirks, every tabular format, frames in memory, duplicates."""

from __future__ import annotations

import gzip
import hashlib

import pandas as pd
import polars as pl
import pytest

from qrelkit import (
    Qrels,
    Run,
    evaluate,
    qrels_from_frame,
    read_qrels,
    read_run,
    run_from_frame,
    write_qrels,
    write_run,
)
from qrelkit.errors import InputFormatError, ValidationError

from ..conftest import data_path


def test_real_trec_files_load_with_their_quirks():
    covid = read_qrels(data_path("trec", "qrels.covid-complete.txt"))
    assert len(covid) == 69318 and covid.frame.get_column("query_id").n_unique() == 50
    assert (covid.frame.get_column("grade") == -1).sum() == 2  # the two -1 grades are kept as read
    doc19 = read_qrels(data_path("trec", "qrels.dl19-doc.txt"))  # 'Q0' in the iteration column
    assert len(doc19) == 16258 and set(doc19.frame.get_column("grade").unique()) == {0, 1, 2, 3}
    for name, n in [
        ("qrels.dl19-passage.txt", 9260),
        ("qrels.dl20-passage.txt", 11386),
        ("qrels.dl20-doc.txt", 9098),
        ("qrels.covid-round1.txt", 8691),
        ("qrels.covid-round2.txt", 12037),
    ]:
        assert len(read_qrels(data_path("trec", name))) == n


def test_round_number_in_iteration_column_is_ignored(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("1 4.5 docA 2\n1 0.5 docB 0\n")
    assert read_qrels(path).to_dict() == {"1": {"docA": 2, "docB": 0}}


def test_negative_grades_follow_the_convention():
    covid = read_qrels(data_path("trec", "qrels.covid-complete.txt"))
    neg = covid.frame.filter(pl.col("grade") < 0).row(0, named=True)
    run = Run.from_dict({neg["query_id"]: {neg["doc_id"]: 1.0}})
    from qrelkit import Conventions

    judged = evaluate(covid, run, ["Judged@1"], Conventions(negative="unjudged")).values("Judged@1")
    zero = evaluate(covid, run, ["Judged@1"], Conventions(negative="zero")).values("Judged@1")
    assert judged[neg["query_id"]] == 0.0 and zero[neg["query_id"]] == 1.0
    with pytest.raises(ValidationError, match="grade -1 is negative"):
        evaluate(covid, run, ["nDCG@1"], Conventions(negative="reject"))


def test_any_run_of_spaces_or_tabs_and_crlf(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"  1\tQ0   a 1\t 2.5 t\r\n1 Q0 b 2 1e-3 t\r\n")
    run = read_run(path)
    assert run.to_dict() == {"1": {"a": 2.5, "b": 0.001}} and run.name == "t"


def test_tabular_formats_agree_with_trec(tmp_path):
    rows = [("q1", "d1", 3.0), ("q1", "d2", 1.5), ("q2", "d3", 0.25)]
    (tmp_path / "r.txt").write_text(
        "".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(rows, 1))
    )
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    frame.write_csv(tmp_path / "r.csv")
    frame.write_csv(tmp_path / "r.tsv", separator="\t")
    frame.write_ndjson(tmp_path / "r.jsonl")
    frame.write_parquet(tmp_path / "r.parquet")
    frame.rename({"query_id": "qid", "doc_id": "docid"}).write_csv(tmp_path / "alias.csv")
    expected = read_run(tmp_path / "r.txt").to_dict()
    for name in ("r.csv", "r.tsv", "r.jsonl", "r.parquet", "alias.csv"):
        assert read_run(tmp_path / name).to_dict() == expected, name
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress((tmp_path / "r.jsonl").read_bytes()))
    assert read_run(gz).to_dict() == expected
    assert read_run(gz).fingerprint.sha256 == hashlib.sha256(gz.read_bytes()).hexdigest()


def test_frames_in_memory_and_their_fingerprints():
    pdf = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 0.5]})
    run_a = run_from_frame(pdf, name="pandas")
    run_b = run_from_frame(pl.from_pandas(pdf).reverse(), name="polars")
    assert run_a.to_dict() == {"1": {"a": 2.0, "b": 1.0}, "2": {"c": 0.5}}
    assert run_a.fingerprint.sha256 == run_b.fingerprint.sha256  # same rows, any order: same identity
    assert run_a.fingerprint.kind == "canonical-rows"
    qrels = qrels_from_frame(pd.DataFrame({"qid": ["1"], "docid": ["a"], "relevance": [2]}))
    assert qrels.to_dict() == {"1": {"a": 2}}
    with pytest.raises(InputFormatError, match="missing column"):
        run_from_frame(pd.DataFrame({"query_id": ["1"], "doc_id": ["a"]}))
    with pytest.raises(InputFormatError, match="both name query_id"):
        run_from_frame(pd.DataFrame({"qid": ["1"], "query_id": ["1"], "doc_id": ["a"], "score": [1.0]}))


def test_caller_frames_are_not_mutated():
    pdf = pd.DataFrame({"qid": ["1", "1"], "docid": ["a", "b"], "score": [1.0, 2.0]})
    before = pdf.copy()
    run_from_frame(pdf)
    pd.testing.assert_frame_equal(pdf, before)


@pytest.mark.parametrize(("policy", "expected"), [("first", 1.0), ("last", 3.0), ("max", 5.0)])
def test_duplicate_policies(tmp_path, policy, expected):
    path = tmp_path / "r.txt"
    path.write_text("1 Q0 a 1 1.0 t\n1 Q0 b 2 0.5 t\n1 Q0 a 3 5.0 t\n1 Q0 a 4 3.0 t\n")
    with pytest.raises(ValidationError, match="lines 1, 3, 4"):
        read_run(path)
    run = read_run(path, on_duplicate=policy)
    assert run.to_dict()["1"]["a"] == expected
    assert run.meta["duplicates_removed"] == 2


def test_writers_round_trip(tmp_path):
    qrels = Qrels.from_dict({"1": {"a": 2, "b": 0}, "2": {"c": 1}})
    run = Run.from_dict({"1": {"a": 0.5, "b": 0.75}, "2": {"c": 0.1}}, name="mine")
    write_qrels(qrels, tmp_path / "q.txt")
    write_run(run, tmp_path / "r.txt")
    assert read_qrels(tmp_path / "q.txt").to_dict() == qrels.to_dict()
    back = read_run(tmp_path / "r.txt")
    assert back.to_dict() == run.to_dict() and back.name == "mine"
    assert (tmp_path / "r.txt").read_text().splitlines()[0] == "1 Q0 b 1 0.75 mine"


def test_scale_check_names_the_line(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("1 0 a 2\n1 0 b 4\n")
    with pytest.raises(ValidationError) as err:
        read_qrels(path, scale=(0, 1, 2, 3))
    assert str(err.value).startswith(f"{path}:2: grade 4 is outside the rubric's scale [0, 1, 2, 3]")


def test_qrels_from_grades_sorts_the_pairs():
    from qrelkit.data.values import Qrels

    q = Qrels.from_grades({("q2", "a"): 1, ("q1", "b"): 2, ("q1", "a"): 0}, name="x")
    assert q.frame.select("query_id", "doc_id", "grade").rows() == [
        ("q1", "a", 0),
        ("q1", "b", 2),
        ("q2", "a", 1),
    ]
    assert q.name == "x"
    # the same grades in another order: the same rows and the same fingerprint
    again = Qrels.from_grades({("q1", "a"): 0, ("q2", "a"): 1, ("q1", "b"): 2}, name="x")
    assert again.fingerprint.sha256 == q.fingerprint.sha256
