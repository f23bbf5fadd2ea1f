"""The one builder of the provenance header that every file qrelkit writes carries.

Every output (results, comparisons, agreement reports, pools, qrels manifests, convention sweeps)
starts from :func:`header`: the tool that wrote it under the key ``tool`` (``{"name": "qrelkit",
"version": ...}``), and any named inputs with their fingerprints. A module that writes a file adds its own
fields after these; it never spells the tool or version another way.

An undefined number (NaN: a kappa with no pairs, a p-value of no queries) and an infinite one (an effect
size of a constant non-zero difference) are written as JSON ``null``, which :func:`json_number` gives:
JSON has no NaN or infinity, and every JSON document qrelkit writes goes through it for its floats.
"""

from __future__ import annotations

import math
from typing import Any

from ._version import __version__

__all__ = ["header", "json_number", "tool"]


def tool() -> dict[str, str]:
    """``{"name": "qrelkit", "version": ...}``: who wrote the file."""
    return {"name": "qrelkit", "version": __version__}


def header(**fields: Any) -> dict[str, Any]:
    """``{"tool": ..., **fields}``: the start of every provenance record, in this key order."""
    return {"tool": tool(), **fields}


def json_number(x: Any) -> float | None:
    """``x`` as a JSON number: ``None`` for ``None``, NaN and +-infinity, else ``float(x)``."""
    if x is None:
        return None
    value = float(x)
    return value if math.isfinite(value) else None
