"""What is not a regular file, or is larger than its kind of file can sanely be, is refused before it is
read (formats.inputs.check_input, which every reader of every command applies): a FIFO with no writer,
/dev/zero, /dev/urandom, a folder, an 8 GB sparse file (made by truncate: no disk used). A file whose
first bytes are not text is refused at its first byte, not after reading a gigabyte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qrelkit.errors import InputFormatError
from qrelkit.formats.inputs import LIMITS, check_input, read_input
from tests.conftest import EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
RUN = EXAMPLE / "runs" / "bm25.run"
RUBRIC = EXAMPLE / "rubric.toml"
DOCS = EXAMPLE / "docs.jsonl"
QUERIES = EXAMPLE / "queries.tsv"


def refused(*args: object, cwd: Path | None = None) -> str:
    """The one stderr line of a refused command run as a real process. The timeout only guards against a
    hang (a FIFO opened with no writer blocks for ever); what is asserted is the line."""
    proc = subprocess.run(
        [sys.executable, "-m", "qrelkit", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    # qrelkit trec_eval exits 2 on a file it cannot read, as trec_eval does (docs/trec_eval.md)
    expected = 2 if args and args[0] == "trec_eval" else 1
    assert proc.returncode == expected, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    fifo = folder / "fifo.txt"
    os.mkfifo(fifo)
    sparse = folder / "sparse8g"
    subprocess.run(["truncate", "-s", "8G", str(sparse)], check=True)  # no disk used
    gig = folder / "nul1g.run"
    subprocess.run(["truncate", "-s", "1G", str(gig)], check=True)
    return {"fifo": fifo, "sparse": sparse, "nul": gig, "folder": folder}


NOT_REGULAR = {
    "fifo": "is a FIFO (named pipe), not a regular file",
    "zero": "is a character device, not a regular file",
    "urandom": "is a character device, not a regular file",
}


def _path(hostile: dict[str, Path], name: str) -> Path:
    return {"zero": Path("/dev/zero"), "urandom": Path("/dev/urandom")}.get(name) or hostile[name]


@pytest.mark.parametrize("name", sorted(NOT_REGULAR))
@pytest.mark.parametrize("role", ["run", "qrels", "trec_eval run", "rubric", "docs", "pool run"])
def test_what_is_not_a_regular_file_is_refused_with_how_to_pass_a_stream(
    hostile: dict[str, Path], tmp_path: Path, name: str, role: str
) -> None:
    bad = _path(hostile, name)
    args: list[object] = {
        "run": ["eval", QRELS, bad],
        "qrels": ["eval", bad, RUN],
        "trec_eval run": ["trec_eval", QRELS, bad],
        "rubric": ["rubric", "lint", bad],
        "docs": ["judge", "init", tmp_path / "p.db", "--rubric", RUBRIC, "--pool", tmp_path / "none.jsonl",
                 "--docs", bad, "--queries", QUERIES],
        "pool run": ["pool", bad, "-o", tmp_path / "pool.jsonl"],
    }[role]  # fmt: skip
    if role == "docs":  # a real pool, so that the documents are what is refused
        subprocess.run([sys.executable, "-m", "qrelkit", "pool", RUN, "--depth", "1", "-o",
                        tmp_path / "none.jsonl"], check=True, capture_output=True)  # fmt: skip
    line = refused(*args)
    assert f"{bad}: {NOT_REGULAR[name]}" in line
    assert "write the stream to a file first" in line
    assert not (tmp_path / "pool.jsonl").exists()


@pytest.mark.parametrize(
    ("role", "kind"),
    [("rubric", "rubric"), ("qrels", "qrels"), ("docs", "docs"), ("queries", "queries")],
)
def test_an_8_gb_sparse_file_is_refused_by_its_size_bound(
    hostile: dict[str, Path], tmp_path: Path, role: str, kind: str
) -> None:
    sparse = hostile["sparse"]
    pool = tmp_path / "pool.jsonl"
    subprocess.run([sys.executable, "-m", "qrelkit", "pool", RUN, "--depth", "1", "-o", pool],
                   check=True, capture_output=True)  # fmt: skip
    init = ["judge", "init", tmp_path / "p.db", "--labellers", "alice,bob", "--no-calibration",
            "--rubric", RUBRIC, "--pool", pool]  # fmt: skip
    args: list[object] = {
        "rubric": ["rubric", "lint", sparse],
        "qrels": ["eval", sparse, RUN],
        "docs": [*init, "--docs", sparse, "--queries", QUERIES],
        "queries": [*init, "--docs", DOCS, "--queries", sparse],
    }[role]
    line = refused(*args)
    bound = LIMITS[kind][0]
    words = f"{bound >> 30} GiB" if bound % (1 << 30) == 0 else f"{bound >> 20} MiB"
    assert f"{kind} file is 8,589,934,592 bytes, larger than the bound of {words}" in line
    assert LIMITS[kind][1] in line  # the reason is stated


@pytest.mark.parametrize("command", ["eval", "trec_eval"])
def test_a_gigabyte_of_nul_bytes_is_refused_at_its_first_byte(hostile: dict[str, Path], command: str) -> None:
    # within the run bound, so what refuses it is the first byte: the same words as the robust reader's
    line = refused(command, QRELS, hostile["nul"])
    assert line.endswith(
        "nul1g.run:1: file holds binary data (a NUL byte at byte offset 0). Fix: pass a text TREC file, "
        "or name the format"
    )


def test_a_sparse_file_given_as_a_run_is_refused_at_its_first_fault(hostile: dict[str, Path]) -> None:
    line = refused("eval", QRELS, hostile["sparse"])
    assert "sparse8g:1: file holds binary data (a NUL byte at byte offset 0)" in line


def test_a_folder_is_refused(hostile: dict[str, Path]) -> None:
    line = refused("rubric", "lint", hostile["folder"])
    assert "is a folder, not a file" in line


def test_the_bound_is_a_parameter_of_the_library(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_bytes(b"x" * 101)
    assert check_input(path, "rubric", limit=101) == 101
    with pytest.raises(
        InputFormatError, match=r"small\.txt: rubric file is 101 bytes, larger than the bound"
    ):
        check_input(path, "rubric", limit=100)
    with pytest.raises(InputFormatError, match="rubric file is 101 bytes"):
        read_input(path, kind="rubric", limit=100)
    assert read_input(path, kind="rubric", limit=101) == b"x" * 101


def test_every_kind_has_a_bound_and_a_reason() -> None:
    for kind, (bound, reason) in LIMITS.items():
        assert bound > 0 and reason, kind
    assert LIMITS["rubric"][0] < LIMITS["qrels"][0] < LIMITS["run"][0]
