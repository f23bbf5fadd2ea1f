"""Which kernel computes a measure: :mod:`qrelkit.engine.kernels` for qrelkit's first measures,
:mod:`qrelkit.engine.trec_measures` for trec_eval 10's (and ``Rprec(mult=...)``, trec_eval's Rprec_mult),
:mod:`qrelkit.engine.diversity` for the measures over subtopic judgments, :mod:`qrelkit.engine.compat` for
Compat.
Every engine (the columnar path, the small path, Spark) calls :func:`compute` here."""

from __future__ import annotations

import numpy as np

from ..measures.conventions import Conventions
from ..measures.grammar import Measure
from . import compat, diversity, kernels, trec_measures
from .encoded import Encoded, apply_no_relevant


def compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one measure and the mask of queries where it was undefined; under
    ``missing_score = "zero"`` judged queries the run lacks score 0 whatever the measure."""
    values, undefined = _compute(enc, measure, conv)
    if conv.missing_score == "zero" and not enc.queries.in_run.all():
        absent = ~enc.queries.in_run
        values = np.where(absent, 0.0, values)
        undefined = undefined & ~absent
    return values, undefined


def _compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    if measure.name == "Compat":
        return compat.compat(enc, measure, conv)
    if measure.name in diversity.NAMES:
        return diversity.compute(enc, measure, conv)
    if measure.name in trec_measures.NAMES:
        return trec_measures.compute(enc, measure, conv)
    if measure.name == "Rprec" and dict(measure.params).get("mult", "1") != "1":
        rel = measure.rel if measure.rel is not None else 1
        nrel = kernels.relevant_count(enc, rel, conv)
        values = trec_measures.rprec_mult(enc, rel, float(measure.param("mult")), conv)
        return apply_no_relevant(values, nrel == 0, conv)
    return kernels.compute(enc, measure, conv)
