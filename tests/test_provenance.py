"""The provenance module's helpers: the header every file starts with, and JSON's numbers."""

from __future__ import annotations

import json
import math

import numpy as np

from qrelkit._version import __version__
from qrelkit.provenance import header, json_number


def test_header_names_the_tool_first():
    assert list(header(a=1)) == ["tool", "a"]
    assert header()["tool"] == {"name": "qrelkit", "version": __version__}


def test_json_number_writes_undefined_and_infinite_values_as_null():
    assert json_number(None) is None
    assert json_number(math.nan) is None
    assert json_number(np.float64("nan")) is None
    assert json_number(math.inf) is None and json_number(-math.inf) is None
    assert json_number(0.25) == 0.25 and type(json_number(np.float64(0.25))) is float
    assert json_number(3) == 3.0 and type(json_number(np.int64(3))) is float
    # what json.dumps then writes: valid JSON, no NaN or Infinity token
    text = json.dumps([json_number(v) for v in (math.nan, math.inf, 1.5)], allow_nan=False)
    assert text == "[null, null, 1.5]"


def test_every_json_writer_of_numbers_uses_the_one_helper():
    """The modules that used to spell NaN-to-null themselves now call json_number (a grep, not a number)."""
    from pathlib import Path

    import qrelkit

    src = Path(qrelkit.__file__).parent
    for rel in ("agreement/kappa.py", "compare/values.py", "compare/noise.py", "compare/power.py",
                "app/grades.py", "judgments/adjudication.py", "pool/__init__.py"):  # fmt: skip
        text = (src / rel).read_text()
        assert "json_number" in text, rel
        assert "x != x" not in text and "None if math.isnan" not in text, rel
