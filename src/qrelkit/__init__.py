"""qrelkit: trustworthy graded-relevance evaluation for search and RAG retrieval.

The public surface is listed in ``__all__``; names load on first use so that ``import qrelkit`` and the
command line start fast.

The package is laid out by stage (see docs/architecture.md): ``measures``, ``data``, ``formats``,
``engine``, ``evaluation``, ``agreement``, ``rubric``, ``pool``, ``app``, ``judgments``, ``estimation``, ``compare``, ``report`` and ``cli``.
The modules that sat elsewhere before that layout still import under their old names (``qrelkit.spark``,
``qrelkit.judging.store``, ...): :data:`MOVED` maps each to its module now, and the same module object answers to
both names.
"""

from __future__ import annotations

import sys
from types import ModuleType

from ._version import __version__

TYPE_CHECKING = False  # typing costs ``qrelkit --version`` 10 ms
if TYPE_CHECKING:
    import importlib.machinery
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
    "evaluate_files": "qrelkit.evaluation.files",
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
    "qrelkit.leverage": "qrelkit.judgments.leverage",
    "qrelkit.adjudication": "qrelkit.judgments.adjudication",
    "qrelkit.manifest": "qrelkit.judgments.manifest",
    "qrelkit.dossier": "qrelkit.report.dossier",
    # the stage-named layout: rubric and pool in packages of their own, the judging app as ``app``, the
    # engine's modules grouped into encoding, kernels, trec and oracles, formats.files as formats.tabular
    "qrelkit.engine.cascade": "qrelkit.engine.kernels.cascade",
    "qrelkit.engine.compat": "qrelkit.engine.kernels.compat",
    "qrelkit.engine.diversity": "qrelkit.engine.kernels.diversity",
    "qrelkit.engine.diversity_reference": "qrelkit.engine.oracles.diversity",
    "qrelkit.engine.encode": "qrelkit.engine.encoding.encode",
    "qrelkit.engine.encoded": "qrelkit.engine.encoding.encoded",
    "qrelkit.engine.hashed": "qrelkit.engine.encoding.hashed",
    "qrelkit.engine.libm": "qrelkit.engine.trec.libm",
    "qrelkit.engine.reference": "qrelkit.engine.oracles.reference",
    "qrelkit.engine.small": "qrelkit.engine.encoding.small",
    "qrelkit.engine.trec_kernels": "qrelkit.engine.trec.kernels",
    "qrelkit.engine.trec_measures": "qrelkit.engine.trec.measures",
    "qrelkit.engine.trec_reference": "qrelkit.engine.oracles.trec",
    "qrelkit.formats.files": "qrelkit.formats.tabular",
    "qrelkit.judging.bulk": "qrelkit.app.bulk",
    "qrelkit.judging.decisions": "qrelkit.app.decisions",
    "qrelkit.judging.extend": "qrelkit.app.extend",
    "qrelkit.judging.grades": "qrelkit.app.grades",
    "qrelkit.judging.labeller_pairs": "qrelkit.app.labeller_pairs",
    "qrelkit.judging.models.access": "qrelkit.app.models.access",
    "qrelkit.judging.models.audit": "qrelkit.app.models.audit",
    "qrelkit.judging.models.client": "qrelkit.app.models.client",
    "qrelkit.judging.models.estimation": "qrelkit.app.models.estimation_parts",
    "qrelkit.judging.models.gate": "qrelkit.app.models.gate",
    "qrelkit.judging.models.manifest": "qrelkit.app.models.manifest_fields",
    "qrelkit.judging.models.probes": "qrelkit.app.models.probes",
    "qrelkit.judging.models.prompt": "qrelkit.app.models.prompt",
    "qrelkit.judging.models.labellers": "qrelkit.app.models.register",
    "qrelkit.judging.models.runner": "qrelkit.app.models.runner",
    "qrelkit.judging.models.schema": "qrelkit.app.models.schema",
    "qrelkit.judging.models.status": "qrelkit.app.models.status",
    "qrelkit.judging.pace": "qrelkit.app.pace",
    "qrelkit.judging.phases": "qrelkit.app.phases",
    "qrelkit.judging.project": "qrelkit.app.project",
    "qrelkit.judging.queries": "qrelkit.app.queries",
    "qrelkit.judging.review": "qrelkit.app.review",
    "qrelkit.judging.security": "qrelkit.app.security",
    "qrelkit.judging.store": "qrelkit.app.store",
    "qrelkit.judging.web.admin": "qrelkit.app.web.admin",
    "qrelkit.judging.web.auth": "qrelkit.app.web.auth",
    "qrelkit.judging.web.exports": "qrelkit.app.web.exports",
    "qrelkit.judging.web.labeller": "qrelkit.app.web.labeller",
    "qrelkit.judging.web.server": "qrelkit.app.web.server",
    "qrelkit.judging.web.state": "qrelkit.app.web.state",
}


#: Names now answered by a package: packages moved whole (their modules are in :data:`MOVED`, so that the
#: old names of its modules import) and modules that became a stage's package (rubric, pool).
MOVED_PACKAGES = {
    "qrelkit.judgments.rubric": "qrelkit.rubric",
    "qrelkit.judgments.pool": "qrelkit.pool",
    "qrelkit.judging": "qrelkit.app",
    "qrelkit.judging.models": "qrelkit.app.models",
    "qrelkit.judging.web": "qrelkit.app.web",
}


class _MovedModule:
    """Answers an old module name with the module that now owns its contents (the same object), leaving
    that module's own ``__spec__``, ``__loader__`` and ``__package__`` as they were: its relative imports,
    ``importlib.reload`` and pickling go on working under its real name. A meta path finder and loader by
    their protocol (``importlib.abc``'s classes are not imported: they cost ``import qrelkit`` 30 ms)."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED and fullname not in MOVED_PACKAGES:
            return None
        import importlib.machinery  # (loaded on use: 0.4 ms of every start-up)

        return importlib.machinery.ModuleSpec(fullname, self)  # type: ignore[arg-type]  # a Loader by its protocol, not by inheritance

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        import importlib

        module = importlib.import_module(MOVED.get(spec.name) or MOVED_PACKAGES[spec.name])
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
        import importlib

        module = importlib.import_module(_EXPORTS[name])
        value = getattr(module, "parse" if name == "parse_measure" else name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
