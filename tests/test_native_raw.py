"""The scanner's calls without numpy (:func:`qrelkit._native.raw_scan_run` and friends, for
``qrelkit trec_eval``'s small-file path) give what the numpy API gives on the same block."""

from __future__ import annotations

import pytest

from qrelkit import _native as nat

RUN = b"q1 Q0 b 1 2.5 t\nq1 Q0 a 2 2.5 t\n# note\nq1 Q0 c 3 9 t\nq2 Q0 a 1 1e-3 t\n"
QRELS = b"q1 0 a 1\nq1 0 c 0\nq2 0 a -1\n"


@pytest.fixture(autouse=True)
def _built() -> None:
    if not nat.built():
        pytest.fail("the native scanner is built in the development tree")


def test_raw_scans_are_the_numpy_scans() -> None:
    raw, scanned = nat.raw_scan_run(RUN, True), nat.scan_run(RUN, None, False, comments=True)
    assert raw is not None and scanned is not None
    try:
        assert (raw.kept, raw.groups) == (scanned.kept, len(scanned.group_first)) == (4, 2)
        assert raw.ints("group_first", raw.groups).tolist() == scanned.group_first.tolist() == [0, 3]
        assert raw.doubles("score", raw.kept).tolist() == scanned.score.tolist() == [2.5, 2.5, 9.0, 0.001]
        assert raw.data("d_data", 4) == bytes(scanned.d_data) == b"baca"
        assert RUN[raw.tag_start : raw.tag_start + raw.tag_len] == scanned.tag == b"t"
    finally:
        raw.free()
    q_raw, q_scanned = nat.raw_scan_qrels(QRELS, True), nat.scan_qrels(QRELS, comments=True)
    assert q_raw is not None and q_scanned is not None
    try:
        assert q_raw.ints("rank", q_raw.kept).tolist() == q_scanned.grade.tolist() == [1, 0, -1]
    finally:
        q_raw.free()


def test_raw_rank_is_trec_rank() -> None:
    """q1's rows b (2.5), a (2.5), c (9): trec_eval's order is c, then the tie by document id descending, b, a."""
    run, qrels = nat.raw_scan_run(RUN, True), nat.raw_scan_qrels(QRELS, True)
    assert run is not None and qrels is not None
    try:
        first, order = nat.int64s([0, 2, 3]), nat.int64s([0, 1, 2])
        assert not nat.raw_judged_dups(2, first, order, qrels)
        pos, judged = nat.raw_trec_rank(run, nat.int64s([0, 1]), False, first, order, qrels)
        assert pos.tolist() == [1, 2, 0, 0]
        assert judged.tolist() == [-1, 0, 1, 2]  # b is not judged; a, c and q2's a are judgments 0, 1, 2
        twice = nat.int64s([0, 0, 1])  # query 0 holds judgments 0 and 0: a document judged twice
        assert nat.raw_judged_dups(2, nat.int64s([0, 2, 3]), twice, qrels)
    finally:
        run.free()
        qrels.free()


def test_the_raw_calls_need_no_numpy() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from qrelkit import _native as nat\n"
        f"r = nat.raw_scan_run({RUN!r}, True)\n"
        "print(r.kept, r.ints('group_first', r.groups).tolist()); r.free()\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "4 [0, 3]\nFalse\n"
