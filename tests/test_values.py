"""Qrels, Run and DiversityQrels rebuilt with some fields changed: ``replace(**changes)``."""

from __future__ import annotations

import polars as pl
import pytest

from qrelkit.data.values import DiversityQrels, Qrels, Run, diversity_qrels_from_frame
from qrelkit.fingerprint import Fingerprint


def test_qrels_replace_changes_the_named_fields_and_keeps_the_rest() -> None:
    qrels = Qrels.from_dict({"1": {"a": 2, "b": 0}, "2": {"c": 1}}, name="gold")
    qrels = Qrels(qrels.frame, qrels.fingerprint, qrels.name, (0, 1, 2), "r" * 64, {"source": "gold.qrels"})
    one = qrels.frame.filter(pl.col("query_id") == "1")
    new = qrels.replace(frame=one, rubric_hash=None)
    assert type(new) is Qrels and new is not qrels
    assert new.frame.equals(one) and new.rubric_hash is None
    assert (new.fingerprint, new.name, new.scale) == (qrels.fingerprint, "gold", (0, 1, 2))
    assert new.meta is qrels.meta
    assert qrels.rubric_hash == "r" * 64 and qrels.frame.height == 3  # the old value is unchanged
    assert qrels.replace().frame.equals(qrels.frame)


def test_run_replace_changes_the_named_fields_and_keeps_the_rest() -> None:
    run = Run.from_dict({"1": {"a": 1.0, "b": 0.5}}, name="bm25")
    fp = Fingerprint("f" * 64, "canonical-rows", "elsewhere")
    new = run.replace(fingerprint=fp, name="bm25-b")
    assert type(new) is Run
    assert (new.fingerprint, new.name, new.meta) == (fp, "bm25-b", run.meta)
    assert new.frame.equals(run.frame) and run.name == "bm25"


def test_diversity_qrels_replace_and_a_bad_frame_or_field() -> None:
    frame = pl.DataFrame({"query_id": ["1"], "subtopic": ["1"], "doc_id": ["a"], "grade": [1]})
    dq = diversity_qrels_from_frame(frame, name="div")
    new = dq.replace(name="other", rubric_hash="h")
    assert type(new) is DiversityQrels and (new.name, new.rubric_hash) == ("other", "h")
    assert new.frame.equals(dq.frame) and new.meta == dq.meta
    with pytest.raises(TypeError):
        dq.replace(scale=(0, 1))  # not a field of diversity qrels
    with pytest.raises(Exception, match="lacks column"):
        Run.from_dict({"1": {"a": 1.0}}).replace(frame=pl.DataFrame({"query_id": ["1"]}))
