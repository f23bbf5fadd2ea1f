"""``engine.libm``: the C library's logarithms over numpy arrays, against ``math`` value by value (Python's
``math.log2``/``math.log`` call the C library's), including the ranks where numpy's own vectorised
``log2`` on AVX-512 builds differs from it (1,621 = rank 1,619 + 2, the first)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qrelkit.engine import libm


def _c(function, value):
    if value > 0:
        return function(value)
    return -math.inf if value == 0 else math.nan


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
