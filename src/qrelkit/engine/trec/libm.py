"""The C library's logarithms over numpy arrays, as trec_eval's C code takes them.

numpy's float64 ``log`` and ``log2`` are the C library's on most machines, but its builds for AVX-512 carry
vectorised ones of their own that differ from it in the last bit for some arguments (``log2(1621)``, say).
trec_eval's measures (:mod:`qrelkit.engine.trec.kernels`) take their logarithms here, so the numpy kernels,
the numpy-free drop-in (:mod:`qrelkit.evaluation.trec_lean`, which calls ``math``) and trec_eval's binary
agree to the bit on every machine. qrelkit's own kernels keep numpy's: the tools their profiles reproduce
(scikit-learn among them) compute with numpy.

Whole numbers from 1 to :data:`TABLE_MAX` (ranks, counts) are looked up in a table of ``math``'s values,
grown on demand; any other value is computed once per distinct value with ``math`` (about 0.25 s a million
distinct values, against numpy's millisecond: callers take logarithms only where they are used).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["TABLE_MAX", "log", "log2"]

#: The largest whole number looked up in a table (32 MB of float64 per function at most); past it, and for
#: fractions, each distinct value is computed with ``math``.
TABLE_MAX = 1 << 22

_FUNCTIONS: dict[str, Callable[[float], float]] = {"log": math.log, "log2": math.log2}
_TABLES: dict[str, np.ndarray] = {}
_LOCK = threading.Lock()


def _c(function: Callable[[float], float], value: float) -> float:
    """``function(value)`` with the C library's answers where ``math`` raises: -inf at 0, -NaN below (its
    sign printed as ``-nan`` by C's ``printf``); a NaN comes back as it went in."""
    if value > 0:
        return function(value)
    if value == 0:
        return -math.inf
    return value if value != value else -math.nan


def _table(name: str, size: int) -> np.ndarray:
    """The table of ``name`` over 0 .. at least ``size`` - 1 (entry 0: -inf)."""
    table = _TABLES.get(name)
    if table is None or len(table) < size:
        with _LOCK:
            table = _TABLES.get(name)
            if table is None or len(table) < size:
                grown = min(max(size, 2 * (0 if table is None else len(table)), 4096), TABLE_MAX + 1)
                function = _FUNCTIONS[name]
                table = np.array([-math.inf, *(function(i) for i in range(1, grown))], dtype=np.float64)
                _TABLES[name] = table
    return table


def _apply(name: str, x: np.ndarray) -> np.ndarray:
    values = np.asarray(x)
    if not values.size:
        return np.zeros(values.shape, dtype=np.float64)
    if values.dtype.kind in "iu":
        low, high = int(values.min()), int(values.max())
        if low >= 1 and high <= TABLE_MAX:
            return _table(name, high + 1)[values]
        if low >= 1:  # the whole numbers past the table one by one (a query of millions of rows)
            out = np.empty(values.shape, dtype=np.float64)
            small = values <= TABLE_MAX
            out[small] = _table(name, TABLE_MAX + 1)[values[small]]
            out[~small] = _apply(name, values[~small].astype(np.float64))
            return out
    else:
        values = values.astype(np.float64, copy=False)
        low_f, high_f = float(values.min()), float(values.max())  # NaN compares false: value by value
        if low_f >= 1 and high_f <= TABLE_MAX and np.array_equal(values, np.floor(values)):
            return _table(name, int(high_f) + 1)[values.astype(np.int64)]
    values = values.astype(np.float64, copy=False)
    out = np.empty(values.shape, dtype=np.float64)
    nan = np.isnan(values)
    out[nan] = values[nan]  # a NaN comes back as it went in, its sign kept (np.unique would merge them)
    distinct, inverse = np.unique(values[~nan], return_inverse=True)
    function = _FUNCTIONS[name]
    found = np.array([_c(function, v) for v in distinct.tolist()], dtype=np.float64)
    out[~nan] = found[inverse.reshape(-1)]
    return out


def log2(x: np.ndarray) -> np.ndarray:
    """``math.log2`` of each value as the C library gives it (-inf at 0, -NaN below, a NaN as given)."""
    return _apply("log2", x)


def log(x: np.ndarray) -> np.ndarray:
    """``math.log`` of each value as the C library gives it (-inf at 0, -NaN below, a NaN as given)."""
    return _apply("log", x)
