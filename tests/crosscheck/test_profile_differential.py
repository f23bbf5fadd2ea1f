"""Every profile against its real library, per query and in the mean with ``==`` (the same double, bit for
bit), on the seeded edge cases of :mod:`tests.crosscheck.trec_eval_harness` (ties, negative and zero
grades, unjudged documents, queries on one side only, single-document queries, odd ids and score
spellings) and on real-looking runs (:func:`real_case`: the TREC DL 2019 passage judgments, 100 to 1,000
documents a query, full-precision float scores written with ``repr``).

- ``--profile trec_eval9`` against trec_eval 9.0.8 built from its vendored source with full-precision
  output (``build(precise=True)``: ``%.17g`` for ``%6.4f``), its ``-q`` lines parsed;
- ``--profile ir_measures`` against ir_measures, ``--profile ranx`` and ``ranx-burges`` against ranx's metric
  functions, ``--profile sklearn`` against scikit-learn's ``ndcg_score`` and ``dcg_score``.

Left out of every comparison: the cases carrying a fault (the libraries refuse them or their dicts cannot
hold them) and runs with two tags. Further exclusions are named in each test. Each test prints the number
of values compared (``pytest -s``). The exceptions, each with its reason, are listed in docs/conventions.md
("Bit for bit"); scikit-learn's is the one comparison kept to 1e-12 here.
"""

from __future__ import annotations

import functools
import math
import os
import random

import numpy as np
import pytest

from . import trec_eval_harness as h
from .test_profile_parity import IRM, ours

SEEDS = range(int(os.environ.get("QRELKIT_PROFILE_CASES", "48")))
#: the real-looking cases (:func:`real_case`) every test adds to the edge cases
REAL = range(int(os.environ.get("QRELKIT_PROFILE_REAL_CASES", "6")))
#: scikit-learn's tolerance: its ideal DCG is a BLAS dot product (docs/conventions.md, "Bit for bit")
SKLEARN_TOL = 1e-12


@functools.cache
def _dl19() -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = {}
    for line in (h.ROOT / "tests" / "data" / "trec" / "qrels.dl19-passage.txt").read_text().splitlines():
        q, _, d, g = line.split()
        judged.setdefault(q, {})[d] = int(g)
    return judged


#: the seed a real-looking case carries (its folder and its messages): REAL_SEED + its own seed
REAL_SEED = 100_000


def real_case(seed: int) -> h.Case:
    """A real-looking input: 3 to 6 queries of the TREC DL 2019 passage judgments, each returned with 100 to
    1,000 documents (some of its judged ones, the rest unjudged), scored with full-precision floats written
    with ``repr`` (``random() * 100``, a normal draw, or tiny values); in even cases one judged query the
    run lacks."""
    rng = random.Random(1_000_003 + seed)
    judged = _dl19()
    qids = rng.sample(sorted(judged), rng.randint(4, 7))
    qrels_lines = [f"{q} 0 {d} {g}" for q in qids for d, g in judged[q].items()]
    run_lines = []
    # in every other case the first judged query is not in the run (trec_eval 10 stops there: exit 4)
    for q in qids[seed % 2 == 0 :]:
        n = rng.randint(100, 1000)
        docs = list(judged[q])
        rng.shuffle(docs)
        chosen = docs[: rng.randint(min(len(docs), n) // 3, min(len(docs), n))]
        chosen += [f"u{seed}x{i}" for i in range(n - len(chosen))]
        draw = rng.choice((lambda: rng.random() * 100, lambda: rng.gauss(0, 7), lambda: rng.random() * 1e-3))
        scored = sorted(((draw(), d) for d in chosen), reverse=True)
        run_lines += [f"{q} Q0 {d} {i} {s!r} runA" for i, (s, d) in enumerate(scored, 1)]
    rng.shuffle(run_lines)
    return h.Case(
        REAL_SEED + seed, "".join(x + "\n" for x in qrels_lines), "".join(x + "\n" for x in run_lines), ()
    )


def inputs(edge: range = SEEDS) -> list[h.Case]:
    """The edge cases of ``edge`` that are usable (:func:`_usable`), then the real-looking ones."""
    return [c for c in (h.case(s) for s in edge) if _usable(c)] + [real_case(s) for s in REAL]


#: trec_eval's names -> qrelkit's, for the measures whose name carries no parameter (relevance at grade 1)
TREC_FIXED = {
    "map": "AP",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "num_rel": "NumRel",
    "num_ret": "NumRet",
    "num_rel_ret": "NumRelRet",
    "ndcg": "nDCG",
    "bpref": "bpref",
    "infAP": "infAP",
    "11pt_avg": "IPrecMean",
    "utility": "Utility",
    "binG": "binG",
    "G": "G",
    "ndcg_rel": "nDCGRel",
    "Rndcg": "RnDCG",
    "set_P": "SetP",
    "set_relative_P": "SetRelP",
    "set_map": "SetAP",
    "set_F": "SetF",
    "set_recall": "R",
    "num_nonrel_judged_ret": "NumNonRelJudgedRet",
}
#: trec_eval's parameterised names (``P_10``, ``Rprec_mult_0.40``) -> qrelkit's
TREC_PARAMETERISED = {
    "P_": "P@{}",
    "recall_": "R@{}",
    "map_cut_": "AP@{}",
    "ndcg_cut_": "nDCG@{}",
    "relative_P_": "RelP@{}",
    "success_": "Success@{}",
    "iprec_at_recall_": "IPrec(recall={})",
    "Rprec_mult_": "Rprec(mult={})",
    "unj_": "Unjudged@{}",  # trec_eval 10's all_trec
}
#: all_trec's lines that are no per-query number: the run's tag, the ranking as a string, the query count
TREC_NOT_A_VALUE = ("runid", "relstring", "num_q")


def trec_name(name: str) -> str:
    """qrelkit's measure for trec_eval's output name (``P_10`` -> ``P@10``)."""
    if name in TREC_FIXED:
        return TREC_FIXED[name]
    for prefix, spelling in TREC_PARAMETERISED.items():
        if name.startswith(prefix) and name[len(prefix) :][:1].isdigit():
            return spelling.format(name[len(prefix) :])
    raise KeyError(name)


#: the measures trec_eval computes from the grades themselves, whatever ``-l`` says
GRADED = ("nDCG", "NumRet", "G", "nDCGRel", "Unjudged")


def at_level(measure: str, rel: int) -> str:
    """``P@5`` -> ``P(rel=2)@5``, ``IPrec(recall=0.3)`` -> ``IPrec(rel=2,recall=0.3)``: trec_eval's ``-l``."""
    name, k = measure.split("@") if "@" in measure else (measure, "")
    base, _, params = name.partition("(")
    if rel == 1 or base in GRADED:
        return measure
    inner = f"rel={rel}," + params if params else f"rel={rel})"
    return f"{base}({inner}" + (f"@{k}" if k else "")


def _usable(c: h.Case) -> bool:
    return not c.fault and "runB" not in c.run


def _all_negative(qd: dict[str, dict[str, int]]) -> bool:
    """A query whose judgments are all negative: trec_eval 9 (alone, inside pytrec_eval and so inside
    ir_measures) reads the previous query's grade counts or crashes (``form_res_rels.c``; docs/trec_eval.md)."""
    return any(all(g < 0 for g in d.values()) for d in qd.values())


def _assert_same(got: float, want: float, where: tuple) -> None:
    """The same double: ``==``, or both NaN."""
    assert got == want or (got != got and want != want), (*where, repr(got), repr(want))


# ------------------------------------------------------------------------------------ trec_eval 9.0.8


@pytest.fixture(scope="module")
def trec_eval_9_precise():
    if h.compiler() is None:
        pytest.skip("no C compiler on PATH: trec_eval cannot be built from tests/data/trec_eval-src")
    return h.build("9.0.8", precise=True)


@pytest.fixture(scope="module")
def trec_eval_10_precise():
    if h.compiler() is None:
        pytest.skip("no C compiler on PATH: trec_eval cannot be built from tests/data/trec_eval-src")
    return h.build("10.0", precise=True)


def _per_query(stdout: bytes) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in stdout.decode().splitlines():
        name, qid, value = (f.strip() for f in line.split("\t"))
        if qid != "all" and name not in TREC_NOT_A_VALUE:
            out.setdefault(name, {})[qid] = float(value)
    return out


@pytest.mark.parametrize("profile", ["trec_eval9", "trec_eval"])
@pytest.mark.parametrize("rel", [1, 2])
def test_trec_eval_profiles_per_query_against_their_binaries(rel, profile, request, tmp_path):
    """Every measure of ``-m all_trec`` (but :data:`TREC_NOT_A_VALUE`), per query: the binary with ``-q``
    and ``-l rel`` alone, queries in both files; ``--profile trec_eval9`` against trec_eval 9.0.8 and
    ``--profile trec_eval`` against trec_eval 10.0, each built to print 17 digits. Left out: the cases
    where trec_eval 10 stops with exit 4 (the drop-in's byte-for-byte check covers them), the cases
    with an all-negative query, on which trec_eval 9.0.8 reads the previous query's grade counts and
    crashes (:func:`_all_negative`), and trec_eval 10's ``rbp`` (it reads memory it never set)."""
    binary = request.getfixturevalue(
        "trec_eval_9_precise" if profile == "trec_eval9" else "trec_eval_10_precise"
    )
    compared = cases = 0
    for c in inputs():
        seed = c.seed
        qd, _ = c.dicts()
        if _all_negative(qd):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        out = h.run_trec_eval(binary, qrels, run, ("-q", "-l", str(rel), "-m", "all_trec"))
        if profile == "trec_eval" and out.exit_code == 4:
            continue  # trec_eval 10 stops at the query (qrelkit trec_eval stops there too: the drop-in's check)
        assert out.exit_code == 0, (seed, out)
        theirs = _per_query(out.stdout)
        for name in ("rbp", "rbp_resid"):  # trec_eval 10 reads memory it never set there (docs/trec_eval.md)
            theirs.pop(name, None)
        mine = {n: at_level(trec_name(n), rel) for n in theirs}
        res = ours(qrels, run, profile, list(mine.values()))
        cases += 1
        for name, values in theirs.items():
            got = res.values(mine[name])
            assert set(got) == set(values), (seed, name)
            for q, want in values.items():
                _assert_same(got[q], want, (seed, q, name))
                compared += 1
    print(f"{profile} vs its binary -l {rel}: {compared} per-query values compared with == on {cases} cases")
    assert cases >= 20 and compared > 5000


# ------------------------------------------------------------------------------------------ pytrec_eval


@pytest.mark.parametrize("rel", [1, 2])
def test_pytrec_eval_profile_per_query(rel, tmp_path):
    """Every measure pytrec_eval offers that qrelkit names (``supported_measures`` but the strings, the
    query count and the geometric means), per query, with ``relevance_level=rel``, on the dicts
    pytrec_eval takes. Left out: the cases with an all-negative query (:func:`_all_negative`).
    pytrec_eval gives no mean."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    wanted = set(pytrec_eval.supported_measures) - {"relstring", "runid", "num_q", "gm_map", "gm_bpref"}
    compared = cases = 0
    for c in inputs():
        seed = c.seed
        qd, rd = c.dicts()
        if _all_negative(qd):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        theirs = pytrec_eval.RelevanceEvaluator(qd, wanted, relevance_level=rel).evaluate(rd)
        names = sorted({n for values in theirs.values() for n in values})
        mine = {n: at_level(trec_name(n), rel) for n in names}
        res = ours(qrels, run, "pytrec_eval", sorted(set(mine.values())))
        cases += 1
        for name in names:
            got = res.values(mine[name])
            assert set(got) == set(theirs), (seed, name)
            for q, values in theirs.items():
                _assert_same(got[q], values[name], (seed, q, name))
                compared += 1
    print(f"pytrec_eval -l {rel}: {compared} per-query values compared with == on {cases} cases")
    assert cases >= 20 and compared > 5000


# ------------------------------------------------------------------------------------------ ir_measures


#: ir_measures' measures beyond the parity table, computed by its pytrec_eval and judged providers
IRM_MORE = ("Success@1", "Success@5", "SetP", "SetR", "SetF", "Bpref", "infAP", "P@1", "R@1000", "nDCG@3",
            "AP@1", "P(rel=2)@5", "Bpref(rel=2)", "SetP(rel=2)", "Judged@1", "RR(rel=2)",
            # ir_measures' own spellings of measures qrelkit names otherwise
            "SetP(relative=True)", "SetP(rel=2,relative=True)", "Judged", "nDCG(gains={0:1,1:4})@10",
            "nDCG(gains={0:0,1:1,2:10})", "NumQ")  # fmt: skip


def test_ir_measures_profile_per_query(tmp_path):
    """Every measure of the parity table (``test_profile_parity.IRM``) and :data:`IRM_MORE`, per query and
    in the mean. Left out: the cases with an all-negative query (ir_measures computes most measures with
    pytrec_eval, which crashes there); ``ERR`` and ``nDCG(dcg='exp-log2')``, which ir_measures computes by
    running gdeval.pl (:func:`test_ir_measures_gdeval_measures_per_query`); ``Compat``
    (docs/conventions.md); ir_measures 0.4.3 offers no ``RBP``."""
    ir_measures = pytest.importorskip("ir_measures")
    names = {**IRM, **{m: m for m in IRM_MORE}}
    measures = [ir_measures.parse_measure(m) for m in names]
    compared = cases = 0
    for c in inputs():
        seed = c.seed
        qd, _ = c.dicts()
        if _all_negative(qd):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        per_query, aggregate = _ir_measures_on(ir_measures, measures, qrels, run)
        res = ours(qrels, run, "ir_measures", list(names.values()))
        cases += 1
        for theirs_name, mine in names.items():
            m = ir_measures.parse_measure(theirs_name)
            got = res.values(mine)
            assert set(got) == set(per_query[str(m)]), (seed, mine)
            for q, want in per_query[str(m)].items():
                _assert_same(got[q], want, (seed, q, mine))
                compared += 1
            _assert_same(res.mean(mine), aggregate[m], (seed, "mean", mine))
            compared += 1
    print(f"ir_measures: {compared} values (per query and means) compared with == on {cases} cases")
    assert cases >= 20 and compared > 4000


def _ir_measures_on(ir_measures, measures, qrels, run):
    """ir_measures' values of ``measures`` on the files ``qrels`` and ``run``, read by its own readers:
    (per measure name, per query id, its ``iter_calc`` value; per measure, its ``calc_aggregate`` mean).

    A measure with its own gains (``nDCG(gains={0:1,1:4})@10``) is computed in a call of its own: in one
    call with ``nDCG@10``, ir_measures 0.4.3 hands both to one pytrec_eval evaluator under trec_eval's
    ``ndcg_cut.10``, and the gains of whichever it meets first (set order, so the hash seed) apply to both
    (``nDCG@10`` 0.4466 instead of 0.5976 on one query under PYTHONHASHSEED=8)."""
    qrels_list = list(ir_measures.read_trec_qrels(str(qrels)))
    run_list = list(ir_measures.read_trec_run(str(run)))
    plain = [m for m in measures if "gains" not in str(m)]
    groups = [plain] + [[m] for m in measures if "gains" in str(m)]
    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict = {}
    for group in groups:
        for metric in ir_measures.iter_calc(group, qrels_list, run_list):
            per_query.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
        aggregate.update(ir_measures.calc_aggregate(group, qrels_list, run_list))
    return per_query, aggregate


ACCURACY = ("Accuracy", "Accuracy@5", "Accuracy(rel=2)", "Accuracy(rel=2)@10")


def test_ir_measures_accuracy_per_query(tmp_path):
    """ir_measures' Accuracy (its accuracy provider: Python's stable sort by score, so tied scores in
    file order) per query and in the mean, with ``==``: it reports only the queries with a relevant and a
    non-relevant document within the cutoff, and no default for the others (the profile's
    ``Accuracy(...,no_relevant=skip,missing_score=empty)``). Left out: a measure on a case where
    ir_measures divides by zero (a query whose returned documents within the cutoff are all relevant: it
    raises ZeroDivisionError; the profile leaves that query undefined)."""
    ir_measures = pytest.importorskip("ir_measures")
    compared = cases = crashed = 0
    for c in inputs():
        seed = c.seed
        qrels, run = c.write(tmp_path / str(seed))
        res = ours(qrels, run, "ir_measures", list(ACCURACY))
        cases += 1
        for measure in ACCURACY:
            m = ir_measures.parse_measure(measure)
            try:
                per_query, aggregate = _ir_measures_on(ir_measures, [m], qrels, run)
            except ZeroDivisionError:
                crashed += 1
                continue
            theirs = per_query.get(str(m), {})  # only the queries it reports
            got = {q: v for q, v in res.values(measure).items() if not math.isnan(v)}
            assert set(got) == set(theirs), (seed, measure)
            for q, want in theirs.items():
                _assert_same(got[q], want, (seed, q, measure))
                compared += 1
            _assert_same(res.mean(measure), aggregate[m], (seed, "mean", measure))
            compared += 1
    print(f"ir_measures Accuracy: {compared} values compared with == on {cases} cases ({crashed} crashed)")
    assert cases >= 20 and compared > 300


#: ir_measures' measures computed by its gdeval provider (gdeval.pl), at the cutoffs checked
IRM_GDEVAL = tuple(f"{m}@{k}" for k in (1, 3, 10, 20) for m in ("ERR", "nDCG(dcg='exp-log2')"))


def _numbered(c: h.Case) -> h.Case:
    """The case with its query ids as gdeval.pl reads them: unchanged where each is a whole number and no
    two have one value (gdeval.pl compares topics as numbers, so ``01`` and ``1`` would be one topic),
    else each id renamed to a number of its own (100, 101, ... in the order of first appearance)."""
    lines = [
        (kind, line.split()) for kind, text in (("q", c.qrels), ("r", c.run)) for line in text.splitlines()
    ]
    ids = list(dict.fromkeys(f[0] for _, f in lines if f))
    if all(q.isdigit() for q in ids) and len({int(q) for q in ids}) == len(ids):
        return c
    number = {q: str(100 + i) for i, q in enumerate(ids)}
    text = {"q": "", "r": ""}
    for kind, f in lines:
        text[kind] += " ".join([number[f[0]], *f[1:]]) + "\n" if f else "\n"
    return h.Case(c.seed, text["q"], text["r"], c.flags, c.fault)


def test_ir_measures_gdeval_measures_per_query(tmp_path):
    """ERR@k and nDCG(dcg='exp-log2')@k, which ir_measures computes by running gdeval.pl (its five printed
    decimals read back, then added in the order printed), against the ir_measures profile per query and in
    the mean with ``==``, on every case with its query ids as gdeval.pl reads them (:func:`_numbered`;
    other ids: :func:`test_ir_measures_err_misreads_signed_query_ids`). A case
    with a document given twice is left out as everywhere here (gdeval.pl would count it twice where
    ir_measures' other providers keep the last line, and the profile keeps the last line)."""
    import shutil

    ir_measures = pytest.importorskip("ir_measures")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    names = {m: str(ir_measures.parse_measure(m)) for m in IRM_GDEVAL}
    measures = [ir_measures.parse_measure(m) for m in IRM_GDEVAL]
    compared = cases = 0
    for c in inputs():
        seed = c.seed
        c = _numbered(c)
        qrels, run = c.write(tmp_path / str(seed))
        per_query, aggregate = _ir_measures_on(ir_measures, measures, qrels, run)
        res = ours(qrels, run, "ir_measures", list(IRM_GDEVAL))
        cases += 1
        for m, theirs in zip(IRM_GDEVAL, measures, strict=True):
            assert res.values(m) == per_query[names[m]], (seed, m)
            assert res.mean(m) == aggregate[theirs], (seed, m)
            compared += len(per_query[names[m]]) + 1
    print(f"ir_measures through gdeval.pl: {compared} values compared with == on {cases} cases")
    assert cases >= 20 and compared > 1000


def test_ir_measures_err_misreads_signed_query_ids(tmp_path):
    """A difference left open (docs/conventions.md): gdeval.pl, which ir_measures runs for ERR, reads query
    ``-4`` as ``4``, so ir_measures reports ERR for a query ``4`` nobody judged and 0 for ``-4``; the
    ir_measures profile scores ``-4`` itself. By hand: grades 1, 0 at ranks 1, 2 with max grade 4 (gdeval's
    $MAX_JUDGMENT): ERR@10 = (2^1 - 1) / 2^4 / 1 = 0.0625."""
    import shutil

    ir_measures = pytest.importorskip("ir_measures")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("-4 0 a 1\n-4 0 b 0\n")
    run.write_text("-4 Q0 a 1 2 r\n-4 Q0 b 2 1 r\n")
    m = ir_measures.parse_measure("ERR@10")
    theirs = {
        x.query_id: x.value
        for x in ir_measures.iter_calc(
            [m], ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(run))
        )
    }
    assert theirs == {"4": 0.0625, "-4": 0.0}
    assert ours(qrels, run, "ir_measures", ["ERR@10"]).values("ERR@10") == pytest.approx(
        {"-4": 0.0625}, abs=1e-15
    )


# ------------------------------------------------------------------------------------------------- ranx


def _tied(rd: dict[str, dict[str, float]]) -> bool:
    return any(len(set(scores.values())) < len(scores) for scores in rd.values())


def test_ranx_profiles_per_query(tmp_path):
    """ranx's metric functions on the arrays ``ranx.evaluate(make_comparable=True)`` builds. Left out:
    the cases with tied scores (ranx orders them as numba's argsort leaves them: the profile's notes). ranx's
    ``precision`` without a cutoff and ``f1`` have no qrelkit measure (docs/conventions.md). ``bpref`` is
    left out on a query with no judged document below the threshold, where ranx divides 0 by 0
    (:func:`test_ranx_bpref_is_nan_without_a_judged_non_relevant_document`), and compared at the threshold
    1 only: at 2 ranx's value for a query depends on the others evaluated with it (seed 156: query ``B`` is
    0.5 alone, 0 beside a query with nothing relevant at 2), a difference listed in docs/conventions.md."""
    pytest.importorskip("ranx")
    from ranx import metrics as mt

    from .test_profile_parity import _ranx_arrays

    compared = cases = 0
    for c in inputs(range(4 * len(SEEDS))):  # about one edge case in four is free of ties
        seed = c.seed
        qd, rd = c.dicts()
        if _tied(rd):
            continue
        qrels, run = c.write(tmp_path / str(seed))
        queries, qrels_list, run_list = _ranx_arrays(qd, rd)
        cases += 1
        for rel in (1, 2):
            r = f"(rel={rel})"
            no_nonrel = {q for q, d in qd.items() if not any(g < rel for g in d.values())}
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
                f"Success{r}@5": mt.hit_rate(qrels_list, run_list, 5, rel),
                f"SetP{r}@5": mt.precision(qrels_list, run_list, 5, rel),  # ranx reads SetP@k as P@k
                f"RBP(rel={rel},persistence=0.8)": mt.rank_biased_precision(qrels_list, run_list, 0.8, rel),
            }
            burges = {}
            if rel == 1:  # nDCG and DCG take the grade as gain above the threshold
                theirs |= {
                    "bpref": mt.bpref(qrels_list, run_list, 0, 1),
                    "nDCG@10": mt.ndcg(qrels_list, run_list, 10, 1),
                    "nDCG": mt.ndcg(qrels_list, run_list, 0, 1),
                    "DCG@10": mt.dcg(qrels_list, run_list, 10, 1),
                }
                burges = {
                    "nDCG@10": mt.ndcg_burges(qrels_list, run_list, 10, 1),
                    "nDCG": mt.ndcg_burges(qrels_list, run_list, 0, 1),
                    "DCG@10": mt.dcg_burges(qrels_list, run_list, 10, 1),
                }
            for profile, table in (("ranx", theirs), ("ranx-burges", burges)):
                if not table:
                    continue
                res = ours(qrels, run, profile, list(table))
                for measure, scores in table.items():
                    got = res.values(measure)
                    assert set(got) == set(queries), (seed, measure)
                    skip = no_nonrel if measure.startswith("bpref") else set()
                    for q, want in zip(queries, scores, strict=True):
                        if q not in skip:
                            _assert_same(got[q], float(want), (seed, q, profile, measure))
                            compared += 1
                    if not skip & set(queries):
                        _assert_same(res.mean(measure), float(np.mean(scores)), (seed, "mean", measure))
                        compared += 1
    print(f"ranx: {compared} values (per query and means) compared with == on {cases} cases")
    assert cases >= 10 and compared > 500


def test_ranx_bpref_is_nan_without_a_judged_non_relevant_document():
    """A difference left open (docs/conventions.md): ranx's bpref divides by min(R, N), the judged
    non-relevant count, and gives NaN when N = 0 (ranx.evaluate's mean too); the ranx profile gives
    trec_eval's value. By hand: one relevant document, returned first, nothing judged non-relevant:
    no non-relevant document ranks above it, bpref = 1."""
    pytest.importorskip("ranx")
    import polars as pl
    from ranx import Qrels as RQrels
    from ranx import Run as RRun
    from ranx import evaluate as revaluate

    from qrelkit import evaluate
    from qrelkit.formats import qrels_from_frame, run_from_frame
    from qrelkit.measures.profiles import PROFILES

    assert math.isnan(float(revaluate(RQrels({"q": {"a": 1}}), RRun({"q": {"a": 2.0, "x": 1.0}}), "bpref")))
    qrels = qrels_from_frame(pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "grade": [1]}))
    run = run_from_frame(
        pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "x"], "score": [2.0, 1.0]}), name="r"
    )
    assert evaluate(qrels, run, ["bpref"], PROFILES["ranx"].conventions).values("bpref") == {"q": 1.0}


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
    for c in inputs(range(3 * len(SEEDS))):  # about one edge case in three has no negative grade
        seed = c.seed
        qd, rd = c.dicts()
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
                assert abs(got[q] - want) <= SKLEARN_TOL, (seed, q, measure)
                values.append(want)
                compared += 1
            assert abs(res.mean(measure) - math.fsum(values) / len(values)) <= SKLEARN_TOL, (seed, measure)
    print(f"sklearn: {compared} per-query values compared to 1e-12 on {cases} cases")
    assert cases >= 20 and compared > 300
