"""The measure registry: for each measure family of the grammar, the kernel each engine computes it with,
and its slow oracle. Adding a measure is one :class:`Family` here, beside its kernel, its oracle's
definition and its grammar entry (docs/adding-a-measure.md).

What a family *is* (its name, cutoff, relevance threshold, parameters and their defaults, the convention
axes it may override, its aliases, which judgments it reads) is the grammar's:
:data:`qrelkit.measures.grammar.INFO`, below this layer. What computes it is here.

The engines. Each takes a :class:`~qrelkit.engine.encoding.encoded.Encoded` ranking, so a family's kernel has one
signature, :data:`Kernel`; an engine runs only the families that claim it:

- ``frame``: :func:`qrelkit.evaluation.core.evaluate` and every reader of :func:`evaluate_files` but the
  small one (whole frames, batches of whole queries, streams of top documents, DuckDB's sorted batches);
  the only engine that attaches subtopic judgments, so the only one the diversity measures claim;
- ``small``: the numpy path of small clean TREC files (:mod:`qrelkit.engine.encoding.small`), which steps aside to
  ``frame`` for a family that does not claim it;
- ``spark``: :mod:`qrelkit.evaluation.spark`, the same kernels per partition of whole queries, which
  refuses on the driver a family that does not claim it.

``qrelkit trec_eval`` (:mod:`qrelkit.evaluation.trec_eval`) is not one of them: it computes trec_eval's own
measures, by trec_eval's names, over trec_eval's relevance lists (:mod:`qrelkit.engine.trec.kernels`).

The kernels live in :mod:`qrelkit.engine.kernels.ranked` (qrelkit's first measures), :mod:`qrelkit.engine.kernels.cascade`
(ERR, nERR, RBP), :mod:`qrelkit.engine.trec.measures` (trec_eval 10's measures in the grammar, over
:mod:`qrelkit.engine.trec.kernels`), :mod:`qrelkit.engine.kernels.diversity` (over subtopic judgments) and
:mod:`qrelkit.engine.kernels.compat`; the functions below only read a measure's parameters for the kernels that
take them as arguments. The oracles share no code with the kernels: :mod:`qrelkit.engine.oracles.reference` and
:mod:`qrelkit.engine.oracles.trec` define a family on one ordering (:data:`~qrelkit.engine.oracles.reference.Definition`)
and :func:`~qrelkit.engine.oracles.reference.reference_values` averages it over every ordering of the tied blocks;
:mod:`qrelkit.engine.oracles.diversity` does the same over subtopic judgments; Compat has an oracle of its
own.

Only :mod:`qrelkit.engine.kernels.ranked` and :mod:`qrelkit.engine.kernels.cascade` (the families a default evaluation
computes) are imported with this table; the other kernels' modules and every oracle's load on their first
call (:func:`_later`, :func:`_ordered`): a small evaluation does not pay for trec_eval's kernels, the
diversity measures or the oracles (about 12 ms of imports).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConventionError, ValidationError
from ..measures.conventions import Conventions
from ..measures.grammar import INFO, Measure, MeasureInfo
from .encoding.encoded import Encoded, apply_no_relevant
from .kernels import cascade
from .kernels import ranked as kernels

if TYPE_CHECKING:
    from .oracles import reference

#: Per-query values of one measure and the mask of queries where it is undefined (before ``missing_score``,
#: which :func:`qrelkit.engine.dispatch.compute` applies for every family).
Kernel = Callable[[Encoded, Measure, Conventions], tuple[np.ndarray, np.ndarray]]

#: ``oracle(judgments, run, measure, conventions) -> {query_id: value}``: ``judgments`` maps each query to
#: ``{doc_id: grade}`` (to ``{doc_id: {subtopic: grade}}`` for a family that reads subtopics), ``run``
#: each query to its rows ``(doc_id, score, line)``.
Oracle = Callable[[Any, Mapping[str, list["reference.Row"]], Measure, Conventions], dict[str, float]]

FRAME, SMALL, SPARK = "frame", "small", "spark"
#: The engines, as :data:`Family.kernels` names them.
ENGINES = (FRAME, SMALL, SPARK)
_ENGINE_NAMES = {FRAME: "qrelkit.evaluate", SMALL: "the small-file path", SPARK: "Spark"}


@dataclass(frozen=True)
class Family:
    """One measure family: the kernel of each engine that claims it, and its oracle."""

    name: str
    kernels: Mapping[str, Kernel]  # engine -> kernel, for the engines that claim the family
    oracle: Oracle

    @property
    def info(self) -> MeasureInfo:
        """The grammar's facts: cutoff, ``rel``, parameters and defaults, axes, aliases, judgments."""
        return INFO[self.name]

    @property
    def engines(self) -> frozenset[str]:
        return frozenset(self.kernels)


def _family(name: str, kernel: Kernel, oracle: Oracle, engines: Iterable[str] = ENGINES) -> Family:
    return Family(name, MappingProxyType(dict.fromkeys(engines, kernel)), oracle)


def _module(name: str) -> Any:
    """``qrelkit.engine.<name>``, imported on first use."""
    return importlib.import_module(f"{__package__}.{name}")


def _later(module: str, name: str) -> Kernel:
    """The kernel ``name`` of ``qrelkit.engine.<module>``, whose module loads on the kernel's first call."""
    found: list[Kernel] = []

    def kernel(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
        if not found:
            found.append(getattr(_module(module), name))
        return found[0](enc, m, conv)

    kernel.__qualname__ = kernel.__name__ = f"{module}.{name}"
    return kernel


def _ordered(definition: str, module: str = "oracles.reference") -> Oracle:
    """The oracle that averages the definition ``name`` of ``qrelkit.engine.<module>`` over every ordering
    the tie convention admits."""

    def oracle(
        judgments: Any, run: Mapping[str, list[reference.Row]], measure: Measure, conventions: Conventions
    ) -> dict[str, float]:
        values: dict[str, float] = _module("oracles.reference").reference_values(
            judgments, dict(run), measure, conventions, definition=getattr(_module(module), definition)
        )
        return values

    return oracle


def _over_subtopics(definition: str) -> Oracle:
    def oracle(
        judgments: Any, run: Mapping[str, list[reference.Row]], measure: Measure, conventions: Conventions
    ) -> dict[str, float]:
        subtopics = _module("oracles.diversity")
        values: dict[str, float] = subtopics.diversity_reference_values(
            judgments, dict(run), measure, conventions, definition=getattr(subtopics, definition)
        )
        return values

    return oracle


def _compat_oracle(
    judgments: Any, run: Mapping[str, list[reference.Row]], measure: Measure, conventions: Conventions
) -> dict[str, float]:
    values: dict[str, float] = _module("oracles.reference").compat_reference_values(
        judgments, dict(run), measure, conventions
    )
    return values


# ------------------------------------------------------------------ the measure's parameters, for the kernels


def _none(enc: Encoded) -> np.ndarray:
    return np.zeros(enc.n_queries, dtype=bool)


def _k(measure: Measure) -> int:
    """The cutoff of a family whose cutoff is required (parse() never builds one without it)."""
    if measure.k is None:
        raise AssertionError(f"{measure.name} without its cutoff: parse() never builds one")
    return measure.k


def _rel(measure: Measure) -> int:
    """The threshold of a family that uses ``rel`` (``rel=1`` unless given: parse() always sets it)."""
    if measure.rel is None:
        raise AssertionError(f"{measure.name} without its relevance threshold: parse() never builds one")
    return measure.rel


def _ndcg(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.ndcg(enc, m.k, conv)


def _dcg(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.dcg(enc, m.k, conv), _none(enc)


def _idcg(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.idcg(enc, m.k, conv), _none(enc)


def _ncg(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.ncg(enc, m.k, conv)


def _recall(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.recall(enc, m.k, _rel(m), conv)


#: P@k, RR, AP and RBP under ``--profile cwl_eval``: cwl_eval's C/W/L classes (engine/kernels/cwl.py)
_CWL_PROFILE = _later("kernels.cwl", "under_profile")


def _precision(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    if conv.profile == "cwl_eval":
        return _CWL_PROFILE(enc, m, conv)
    return kernels.precision(enc, m.k, _rel(m), conv), _none(enc)


_SET_P = _later("trec.measures", "set_p")


def _set_p(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """SetP (trec_eval's set_P); ``SetP@k`` only under a profile whose tool reads it as ``P@k``
    (:data:`qrelkit.measures.profiles.SET_AT_CUTOFF_AS_TOP_K`), else refused with the fix."""
    if m.k is None:
        return _SET_P(enc, m, conv)
    from ..measures.profiles import SET_AT_CUTOFF_AS_TOP_K

    if conv.profile not in SET_AT_CUTOFF_AS_TOP_K:
        raise ConventionError(
            f"{m} is a set measure with a cutoff: only the ranx profiles read it (as P@{m.k}, as ranx does)",
            fix=f"write P(rel={_rel(m)})@{m.k} for precision at {m.k}, or SetP(rel={_rel(m)}) for the whole set",
        )
    return _precision(enc, m, conv)


def _f1(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.f1(enc, m.k, _rel(m), conv)


def _ap(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    if conv.profile == "cwl_eval":
        return _CWL_PROFILE(enc, m, conv)
    return kernels.average_precision(enc, m.k, _rel(m), conv)


def _rr(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    if conv.profile == "cwl_eval":
        return _CWL_PROFILE(enc, m, conv)
    return kernels.reciprocal_rank(enc, m.k, _rel(m), conv)


def _rprec(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """P@R, or with ``mult`` other than 1 trec_eval's Rprec_mult."""
    rel = _rel(m)
    if dict(m.params).get("mult", "1") == "1":
        return kernels.rprec(enc, rel, conv)
    nrel = kernels.relevant_count(enc, rel, conv)
    values = _module("trec.measures").rprec_mult(enc, rel, float(m.param("mult")), conv)
    return apply_no_relevant(values, nrel == 0, conv)


def _fallout(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.fallout(enc, m.k, _rel(m), conv)


def _judged(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.judged_at(enc, m.k, conv), _none(enc)


def _accuracy(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.accuracy(enc, m.k, _rel(m), conv)


def _num_q(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """NumQ: 1 for every scored query."""
    return np.ones(enc.n_queries, dtype=np.float64), _none(enc)


def _num_rel(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.num_relevant(enc, _rel(m)), _none(enc)


def _num_ret(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.num_ret(enc, m.k), _none(enc)


def _num_rel_ret(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return kernels.rel_in_top(enc, m.k, _rel(m)), _none(enc)


def _err(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return cascade.err(enc, m.k, conv)


def _nerr(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return cascade.nerr(enc, m.k, conv)


def _rbp(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    if conv.profile == "cwl_eval":
        return _CWL_PROFILE(enc, m, conv)
    return cascade.rbp(enc, m.k, _rel(m), conv)


def _rbp_resid(enc: Encoded, m: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    return cascade.rbp_resid(enc, m.k, conv), _none(enc)


# ------------------------------------------------------------------------------------------------ the table


def _trec(kernel: str, definition: str | None = None) -> tuple[Kernel, Oracle]:
    """A family of trec_eval 10's measures: its kernel in trec.measures, its definition in oracles.trec."""
    return _later("trec.measures", kernel), _ordered(definition or kernel, "oracles.trec")


#: Every family of the grammar, in the grammar's order (tests/engine/test_registry.py holds the two equal).
REGISTRY: Mapping[str, Family] = MappingProxyType(
    {
        f.name: f
        for f in [
            _family("nDCG", _ndcg, _ordered("ndcg")),
            _family("DCG", _dcg, _ordered("dcg")),
            _family("IDCG", _idcg, _ordered("idcg")),
            _family("NCG", _ncg, _ordered("ncg")),
            _family("R", _recall, _ordered("recall")),
            _family("P", _precision, _ordered("precision")),
            _family("F1", _f1, _ordered("f1")),
            _family("AP", _ap, _ordered("average_precision")),
            _family("RR", _rr, _ordered("reciprocal_rank")),
            _family("Rprec", _rprec, _ordered("rprec")),
            _family("FallOut", _fallout, _ordered("fallout")),
            _family("Judged", _judged, _ordered("judged")),
            _family("NumRel", _num_rel, _ordered("num_rel")),
            _family("NumRet", _num_ret, _ordered("num_ret")),
            _family("NumRelRet", _num_rel_ret, _ordered("num_rel_ret")),
            _family("NumQ", _num_q, _ordered("num_q")),
            _family("Accuracy", _accuracy, _ordered("accuracy")),
            # cascade measures (engine/kernels/cascade.py)
            _family("ERR", _err, _ordered("err")),
            _family("nERR", _nerr, _ordered("nerr")),
            _family("RBP", _rbp, _ordered("rbp")),
            _family("RBP_resid", _rbp_resid, _ordered("rbp_resid")),
            _family("Compat", _later("kernels.compat", "compat"), _compat_oracle),
            # the C/W/L family, as cwl_eval computes it (engine/kernels/cwl.py)
            _family("INST", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("INSQ", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("BPM", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("NERR8", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("NERR9", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("NERR10", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("NERR11", _later("kernels.cwl", "compute"), _ordered("cwl")),
            _family("SDCG", _later("kernels.cwl", "compute"), _ordered("cwl")),
            # over subtopic judgments, which only the frame engine attaches (engine/kernels/diversity.py)
            _family(
                "alpha_nDCG", _later("kernels.diversity", "compute"), _over_subtopics("alpha_ndcg"), [FRAME]
            ),
            _family("ERR_IA", _later("kernels.diversity", "compute"), _over_subtopics("err_ia_at"), [FRAME]),
            # trec_eval 10's measures in the grammar (engine/trec/measures.py)
            _family("Success", *_trec("success")),
            _family("bpref", *_trec("bpref")),
            _family("infAP", *_trec("inf_ap")),
            _family("IPrec", *_trec("iprec")),
            _family("IPrecMean", *_trec("iprec_mean")),
            _family("SetP", _set_p, _trec("set_p")[1]),
            _family("SetRelP", *_trec("set_rel_p")),
            _family("SetAP", *_trec("set_ap")),
            _family("SetF", *_trec("set_f")),
            _family("RelP", *_trec("rel_p")),
            _family("Utility", *_trec("utility")),
            _family("NumNonRelJudgedRet", *_trec("num_nonrel_judged_ret")),
            _family("Unjudged", *_trec("unjudged")),
            _family("binG", *_trec("bin_g")),
            _family("G", *_trec("g")),
            _family("nDCGRel", *_trec("ndcg_rel")),
            _family("RnDCG", *_trec("rndcg")),
        ]
    }
)


def kernel(measure: Measure, engine: str = FRAME) -> Kernel:
    """The kernel ``engine`` computes ``measure`` with (:func:`refuse_unclaimed` words the error)."""
    kernels_of = REGISTRY[measure.name].kernels
    if engine not in kernels_of:
        refuse_unclaimed([measure], engine)
    return kernels_of[engine]


def claims(measure: Measure, engine: str) -> bool:
    """Whether ``engine`` computes ``measure``'s family."""
    return engine in REGISTRY[measure.name].kernels


def refuse_unclaimed(measures: Iterable[Measure], engine: str) -> None:
    """Refuse the measures whose family ``engine`` does not compute, naming the engines that do."""
    bad = [m for m in measures if not claims(m, engine)]
    if not bad:
        return
    first = REGISTRY[bad[0].name]
    where = " or ".join(_ENGINE_NAMES[e] for e in ENGINES if e in first.engines)
    if first.info.judgments == "subtopics":
        where += " on diversity judgments (qrelkit eval --diversity)"
    raise ValidationError(
        f"{', '.join(str(m) for m in bad)} cannot be computed on {_ENGINE_NAMES.get(engine, engine)}",
        fix=f"evaluate {'them' if len(bad) > 1 else 'it'} with {where}",
    )


def oracle_values(
    judgments: Any, run: Mapping[str, list[reference.Row]], measure: Measure, conventions: Conventions
) -> dict[str, float]:
    """The slow oracle's per-query values of ``measure`` (its family's :attr:`Family.oracle`), rounded to
    the measure's ``printed_decimals`` by :func:`qrelkit.engine.oracles.reference.printed`."""
    values = REGISTRY[measure.name].oracle(judgments, run, measure, conventions)
    decimals = measure.conventions(conventions).printed_decimals
    if decimals is None:
        return values
    from .oracles.reference import printed

    return {q: printed(v, decimals) for q, v in values.items()}
