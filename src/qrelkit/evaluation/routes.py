"""The routes of :mod:`qrelkit.evaluation.plan`: the readers each route tries, in order. A table of its own,
importing nothing, so that ``qrelkit trec_eval``'s start-up (:func:`qrelkit.evaluation.trec_lean.lean_route`)
reads its route without the planner's imports; :mod:`~qrelkit.evaluation.plan` and its tests read it as
``plan.ROUTES``."""

#: The readers each route tries, in order (the names are those of :mod:`qrelkit.formats.trec`;
#: ``trec_native``, ``trec_lean`` and ``trec_fast`` are ``qrelkit trec_eval``'s:
#: :mod:`qrelkit.evaluation.trec_native`, one native call, and :mod:`qrelkit.evaluation.trec_lean`, without
#: numpy, then :mod:`qrelkit.evaluation.trec_fast`).
ROUTES: dict[str, tuple[str, ...]] = {
    "readers": ("small", "native", "arrow", "robust", "duckdb"),
    "whole": ("native", "arrow", "robust"),
    "diversity": ("diversity", "native", "arrow", "robust"),
    "spark": ("native", "arrow", "robust", "parquet", "table"),
    "trec_eval": ("trec_native", "trec_lean", "trec_fast", "native", "arrow", "robust"),
}
