"""Numbers from judgments and runs: :func:`~.core.evaluate` over values in memory and
:func:`~.core.evaluate_files` over files, the :class:`~.results.Results` they return, Spark
(:mod:`.spark`), trec_eval's front end (:mod:`.trec_eval`) and its fast path (:mod:`.trec_fast`), and
explaining a number (:mod:`.diagnose`).

``from qrelkit.evaluation import evaluate`` still works: names load from :mod:`.core` on first use.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module(".core", __name__), name)
