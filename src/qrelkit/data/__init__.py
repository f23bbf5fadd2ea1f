"""The values that pass between the stages: :class:`~.values.Qrels`, :class:`~.values.DiversityQrels`
and :class:`~.values.Run` with the validation of their frames (:mod:`.values`), and the small path's numpy
columns (:mod:`.columns`).

``from qrelkit.data import Qrels`` still works: names load from :mod:`.values` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees of the old names
    from .values import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":  # `from ... import *` takes the old module's names
        raise AttributeError(name)
    module = importlib.import_module(".values", __name__)
    return _public(module) if name == "__all__" else getattr(module, name)


def _public(module: Any) -> list[str]:
    """The names ``from ... import *`` took from the module these names come from."""
    return list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))
