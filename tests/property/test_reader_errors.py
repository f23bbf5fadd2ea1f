"""Every reading path agrees on damaged runs and judgments: the same error text, or the same floats.

A clean run (or judgments file) is damaged in one place (a byte replaced, inserted or removed, a field doubled, a line
repeated) and evaluated by every path: the small path first (``evaluate_files``), the streaming readers
(``read_run``), the robust reader, and DuckDB under a memory limit. Each either raises exactly the robust
reader's error, or gives bit-identical values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import evaluate
from qrelkit.errors import QrelkitError
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_qrels, read_run

QRELS = b"q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 3\nq2 0 d5 1\n"
RUN = (
    b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq1 Q0 d9 3 1.25 sys\n"
    b"q2 Q0 d5 1 0.75 sys\nq2 Q0 d4 2 0.5 sys\nq2 Q0 d6 3 -1 sys\n"
)
BYTES = [b"\x00", b"\xff", b"\xc3", b"\t", b" ", b"\n", b"\r", b"x", b"0", b".", b"-", b"e", b"\xef\xbb\xbf"]
MEASURES = ["AP", "nDCG@3"]


@st.composite
def damaged(draw, text: bytes = RUN):
    data = bytearray(text)
    kind = draw(st.sampled_from(["replace", "insert", "delete", "long", "repeat"]))
    at = draw(st.integers(0, len(data) - 1))
    if kind == "replace":
        data[at : at + 1] = draw(st.sampled_from(BYTES))
    elif kind == "insert":
        data[at:at] = draw(st.sampled_from(BYTES))
    elif kind == "delete":
        del data[at]
    elif kind == "long":  # a field grown past the id limit (or just below it)
        start = data.rfind(b" ", 0, at) + 1
        data[start:start] = b"z" * draw(st.sampled_from([500, 511, 512, 513, 2000]))
    else:
        lines = bytes(data).splitlines(keepends=True)
        line = draw(st.sampled_from(lines))
        data += line
    return bytes(data)


def _outcome(call):
    try:
        results = call()
    except QrelkitError as err:
        return "error", str(err)
    return "values", results


def _same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]
        return
    ra, rb = a[1], b[1]
    for x, y in zip(ra.runs, rb.runs, strict=True):
        assert x.queries.query_ids == y.queries.query_ids
        for m in x.values:
            assert np.array_equal(x.values[m].view(np.int64), y.values[m].view(np.int64)), m


@pytest.fixture
def force_external(monkeypatch):
    from qrelkit.evaluation import plan

    monkeypatch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=damaged())
def test_every_path_agrees_on_a_damaged_run(tmp_path, monkeypatch, run):
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_bytes(QRELS)
    rpath.write_bytes(run)
    robust = _outcome(lambda: evaluate(read_qrels(qpath), [read_run(rpath, reader="robust")], MEASURES))
    _same(_outcome(lambda: evaluate_files(qpath, [rpath], MEASURES)), robust)
    _same(_outcome(lambda: evaluate(read_qrels(qpath), [read_run(rpath)], MEASURES)), robust)
    from qrelkit.evaluation import plan

    with monkeypatch.context() as m:
        m.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every run is too big: DuckDB reads it
        duck = _outcome(lambda: evaluate_files(qpath, [rpath], MEASURES, memory_limit="500MB"))
    if duck[0] == "error" and "normalise the whitespace" in duck[1]:
        assert robust[0] == "values"  # a layout only the robust reader takes (tabs, blank lines, ...)
        return
    _same(duck, robust)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(qrels=damaged(QRELS))
def test_every_path_agrees_on_damaged_judgments(tmp_path, qrels):
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_bytes(qrels)
    rpath.write_bytes(RUN)
    robust = _outcome(lambda: evaluate(read_qrels(qpath, reader="robust"), [read_run(rpath)], MEASURES))
    _same(_outcome(lambda: evaluate_files(qpath, [rpath], MEASURES)), robust)
    _same(_outcome(lambda: evaluate(read_qrels(qpath), [read_run(rpath)], MEASURES)), robust)
