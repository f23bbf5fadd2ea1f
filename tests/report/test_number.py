"""The one way a report prints a number or its placeholder (qrelkit.report.tables.number)."""

from __future__ import annotations

import math

from qrelkit.report.tables import number


def test_a_number_or_its_placeholder() -> None:
    assert number(0.123456) == "0.1235"
    assert number(0.123456, 3) == "0.123"
    assert number(2, 1) == "2.0"
    assert number(0.5, signed=True) == "+0.5000"
    assert number(-0.5, 4, "-", signed=True) == "-0.5000"
    assert number(None) == number(math.nan) == "–"
    assert number(None, 4, "-") == number(math.nan, 4, "-", signed=True) == "-"
    assert number(None, 3, "n/a") == "n/a"
    assert (number(math.inf), number(-math.inf)) == ("inf", "-inf")
