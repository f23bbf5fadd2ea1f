"""The small path's value: one clean TREC file as numpy columns, made by
:mod:`qrelkit.formats.trec.small` and ranked by :mod:`qrelkit.engine.encoding.small` (numpy only, so a small
evaluation loads no dataframe library)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..fingerprint import Fingerprint

__all__ = ["Columns"]


@dataclass(frozen=True)
class Columns:
    """One clean TREC file as columns, line = row + 1.

    Document ids are kept as big-endian 64-bit words of their zero-padded bytes: rows compare equal when
    all words are equal, and compare in byte order (the order of the strings) word by word."""

    query: np.ndarray  # S: fixed-width bytes
    query_change: np.ndarray  # bool: the row starts a new stretch of one query id
    doc_words: np.ndarray  # uint64, shape (rows, words)
    doc_hash: np.ndarray  # uint64
    number: np.ndarray  # score (float64) for runs, grade (int64) for judgments
    tag: bytes | None
    fingerprint: Fingerprint
    source: str
    trailing: int = 0  # run lines with fields after the sixth, ignored (the native split only)

    @property
    def rows(self) -> int:
        return len(self.query)

    def take(self, rows: np.ndarray) -> Columns:
        """The columns of ``rows`` (indices, in the order given)."""
        query = self.query[rows]
        change = np.ones(len(query), dtype=bool)
        change[1:] = query[1:] != query[:-1]
        words, hashes, number = self.doc_words[rows], self.doc_hash[rows], self.number[rows]
        return Columns(query, change, words, hashes, number, self.tag, self.fingerprint, self.source)
