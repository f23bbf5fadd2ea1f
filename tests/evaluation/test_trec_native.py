"""``qrelkit trec_eval`` in one native call (:mod:`qrelkit.evaluation.trec_native`): what it takes, what it
leaves to the lean path, and its bytes at TREC size against the numpy path (on generated small files:
``tests/property/test_trec_native.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qrelkit import _native
from qrelkit.evaluation import trec_lean, trec_native
from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
from qrelkit.evaluation.trec_native import CUT_MEASURES, measure_selection, native_trec_eval
from qrelkit.formats.trec.common import MAX_LINE_BYTES
from qrelkit.measures.trec_names import KIND, NICKNAMES, ORDER
from qrelkit.report.trec_eval import render_trec_eval

from ..conftest import CLI, DATA

pytestmark = pytest.mark.skipif(not _native.built(), reason="the native library is not built")

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\nq2 0 d4 1\n"
#: q1: d3 and d1 tie, so d3 (the larger id) ranks first and d1, q1's one relevant document, second;
#: q2: d4 (grade 1) first, then d1 (grade 2).
RUN = "q1 Q0 d1 1 16777216.0 t\nq1 Q0 d3 2 16777216.0 t\nq2 Q0 d4 1 3.0 t\nq2 Q0 d1 2 2.0 t\n"


def _write(tmp_path: Path, qrels: str = QRELS, run: str | bytes = RUN) -> tuple[str, str]:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text(qrels)
    r.write_bytes(run if isinstance(run, bytes) else run.encode())
    return str(q), str(r)


def _values(text: str) -> dict[tuple[str, str], str]:
    return {(m, q): v for m, q, v in (line.split("\t") for line in text.splitlines())}


def test_the_c_code_counts_the_measures_in_trec_eval_order() -> None:
    assert _native.trec_eval_measures() == ORDER


def test_the_bounds_are_the_readers() -> None:
    assert trec_native.MAX_LINE_BYTES == MAX_LINE_BYTES
    assert trec_lean.MAX_BYTES is trec_native.MAX_BYTES


def test_measures_by_name_or_nickname_and_cutoffs_make_the_selection() -> None:
    bit = {name: 1 << i for i, name in enumerate(ORDER)}
    defaults = [0] * 7
    assert tuple(n for n in ORDER if KIND[n] == "cut") == CUT_MEASURES  # C_P .. C_UNJ in qkscan.h
    assert measure_selection((), ORDER) == (sum(bit[n] for n in NICKNAMES["official"]), defaults)
    assert measure_selection(["all_trec"], ORDER) == (sum(bit[n] for n in NICKNAMES["all_trec"]), defaults)
    assert measure_selection(["ndcg", "map", "ndcg"], ORDER) == (bit["ndcg"] | bit["map"], defaults)
    # the first setting of a measure wins, as trec_eval's; cutoffs ascending
    mask, cuts = measure_selection(["ndcg_cut.10", "P.20,5", "ndcg_cut.3", "official"], ORDER)
    assert mask == sum(bit[n] for n in NICKNAMES["official"]) | bit["ndcg_cut"]
    assert cuts == [2, 5, 20, 0, 1, 10, 0, 0, 0, 0]
    for args in (["P.5.5"], ["P.0"], ["P.05"], ["P.5,5"], ["P."], ["map.5"], ["ndcg.1=3"], ["map", "nope"]):
        assert measure_selection(args, ORDER) is None, args
    # a measure the C code does not compute (one added to trec_names alone) is the lean path's
    assert measure_selection(["all_trec"], [n for n in ORDER if n != "infAP"]) is None


def test_hand_computed_values(tmp_path: Path) -> None:
    out = native_trec_eval(*_write(tmp_path), per_query=True, measures=("all_trec",))
    assert out is not None
    v = _values(out.text)
    # q1: relevant d1 at rank 2 of 2 returned: AP 1/2, RR 1/2, P_5 1/5; nDCG 1/log2(3) over an ideal of 1
    assert v[("map                   ", "q1")] == "0.5000" and v[("recip_rank            ", "q1")] == "0.5000"
    assert v[("P_5                   ", "q1")] == "0.2000"
    assert v[("ndcg_cut_10           ", "q1")] == f"{1 / np.log2(3):6.4f}"
    # q2: d4 (1) then d1 (2): DCG 1 + 2/log2(3), ideal 2 + 1/log2(3)
    assert v[("ndcg                  ", "q2")] == f"{(1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3)):6.4f}"
    assert v[("relstring             ", "q2")] == "'12'" and v[("num_ret               ", "all")] == "4"
    assert v[("runid                 ", "all")] == "t" and v[("num_q                 ", "all")] == "2"


@pytest.mark.parametrize(
    "qrels, run, why",
    [
        (QRELS, RUN.replace("q1 Q0 d1", "# \x00\nq1 Q0 d1"), "a NUL byte, even in a comment line"),
        (QRELS, RUN + "q1 Q0 d" + "9" * (MAX_LINE_BYTES) + " 3 1.0 t\n", "a line past the bound"),
        (QRELS, RUN.replace("d3", "d\u00e9"), "not ASCII"),
        (QRELS + "q1 0 d1 0\n", RUN, "a judgment given twice"),
        (QRELS, RUN + "q1 Q0 d9 3 1.0 t\n", "a query that comes back in the run"),
        (QRELS + "q9 0 d1 1\n", RUN, "a judged query missing from the run, without -c"),
        ("q0 0 d1 -1\n" + QRELS, RUN, "a first query without judgments"),
    ],
)
def test_what_the_lean_path_decides_is_left_to_it(tmp_path: Path, qrels: str, run: str, why: str) -> None:
    paths = _write(tmp_path, qrels, run)
    assert native_trec_eval(*paths, per_query=True, measures=("all_trec",)) is None, why
    # the command's output, error and exit status are the lean or numpy path's, as they were
    got = CLI("trec_eval", "-q", "-m", "all_trec", *paths)
    lean = trec_lean.lean_trec_eval(*paths, per_query=True, measures=("all_trec",))
    if lean is not None:
        assert got.exit_code == 0 and got.output == render_trec_eval(lean)
    else:
        assert got.exit_code != 0 or got.output == render_trec_eval(
            trec_eval_files(paths[0], paths[1], TrecOptions(per_query=True, measures=("all_trec",)))
        )


def test_a_missing_query_under_c_and_every_option_are_taken(tmp_path: Path) -> None:
    paths = _write(tmp_path, QRELS + "q9 0 d1 1\n")
    for options in (
        {"complete": True},
        {"complete": True, "judged_only": True, "rel_level": 2, "max_per_topic": 1, "num_docs": 40},
        {"complete": True, "summary": False, "max_per_topic": 0},
    ):
        out = native_trec_eval(*paths, per_query=True, measures=("all_trec",), **options)
        numpy_path = trec_eval_files(*paths, TrecOptions(per_query=True, measures=("all_trec",), **options))
        assert out is not None and out.text == render_trec_eval(numpy_path), options


@pytest.mark.parametrize(
    "options",
    [
        {"complete": True},
        {"complete": True, "judged_only": True, "rel_level": 2, "max_per_topic": 100, "num_docs": 8_841_823},
    ],
)
def test_a_trec_dl_sized_run_prints_the_numpy_paths_bytes(tmp_path: Path, options: dict) -> None:
    """TREC DL 2019's judgments and a run of 1,000 passages for each of its 43 queries, full-precision
    scores with ties, judged and unjudged passages: every measure of ``all_trec`` under ``-q``."""
    qrels = DATA / "trec" / "qrels.dl19-passage.txt"
    rng = np.random.default_rng(19)
    judged: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines():
        q, _, d, _ = line.split()
        judged.setdefault(q, []).append(d)
    lines = []
    for q, docs in judged.items():
        picked = list(rng.choice(docs, size=min(len(docs), 300), replace=False))
        picked += [str(9_000_000 + i) for i in range(1000 - len(picked))]
        scores = rng.gamma(2.0, 1.5, size=1000)
        scores[::97] = scores[0]  # ties
        lines += [
            f"{q} Q0 {d} {i + 1} {s!r} dl-run"
            for i, (d, s) in enumerate(zip(picked, scores.tolist(), strict=True))
        ]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    out = native_trec_eval(str(qrels), str(run), per_query=True, measures=("all_trec",), **options)
    numpy_path = trec_eval_files(qrels, run, TrecOptions(per_query=True, measures=("all_trec",), **options))
    assert out is not None and out.text.count("\n") > 43 * 90
    assert out.text == render_trec_eval(numpy_path)
