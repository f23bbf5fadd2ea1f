"""The values that pass between the stages: :class:`~.values.Qrels`, :class:`~.values.DiversityQrels`
and :class:`~.values.Run` with the validation of their frames (:mod:`.values`), and the small path's numpy
columns (:mod:`.columns`).

``from qrelkit.data import Qrels`` still works: names load from :mod:`.values` on first use.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module(".values", __name__), name)
