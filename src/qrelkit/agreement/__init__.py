"""How far labellers agree: the statistics the gate before full judging is decided on.

- :mod:`.kappa`: two labellers: weighted Cohen's kappa, its intervals, Krippendorff's alpha, the gate
  statistic.
- :mod:`.group`: two or more labellers: Fleiss' kappa, the pairwise kappa matrix, alpha over a group.
- :mod:`.resample`: every random draw over queries in qrelkit (agreement's query bootstrap and
  comparison's draws) and their defaults.
- :mod:`.ranking`: two orders of the same items (runs by a measure under two sets of grades): Kendall's
  tau-b, tau_AP, their query-bootstrap intervals, the pairs that flip.

``from qrelkit.agreement import cohen_kappa`` still works: names load from :mod:`.kappa` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees of the old names
    from .kappa import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":  # `from ... import *` takes the old module's names
        raise AttributeError(name)
    module = importlib.import_module(".kappa", __name__)
    return _public(module) if name == "__all__" else getattr(module, name)


def _public(module: Any) -> list[str]:
    """The names ``from ... import *`` took from the module these names come from."""
    return list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))
