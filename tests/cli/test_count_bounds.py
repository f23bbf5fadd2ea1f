"""Every count on the command line has a bound with its reason: a number past it is one line (exit 1 for a
resample count, 2 for a trec_eval option or a measure's cutoff), never an OverflowError traceback, an
attempt to allocate terabytes or a run without end."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLE, on_a_terminal

QRELS = EXAMPLE / "qrels.txt"
BM25 = EXAMPLE / "runs" / "bm25.run"
DENSE = EXAMPLE / "runs" / "dense.run"


def one_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return lines[-1]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-M", "99999999999999999999999"], "-M 99999999999999999999999 is larger than 1,000,000,000"),
        (["-m", "P.99999999999999999999"], "P: a cutoff is larger than 1,000,000,000"),
        (["-m", "ndcg_cut.5,1000000001"], "ndcg_cut: a cutoff is larger than 1,000,000,000"),
        (
            ["-m", "utility", "-N", "99999999999999999999999"],
            "is larger than 9,007,199,254,740,992 documents",
        ),
    ],
)
def test_trec_eval_counts_past_their_bound_are_one_line(cli, args: list[str], words: str) -> None:
    line = one_line(cli("trec_eval", *args, QRELS, BM25), 2)
    assert words in line


def test_trec_eval_at_the_bound_still_runs(cli) -> None:
    # -M at the bound keeps every document: the same output as no -M at all
    at_bound = cli("trec_eval", "-M", "1000000000", QRELS, BM25)
    plain = cli("trec_eval", QRELS, BM25)
    assert at_bound.exit_code == 0 and at_bound.stdout == plain.stdout


def test_eval_cutoff_past_the_bound(cli) -> None:
    line = one_line(cli("eval", "-m", "nDCG@99999999999999999", QRELS, BM25), 2)
    assert "cutoff 99999999999999999 is larger than 1,000,000,000" in line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--bootstrap", "999999999999"], "bootstrap resamples must be a whole number from 1 to 1,000,000"),
        (["--permutations", "1000000000000"], "must be a whole number from 1 to 100,000,000"),
        (["--power", "--power-delta", "nan"], "difference to detect must be a finite number (got nan)"),
        (["--power", "--power-delta", "inf"], "difference to detect must be a finite number (got inf)"),
    ],
)
def test_compare_counts_past_their_bound_are_one_line(cli, args: list[str], words: str) -> None:
    line = one_line(cli("compare", *args, QRELS, BM25, DENSE), 1)
    assert line.startswith("qrelkit: error: ")
    assert words in line


def test_agree_bootstrap_past_its_bound(cli) -> None:
    judgments = sorted((EXAMPLE / "judgments").glob("*.qrels"))
    line = one_line(cli("agree", "--bootstrap", "999999999999", *judgments), 1)
    assert "n_resamples must be a whole number from 1 to 100,000" in line


def _compare(*args: object, terminal: bool) -> tuple[int, str]:
    """``qrelkit compare`` as a real process, its stderr a real terminal (a pty) or a pipe: (exit, stderr)."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "qrelkit", "compare", QRELS, BM25, DENSE, *map(str, args)]
    if not terminal:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stderr
    return on_a_terminal(command, stream="stderr")


def test_a_long_resampling_shows_a_bar_on_a_terminal_and_a_line_per_tenth_otherwise() -> None:
    code, shown = _compare("--permutations", 3_000_000, terminal=True)
    assert code == 0
    assert "sign vectors" in shown and "/3000000" in shown  # rich's bar: done/total
    code, piped = _compare("--permutations", 3_000_000, terminal=False)
    assert code == 0
    lines = [line for line in piped.splitlines() if "sign vectors" in line]
    # the draw reports after each block of sign vectors: each tenth once, the first block past it
    assert [line.split(": ")[2].split(" ")[0] for line in lines] == [f"{10 * k}%" for k in range(1, 11)]
    assert lines[-1] == "qrelkit: sign vectors: 100% (3,000,000/3,000,000)"
    code, short = _compare("--permutations", 1000, terminal=True)  # a short draw: no bar
    assert code == 0 and "sign vectors" not in short
