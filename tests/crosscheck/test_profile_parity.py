"""Profile parity for every measure each library offers, on the real TREC judgments.

Each test reads one of the NIST qrels files in ``tests/data/trec/`` and a generated run with heavy ties
(scores on a 0.1 grid), near-ties 1e-9 apart that only single precision merges, unjudged documents, judged
queries missing from the run and a run query nobody judged, then compares qrelkit under the library's
profile with the library itself, per query and in the mean, with ``==`` (scikit-learn and trectools to
1e-9: docs/conventions.md, "Bit for bit"): recall, precision, AP, RR,
R-precision, Judged, NumRel, NumRet, NumRelRet, nDCG and DCG, wherever the library offers the measure.
Where a library computes one family with other code (ir_measures' RR@k and Judged, trectools' binary
measures), the profile's per-family axes (``Conventions.by_measure``) reproduce it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qrelkit import evaluate, read_qrels, read_run
from qrelkit.measures.profiles import PROFILES

from ..conftest import data_path

#: every profile of a deterministic tool gives its doubles (docs/conventions.md, "Bit for bit")
TOL = 0.0
#: scikit-learn (a BLAS dot product) and trectools (pandas' sums), the exceptions listed there
NOT_BITWISE = 1e-9


def generated_run(
    qrels_path: Path,
    seed: int,
    *,
    ties: bool = True,
    near_ties: bool = True,
    min_docs: int = 1,
    extra_query: bool = True,
) -> list[tuple[str, str, float]]:
    """(query, document, score) rows: per judged query a mix of judged and unjudged documents; about one
    judged query in ten left out; one run query nobody judged."""
    rng = np.random.default_rng(seed)
    qrels = read_qrels(qrels_path)
    by_query = qrels.frame.group_by("query_id", maintain_order=True).agg("doc_id")
    rows: list[tuple[str, str, float]] = []
    for qid, docs in by_query.iter_rows():
        if rng.random() < 0.1:
            continue  # judged query missing from the run
        n = int(rng.integers(min_docs, 150))
        judged = list(rng.choice(docs, size=min(len(docs), int(n * rng.uniform(0.3, 0.9))), replace=False))
        chosen = judged + [f"U{qid}x{i}" for i in range(n - len(judged))]
        rng.shuffle(chosen)
        if ties:
            scores = np.round(rng.normal(10, 3, len(chosen)), 1)
            if near_ties:
                scores[rng.random(len(chosen)) < 0.05] += 1e-9
        else:
            scores = 1.0 + rng.permutation(len(chosen)) * 0.37
        rows += [(qid, str(d), float(s)) for d, s in zip(chosen, scores, strict=True)]
    if extra_query:
        rows += [("77777", f"orphan{i}", float(i + 1)) for i in range(5)]
    return rows


def write_run(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    rank: dict[str, int] = {}
    lines = []
    for q, d, s in rows:
        rank[q] = rank.get(q, 0) + 1
        lines.append(f"{q} Q0 {d} {rank[q]} {s!r} gen\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def ours(qrels_path: Path, run_path: Path, profile: str, measures: list[str]):
    p = PROFILES[profile]
    qrels = read_qrels(qrels_path, on_duplicate=p.on_duplicate)
    run = read_run(run_path, on_duplicate=p.on_duplicate)
    return evaluate(qrels, run, measures, p.conventions)


def assert_values(got: dict[str, float], expected: dict[str, float], what: str, tol: float = TOL) -> None:
    assert set(got) == set(expected), (what, sorted(set(got) ^ set(expected))[:5])
    for q, value in expected.items():
        assert abs(got[q] - value) <= tol, (what, q, got[q], value)


def as_dicts(qrels_path: Path, rows):
    qd = read_qrels(qrels_path).to_dict()
    rd: dict[str, dict[str, float]] = {}
    for q, d, s in rows:
        rd.setdefault(q, {})[d] = s
    return qd, rd


QRELS = ["qrels.dl19-passage.txt", "qrels.dl20-doc.txt", "qrels.covid-complete.txt", "qrels.covid-round1.txt"]


# ------------------------------------------------------------------------------------------- ir_measures

#: ir_measures' name -> qrelkit's (the provider ir_measures 0.4.3 picks: pytrec_eval, msmarco for RR@k,
#: judged for Judged)
IRM = {
    "P@5": "P@5",
    "P@10": "P@10",
    "P(rel=2)@10": "P(rel=2)@10",
    "R@10": "R@10",
    "R@100": "R@100",
    "R(rel=2)@100": "R(rel=2)@100",
    "AP": "AP",
    "AP@10": "AP@10",
    "AP(rel=2)": "AP(rel=2)",
    "RR": "RR",
    "RR@10": "RR@10",
    "RR(rel=2)@10": "RR(rel=2)@10",
    "Rprec": "Rprec",
    "Judged@10": "Judged@10",
    "Judged@200": "Judged@200",
    "NumRel": "NumRel",
    "NumRet": "NumRet",
    "NumRet(rel=1)": "NumRelRet",
    "nDCG@10": "nDCG@10",
    "nDCG": "nDCG",
    "IPrec@0.1": "IPrec(recall=0.1)",
    "IPrec@0.3": "IPrec(recall=0.3)",
    "IPrec(rel=2)@0.7": "IPrec(rel=2,recall=0.7)",
}


@pytest.mark.parametrize("name", QRELS)
def test_ir_measures_every_measure(name, tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    qp = data_path("trec", name)
    rp = write_run(tmp_path / "run.txt", generated_run(qp, seed=len(name)))
    measures = [ir_measures.parse_measure(m) for m in IRM]
    qrels_list = list(ir_measures.read_trec_qrels(str(qp)))
    run_list = list(ir_measures.read_trec_run(str(rp)))
    aggregate = ir_measures.calc_aggregate(measures, qrels_list, run_list)
    per_query: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(measures, qrels_list, run_list):
        per_query.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
    res = ours(qp, rp, "ir_measures", list(IRM.values()))
    for theirs, mine in IRM.items():
        m = str(ir_measures.parse_measure(theirs))
        assert_values(res.values(mine), per_query[m], mine)
        assert abs(res.mean(mine) - aggregate[ir_measures.parse_measure(theirs)]) <= TOL, mine


def test_ir_measures_judged_counts_negative_grades_and_divides_by_the_run_length(tmp_path):
    """By hand: 3 documents returned, one judged -1, one judged 1, one unjudged: Judged@10 = 2/3."""
    ir_measures = pytest.importorskip("ir_measures")
    qp = tmp_path / "qrels.txt"
    qp.write_text("1 0 a -1\n1 0 b 1\n2 0 z 1\n")
    rp = write_run(tmp_path / "run.txt", [("1", "a", 3.0), ("1", "b", 2.0), ("1", "c", 1.0)])
    m = ir_measures.parse_measure("Judged@10")
    theirs = {
        x.query_id: x.value
        for x in ir_measures.iter_calc(
            [m], ir_measures.read_trec_qrels(str(qp)), ir_measures.read_trec_run(str(rp))
        )
    }
    res = ours(qp, rp, "ir_measures", ["Judged@10", "NumRel"])
    assert res.values("Judged@10") == pytest.approx({"1": 2 / 3, "2": 0.0}, abs=1e-15)
    assert theirs["1"] == pytest.approx(2 / 3, abs=1e-15)
    assert res.values("NumRel") == {"1": 1.0, "2": 0.0}  # query 2 is missing from the run: 0, not 1


# ------------------------------------------------------------------------------------------- pytrec_eval

PYTREC = {
    "P_5": "P@5",
    "P_10": "P@10",
    "recall_10": "R@10",
    "recall_100": "R@100",
    "map": "AP",
    "map_cut_10": "AP@10",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "num_rel": "NumRel",
    "num_ret": "NumRet",
    "num_rel_ret": "NumRelRet",
    "ndcg": "nDCG",
    "ndcg_cut_10": "nDCG@10",
    "bpref": "bpref",  # m_bpref.c: the same in trec_eval 9.0.5 and 10 but for float -> double storage
}


@pytest.mark.parametrize("rel", [1, 2])
@pytest.mark.parametrize("name", QRELS)
@pytest.mark.parametrize("profile", ["pytrec_eval", "trec_eval9", "trec_eval"])
def test_pytrec_eval_every_measure(profile, name, rel, tmp_path):
    """trec_eval 10 ranks in double precision: its profile is checked on runs without near-ties."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=len(name) + rel, near_ties=profile != "trec_eval")
    rp = write_run(tmp_path / "run.txt", rows)
    qd, rd = as_dicts(qp, rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, set(PYTREC), relevance_level=rel).evaluate(rd)
    mapping = {t: _with_rel(m, rel) for t, m in PYTREC.items()}
    res = ours(qp, rp, profile, list(mapping.values()))
    for trec_name, mine in mapping.items():
        expected = {q: v[trec_name] for q, v in theirs.items()}
        assert_values(res.values(mine), expected, mine)
        assert abs(res.mean(mine) - math.fsum(expected.values()) / len(expected)) <= TOL


#: pytrec_eval's interpolated precision: trec_eval 9 reads recall level r at the t-th relevant document,
#: t = (long)(r * R + 0.9) (m_iprec_at_recall.c line 65, m_11pt_avg.c line 74 in 9.0.5), where trec_eval 10
#: rounds (lround: lines 71 and 81); the levels 0.15, 0.35, 0.65 are where the two differ most often
IPREC_LEVELS = "0.15,0.35,0.65"
IPREC = {
    **{f"iprec_at_recall_{r / 10:3.2f}": f"IPrec(recall={r / 10!r})" for r in range(11)},
    **{f"iprec_at_recall_{float(r):3.2f}": f"IPrec(recall={float(r)!r})" for r in IPREC_LEVELS.split(",")},
    "11pt_avg": "IPrecMean",
}


@pytest.mark.parametrize("rel", [1, 2])
@pytest.mark.parametrize("name", QRELS)
@pytest.mark.parametrize("profile", ["pytrec_eval", "trec_eval9"])
def test_pytrec_eval_interpolated_precision_truncates(profile, name, rel, tmp_path):
    """iprec_at_recall at the 11 standard levels and three more, and 11pt_avg, per query to 1e-9: the
    profiles' ``iprec_cutoff=truncate``; trec_eval 10's rounding (the trec_eval profile) differs here."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=len(name) + 7 * rel)
    rp = write_run(tmp_path / "run.txt", rows)
    qd, rd = as_dicts(qp, rows)
    theirs: dict[str, dict[str, float]] = {}
    for asked in (
        {"iprec_at_recall", "11pt_avg"},
        {f"iprec_at_recall.{IPREC_LEVELS}"},
    ):  # one set of levels each
        for q, values in pytrec_eval.RelevanceEvaluator(qd, asked, relevance_level=rel).evaluate(rd).items():
            theirs.setdefault(q, {}).update(values)
    mapping = {
        t: m.replace("(", f"(rel={rel},", 1) if "(" in m else f"{m}(rel={rel})" for t, m in IPREC.items()
    }
    res = ours(qp, rp, profile, list(mapping.values()))
    rounded = ours(qp, rp, "trec_eval", list(mapping.values()))
    moved = 0
    for trec_name, mine in mapping.items():
        expected = {q: v[trec_name] for q, v in theirs.items()}
        assert_values(res.values(mine), expected, mine)
        assert abs(res.mean(mine) - math.fsum(expected.values()) / len(expected)) <= TOL
        moved += sum(abs(rounded.value(mine, q) - v) > TOL for q, v in expected.items())
    # covid-complete's queries have hundreds of relevant documents, more than the run finds: most levels
    # read past the relevant documents returned and score 0 either way
    assert moved > 0 or name == "qrels.covid-complete.txt"  # the axis matters on these judgments


def test_interpolated_precision_cutoff_by_hand(tmp_path):
    """R = 4 relevant; the run finds three, at ranks 2, 4 and 7: precision 1/2, 2/4, 3/7, interpolated 0.5,
    0.5, 3/7. Level 0.1: truncate t = (long)(0.4 + 0.9) = 1 -> 0.5; round t = lround(0.4) = 0 -> the
    first relevant document, 0.5. Level 0.6: truncate t = (long)(2.4 + 0.9) = 3 -> 3/7; round t = 2 -> 0.5.
    Level 0.8: t = (long)(3.2 + 0.9) = 4 (truncate) or 3 (round): 4 > 3 found -> 0, or 3/7."""
    qp = tmp_path / "qrels.txt"
    qp.write_text("q 0 d1 1\nq 0 d2 0\nq 0 d3 1\nq 0 d4 1\nq 0 d5 1\n")
    rows = [("q", "d2", 5.0), ("q", "d1", 4.0), ("q", "x", 3.5), ("q", "d3", 3.0), ("q", "x2", 2.5),
            ("q", "x3", 2.4), ("q", "d4", 2.0)]  # fmt: skip
    rp = write_run(tmp_path / "run.txt", rows)
    measures = ["IPrec(recall=0.1)", "IPrec(recall=0.6)", "IPrec(recall=0.8)"]
    truncated = ours(qp, rp, "pytrec_eval", measures)
    rounded = ours(qp, rp, "trec_eval", measures)
    assert [truncated.value(m, "q") for m in measures] == pytest.approx([0.5, 3 / 7, 0.0], abs=1e-15)
    assert [rounded.value(m, "q") for m in measures] == pytest.approx([0.5, 0.5, 3 / 7], abs=1e-15)
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qd, rd = as_dicts(qp, rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"iprec_at_recall"}).evaluate(rd)["q"]
    assert [
        theirs["iprec_at_recall_0.10"],
        theirs["iprec_at_recall_0.60"],
        theirs["iprec_at_recall_0.80"],
    ] == (pytest.approx([0.5, 3 / 7, 0.0], abs=1e-15))


def _with_rel(measure: str, rel: int) -> str:
    """``P@5`` -> ``P(rel=2)@5`` for the binary measures (nDCG and NumRet take no threshold)."""
    name, _, k = measure.partition("@")
    if name in ("nDCG", "NumRet") or rel == 1:
        return measure
    return f"{name}(rel={rel})" + (f"@{k}" if k else "")


# -------------------------------------------------------------------------------------------------- ranx


@pytest.fixture(scope="module")
def ranx_metrics():
    pytest.importorskip("ranx")
    from ranx import metrics

    return metrics


def _ranx_arrays(qd, rd):
    """What ranx.evaluate(..., make_comparable=True) hands its metrics (see test_profiles._ranx_arrays)."""
    from numba.typed import List

    codes: dict[str, float] = {}
    queries = sorted(qd)
    qrels_list, run_list = [], []
    for q in queries:
        judged = sorted(qd[q].items(), key=lambda item: -item[1])
        qrels_list.append(np.array([[codes.setdefault(d, len(codes)), g] for d, g in judged], dtype=float))
        ranked = sorted(rd.get(q, {}).items(), key=lambda item: -item[1])
        rows = [[codes.setdefault(d, len(codes)), s] for d, s in ranked]
        run_list.append(np.array(rows, dtype=float).reshape(len(rows), 2))
    return queries, List(qrels_list), List(run_list)


@pytest.mark.parametrize("name", ["qrels.covid-complete.txt", "qrels.dl20-doc.txt"])
@pytest.mark.parametrize("rel", [0, 1, 2])
def test_ranx_every_measure(ranx_metrics, name, rel, tmp_path):
    """ranx's order of equal scores is not deterministic, so the run has no ties. At rel=0 ranx keeps
    grades >= 0 only: the -1 grades of TREC-COVID are not relevant (negative=unjudged)."""
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=7 + rel, ties=False)
    rp = write_run(tmp_path / "run.txt", rows)
    queries, qrels_list, run_list = _ranx_arrays(*as_dicts(qp, rows))
    mt = ranx_metrics
    r = f"(rel={rel})"
    theirs = {
        f"P{r}@10": mt.precision(qrels_list, run_list, 10, rel),
        f"R{r}@100": mt.recall(qrels_list, run_list, 100, rel),
        f"R{r}": mt.recall(qrels_list, run_list, 0, rel),
        f"AP{r}@10": mt.average_precision(qrels_list, run_list, 10, rel),
        f"AP{r}": mt.average_precision(qrels_list, run_list, 0, rel),
        f"RR{r}@10": mt.reciprocal_rank(qrels_list, run_list, 10, rel),
        f"Rprec{r}": mt.r_precision(qrels_list, run_list, 0, rel),
        f"NumRelRet{r}@10": mt.hits(qrels_list, run_list, 10, rel),
    }
    if rel == 1:  # ranx's nDCG and DCG take the grade as gain above the threshold (1: every positive grade)
        theirs |= {
            "nDCG@10": mt.ndcg(qrels_list, run_list, 10, 1),
            "DCG@10": mt.dcg(qrels_list, run_list, 10, 1),
        }
    res = ours(qp, rp, "ranx", list(theirs))
    for measure, scores in theirs.items():
        expected = {q: float(v) for q, v in zip(queries, scores, strict=True)}
        assert_values(res.values(measure), expected, measure)
        assert abs(res.mean(measure) - float(np.mean(scores))) <= TOL, measure


# ------------------------------------------------------------------------------------------ scikit-learn


@pytest.mark.parametrize("name", ["qrels.dl19-passage.txt", "qrels.dl20-doc.txt", "qrels.covid-round1.txt"])
def test_sklearn_dcg_and_ndcg(name, tmp_path):
    """One row per query (unjudged documents as grade 0), padded with grade-0 documents scored below every
    real one; at least two documents per query (ndcg_score refuses one)."""
    metrics = pytest.importorskip("sklearn.metrics")
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=3, min_docs=2)
    rp = write_run(tmp_path / "run.txt", rows)
    qd, rd = as_dicts(qp, rows)
    queries = sorted(q for q in rd if q in qd)
    width = max(len(rd[q]) for q in queries)
    y_true = np.zeros((len(queries), width))
    y_score = np.full((len(queries), width), -1000.0)
    for i, q in enumerate(queries):
        for j, (d, s) in enumerate(rd[q].items()):
            y_true[i, j], y_score[i, j] = qd[q].get(d, 0), s
    res = ours(qp, rp, "sklearn", ["DCG@10", "nDCG@10"])
    for measure, fn in [("DCG@10", metrics.dcg_score), ("nDCG@10", metrics.ndcg_score)]:
        expected = {q: float(fn(y_true[i : i + 1], y_score[i : i + 1], k=10)) for i, q in enumerate(queries)}
        assert_values(res.values(measure), expected, measure, NOT_BITWISE)
        assert abs(res.mean(measure) - float(fn(y_true, y_score, k=10))) <= NOT_BITWISE, measure


# ---------------------------------------------------------------------------------------------- trectools


def _series(frame) -> dict[str, float]:
    """A trectools per-query result (DataFrame or Series) as {query: value}, undefined (NaN) rows left out."""
    series = frame.iloc[:, 0] if hasattr(frame, "columns") else frame
    return {str(q): float(v) for q, v in series.items() if not math.isnan(float(v))}


@pytest.mark.parametrize("name", ["qrels.dl20-doc.txt", "qrels.covid-complete.txt", "qrels.covid-round1.txt"])
def test_trectools_every_measure(name, tmp_path):
    """trectools orders ties by document id descending for its binary measures (ascending for nDCG), leaves
    AP and recall undefined where nothing is relevant, RR and R-precision also where nothing relevant was
    retrieved; every mean divides by the number of run queries. Document ids here are never all digits
    (pandas would read them as numbers)."""
    trectools = pytest.importorskip("trectools")
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=11)
    rp = write_run(tmp_path / "run.txt", rows)
    te = trectools.TrecEval(trectools.TrecRun(str(rp)), trectools.TrecQrel(str(qp)))
    calls = {
        "P@10": lambda **kw: te.get_precision(depth=10, **kw),
        "R@100": lambda **kw: te.get_recall(depth=100, **kw),
        "AP@100": lambda **kw: te.get_map(depth=100, **kw),
        "RR@10": lambda **kw: te.get_reciprocal_rank(depth=10, **kw),
        "nDCG@10": lambda **kw: te.get_ndcg(depth=10, **kw),
    }
    res = ours(qp, rp, "trectools", [*calls, "Judged@10", "NumRet@10", "NumRel", "NumRet", "NumRelRet"])
    judged = set(read_qrels(qp).frame.get_column("query_id").unique().to_list())
    for measure, call in calls.items():
        expected = {q: v for q, v in _series(call(per_query=True)).items() if q in judged}
        defined = {q: v for q, v in res.values(measure).items() if not math.isnan(v)}
        assert_values(defined, expected, measure, NOT_BITWISE)
        assert abs(res.mean(measure) - float(call())) <= NOT_BITWISE, measure
    counts = {
        "NumRel": te.get_relevant_documents(per_query=True),
        "NumRet": te.get_retrieved_documents(per_query=True),
        "NumRelRet": te.get_relevant_retrieved_documents(per_query=True),
    }
    for measure, series in counts.items():
        expected = {q: v for q, v in _series(series).items() if q in res.values(measure)}
        got = {q: v for q, v in res.values(measure).items() if q in expected}
        assert_values(got, expected, measure, NOT_BITWISE)
        assert len(got) > 10
    # trectools offers the unjudged fraction UNJ@k = (returned in the top k - judged in the top k) / k
    unjudged = _series(te.get_unjudged(depth=10, per_query=True))
    expected = {q: 1.0 - unjudged[q] for q in res.values("Judged@10")}
    got = {q: res.value("Judged@10", q) + (10 - res.value("NumRet@10", q)) / 10 for q in expected}
    assert_values(got, expected, "Judged@10", NOT_BITWISE)


def test_trectools_rprec_is_not_reproduced_under_pandas_3(tmp_path):
    """trectools 0.0.50's get_rprec cuts each query's top R with ``groupby("query").apply(...)``, which under
    pandas 3 no longer hands the grouping column back, and then joins with the judgments by document id
    alone: values for queries the run lacks, mixed across queries. The profile does not reproduce that;
    this test notices when trectools or pandas changes."""
    trectools = pytest.importorskip("trectools")
    pandas = pytest.importorskip("pandas")
    if int(pandas.__version__.split(".")[0]) < 3:
        pytest.skip("the cross-query join appears with pandas 3")
    qp = data_path("trec", "qrels.covid-round1.txt")
    rows = generated_run(qp, seed=12, extra_query=False)
    rp = write_run(tmp_path / "run.txt", rows)
    te = trectools.TrecEval(trectools.TrecRun(str(rp)), trectools.TrecQrel(str(qp)))
    in_run = {q for q, _, _ in rows}
    assert set(_series(te.get_rprec(per_query=True))) - in_run  # values for queries the run lacks


# ------------------------------------------------------------------------------ where the tool would stop


def _small_inputs(tmp_path: Path) -> tuple[Path, Path]:
    qp = tmp_path / "qrels.txt"
    qp.write_text("1 0 a 1\n2 0 b 1\n")
    rp = write_run(tmp_path / "run.txt", [("1", "a", 2.0), ("3", "c", 1.0)])
    return qp, rp


def test_trec_eval_10_stops_on_a_judged_query_the_run_lacks_and_the_profile_warns(tmp_path):
    """trec_eval.c (10.0), without -c: a qrels query with no results ends the program with exit status 4
    ("result qid '2' not found in qrels"); run queries without judgments are ignored."""
    from qrelkit.errors import ValidationError
    from qrelkit.evaluation.files import evaluate_files

    source = Path("/work/trec_eval-src/trec_eval.c")
    if source.exists():
        text = source.read_text()
        assert "not found in qrels" in text and "exit(4)" in text
    qp, rp = _small_inputs(tmp_path)
    res = ours(qp, rp, "trec_eval", ["P@10"])
    assert res.values("P@10") == {"1": 0.1}
    (warning,) = res.warnings
    assert "'2'" in warning and "exit status 4" in warning and "trec_eval-c" in warning
    assert not ours(qp, rp, "trec_eval-c", ["P@10"]).warnings  # -c scores it 0
    assert not ours(qp, rp, "trec_eval9", ["P@10"]).warnings  # 9.x averaged the queries in both
    conv = PROFILES["trec_eval"].conventions
    with pytest.raises(ValidationError, match="exit status 4"):
        evaluate_files(qp, [rp], ["P@10"], conv, strict=True)
    with pytest.raises(ValidationError, match="exit status 4"):
        evaluate(read_qrels(qp), read_run(rp), ["P@10"], conv, strict=True)


def test_ranx_refuses_differing_query_sets_and_the_profile_warns(ranx_metrics, tmp_path):
    """ranx.evaluate asserts equal query sets unless make_comparable=True (meta/evaluate.py; read from its
    source: building ranx's Qrels and Run compiles for minutes on a fresh machine)."""
    import inspect
    import sys

    from ranx.meta import evaluate as ranx_evaluate

    assert "Pass `make_comparable=True`" in inspect.getsource(sys.modules[ranx_evaluate.__module__])
    qp, rp = _small_inputs(tmp_path)
    res = ours(qp, rp, "ranx", ["P@10"])
    (warning,) = res.warnings
    assert "make_comparable" in warning and "1 judged missing" in warning and "1 without judgments" in warning
    assert res.to_dict()["profile_warnings"] == [warning]


def test_cli_strict_refuses_with_exit_status_1(tmp_path):
    from click.testing import CliRunner

    from qrelkit.cli import main

    qp, rp = _small_inputs(tmp_path)
    ok = CliRunner().invoke(main, ["eval", "--profile", "trec_eval", "-m", "P@10", str(qp), str(rp)])
    assert ok.exit_code == 0 and "exit status 4" in ok.stderr
    strict = CliRunner().invoke(
        main, ["eval", "--profile", "trec_eval", "--strict", "-m", "P@10", str(qp), str(rp)]
    )
    assert strict.exit_code == 1 and "exit status 4" in strict.output + strict.stderr


# ---------------------------------------------------------------------------------- ERR (gdeval provider)


#: ir_measures' names of the measures its gdeval provider computes -> qrelkit's
GDEVAL = {
    "ERR@10": "ERR@10",
    "ERR@20": "ERR@20",
    "nDCG(dcg='exp-log2')@5": "nDCG(gain=exponential)@5",
    "nDCG(dcg='exp-log2')@10": "nDCG(gain=exponential)@10",
}


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("name", QRELS)
def test_ir_measures_through_gdeval_to_the_bit(name, seed, tmp_path):
    """ir_measures computes ERR@k and nDCG(dcg='exp-log2')@k by running gdeval.pl (perl), which prints
    five decimals that ir_measures reads back with float() and adds up in the order printed. The profile's
    ``printed_decimals=5`` and ``summation=numeric_order`` for those families give the same floats: per
    query and in the mean, compared with ``==``. Plain nDCG (pytrec_eval) is not touched (it is compared
    to 1e-9 by ``test_ir_measures_every_measure``). Under the gdeval profile the queries with nothing
    relevant are left out (gdeval does not report them); under ir_measures' they score 0 and count."""
    import shutil

    ir_measures = pytest.importorskip("ir_measures")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    qp = data_path("trec", name)
    rp = write_run(tmp_path / "run.txt", generated_run(qp, seed=seed))
    measures = [ir_measures.parse_measure(m) for m in GDEVAL]
    qrels_list = list(ir_measures.read_trec_qrels(str(qp)))
    run_list = list(ir_measures.read_trec_run(str(rp)))
    aggregate = ir_measures.calc_aggregate(measures, qrels_list, run_list)
    per_query: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(measures, qrels_list, run_list):
        per_query.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
    res = ours(qp, rp, "ir_measures", list(GDEVAL.values()))
    for theirs, mine in GDEVAL.items():
        m = ir_measures.parse_measure(theirs)
        assert res.values(mine) == per_query[str(m)], mine
        assert res.mean(mine) == aggregate[m], mine
    gd = ours(qp, rp, "gdeval", ["ERR@10", "nDCG@10"])
    for measure, theirs in (("ERR@10", "ERR@10"), ("nDCG@10", "nDCG(dcg='exp-log2')@10")):
        defined = {q: v for q, v in gd.values(measure).items() if not math.isnan(v)}
        expected = per_query[str(ir_measures.parse_measure(theirs))]
        assert defined == {q: v for q, v in expected.items() if q in defined}, measure
        assert len(defined) < len(expected)  # queries with nothing relevant or missing: not reported


def test_err_by_hand():
    """Grades 3, 0, 1 at ranks 1-3 (max grade 4): R = 7/16, 0, 1/16.
    ERR = 7/16 + (9/16)(0)/2 + (9/16)(1)(1/16)/3; the ideal order 3, 1 gives 7/16 + (9/16)(1/16)/2."""
    from qrelkit import Conventions, Qrels, Run

    qrels = Qrels.from_dict({"q": {"a": 3, "b": 0, "c": 1}})
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    res = evaluate(qrels, run, ["ERR@10", "nERR@10", "ERR@1"], Conventions(ties="docid_desc"))
    err = 7 / 16 + (9 / 16) * (1 / 16) / 3
    assert res.value("ERR@10", "q") == pytest.approx(err, abs=1e-15)
    assert res.value("ERR@1", "q") == pytest.approx(7 / 16, abs=1e-15)
    assert res.value("nERR@10", "q") == pytest.approx(err / (7 / 16 + (9 / 16) * (1 / 16) / 2), abs=1e-15)


# ---------------------------------------------------------------------------------------------------- RBP


@pytest.mark.parametrize("name", ["qrels.dl20-doc.txt", "qrels.covid-complete.txt"])
def test_trectools_rbp_and_residual(name, tmp_path):
    """trectools' get_rbp (p=0.8, binary relevance, ties averaged): RBP per query (undefined where nothing
    relevant was retrieved), the residual, and their means over the run's queries."""
    trectools = pytest.importorskip("trectools")
    qp = data_path("trec", name)
    rows = generated_run(qp, seed=21, extra_query=False)
    rp = write_run(tmp_path / "run.txt", rows)
    te = trectools.TrecEval(trectools.TrecRun(str(rp)), trectools.TrecQrel(str(qp)))
    res = ours(qp, rp, "trectools", ["RBP@100", "RBP_resid@100"])
    per_query, resid = te.get_rbp(p=0.8, depth=100, per_query=True)
    mean, _ = te.get_rbp(p=0.8, depth=100)
    defined = {q: v for q, v in res.values("RBP@100").items() if not math.isnan(v)}
    assert_values(defined, _series(per_query), "RBP@100", NOT_BITWISE)
    assert abs(res.mean("RBP@100") - float(mean)) <= NOT_BITWISE
    theirs = _series(resid)
    assert_values({q: res.value("RBP_resid@100", q) for q in theirs}, theirs, "RBP_resid@100", NOT_BITWISE)
    assert len(theirs) > 10


@pytest.mark.parametrize("rel", [1, 2])
def test_ranx_rbp(ranx_metrics, rel, tmp_path):
    """ranx's rank_biased_precision weighs a relevant document by its grade, over the whole run."""
    qp = data_path("trec", "qrels.dl19-passage.txt")
    rows = generated_run(qp, seed=31 + rel, ties=False)
    rp = write_run(tmp_path / "run.txt", rows)
    queries, qrels_list, run_list = _ranx_arrays(*as_dicts(qp, rows))
    for p in (0.8, 0.95):
        scores = ranx_metrics.rank_biased_precision(qrels_list, run_list, p, rel)
        measure = f"RBP(rel={rel},persistence={p})"
        res = ours(qp, rp, "ranx", [measure])
        assert_values(
            res.values(measure), {q: float(v) for q, v in zip(queries, scores, strict=True)}, measure
        )
        assert abs(res.mean(measure) - float(np.mean(scores))) <= TOL


@pytest.mark.parametrize("profile", ["ranx", "ranx-burges"])
def test_ranx_bpref_counts_a_negative_grade_as_judged_non_relevant(profile):
    """ranx's bpref counts every judged document below the threshold as non-relevant, a negative grade
    included (ranx/metrics/bpref.py: ``n_non_rels = sum(qrels[:, 1] < rel_lvl)``): the profile's
    ``bpref(negative=zero)``. Per query to 1e-12 on graded judgments with -1 grades and distinct scores."""
    pytest.importorskip("ranx")
    import random

    import polars as pl
    from ranx import Qrels as RQrels
    from ranx import Run as RRun
    from ranx import evaluate as revaluate

    from qrelkit.formats import qrels_from_frame, run_from_frame

    rng = random.Random(5)
    qd: dict[str, dict[str, int]] = {}
    rd: dict[str, dict[str, float]] = {}
    for q in range(40):
        docs = [f"d{i}" for i in range(25)]
        for d in rng.sample(docs, 15):
            qd.setdefault(f"q{q}", {})[d] = rng.choice([-1, -1, 0, 1, 2])
        if not any(g >= 1 for g in qd[f"q{q}"].values()):
            qd[f"q{q}"]["d0"] = 1
        for i, d in enumerate(rng.sample(docs, 20)):
            rd.setdefault(f"q{q}", {})[d] = 100.0 - i
    theirs = {q: float(revaluate(RQrels({q: qd[q]}), RRun({q: rd[q]}), "bpref")) for q in qd}
    qrels = qrels_from_frame(
        pl.DataFrame(
            [(q, d, g) for q, m in qd.items() for d, g in m.items()],
            schema=["query_id", "doc_id", "grade"],
            orient="row",
        )
    )
    run = run_from_frame(
        pl.DataFrame(
            [(q, d, s) for q, m in rd.items() for d, s in m.items()],
            schema=["query_id", "doc_id", "score"],
            orient="row",
        ),
        name="r",
    )
    res = evaluate(qrels, run, ["bpref"], PROFILES[profile].conventions)
    ours_by_query = res.values("bpref")
    assert any(g < 0 for m in qd.values() for g in m.values())
    for q, value in theirs.items():
        assert abs(ours_by_query[q] - value) <= 1e-12, q
