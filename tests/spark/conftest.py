"""One local Spark session for every test here (starting one costs seconds); each test is marked
``spark``, so ``pytest -m spark`` runs them alone and ``-m "not spark"`` leaves them out."""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest

import qrelkit

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="the Spark engine's tests need qrelkit[spark]")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 or 21")
    # the Python workers run this interpreter and import this qrelkit
    os.environ["PYSPARK_PYTHON"] = sys.executable
    src = str(Path(qrelkit.__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from qrelkit.evaluation.spark import session

    spark = session("local[2]", shuffle_partitions=4, **{"spark.default.parallelism": "2"})
    yield spark
    spark.stop()
