"""Every named profile against the real tool it claims to reproduce, query by query and in the mean.

Inputs: random judgments and runs with heavy score ties (scores on a 0.1 grid), near-ties 1e-9 apart that
only single precision merges, unjudged documents, negative grades, queries with nothing relevant, judged
queries missing from the run and run queries without judgments; plus one fixed set of edge cases (all
scores equal, ties straddling the cutoff, more relevant documents than k, no relevant documents, negative
grades, scores 1e-9 apart, scientific notation, unusual document id characters).

Agreement is ``==`` (the same double) wherever the tool is deterministic and prints full precision;
scikit-learn and trectools to 1e-9 (docs/conventions.md, "Bit for bit"). Exceptions, each stated at its
test: ranx's order of tied scores is not deterministic (its inputs have no ties), trec_eval's own suite
prints four decimals (5e-5). gdeval prints five, which the profile's ``printed_decimals=5`` reproduces: its
values are compared with ``==``.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from qrelkit import evaluate, read_qrels, read_run, run_from_frame
from qrelkit.errors import ValidationError
from qrelkit.formats import qrels_from_frame
from qrelkit.measures.profiles import PROFILES

from ..conftest import data_path

#: every profile of a deterministic tool gives its doubles (docs/conventions.md, "Bit for bit")
TOL = 0.0
#: scikit-learn (a BLAS dot product) and trectools (pandas' sums), the exceptions listed there
NOT_BITWISE = 1e-9
DOC_STYLES = ["doc{}", "D.{}", "x_{}", "a:b/{}", "MARCO#{}", "é-{}", "{}-Z"]


# ------------------------------------------------------------------------------------------------ inputs


def make_case(
    seed: int, *, ties: bool = True, near_ties: bool = True, negative: bool = True, n_queries: int = 30
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, str]]]:
    """(qrels rows, run rows with the score as text, in file order). Query ids are numbers (gdeval)."""
    rng = np.random.default_rng(seed)
    qrels: list[tuple[str, str, int]] = []
    run: list[tuple[str, str, str]] = []
    grade_pool = [-1, 0, 0, 0, 1, 1, 2, 3] if negative else [0, 0, 0, 1, 1, 2, 3]
    for i in range(n_queries):
        qid = str(101 + i)
        style = DOC_STYLES[i % len(DOC_STYLES)]
        n_judged = int(rng.integers(1, 30))
        judged = [style.format(f"{qid}.{j}") for j in range(n_judged)]
        nothing_relevant = rng.random() < 0.1
        for d in judged:
            g = int(rng.choice(grade_pool))
            qrels.append((qid, d, min(g, 0) if nothing_relevant else g))
        if rng.random() < 0.12:
            continue  # judged query missing from the run
        n_ret = int(rng.integers(2, 40))
        take = list(
            rng.choice(judged, size=min(len(judged), int(n_ret * rng.uniform(0.3, 1.0))), replace=False)
        )
        docs = take + [style.format(f"{qid}.u{j}") for j in range(n_ret - len(take))]
        rng.shuffle(docs)
        if ties:
            scores = np.round(rng.normal(5, 1.5, len(docs)), 1)
            if near_ties:
                scores[rng.random(len(docs)) < 0.1] += 1e-9
        else:
            scores = 1.0 + rng.permutation(len(docs)) * 0.37
        run += [(qid, d, repr(float(s))) for d, s in zip(docs, scores, strict=True)]
    for j in range(3):  # a run query nobody judged
        run.append(("999", f"orphan{j}", repr(float(j + 1))))
    return qrels, run


def edge_case(*, ties: bool = True, negative: bool = True) -> tuple[list, list]:
    """One query per edge case (query id: what it tests)."""
    qrels: list[tuple[str, str, int]] = []
    run: list[tuple[str, str, str]] = []

    def add(qid: str, judged: dict[str, int], ranked: list[tuple[str, str]]) -> None:
        qrels.extend((qid, d, g) for d, g in judged.items())
        run.extend((qid, d, s) for d, s in ranked)

    # 1: all scores equal
    add("1", {"a": 3, "b": 0, "c": 1, "d": 2}, [(d, "1.0") for d in "abcdefghijkl"] if ties else [])
    # 2: a tied block straddling the cutoff (ranks 8-13 tie)
    docs2 = [f"t{i:02d}" for i in range(16)]
    add(
        "2",
        {"t03": 2, "t09": 3, "t11": 1, "t12": 2, "t15": 1},
        [(d, str(20 - i) if (i < 7 or i > 12 or not ties) else "5.5") for i, d in enumerate(docs2)],
    )
    # 3: more relevant documents than k
    add("3", {f"r{i}": 1 + i % 3 for i in range(25)}, [(f"r{i}", str(30 - i)) for i in range(0, 25, 2)])
    # 4: no relevant document at all
    add("4", {"n1": 0, "n2": 0}, [("n1", "2.0"), ("n2", "1.0"), ("n3", "0.5")])
    # 5: negative grades
    if negative:
        add("5", {"m1": -1, "m2": 2, "m3": -1, "m4": 1}, [("m1", "4"), ("m2", "3"), ("m3", "2"), ("m4", "1")])
    # 6: scores 1e-9 apart (distinct in double, equal in single precision)
    add("6", {"p1": 1, "p2": 3}, [("p1", "0.300000001"), ("p2", "0.3"), ("p3", "0.2")])
    # 7: scientific notation
    add("7", {"s1": 2, "s2": 1}, [("s1", "1.5e-05"), ("s2", "2.5E-05"), ("s3", "1e-3"), ("s4", "-2e+00")])
    # 8: unusual document id characters
    add(
        "8",
        {"ü/ß": 2, "doc#1;x": 1, "a|b": 3},
        [("ü/ß", "3"), ("doc#1;x", "2"), ("a|b", "1"), ("{x}", "0.5")],
    )
    # 9: relevant documents found only below the cutoff
    add("9", {"late": 3}, [(f"e{i}", str(100 - i)) for i in range(12)] + [("late", "1")])
    return qrels, run


def frames(qrels_rows, run_rows, on_duplicate="error"):
    qrels = qrels_from_frame(
        pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "grade"], orient="row"),
        on_duplicate=on_duplicate,
    )
    run = run_from_frame(
        pl.DataFrame(
            [(q, d, float(s)) for q, d, s in run_rows], schema=["query_id", "doc_id", "score"], orient="row"
        ),
        on_duplicate=on_duplicate,
    )
    return qrels, run


def as_dicts(qrels_rows, run_rows):
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels_rows:
        qd.setdefault(q, {})[d] = g
    rd: dict[str, dict[str, float]] = {}
    for q, d, s in run_rows:
        rd.setdefault(q, {})[d] = float(s)
    return qd, rd


def write_files(tmp_path: Path, qrels_rows, run_rows) -> tuple[Path, Path]:
    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels_rows), encoding="utf-8")
    lines, rank = [], {}
    for q, d, s in run_rows:
        rank[q] = rank.get(q, 0) + 1
        lines.append(f"{q} Q0 {d} {rank[q]} {s} tag\n")
    rp.write_text("".join(lines), encoding="utf-8")
    return qp, rp


def ours(qrels, run, profile: str, measures=("nDCG@10",)):
    return evaluate(qrels, run, list(measures), PROFILES[profile].conventions)


def assert_per_query(got: dict[str, float], expected: dict[str, float], tol: float, what: str) -> None:
    assert set(got) == set(expected), (what, sorted(set(got) ^ set(expected)))
    for q, value in expected.items():
        assert abs(got[q] - value) <= tol, (what, q, got[q], value)


CASES = {
    "random-1": lambda: make_case(1),
    "random-2": lambda: make_case(2, n_queries=40),
    "edge": lambda: edge_case(),
}


# ---------------------------------------------------------------------------------- trec_eval, pytrec_eval


@pytest.fixture(scope="module")
def pytrec_eval():
    return pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("profile", ["pytrec_eval", "trec_eval9"])
def test_pytrec_eval_profiles(pytrec_eval, profile, case):
    qrels_rows, run_rows = CASES[case]()
    qd, rd = as_dicts(qrels_rows, run_rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10", "ndcg_cut_5", "ndcg"}).evaluate(rd)
    res = ours(*frames(qrels_rows, run_rows), profile, ("nDCG@10", "nDCG@5", "nDCG"))
    for trec_name, measure in [("ndcg_cut_10", "nDCG@10"), ("ndcg_cut_5", "nDCG@5"), ("ndcg", "nDCG")]:
        expected = {q: v[trec_name] for q, v in theirs.items()}
        assert_per_query(res.values(measure), expected, TOL, measure)
        assert abs(res.mean(measure) - math.fsum(expected.values()) / len(expected)) <= TOL


def test_pytrec_eval_refuses_duplicates_and_so_does_the_profile(pytrec_eval, tmp_path):
    qrels_rows, run_rows = edge_case()
    run_rows = [*run_rows, run_rows[0]]
    _, rp = write_files(tmp_path, qrels_rows, run_rows)
    with rp.open() as handle, pytest.raises(AssertionError):
        pytrec_eval.parse_run(handle)
    with pytest.raises(ValidationError, match=r"twice|duplicate"):
        read_run(rp, on_duplicate=PROFILES["pytrec_eval"].on_duplicate)


@pytest.mark.parametrize("case", ["random-1", "random-2"])
def test_pytrec_eval_without_float32_ties(pytrec_eval, case):
    """trec_eval 10 ranks in double precision; without near-ties pytrec_eval (trec_eval 9) agrees with it."""
    seed = {"random-1": 1, "random-2": 2}[case]
    qrels_rows, run_rows = make_case(seed, near_ties=False)
    qd, rd = as_dicts(qrels_rows, run_rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(rd)
    res = ours(*frames(qrels_rows, run_rows), "trec_eval")
    assert_per_query(res.values("nDCG@10"), {q: v["ndcg_cut_10"] for q, v in theirs.items()}, TOL, case)


def test_trec_eval_c_mean(pytrec_eval):
    """trec_eval -c: judged queries the run lacks score 0 and count; the mean is over every qrels query."""
    qrels_rows, run_rows = make_case(3, near_ties=False)
    qd, rd = as_dicts(qrels_rows, run_rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(rd)
    res = ours(*frames(qrels_rows, run_rows), "trec_eval-c")
    expected = {q: theirs[q]["ndcg_cut_10"] if q in theirs else 0.0 for q in qd}
    assert len(expected) > len(theirs)  # the case has judged queries missing from the run
    assert_per_query(res.values("nDCG@10"), expected, TOL, "-c")
    assert abs(res.mean("nDCG@10") - math.fsum(expected.values()) / len(qd)) <= TOL


@pytest.mark.parametrize("case", ["random-1", "edge"])
def test_pytrec_eval_judged_only(pytrec_eval, case):
    """trec_eval -J (judged_docs_only_flag): unjudged and negative-grade documents leave the ranking."""
    qrels_rows, run_rows = make_case(4, near_ties=False) if case == "random-1" else edge_case()
    qrels_rows = [r for r in qrels_rows if r[0] != "6"]  # the 1e-9 pair is a float32 tie in trec_eval 9
    run_rows = [r for r in run_rows if r[0] != "6"]
    qd, rd = as_dicts(qrels_rows, run_rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}, judged_docs_only_flag=True).evaluate(rd)
    res = ours(*frames(qrels_rows, run_rows), "trec_eval-J")
    assert_per_query(res.values("nDCG@10"), {q: v["ndcg_cut_10"] for q, v in theirs.items()}, TOL, case)


INFAP_QRELS = [("1", "d1", 1), ("1", "d2", -1), ("1", "d3", 1), ("1", "d4", 0)]
INFAP_RUN = [("1", "d2", "0.9"), ("1", "d1", "0.8"), ("1", "d4", "0.7"), ("1", "d3", "0.6")]


@pytest.mark.parametrize("profile", ["trec_eval", "trec_eval9", "pytrec_eval"])
def test_infap_counts_a_negative_grade_as_in_the_pool(profile, tmp_path, cli):
    """trec_eval's infAP counts a document judged with a negative grade as "in the pool, unjudged".
    By hand (eps = 1e-5): d1 at rank 1 has one pooled document above it, 1/2 + 1/2 * (1/1) * (eps / 2 eps)
    = 0.75; d3 at rank 3 has d1, d4 and d2 above, 1/4 + 3/4 * (3/3) * ((1 + eps) / (2 + 2 eps)) = 0.625;
    infAP = (0.75 + 0.625) / 2 = 0.6875 (without the pool: (0.5 + 0.5) / 2 = 0.5)."""
    res = ours(*frames(INFAP_QRELS, INFAP_RUN), profile, ("infAP",))
    assert abs(res.values("infAP")["1"] - 0.6875) <= 1e-12
    qp, rp = write_files(tmp_path, INFAP_QRELS, INFAP_RUN)
    out = cli("eval", "--profile", profile, "-m", "infAP", qp, rp)  # the small reader's path
    assert out.exit_code == 0, out.output
    assert out.stdout.strip().splitlines()[-1].split("\t")[-1] == "0.6875"
    dropin = cli("trec_eval", "-m", "infAP", qp, rp)
    assert dropin.stdout.split() == ["infAP", "all", "0.6875"]


@pytest.mark.parametrize("case", ["random-1", "random-2", "edge"])
@pytest.mark.parametrize("profile", ["pytrec_eval", "trec_eval9", "trec_eval"])
def test_infap_with_negative_grades_as_pytrec_eval(pytrec_eval, profile, case):
    """infAP on judgments with negative grades, per query against pytrec_eval (trec_eval 9); trec_eval 10
    ranks in double precision, so its profile is compared on inputs without float32 near-ties."""
    seed = {"random-1": 1, "random-2": 2}.get(case)
    near = profile != "trec_eval"
    qrels_rows, run_rows = edge_case() if seed is None else make_case(seed, near_ties=near)
    if not near:
        qrels_rows = [r for r in qrels_rows if r[0] != "6"]  # the 1e-9 pair is a float32 tie in trec_eval 9
        run_rows = [r for r in run_rows if r[0] != "6"]
    assert any(g < 0 for _, _, g in qrels_rows)
    qd, rd = as_dicts(qrels_rows, run_rows)
    theirs = pytrec_eval.RelevanceEvaluator(qd, {"infAP"}).evaluate(rd)
    res = ours(*frames(qrels_rows, run_rows), profile, ("infAP",))
    assert_per_query(res.values("infAP"), {q: v["infAP"] for q, v in theirs.items()}, 1e-12, case)


def _suite_expected(name: str) -> dict[tuple[str, str], float]:
    rows = {}
    for line in data_path("trec_eval-tests", name).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        if measure.startswith("ndcg"):
            rows[(measure, query)] = float(value)
    return rows


@pytest.mark.parametrize(
    ("profile", "expected", "qrels", "run"),
    [
        ("trec_eval", "out.test.aq", "qrels.test", "results.test"),
        ("trec_eval-c", "out.test.aqc", "qrels.test", "results.trunc"),
        ("trec_eval", "out.test.aql", "qrels.rel_level", "results.test"),
    ],
)
def test_trec_eval_suite_outputs(profile, expected, qrels, run):
    """trec_eval 10's own expected outputs (printed to 4 decimals: agreement to 5e-5)."""
    rows = _suite_expected(expected)
    measures = {m: f"nDCG@{m.split('_')[-1]}" for m, _ in rows if re.fullmatch(r"ndcg_cut_\d+", m)}
    measures["ndcg"] = "nDCG"
    res = evaluate(
        read_qrels(data_path("trec_eval-tests", qrels)),
        read_run(data_path("trec_eval-tests", run), on_duplicate=PROFILES[profile].on_duplicate),
        sorted(set(measures.values())),
        PROFILES[profile].conventions,
    )
    checked = 0
    for (trec_name, query), value in rows.items():
        if trec_name not in measures:
            continue
        got = res.mean(measures[trec_name]) if query == "all" else res.value(measures[trec_name], query)
        assert abs(got - value) <= 5e-5 + 1e-12, (trec_name, query, got, value)
        checked += 1
    assert checked > 30


# ------------------------------------------------------------------------------------------- ir_measures


@pytest.mark.parametrize("case", CASES)
def test_ir_measures_profile(case, tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    qrels_rows, run_rows = CASES[case]()
    qp, rp = write_files(tmp_path, qrels_rows, run_rows)
    measures = [ir_measures.parse_measure(m) for m in ("nDCG@10", "nDCG@5", "nDCG")]
    qrels_list = list(ir_measures.read_trec_qrels(str(qp)))
    run_list = list(ir_measures.read_trec_run(str(rp)))
    result = ir_measures.calc(measures, qrels_list, run_list)
    profile = PROFILES["ir_measures"]
    res = evaluate(
        read_qrels(qp, on_duplicate=profile.on_duplicate),
        read_run(rp, on_duplicate=profile.on_duplicate),
        [str(m) for m in measures],
        profile.conventions,
    )
    for m in measures:
        expected = {x.query_id: x.value for x in result.per_query if x.measure == m}
        assert_per_query(res.values(str(m)), expected, TOL, str(m))
        assert abs(res.mean(str(m)) - result.aggregated[m]) <= TOL


def test_ir_measures_keeps_the_last_duplicate_and_so_does_the_profile(tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    qrels_rows = [("1", "a", 2), ("1", "b", 1), ("1", "c", 0)]
    # "a" listed twice: first with the top score, last with the bottom one
    run_rows = [("1", "a", "3.0"), ("1", "b", "2.0"), ("1", "c", "1.0"), ("1", "a", "0.5")]
    qp, rp = write_files(tmp_path, qrels_rows, run_rows)
    m = ir_measures.parse_measure("nDCG@10")
    theirs = ir_measures.calc_aggregate(
        [m], list(ir_measures.read_trec_qrels(str(qp))), list(ir_measures.read_trec_run(str(rp)))
    )[m]
    profile = PROFILES["ir_measures"]
    run = read_run(rp, on_duplicate=profile.on_duplicate)
    got = evaluate(read_qrels(qp), run, ["nDCG@10"], profile.conventions).mean("nDCG@10")
    # by hand: ranking b(1), c(0), a(2): (1 + 2/log2(4)) / (2 + 1/log2(3))
    assert got == pytest.approx((1 + 2 / 2) / (2 + 1 / math.log2(3)), abs=1e-12)
    assert abs(got - theirs) <= TOL
    assert run.meta["duplicates_removed"] == 1


# -------------------------------------------------------------------------------------------------- ranx


@pytest.fixture(scope="module")
def ranx_metrics():
    """ranx compiles its kernels with numba on first use: import once per session. The test calls ranx's
    public array-level functions (``ranx.metrics.ndcg``, ``ndcg_burges``), which skip the numba-compiled
    Qrels/Run builders (about a minute of compilation on a fresh machine) but run the same metric code
    ``ranx.evaluate`` runs."""
    pytest.importorskip("ranx")
    from ranx import metrics

    return metrics


def _ranx_arrays(qd, rd):
    """The arrays ranx.evaluate(..., make_comparable=True) hands its metrics: one per qrels query (run
    queries without judgments removed, judged queries missing from the run empty), qrels rows sorted by
    grade descending (Qrels.sort), run rows by score descending (Run.sort), document ids as float codes."""
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


@pytest.mark.parametrize("case", ["random-1", "random-2", "edge"])
def test_ranx_profiles(ranx_metrics, case):
    """ranx's order of equal scores is whatever numba's argsort leaves, so these inputs have no ties."""
    if case == "edge":
        qrels_rows, run_rows = edge_case(ties=False)
        qrels_rows = [r for r in qrels_rows if r[0] != "1"]
    else:
        qrels_rows, run_rows = make_case(int(case[-1]) + 10, ties=False)
    queries, qrels_list, run_list = _ranx_arrays(*as_dicts(qrels_rows, run_rows))
    for profile, metric in [("ranx", ranx_metrics.ndcg), ("ranx-burges", ranx_metrics.ndcg_burges)]:
        scores = metric(qrels_list, run_list, 10)
        expected = {q: float(v) for q, v in zip(queries, scores, strict=True)}
        res = ours(*frames(qrels_rows, run_rows), profile)
        assert_per_query(res.values("nDCG@10"), expected, TOL, profile)
        assert abs(res.mean("nDCG@10") - float(np.mean(scores))) <= TOL


@pytest.mark.parametrize("case", ["random-1", "random-2", "edge"])
def test_ranx_precision_and_f1(ranx_metrics, case):
    """ranx's ``precision`` without a cutoff (k=0: every returned document) and ``f1`` at k and without,
    per query and in the mean, on inputs without ties."""
    if case == "edge":
        qrels_rows, run_rows = edge_case(ties=False)
        qrels_rows = [r for r in qrels_rows if r[0] != "1"]
    else:
        qrels_rows, run_rows = make_case(int(case[-1]) + 10, ties=False)
    queries, qrels_list, run_list = _ranx_arrays(*as_dicts(qrels_rows, run_rows))
    pairs = [
        ("P", ranx_metrics.precision(qrels_list, run_list, 0)),
        ("P(rel=2)", ranx_metrics.precision(qrels_list, run_list, 0, 2)),
        ("F1@10", ranx_metrics.f1(qrels_list, run_list, 10)),
        ("F1@3", ranx_metrics.f1(qrels_list, run_list, 3)),
        ("F1(rel=2)@5", ranx_metrics.f1(qrels_list, run_list, 5, 2)),
        ("F1", ranx_metrics.f1(qrels_list, run_list, 0)),
    ]
    res = ours(*frames(qrels_rows, run_rows), "ranx", [m for m, _ in pairs])
    for measure, scores in pairs:
        expected = {q: float(v) for q, v in zip(queries, scores, strict=True)}
        name = str(res.measures[[m for m, _ in pairs].index(measure)])
        assert_per_query(res.values(name), expected, 1e-12, measure)
        assert abs(res.mean(name) - float(np.mean(scores))) <= 1e-12


def test_f1_by_hand():
    """Query 1 returns a(2), b(0), c(1), x (unjudged); d(1) is not returned; R = 3 (a, c, d).
    F1@2: h = 1, P = 1/2, R = 1/3, 2 * (1/6) / (5/6) = 0.4; F1: h = 2, P = 2/4, R = 2/3, 2 * (1/3) / (7/6) = 4/7;
    P = 2/4."""
    qrels = [("1", "a", 2), ("1", "b", 0), ("1", "c", 1), ("1", "d", 1)]
    run = [("1", "a", "4"), ("1", "b", "3"), ("1", "c", "2"), ("1", "x", "1")]
    res = evaluate(*frames(qrels, run), ["F1@2", "F1", "P"])
    assert res.values("F1(rel=1)@2")["1"] == pytest.approx(0.4, abs=1e-15)
    assert res.values("F1(rel=1)")["1"] == pytest.approx(4 / 7, abs=1e-15)
    assert res.values("P(rel=1)")["1"] == pytest.approx(0.5, abs=1e-15)


# ------------------------------------------------------------------------------------------ scikit-learn


def _sklearn_matrix(qrels_rows, run_rows):
    """One row per query in both inputs: y_true = grade (unjudged 0), padded with grade-0 documents whose
    score is below every real one (neutral: they only occupy positions after the real documents)."""
    qd, rd = as_dicts(qrels_rows, run_rows)
    queries = sorted(q for q in rd if q in qd)
    width = max(len(rd[q]) for q in queries)
    floor = min(s for q in queries for s in rd[q].values()) - 1000.0
    y_true = np.zeros((len(queries), width))
    y_score = np.full((len(queries), width), floor)
    for i, q in enumerate(queries):
        for j, (d, s) in enumerate(rd[q].items()):
            y_true[i, j] = qd[q].get(d, 0)
            y_score[i, j] = s
    return queries, y_true, y_score


@pytest.mark.parametrize("case", CASES)
def test_sklearn_profile(case):
    metrics = pytest.importorskip("sklearn.metrics")
    if case == "edge":
        qrels_rows, run_rows = edge_case(negative=False)
    else:
        qrels_rows, run_rows = make_case(int(case[-1]) + 20, negative=False)
    queries, y_true, y_score = _sklearn_matrix(qrels_rows, run_rows)
    expected = {
        q: float(metrics.ndcg_score(y_true[i : i + 1], y_score[i : i + 1], k=10))
        for i, q in enumerate(queries)
    }
    mean = float(metrics.ndcg_score(y_true, y_score, k=10))
    res = ours(*frames(qrels_rows, run_rows), "sklearn")
    assert_per_query(res.values("nDCG@10"), expected, NOT_BITWISE, case)
    assert abs(res.mean("nDCG@10") - mean) <= NOT_BITWISE


def test_sklearn_refusals_are_the_profiles_refusals():
    metrics = pytest.importorskip("sklearn.metrics")
    profile = PROFILES["sklearn"]
    with pytest.raises(ValueError):
        metrics.ndcg_score([[2, -1, 0]], [[3.0, 2.0, 1.0]])
    qrels, run = frames([("1", "a", 2), ("1", "b", -1)], [("1", "a", "3"), ("1", "b", "2")])
    with pytest.raises(ValidationError, match="negative"):
        evaluate(qrels, run, ["nDCG@10"], profile.conventions)
    with pytest.raises(ValueError, match="more than 1 document"):
        metrics.ndcg_score([[2]], [[3.0]])
    qrels, run = frames([("1", "a", 2)], [("1", "a", "3")])
    with pytest.raises(ValidationError, match="at least two returned documents"):
        profile.check(qrels, run)


# ------------------------------------------------------------------------------------------- torchmetrics


@pytest.mark.torch
@pytest.mark.parametrize("case", CASES)
def test_torchmetrics_profile(case):
    """One call per query in both inputs (unjudged documents as target 0). torchmetrics computes in float32:
    agreement to 1e-6 (about 2e-7 observed with torchmetrics 1.9)."""
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("torchmetrics.functional.retrieval")
    qrels_rows, run_rows = CASES[case]()
    qd, rd = as_dicts(qrels_rows, run_rows)
    expected = {}
    for q in sorted(set(qd) & set(rd)):
        docs = list(rd[q])
        preds = torch.tensor([rd[q][d] for d in docs], dtype=torch.float32)
        target = torch.tensor([qd[q].get(d, 0) for d in docs])
        expected[q] = float(functional.retrieval_normalized_dcg(preds, target, top_k=10))
    res = ours(*frames(qrels_rows, run_rows), "torchmetrics")
    assert_per_query(res.values("nDCG@10"), expected, 1e-6, "torchmetrics (float32 arithmetic)")
    assert abs(res.mean("nDCG@10") - sum(expected.values()) / len(expected)) <= 1e-6


# ---------------------------------------------------------------------------------------------- trectools


@pytest.mark.parametrize("case", CASES)
def test_trectools_profile(case, tmp_path):
    trectools = pytest.importorskip("trectools")
    qrels_rows, run_rows = CASES[case]()
    qp, rp = write_files(tmp_path, qrels_rows, run_rows)
    te = trectools.TrecEval(trectools.TrecRun(str(rp)), trectools.TrecQrel(str(qp)))
    per_query = te.get_ndcg(depth=10, per_query=True)
    expected = {str(q): float(v) for q, v in per_query["NDCG@10"].items() if not math.isnan(v)}
    mean = float(te.get_ndcg(depth=10))
    profile = PROFILES["trectools"]
    res = evaluate(
        read_qrels(qp), read_run(rp, on_duplicate=profile.on_duplicate), ["nDCG@10"], profile.conventions
    )
    values = res.values("nDCG@10")
    defined = {q: v for q, v in values.items() if not math.isnan(v)}
    assert_per_query(defined, expected, NOT_BITWISE, case)
    assert abs(res.mean("nDCG@10") - mean) <= NOT_BITWISE


def test_trectools_mean_through_results(tmp_path):
    trectools = pytest.importorskip("trectools")
    qrels_rows, run_rows = make_case(5)
    qp, rp = write_files(tmp_path, qrels_rows, run_rows)
    te = trectools.TrecEval(trectools.TrecRun(str(rp)), trectools.TrecQrel(str(qp)))
    res = evaluate(read_qrels(qp), read_run(rp), ["nDCG@10"], PROFILES["trectools"].conventions)
    assert abs(res.mean("nDCG@10") - float(te.get_ndcg(depth=10))) <= NOT_BITWISE


def test_trectools_refuses_duplicates_and_so_does_the_profile(tmp_path):
    trectools = pytest.importorskip("trectools")
    qrels_rows, run_rows = edge_case()
    _, rp = write_files(tmp_path, qrels_rows, [*run_rows, run_rows[3]])
    with pytest.raises(ValueError, match="Duplicated"):
        trectools.TrecRun(str(rp))
    with pytest.raises(ValidationError):
        read_run(rp, on_duplicate=PROFILES["trectools"].on_duplicate)


# ------------------------------------------------------------------------------------------------- gdeval


@pytest.fixture(scope="module")
def gdeval_script(tmp_path_factory):
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    import pkgutil

    pytest.importorskip("ir_measures")
    script = tmp_path_factory.mktemp("gdeval") / "gdeval.pl"
    script.write_bytes(pkgutil.get_data("ir_measures", "bin/gdeval.pl"))
    return script


def _gdeval(script: Path, qp: Path, rp: Path, k: int) -> dict[str, tuple[float, float]]:
    """gdeval.pl's per-topic (nDCG@k, ERR@k), read back with float() as ir_measures reads them."""
    out = subprocess.run(["perl", str(script), str(qp), str(rp), str(k)], capture_output=True, check=True)
    values = {}
    for line in out.stdout.decode().splitlines()[1:]:
        _, topic, ndcg, err = line.split(",")
        values[topic] = (float(ndcg), float(err))
    return values


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_gdeval_profile(gdeval_script, case, k, tmp_path):
    """gdeval prints five decimals (``printf "%.5f"``) and the profile rounds each per-query value as it
    does (``printed_decimals=5``): nDCG@k and ERR@k equal gdeval.pl's to the bit on every query it reports,
    and the mean is the exact mean of its printed values (this gdeval.pl prints no mean)."""
    qrels_rows, run_rows = CASES[case]()
    qp, rp = write_files(tmp_path, qrels_rows, run_rows)
    printed = _gdeval(gdeval_script, qp, rp, k)
    profile = PROFILES["gdeval"]
    qrels, run = read_qrels(qp), read_run(rp, on_duplicate=profile.on_duplicate)
    profile.check(qrels, run)
    res = evaluate(qrels, run, [f"nDCG@{k}", f"ERR@{k}"], profile.conventions)
    for i, measure in enumerate((f"nDCG@{k}", f"ERR@{k}")):
        expected = {q: v[i] for q, v in printed.items()}
        defined = {q: v for q, v in res.values(measure).items() if not math.isnan(v)}
        assert defined == expected, (case, measure)
        assert res.mean(measure) == math.fsum(expected.values()) / len(expected)


def test_gdeval_refusals_are_the_profiles_refusals(gdeval_script, tmp_path):
    profile = PROFILES["gdeval"]
    for qrels_rows in ([("q1", "a", 1)], [("1", "a", 5)]):
        qp, rp = write_files(tmp_path, qrels_rows, [(qrels_rows[0][0], "a", "1.0")])
        result = subprocess.run(["perl", str(gdeval_script), str(qp), str(rp), "10"], capture_output=True)
        assert result.returncode != 0 and b"format error" in result.stderr
        with pytest.raises(ValidationError, match="refuses"):
            profile.check(read_qrels(qp), read_run(rp))
