"""Spark's partitions give the floats of every other door under ``printed_decimals`` and ``summation``:
the ir_measures profile's ERR@k and ``nDCG(dcg='exp-log2')@k`` (five printed decimals, added in numeric
query order) and the gdeval profile, through the Python API, Spark's API and ``qrelkit eval --engine
spark``, per query and in the mean."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from qrelkit.evaluation.files import evaluate_files
from qrelkit.measures.profiles import PROFILES

from ..conftest import CLI

MEASURES = ["ERR@10", "nDCG(gain=exponential)@10", "nDCG(gain=exponential)@3", "nDCG@10", "ERR@2"]

#: numeric query ids (gdeval's) in an order where adding the values as text or as numbers can differ;
#: grades 0 to 4, ties, a judged query the run lacks (105), a query with nothing relevant (104)
QRELS = "".join(
    f"{q} 0 d{d} {g}\n"
    for q, grades in {"9": [1, 0, 2], "10": [3, 1], "100": [0, 4, 2, 1], "104": [0, 0], "105": [2]}.items()
    for d, g in enumerate(grades)
)
RUN = "".join(
    f"{q} Q0 d{d} {r} {s} sys\n"
    for q, rows in {
        "9": [(1, 2.0), (0, 2.0), (5, 1.0), (2, 0.5)],
        "10": [(7, 3.0), (8, 3.0), (9, 3.0), (1, 2.5), (0, 1.0)],
        "100": [(3, 1.0), (2, 1.0), (1, 1.0), (0, 1.0)],
        "104": [(0, 1.0), (1, 0.5)],
    }.items()
    for r, (d, s) in enumerate(rows, start=1)
)


def _numbers(results) -> tuple[dict, dict]:
    """Every per-query value and mean as its repr (the shortest text that reads back as the same double;
    NaN equal to NaN)."""
    per_query = {m: {q: repr(v) for q, v in results.values(m).items()} for m in results.measure_names}
    means = {m: repr(results.mean(m)) for m in results.measure_names}
    return per_query, means


@pytest.mark.parametrize("profile", ["ir_measures", "gdeval"])
def test_spark_gives_the_same_printed_floats(spark, tmp_path: Path, profile: str) -> None:
    from qrelkit.evaluation import spark as on_spark

    qrels, run = tmp_path / "qrels.txt", tmp_path / "sys.run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    conv = PROFILES[profile].conventions
    local = evaluate_files(qrels, [run], MEASURES, conv)
    on = on_spark.evaluate(spark, str(qrels), [str(run)], MEASURES, conv)
    assert _numbers(on) == _numbers(local)
    for m in local.measure_names:  # rounded where the profile prints five decimals
        if profile == "gdeval" or "ERR" in m or "exponential" in m:
            assert all(math.isnan(v) or v == round(v, 5) for v in local.values(m).values()), m
    asked = [part for m in MEASURES for part in ("-m", m)]
    out = CLI("eval", "--profile", profile, qrels, run, *asked, "--engine", "spark", "-f", "json", "-q")
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)["results"]
    for m in local.measure_names:
        want = {q: (None if math.isnan(v) else v) for q, v in local.values(m).items()}
        assert {q: v[m] for q, v in payload["per_query"]["sys"].items()} == want, m
        mean = local.mean(m)
        assert payload["means"]["sys"][m]["mean"] == (None if math.isnan(mean) else mean), m
