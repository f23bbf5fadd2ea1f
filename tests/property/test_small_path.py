"""The small-input path gives the columnar path's floats bit for bit, or steps aside.

Files are written as TREC text with ids of many widths (one to three 64-bit words, non-ASCII too), scores
written plainly, as integers, with exponents and with more digits than a double holds, heavy ties, negative
grades, unjudged documents and queries missing on either side; both paths read the same bytes.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import _native
from qrelkit.engine.encoding import small
from qrelkit.engine.encoding.encode import encode
from qrelkit.errors import StepAside
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import _evaluate_small, evaluate_files
from qrelkit.evaluation.plan import Inputs, ReaderOptions, plan_reading
from qrelkit.formats import read_qrels, read_run
from qrelkit.formats.trec import small as reader
from qrelkit.measures.conventions import DEFAULT
from qrelkit.measures.grammar import parse_measures

from .test_kernels_vs_reference import conventions

QUERIES = ["q1", "q2", "1003", "topic-ü", "q" * 9, "q" * 17]
DOCS = ["d0", "d1", "D0-3271", "D0-32710", "doc-ü-12", "x" * 8, "x" * 9, "clueweb12-0000tw-00-00000", "z"]
SCORES = ["0.5", "1", "1.0", "2", "2.00", "0.3", "0.30000001", "3.0", "1e-9", "2E-9", "-1.25", "12.070",
          "0.1000000000000000055511151231257827", "7.0e+01", "123456789012345678", "00.5", "-00.25",
          "5e-324", "0.000000000000000000001", "1E+05"]  # fmt: skip
MEASURES = ["nDCG@3", "nDCG", "R@5", "AP", "RR", "Rprec", "Judged@2", "NumRet", "P@2", "DCG@4",
            "infAP(ties=docid_desc)"]  # fmt: skip


@st.composite
def files(draw):
    qrels = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True)):
            grade = draw(st.integers(-1, 3))
            qrels.append(f"{q} 0 {d} {'00' + str(grade) if grade > 0 and draw(st.booleans()) else grade}")
    run = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=7, unique=True))
        for rank, d in enumerate(docs, start=1):
            run.append(f"{q} Q0 {d} {rank} {draw(st.sampled_from(SCORES))} sys")
    newline = draw(st.booleans())  # a last line without its newline is still clean
    return "\n".join(qrels) + "\n", "\n".join(run) + ("\n" if newline else "")


def evaluate_small_files(qrels, runs, measures, conventions=None, *, input_format="auto", scale=None):
    """The small path alone (step 1 of the reader order): Results, or None when it steps aside."""
    parsed, conv = parse_measures(measures), conventions or DEFAULT
    reader = ReaderOptions.given(input_format, scale=scale)
    plan = plan_reading(Inputs.build(qrels, list(runs), parsed, conv, reader))
    return _evaluate_small(plan, None, {})


def _write(tmp_path, qrels_text: str, run_text: str):
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text(qrels_text, encoding="utf-8")
    r.write_text(run_text, encoding="utf-8")
    return q, r


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=files(), conv=conventions())
def test_small_encoding_equals_columnar(tmp_path, texts, conv):
    qpath, rpath = _write(tmp_path, *texts)
    qcols, rcols = reader.read_columns(qpath, "qrels"), reader.read_columns(rpath, "run")
    got = small.encode_small(qcols, small.Judgments.build(qcols), rcols, conv)
    want = encode(read_qrels(qpath, reader="robust"), read_run(rpath, reader="robust"), conv)
    assert got.queries.query_ids == want.queries.query_ids
    assert got.queries.counts() == want.queries.counts()
    assert got.queries.missing_skipped == want.queries.missing_skipped
    assert got.queries.extra_skipped == want.queries.extra_skipped
    for name in (
        "offsets",
        "grade",
        "judged",
        "score",
        "judged_offsets",
        "judged_grade",
        "block_starts",
        "pooled",
    ):
        a, b = getattr(got, name), getattr(want, name)
        if a is None or b is None:
            assert a is None and b is None, name
        else:
            assert a.dtype == b.dtype or name == "offsets", name
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert np.array_equal(got.score.view(np.int64), want.score.view(np.int64))  # bits, not just values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=files(), other=files(), conv=conventions())
def test_small_results_equal_columnar(tmp_path, texts, other, conv):
    qpath, rpath = _write(tmp_path, *texts)
    rpath2 = tmp_path / "other.run"
    rpath2.write_text(other[1].replace(" sys", " other"), encoding="utf-8")
    got = evaluate_small_files(qpath, [rpath, rpath2], MEASURES, conv)
    want = evaluate_files(qpath, [rpath, rpath2], MEASURES, conv)
    assert got is not None
    assert [r.name for r in got.runs] == [r.name for r in want.runs]
    for a, b in zip(got.runs, want.runs, strict=True):
        assert a.queries.query_ids == b.queries.query_ids and a.undefined == b.undefined
        assert a.fingerprint == b.fingerprint
        for m in MEASURES:
            name = str(want.measures[MEASURES.index(m)])
            assert np.array_equal(a.values[name].view(np.int64), b.values[name].view(np.int64)), name
    assert got.provenance()["qrels"] == want.provenance()["qrels"]
    assert [r["reader"] for r in got.provenance()["runs"]] == ["small", "small"]


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=files())
def test_the_compiled_split_gives_numpys_columns(tmp_path, monkeypatch, texts):
    """Fields split and numbers read by the native scanner, or by numpy alone: the same columns, bit for
    bit (so the tests above, which run with the scanner, hold for both)."""
    qpath, rpath = _write(tmp_path, *texts)
    for path, kind in ((qpath, "qrels"), (rpath, "run")):
        got = reader.read_columns(path, kind)
        with monkeypatch.context() as m:
            m.setattr(_native, "lib", None)
            want = reader.read_columns(path, kind)
        for name in ("query", "query_change", "doc_words", "doc_hash"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        assert got.number.dtype == want.number.dtype
        assert np.array_equal(got.number.view(np.int64), want.number.view(np.int64))
        assert (got.tag, got.fingerprint, got.source) == (want.tag, want.fingerprint, want.source)


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@pytest.mark.parametrize("score", ["1" * 90, "+1"])
def test_scores_the_compiled_split_refuses_go_to_numpy(tmp_path, score):
    _qpath, rpath = _write(tmp_path, GOOD_QRELS, f"q1 Q0 d1 1 {score} sys\nq1 Q0 d2 2 1.5 sys\n")
    assert _native.split(rpath.read_bytes(), 6, 4, score=True, integer_field=3, same_field=5) is None
    try:
        columns = reader.read_columns(rpath, "run")
    except StepAside:
        return  # numpy refuses it too
    assert float(columns.number[0]) == float(score)


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
@pytest.mark.parametrize("score", [".5", "1.", "-0.0", "-.25e1"])
def test_the_compiled_split_reads_scores_as_float_does(tmp_path, score):
    """`.5` and `1.` (and -0.0, which the small path then steps aside for: see below) are read to the bit
    as Python's float reads them, as the robust reader does."""
    _qpath, rpath = _write(tmp_path, GOOD_QRELS, f"q1 Q0 d1 1 {score} sys\nq1 Q0 d2 2 1.5 sys\n")
    columns = reader.read_columns(rpath, "run")
    assert np.array_equal(columns.number[:1].view(np.int64), np.array([float(score)]).view(np.int64))


GOOD_RUN = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n"
GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\n"


WHITESPACE_LAYOUTS = [
    (GOOD_QRELS, GOOD_RUN.replace(" ", "\t", 1)),  # a tab
    (GOOD_QRELS, GOOD_RUN.replace("\n", "\r\n")),  # CRLF
    (GOOD_QRELS, GOOD_RUN.replace("Q0 d1", "Q0  d1")),  # two spaces
    (GOOD_QRELS, " " + GOOD_RUN),  # a leading space
    (GOOD_QRELS, GOOD_RUN + "\n"),  # a blank line
    (GOOD_QRELS, GOOD_RUN + "  "),  # trailing whitespace after the last line
    (GOOD_QRELS.replace(" ", " \t ").replace("\n", " \r\n\n"), GOOD_RUN.replace(" ", "\x0b ")),
    (GOOD_QRELS, GOOD_RUN.replace("sys\n", "sys x y\n", 1)),  # fields after the sixth, ignored
]


@pytest.mark.parametrize("qrels_text, run_text", WHITESPACE_LAYOUTS)
def test_whitespace_layouts_take_the_small_path_with_the_scanner(tmp_path, monkeypatch, qrels_text, run_text):
    """Fields split on runs of ASCII whitespace: the native scanner splits them as the robust reader does
    (the same floats, bit for bit); numpy's tokenizer, without the scanner, steps aside."""
    qpath, rpath = _write(tmp_path, qrels_text, run_text)
    got = evaluate_small_files(qpath, [rpath], MEASURES)
    if _native.lib is not None:
        want = evaluate(read_qrels(qpath, reader="robust"), [read_run(rpath, reader="robust")], MEASURES)
        assert got is not None and got.runs[0].queries.query_ids == want.runs[0].queries.query_ids
        for name, values in want.runs[0].values.items():
            assert np.array_equal(got.runs[0].values[name].view(np.int64), values.view(np.int64)), name
        key = "lines_with_trailing_fields_ignored"
        assert got.runs[0].meta.get(key) == want.runs[0].meta.get(key)
    monkeypatch.setattr(_native, "lib", None)
    assert evaluate_small_files(qpath, [rpath], MEASURES) is None


@pytest.mark.parametrize(
    "qrels_text, run_text",
    [
        (GOOD_QRELS, GOOD_RUN + "q1 Q0 d1 3 0.5 sys\n"),  # a duplicate document
        (GOOD_QRELS, GOOD_RUN + "q1 Q0 d3 3 0.5 other\n"),  # two tags
        (GOOD_QRELS, GOOD_RUN.replace("2.5", "+2.5")),  # a sign the columnar path judges
        (GOOD_QRELS, GOOD_RUN.replace("2.5", "inf")),
        (GOOD_QRELS, GOOD_RUN.replace("2.5", "1_0")),
        (GOOD_QRELS, GOOD_RUN.replace("2.5", "-0.0")),  # negative zero
        (GOOD_QRELS, GOOD_RUN.replace(" 1 2.5", " one 2.5")),  # a rank that is not an integer
        (GOOD_QRELS, GOOD_RUN + "q1 Q0 d3 3 0.5\n"),  # five fields
        (GOOD_QRELS.replace("d1 1", "d1 1.5"), GOOD_RUN),  # a fractional grade
        (GOOD_QRELS + "q1 0 d1 2\n", GOOD_RUN),  # a duplicate judgment
        (GOOD_QRELS, ""),  # an empty run
    ],
)
def test_small_path_steps_aside(tmp_path, qrels_text, run_text):
    qpath, rpath = _write(tmp_path, qrels_text, run_text)
    assert evaluate_small_files(qpath, [rpath], ["nDCG@10"]) is None


def test_small_path_steps_aside_for_gzip_other_formats_and_bad_bytes(tmp_path):
    qpath, rpath = _write(tmp_path, GOOD_QRELS, GOOD_RUN)
    assert evaluate_small_files(qpath, [rpath], ["nDCG@10"]) is not None
    gz = tmp_path / "run.gz"
    gz.write_bytes(gzip.compress(GOOD_RUN.encode()))
    # gzip is not read whole here: with cutoffs it is read to their depth by the native scanner (the
    # streaming reader's rows and provenance), without them it goes to the streaming readers
    read = evaluate_small_files(qpath, [gz], ["nDCG@10"])
    assert read is None or read.provenance()["runs"][0]["reader"] == "fast"
    assert (read is None) == (_native.lib is None)
    assert evaluate_small_files(qpath, [gz], ["AP"]) is None
    tsv = tmp_path / "run.tsv"
    tsv.write_text(GOOD_RUN)
    assert evaluate_small_files(qpath, [tsv], ["nDCG@10"]) is None
    assert evaluate_small_files(qpath, [rpath], ["nDCG@10"], input_format="csv") is None
    latin = tmp_path / "latin.run"
    latin.write_bytes(GOOD_RUN.replace("d1", "d\xe9").encode("latin-1"))
    assert evaluate_small_files(qpath, [latin], ["nDCG@10"]) is None
    assert evaluate_small_files(qpath, [tmp_path / "absent.run"], ["nDCG@10"]) is None
    # a grade outside the rubric's scale, and a rejected negative grade: the columnar path reports them
    assert evaluate_small_files(qpath, [rpath], ["nDCG@10"], scale=(0,)) is None
    neg = tmp_path / "neg.txt"
    neg.write_text("q1 0 d1 -1\n")
    from qrelkit import Conventions

    assert evaluate_small_files(neg, [rpath], ["nDCG@10"], Conventions(negative="reject")) is None
