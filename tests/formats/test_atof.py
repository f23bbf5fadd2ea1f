"""trec_eval's number reading (``qrelkit.formats.trec.atof``): hand values, and the C library's own
``atof``/``atol`` (called through ctypes) as the independent implementation on many spellings."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import random

import pytest

from qrelkit.formats.trec.atof import _merge_sorted, atof, atol, trec_eval_order

HAND = {
    "nan": math.nan, "NaN": math.nan, "-nan": math.nan, "nan(123)": math.nan, "inf": math.inf,
    "-Infinity": -math.inf, "INFx": math.inf, "0x1p3": 8.0, "-0x.8p1": -1.0, "0x1.8": 1.5, "0x": 0.0,
    "1.5abc": 1.5, "abc": 0.0, ".5e": 0.5, "1e": 1.0, "1e+": 1.0, "+3": 3.0, "5.": 5.0, "1e999": math.inf,
    "-1e999": -math.inf, "2e-3x": 0.002, "": 0.0, "-": 0.0, ".": 0.0, "12,5": 12.0,
}  # fmt: skip


@pytest.mark.parametrize("text", sorted(HAND))
def test_atof_reads_as_trec_eval_does(text):
    want = HAND[text]
    got = atof(text)
    assert (math.isnan(got) and math.isnan(want)) or got == want


@pytest.mark.parametrize(
    ("text", "want"), [("1.5", 1), ("2abc", 2), ("abc", 0), ("-3", -3), ("+4", 4), ("nan", 0), ("0x10", 0),
                       ("007", 7), ("99999999999999999999", 2**63 - 1), ("-99999999999999999999", -(2**63))],
)  # fmt: skip
def test_atol_reads_as_trec_eval_does(text, want):
    assert atol(text) == want


def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C library to compare with")
    libc = ctypes.CDLL(name)
    libc.atof.restype, libc.atof.argtypes = ctypes.c_double, [ctypes.c_char_p]
    libc.atol.restype, libc.atol.argtypes = ctypes.c_long, [ctypes.c_char_p]
    return libc


def _spellings(n: int) -> list[str]:
    rnd = random.Random(28)
    pieces = ["0", "1", "9", "42", ".", "e", "E", "-", "+", "x", "X", "p", "P", "a", "f", "inf", "nan",
              "infinity", "(", ")", "_", "0x", "1e308", "e-320", "abc"]  # fmt: skip
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 6))) for _ in range(n)]


def test_atof_and_atol_agree_with_the_c_library_on_random_spellings():
    libc = _libc()
    for text in _spellings(20000):
        want, got = libc.atof(text.encode()), atof(text)
        assert (math.isnan(want) and math.isnan(got)) or (
            got == want and math.copysign(1, got) == math.copysign(1, want)
        ), text
        assert atol(text) == libc.atol(text.encode()), text


def test_a_nan_score_is_ranked_by_the_c_librarys_qsort_and_its_merge_sort_port_agrees():
    """Rows come in by document id; NaN compares neither above nor below, so it takes the place the
    sort's comparisons give it. By hand (glibc's merge sort, halves [d1] and [d2 d3]): d2 (1.0) against
    d3 (2.0) gives [d3 d2]; then d1 (nan) against d3 compares equal on score, and ids descending put d3
    first; d1 against d2 likewise puts d2 first: [d3, d2, d1]."""
    docs = [b"d1", b"d2", b"d3"]
    assert trec_eval_order([math.nan, 1.0, 2.0], docs) == [2, 1, 0]
    rnd = random.Random(5)
    for _ in range(200):
        n = rnd.randint(1, 40)
        scores = [rnd.choice([math.nan, math.inf, -math.inf, 0.0, 1.0, 2.0, rnd.random()]) for _ in range(n)]
        ids = sorted(f"d{i:03d}".encode() for i in range(n))

        def comp(a, b, s=scores, d=ids):
            if s[a] > s[b]:
                return -1
            if s[a] < s[b]:
                return 1
            return (d[b] > d[a]) - (d[b] < d[a])

        assert trec_eval_order(scores, ids) == _merge_sorted(list(range(n)), comp)
