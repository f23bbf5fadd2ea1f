"""The one builder of the provenance header that every file qrelkit writes carries.

Every output (results, comparisons, agreement reports, pools, qrels manifests, convention sweeps)
starts from :func:`header`: the tool that wrote it under the key ``tool`` (``{"name": "qrelkit",
"version": ...}``), and any named inputs with their fingerprints. A module that writes a file adds its own
fields after these; it never spells the tool or version another way.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = ["header", "tool"]


def tool() -> dict[str, str]:
    """``{"name": "qrelkit", "version": ...}``: who wrote the file."""
    return {"name": "qrelkit", "version": __version__}


def header(**fields: Any) -> dict[str, Any]:
    """``{"tool": ..., **fields}``: the start of every provenance record, in this key order."""
    return {"tool": tool(), **fields}
