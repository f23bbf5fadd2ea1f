"""Loading the native scanner (qrelkit._native) needs only ctypes: numpy loads on the first scan, and its
records are read-only values built as ``dataclasses.dataclass(frozen=True)`` builds them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from qrelkit import _native


def test_loading_the_library_imports_neither_numpy_nor_dataclasses() -> None:
    code = (
        "import sys\n"
        "from qrelkit import _native\n"
        "print(_native.built(), sorted(m for m in ('numpy', 'dataclasses', 'typing', 'pathlib') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split(" ", 1)[1].strip() == "[]"


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
def test_the_first_scan_loads_numpy_and_gives_its_arrays() -> None:
    code = (
        "from qrelkit import _native\n"
        "s = _native.scan_run(b'q1 Q0 d1 1 2.5 t\\nq1 Q0 d2 2 1.5 t\\n', None, False)\n"
        "import numpy\n"
        "print(type(s.score) is numpy.ndarray, s.score.tolist(), s.kept, _native.np is numpy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "True [2.5, 1.5] 2 True"


def _qrels(**overrides: object) -> _native.ScannedQrels:
    fields: dict[str, object] = {
        "lines": 2,
        "rows": 1,
        "q_off": np.array([0, 2]),
        "q_data": np.frombuffer(b"q1", np.uint8),
        "d_off": np.array([0, 2]),
        "d_data": np.frombuffer(b"d1", np.uint8),
        "grade": np.array([3]),
        "row": np.array([1]),
    }
    return _native.ScannedQrels(**{**fields, **overrides})  # type: ignore[arg-type]


def test_records_take_their_fields_by_name_or_position_with_defaults() -> None:
    record = _qrels()
    assert record.lines == 2 and record.grade.tolist() == [3]
    again = _native.ScannedQrels(*(getattr(record, n) for n in _native.ScannedQrels.__annotations__))
    assert again.row is record.row
    scanned = _native.Scanned(1, 1, *([np.zeros(1)] * 8), b"t")  # type: ignore[arg-type]
    assert (scanned.pair, scanned.rows, scanned.trailing, scanned.tag) == (None, 0, 0, b"t")
    assert repr(record).startswith("ScannedQrels(lines=2, rows=1, q_off=array([0, 2])")


def test_records_are_read_only_and_refuse_wrong_arguments() -> None:
    record = _qrels()
    with pytest.raises(AttributeError):
        record.lines = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del record.rows  # type: ignore[misc]
    with pytest.raises(TypeError):
        _qrels(colour="red")
    with pytest.raises(TypeError):
        _native.ScannedQrels(lines=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _native.ScannedQrels(1, lines=1)  # type: ignore[call-arg, misc]
