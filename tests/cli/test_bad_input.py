"""Malformed inputs through the real command line: one line on stderr naming file and line, exit 1."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import polars as pl
import pytest

from ..conftest import CLI, FIXTURES

GOOD_QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
GOOD_RUN = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d3 1 0.5 sys\n"

# name -> (which file is bad, file name, content (str or bytes), expected line (None: no line), text in message)
CASES = {
    "run-five-fields": ("run", "run.txt", "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5\n", 2, "line has 5 fields"),
    "run-score-not-number": ("run", "run.txt", "q1 Q0 d1 1 2,5 sys\n", 1, "score '2,5' is not a number"),
    "run-score-nan": ("run", "run.txt", "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 NaN sys\n", 2, "not a finite number"),
    "run-score-inf": ("run", "run.txt", "q1 Q0 d1 1 inf sys\n", 1, "not a finite number"),
    "run-rank-not-integer": ("run", "run.txt", "q1 Q0 d1 one 2.5 sys\n", 1, "rank 'one' is not an integer"),
    "run-duplicate-doc": (
        "run",
        "run.txt",
        "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d1 3 1 sys\n",
        3,
        "appears more than once",
    ),
    "run-empty": ("run", "run.txt", "\n  \n", None, "file is empty"),
    "run-mixed-tags": ("run", "run.txt", "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 dense\n", 2, "mixes run tags"),
    "run-is-qrels": ("run", "run.txt", GOOD_QRELS, 1, "looks like a qrels line"),
    "qrels-grade-fraction": (
        "qrels",
        "qrels.txt",
        "q1 0 d1 2\nq1 0 d2 1.5\n",
        2,
        "grade '1.5' is not an integer",
    ),
    "qrels-grade-word": ("qrels", "qrels.txt", "q1 0 d1 high\n", 1, "grade 'high' is not an integer"),
    "qrels-three-fields": ("qrels", "qrels.txt", "q1 0 d1 2\nq1 d2 1\n", 2, "line has 3 fields"),
    "qrels-is-run": ("qrels", "qrels.txt", GOOD_RUN, 1, "looks like a run line"),
    "qrels-duplicate": ("qrels", "qrels.txt", "q1 0 d1 2\nq1 0 d1 1\n", 2, "appears more than once"),
    "qrels-empty": ("qrels", "qrels.txt", "", None, "file is empty"),
    "run-corrupt-gzip": (
        "run",
        "run.txt.gz",
        gzip.compress(GOOD_RUN.encode())[:-12],
        None,
        "gzip data is corrupt",
    ),
    "run-corrupt-deflate": (
        "run",
        "run.txt.gz",
        gzip.compress(GOOD_RUN.encode())[:12] + b"\xff" * 8 + gzip.compress(GOOD_RUN.encode())[20:],
        None,
        "gzip data is corrupt",
    ),
    "run-binary": ("run", "run.txt", b"\x00\x01\x02binary", 1, "binary data (a NUL byte at byte offset 0)"),
    "run-not-utf8": (
        "run",
        "run.txt",
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d\xff\xfe 2 2.5 sys\n",
        2,
        "not valid UTF-8 text (byte 0xff at byte offset 26)",
    ),
    "run-csv-missing-score": (
        "run",
        "run.csv",
        "query_id,doc_id,rank\nq1,d1,1\n",
        None,
        "missing column(s) score",
    ),
    "run-csv-bad-score": (
        "run",
        "run.csv",
        "query_id,doc_id,score\nq1,d1,1.0\nq1,d2,high\n",
        3,
        "score 'high' is not a number",
    ),
    "run-jsonl-bad-score": (
        "run",
        "run.jsonl",
        '{"query_id":"q1","doc_id":"d1","score":1}\n{"query_id":"q1","doc_id":"d2","score":"x"}\n',
        2,
        "score 'x' is not a number",
    ),
}


def _run_cli(tmp_path, case):
    which, fname, content, _, _ = case
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    bad = tmp_path / fname
    if which == "qrels":
        qrels = bad
    else:
        run = bad
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    proc = CLI.process("eval", str(qrels), str(run), "-f", "tsv")
    return proc, bad


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gives_one_clear_line(tmp_path, name):
    case = CASES[name]
    proc, bad = _run_cli(tmp_path, case)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    expected_line = case[3]
    location = f"{bad}:{expected_line}:" if expected_line is not None else f"{bad}:"
    assert line.startswith("qrelkit: error: " + location), line
    assert case[4] in line, line
    assert proc.stdout == ""


def test_missing_file_is_exit_1_with_the_path(tmp_path):
    proc = CLI.process("eval", str(tmp_path / "nope.txt"), str(tmp_path / "run.txt"))
    assert (
        proc.returncode == 1 and "nope.txt: file not found" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_grade_outside_rubric_scale_names_the_line(tmp_path):
    rubric = FIXTURES / "rubrics" / "clean.toml"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 7\n")
    run = tmp_path / "run.txt"
    run.write_text(GOOD_RUN)
    proc = CLI.process("eval", str(qrels), str(run), "--rubric", str(rubric))
    assert proc.returncode == 1, proc.stderr
    assert f"{qrels}:2: grade 7 is outside the rubric's scale [0, 1, 2, 3]" in proc.stderr


def test_bad_measure_is_a_usage_error(tmp_path):
    (tmp_path / "q").write_text(GOOD_QRELS)
    (tmp_path / "r").write_text(GOOD_RUN)
    for measure, text in [
        ("nDCG@0", "not a positive whole number"),
        ("nDGC@10", "did you mean 'nDCG'"),
        ("nDCG(rel=2)@10", "has no relevance threshold"),
        ("RelP", "needs a cutoff"),
        ("nDCG(gain=quadratic)@10", "unknown gain"),
    ]:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "qrelkit",
                "eval",
                str(tmp_path / "q"),
                str(tmp_path / "r"),
                "-m",
                measure,
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, (measure, proc.stderr)
        assert text in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_parquet_float_ids_are_refused(tmp_path):
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": [1.0, 2.0], "doc_id": ["a", "b"], "score": [1.0, 2.0]}).write_parquet(path)
    (tmp_path / "q").write_text(GOOD_QRELS)
    proc = CLI.process("eval", str(tmp_path / "q"), str(path))
    assert proc.returncode == 1 and "query_id column holds floating-point numbers" in proc.stderr


def test_gain_map_without_a_grade_is_refused(tmp_path):
    (tmp_path / "q").write_text(GOOD_QRELS)
    (tmp_path / "r").write_text(GOOD_RUN)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "qrelkit",
            "eval",
            str(tmp_path / "q"),
            str(tmp_path / "r"),
            "--gain",
            "{0:0,2:3}",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "grade 1 is not in the gain map {0:0,2:3}" in proc.stderr, proc.stderr
    json.dumps({})  # keep json import used by other helpers


@pytest.mark.parametrize(
    "args",
    [
        ["pool", "--seed", "-1", "run.txt", "-o", "pool.jsonl"],
        ["agree", "--seed", "-1", "a.qrels", "b.qrels"],
        ["compare", "--seed", "-1", "qrels.txt", "a.run", "b.run"],
        ["report", "--seed", "-1", "qrels.txt", "a.run", "-o", "r.html"],
        ["judge", "init", "p.db", "--seed", "-1"],
    ],
)
def test_a_negative_seed_is_a_usage_error_in_every_command(args):
    """cli/options.seed_option: numpy's default_rng refuses a negative seed, so every --seed refuses it
    first (compare and report once ended in numpy's traceback)."""
    from click.testing import CliRunner

    from qrelkit.cli import main

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "--seed" in result.output and "-1 is not in the range x>=0" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["pool"], ["judge", "init", "p.db"]])
@pytest.mark.parametrize(
    ("value", "message"),
    [("alice,,bob", "empty name in 'alice,,bob'"), ("alice,bob,alice", "a name is repeated")],
)
def test_labellers_read_the_same_in_pool_and_judge_init(command, value, message):
    """cli/options.parse_labellers: judge init once dropped empty names and kept repeated ones silently."""
    from click.testing import CliRunner

    from qrelkit.cli import main

    result = CliRunner().invoke(main, [*command, "--labellers", value])
    assert result.exit_code == 2 and message in result.output, result.output
