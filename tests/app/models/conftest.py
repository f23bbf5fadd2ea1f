"""Fixtures of the model labeller tests: a synthetic project whose people passed their gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import grade_calibration, make_synthetic, person


@pytest.fixture
def gated(tmp_path: Path) -> Path:
    """Two people (alice, bob) graded the calibration sample (8 queries x 5 documents) and passed."""
    db = make_synthetic(tmp_path)
    grade_calibration(db, person)
    return db
