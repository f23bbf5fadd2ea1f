"""Which kernel computes a measure: the one :data:`qrelkit.engine.registry.REGISTRY` names for the
measure's family and the engine. Every engine (the frame path, the small path, the batches of a large or
streamed run, DuckDB's, Spark) calls :func:`compute` here, which is also the one place where per-query
values are rounded to the decimals a tool prints (``printed_decimals``)."""

from __future__ import annotations

import numpy as np

from ..measures.conventions import Conventions
from ..measures.grammar import Measure
from .encoding.encoded import Encoded
from .registry import FRAME, kernel


def compute(
    enc: Encoded, measure: Measure, conv: Conventions, engine: str = FRAME
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one measure and the mask of queries where it was undefined; under
    ``missing_score = "zero"`` judged queries the run lacks score 0 whatever the measure, and under
    ``printed_decimals = d`` every value is rounded to d decimals (:func:`printed`)."""
    values, undefined = kernel(measure, engine)(enc, measure, conv)
    if conv.missing_score == "zero" and not enc.queries.in_run.all():
        absent = ~enc.queries.in_run
        values = np.where(absent, 0.0, values)
        undefined = undefined & ~absent
    if conv.printed_decimals is not None:
        values = printed(values, conv.printed_decimals)
    return values, undefined


def printed(values: np.ndarray, decimals: int) -> np.ndarray:
    """Each value as a tool that prints it with ``printf("%.<decimals>f")`` and reads the text back with
    ``float()`` gets it: ``float(f"{v:.{decimals}f}")``. Python, C and perl all convert the double itself
    to decimal correctly rounded (an exact half to the even digit: 0.015625 prints as 0.01562), which
    ``np.round`` (a multiplication, a rounding, a division) does not always do."""
    spec = f".{decimals}f"
    return np.array([float(format(v, spec)) for v in values.tolist()], dtype=np.float64)
