"""How far labellers agree: the statistics the gate before full judging is decided on.

- :mod:`.kappa`: two labellers: weighted Cohen's kappa, its intervals, Krippendorff's alpha, the gate
  statistic.
- :mod:`.group`: two or more labellers: Fleiss' kappa, the pairwise kappa matrix, alpha over a group.
- :mod:`.resample`: every random draw over queries in qrelkit (agreement's query bootstrap and
  comparison's draws) and their defaults.

``from qrelkit.agreement import cohen_kappa`` still works: names load from :mod:`.kappa` on first use.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module(".kappa", __name__), name)
