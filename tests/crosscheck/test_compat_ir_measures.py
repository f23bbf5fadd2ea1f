"""Compat against ir_measures' compat provider (Clarke et al. 2020, as ir_measures 0.4.3 computes it), per
query and in the mean, to 1e-9, on generated graded judgments and tie-free runs with positive scores
(unjudged documents, queries with nothing relevant, runs shorter and longer than the relevant set).

ir_measures orders a grade's documents in its ideal by run score, giving an unreturned document 0.0: a
returned relevant document scored below 0 then falls behind the unreturned ones. qrelkit puts every
returned document first (the most compatible ideal): the last test pins where the two differ.
"""

from __future__ import annotations

import random

import polars as pl
import pytest

from qrelkit.evaluation.core import evaluate
from qrelkit.formats import qrels_from_frame, run_from_frame

ir_measures = pytest.importorskip("ir_measures")
pd = pytest.importorskip("pandas")

MEASURES = ["Compat", "Compat(p=0.8)", "Compat(p=0.5,normalize=False)", "Compat(normalize=False)"]


def _generate(seed: int, negative: bool = False):
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(60):
        qid = f"q{q}"
        pool = [f"doc{q}.{i}" for i in range(50)]
        nothing = q % 10 == 0
        for doc in rng.sample(pool, 30):
            qrels.append((qid, doc, 0 if nothing else rng.choice([0, 0, 1, 2, 3])))
        docs = rng.sample(pool + [f"unjudged{q}.{i}" for i in range(15)], rng.randint(1, 60))
        scores = rng.sample(range(1, 10**7), len(docs))
        shift = 5 * 10**6 if negative else 0
        run += [(qid, d, (s - shift) / 7.0) for d, s in zip(docs, scores, strict=True)]
    return qrels, run


def _both(qrels, run, measures):
    frame_q = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    frame_r = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    parsed = [ir_measures.parse_measure(m) for m in measures]
    provider = ir_measures.providers.registry["compat"]
    theirs = {(m.query_id, str(m.measure)): m.value for m in provider.iter_calc(parsed, frame_q, frame_r)}
    ours = evaluate(
        qrels_from_frame(pl.DataFrame(qrels, schema=["query_id", "doc_id", "grade"], orient="row")),
        run_from_frame(pl.DataFrame(run, schema=["query_id", "doc_id", "score"], orient="row")),
        measures,
    )
    return ours, theirs, parsed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compat_equals_ir_measures(seed):
    qrels, run = _generate(seed)
    ours, theirs, parsed = _both(qrels, run, MEASURES)
    for text, measure in zip(MEASURES, parsed, strict=True):
        values = ours.values(text)
        assert {q for q, name in theirs if name == str(measure)} == set(values)
        for query, value in values.items():
            assert value == pytest.approx(theirs[(query, str(measure))], abs=1e-9), (text, query)
        mean = sum(theirs[(q, str(measure))] for q in values) / len(values)
        assert ours.mean(text) == pytest.approx(mean, abs=1e-9)


@pytest.mark.parametrize("seed", [4, 5])
def test_compat_on_tied_scores_under_the_ir_measures_profile(seed):
    """ir_measures orders equal scores by document id ascending; the profile's Compat does the same. Its
    ideal orders a grade's documents of equal score as the judgments list them, so the judgments here are
    listed by document id (and every score is positive: see the test below)."""
    from qrelkit.measures.conventions import Conventions

    qrels, run = _generate(seed)
    qrels = sorted(qrels)
    run = [(q, d, float(1 + round(s / 10**6))) for q, d, s in run]  # at most 11 distinct scores a query
    assert len({(q, s) for q, _, s in run}) < len(run) / 2
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    frame_q = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    frame_r = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    provider = ir_measures.providers.registry["compat"]
    theirs = {(m.query_id, str(m.measure)): m.value for m in provider.iter_calc(parsed, frame_q, frame_r)}
    ours = evaluate(
        qrels_from_frame(pl.DataFrame(qrels, schema=["query_id", "doc_id", "grade"], orient="row")),
        run_from_frame(pl.DataFrame(run, schema=["query_id", "doc_id", "score"], orient="row")),
        MEASURES,
        Conventions.from_profile("ir_measures"),
    )
    for text, measure in zip(MEASURES, parsed, strict=True):
        name = str(ours.measures[MEASURES.index(text)])
        values = ours.values(name)
        assert {q for q, m in theirs if m == str(measure)} == set(values)
        for query, value in values.items():
            assert value == pytest.approx(theirs[(query, str(measure))], abs=1e-12), (text, query)


def test_negative_scores_are_where_ir_measures_ideal_is_less_compatible():
    qrels, run = _generate(3, negative=True)
    ours, theirs, _ = _both(qrels, run, ["Compat"])
    values = ours.values("Compat")
    lower = [q for q in values if theirs[(q, "Compat")] < values[q] - 1e-9]
    assert lower  # ir_measures' ideal puts negatively scored returned documents behind unreturned ones
    assert all(theirs[(q, "Compat")] <= values[q] + 1e-9 for q in values)  # never above the best ideal


@pytest.mark.parametrize("name", ["IPrec@0.5", "IPrec@0.2", "IPrec(rel=2)@0.7"])
def test_ir_measures_iprec_written_with_the_recall_as_cutoff(name):
    """ir_measures writes interpolated precision at recall r as ``IPrec@r``: read as it, per query to
    1e-12 against ir_measures under the ir_measures profile."""
    from qrelkit.measures.conventions import Conventions

    qrels, run = _generate(11)
    qdf = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    rdf = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(name)], qdf, rdf)}
    q = qrels_from_frame(pl.DataFrame(qrels, schema=["query_id", "doc_id", "grade"], orient="row"))
    r = run_from_frame(pl.DataFrame(run, schema=["query_id", "doc_id", "score"], orient="row"), name="r")
    res = evaluate(q, r, [name], Conventions.from_profile("ir_measures"))
    ours = {qid: value for _, qid, _, value in res.rows()}
    assert len(theirs) > 30 and set(theirs) <= set(ours)
    for qid, value in theirs.items():
        assert abs(ours[qid] - value) <= 1e-12, (qid, ours[qid], value)
