"""Every profile against its real library, per query to 1e-12, on the seeded edge cases of
:mod:`tests.crosscheck.trec_eval_harness` (ties, negative and zero grades, unjudged documents, queries on one
side only, single-document queries, odd ids and score spellings).

- ``--profile trec_eval9`` against trec_eval 9.0.8 built from its vendored source with full-precision
  output (``build(precise=True)``: ``%.17g`` for ``%6.4f``), its ``-q`` lines parsed;
- ``--profile ir_measures`` against ir_measures, ``--profile ranx`` and ``ranx-burges`` against ranx's metric
  functions, ``--profile sklearn`` against scikit-learn's ``ndcg_score`` and ``dcg_score``.

Left out of every comparison: the cases carrying a fault (the libraries refuse them or their dicts cannot
hold them) and runs with two tags. Further exclusions are named in each test. Each test prints the number
of values compared (``pytest -s``).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from . import trec_eval_harness as h
from .test_profile_parity import IRM, PYTREC, ours

SEEDS = range(int(os.environ.get("QRELKIT_PROFILE_CASES", "48")))
TOL = 1e-12

#: trec_eval 9's names -> qrelkit's: pytrec_eval's set, and interpolated precision at the 11 standard
#: levels and their mean (the profile's ``iprec_cutoff=truncate``)
TREC9 = {
    **PYTREC,
    **{f"iprec_at_recall_{r / 10:3.2f}": f"IPrec(recall={r / 10!r})" for r in range(11)},
    "11pt_avg": "IPrecMean",
}
TREC9_FLAGS = (
    "-q",
    *("-m", "P.5,10", "-m", "recall.10,100", "-m", "map", "-m", "map_cut.10", "-m", "recip_rank"),
    *("-m", "Rprec", "-m", "num_rel", "-m", "num_ret", "-m", "num_rel_ret", "-m", "ndcg"),
    *("-m", "ndcg_cut.10", "-m", "bpref", "-m", "iprec_at_recall", "-m", "11pt_avg"),
)


def _dicts(c: h.Case) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qd: dict[str, dict[str, int]] = {}
    for line in c.qrels.splitlines():
        f = line.split()
        qd.setdefault(f[0], {})[f[2]] = int(f[3])
    rd: dict[str, dict[str, float]] = {}
    for line in c.run.splitlines():
        f = line.split()
        rd.setdefault(f[0], {})[f[2]] = float(f[4])
    return qd, rd


def _usable(c: h.Case) -> bool:
    return not c.fault and "runB" not in c.run


def _all_negative(qd: dict[str, dict[str, int]]) -> bool:
    """A query whose judgments are all negative: trec_eval 9 (alone, inside pytrec_eval and so inside
    ir_measures) reads the previous query's grade counts or crashes (``form_res_rels.c``; docs/trec_eval.md)."""
    return any(all(g < 0 for g in d.values()) for d in qd.values())


def _assert_close(got: float, want: float, where: tuple) -> None:
    assert abs(got - want) <= TOL, (*where, got, want)


# ------------------------------------------------------------------------------------ trec_eval 9.0.8


@pytest.fixture(scope="module")
def trec_eval_9_precise():
    if h.compiler() is None:
        pytest.skip("no C compiler on PATH: trec_eval cannot be built from tests/data/trec_eval-src")
    return h.build("9.0.8", precise=True)


def _per_query(stdout: bytes) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in stdout.decode().splitlines():
        name, qid, value = (f.strip() for f in line.split("\t"))
        if qid != "all" and name != "runid":
            out.setdefault(name, {})[qid] = float(value)
    return out


def test_trec_eval9_profile_per_query_against_the_9_0_8_binary(trec_eval_9_precise, tmp_path):
    """The binary without flags but ``-q`` and ``-m``: queries in both files, relevance at grade 1. Left
    out: the cases with an all-negative query (see :func:`_all_negative`)."""
    compared = cases = 0
    for seed in SEEDS:
        c = h.case(seed)
        if not _usable(c) or _all_negative(_dicts(c)[0]):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        out = h.run_trec_eval(trec_eval_9_precise, qrels, run, TREC9_FLAGS)
        assert out.exit_code == 0, (seed, out)
        theirs = _per_query(out.stdout)
        res = ours(qrels, run, "trec_eval9", list(TREC9.values()))
        cases += 1
        for trec_name, mine in TREC9.items():
            got = res.values(mine)
            assert set(got) == set(theirs[trec_name]), (seed, trec_name)
            for q, want in theirs[trec_name].items():
                _assert_close(got[q], want, (seed, q, trec_name))
                compared += 1
    print(f"trec_eval9 vs trec_eval 9.0.8: {compared} per-query values compared on {cases} cases")
    assert cases >= 20 and compared > 2000


# ------------------------------------------------------------------------------------------ ir_measures


def test_ir_measures_profile_per_query(tmp_path):
    """Every measure of the parity table (``test_profile_parity.IRM``), per query and in the mean. Left
    out: the cases with an all-negative query (ir_measures computes most measures with pytrec_eval)."""
    ir_measures = pytest.importorskip("ir_measures")
    measures = [ir_measures.parse_measure(m) for m in IRM]
    compared = cases = 0
    for seed in SEEDS:
        c = h.case(seed)
        if not _usable(c) or _all_negative(_dicts(c)[0]):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        qrels_list = list(ir_measures.read_trec_qrels(str(qrels)))
        run_list = list(ir_measures.read_trec_run(str(run)))
        per_query: dict[str, dict[str, float]] = {}
        for metric in ir_measures.iter_calc(measures, qrels_list, run_list):
            per_query.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
        aggregate = ir_measures.calc_aggregate(measures, qrels_list, run_list)
        res = ours(qrels, run, "ir_measures", list(IRM.values()))
        cases += 1
        for theirs_name, mine in IRM.items():
            m = ir_measures.parse_measure(theirs_name)
            got = res.values(mine)
            assert set(got) == set(per_query[str(m)]), (seed, mine)
            for q, want in per_query[str(m)].items():
                _assert_close(got[q], want, (seed, q, mine))
                compared += 1
            _assert_close(res.mean(mine), aggregate[m], (seed, "mean", mine))
    print(f"ir_measures: {compared} per-query values compared on {cases} cases")
    assert cases >= 20 and compared > 2000


# ------------------------------------------------------------------------------------------------- ranx


def _tied(rd: dict[str, dict[str, float]]) -> bool:
    return any(len(set(scores.values())) < len(scores) for scores in rd.values())


def test_ranx_profiles_per_query(tmp_path):
    """ranx's metric functions on the arrays ``ranx.evaluate(make_comparable=True)`` builds. Left out:
    the cases with tied scores (ranx orders them as numba's argsort leaves them: the profile's notes). ranx's
    ``precision`` without a cutoff and ``f1`` have no qrelkit measure (docs/conventions.md)."""
    pytest.importorskip("ranx")
    from ranx import metrics as mt

    from .test_profile_parity import _ranx_arrays

    compared = cases = 0
    for seed in range(4 * len(SEEDS)):  # about one case in four is free of ties
        c = h.case(seed)
        if not _usable(c):
            continue
        qd, rd = _dicts(c)
        if _tied(rd):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        queries, qrels_list, run_list = _ranx_arrays(qd, rd)
        cases += 1
        for rel in (1, 2):
            r = f"(rel={rel})"
            theirs = {
                f"P{r}@5": mt.precision(qrels_list, run_list, 5, rel),
                f"R{r}@10": mt.recall(qrels_list, run_list, 10, rel),
                f"R{r}": mt.recall(qrels_list, run_list, 0, rel),
                f"AP{r}@10": mt.average_precision(qrels_list, run_list, 10, rel),
                f"AP{r}": mt.average_precision(qrels_list, run_list, 0, rel),
                f"RR{r}": mt.reciprocal_rank(qrels_list, run_list, 0, rel),
                f"RR{r}@3": mt.reciprocal_rank(qrels_list, run_list, 3, rel),
                f"Rprec{r}": mt.r_precision(qrels_list, run_list, 0, rel),
                f"NumRelRet{r}@10": mt.hits(qrels_list, run_list, 10, rel),
            }
            burges = {}
            if rel == 1:  # nDCG and DCG take the grade as gain above the threshold
                theirs |= {
                    "nDCG@10": mt.ndcg(qrels_list, run_list, 10, 1),
                    "nDCG": mt.ndcg(qrels_list, run_list, 0, 1),
                    "DCG@10": mt.dcg(qrels_list, run_list, 10, 1),
                }
                burges = {
                    "nDCG@10": mt.ndcg_burges(qrels_list, run_list, 10, 1),
                    "nDCG": mt.ndcg_burges(qrels_list, run_list, 0, 1),
                }
            for profile, table in (("ranx", theirs), ("ranx-burges", burges)):
                if not table:
                    continue
                res = ours(qrels, run, profile, list(table))
                for measure, scores in table.items():
                    got = res.values(measure)
                    assert set(got) == set(queries), (seed, measure)
                    for q, want in zip(queries, scores, strict=True):
                        _assert_close(got[q], float(want), (seed, q, profile, measure))
                        compared += 1
                    _assert_close(res.mean(measure), float(np.mean(scores)), (seed, "mean", measure))
    print(f"ranx: {compared} per-query values compared on {cases} cases")
    assert cases >= 10 and compared > 500


# ---------------------------------------------------------------------------------------- scikit-learn


def test_sklearn_profile_per_query(tmp_path):
    """``ndcg_score`` and ``dcg_score`` on one row per query in both files (unjudged documents grade 0).
    Left out: the cases the profile refuses as ndcg_score does (a negative grade, a judged query with one
    returned document). Ties are kept: both average them."""
    metrics = pytest.importorskip("sklearn.metrics")
    table = {"nDCG@10": (metrics.ndcg_score, 10), "nDCG@3": (metrics.ndcg_score, 3),
             "nDCG": (metrics.ndcg_score, None), "DCG@10": (metrics.dcg_score, 10),
             "DCG": (metrics.dcg_score, None)}  # fmt: skip
    compared = cases = 0
    for seed in range(3 * len(SEEDS)):  # about one case in three has no negative grade
        c = h.case(seed)
        if not _usable(c):
            continue
        qd, rd = _dicts(c)
        if any(g < 0 for d in qd.values() for g in d.values()):
            continue
        if any(len(rd[q]) < 2 for q in rd if q in qd):
            continue
        queries = sorted(q for q in rd if q in qd)
        if not queries:
            continue
        qrels, run = c.write(tmp_path / str(seed))
        res = ours(qrels, run, "sklearn", list(table))
        cases += 1
        for measure, (fn, k) in table.items():
            got = res.values(measure)
            assert set(got) == set(queries), (seed, measure)
            values = []
            for q in queries:
                docs = list(rd[q])
                y_true = np.array([[qd[q].get(d, 0) for d in docs]], dtype=float)
                y_score = np.array([[rd[q][d] for d in docs]])
                want = float(fn(y_true, y_score, k=k))
                _assert_close(got[q], want, (seed, q, measure))
                values.append(want)
                compared += 1
            _assert_close(res.mean(measure), math.fsum(values) / len(values), (seed, "mean", measure))
    print(f"sklearn: {compared} per-query values compared on {cases} cases")
    assert cases >= 20 and compared > 300
