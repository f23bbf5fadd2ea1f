"""alpha_nDCG@k and ERR_IA@k against ndeval itself (pyndeval 0.0.8, "Interface to ndeval.c", the TREC Web
track's diversity evaluation) and through ir_measures' pyndeval provider, per query and in the mean, to
1e-9, on generated diversity judgments (grades 0-3, some queries with no relevant subtopic, subtopics with
no relevant document) and tie-free runs holding unjudged documents.

ndeval ranks by score descending, breaking ties by document id (pyndeval sorts so), which qrelkit would
average: the runs here have no tied scores, so every tie convention gives the same ranking. ndeval takes
cutoffs up to 20. At cutoff 1 ndeval's ERR-IA is not normalised (the one place qrelkit departs from it:
:func:`test_err_ia_at_1_is_where_ndeval_skips_its_normalisation`).
"""

from __future__ import annotations

import random

import pytest

from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_diversity_qrels, read_run

pyndeval = pytest.importorskip("pyndeval")

CUTOFFS = (2, 5, 10, 20)


def _generate(seed: int) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, float]]]:
    rng = random.Random(seed)
    qrels: list[tuple[str, str, str, int]] = []
    run: list[tuple[str, str, float]] = []
    for q in range(40):
        qid = f"q{q}"
        pool = [f"doc-{q}-{i}" for i in range(60)]
        subtopics = rng.randint(1, 7)
        zero_only = q % 9 == 0  # judged, nothing relevant
        for doc in rng.sample(pool, 35):
            for s in range(1, subtopics + 1):
                if rng.random() < 0.3:
                    qrels.append((qid, str(s), doc, 0 if zero_only else rng.choice([0, 0, 1, 1, 2, 3])))
        retrieved = rng.sample(pool + [f"unjudged-{q}-{i}" for i in range(20)], rng.randint(5, 45))
        scores = rng.sample(range(1, 100_000), len(retrieved))
        run += [(qid, doc, score / 7.0) for doc, score in zip(retrieved, scores, strict=True)]
    return qrels, run


@pytest.fixture(scope="module", params=[0, 1])
def files(request, tmp_path_factory):
    qrels, run = _generate(request.param)
    folder = tmp_path_factory.mktemp(f"div{request.param}")
    (folder / "qrels").write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in qrels))
    ranked = sorted(run, key=lambda r: (r[0], -r[2]))
    (folder / "run").write_text(
        "".join(f"{q} Q0 {d} {i} {s!r} sys\n" for i, (q, d, s) in enumerate(ranked, start=1))
    )
    return folder / "qrels", folder / "run", qrels, ranked


@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.8])
def test_alpha_ndcg_and_err_ia_equal_ndeval_per_query(files, alpha):
    qrels_path, run_path, qrels, run = files
    ours = [f"alpha_nDCG(alpha={alpha})@{k}" for k in CUTOFFS] + [f"ERR_IA@{k}" for k in CUTOFFS]
    theirs = [f"alpha-nDCG@{k}" for k in CUTOFFS] + [f"ERR-IA@{k}" for k in CUTOFFS]
    results = evaluate_files(qrels_path, [run_path], ours, diversity=True)
    # ndeval's ERR-IA takes the same alpha; qrelkit's ERR_IA is ndeval's at its default 0.5
    expected = pyndeval.ndeval(qrels, run, theirs[: len(CUTOFFS)], alpha=alpha)
    expected_err = pyndeval.ndeval(qrels, run, theirs[len(CUTOFFS) :], alpha=0.5)
    assert set(expected) == set(results.values(ours[0]))
    for mine, name in zip(ours, theirs, strict=True):
        values = results.values(mine)
        source = expected if name.startswith("alpha") else expected_err
        for query, value in values.items():
            assert value == pytest.approx(source[query][name], abs=1e-9), (mine, query)
        mean = sum(source[q][name] for q in source) / len(source)
        assert results.mean(mine) == pytest.approx(mean, abs=1e-9)


def test_equal_ir_measures_through_its_pyndeval_provider(files):
    import ir_measures
    import pandas as pd

    qrels_path, run_path, qrels, run = files
    frame = pd.DataFrame(qrels, columns=["query_id", "iteration", "doc_id", "relevance"])
    scored = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    wanted = [ir_measures.alpha_nDCG @ 20, ir_measures.ERR_IA @ 20, ir_measures.alpha_nDCG @ 5]
    provider = ir_measures.providers.registry["pyndeval"]
    theirs = {(m.query_id, str(m.measure)): m.value for m in provider.iter_calc(wanted, frame, scored)}
    results = evaluate(read_diversity_qrels(qrels_path), [read_run(run_path)], [str(m) for m in wanted])
    for measure in wanted:
        for query, value in results.values(str(measure)).items():
            assert value == pytest.approx(theirs[(query, str(measure))], abs=1e-9), (measure, query)


def test_err_ia_at_1_is_where_ndeval_skips_its_normalisation(files):
    # ndeval's ERR-IA@1 is the number of subtopics the first document covers (up to their count, not at most
    # 1), as if divided by 0.5 without averaging over the subtopics; qrelkit's is that number divided by the
    # query's subtopics, as at every other cutoff. alpha-nDCG@1, a ratio, agrees.
    qrels_path, run_path, qrels, run = files
    results = evaluate_files(qrels_path, [run_path], ["ERR_IA@1", "alpha_nDCG@1"], diversity=True)
    expected = pyndeval.ndeval(qrels, run, ["ERR-IA@1", "alpha-nDCG@1"])
    subtopics: dict[str, set[str]] = {}
    for q, s, _, g in qrels:
        if g > 0:
            subtopics.setdefault(q, set()).add(s)
    departs = 0
    for query, value in results.values("ERR_IA@1").items():
        count = len(subtopics.get(query, ()))
        assert value * max(count, 1) == pytest.approx(expected[query]["ERR-IA@1"], abs=1e-9), query
        departs += count > 1 and value > 0
        ratio = results.value("alpha_nDCG@1", query)
        assert ratio == pytest.approx(expected[query]["alpha-nDCG@1"], abs=1e-9), query
    assert departs > 0
