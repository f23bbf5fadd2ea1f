"""Numbers from judgments and runs.

- :mod:`.core`: :func:`~.core.evaluate` over values in memory;
- :mod:`.files`: :func:`~.files.evaluate_files` over files, and :func:`~.files.plan_inputs` with
  :func:`~.files.evaluate_planned_on`, ``qrelkit eval``'s way in (local or Spark);
- :mod:`.plan`: the inputs as one value, how a set of files is read (:func:`~.plan.plan_reading`, the one
  place that decides it) and the readers that carry the plan out;
- :mod:`.routes`: each route's readers, a table that imports nothing;
- :mod:`.results`: the :class:`~.results.Results` every path returns;
- :mod:`.spark`: the same kernels per partition of whole queries on Spark;
- :mod:`.trec_eval`, :mod:`.trec_fast`, :mod:`.trec_native`, :mod:`.trec_lean` and :mod:`.trec_options`: ``qrelkit trec_eval``'s
  front end, its fast path, its path without numpy and its options (one table);
- :mod:`.diagnose`: explaining a number (per-rank arithmetic, the conventions sweep).

``from qrelkit.evaluation import evaluate`` (or ``evaluate_files``) still works: names load from
:mod:`.core` and :mod:`.files` on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: qrelkit trec_eval's start-up imports this package
if TYPE_CHECKING:  # what a type checker sees of the old names
    from typing import Any

    from .core import *  # noqa: F403
    from .files import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":  # `from ... import *` takes the old module's names
        raise AttributeError(name)
    import importlib  # (loaded on use: qrelkit trec_eval's start-up imports this package)

    if name == "__all__":
        return [n for s in (".core", ".files") for n in _public(importlib.import_module(s, __name__))]
    for module in (".core", ".files"):
        value = getattr(importlib.import_module(module, __name__), name, None)
        if value is not None:
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _public(module: Any) -> list[str]:
    """The names ``from ... import *`` took from the module these names come from."""
    return list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))
