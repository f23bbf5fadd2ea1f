"""qrelkit's kernels over ``Encoded`` arrays: the ranked-list measures, the cascade measures, the diversity measures and compatibility."""

from typing import Any


def __getattr__(name: str) -> Any:
    """The names of :mod:`.ranked`, which was ``qrelkit.engine.kernels`` before the kernels were grouped:
    ``from qrelkit.engine.kernels import dcg`` and pickles of its functions still resolve."""
    import importlib

    ranked = importlib.import_module(f"{__name__}.ranked")  # (not `from . import`: that asks this hook first)
    try:
        return getattr(ranked, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
