"""qrelkit: trustworthy graded-relevance evaluation for search and RAG retrieval.

The public surface is listed in ``__all__``; names load on first use so that ``import qrelkit`` and the
command line start fast.

The package is laid out by stage (see docs/architecture.md): ``measures``, ``data``, ``formats``,
``engine``, ``evaluation``, ``agreement``, ``judgments``, ``judging``, ``estimation``, ``compare``, ``report`` and ``cli``.
The modules that sat at the top before that layout still import under their old names (``qrelkit.spark``,
``qrelkit.pool``, ...): :data:`MOVED` maps each to its module now, and the same module object answers to
both names.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType

from ._version import __version__

TYPE_CHECKING = False  # typing costs ``qrelkit --version`` 10 ms
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "Qrels": "qrelkit.data.values",
    "Run": "qrelkit.data.values",
    "DiversityQrels": "qrelkit.data.values",
    "read_qrels": "qrelkit.formats",
    "read_diversity_qrels": "qrelkit.formats",
    "diversity_qrels_from_frame": "qrelkit.formats",
    "read_run": "qrelkit.formats",
    "qrels_from_frame": "qrelkit.formats",
    "run_from_frame": "qrelkit.formats",
    "write_qrels": "qrelkit.formats",
    "write_run": "qrelkit.formats",
    "Conventions": "qrelkit.measures.conventions",
    "DEFAULT": "qrelkit.measures.conventions",
    "GainMap": "qrelkit.measures.conventions",
    "Measure": "qrelkit.measures.grammar",
    "parse_measure": "qrelkit.measures.grammar",
    "evaluate": "qrelkit.evaluation.core",
    "Results": "qrelkit.evaluation.results",
    "explain": "qrelkit.evaluation.diagnose",
    "estimate": "qrelkit.estimation",
    "Estimates": "qrelkit.estimation",
    "QrelkitError": "qrelkit.errors",
}

__all__ = ["__version__", *_EXPORTS]


#: The modules that moved into the stage packages, by their old name.
MOVED = {
    "qrelkit.conventions": "qrelkit.measures.conventions",
    "qrelkit.profiles": "qrelkit.measures.profiles",
    "qrelkit.trec_names": "qrelkit.measures.trec_names",
    "qrelkit.irm_names": "qrelkit.measures.irm_names",
    "qrelkit.columns": "qrelkit.data.columns",
    "qrelkit.results": "qrelkit.evaluation.results",
    "qrelkit.spark": "qrelkit.evaluation.spark",
    "qrelkit.trec_compat": "qrelkit.evaluation.trec_eval",
    "qrelkit.trec_fast": "qrelkit.evaluation.trec_fast",
    "qrelkit.diagnose": "qrelkit.evaluation.diagnose",
    "qrelkit.group_agreement": "qrelkit.agreement.group",
    "qrelkit.rubric": "qrelkit.judgments.rubric",
    "qrelkit.pool": "qrelkit.judgments.pool",
    "qrelkit.leverage": "qrelkit.judgments.leverage",
    "qrelkit.adjudication": "qrelkit.judgments.adjudication",
    "qrelkit.manifest": "qrelkit.judgments.manifest",
    "qrelkit.dossier": "qrelkit.report.dossier",
}


class _MovedModule:
    """Answers an old module name with the module that now owns its contents (the same object), leaving
    that module's own ``__spec__``, ``__loader__`` and ``__package__`` as they were: its relative imports,
    ``importlib.reload`` and pickling go on working under its real name. A meta path finder and loader by
    their protocol (``importlib.abc``'s classes are not imported: they cost ``import qrelkit`` 30 ms)."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)  # type: ignore[arg-type]  # a Loader by its protocol, not by inheritance

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = (module.__spec__, module.__loader__)  # put back once the import is done
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its own name; the import system has just given it the
        old name's spec: give it back its own."""
        own_spec, own_loader = module.__spec__.loader_state  # type: ignore[union-attr]  # set in create_module
        module.__spec__, module.__loader__ = own_spec, own_loader


if not any(type(f).__name__ == "_MovedModule" for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModule())


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(_EXPORTS[name])
        value = getattr(module, "parse" if name == "parse_measure" else name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
