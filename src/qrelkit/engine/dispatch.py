"""Which kernel computes a measure: the one :data:`qrelkit.engine.registry.REGISTRY` names for the
measure's family and the engine. Every engine (the frame path, the small path, Spark) calls
:func:`compute` here."""

from __future__ import annotations

import numpy as np

from ..measures.conventions import Conventions
from ..measures.grammar import Measure
from .encoded import Encoded
from .registry import FRAME, kernel


def compute(
    enc: Encoded, measure: Measure, conv: Conventions, engine: str = FRAME
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one measure and the mask of queries where it was undefined; under
    ``missing_score = "zero"`` judged queries the run lacks score 0 whatever the measure."""
    values, undefined = kernel(measure, engine)(enc, measure, conv)
    if conv.missing_score == "zero" and not enc.queries.in_run.all():
        absent = ~enc.queries.in_run
        values = np.where(absent, 0.0, values)
        undefined = undefined & ~absent
    return values, undefined
