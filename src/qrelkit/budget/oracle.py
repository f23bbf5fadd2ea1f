"""The oracle: the one holder of the people's grades in a replay.

A strategy never sees it. The replay asks it for the grades of the pairs a strategy selected; it reveals
those and nothing else, and counts every distinct pair it has revealed (a pair bought twice is paid once).
With a ``limit`` it refuses to reveal more distinct pairs than that: the budget is a hard bound, not a
target the loop is trusted to respect.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError


class Oracle:
    """Holds the people's grades; reveals one only when bought and counts every pair revealed."""

    def __init__(self, grades: np.ndarray, limit: int | None = None) -> None:
        self._grades = np.array(grades, dtype=np.int64, copy=True)
        self._grades.setflags(write=False)
        self._revealed = np.zeros(len(self._grades), dtype=bool)
        self._limit = limit
        self.spent = 0

    @property
    def n_pairs(self) -> int:
        return len(self._grades)

    def revealed(self) -> np.ndarray:
        """bool [pairs]: which pairs have been bought (a copy)."""
        return self._revealed.copy()

    def buy(self, pairs: np.ndarray) -> np.ndarray:
        """int grades of those pair indices; a pair bought twice is counted once."""
        idx = np.asarray(pairs)
        if idx.ndim != 1 or (len(idx) and not np.issubdtype(idx.dtype, np.integer)):
            raise ValidationError("pairs to buy must be a vector of pair indices", got=idx.dtype)
        idx = idx.astype(np.int64, copy=False)
        if len(idx) and (idx.min() < 0 or idx.max() >= len(self._grades)):
            bad = int(idx[(idx < 0) | (idx >= len(self._grades))][0])
            raise ValidationError(f"pair index {bad} is not a pooled pair (0..{len(self._grades) - 1})")
        new = np.unique(idx[~self._revealed[idx]])
        if self._limit is not None and self.spent + len(new) > self._limit:
            raise ValidationError(
                f"buying {len(new)} more pairs would spend {self.spent + len(new)}, past the budget of {self._limit}"
            )
        self._revealed[new] = True
        self.spent += len(new)
        out: np.ndarray = self._grades[idx].copy()
        return out
