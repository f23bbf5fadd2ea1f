"""A full disk: every output is written whole to a temporary name beside its target and renamed
(formats.outputs), so a failed write is one line and leaves no partial or stray file; a device target
(/dev/full) is written directly and its failure is one line, and files that would go beside a device are
refused. The failures are real: /dev/full, and a file-size limit (RLIMIT_FSIZE) set in the child process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from qrelkit.errors import OutputError
from qrelkit.formats.outputs import write_output, write_outputs
from tests.conftest import EXAMPLE, ROOT

QRELS = EXAMPLE / "qrels.txt"
RUN = EXAMPLE / "runs" / "bm25.run"
JUDGING = ROOT / "tests" / "app" / "fixtures"


def qrelkit(
    *args: object, stdout: object = subprocess.PIPE, fsize: int | None = None, cwd: Path | None = None
):
    def limit() -> None:  # in the child only: a real EFBIG on writes past ``fsize`` bytes
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-m", "qrelkit", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        cwd=cwd,
        preexec_fn=limit if fsize is not None else None,
    )


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_stdout_on_a_full_disk_is_one_line(command: str) -> None:
    with open("/dev/full", "w") as full:
        line = one_line(qrelkit(command, QRELS, RUN, stdout=full))
    assert line == (
        "qrelkit: error: cannot write the output (No space left on device). Fix: free space on the disk, or "
        "send the output elsewhere"
    )


def test_eval_into_dev_full_is_one_line() -> None:
    line = one_line(qrelkit("eval", QRELS, RUN, "-o", "/dev/full", "--format", "tsv"))
    assert line.startswith("qrelkit: error: /dev/full: cannot write (No space left on device)")


def test_pool_into_a_device_writes_nothing_beside_it() -> None:
    before = Path("/dev/full.meta.json").exists()
    line = one_line(qrelkit("pool", RUN, "--depth", 2, "-o", "/dev/full"))
    assert "/dev/full: is a device, not a file, and this output writes 'full.meta.json' beside it" in line
    assert Path("/dev/full.meta.json").exists() == before


def test_a_failed_write_leaves_the_old_file_and_no_stray_one(tmp_path: Path) -> None:
    out = tmp_path / "results.tsv"
    out.write_text("the previous results\n")
    # a real write failure: the child may write files of at most 200 bytes (EFBIG past them)
    line = one_line(qrelkit("eval", QRELS, RUN, "-q", "-o", out, fsize=200))
    assert line.startswith(f"qrelkit: error: {out}: cannot write (File too large); nothing was written")
    assert out.read_text() == "the previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.tsv"]


def test_a_failed_pool_leaves_neither_file(tmp_path: Path) -> None:
    out = tmp_path / "pool.jsonl"
    one_line(qrelkit("pool", *sorted((EXAMPLE / "runs").glob("*.run")), "--depth", 5, "-o", out, fsize=4096))
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = tmp_path / "project.db"
    proc = qrelkit("judge", "init", db, "--rubric", JUDGING / "rubric.toml", "--pool", JUDGING / "pool.jsonl",
                   "--docs", JUDGING / "docs.jsonl", "--queries", JUDGING / "queries.tsv",
                   "--labellers", "alice,bob", "--seed", "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:  # every pair graded 2 by both: nothing disputed, the gate passes
        conn.execute(
            "INSERT INTO grade_events (user_id, pair_id, grade, unsure, rubric_hash, created_at) "
            "SELECT u.user_id, a.pair_id, 2, 0, (SELECT value FROM meta WHERE key = 'rubric_hash'), "
            "'2026-01-01T00:00:00.000Z' FROM users u JOIN assignments a ON a.user_id = u.user_id "
            "WHERE u.name IN ('alice', 'bob')"
        )
    return db


def test_judge_export_into_dev_full_is_one_line(project: Path) -> None:
    line = one_line(qrelkit("judge", "export", project, "--labeller", "alice", "-o", "/dev/full"))
    assert line.startswith("qrelkit: error: /dev/full: cannot write (No space left on device)")


def test_judge_export_final_into_a_device_leaves_no_stray_manifest(project: Path) -> None:
    before = Path("/dev/full.manifest.json").exists()
    line = one_line(qrelkit("judge", "export", project, "--final", "-o", "/dev/full"))
    assert "/dev/full: is a device, not a file, and this output writes 'full.manifest.json' beside it" in line
    assert Path("/dev/full.manifest.json").exists() == before


def test_the_library_writes_all_or_none(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    write_outputs([(a, "one\n"), (b, b"two\n")])
    assert a.read_text() == "one\n" and b.read_text() == "two\n"
    mask = os.umask(0)
    os.umask(mask)
    assert (a.stat().st_mode & 0o777) == (0o666 & ~mask)  # as a plain open() would create it
    with pytest.raises(OutputError, match="is a folder, not a file"):
        write_outputs([(a, "new\n"), (tmp_path, "x")])
    assert a.read_text() == "one\n"  # not renamed: the second could not be written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]
    with pytest.raises(OutputError, match=r"the folder .* does not exist"):
        write_output(tmp_path / "missing" / "x.txt", "x")
