"""Layering of the reading side: data never imports formats (no cycle), the engine imports nothing above
it, and no reader imports the ``qrelkit`` package itself; a small evaluation loads neither polars nor
pyarrow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import qrelkit

SRC = Path(qrelkit.__file__).resolve().parent


def _targets(path: Path) -> set[str]:
    """The qrelkit modules a file imports (relative imports resolved), ``qrelkit`` for the package."""
    package = ["qrelkit", *path.relative_to(SRC).with_suffix("").parts][:-1]  # the file's own package
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "qrelkit"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "qrelkit":
                continue
            out.add(module)  # "qrelkit" for `from .. import x` at the top: the package itself
    return out


def _files(entry: str) -> list[Path]:
    target = SRC / entry
    return sorted(target.rglob("*.py")) if target.is_dir() else [target]


def test_data_does_not_import_formats():
    assert not {
        t for t in {t for p in _files("data") for t in _targets(p)} if t.startswith("qrelkit.formats")
    }


def test_the_engine_imports_nothing_above_it():
    above = (
        "qrelkit.evaluation.results",
        "qrelkit.evaluation.core",
        "qrelkit.formats",
        "qrelkit.cli",
        "qrelkit.report",
    )
    for path in _files("engine"):
        targets = _targets(path)
        assert "qrelkit" not in targets, f"{path.name} imports the qrelkit package"
        bad = sorted(t for t in targets if t.startswith(above))
        assert not bad, f"engine/{path.name} imports {bad}"


def test_readers_do_not_import_the_package():
    for path in [*_files("formats"), *_files("data"), SRC / "fingerprint.py", *_files("_native")]:
        assert "qrelkit" not in _targets(path), f"{path.relative_to(SRC)} imports the qrelkit package"


def test_the_resolver_sees_a_package_import():
    """The check above can fail: ``from .. import _native`` in a subpackage is an import of the package."""
    sample = SRC / "engine" / "encoding" / "encoded.py"
    assert "qrelkit" not in _targets(sample)
    assert "qrelkit.measures.conventions" in _targets(sample)


def test_a_small_evaluation_loads_neither_polars_nor_pyarrow(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n")
    code = (
        "import sys\n"
        "from qrelkit.evaluation.files import evaluate_files\n"
        f"r = evaluate_files({str(tmp_path / 'qrels.txt')!r}, [{str(tmp_path / 'run.txt')!r}])\n"
        "assert r.runs[0].meta['reader'] == 'small', r.runs[0].meta\n"
        "print(sorted(m for m in ('polars', 'pyarrow') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
