"""The old module names (before the stage packages) still import: each answers with the module that now
owns its contents, which keeps its own spec, so its relative imports, reloading and pickling work under
either name. The names are qrelkit.MOVED's, and the four modules that became packages forward their names."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

import qrelkit


@pytest.mark.parametrize("old", sorted(qrelkit.MOVED))
def test_an_old_name_is_the_new_module_with_its_own_spec(old: str) -> None:
    new = qrelkit.MOVED[old]
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new and module.__package__ == new.rsplit(".", 1)[0]


def test_old_names_work_in_a_fresh_process_with_import_warnings_as_errors(tmp_path) -> None:
    code = (
        "import qrelkit.rubric, qrelkit.spark, qrelkit.pool\n"
        "from qrelkit.rubric import load_rubric\n"
        "from qrelkit.errors import InputFormatError\n"
        "try:\n"
        f"    load_rubric({str(tmp_path / 'missing.toml')!r})\n"  # a lazy relative import inside
        "except InputFormatError as exc:\n"
        "    print('refused:', exc.problem)\n"
        "print(qrelkit.pool.draw_calibration.__module__)\n"
        "import importlib, qrelkit.pool as pool\n"
        "pool.draw_calibration = None\n"
        "importlib.reload(qrelkit.pool)\n"  # re-runs the module under its own name: the function is back
        "print(callable(pool.draw_calibration))\n"
    )
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["refused: rubric file not found", "qrelkit.pool", "True"]


def test_the_modules_that_became_packages_forward_their_names() -> None:
    from qrelkit.agreement import cohen_kappa
    from qrelkit.agreement.kappa import cohen_kappa as owner_kappa
    from qrelkit.data import Qrels
    from qrelkit.data.values import Qrels as owner_qrels
    from qrelkit.evaluation import evaluate, evaluate_files
    from qrelkit.evaluation.core import evaluate as owner_evaluate
    from qrelkit.evaluation.files import evaluate_files as owner_files
    from qrelkit.measures import parse
    from qrelkit.measures.grammar import parse as owner_parse

    assert (cohen_kappa, Qrels, evaluate, evaluate_files, parse) == (
        owner_kappa,
        owner_qrels,
        owner_evaluate,
        owner_files,
        owner_parse,
    )
    namespace: dict[str, object] = {}
    exec("from qrelkit.data import *", namespace)
    assert namespace["Qrels"] is owner_qrels


def test_functions_pickle_under_their_new_names() -> None:
    from qrelkit.pool import draw_calibration

    assert pickle.loads(pickle.dumps(draw_calibration)) is draw_calibration


def test_the_old_names_cost_import_qrelkit_no_import_machinery() -> None:
    """The finder follows the import protocol without importlib.abc (about 30 ms of imports)."""
    code = "import sys, qrelkit; print('importlib.abc' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr
