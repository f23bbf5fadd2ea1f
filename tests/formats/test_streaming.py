"""The fast, streaming reader changes no number: same frames as the robust reader, same results when it
keeps only each query's top documents, for clean, gzipped, ungrouped and irregular files."""

from __future__ import annotations

import gzip
import hashlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import Conventions, evaluate, read_qrels, read_run
from qrelkit.errors import QrelkitError, ValidationError
from qrelkit.formats.trec import blocks
from qrelkit.formats.trec import streaming as fast

CUTOFF_MEASURES = [
    "nDCG@5",
    "nDCG(gain=linear,ties=docid_desc)@3",
    "R@5",
    "P@2",
    "AP@5",
    "RR@4",
    "Judged@5",
    "NumRet@5",
    "NumRelRet@3",
    "DCG@1",
    "nDCG(precision=single,ties=file_order)@4",
]


@st.composite
def run_text(draw):
    """Runs as retrieval systems write them (scores non-increasing per query) or in any order."""
    lines = []
    ranked = draw(st.booleans())
    queries = draw(
        st.lists(st.sampled_from(["1", "2", "3", "q-4", "5"]), min_size=1, max_size=5, unique=True)
    )
    for q in queries:
        docs = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True))
        scores = [
            draw(st.sampled_from(["1", "2", "2", "3.5", "0.30000001", "0.3", "1e-3", "-2"])) for _ in docs
        ]
        pairs = list(zip(docs, scores, strict=True))
        if ranked:
            pairs.sort(key=lambda pair: -float(pair[1]))
        for rank, (d, score) in enumerate(pairs, start=1):
            lines.append(f"{q} Q0 doc{d} {rank} {score} sys")
    return "\n".join(lines) + "\n"


QRELS = "\n".join(
    f"{q} 0 doc{d} {(d * 7 + len(q)) % 4}" for q in ["1", "2", "3", "q-4", "9"] for d in range(0, 31, 2)
)


def _frames_equal(a, b):
    cols = ["query_id", "doc_id", "score", "rank", "line"]
    return a.frame.select(cols).sort("line").equals(b.frame.select(cols).sort("line"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=run_text(), k=st.integers(1, 6))
def test_fast_and_robust_readers_agree_and_top_k_changes_nothing(tmp_path_factory, text, k):
    d = tmp_path_factory.mktemp("fast")
    (d / "run.txt").write_text(text)
    (d / "qrels.txt").write_text(QRELS + "\n")
    fast_run = read_run(d / "run.txt")
    robust_run = read_run(d / "run.txt", reader="robust")
    assert fast_run.meta["reader"] == "fast"
    assert _frames_equal(fast_run, robust_run)
    assert fast_run.fingerprint == robust_run.fingerprint and fast_run.name == robust_run.name == "sys"
    qrels = read_qrels(d / "qrels.txt")
    assert qrels.frame.equals(read_qrels(d / "qrels.txt", reader="robust").frame)
    measures = [m for m in CUTOFF_MEASURES if int(m.rsplit("@", 1)[1]) <= k]
    if not measures:
        return
    for single in (False, True):
        reduced = read_run(d / "run.txt", keep_top=k, rank_single=single)
        assert reduced.meta["kept_top"] == k
        usable = [m for m in measures if single or "precision=single" not in m]
        full = evaluate(qrels, fast_run, usable).per_query
        top = evaluate(qrels, reduced, usable).per_query
        assert full.equals(top)  # bit-identical floats
        if not single and len(usable) < len(measures):
            with pytest.raises(ValidationError, match="double-precision scores"):
                evaluate(qrels, reduced, measures)


def test_gzip_is_read_by_the_fast_path_and_fingerprinted_as_stored(tmp_path):
    text = "1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 c 1 0.5 sys\n"
    (tmp_path / "run.txt").write_text(text)
    (tmp_path / "run.txt.gz").write_bytes(gzip.compress(text.encode()))
    plain, gz = read_run(tmp_path / "run.txt"), read_run(tmp_path / "run.txt.gz")
    assert gz.meta["reader"] == "fast"
    assert _frames_equal(plain, gz)
    import hashlib

    assert gz.fingerprint.sha256 == hashlib.sha256((tmp_path / "run.txt.gz").read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "text",
    [
        "1\tQ0\ta\t1\t2.0\tsys\n",  # tabs
        "1 Q0 a 1  2.0 sys\n",  # two spaces
        "1 Q0 a 1 2.0 sys\n\n1 Q0 b 2 1.0 sys\n",  # blank line
        "1 Q0 a 1 2.0 sys extra\n",  # trailing field
    ],
)
def test_whitespace_layouts_stream_and_others_take_the_robust_path(tmp_path, monkeypatch, text):
    """Fields split on runs of whitespace, and fields after the sixth (ignored and counted), stream
    through the native scanner; Arrow's parse, splitting on single spaces, leaves them to the robust
    reader."""
    from qrelkit import _native

    (tmp_path / "run.txt").write_text(text)
    robust = read_run(tmp_path / "run.txt", reader="robust")
    assert robust.frame.height == text.count("Q0")
    run = read_run(tmp_path / "run.txt")
    streams = _native.lib is not None
    assert (run.meta.get("reader") == "fast") == streams
    assert _frames_equal(run, robust)
    key = "lines_with_trailing_fields_ignored"
    assert run.meta.get(key) == robust.meta.get(key) == (1 if "extra" in text else None)
    monkeypatch.setattr(_native, "lib", None)
    assert fast.read_run_fast(tmp_path / "run.txt") is None
    assert read_run(tmp_path / "run.txt").meta.get("reader") != "fast"


def test_a_run_not_grouped_by_query_streams(tmp_path, monkeypatch):
    """Such a run streams through the native scanner, and without it through Arrow's parse (never the
    robust reader); a caller that keeps every row and asks for grouped runs only gets ``Ungrouped``."""
    from qrelkit import _native
    from qrelkit.errors import Ungrouped

    text = "1 Q0 a 1 2.0 sys\n2 Q0 b 1 1.0 sys\n1 Q0 c 2 0.5 sys\n"
    (tmp_path / "run.txt").write_text(text)
    robust = read_run(tmp_path / "run.txt", reader="robust")
    for native in (_native.lib, None):
        monkeypatch.setattr(_native, "lib", native)
        run = read_run(tmp_path / "run.txt")
        assert run.meta["reader"] == "fast" and run.meta["merged_across_blocks"] is True
        assert _frames_equal(run, robust)
        with pytest.raises(Ungrouped):
            fast.read_run_fast(tmp_path / "run.txt", grouped_only=True)


def test_chunk_boundaries_inside_a_query(tmp_path, monkeypatch):
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 64)  # many chunks, queries split across them
    lines = [f"{q} Q0 d{i} {i} {100 - i} sys" for q in range(1, 6) for i in range(1, 25)]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    a = read_run(tmp_path / "run.txt")
    assert a.meta["reader"] == "fast" and a.frame.height == len(lines)
    assert _frames_equal(a, read_run(tmp_path / "run.txt", reader="robust"))
    top = read_run(tmp_path / "run.txt", keep_top=3)
    assert top.frame.height == 5 * 3


def test_evaluate_refuses_measures_deeper_than_what_was_kept(tmp_path):
    (tmp_path / "run.txt").write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    run = read_run(tmp_path / "run.txt", keep_top=1)
    qrels = read_qrels(tmp_path / "qrels.txt")
    assert evaluate(qrels, run, ["nDCG@1"]).mean("nDCG@1") == 1.0
    for deeper in ("nDCG@2", "AP", "Rprec", "nDCG(unjudged=drop)@1"):
        with pytest.raises(ValidationError, match="top 1 documents"):
            evaluate(qrels, run, [deeper], Conventions())
    assert not math.isnan(evaluate(qrels, read_run(tmp_path / "run.txt"), ["AP"]).mean("AP"))


def test_ids_that_look_like_missing_values_stay_ids(tmp_path):
    (tmp_path / "run.txt").write_text("NA Q0 null 1 2.0 sys\nNA Q0 NaN 2 1.0 sys\nNA Q0 N/A 3 0.5 sys\n")
    run = read_run(tmp_path / "run.txt")
    assert run.meta["reader"] == "fast"
    assert run.frame.get_column("doc_id").to_list() == ["null", "NaN", "N/A"]
    assert run.frame.get_column("query_id").to_list() == ["NA"] * 3


@pytest.mark.parametrize("sep", ["\t", "\x0b", "\x0c"])
def test_whitespace_inside_a_field_is_not_part_of_an_id(tmp_path, sep):
    """Arrow splits on spaces only; the robust reader splits on all ASCII whitespace. A tab inside what
    Arrow would read as one field must reach the robust reader, which reports the line."""
    (tmp_path / "run.txt").write_text(f"q1 Q0 d1{sep}x 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n")
    (tmp_path / "qrels.txt").write_text(f"q1 0 d1{sep}x 1\n")
    assert fast.read_run_fast(tmp_path / "run.txt") is None
    assert fast.read_qrels_fast(tmp_path / "qrels.txt") is None
    with pytest.raises(QrelkitError, match=r"run.txt:1: rank 'x' is not an integer"):
        read_run(tmp_path / "run.txt")


@pytest.mark.parametrize(
    "text, robust_error",
    [
        ("q1 Q0 d1 1 2.5 \nq1 Q0 d2 2 1.5 \n", "line has 5 fields"),  # a trailing space, no tag
        ("q1 Q0  1 2.5 sys\n", "line has 5 fields"),  # two spaces where a field should be
        ("q1 Q0 d1 1 2.5 sys\n q1 Q0 d2 2 1.5 sys\n", None),  # a leading space: fine for the robust reader
        ("q1 Q0 d1 1 2.5 a\nq1 Q0 d2 2 1.5 b\n", "mixes run tags 'a' and 'b'"),
    ],
)
def test_empty_fields_and_two_tags_go_to_the_robust_reader(tmp_path, text, robust_error):
    """An error goes to the robust reader; a leading space streams through the native scanner only."""
    from qrelkit import _native

    (tmp_path / "run.txt").write_text(text, newline="")
    streamed = fast.read_run_fast(tmp_path / "run.txt")
    assert streamed is None or (robust_error is None and _native.lib is not None)
    if robust_error:
        with pytest.raises(QrelkitError, match=robust_error):
            read_run(tmp_path / "run.txt")
    else:
        run = read_run(tmp_path / "run.txt")
        assert run.name == "sys" and run.frame.get_column("doc_id").to_list() == ["d1", "d2"]


def test_an_empty_field_in_qrels_goes_to_the_robust_reader(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0  1\n")
    assert fast.read_qrels_fast(tmp_path / "qrels.txt") is None
    with pytest.raises(QrelkitError, match="line has 3 fields"):
        read_qrels(tmp_path / "qrels.txt")


def test_a_digest_computed_ahead_is_used_only_for_an_unchanged_file(tmp_path, monkeypatch):
    from qrelkit.fingerprint import hash_ahead

    monkeypatch.setattr(blocks, "CHUNK_BYTES", 16)  # the streaming path, not the one-chunk one
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 2.5 s\nq1 Q0 d2 2 1.5 s\n")
    hash_ahead([path])
    frame, fingerprint, _ = fast.read_run_fast(path)
    assert fingerprint.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert frame.height == 2
    hash_ahead([path])
    with path.open("a") as fh:  # changed after hashing began: the digest ahead is not used
        fh.write("q1 Q0 d3 3 0.5 s\n")
    frame, fingerprint, _ = fast.read_run_fast(path)
    assert fingerprint.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and frame.height == 3


@pytest.mark.parametrize("parser", ["native", "arrow"])
@pytest.mark.parametrize("chunk", [16, 1 << 20])
def test_a_byte_order_mark_is_dropped_only_at_the_start_of_the_file(tmp_path, monkeypatch, parser, chunk):
    """The robust reader drops a UTF-8 byte-order mark before the first line only; one at the start of a
    later line is part of that query id. Every path must agree, whatever its blocks."""
    from qrelkit import _native

    if parser == "arrow":
        monkeypatch.setattr(_native, "lib", None)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", chunk)
    bom = "\ufeff"
    (tmp_path / "start.run").write_text(f"{bom}1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 c 1 0.5 sys\n")
    (tmp_path / "inside.run").write_text(f"1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n{bom}2 Q0 c 1 0.5 sys\n")
    (tmp_path / "qrels.txt").write_text(f"{bom}1 0 a 1\n1 0 b 0\n2 0 c 2\n")
    for name in ("start.run", "inside.run", "qrels.txt"):
        read = read_qrels if name.endswith("txt") else read_run
        got, want = read(tmp_path / name), read(tmp_path / name, reader="robust")
        assert got.frame.get_column("query_id").to_list() == want.frame.get_column("query_id").to_list()
    assert read_run(tmp_path / "start.run").frame.get_column("query_id").to_list() == ["1", "1", "2"]
    assert read_run(tmp_path / "inside.run").frame.get_column("query_id").to_list()[-1] == bom + "2"


def test_a_byte_order_mark_gives_the_same_numbers_on_the_small_path(tmp_path):
    """End to end through the command line, where small files take the numpy path."""
    from click.testing import CliRunner

    from qrelkit.cli import main

    (tmp_path / "run.txt").write_text("\ufeffq1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\n")
    (tmp_path / "qrels.txt").write_text("\ufeffq1 0 d1 1\nq1 0 d2 0\n")
    out = tmp_path / "out.tsv"
    args = ["eval", tmp_path / "qrels.txt", tmp_path / "run.txt", "-m", "nDCG@10", "-f", "tsv", "-o", out]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert ["sys", "q1", "nDCG@10", "1.0"] in rows  # d1 (grade 1) ranked first: ideal


@pytest.mark.parametrize(("separator", "reader"), [(" ", "small"), ("\t", "robust")])
def test_the_command_line_and_the_api_record_the_same_reading(tmp_path, separator, reader):
    """``qrelkit eval`` calls ``evaluate_files``, which alone chooses the reader: same provenance."""
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main
    from qrelkit.evaluation.files import evaluate_files

    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\n".replace(" ", separator))
    api = evaluate_files(tmp_path / "qrels.txt", [tmp_path / "run.txt"], ["AP"]).to_dict()
    cli = CliRunner().invoke(
        main, ["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "-m", "AP", "-f", "json"]
    )
    assert cli.exit_code == 0, cli.output
    got = json.loads(cli.stdout)
    from qrelkit import _native

    if separator != " " and _native.lib is not None:
        reader = "small"  # the native scanner splits on runs of whitespace, as the robust reader does
    assert got["runs"][0]["reader"] == api["runs"][0]["reader"] == reader
    assert got["runs"] == api["runs"] and got["qrels"] == api["qrels"]
