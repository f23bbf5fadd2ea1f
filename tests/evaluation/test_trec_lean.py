"""``qrelkit trec_eval`` without numpy (:mod:`qrelkit.evaluation.trec_lean`): what it takes, what it leaves
to the numpy path, and the command line it reads before click loads. Its floats against the numpy path's
on generated files: ``tests/property/test_trec_lean.py``."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

from qrelkit import _native
from qrelkit.errors import StepAside
from qrelkit.evaluation import trec_lean
from qrelkit.evaluation.trec_eval import TREC_EVAL_CONVENTIONS, TrecOptions, trec_eval_files
from qrelkit.evaluation.trec_lean import lean_argv, lean_trec_eval
from qrelkit.report.trec_eval import render_trec_eval

from ..conftest import CLI, data_path

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 1\nq2 0 d4 -1\n"
RUN = "q1 Q0 d1 1 3.0 tag\nq1 Q0 d9 2 2.0 tag\nq1 Q0 d3 3 1.0 tag\nq2 Q0 d4 1 5.0 tag\nq2 Q0 d1 2 4.0 tag\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def test_the_ranking_precision_is_the_drop_ins() -> None:
    assert (TREC_EVAL_CONVENTIONS.precision == "single") is trec_lean.SINGLE


def test_hand_computed_values(files: tuple[str, str]) -> None:
    out = lean_trec_eval(*files, per_query=True, measures=("map", "P.2", "ndcg_cut.3", "num_ret"))
    assert out is not None
    text = render_trec_eval(out)
    lines = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in text.splitlines()}
    # q1 ranks d1 (2), d9 (not judged), d3 (1); R = 2: AP = (1/1 + 2/3) / 2 = 0.8333
    assert lines[("map                   ", "q1")] == "0.8333"
    # q2 ranks d4 (negative: in the pool, unjudged), d1 (1); R = 1: AP = 1/2
    assert lines[("map                   ", "q2")] == "0.5000"
    assert lines[("map                   ", "all")] == "0.6667"
    assert lines[("P_2                   ", "q1")] == "0.5000"
    # q1: DCG@3 = 2/log2(2) + 1/log2(4) = 2.5; ideal 2 + 1/log2(3) = 2.6309: 0.9502
    assert lines[("ndcg_cut_3            ", "q1")] == "0.9502"
    assert lines[("num_ret               ", "all")] == "5"


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (
            ["-q", "-c", "-m", "map", "-mP.5,10", "-M", "2"],
            TrecOptions(per_query=True, complete=True, measures=("map", "P.5,10"), max_per_topic=2),
        ),
        (
            ["-J", "-l", "2", "-m", "official"],
            TrecOptions(judged_only=True, rel_level=2, measures=("official",)),
        ),
        (
            ["-n", "-q", "-m", "set", "-N", "40"],
            TrecOptions(summary=False, per_query=True, measures=("set",), num_docs=40),
        ),
        ([], TrecOptions()),
    ],
)
def test_the_command_line_it_reads_gives_the_numpy_paths_text(files, argv, options) -> None:
    qrels, run = files
    ours = render_trec_eval(
        lean_argv([*argv[:1], qrels, *argv[1:], run])
    )  # files among the options, as click takes them
    assert ours == render_trec_eval(trec_eval_files(qrels, run, options))
    assert ours == CLI("trec_eval", *argv, qrels, run).output


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-qc", "Q", "R"],  # combined flags: click's
        ["-m"],
        ["--trec-eval-parsing", "Q", "R"],
        ["-l", "-1", "Q", "R"],
        ["-l", "1", "-l", "2", "Q", "R"],
        ["-M", "+3", "Q", "R"],
        ["-M", "3_0", "Q", "R"],
        ["Q"],
        ["Q", "R", "R"],
        ["-", "R"],
        ["--", "Q", "R"],
        ["-m", "G.1=0.5", "Q", "R"],  # fractional gains: summed rank by rank on the numpy path
        ["-m", "nosuch", "Q", "R"],  # click's usage error
    ],
)
def test_anything_else_steps_aside_to_click(files, argv) -> None:
    qrels, run = files
    with pytest.raises(StepAside):
        lean_argv([qrels if a == "Q" else run if a == "R" else a for a in argv])


def _write(path: Path, text: str | bytes) -> str:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize(
    "case",
    [
        "gzip",
        "non-ascii",
        "missing query",
        "negative first query",
        "duplicate judgment",
        "duplicate document",
        "two tags",
        "query comes back",
        "jsonl suffix",
        "folder",
        "missing file",
        "empty run",
    ],
)
def test_what_the_numpy_path_must_report_steps_aside(tmp_path: Path, case: str) -> None:
    """Each of these the numpy path reads differently or stops on; this path leaves it (and so the numbers
    and the errors) to it."""
    qrels = _write(tmp_path / "qrels.txt", QRELS)
    run = _write(tmp_path / "run.txt", RUN)
    if case == "gzip":
        run = _write(tmp_path / "run.txt.gz", gzip.compress(RUN.encode()))
    elif case == "non-ascii":
        run = _write(tmp_path / "run.txt", RUN.replace("d9", "dé"))
    elif case == "missing query":  # without -c trec_eval stops at q2
        run = _write(tmp_path / "run.txt", RUN.split("q2")[0])
    elif case == "negative first query":  # trec_eval stops at q0 (form_res_rels.c allocates nothing)
        qrels = _write(tmp_path / "qrels.txt", "q0 0 d1 -1\n" + QRELS)
        run = _write(tmp_path / "run.txt", RUN + "q0 Q0 d1 1 1.0 tag\n")
    elif case == "duplicate judgment":
        qrels = _write(tmp_path / "qrels.txt", QRELS + "q1 0 d1 1\n")
    elif case == "duplicate document":
        run = _write(tmp_path / "run.txt", RUN + "q2 Q0 d1 3 1.0 tag\n")
    elif case == "two tags":
        run = _write(tmp_path / "run.txt", RUN.replace("q2 Q0 d1 2 4.0 tag", "q2 Q0 d1 2 4.0 other"))
    elif case == "query comes back":
        run = _write(tmp_path / "run.txt", RUN + "q1 Q0 d7 4 0.5 tag\n")
    elif case == "jsonl suffix":
        run = _write(tmp_path / "run.jsonl", RUN)
    elif case == "folder":
        run = str(tmp_path)
    elif case == "missing file":
        run = str(tmp_path / "nothing.txt")
    elif case == "empty run":
        run = _write(tmp_path / "run.txt", "\n")
    assert lean_trec_eval(qrels, run) is None


def test_options_it_does_not_take_step_aside(files) -> None:
    qrels, run = files
    assert lean_trec_eval(qrels, run, rel_level=-1) is None  # a document outside the judgments counts
    assert lean_trec_eval(qrels, run, rel_level=1 << 70) is None
    assert lean_trec_eval(qrels, run, trec_eval_parsing=True) is None
    assert lean_trec_eval(qrels, run, max_per_topic=10**10) is None  # the usual path's usage error
    assert lean_trec_eval(qrels, run, num_docs=2**60) is None
    assert lean_trec_eval(qrels, run, measures=("G.1=0.5",)) is None  # fractional gains, summed rank by rank
    assert lean_trec_eval(qrels, run, measures=("ndcg.2=inf",)) is None
    assert lean_trec_eval(qrels, run) is not None


def test_every_measure_of_all_trec_is_computed_here(files) -> None:
    """all_trec, and with -c -J -l 2 -M 100: the numpy path's bytes (its floats: tests/property)."""
    from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
    from qrelkit.report.trec_eval import render_trec_eval

    qrels, run = files
    for extra in ({}, {"complete": True, "judged_only": True, "rel_level": 2, "max_per_topic": 100}):
        ours = lean_trec_eval(qrels, run, per_query=True, measures=("all_trec",), **extra)
        assert ours is not None
        theirs = trec_eval_files(qrels, run, TrecOptions(per_query=True, measures=("all_trec",), **extra))
        ours.options = theirs.options
        assert render_trec_eval(ours) == render_trec_eval(theirs)


def test_without_the_native_scanner_it_steps_aside(files, monkeypatch) -> None:
    monkeypatch.setattr(_native, "lib", None)
    assert lean_trec_eval(*files) is None


def test_dl19_with_the_measures_it_takes_gives_the_numpy_paths_bytes() -> None:
    """The real DL19 judgments and a run of them (ranked by grade with ties, so that document ids break
    them), every measure this path computes, per query and under -c."""
    qrels = data_path("trec", "qrels.dl19-passage.txt")
    specs = ("official", "set", "ndcg_cut", "ndcg", "recall", "map_cut", "relative_P", "success", "unj")
    specs += ("Rprec_mult", "11pt_avg", "relstring", "gm_bpref", "num_nonrel_judged_ret")
    lines = qrels.read_text().splitlines()
    run_text = "".join(
        f"{q} Q0 {d} {i} {int(g) % 3}.5 r\n" for i, (q, _, d, g) in enumerate(line.split() for line in lines)
    )
    with tempfile.TemporaryDirectory() as tmp:
        run = _write(Path(tmp) / "run.txt", run_text)
        for complete in (False, True):
            options = TrecOptions(per_query=True, complete=complete, measures=specs)
            lean = lean_trec_eval(str(qrels), run, per_query=True, complete=complete, measures=specs)
            assert lean is not None
            ours = render_trec_eval(lean)
            assert ours.count("\n") > 43 * 80
            assert ours == render_trec_eval(trec_eval_files(qrels, run, options))


def test_the_route_decides_whether_the_path_without_numpy_is_tried(files, monkeypatch) -> None:
    from qrelkit.evaluation import routes
    from qrelkit.evaluation.plan import ROUTES
    from qrelkit.evaluation.trec_lean import lean_route

    assert ROUTES is routes.ROUTES and ROUTES["trec_eval"][:2] == ("trec_native", "trec_lean")
    assert lean_route(*files) is not None
    monkeypatch.setitem(routes.ROUTES, "trec_eval", ROUTES["trec_eval"][1:])
    assert lean_route(*files) is not None  # trec_lean reads them
    monkeypatch.setitem(routes.ROUTES, "trec_eval", ROUTES["trec_eval"][1:])
    assert lean_route(*files) is None  # trec_eval_files reads them
    with pytest.raises(StepAside):
        lean_argv(list(files))
