"""What is measured, and under which conventions: the first stage of using judgments.

- :mod:`.grammar`: the measure grammar (``nDCG(gain=linear)@10``), parsed once; what each measure is.
- :mod:`.conventions`: the :class:`~.conventions.Conventions` value, every axis, and each named
  profile's axes (``PROFILE_AXES``).
- :mod:`.profiles`: what a named tool does beyond its axes (reader options, refusals, evidence).
- :mod:`.trec_names`, :mod:`.irm_names`: trec_eval's and ir_measures' names read into the grammar.

``from qrelkit.measures import parse`` (the grammar's names, as before the grammar had its own module)
still works: such names load from :mod:`.grammar` on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: qrelkit trec_eval's start-up imports this package
if TYPE_CHECKING:  # what a type checker sees of the old names
    from typing import Any

    from .grammar import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":  # `from ... import *` takes the old module's names
        raise AttributeError(name)
    import importlib  # (loaded on use: qrelkit trec_eval's start-up imports this package)

    module = importlib.import_module(".grammar", __name__)
    return _public(module) if name == "__all__" else getattr(module, name)


def _public(module: Any) -> list[str]:
    """The names ``from ... import *`` took from the module these names come from."""
    return list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))
