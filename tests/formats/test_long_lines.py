"""A line longer than the bound of a TREC line (1 MiB) is refused with its line before Arrow's parser sees
it, on every path, and no reader thread outlives the error: run many times as a real process, the exit code
is always the error's (1; 2 for `qrelkit trec_eval`, which exits as trec_eval does on a
file it cannot read, docs/trec_eval.md), never an abort (134) or a crash (139)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qrelkit.formats.trec.common import MAX_LINE_BYTES, first_long_line
from tests.conftest import EXAMPLE

QRELS = EXAMPLE / "qrels.txt"


def _run(path: Path, long_at: int, length: int) -> Path:
    with path.open("w") as out:
        for i in range(1, long_at):
            out.write(f"q1 Q0 d{i} {i} {1.0 / i:.6f} t\n")
        out.write(f"q1 Q0 {'x' * length} {long_at} 0.0001 t\n")
        for i in range(long_at + 1, long_at + 1000):
            out.write(f"q1 Q0 d{i} {i} {1.0 / i:.6f} t\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    folder = tmp_path_factory.mktemp("long")
    return {
        # a 45 MB line on line 2: within the first bytes every reader checks
        "early": (_run(folder / "early.run", 2, 45_000_000), 2),
        # past the first 2 MiB: the streaming readers step aside and the robust reader refuses it
        "late": (_run(folder / "late.run", 120_000, 3_000_000), 120_000),
    }


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_a_long_line_is_one_line_and_the_errors_exit_every_time(
    runs, command: str, where: str, native: str
) -> None:
    path, line = runs[where]
    env = {**os.environ, "QRELKIT_NATIVE": native}
    for _ in range(4 if where == "early" else 2):
        proc = subprocess.run(
            [sys.executable, "-m", "qrelkit", command, str(QRELS), str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert proc.returncode == (2 if command == "trec_eval" else 1), (proc.returncode, proc.stderr[-2000:])
        assert proc.stderr.strip() == (
            f"qrelkit: error: {path}:{line}: line is longer than 1,048,576 bytes (the bound of a TREC line); "
            "expected fields separated by spaces, ids of at most 512 bytes. Fix: check the file: it is not "
            "TREC text, or its lines lost their line ends"
        )


def test_first_long_line_finds_the_start_of_the_first_line_past_the_bound() -> None:
    limit = 10
    assert first_long_line(b"abc\n" * 100, limit) is None
    assert first_long_line(b"a" * 10 + b"\n", limit) is None  # exactly the bound
    assert first_long_line(b"a" * 11 + b"\n", limit) == 0
    assert first_long_line(b"ab\n" + b"c" * 11, limit) == 3  # a last line without its line end
    assert first_long_line(b"ab\n" + b"c" * 9 + b"\n" + b"d" * 30 + b"\n", limit) == 13
    assert MAX_LINE_BYTES == 1 << 20
