"""The version, in one place: the package, the build (``pyproject.toml`` reads it from here) and every
file qrelkit writes take it from this module."""

__version__ = "0.1.0"
