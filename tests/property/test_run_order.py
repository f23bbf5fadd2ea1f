"""The order a run's lines arrive in never changes a number, on any reading path.

The same run is written grouped by query, shuffled line by line, sorted by score and sorted by document,
and each file is evaluated by every path: the small path (``evaluate_files`` on a small file), the native
scanner and Arrow's parse streaming it in blocks of a few lines (so queries come back across blocks), the
robust reader, and DuckDB under a memory limit. Every path on every order gives the floats of the robust
reader on the grouped file, bit for bit; a damaged run (a document twice in a query, a score that is not a
number) gets, on each order, the robust reader's error for that file from every path.

Ties broken by file order (``ties="file_order"``, ranx's convention) depend on the order by definition, so
that convention is left out here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import _native, evaluate
from qrelkit.errors import StepAside, Ungrouped
from qrelkit.evaluation.core import evaluate_run, evaluate_run_batches
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import external, read_qrels, read_run
from qrelkit.formats.trec import blocks, small
from qrelkit.formats.trec import streaming as fast
from qrelkit.measures.grammar import parse_measures

from .test_kernels_vs_reference import conventions
from .test_reader_errors import _outcome, _same

QUERIES = ["q1", "q2", "q3", "1004", "q-ü"]
DOCS = [f"d{i}" for i in range(12)]
SCORES = ["0.5", "1", "1.0", "2", "0.3", "0.30000001", "3.0", "1e-9", "2e-9", "-1.25", "7.0e+01", "12.070"]
CUTOFF_MEASURES = ["nDCG@3", "R@5", "P@2", "Judged@2", "RR@4", "DCG@4"]
FULL_MEASURES = ["AP", "nDCG", "Rprec", "NumRet", "R", "nDCG@3"]
ORDERS = ["grouped", "shuffled", "by_score", "by_document"]


@st.composite
def cases(draw):
    qrels = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True)):
            qrels.append(f"{q} 0 {d} {draw(st.integers(-1, 3))}")
    lines = []  # (query, doc, score text), grouped by query
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True)):
            lines.append((q, d, draw(st.sampled_from(SCORES))))
    damage = draw(st.sampled_from([None, None, None, "duplicate", "score"]))
    if damage == "duplicate":
        q, d, _ = draw(st.sampled_from(lines))
        lines.append((q, d, draw(st.sampled_from(SCORES))))
        lines.sort(key=lambda line: QUERIES.index(line[0]))  # still grouped by query
    elif damage == "score":
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = (lines[at][0], lines[at][1], "high")
    shuffled = draw(st.permutations(lines))
    return "\n".join(qrels) + "\n", lines, shuffled


def _score_key(line):
    try:
        return -float(line[2])
    except ValueError:
        return 0.0


def _text(lines) -> bytes:
    return "".join(f"{q} Q0 {d} {rank} {s} sys\n" for rank, (q, d, s) in enumerate(lines, start=1)).encode()


def _orders(lines, shuffled) -> dict[str, bytes]:
    return {
        "grouped": _text(lines),
        "shuffled": _text(shuffled),
        "by_score": _text(sorted(lines, key=_score_key)),
        "by_document": _text(sorted(lines, key=lambda line: (line[1], line[0]))),
    }


def _paths(qpath, rpath, measures, conv, monkeypatch, on_duplicate="error") -> dict[str, tuple]:
    """Every reading path's outcome for one run file, documents given twice resolved by ``on_duplicate``."""
    from qrelkit.evaluation import plan

    def files(**options):
        return evaluate_files(qpath, [rpath], measures, conv, on_duplicate=on_duplicate, **options)

    def robust_run():
        return read_run(rpath, reader="robust", on_duplicate=on_duplicate)

    got = {"files": _outcome(files)}
    got["robust"] = _outcome(lambda: evaluate(read_qrels(qpath), [robust_run()], measures, conv))
    for name, native in (("native", _native.lib), ("arrow", None)):
        if name == "native" and native is None:
            continue
        with monkeypatch.context() as m:
            m.setattr(_native, "lib", native)
            m.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
            m.setattr(blocks, "NATIVE_BLOCK_BYTES", 48)  # blocks of a line or two: queries come back
            m.setattr(blocks, "CHUNK_BYTES", 48)
            got[name] = _outcome(files)
            # the API's readers: every row kept, in any order
            got[name + "-api"] = _outcome(
                lambda: evaluate(
                    read_qrels(qpath), [read_run(rpath, on_duplicate=on_duplicate)], measures, conv
                )
            )
            m.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # too big for memory: stream or DuckDB
            got[name + "-limited"] = _outcome(lambda: files(memory_limit="500MB"))

    parsed = parse_measures(measures)

    def duckdb():
        batches, _, _, _ = external.run_batches(rpath, memory_limit=2**28, on_duplicate=on_duplicate)
        return evaluate_run_batches(read_qrels(qpath), batches, parsed, conv)

    got["duckdb"] = _outcome(duckdb)
    got["robust-run"] = _outcome(lambda: evaluate_run(read_qrels(qpath), robust_run(), parsed, conv))
    return got


def _same_batches(duck, robust) -> None:
    """Two (queries, values) outcomes of evaluate_run or evaluate_run_batches."""
    assert duck[0] == robust[0], (duck, robust)
    if duck[0] == "error":
        assert duck[1] == robust[1]
        return
    (queries, values), (want_queries, want) = duck[1], robust[1]
    assert queries.query_ids == want_queries.query_ids
    for m, (value, _) in values.items():
        assert np.array_equal(value.view(np.int64), want[m][0].view(np.int64)), m


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    case=cases(),
    conv=conventions(),
    full=st.booleans(),
    on_duplicate=st.sampled_from(["error", "error", "first", "last", "max"]),
)
def test_every_order_gives_the_same_numbers_on_every_path(
    tmp_path, monkeypatch, case, conv, full, on_duplicate
):
    """Every path, on every order, gives the robust reader's floats or error; and every order gives the
    grouped file's floats, except where the duplicate policy picks a line by its place (first, last)."""
    qrels_text, lines, shuffled = case
    if conv.ties == "file_order":
        conv = conv.with_(ties="average")
    measures = FULL_MEASURES if full else CUTOFF_MEASURES
    qpath = tmp_path / "qrels.txt"
    qpath.write_text(qrels_text)
    reference = None
    for order, text in _orders(lines, shuffled).items():
        rpath = tmp_path / f"{order}.run"
        rpath.write_bytes(text)
        got = _paths(qpath, rpath, measures, conv, monkeypatch, on_duplicate)
        robust = got.pop("robust")
        duck = got.pop("duckdb")
        robust_run = got.pop("robust-run")
        for name, outcome in got.items():
            try:
                _same(outcome, robust)
            except AssertionError as err:
                raise AssertionError(f"{order}, {name}: {err}") from None
        if _native.lib is not None or not (duck[0] == "error" and "normalise the whitespace" in duck[1]):
            _same_batches(duck, robust_run)  # with the scanner, DuckDB's table is fed from its rows
        if robust[0] == "values" and on_duplicate in ("error", "max"):
            if reference is None:
                reference = robust
            else:
                _same(robust, reference)


#: Layouts the robust reader takes (fields split on runs of ASCII whitespace, blank lines skipped), each a
#: rewriting of one clean line (without its line end) and of the line end.
LAYOUTS = {
    "tabs": (lambda line: line.replace(b" ", b"\t"), b"\n"),
    "spaces": (lambda line: line.replace(b" ", b"   "), b"\n"),
    "edges": (lambda line: b"  " + line + b" \t", b"\n"),
    "crlf": (lambda line: line, b"\r\n"),
    "blank": (lambda line: line, b"\n \t\n"),
    "mixed": (lambda line: b"\t" + line.replace(b" ", b" \x0b\t", 2).replace(b" ", b"\x0c", 1), b" \r\n"),
    "trailing": (lambda line: line + b" 7th\t8th", b"\n"),  # fields after the sixth, ignored
}


def _laid_out(text: bytes, layout: str) -> bytes:
    rewrite, end = LAYOUTS[layout]
    return b"".join(rewrite(line) + end for line in text.splitlines())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(), conv=conventions(), full=st.booleans(), layout=st.sampled_from(sorted(LAYOUTS)))
def test_whitespace_layouts_give_the_same_numbers_in_every_order_on_every_path(
    tmp_path, monkeypatch, case, conv, full, layout
):
    """Tabs, runs of spaces, whitespace at a line's ends, CRLF and blank lines, grouped and in any order:
    every path gives the floats of the robust reader on the clean grouped file, bit for bit, and a
    damaged run the robust reader's error for that file. DuckDB's table is fed from the native scanner's
    rows; without the scanner, DuckDB's reader takes single spaces only, and under a memory limit it
    refuses such a file that does not stream, saying how to normalise it."""
    qrels_text, lines, shuffled = case
    if conv.ties == "file_order":
        conv = conv.with_(ties="average")
    measures = FULL_MEASURES if full else CUTOFF_MEASURES
    qpath = tmp_path / "qrels.txt"
    qpath.write_text(qrels_text)
    reference = None
    for order, clean in _orders(lines, shuffled).items():
        rpath = tmp_path / f"{order}.run"
        if reference is None:  # the clean grouped file first
            rpath.write_bytes(clean)
            reference = _outcome(
                lambda path=rpath: evaluate(
                    read_qrels(qpath), [read_run(path, reader="robust")], measures, conv
                )
            )
        rpath.write_bytes(_laid_out(clean, layout))
        got = _paths(qpath, rpath, measures, conv, monkeypatch)
        robust = got.pop("robust")
        duck = got.pop("duckdb")
        robust_run = got.pop("robust-run")
        assert robust_run[0] == robust[0]
        if _native.lib is not None:
            _same_batches(duck, robust_run)
        if robust[0] == "values" and reference[0] == "values":
            _same(robust, reference)
        for name, outcome in got.items():
            if (
                (_native.lib is None or name.startswith("arrow"))
                and name.endswith("-limited")
                and outcome[0] == "error"
                and "normalise the whitespace" in outcome[1]
            ):
                continue  # DuckDB under the limit: every document needed, or Arrow stepped aside
            try:
                _same(outcome, robust)
            except AssertionError as err:
                raise AssertionError(f"{layout}, {order}, {name}: {err}") from None
        if _native.lib is not None and robust[0] == "values":
            meta = got["files"][1].runs[0].meta
            assert meta["reader"] in ("small", "fast"), (order, meta)


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_command_line_reads_whitespace_layouts_as_the_clean_file(tmp_path, monkeypatch, layout):
    """``qrelkit eval`` on a run in a whitespace layout, grouped and shuffled: the numbers of the clean file,
    read by the native scanner (and, shuffled with measures that need every document, sorted on disk by
    DuckDB from the scanner's rows)."""
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main

    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 64)
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 d{d} {(d + len(q)) % 4}\n" for q in QUERIES for d in range(0, 12, 2)))
    lines = [
        (q, d, SCORES[(i * 7) % len(SCORES)])
        for i, (q, d) in enumerate((q, d) for q in QUERIES for d in DOCS)
    ]
    shuffled = [lines[(i * 37) % len(lines)] for i in range(len(lines))]
    for small_bytes in (small.SMALL_FILE_BYTES, 0):  # the small path, then streaming
        monkeypatch.setattr(small, "SMALL_FILE_BYTES", small_bytes)
        for measures in (FULL_MEASURES, CUTOFF_MEASURES):
            outputs = []
            for name, text in (
                ("clean", _text(lines)),
                ("grouped", _text(lines)),
                ("shuffled", _text(shuffled)),
            ):
                rpath = tmp_path / f"{name}.run"
                rpath.write_bytes(text if name == "clean" else _laid_out(text, layout))
                args = ["eval", str(qpath), str(rpath), "-f", "json", "-q"]
                result = CliRunner().invoke(main, args + [x for m in measures for x in ("-m", m)])
                assert result.exit_code == 0, result.output
                data = json.loads(result.stdout)
                # a shuffled run whose measures need every document is sorted on disk, in every layout
                on_disk = name == "shuffled" and measures == FULL_MEASURES and small_bytes == 0
                assert data["runs"][0]["reader"] in (("duckdb",) if on_disk else ("small", "fast")), data[
                    "runs"
                ][0]
                outputs.append(data["results"])
            assert outputs[1] == outputs[0] and outputs[2] == outputs[0], (layout, measures, small_bytes)


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
def test_an_ungrouped_run_streams_through_the_native_scanner(tmp_path, monkeypatch):
    """Cutoff measures on a shuffled run: the native scanner reads it (no fallback to another reader)."""
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("q1 0 d1 2\nq2 0 d2 1\n")
    lines = [(q, f"d{i}", str(i % 7)) for i in range(40) for q in ("q1", "q2", "q3")]
    rpath.write_bytes(_text(lines))
    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 200)
    results = evaluate_files(qpath, [rpath], ["nDCG@3", "R@5"])
    meta = results.runs[0].meta
    assert meta["reader"] == "fast" and meta["merged_across_blocks"] is True and meta["kept_top"] == 5
    robust = evaluate(read_qrels(qpath), [read_run(rpath, reader="robust")], ["nDCG@3", "R@5"])
    _same(("values", results), ("values", robust))


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["q1", "q2", "3"]), st.sampled_from(SCORES)), min_size=1, max_size=80
    ),
    order=st.randoms(use_true_random=False),
    keep=st.integers(1, 4),
    single=st.booleans(),
    block=st.sampled_from([30, 64, 200, 1 << 20]),
)
def test_top_rows_across_blocks_are_the_rows_a_whole_read_keeps(
    tmp_path, monkeypatch, rows, order, keep, single, block
):
    """Each query's top rows kept across many small blocks, selected again as they accumulate, are the
    rows of the whole file that fewer than ``keep`` others beat (in single precision when asked)."""
    from qrelkit.formats.trec import kept_top

    lines = [(q, f"d{i}", s) for i, (q, s) in enumerate(rows)]
    order.shuffle(lines)
    path = tmp_path / "run.txt"
    path.write_bytes(_text(lines))
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", block)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", block)
    frame, _, meta = fast._read_run_native(path, keep, single, None)
    want = kept_top(read_run(path, reader="robust"), keep, single).frame
    cols = ["query_id", "doc_id", "score", "rank", "line"]
    assert frame.select(cols).sort("line").equals(want.select(cols).sort("line"))
    assert meta["rows_read"] == len(lines)


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@pytest.mark.parametrize("keep", [None, 2])
def test_a_duplicate_before_a_query_comes_back_is_found(tmp_path, monkeypatch, keep):
    """Shards concatenated: every query is grouped within each shard, so the line hashes are kept only
    from the block where a query comes back; the lines before are hashed again then, and a document of
    the first shard (long dropped from the top rows) repeated in the second is still found."""
    first = [(q, f"d{i}", str(100 - i)) for q in ("q1", "q2") for i in range(30)]
    second = [("q1", "d29", "0.5"), ("q1", "new", "1")]  # d29 again: the lowest of q1's first shard
    path = tmp_path / "run.txt"
    path.write_bytes(_text(first + second))
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 200)
    with pytest.raises(StepAside):
        fast._read_run_native(path, keep, False, None)
    path.write_bytes(_text(first + second[1:]))
    _, _, meta = fast._read_run_native(path, keep, False, None)
    assert meta["merged_across_blocks"] is True and meta["rows_read"] == 61
    grouped = tmp_path / "grouped.txt"
    grouped.write_bytes(_text(first))
    _, _, meta = fast._read_run_native(grouped, keep, False, None)
    assert "merged_across_blocks" not in meta
    with pytest.raises(Ungrouped):
        fast._read_run_native(path, None, False, None, grouped_only=True)


def test_the_command_line_gives_the_same_numbers_in_every_order(tmp_path, monkeypatch):
    """``qrelkit eval`` on one run in four orders, full-depth and cutoff measures: the same bytes out but
    for the fingerprints and the reader's provenance."""
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main

    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 64)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 64)
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 d{d} {(d + len(q)) % 4}\n" for q in QUERIES for d in range(0, 12, 2)))
    lines = [
        (q, d, SCORES[(i * 7) % len(SCORES)])
        for i, (q, d) in enumerate((q, d) for q in QUERIES for d in DOCS)
    ]
    shuffled = [lines[(i * 37) % len(lines)] for i in range(len(lines))]
    outputs = {}
    for order, text in _orders(lines, shuffled).items():
        rpath = tmp_path / f"{order}.run"
        rpath.write_bytes(text)
        for measures in (FULL_MEASURES, CUTOFF_MEASURES):
            args = ["eval", str(qpath), str(rpath), "-f", "json", "-q"]
            args += [x for m in measures for x in ("-m", m)]
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 0, result.output
            data = json.loads(result.stdout)
            outputs.setdefault(tuple(measures), []).append(data["results"])
    for values in outputs.values():
        assert all(v == values[0] for v in values[1:])
