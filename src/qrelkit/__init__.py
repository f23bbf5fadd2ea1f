"""qrelkit: trustworthy graded-relevance evaluation for search and RAG retrieval.

The public surface is listed in ``__all__``; names load on first use so that ``import qrelkit`` and the
command line start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

_EXPORTS = {
    "Qrels": "qrelkit.data",
    "Run": "qrelkit.data",
    "DiversityQrels": "qrelkit.data",
    "read_qrels": "qrelkit.formats",
    "read_diversity_qrels": "qrelkit.formats",
    "diversity_qrels_from_frame": "qrelkit.formats",
    "read_run": "qrelkit.formats",
    "qrels_from_frame": "qrelkit.formats",
    "run_from_frame": "qrelkit.formats",
    "write_qrels": "qrelkit.formats",
    "write_run": "qrelkit.formats",
    "Conventions": "qrelkit.conventions",
    "DEFAULT": "qrelkit.conventions",
    "GainMap": "qrelkit.conventions",
    "Measure": "qrelkit.measures",
    "parse_measure": "qrelkit.measures",
    "evaluate": "qrelkit.evaluation",
    "Results": "qrelkit.results",
    "explain": "qrelkit.diagnose",
    "QrelkitError": "qrelkit.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(_EXPORTS[name])
        value = getattr(module, "parse" if name == "parse_measure" else name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
