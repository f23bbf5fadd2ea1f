"""The hostile-input corpus (tests/property/hostile.py) through every local engine and every command that
reads files: the small path, the frame path (values read, then ``evaluate``), DuckDB under a memory limit,
and the command line (eval, trec_eval, compare, pool, explain, judge init --runs). Each refuses the input
with the same one-line error, and none shows a traceback, hangs or prints a number for it (Spark's engine:
tests/spark/test_hostile_inputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.errors import QrelkitError
from qrelkit.evaluation import plan
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_qrels, read_run
from tests.conftest import CLI

from .hostile import HOSTILE_QRELS, HOSTILE_RUNS

NAMES = [*HOSTILE_RUNS, *HOSTILE_QRELS, "a FIFO with no writer", "/dev/zero"]
MEASURES = ["nDCG@10", "AP"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    from .hostile import build

    return build(tmp_path_factory.mktemp("hostile"))


def _error(call) -> str:
    with pytest.raises(QrelkitError) as err:
        call()
    return str(err.value)


def engine_errors(qrels: Path, run: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    out = {
        "small": _error(lambda: evaluate_files(qrels, [run], MEASURES)),
        "frame": _error(lambda: evaluate(read_qrels(qrels), [read_run(run)], MEASURES)),
    }
    with monkeypatch.context() as m:
        m.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every run counts as too big: sorted on disk
        # 512MB: above the smallest limit a run sorted on disk needs beside these small judgments
        duckdb = _error(lambda: evaluate_files(qrels, [run], MEASURES, memory_limit="512MB"))
    # under a memory limit, a gzip file's bound names the limit too: the one difference allowed
    out["duckdb"] = duckdb.replace(" and the memory limit of 512,000,000 bytes", "")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_engine_gives_the_same_error(corpus, monkeypatch, name: str) -> None:
    qrels, run = corpus[name]
    errors = engine_errors(qrels, run, monkeypatch)
    assert len(set(errors.values())) == 1, errors
    message = errors["small"]
    assert "\n" not in message
    assert message.startswith(str(run) if name not in HOSTILE_QRELS else str(qrels)), message


def _one_line(result) -> str:
    assert result.exit_code in (1, 2), (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("name", NAMES)
def test_every_command_that_reads_the_files_gives_that_error_in_one_line(
    corpus, monkeypatch, tmp_path, name: str
) -> None:
    qrels, run = corpus[name]
    good_qrels, good_run = corpus["grade 1024"][1].with_name("good.qrels"), corpus["grade 1024"][1]
    expected = f"qrelkit: error: {engine_errors(qrels, run, monkeypatch)['small']}"
    assert _one_line(CLI("eval", qrels, run, "-m", "nDCG@10", "-m", "AP")) == expected
    assert _one_line(CLI("compare", qrels, good_run, run, "-m", "nDCG@10", "-m", "AP")) == expected
    assert _one_line(CLI("explain", qrels, run, "--query", "q1", "-m", "nDCG@10")).startswith(
        "qrelkit: error: "
    )
    trec_eval = CLI("trec_eval", qrels, run)
    assert trec_eval.exception is None or isinstance(trec_eval.exception, SystemExit), repr(
        trec_eval.exception
    )
    if trec_eval.exit_code != 0:  # trec_eval's own rules may take what qrelkit's refuse (two tags, say)
        assert len(trec_eval.stderr.strip().splitlines()) == 1, trec_eval.stderr
    if run != good_run:  # the commands that read runs alone
        pool = CLI("pool", run, "--depth", 2, "-o", tmp_path / "pool.jsonl")
        line = _one_line(pool)
        assert line.startswith("qrelkit: error: ") and str(run) in line
        assert not (tmp_path / "pool.jsonl").exists()
    else:
        agree = CLI("agree", qrels, good_qrels)
        assert agree.exception is None or isinstance(agree.exception, SystemExit), repr(agree.exception)
        if agree.exit_code != 0:
            assert _one_line(agree).startswith("qrelkit: error: ")
