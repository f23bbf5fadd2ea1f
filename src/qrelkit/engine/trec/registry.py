"""trec_eval 10's measures, by trec_eval's names, and what computes each: the one table of
``qrelkit trec_eval``'s kernel families, shaped as :data:`qrelkit.engine.registry.REGISTRY` is (a family's
kernel per engine, and its oracle).

The engines:

- ``numpy``: :mod:`qrelkit.engine.trec.kernels`, over :class:`~qrelkit.engine.trec.kernels.RelLists`
  (:mod:`qrelkit.evaluation.trec_eval`, :mod:`qrelkit.evaluation.trec_fast`); every measure has one;
- ``lean``: :mod:`qrelkit.engine.trec.lean_kernels`, the same arithmetic in plain Python over lists
  (:mod:`qrelkit.evaluation.trec_lean`, small files before numpy loads); a measure without one is
  marked ``lean=False``, and then the lean path steps aside to the numpy one.

A kernel has the same name in both modules (``trec_kernels.ap`` and ``trec_lean_kernels.ap``: ``map``'s
and ``map_cut``'s), so a row names it once; ``call`` says how the measure's parameters reach it
(:func:`measure_values`). The oracle is the family of qrelkit's grammar the measure is
(:func:`qrelkit.measures.trec_names.qrelkit_measures`), whose slow definition
:data:`qrelkit.engine.registry.REGISTRY` names; ``None`` for relstring, which is not a number (the
differential test against trec_eval's binary checks it). ``tests/engine/test_trec_registry.py`` holds this
table to trec_names' and to both kernel modules.

Adding a trec_eval measure: its row in ``trec_names._SPECS`` (how trec_eval spells it), its row here, its
numpy kernel in ``trec_kernels`` and, beside it under the same name, its plain-Python one in
``trec_lean_kernels`` (or ``lean=False``) (docs/adding-a-measure.md).

Imports nothing at load: ``qrelkit trec_eval``'s start-up reads it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the lean path's start-up a few milliseconds
if TYPE_CHECKING:
    from typing import Any

NUMPY, LEAN = "numpy", "lean"
#: The engines, as :attr:`TrecFamily.engines` names them.
ENGINES = (NUMPY, LEAN)


class TrecFamily:
    """One trec_eval measure: its kernel's name (in each engine's module), how it is called, whether the
    lean engine has it, its oracle's family in qrelkit's grammar, and whether trec_eval zeroes it for a
    judged query missing from the run (scored on its one-document stand-in ranking)."""

    __slots__ = ("call", "kernel", "lean", "name", "oracle", "reset_for_stand_in")

    def __init__(
        self,
        name: str,
        kernel: str,
        call: str,
        oracle: str | None,
        *,
        lean: bool = True,
        reset_for_stand_in: bool = False,
    ) -> None:
        self.name, self.kernel, self.call, self.oracle = name, kernel, call, oracle
        self.lean, self.reset_for_stand_in = lean, reset_for_stand_in

    @property
    def engines(self) -> tuple[str, ...]:
        return ENGINES if self.lean else (NUMPY,)

    def __repr__(self) -> str:
        return f"TrecFamily({self.name!r}, {self.kernel!r}, {self.call!r}, {self.oracle!r}, lean={self.lean})"


_T = TrecFamily

#: Every trec_eval measure a kernel computes, in trec_eval's order (``trec_names.ORDER`` less ``runid`` and
#: ``num_q``, which the output itself writes).
TREC_REGISTRY: dict[str, TrecFamily] = {
    f.name: f
    for f in [
        _T("num_ret", "num_ret", "single", "NumRet", reset_for_stand_in=True),
        _T("num_rel", "num_rel", "single", "NumRel"),
        _T("num_rel_ret", "num_rel_ret", "single", "NumRelRet"),
        _T("map", "ap", "single", "AP"),
        _T("gm_map", "gm_ap_log", "single", "AP"),
        _T("Rprec", "rprec", "single", "Rprec"),
        _T("bpref", "bpref", "single", "bpref"),
        _T("recip_rank", "recip_rank", "single", "RR"),
        _T("iprec_at_recall", "iprec_at_recall", "levels", "IPrec"),
        _T("P", "precision", "cut", "P"),
        _T("relstring", "relstring", "length", None),
        _T("recall", "recall", "cut", "R"),
        _T("infAP", "infap", "single", "infAP"),
        _T("gm_bpref", "gm_bpref_log", "single", "bpref"),
        _T("Rprec_mult", "rprec_mult", "fractions", "Rprec"),
        _T("utility", "utility", "utility", "Utility", reset_for_stand_in=True),
        _T("11pt_avg", "pt_avg", "levels_mean", "IPrecMean"),
        _T("binG", "bin_g", "single", "binG"),
        _T("G", "g_measure", "gains", "G"),
        _T("ndcg", "ndcg", "gains", "nDCG"),
        _T("ndcg_rel", "ndcg_rel", "gains", "nDCGRel"),
        _T("Rndcg", "rndcg", "gains", "RnDCG"),
        _T("ndcg_cut", "ndcg_cut", "cut", "nDCG"),
        _T("map_cut", "ap", "cut", "AP"),
        _T("relative_P", "relative_precision", "cut", "RelP"),
        _T("success", "success", "cut", "Success"),
        _T("set_P", "set_p", "single", "SetP"),
        _T("set_relative_P", "set_relative_p", "single", "SetRelP"),
        _T("set_recall", "set_recall", "single", "R"),
        _T("set_map", "set_map", "single", "SetAP"),
        _T("set_F", "set_f", "beta", "SetF"),
        _T("num_nonrel_judged_ret", "num_nonrel_judged_ret", "single", "NumNonRelJudgedRet"),
        _T("rbp", "rbp", "rbp", "RBP"),
        _T("rbp_resid", "rbp_resid", "persistence", "RBP_resid", reset_for_stand_in=True),
        _T("unj", "unjudged", "cut", "Unjudged", reset_for_stand_in=True),
    ]
}

#: The measures the lean engine computes (``runid`` and ``num_q`` are the output's own).
LEAN_MEASURES = frozenset({"runid", "num_q", *(name for name, f in TREC_REGISTRY.items() if f.lean)})


def kernels(engine: str) -> Any:
    """The module of ``engine``'s kernels, imported on first use (numpy's only when asked for)."""
    if engine == LEAN:
        from . import lean_kernels as trec_lean_kernels

        return trec_lean_kernels
    from . import kernels as trec_kernels

    return trec_kernels


def measure_values(engine: str, lists: Any, m: Any, num_docs: int = 0) -> list[tuple[str, Any]]:
    """(printed name, per-query values) of the selected trec_eval measure ``m``
    (:class:`~qrelkit.measures.trec_names.TrecMeasure`) by ``engine``'s kernel, over that engine's lists.
    The lean engine raises :class:`~qrelkit.errors.StepAside` for a measure it does not have."""
    family = TREC_REGISTRY[m.name]
    if engine == LEAN and not family.lean:
        from ...errors import StepAside

        raise StepAside
    module = kernels(engine)
    kernel = getattr(module, family.kernel)
    names = m.printed_names()
    call = family.call
    if call == "single":
        return [(names[0], kernel(lists))]
    if call == "cut":
        return [(name, kernel(lists, k)) for name, k in zip(names, m.cutoffs, strict=True)]
    if call == "fractions":
        return [(name, kernel(lists, v)) for name, v in zip(names, m.fractions, strict=True)]
    if call == "levels":  # one call for every level; -nan where nothing is returned (nan_on_empty)
        values = kernel(lists, m.fractions)
        return [
            (name, module.nan_on_empty(lists, v, [f]))
            for name, v, f in zip(names, values, m.fractions, strict=True)
        ]
    if call == "levels_mean":
        return [(names[0], module.nan_on_empty(lists, kernel(lists, m.values), m.values))]
    if call == "utility":
        a, b, c, d = m.values
        return [(names[0], kernel(lists, a, b, c, d, num_docs))]
    if call == "beta":
        return [(names[0], kernel(lists, m.values[0]))]
    if call == "length":
        return [(names[0], kernel(lists, int(m.values[0])))]
    if call == "gains":
        return [(names[0], kernel(lists, module.gains_of(_gain_pairs(m))))]
    if call == "rbp":
        return [(names[0], kernel(lists, _persistence(m), module.gains_of(_gain_pairs(m))))]
    if call == "persistence":
        return [(names[0], kernel(lists, _persistence(m)))]
    raise AssertionError(f"no call {call!r} for {m.name}")  # tests/engine/test_trec_registry.py


def _gain_pairs(m: Any) -> tuple[tuple[int, float], ...]:
    """gain_init.c's ``grade=gain`` pairs of the measure's parameters (other names are not grades)."""
    return tuple((int(key), value) for key, value in m.pairs if key.lstrip("+-").isdigit())


def _persistence(m: Any) -> float:
    """rbp's ``p=`` (0.9 unless given)."""
    return next((v for k, v in m.pairs if k == "p"), 0.9)
