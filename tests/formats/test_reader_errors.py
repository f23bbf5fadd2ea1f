"""Every reading path gives the same error for the same bad file, and hostile inputs stay bounded.

The paths: the small path (which steps aside, so ``evaluate_files`` falls back), the streaming readers
(native scanner and Arrow, which step aside too), the robust reader, and DuckDB under a memory limit, in
the library and through the command line. Expected texts are written out by hand here: the line, the
byte offset counted in the file, the field that is too long.
"""

from __future__ import annotations

import gzip

import pytest

from qrelkit import _native
from qrelkit.errors import InputFormatError, QrelkitError, StepAside
from qrelkit.evaluation.files import _evaluate_small, evaluate_files
from qrelkit.formats import external, read_qrels, read_run
from qrelkit.formats.trec import MAX_ID_BYTES, TextCheck, streaming
from qrelkit.formats.trec import small as small_reader
from qrelkit.measures.conventions import DEFAULT

from ..conftest import CLI

GOOD_QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
GOOD_RUN = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d3 1 0.5 sys\n"
LONG = "x" * (MAX_ID_BYTES + 1)

# name -> (run file bytes, the error's text after "<path>:", written by hand)
BAD_RUNS = {
    "bad score": (
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 abc sys\n",
        "2: score 'abc' is not a number",
    ),
    "too few fields": (
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5\n",
        "2: line has 5 fields",
    ),
    "duplicate doc": (
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d1 3 1 sys\n",
        "3: document 'd1' appears more than once for query 'q1' (lines 1, 3; 1 duplicated pair(s) in all)",
    ),
    "two tags": (
        b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 dense\n",
        "2: file mixes run tags 'bm25' and 'dense'",
    ),
    # 19 bytes of line 1, then 'q1 Q0 d' (7 bytes): the bad byte is at offset 26
    "bad utf-8": (
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d\xff 2 1.5 sys\n",
        "2: file is not valid UTF-8 text (byte 0xff at byte offset 26)",
    ),
    "nul byte": (
        b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d\x003 1 0.5 sys\n",
        "3: file holds binary data (a NUL byte at byte offset 45)",
    ),
    "long id": (
        f"q1 Q0 d1 1 2.5 sys\nq1 Q0 {LONG} 2 1.5 sys\n".encode(),
        f"2: doc_id is {MAX_ID_BYTES + 1} bytes long, more than the {MAX_ID_BYTES} a TREC id may have",
    ),
    # a no-break space (UTF-8 c2 a0) is not a field separator: it stays in the id, which the id rule refuses
    "no-break space in an id": (
        "q1 Q0 d1 1 2.5 sys\nq1 Q0 d\u00a02 2 1.5 sys\n".encode(),
        "2: doc_id holds the character U+00A0 (whitespace or a control character) at character 2",
    ),
    "DEL in a query id": (
        b"q1 Q0 d1 1 2.5 sys\nq\x7f1 Q0 d2 2 1.5 sys\n",
        "2: query_id holds the character U+007F (whitespace or a control character) at character 2",
    ),
    "C1 control in an id": (
        "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 x\u0085 1 0.5 sys\n".encode(),
        "3: doc_id holds the character U+0085 (whitespace or a control character) at character 2",
    ),
}


@pytest.fixture
def force_external(monkeypatch):
    from qrelkit.evaluation import plan

    monkeypatch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every run counts as too big for memory


def _files(tmp_path, run: bytes, qrels: bytes = GOOD_QRELS.encode()):
    (tmp_path / "qrels.txt").write_bytes(qrels)
    (tmp_path / "run.txt").write_bytes(run)
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


def _small_steps_aside(qrels, run) -> bool:
    """Whether step 1 (the small path) declines these files."""
    from qrelkit.evaluation.plan import Inputs, plan_reading
    from qrelkit.measures.grammar import parse_measures

    parsed = parse_measures(["nDCG@10"])
    plan = plan_reading(Inputs.build(qrels, [run], parsed, DEFAULT))
    return _evaluate_small(plan, None, {}) is None


def _error(call) -> str:
    with pytest.raises(QrelkitError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("name", sorted(BAD_RUNS))
def test_every_path_gives_the_robust_readers_error(tmp_path, monkeypatch, name):
    content, expected = BAD_RUNS[name]
    qrels, run = _files(tmp_path, content)
    assert _small_steps_aside(qrels, run)
    assert streaming.read_run_fast(run) is None
    with monkeypatch.context() as m:
        m.setattr(_native, "lib", None)
        assert streaming.read_run_fast(run) is None  # Arrow's parse steps aside too
        assert _small_steps_aside(qrels, run)  # numpy's tokenizer
    robust = _error(lambda: read_run(run, reader="robust"))
    assert robust.startswith(f"{run}:{expected}"), robust
    assert _error(lambda: read_run(run)) == robust
    assert _error(lambda: evaluate_files(qrels, [run], ["nDCG@10"])) == robust  # small path first
    assert _error(lambda: evaluate_files(qrels, [run], ["AP"])) == robust  # a measure needing every row
    from qrelkit.evaluation import plan

    monkeypatch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)
    assert _error(lambda: evaluate_files(qrels, [run], ["AP"], memory_limit="500MB")) == robust  # DuckDB
    assert _error(lambda: evaluate_files(qrels, [run], ["nDCG@10"], memory_limit="500MB")) == robust


@pytest.mark.parametrize(
    "name",
    ["bad utf-8", "nul byte", "long id", "duplicate doc", "no-break space in an id", "DEL in a query id"],
)
def test_the_command_line_gives_the_same_line_with_and_without_a_memory_limit(tmp_path, force_external, name):
    from click.testing import CliRunner

    from qrelkit.cli import main

    content, expected = BAD_RUNS[name]
    qrels, run = _files(tmp_path, content)
    lines = []
    for extra in ([], ["--memory-limit", "500MB"]):  # every run is too big under the limit: DuckDB
        result = CliRunner().invoke(main, ["eval", str(qrels), str(run), "-m", "AP", *extra])
        assert result.exit_code == 1, result.output
        lines.append(result.stderr.strip())
    assert lines[0] == lines[1]
    assert lines[0].startswith(f"qrelkit: error: {run}:{expected}"), lines[0]
    assert len(lines[0].splitlines()) == 1


def test_the_duckdb_path_itself_raises_the_robust_readers_errors(tmp_path):
    for name, (content, _) in BAD_RUNS.items():
        _, run = _files(tmp_path, content)
        robust = _error(lambda run=run: read_run(run, reader="robust"))
        # a document given twice is found as its batch is read (each batch holds whole queries)
        got = _error(lambda run=run: list(external.run_batches(run, memory_limit=2**28)[0]))
        assert got == robust, name


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"q1 0 d1 2\nq1 0 d2 high\n", "2: grade 'high' is not an integer"),
        (b"q1 0 d1 2\nq1 0 d\xc3\n", "2: file is not valid UTF-8 text (byte 0xc3 at byte offset 16)"),
        (b"q1 0 d1 2\x00\n", "1: file holds binary data (a NUL byte at byte offset 9)"),
        (f"q1 0 {LONG} 2\n".encode(), f"1: doc_id is {MAX_ID_BYTES + 1} bytes long"),
        (f"{LONG} 0 d1 2\n".encode(), f"1: query_id is {MAX_ID_BYTES + 1} bytes long"),
        ("q1 0 d1 2\nq\u20281 0 d2 1\n".encode(), "2: query_id holds the character U+2028"),
        (b"q1 0 d\x1f1 2\n", "1: doc_id holds the character U+001F"),
    ],
)
def test_bad_judgments_give_one_error_on_every_path(tmp_path, content, expected):
    qrels, run = _files(tmp_path, GOOD_RUN.encode(), content)
    assert _small_steps_aside(qrels, run)
    assert streaming.read_qrels_fast(qrels) is None
    robust = _error(lambda: read_qrels(qrels, reader="robust"))
    assert robust.startswith(f"{qrels}:{expected}"), robust
    assert _error(lambda: read_qrels(qrels)) == robust
    assert _error(lambda: evaluate_files(qrels, [run], ["nDCG@10"])) == robust


def test_an_id_of_exactly_the_limit_is_read_by_every_path(tmp_path):
    """512 bytes is still an id; the small path takes it and gives the robust reader's numbers."""
    doc = "d" * MAX_ID_BYTES
    qrels, run = _files(
        tmp_path, f"q1 Q0 {doc} 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n".encode(), f"q1 0 {doc} 1\n".encode()
    )
    got = evaluate_files(qrels, [run], ["nDCG@10"])
    assert got.runs[0].meta["reader"] == "small"
    assert got.mean("nDCG@10") == 1.0  # the only relevant document at rank 1
    assert read_run(run, reader="robust").frame.get_column("doc_id").to_list()[0] == doc


def test_a_huge_id_never_reaches_the_small_paths_matrices(tmp_path, monkeypatch):
    """A 100 KB id in a run of many lines: refused with its line, and the small path steps aside before
    it builds a matrix of rows x longest id (here 5000 x 100 KB = 500 MB)."""
    lines = [f"q{i // 10} Q0 d{i} {i % 10 + 1} {1000 - i}.5 sys" for i in range(5000)]
    lines[4321] = f"q432 Q0 {'y' * 100_000} 2 1.5 sys"
    qrels, run = _files(tmp_path, ("\n".join(lines) + "\n").encode())
    built = []
    real = small_reader._matrix
    monkeypatch.setattr(small_reader, "_matrix", lambda *a, **k: built.append(1) or real(*a, **k))
    with pytest.raises(StepAside):
        small_reader.read_columns(run, "run")
    assert not built
    with pytest.raises(InputFormatError) as err:
        evaluate_files(qrels, [run], ["nDCG@10"])
    assert str(err.value).startswith(f"{run}:4322: doc_id is 100000 bytes long")
    assert "Fix: " in str(err.value)


def test_a_corrupt_gzip_is_one_line_naming_the_file(tmp_path):
    text = "".join(f"q{i // 10} Q0 d{i} {i % 10 + 1} {100 - i}.5 sys\n" for i in range(2000)).encode()
    damaged = bytearray(gzip.compress(text))
    damaged[30] ^= 0xFF  # inside the deflate stream: zlib reports it, not the gzip header
    run = tmp_path / "run.txt.gz"
    run.write_bytes(bytes(damaged))
    (tmp_path / "qrels.txt").write_text(GOOD_QRELS)
    with pytest.raises(InputFormatError) as err:
        read_run(run)
    assert str(err.value).startswith(f"{run}: gzip data is corrupt or truncated (Error -3")
    proc = CLI.process("eval", str(tmp_path / "qrels.txt"), str(run))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"qrelkit: error: {run}: gzip data is corrupt or truncated")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_nul_byte_in_gzipped_text_is_counted_in_the_uncompressed_text(tmp_path):
    run = tmp_path / "run.txt.gz"
    run.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 sys\nq1\x00 Q0 d2 2 1.5 sys\n"))
    (tmp_path / "qrels.txt").write_text(GOOD_QRELS)
    expected = f"{run}:2: file holds binary data (a NUL byte at byte offset 21)"
    assert _error(lambda: read_run(run)).startswith(expected)
    assert _error(lambda: evaluate_files(tmp_path / "qrels.txt", [run], ["AP"])).startswith(expected)


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ([b"a\xc3", b"\xa9\n"], None),  # a character split between blocks is fine
        ([b"ab\n\xc3", b"x\n"], "f:2: file is not valid UTF-8 text (byte 0xc3 at byte offset 3)"),
        ([b"ab\xc3"], "f:1: file is not valid UTF-8 text (byte 0xc3 at byte offset 2)"),  # cut at the end
        ([b"ab\n", b"\nc\x00"], "f:3: file holds binary data (a NUL byte at byte offset 5)"),
        ([b"\x00\xff"], "f:1: file holds binary data (a NUL byte at byte offset 0)"),  # the first one wins
    ],
)
def test_text_check_across_blocks(blocks, expected):
    check = TextCheck("f")
    try:
        for i, block in enumerate(blocks):
            check.feed(block, final=i == len(blocks) - 1)
    except InputFormatError as err:
        assert str(err).startswith(expected), str(err)
    else:
        assert expected is None


@pytest.mark.parametrize(
    ("which", "content", "expected"),
    [
        ("qrels", b"q1 0 d1 2\nq1  d2 0\n", "2: line has 3 fields"),  # an empty iteration field
        ("run", b"q1 Q0 d1 1 2.5 sys\nq1  d2 2 1.5 sys\n", "2: line has 5 fields"),
    ],
)
def test_arrow_steps_aside_for_an_empty_field_it_does_not_convert(
    tmp_path, monkeypatch, which, content, expected
):
    """Arrow's parse skips the iteration column, so its emptiness is checked on the text itself."""
    monkeypatch.setattr(_native, "lib", None)
    path = tmp_path / f"{which}.txt"
    path.write_bytes(content)
    fast = streaming.read_qrels_fast if which == "qrels" else streaming.read_run_fast
    assert fast(path) is None
    read = read_qrels if which == "qrels" else read_run
    assert _error(lambda: read(path)).startswith(f"{path}:{expected}")


def test_the_fast_readers_character_check_is_the_id_rule():
    """Every character of the Basic Multilingual Plane (where Unicode's whitespace and control characters
    lie) inside an id: the fast readers step aside exactly when the id rule refuses it, except the space
    and line end that separate fields."""
    import re

    from qrelkit.formats.trec.common import forbidden_in_text
    from qrelkit.naming import ID_PATTERN

    rule = re.compile(ID_PATTERN)
    for code in range(1, 0x10000):
        if 0xD800 <= code < 0xE000 or code in (0x0A, 0x20):
            continue
        char = chr(code)
        assert forbidden_in_text(f"q{char}1 Q0 d1 1 1 r\n".encode()) == bool(rule.match(char)), hex(code)
    # spot checks written by hand: U+00A0, U+0085, DEL, U+2028, U+3000 are refused; U+00E9, U+200B taken
    assert all(forbidden_in_text(f"a{c}b\n".encode()) for c in "\u00a0\u0085\x7f\u2028\u3000\t\r")
    assert not any(forbidden_in_text(f"a{c}b\n".encode()) for c in "\u00e9\u200b\u00ff")


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
def test_the_scanners_character_check_is_the_id_rule():
    """The same characters inside an id, in the native scanner's own pass (runs, judgments and the small
    path's split): it refuses exactly what the id rule refuses. ASCII whitespace (tab, vertical tab, form
    feed) separates fields there, as in the robust reader; a carriage return does only before a line end."""
    import re

    from qrelkit.naming import ID_PATTERN

    rule = re.compile(ID_PATTERN)
    separators = {0x09, 0x0B, 0x0C}
    for code in range(1, 0x10000):
        if 0xD800 <= code < 0xE000 or code in (0x0A, 0x20, *separators):
            continue
        char = chr(code)
        taken = not rule.match(char)
        run = f"q{char}1 Q0 d1 1 1 r\n".encode()
        assert (_native.scan_run(run, None, False) is not None) == taken, hex(code)
        assert (_native.scan_qrels(f"q1 0 d{char} 1\n".encode()) is not None) == taken, hex(code)
        assert (_native.split(run, 6, 4, score=True) is not None) == taken, hex(code)
    for code in (*separators, 0x0D):
        text = f"q1{chr(code)}Q0 d1 1 1 r\n".encode()
        assert (_native.scan_run(text, None, False) is not None) == (code != 0x0D), hex(code)
        assert _native.scan_run(f"q1 Q0 d1 1 1 r{chr(code)}\n".encode(), None, False) is not None


@pytest.mark.parametrize("what", ["missing", "folder"])
def test_a_file_that_cannot_be_opened_reads_the_same_in_every_reader(tmp_path, what):
    """formats.inputs.read_input words these errors once: the TREC readers and the judging project's
    pool, documents and queries readers give the same line."""
    from qrelkit.app.project import read_docs, read_pool, read_queries

    path = tmp_path / "nothing.txt"
    if what == "folder":
        path.mkdir()
    expected = {
        "missing": f"{path}: file not found. Fix: check the path (relative paths start from the current folder)",
        "folder": f"{path}: is a folder, not a file. Fix: name a file inside it",
    }[what]
    for reader in (read_run, read_qrels, read_pool, read_docs, read_queries):
        with pytest.raises(InputFormatError) as info:
            reader(path)
        assert str(info.value) == expected, reader.__name__
