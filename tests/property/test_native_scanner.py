"""The native scanner (src/qrelkit/_native) against independent references: Python's float() and
int() for every number it reads, a plain "beaten by fewer than k" count for the rows it keeps, and the
Arrow-based streaming reader and the robust reader for whole files. Whatever it refuses, the Arrow reader
must then read to the same result."""

from __future__ import annotations

import os
import shutil
import struct
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import _native, read_qrels, read_run
from qrelkit.errors import StepAside
from qrelkit.formats.trec import blocks
from qrelkit.formats.trec import streaming as fast

needs_native = pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")


def test_the_native_scanner_is_built_where_a_compiler_is():
    if (shutil.which("cc") or shutil.which("gcc")) and os.environ.get("QRELKIT_NATIVE", "1") != "0":
        assert _native.lib is not None, "installing qrelkit should have compiled src/qrelkit/_native/*.c"


def _scan(text: bytes, keep_top=None, single=False):
    return _native.scan_run(text, keep_top, single)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


# --------------------------------------------------------------------------------------------- numbers

# `.5` and `5.` included: the robust reader reads them, so the scanner does (the same path for every file)
_plain = st.from_regex(
    r"\A-?([0-9]{1,22}(\.[0-9]{0,22})?|\.[0-9]{1,22})([eE][-+]?[0-9]{1,3})?\Z", fullmatch=True
)
_from_floats = st.floats(allow_nan=False, allow_infinity=False).flatmap(
    lambda x: st.sampled_from([repr(x), f"{x:.17g}", f"{x:e}", f"{x:.3f}", f"{x:.20e}"])
)


@needs_native
@settings(max_examples=2000, deadline=None)
@given(score=st.one_of(_plain, _from_floats))
def test_scores_are_read_exactly_as_python_reads_them(score):
    text = f"q Q0 d 1 {score} t\n".encode()
    got = _scan(text)
    want = float(score)
    if not np.isfinite(want) or len(score) >= 80:
        assert got is None  # non-finite and 80+ characters are left to the Arrow reader
        return
    assert got is not None, score
    assert _bits(float(got.score[0])) == _bits(want), score


@needs_native
@settings(max_examples=3000, deadline=None)
@given(
    x=st.floats(min_value=1e-9, max_value=1e9),
    digits=st.integers(15, 19),
    nudge=st.integers(-3, 3),
    negative=st.booleans(),
)
def test_scores_near_the_midpoint_of_two_doubles_are_read_as_python_reads_them(x, digits, nudge, negative):
    """Up to 19 significant digits within a few units of the last digit of the exact halfway point between
    a double and the next: the numbers that one rounding in extended precision cannot decide, which the
    scanner must leave to strtod (Python's float() is the reference)."""
    halfway = (Decimal(x) + Decimal(float(np.nextafter(x, np.inf)))) / 2
    written = Decimal(format(halfway, f".{digits}e"))
    written += nudge * Decimal(1).scaleb(written.adjusted() - digits)
    score = ("-" if negative else "") + format(written, "f")
    got = _scan(f"q Q0 d 1 {score} t\n".encode())
    assert got is not None, score
    assert _bits(float(got.score[0])) == _bits(float(score)), score


@needs_native
@pytest.mark.parametrize(
    "score,value",
    [
        ("5e-324", 5e-324),
        ("1E+05", 1e5),
        ("00.5", 0.5),
        ("0.1000000000000000055511151231257827", 0.1),
        ("123456789012345678901234567890", 1.2345678901234568e29),
        ("2.2250738585072011e-308", 2.225073858507201e-308),
        ("1e-400", 0.0),
        ("9007199254740993", 9007199254740992.0),
        ("9007199254740995", 9007199254740996.0),
        ("0.30000000000000004", 0.30000000000000004),
        ("-1.2345678901234567", -1.2345678901234567),
        ("9999999999999999999", 1e19),
        ("18446744073709551616", 18446744073709551616.0),
        ("1.000000000000000111022302462515654042363166809082031250", 1.0),
        ("1.0000000000000001110223024625156541", 1.0000000000000002),
        ("-7", -7.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("-0.0", -0.0),
        ("-.25e1", -2.5),
    ],
)
def test_hard_scores(score, value):
    got = _scan(f"q Q0 d 1 {score} t\n".encode())
    assert got is not None and _bits(float(got.score[0])) == _bits(value)


@needs_native
@given(rank=st.integers(-(10**18) + 1, 10**18 - 1))
def test_ranks_are_read_as_int_reads_them(rank):
    got = _scan(f"q Q0 d {rank} 1 t\n".encode())
    assert got is not None and int(got.rank[0]) == rank


# ---------------------------------------------------------------------------------------- refusals

#: Layouts the robust reader splits on runs of ASCII whitespace (Arrow's ``ascii_split_whitespace``): the
#: scanner takes them too, with the robust reader's rows and line numbers.
WHITESPACE = [
    b"q Q0 d 1 1\tt\n",  # a tab
    b"q Q0 d 1 1 t\r\n",  # a carriage return before the line end
    b"q Q0 d\x0b1 1 t\n",  # a vertical tab
    b"q\x0cQ0 d 1 1 t\n",  # a form feed
    b"q Q0  d 1 1 t\n",  # two spaces
    b" q Q0 d 1 1 t\n",  # a leading space
    b"\t \x0b q Q0 d 1 1 t\n",  # leading whitespace of several kinds
    b"q Q0 d 1 1 t \n",  # a trailing space
    b"q Q0 d 1 1 t \t\r\n",  # trailing whitespace, then CRLF
    b"q Q0 d 1 1 t\n\nq Q0 e 2 1 t\n",  # a blank line
    b"\n \t\r\nq Q0 d 1 1 t\n\n",  # blank lines first and last
]

#: Runs with fields after the sixth, which trec_eval and the robust reader ignore: the scanner ignores them
#: too, and counts the lines that hold them (``lines_with_trailing_fields_ignored``).
TRAILING = [
    (b"q Q0 d 1 1 t x\n", 1),  # seven fields
    (b"q Q0 d 1 1 t x y z\nq Q0 e 2 0.5 t\n", 1),  # nine, then six
    (b"q Q0 d 1 1 t\tx \r\nq Q0 e 2 0.5 t  \xc3\xa9\n", 2),  # other whitespace; UTF-8 in the rest
    (b"q Q0 d 1 1 t x\n\nr Q0 d 1 1 t 1 2\nq Q0 e 2 0.5 t\n", 2),  # a blank line; a query that comes back
]

REFUSED = [
    b"q Q0 d 1 1 t\rq Q0 e 2 1 t\n",  # a carriage return not before a line end (Arrow ends a line there)
    b"q Q0 d 1 1 t\r\r\n",  # the same, then CRLF
    b"q Q0 d\x1c 1 1 t\n",  # a control character Arrow's split does not take as whitespace
    b"q Q0 d\x7f 1 1 t\n",  # DEL
    b"q Q0 d\xc2\x85 1 1 t\n",  # a C1 control (U+0085)
    b"q Q0 d\xc2\xa0e 1 1 t\n",  # U+00A0, a no-break space
    b"q Q0 d 1 1 t\xe3\x80\x80\n",  # U+3000 in the tag: the id rule's characters are refused anywhere
    b"q Q0 d 1 1 t x\x01\n",  # seven fields, a control character in the seventh
    b"q Q0 d 1 1 t x\ry\n",  # seven fields, a carriage return within them (Arrow ends a line there)
    b"q Q0 d 1 1 t \xc2\xa0\n",  # seven fields, the seventh a character the id rule forbids
    b"q Q0 d 1 1\n",  # five fields
    b"q Q0 d 1 1 t",  # no final newline (the reader adds one before scanning)
    b"q Q0 d\xff 1 1 t\n",  # not UTF-8
    b"q Q0 d\xed\xa0\x80 1 1 t\n",  # an encoded surrogate
    b"q Q0 d\xc0\xaf 1 1 t\n",  # an overlong encoding
    b"\xef\xbb\xbfq Q0 d 1 1 t\n",  # a byte-order mark
    b"q Q0 d 1 1 t\nq Q0 e 2 1 u\n",  # two tags
    b"q Q0 d 1 1 t\nq Q0 d 2 0.5 t\n",  # a document twice in a query
    b"q Q0 d 1 1 t\nr Q0 d 1 1 t\nq Q0 e 2 1 t\n",  # not grouped by query
    b"q Q0 d 1 +1 t\n",
    b"q Q0 d 1 . t\n",
    b"q Q0 d 1 -. t\n",
    b"q Q0 d 1 .e3 t\n",
    b"q Q0 d 1 1e t\n",
    b"q Q0 d 1 inf t\n",
    b"q Q0 d 1 nan t\n",
    b"q Q0 d 1 1e400 t\n",
    b"q Q0 d 1 1_0 t\n",
    b"q Q0 d 1.0 1 t\n",  # a rank that is not an integer
    b"q Q0 d 1234567890123456789 1 t\n",  # a rank of 19 digits
    b"q Q0 d +1 1 t\n",
]


@needs_native
@pytest.mark.parametrize("text", REFUSED)
def test_refused_blocks(text):
    assert _scan(text) is None


@needs_native
@pytest.mark.parametrize("chunk", [16, 16 << 20])
@pytest.mark.parametrize("text", WHITESPACE)
def test_whitespace_layouts_stream_with_the_robust_readers_rows(tmp_path, monkeypatch, text, chunk):
    """Fields split on runs of whitespace, blank lines skipped but counted: the rows, values and line
    numbers of the robust reader (an independent split: Arrow's ascii_split_whitespace)."""
    assert _scan(text if text.endswith(b"\n") else text + b"\n") is not None
    path = tmp_path / "run.txt"
    path.write_bytes(text)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    cols = ["query_id", "doc_id", "score", "rank", "line"]
    robust = read_run(path, reader="robust").frame.select(cols)
    for k in (None, 1):
        native = fast._read_run_native(path, k, False, None)
        assert native[2]["reader"] == "fast" and native[2]["rows_read"] == robust.height
        expected = robust if k is None else fast._reduce(robust, k, False)
        assert native[0].select(cols).sort("line").equals(expected.sort("line"))


@needs_native
@pytest.mark.parametrize("chunk", [16, 16 << 20])
@pytest.mark.parametrize("text,count", TRAILING)
def test_trailing_fields_are_ignored_and_counted_as_the_robust_reader_does(
    tmp_path, monkeypatch, text, count, chunk
):
    """Each path the scanner serves (every row, top rows, the small path's split) gives the robust
    reader's rows and its ``lines_with_trailing_fields_ignored``."""
    path = tmp_path / "run.txt"
    path.write_bytes(text)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    cols = ["query_id", "doc_id", "score", "rank", "line"]
    robust = read_run(path, reader="robust")
    assert robust.meta["lines_with_trailing_fields_ignored"] == count
    for k in (None, 1):
        native = fast._read_run_native(path, k, False, None)
        assert native[2]["lines_with_trailing_fields_ignored"] == count
        expected = robust.frame if k is None else fast._reduce(robust.frame, k, False)
        assert native[0].select(cols).sort("line").equals(expected.select(cols).sort("line"))
    split = _native.split(text, 6, 4, score=True, integer_field=3, same_field=5, trailing=True)
    assert split is not None and split[3] == count and len(split[2]) == robust.frame.height
    assert _native.split(text, 6, 4, score=True, integer_field=3, same_field=5) is None  # runs only
    assert _native.scan_qrels(text.replace(b" Q0", b" 0")) is None  # judgments take no trailing field


@needs_native
def test_non_ascii_ids_and_one_query_per_block():
    got = _scan("é Q0 文書 1 2.5 タグ\né Q0 d 2 1 タグ\n".encode())
    assert got is not None and got.kept == 2 and got.tag == "タグ".encode()
    assert bytes(got.d_data).decode() == "文書d" and got.d_off.tolist() == [0, 6, 7]
    assert bytes(got.q_data).decode() == "éé" and got.group_first.tolist() == [0]


# ------------------------------------------------------------------------------------------- top k


@needs_native
@settings(max_examples=400, deadline=None)
@given(
    groups=st.lists(
        st.lists(
            st.sampled_from([3.0, 2.5, 2.0, 1.0, 1.0000001, 1.00000001, 0.5, -1.0, 7.0]),
            min_size=1,
            max_size=40,
        ),
        min_size=1,
        max_size=6,
    ),
    k=st.integers(1, 12),
    single=st.booleans(),
    ordered=st.booleans(),
)
def test_kept_rows_are_those_beaten_by_fewer_than_k(groups, k, single, ordered):
    lines, want = [], []
    row = 0
    for g, scores in enumerate(groups):
        if ordered:
            scores = sorted(scores, reverse=True)
        compared = np.array(scores, dtype=np.float32 if single else np.float64)
        for i, s in enumerate(scores):
            lines.append(f"q{g} Q0 d{i} {i + 1} {s!r} t")
            if (compared > compared[i]).sum() < k:
                want.append(row)
            row += 1
    got = _scan(("\n".join(lines) + "\n").encode(), k, single)
    assert got is not None
    assert got.row.tolist() == want


# ------------------------------------------------------------------------------------------ whole files


@st.composite
def run_files(draw):
    queries = draw(
        st.lists(st.sampled_from(["1", "2", "10", "q-4", "é5", "6"]), min_size=1, max_size=6, unique=True)
    )
    lines = []
    for q in queries:
        docs = draw(st.lists(st.integers(0, 60), min_size=1, max_size=30, unique=True))
        scores = draw(
            st.lists(
                st.sampled_from(["1", "2", "3.5", "0.30000001", "0.3", "1e-3", "-2", "17", "1.000000001"]),
                min_size=len(docs),
                max_size=len(docs),
            )
        )
        pairs = list(zip(docs, scores, strict=True))
        if draw(st.booleans()):
            pairs.sort(key=lambda p: -float(p[1]))
        lines += [f"{q} Q0 d{d} {r} {s} sys" for r, (d, s) in enumerate(pairs, start=1)]
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    return text


def _read(path, parser, monkeypatch, **kw):
    with monkeypatch.context() as m:
        if parser == "arrow":
            m.setattr(_native, "lib", None)
        return fast.read_run_fast(path, **kw)


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=run_files(),
    chunk=st.sampled_from([40, 64, 200, 1000, 16 << 20]),
    k=st.sampled_from([None, 1, 3, 10]),
    single=st.booleans(),
)
def test_whole_files_read_as_the_arrow_reader_reads_them(
    tmp_path_factory, monkeypatch, text, chunk, k, single
):
    """Blocks are cut where a query begins: with tiny blocks a query spans many reads, and a block may hold
    no query boundary at all."""
    path = tmp_path_factory.mktemp("native") / "run.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    native = fast._read_run_native(path, k, single, None)  # clean and grouped: it must not refuse
    arrow = _read(path, "arrow", monkeypatch, keep_top=k, rank_single=single)
    assert arrow is not None
    assert native[0].equals(arrow[0])
    assert native[1] == arrow[1] and native[2] == arrow[2]
    if k is None:
        robust = read_run(path, reader="robust")
        cols = ["query_id", "doc_id", "score", "rank", "line"]
        assert native[0].select(cols).equals(robust.frame.select(cols))


@needs_native
@pytest.mark.parametrize("chunk", [40, 16 << 20])
@pytest.mark.parametrize("text", [*REFUSED, b"q Q0 d 1 1 t\n  \n", b"q Q0 d 1 1 t\nq Q0 e 2 0 t\n\n"])
def test_what_the_scanner_refuses_the_arrow_reader_decides(tmp_path, monkeypatch, text, chunk):
    path = tmp_path / "run.txt"
    path.write_bytes(text)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    try:
        native = fast._read_run_native(path, None, False, None)
    except StepAside:
        native = None
    arrow = _read(path, "arrow", monkeypatch)
    if native is not None and arrow is None:  # not grouped, or a layout Arrow's parse leaves to others
        robust = read_run(path, reader="robust")
        cols = ["query_id", "doc_id", "score", "rank", "line"]
        assert native[0].select(cols).sort("line").equals(robust.frame.select(cols))
        return
    if native is not None:  # a final line without its newline is given one, as the Arrow reader does
        assert arrow is not None and native[0].equals(arrow[0])
        return
    # and through the public entry point, the same as with the native scanner turned off
    with_native = fast.read_run_fast(path)
    if arrow is None:
        assert with_native is None
    else:
        assert with_native[0].equals(arrow[0]) and with_native[2] == arrow[2]


# ------------------------------------------------------------------------------------------- judgments


@st.composite
def qrels_files(draw):
    ids = st.sampled_from(["1", "2", "10", "q-4", "é5", "文"])
    rows = draw(
        st.lists(
            st.tuples(
                ids,
                st.sampled_from(["0", "Q0", "iter"]),
                st.integers(0, 40),
                st.sampled_from(["0", "1", "3", "-1", "002", "12"]),
            ),
            min_size=1,
            max_size=80,
            unique_by=lambda row: (row[0], row[2]),  # the robust reader refuses duplicates by default
        )
    )
    text = "\n".join(f"{q} {it} d{d} {g}" for q, it, d, g in rows)  # queries in any order
    return text + ("\n" if draw(st.booleans()) else "")


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=qrels_files(), chunk=st.sampled_from([30, 64, 500, 16 << 20]))
def test_judgments_read_as_the_arrow_and_robust_readers_read_them(tmp_path_factory, monkeypatch, text, chunk):
    path = tmp_path_factory.mktemp("native") / "qrels.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    native = fast._read_qrels_native(path)
    with monkeypatch.context() as m:
        m.setattr(_native, "lib", None)
        arrow = fast.read_qrels_fast(path)
    assert arrow is not None and native[0].equals(arrow[0]) and native[1] == arrow[1]
    robust = read_qrels(path, reader="robust").frame
    assert (
        native[0]
        .select("query_id", "doc_id", "grade", "line")
        .equals(robust.select("query_id", "doc_id", "grade", "line"))
    )


QRELS_WHITESPACE = [
    b"q 0 d\t1\n",
    b"q 0 d 1\r\n",
    b"q 0  d 1\n",
    b"q 0 d 1\n\n",
    b" q\t0 d 1 \n\n\t\nq\x0b0\x0ce -1\r\n",
]


@needs_native
@pytest.mark.parametrize("text", QRELS_WHITESPACE)
def test_judgments_in_whitespace_layouts_stream_with_the_robust_readers_rows(tmp_path, text):
    assert _native.scan_qrels(text) is not None
    path = tmp_path / "qrels.txt"
    path.write_bytes(text)
    cols = ["query_id", "doc_id", "grade", "line"]
    native = fast.read_qrels_fast(path)
    assert native is not None
    assert native[0].select(cols).equals(read_qrels(path, reader="robust").frame.select(cols))


QRELS_REFUSED = [
    b"q 0 d 1\rq 0 e 1\n",
    b"q 0 d\x7f 1\n",
    b"q 0 d\xc2\xa0 1\n",
    b"q 0 d 1 x\n",
    b"q 0 d\n",
    b"q 0 d 1.0\n",
    b"q 0 d +1\n",
    b"q 0 d\xff 1\n",
    b"q 0 d 1\n\xef\xbb\xbfq 0 e 1\n",
]


@needs_native
@pytest.mark.parametrize("text", QRELS_REFUSED)
def test_refused_judgments(tmp_path, monkeypatch, text):
    assert _native.scan_qrels(text) is None
    path = tmp_path / "qrels.txt"
    path.write_bytes(text)
    with_native = fast.read_qrels_fast(path)
    monkeypatch.setattr(_native, "lib", None)
    arrow = fast.read_qrels_fast(path)
    assert (with_native is None) == (arrow is None)
    if arrow is not None:
        assert with_native[0].equals(arrow[0])


@needs_native
@pytest.mark.parametrize("field", ["query", "doc"])
def test_ids_longer_than_the_limit_are_refused_by_every_scanner(tmp_path, monkeypatch, field):
    """512 bytes is an id; 513 makes the scanner, Arrow's reader and the compiled split step aside (the
    robust reader refuses the file, naming the line)."""
    from qrelkit.formats.trec import MAX_ID_BYTES

    for size, taken in ((MAX_ID_BYTES, True), (MAX_ID_BYTES + 1, False)):
        ident = "i" * size
        q, d = (ident, "d") if field == "query" else ("q", ident)
        run = f"{q} Q0 {d} 1 2.5 sys\n{q} Q0 e 2 1.5 sys\n".encode()
        qrels = f"{q} 0 {d} 1\n".encode()
        assert (_native.scan_run(run, None, False) is not None) == taken
        assert (_native.scan_qrels(qrels) is not None) == taken
        assert (_native.split(run, 6, 4, score=True, integer_field=3, same_field=5) is not None) == taken
        path = tmp_path / "run.txt"
        path.write_bytes(run)
        with monkeypatch.context() as m:
            m.setattr(_native, "lib", None)
            assert (fast.read_run_fast(path) is not None) == taken
