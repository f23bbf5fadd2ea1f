"""The version, in one place: the package, the build (``pyproject.toml`` reads it from here) and every
file qrelkit writes take it from this module; and what ``qrelkit --version`` prints, which
``qrelkit.__main__`` answers before the command line (click) loads."""

from __future__ import annotations

import sys

__version__ = "0.1.0"


def version_lines() -> list[str]:
    """What ``qrelkit --version`` prints: the version, the Python running it, and whether the native
    scanner (:mod:`qrelkit._native`) is in use or why not."""
    import os

    from . import _native

    library = os.path.join(os.path.dirname(os.path.abspath(_native.__file__)), _native.LIBRARY)
    if _native.lib is not None:
        scanner = f"in use ({library})"
    elif os.environ.get("QRELKIT_NATIVE", "1") == "0":
        scanner = "not in use (turned off: QRELKIT_NATIVE=0)"
    elif not os.path.isfile(library):
        scanner = (
            "not built (no C compiler when qrelkit was installed); files are parsed with Arrow, same numbers"
        )
    else:
        scanner = f"not in use ({library} did not load or is from another version of its C sources)"
    return [
        f"qrelkit {__version__}",
        f"Python {sys.version.split()[0]} ({_implementation()}, {sys.executable})",
        f"native scanner: {scanner}",
    ]


def _implementation() -> str:
    """``platform.python_implementation()`` without importing platform (and re): 11 ms of ``--version``."""
    name = sys.implementation.name
    if name == "cpython":
        return "CPython"
    import platform

    return platform.python_implementation()
