"""The hostile-input corpus (tests/property/hostile.py) on Spark's engine: the same one-line error as the
local engines give (grade 1024 once went through as a NaN nDCG and a mean of 1.0), by the API and by
``qrelkit eval --engine spark``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.errors import QrelkitError
from qrelkit.evaluation.files import evaluate_files
from qrelkit.evaluation.spark import evaluate as spark_evaluate

from ..property.hostile import HOSTILE_QRELS, HOSTILE_RUNS, build

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

NAMES = [*HOSTILE_RUNS, *HOSTILE_QRELS, "a FIFO with no writer", "/dev/zero"]
MEASURES = ["nDCG@10", "AP"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    return build(tmp_path_factory.mktemp("hostile"))


def _error(call) -> str:
    with pytest.raises(QrelkitError) as err:
        call()
    return str(err.value)


def test_every_hostile_input_gets_the_local_error_on_spark(spark, corpus) -> None:
    for name in NAMES:
        qrels, run = corpus[name]
        local = _error(lambda: evaluate_files(qrels, [run], MEASURES))  # noqa: B023  (called at once)
        on_spark = _error(lambda: spark_evaluate(spark, str(qrels), [str(run)], MEASURES))  # noqa: B023
        assert on_spark == local, name


def test_grade_1024_on_the_command_line(spark, corpus) -> None:
    qrels, run = corpus["grade 1024"]
    result = CliRunner().invoke(main, ["eval", "--engine", "spark", str(qrels), str(run), "-m", "nDCG@10"])
    assert result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines()[-1] == (
        f"qrelkit: error: {qrels}:6: grade 1024 overflows the exponential gain 2^g - 1 of nDCG@10; expected "
        "grades up to 1000 under gain=exponential. Fix: check the grade column, or use gain=linear "
        "(e.g. -m 'nDCG(gain=linear)@10')"
    )
