"""Runs too large for the small path, read to the measures' depth as numpy columns
(:func:`qrelkit.formats.trec.small.top_columns`) and ranked by the small engine, give the same floats, the
same provenance and the same errors as the streaming reader's frame and the columnar path.

The route is taken by runs above the small path's size; here every run counts as above it (the small
reader is told that only the judgments are small), and the blocks of the native scanner are cut small, so
that a query's lines fall in several blocks and lines of a query that comes back are merged across
blocks, as in a large file."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import _native
from qrelkit.errors import QrelkitError
from qrelkit.evaluation import files
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats.trec import blocks, streaming
from qrelkit.formats.trec import small as reader
from qrelkit.measures.grammar import parse

from .test_kernels_vs_reference import conventions

pytestmark = pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")

QUERIES = ["q1", "q2", "q10", "q3"]
DOCS = [f"d{i}" for i in range(9)] + ["doc-with-a-longer-id-0001"]
SCORES = ["0.5", "1", "1.0", "2", "2", "0.3", "0.30000001", "3", "1e-9", "-1", "17.25"]
#: measures with cutoffs (the route needs a depth), over the kernels' families
MEASURES = ["nDCG@3", "P@2", "R@5", "AP@4", "RR@3", "ERR@3", "Judged@2", "RBP@3"]


@st.composite
def texts(draw):
    qrels = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True)):
            qrels.append(f"{q} 0 {d} {draw(st.integers(-1, 3))}")
    lines = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        if draw(st.integers(0, 29)) == 0:
            docs.append(docs[0])  # a document twice in a query: an error, or the duplicate policy
        for rank, d in enumerate(docs, start=1):
            lines.append(f"{q} Q0 {d} {rank} {draw(st.sampled_from(SCORES))} sys")
    if draw(st.booleans()):  # lines in any order: queries come back across blocks
        random.Random(draw(st.integers(0, 2**32))).shuffle(lines)
    return "\n".join(qrels) + "\n", "\n".join(lines) + "\n"


def _outcome(qpath, rpaths, measures, conv, on_duplicate):
    try:
        return evaluate_files(qpath, rpaths, measures, conv, on_duplicate=on_duplicate)
    except QrelkitError as exc:
        return type(exc).__name__, str(exc)


def test_top_columns_equal_the_streaming_reader(tmp_path, monkeypatch):
    taken_runs: list[int] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        drawn=texts(),
        other=texts(),
        conv=conventions(),
        measures=st.lists(st.sampled_from(MEASURES), min_size=1, max_size=3, unique=True),
        block=st.sampled_from([40, 200, 1 << 20]),
        on_duplicate=st.sampled_from([None, "first"]),
        keep_drop=st.integers(0, 3),
    )
    def compare(drawn, other, conv, measures, block, on_duplicate, keep_drop):
        qpath, rpath, rpath2 = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "other.txt"
        qpath.write_text(drawn[0], encoding="utf-8")
        rpath.write_text(drawn[1], encoding="utf-8")
        rpath2.write_text(other[1].replace(" sys", " other"), encoding="utf-8")
        conv = conv.with_(extra_queries="skip")
        if conv.unjudged == "drop" and keep_drop:  # no depth then: the route is not for it
            conv = conv.with_(unjudged="zero")
        taken = []
        with monkeypatch.context() as m:
            eligible, top_columns = reader.eligible, reader.top_columns

            def tracked(*args, **kwargs):
                result = top_columns(*args, **kwargs)
                taken.append(args[0])
                return result

            m.setattr(reader, "eligible", lambda paths, fmt: paths == [qpath] and eligible(paths, fmt))
            m.setattr(reader, "top_columns", tracked)
            m.setattr(blocks, "NATIVE_BLOCK_BYTES", block)
            got = _outcome(qpath, [rpath, rpath2], measures, conv, on_duplicate)
            m.setattr(files, "_evaluate_small", lambda *args: None)  # the streaming reader's route
            want = _outcome(qpath, [rpath, rpath2], measures, conv, on_duplicate)
        if isinstance(want, tuple):
            assert got == want
            return
        assert not isinstance(got, tuple)
        assert [r.name for r in got.runs] == [r.name for r in want.runs]
        for a, b in zip(got.runs, want.runs, strict=True):
            assert a.queries.query_ids == b.queries.query_ids and a.undefined == b.undefined
            assert a.fingerprint == b.fingerprint
            assert a.values.keys() == b.values.keys()
            for name in a.values:
                assert np.array_equal(a.values[name].view(np.int64), b.values[name].view(np.int64)), name
        g, w = got.provenance(), want.provenance()
        assert g["runs"] == w["runs"] and g["qrels"] == w["qrels"] and g["conventions"] == w["conventions"]
        if got.provenance()["runs"][0]["reader"] == "fast" and len(taken) == 2:
            taken_runs.append(2)  # the route took both runs (else it stepped aside: a duplicate, ...)

    compare()
    assert len(taken_runs) >= 20, len(taken_runs)  # the comparison is not vacuous


def test_the_route_reads_a_large_run_by_depth(tmp_path, monkeypatch):
    """Hand example: query q1's scores 3, 2, 2, 1 at depth 2 keep the 3 and both 2s (four rows read, three
    kept). d2 is the one relevant document; under ties=average the tied pair {d2, d3} at ranks 2-3 holds half
    a relevant document at rank 2, so P@2 = 0.5 / 2 = 0.25."""
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("q1 0 d2 1\n", encoding="utf-8")
    rpath.write_text(
        "q1 Q0 d1 1 3 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d3 3 2 sys\nq1 Q0 d4 4 1 sys\n", encoding="utf-8"
    )
    eligible, top_columns, taken = reader.eligible, reader.top_columns, []
    monkeypatch.setattr(reader, "eligible", lambda paths, fmt: paths == [qpath] and eligible(paths, fmt))
    monkeypatch.setattr(reader, "top_columns", lambda *args: taken.append(args) or top_columns(*args))
    results = evaluate_files(qpath, [rpath], ["P@2"], parse("P@2").conventions(files.DEFAULT))
    run = results.runs[0]
    assert run.values[str(results.measures[0])].tolist() == [0.25]
    assert results.provenance()["runs"][0]["reader"] == "fast"
    assert [args[:3] for args in taken] == [(rpath, 2, False)]  # read by the route, to depth 2
    meta = run.meta
    assert (meta["kept_top"], meta["rows_read"], meta["kept_top_precision"]) == (2, 4, "double")


def _large(monkeypatch, qpath):
    """Every run counts as past the small path's size; the judgments stay small."""
    eligible = reader.eligible
    monkeypatch.setattr(reader, "eligible", lambda paths, fmt: paths == [qpath] and eligible(paths, fmt))


def test_progress_counts_each_run_once_whatever_its_path_is_written_as(tmp_path, monkeypatch):
    """Bytes reported for a run named ``./run.txt`` (as typed on the command line) reach its size, on the
    small path and on the route to the depth, and never pass it."""
    monkeypatch.chdir(tmp_path)
    Path("qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    text = "".join(f"q1 Q0 d{i} {i} {10 - i} sys\n" for i in range(1, 6))
    Path("run.txt").write_text(text, encoding="utf-8")
    for large in (False, True):
        with monkeypatch.context() as m:
            if large:
                _large(m, Path("qrels.txt"))
            got: list[int] = []
            evaluate_files("qrels.txt", ["./run.txt"], ["nDCG@2"], on_bytes=got.append)
            assert sum(got) == len(text.encode()), large


def test_a_run_the_native_pass_refuses_is_not_scanned_again(tmp_path, monkeypatch):
    """A document given twice makes the native pass step aside; the streaming reader then starts at
    Arrow's parse rather than running the same pass again, and the error is the robust reader's."""
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("q1 0 d1 1\n", encoding="utf-8")
    rpath.write_text("q1 Q0 d1 1 3 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d1 3 1 sys\n", encoding="utf-8")
    passes = []
    top_rows = blocks.top_rows
    for module in (blocks, streaming):  # the route's pass, and the streaming reader's
        monkeypatch.setattr(module, "top_rows", lambda *args: passes.append(args[0]) or top_rows(*args))
    _large(monkeypatch, qpath)
    with pytest.raises(QrelkitError, match="more than once"):
        evaluate_files(qpath, [rpath], ["nDCG@2"])
    assert passes == [rpath]
    passes.clear()
    results = evaluate_files(qpath, [rpath], ["nDCG@2"], on_duplicate="first")
    assert passes == [rpath] and results.runs[0].meta["duplicates_removed"] == 1


def test_under_a_memory_limit_runs_are_read_one_at_a_time(tmp_path, monkeypatch):
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("q1 0 d1 1\n", encoding="utf-8")
    runs = []
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.txt"
        path.write_text(f"q1 Q0 d1 1 3 {name}\nq1 Q0 d2 2 2 {name}\n", encoding="utf-8")
        runs.append(path)
    _large(monkeypatch, qpath)
    active, most = [0], [0]
    top_columns = reader.top_columns

    def counted(*args):
        active[0] += 1
        most[0] = max(most[0], active[0])
        try:
            return top_columns(*args)
        finally:
            active[0] -= 1

    monkeypatch.setattr(reader, "top_columns", counted)
    results = evaluate_files(qpath, runs, ["nDCG@2"], memory_limit="4GB")
    assert [r.meta["reader"] for r in results.runs] == ["fast"] * 3 and most[0] == 1


def test_a_small_gzip_run_is_read_to_the_depth_beside_a_plain_one(tmp_path, monkeypatch):
    """The small reader reads plain files whole; a gzip run beside one goes to the depth by the native
    scanner instead of sending every run to the streaming readers. The same numbers as those readers."""
    import gzip

    qpath, plain, packed = tmp_path / "qrels.txt", tmp_path / "a.txt", tmp_path / "b.txt.gz"
    qpath.write_text("q1 0 d1 1\nq1 0 d3 2\n", encoding="utf-8")
    plain.write_text("q1 Q0 d1 1 3 a\nq1 Q0 d2 2 2 a\nq1 Q0 d3 3 1 a\n", encoding="utf-8")
    packed.write_bytes(gzip.compress(b"q1 Q0 d3 1 3 b\nq1 Q0 d1 2 2 b\nq1 Q0 d2 3 1 b\n"))
    got = evaluate_files(qpath, [plain, packed], ["nDCG@2"])
    assert [r.meta["reader"] for r in got.runs] == ["small", "fast"]
    monkeypatch.setattr(files, "_evaluate_small", lambda *args: None)
    want = evaluate_files(qpath, [plain, packed], ["nDCG@2"])
    assert got.provenance()["runs"][1] == want.provenance()["runs"][1]
    for a, b in zip(got.runs, want.runs, strict=True):
        assert a.fingerprint == b.fingerprint
        assert all(np.array_equal(a.values[k].view(np.int64), b.values[k].view(np.int64)) for k in a.values)
