"""``engine.libm``: the C library's logarithms over numpy arrays, against ``math`` value by value (Python's
``math.log2``/``math.log`` call the C library's), including the ranks where numpy's own vectorised
``log2`` on AVX-512 builds differs from it (1,621 = rank 1,619 + 2, the first)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit.engine.trec import libm


def _c(function, value):
    if value > 0:
        return function(value)
    return -math.inf if value == 0 else math.nan  # the sign of a NaN: test_the_c_library_itself


def _same(a: np.ndarray, b: list[float]) -> bool:
    return np.array_equal(a, np.array(b, dtype=np.float64), equal_nan=True)


def test_whole_numbers_match_math_bit_for_bit() -> None:
    n = np.arange(1, 200_001, dtype=np.int64)
    for ours, theirs in ((libm.log2, math.log2), (libm.log, math.log)):
        assert _same(ours(n), [theirs(v) for v in n.tolist()])
        assert _same(ours(n.astype(np.float64)), [theirs(v) for v in n.tolist()])
    assert libm.log2(np.array([1621]))[0] == math.log2(1621)
    assert libm.log2(np.array([2, 4, 1024]))[:3].tolist() == [1.0, 2.0, 10.0]  # exact powers of two


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-5, 5_000).map(float),
            st.sampled_from([0.0, -0.0, 1e-5, 0.5, 2.5, float(libm.TABLE_MAX), float(libm.TABLE_MAX + 1)]),
        ),
        max_size=40,
    )
)
def test_any_value_matches_math(values: list[float]) -> None:
    x = np.array(values, dtype=np.float64)
    assert _same(libm.log2(x), [_c(math.log2, v) for v in values])
    assert _same(libm.log(x), [_c(math.log, v) for v in values])


def test_shape_and_empty() -> None:
    grid = np.array([[1.0, 2.0], [8.0, 3.0]])
    assert libm.log2(grid).shape == (2, 2) and libm.log2(grid)[1, 0] == 3.0
    assert libm.log2(np.zeros(0)).shape == (0,)
    assert libm.log(np.array([0], dtype=np.int64)).tolist() == [-math.inf]


def test_trec_eval_ndcg_at_rank_1620_is_the_c_librarys(tmp_path) -> None:
    """One relevant document at rank 1,620 of 2,000: ndcg = 1 / log2(1621), the C library's value (numpy's
    AVX-512 log2 gives 0.09378515440807399 there, math 0.09378515440807397), from the numpy path and the
    numpy-free one alike."""
    from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
    from qrelkit.evaluation.trec_lean import lean_trec_eval

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1620 1\n")
    run.write_text("".join(f"q1 Q0 d{r} {r} {3000 - r} t\n" for r in range(1, 2001)))
    expected = 1 / math.log2(1621)
    numpy_path = trec_eval_files(qrels, run, TrecOptions(per_query=True, measures=("ndcg",)))
    lean = lean_trec_eval(str(qrels), str(run), per_query=True, measures=("ndcg",))
    assert lean is not None
    for out in (numpy_path, lean):
        (line,) = [line for line in out.lines if line[0] == "ndcg"]
        assert list(line[2]) == [expected] and line[3] == expected


def test_the_c_library_itself() -> None:
    """Against the C library called through ctypes, bit for bit and NaN's sign included (C's printf shows
    it: ``-nan``), over whole numbers past the table too."""
    import ctypes
    import ctypes.util
    import sys

    import pytest

    if not sys.platform.startswith("linux"):
        pytest.skip("the C library's name is Linux's here")
    c = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in ("log2", "log"):
        getattr(c, name).restype, getattr(c, name).argtypes = ctypes.c_double, [ctypes.c_double]
    values = [-1.0, -0.0, 0.0, 1.0, 1621.0, 0.3, math.inf, -math.inf, math.nan, -math.nan]
    values += [float(libm.TABLE_MAX + k) for k in (-1, 0, 1, 12345)]
    for name in ("log2", "log"):
        ours = getattr(libm, name)(np.array(values)).view(np.uint64).tolist()
        theirs = np.array([getattr(c, name)(v) for v in values]).view(np.uint64).tolist()
        assert ours == theirs, name
    whole = np.array([3, libm.TABLE_MAX, libm.TABLE_MAX + 1, 2**40], dtype=np.int64)
    assert libm.log2(whole).tolist() == [c.log2(float(v)) for v in whole.tolist()]
