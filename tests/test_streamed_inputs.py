"""Inputs read as streams: a NUL byte is refused where it lies, however far into the file, and a reader's memory
follows its longest line, not the file. Real files (the NUL tails are sparse, so they cost no disk), real
commands in child processes, peak memory read with ``resource.getrusage`` of each child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "docsearch"
MiB = 1 << 20
#: The NUL tail of each attack file: a reader that holds the file at once grows by at least this much.
TAIL = 64 * MiB
#: The growth a streamed reader may show over the same command on a file with a 1 KiB tail: a few of its
#: blocks (1 MiB for the project's readers, 4 MiB for a TREC file's check), far below the tail.
GROWTH_BOUND = 16 * MiB

MEASURE = (
    "import resource, subprocess, sys\n"
    "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(proc.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"  # KiB on Linux
    "sys.exit(proc.returncode)\n"
)


def measured(*args: object) -> tuple[str, int]:
    """The one stderr line of a refused ``qrelkit`` command run in a child of a child, and the child's peak
    resident memory in bytes (this process's children include other tests', so a parent of its own reads it)."""
    command = [sys.executable, "-c", MEASURE, sys.executable, "-m", "qrelkit", *map(str, args)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0], int(proc.stdout.split()[-1]) * 1024


def with_nul_tail(path: Path, head: bytes, tail: int) -> Path:
    """``head`` then ``tail`` NUL bytes (a hole in the file: sparse, nothing written to disk)."""
    with path.open("wb") as f:
        f.write(head)
        f.truncate(len(head) + tail)
    return path


# -- a TREC file past its first 2 MiB -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trec(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    folder = tmp_path_factory.mktemp("trec")
    (folder / "q.qrels").write_text(
        "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(20) for d in range(10))
    )
    lines = b"".join(
        b"q%d Q0 d%d %d %d.0 sys\n" % (q, r, r + 1, 1000 - r) for q in range(420) for r in range(400)
    )
    assert len(lines) > 4 * MiB  # past the first 2 MiB checked at once, and past one 4 MiB block
    return folder, lines


def test_a_nul_byte_past_the_first_megabytes_is_refused_where_it_lies(trec: tuple[Path, bytes]) -> None:
    folder, lines = trec
    small = with_nul_tail(folder / "small.run", lines, 1024)
    large = with_nul_tail(folder / "large.run", lines, TAIL)
    n = lines.count(b"\n")  # the NUL bytes start line n + 1, at the byte after the lines
    line, base = measured("eval", folder / "q.qrels", small, "-m", "nDCG@10")
    assert line.startswith(f"qrelkit: error: {small}:{n + 1}: file holds binary data (a NUL byte at byte offset "
                           f"{len(lines)})"), line  # fmt: skip
    line, peak = measured("eval", folder / "q.qrels", large, "-m", "nDCG@10")
    assert line.startswith(f"qrelkit: error: {large}:{n + 1}: file holds binary data (a NUL byte at byte offset "
                           f"{len(lines)})"), line  # fmt: skip
    assert peak - base < GROWTH_BOUND, (peak, base)


def test_a_nul_byte_inside_a_line_deep_in_the_file_names_its_line(trec: tuple[Path, bytes]) -> None:
    folder, lines = trec
    cut = lines.index(b"\n", 3 * MiB) + 1  # the start of a line past 3 MiB
    path = folder / "middle.run"
    path.write_bytes(lines[:cut] + b"q1 Q0 d\x001 1 1.0 sys\n" + lines[cut:])
    line, _ = measured("eval", folder / "q.qrels", path, "-m", "nDCG@10")
    number = lines[:cut].count(b"\n") + 1
    expected = f"{path}:{number}: file holds binary data (a NUL byte at byte offset {cut + 7})"
    assert line.startswith(f"qrelkit: error: {expected}"), line


def test_a_long_line_past_the_first_megabytes_is_refused_with_its_line(trec: tuple[Path, bytes]) -> None:
    folder, lines = trec
    path = folder / "long.run"
    path.write_bytes(lines + b"q1 Q0 " + b"d" * (2 * MiB) + b" 1 1.0 sys\n")
    line, _ = measured("eval", folder / "q.qrels", path, "-m", "nDCG@10")
    number = lines.count(b"\n") + 1
    assert line.startswith(f"qrelkit: error: {path}:{number}: line is longer than 1,048,576 bytes"), line


# -- the judging project's readers ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("project")
    pool = folder / "pool.jsonl"
    runs = sorted((EXAMPLE / "runs").glob("*.run"))
    proc = subprocess.run([sys.executable, "-m", "qrelkit", "pool", *map(str, runs), "--depth", "2",
                           "--labellers", "alice,bob", "-o", str(pool)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    db = folder / "p.db"
    proc = subprocess.run([sys.executable, "-m", "qrelkit", "judge", "init", str(db), "--rubric",
                           str(EXAMPLE / "rubric.toml"), "--pool", str(pool), "--docs", str(EXAMPLE / "docs.jsonl"),
                           "--queries", str(EXAMPLE / "queries.tsv")], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return pool, db


def _first_line(path: Path) -> bytes:
    return path.read_bytes().split(b"\n", 1)[0] + b"\n"


def _commands(kind: str, attack: Path, pool: Path, db: Path, tmp: Path) -> tuple[object, ...]:
    init = ("judge", "init", tmp / f"{attack.stem}.db", "--rubric", EXAMPLE / "rubric.toml",
            "--queries", EXAMPLE / "queries.tsv")  # fmt: skip
    if kind == "init --docs":
        return (*init, "--pool", pool, "--docs", attack)
    if kind == "init --pool":
        return (*init, "--pool", attack, "--docs", EXAMPLE / "docs.jsonl")
    if kind == "model add --pairs":
        return ("judge", "model", "add", db, attack.stem, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                "--pairs", attack)  # fmt: skip
    return ("judge", "extend", db, EXAMPLE / "runs" / "bm25.run", "--docs", attack)


@pytest.mark.parametrize("kind", ["init --docs", "init --pool", "model add --pairs", "extend --docs"])
def test_a_project_file_with_a_nul_tail_is_refused_at_its_line_in_bounded_memory(
    kind: str, project: tuple[Path, Path], tmp_path: Path
) -> None:
    pool, db = project
    head = {
        "init --docs": _first_line(EXAMPLE / "docs.jsonl"),
        "init --pool": _first_line(pool),
        "model add --pairs": b"q1 d1\n",
        "extend --docs": _first_line(EXAMPLE / "docs.jsonl"),
    }[kind]
    peaks = []
    for name, tail in (("small", 1024), ("large", TAIL)):
        attack = with_nul_tail(tmp_path / f"{name}.txt", head, tail)
        line, peak = measured(*_commands(kind, attack, pool, db, tmp_path))
        assert line.startswith(f"qrelkit: error: {attack}:2: "), line
        assert f"holds binary data (a NUL byte at byte offset {len(head)})" in line, line
        peaks.append(peak)
    assert peaks[1] - peaks[0] < GROWTH_BOUND, peaks
