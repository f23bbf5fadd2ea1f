"""qrelkit: trustworthy graded-relevance evaluation for search and RAG retrieval."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
