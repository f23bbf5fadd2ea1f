"""The measure registry (qrelkit.engine.registry): one entry per family of the grammar, each with a kernel
for every engine it claims and an oracle, and nothing the grammar cannot parse; each family's kernel and
oracle agree on a small input, so an entry wired to another family's kernel or oracle is caught."""

from __future__ import annotations

import math

import polars as pl
import pytest

from qrelkit.data.values import diversity_qrels_from_frame
from qrelkit.engine.registry import (
    ENGINES,
    FRAME,
    REGISTRY,
    SMALL,
    SPARK,
    claims,
    kernel,
    oracle_values,
    refuse_unclaimed,
)
from qrelkit.errors import StepAside, ValidationError
from qrelkit.evaluation.core import evaluate
from qrelkit.formats import qrels_from_frame, run_from_frame
from qrelkit.measures.conventions import Conventions
from qrelkit.measures.grammar import ALIASES, INFO, parse, parse_all
from qrelkit.measures.irm_names import IRM_NAMES
from qrelkit.measures.trec_names import NICKNAMES, ORDER, qrelkit_measures


def _text(name: str) -> str:
    """The shortest spelling of a family the grammar takes (with a cutoff where it takes one; SetP@k is
    read under the ranx profiles only, as P@k: SetP goes without)."""
    return name + ("@5" if INFO[name].cutoff != "none" and name != "SetP" else "")


def test_the_families_are_the_grammars():
    assert list(REGISTRY) == list(INFO)  # the same families, in the same order


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_entry_has_a_kernel_per_engine_it_claims_and_an_oracle(name):
    family = REGISTRY[name]
    assert family.name == name and family.info is INFO[name]
    assert FRAME in family.engines and family.engines <= set(ENGINES)
    for engine in family.engines:
        assert callable(family.kernels[engine])
        assert kernel(parse(_text(name)), engine) is family.kernels[engine]
    assert callable(family.oracle)
    # only the frame engine attaches subtopic judgments; every other family runs everywhere
    expected = {FRAME} if family.info.judgments == "subtopics" else set(ENGINES)
    assert family.engines == expected


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_family_parses(name):
    measure = parse(_text(name))
    assert measure.name == name
    assert parse(str(measure)) == measure


def test_every_spelling_the_grammar_reads_is_registered():
    """Aliases, ir_measures' names and trec_eval's names all land on registered families."""
    assert set(ALIASES.values()) <= set(REGISTRY)
    assert {q for q in IRM_NAMES.values() if q is not None} <= set(REGISTRY)
    reached = set()
    for name in [*ORDER, *NICKNAMES]:
        spelled = qrelkit_measures(name)
        if spelled is None:
            continue
        reached |= {m.name for m in parse_all(spelled)}
    assert reached <= set(REGISTRY)
    assert len(reached) > 20


def test_an_engine_refuses_a_family_it_does_not_claim():
    diverse = parse("alpha_nDCG@20")
    assert claims(diverse, FRAME) and not claims(diverse, SMALL) and not claims(diverse, SPARK)
    refuse_unclaimed([parse("nDCG@10")], SPARK)  # claimed: nothing to refuse
    with pytest.raises(ValidationError, match="cannot be computed on Spark") as info:
        refuse_unclaimed([diverse, parse("nDCG@10")], SPARK)
    assert info.value.problem == "alpha_nDCG(rel=1)@20 cannot be computed on Spark"
    assert "--diversity" in str(info.value)
    with pytest.raises(ValidationError):
        kernel(diverse, SPARK)


def test_spark_refuses_on_the_driver_a_family_it_does_not_claim():
    pytest.importorskip("pyspark")
    from qrelkit.evaluation import spark

    with pytest.raises(ValidationError, match="cannot be computed on Spark"):
        spark.evaluate(None, "qrels.txt", "run.txt", ["alpha_nDCG@20"])  # before any session is used


def test_the_small_path_steps_aside_for_a_family_it_does_not_claim(tmp_path):
    from qrelkit.engine.encoding.small import Judgments, evaluate_columns
    from qrelkit.formats.trec.small import read_columns

    (tmp_path / "q").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    qcols = read_columns(tmp_path / "q", "qrels")
    run = read_columns(tmp_path / "r", "run")
    conv = Conventions()
    _, values = evaluate_columns(qcols, Judgments.build(qcols), run, [parse("nDCG@5")], conv)
    assert values[parse("nDCG@5")][0].tolist() == [1.0]
    with pytest.raises(StepAside):
        evaluate_columns(qcols, Judgments.build(qcols), run, [parse("alpha_nDCG@5")], conv)


# -------------------------------------------------------------- each family's kernel against its own oracle

QRELS = [
    ("q1", "d1", 3), ("q1", "d2", 0), ("q1", "d3", 1), ("q1", "d4", 2), ("q1", "d8", 1),
    ("q2", "d1", 0), ("q2", "d5", 2), ("q2", "d6", 1), ("q2", "d7", 0),
]  # fmt: skip
RUN = [
    ("q1", "d2", 9.0), ("q1", "d1", 8.0), ("q1", "d9", 7.0), ("q1", "d3", 6.0), ("q1", "d4", 5.0),
    ("q1", "d7", 4.0), ("q2", "d7", 3.0), ("q2", "d6", 2.5), ("q2", "d0", 2.0), ("q2", "d5", 1.0),
]  # fmt: skip
SUBTOPICS = [
    ("q1", "a", "d1", 1), ("q1", "b", "d1", 1), ("q1", "b", "d3", 1), ("q1", "c", "d4", 2),
    ("q2", "a", "d5", 1), ("q2", "b", "d6", 1), ("q2", "b", "d7", 0),
]  # fmt: skip


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("name", list(REGISTRY))
def test_each_familys_kernel_agrees_with_its_oracle(name):
    measure = parse(_text(name))
    conv = Conventions(ties="docid_desc")  # every family orders ties so (Compat and bpref average none)
    run = run_from_frame(pl.DataFrame(RUN, schema=["query_id", "doc_id", "score"], orient="row"))
    ref_run: dict[str, list[tuple[str, float, int]]] = {}
    for line, (q, d, s) in enumerate(RUN, start=1):
        ref_run.setdefault(q, []).append((d, s, line))
    if INFO[name].judgments == "subtopics":
        frame = pl.DataFrame(SUBTOPICS, schema=["query_id", "subtopic", "doc_id", "grade"], orient="row")
        judgments = diversity_qrels_from_frame(frame)
        ref: dict = {}
        for q, s, d, g in SUBTOPICS:
            ref.setdefault(q, {}).setdefault(d, {})[s] = g
    else:
        judgments = qrels_from_frame(
            pl.DataFrame(QRELS, schema=["query_id", "doc_id", "grade"], orient="row")
        )
        ref = judgments.to_dict()
    got = evaluate(judgments, run, [measure], conv).values(measure)
    expected = oracle_values(ref, ref_run, measure, conv)
    assert set(got) == set(expected) == {"q1", "q2"}
    for q in expected:
        assert _same(got[q], expected[q]), (name, q, got[q], expected[q])
