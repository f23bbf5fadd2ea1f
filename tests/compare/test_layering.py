"""The compare package stays on the numeric side: no I/O, web, plotting or terminal modules, and among
qrelkit's own modules only the numeric ones (tests/test_layering.py lists ``compare.py``, a single file)."""

from __future__ import annotations

import ast
from pathlib import Path

import qrelkit

PACKAGE = Path(qrelkit.__file__).resolve().parent / "compare"
FORBIDDEN = {"sqlite3", "click", "starlette", "uvicorn", "matplotlib", "rich", "jinja2"}
# provenance: the layer-0 module that owns JSON's numbers (json_number); it imports nothing but _version
NUMERIC = {
    "results",
    "measures",
    "conventions",
    "evaluation",
    "agreement",
    "errors",
    "data",
    "compare",
    "estimation",  # the prediction-powered estimates of a difference
    "provenance",
}


def _imports(path: Path) -> tuple[set[str], set[str]]:
    outside, own = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            outside |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            outside.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            own.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            own.add("compare")
    return outside, own


def test_compare_imports_only_numeric_modules():
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) >= 4
    for path in files:
        outside, own = _imports(path)
        assert not outside & FORBIDDEN, f"{path.name} imports {sorted(outside & FORBIDDEN)}"
        assert own <= NUMERIC, f"{path.name} imports qrelkit modules {sorted(own - NUMERIC)}"
        assert len(path.read_text().splitlines()) <= 800, f"{path.name} is past 800 lines"
