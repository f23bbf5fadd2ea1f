"""Measures as typed values with a small grammar: ``nDCG@10``, ``nDCG(gain=linear,ties=docid_desc)@10``,
``R(rel=2)@100``.

A :class:`Measure` is a name, an optional cutoff ``k``, the relevance threshold ``rel`` for binary measures,
and any convention overrides. ``str(parse(s))`` is the canonical form: it always prints ``rel`` where the
measure has one (``R@100`` prints as ``R(rel=1)@100``) and every override given; the remaining conventions
are those of the evaluation, written in full beside the numbers. ``Measure.describe(conventions)`` prints
every parameter, defaults included. ``parse(str(m)) == m`` always holds.

Definitions (k = cutoff; rel = grade >= threshold; R = number of relevant judged documents):

==========  ==============================================================================================
nDCG@k      DCG@k / IDCG@k
DCG@k       sum over ranks i <= k of gain(grade_i) / log_b(i + 1)
IDCG@k      DCG@k of the ideal ordering (see the ``ideal`` convention)
NCG@k       sum over ranks i <= k of gain(grade_i), over the same sum for the ideal ordering (TREC Deep
            Learning's normalised cumulative gain: nDCG without the discount)
R@k         relevant documents in the top k / R (recall; under ``ideal=returned`` R counts the relevant
            documents returned; under ``nonpositive=not_retrieved`` one scored <= 0 is never retrieved)
P@k         relevant documents in the top k / k (trec_eval's denominator: k, even if fewer were returned;
            ``cutoff_denominator=returned``: min(k, returned)); P without a cutoff: relevant returned /
            returned (ranx's ``precision``)
F1, F1@k    2 P R / (P + R) of P@k and R@k, i.e. 2 h / (k + R) with h relevant in the top k (ranx's ``f1``;
            without a cutoff k is the number returned); 0 where h = 0, undefined where R = 0
AP, AP@k    sum over relevant documents at ranks i <= k of P@i, divided by R (trec_eval's map and map_cut;
            ``ap_denominator=retrieved``: by the relevant documents retrieved within k, as torchmetrics)
RR, RR@k    1 / rank of the first relevant document (0 when none within k)
Rprec       P@R
FallOut@k   non-relevant documents in the top k / N, the non-relevant documents known: the judged ones and
            the returned unjudged ones (``ideal=returned``: the returned ones); lower is better
Judged@k    judged documents in the top k / k (``cutoff_denominator=returned``: min(k, returned));
            ``Judged``: judged documents returned / documents returned (0 when none is)
NumRel      R
NumRet@k    documents returned (in the top k)
NumRelRet@k relevant documents returned (in the top k)
NumQ        1 for every scored query: under ``counts=sum`` the number of queries (ir_measures' NumQ)
Accuracy@k  1 - S / (N R) over the returned documents in the top k: R relevant, N not (unjudged ones
            included), S the non-relevant documents ranked above each relevant one, summed (ir_measures'
            Accuracy); undefined where R or N is 0
ERR@k       sum over ranks i <= k of R_i / i * prod_{j < i} (1 - R_j), R = (2^g - 1) / 2^max_grade (gdeval)
nERR@k      ERR@k / ERR@k of the ideal ordering (the ``ideal`` convention)
RBP@k       (1 - p) * sum over ranks i <= k of gain_i * p^(i - 1), p = ``persistence``, gain per ``rbp_gain``
            (trec_eval 10's rbp: ``persistence=0.9``, ``rbp_gain=scaled``)
RBP_resid@k (1 - p) * sum over unjudged ranks i <= d of p^(i - 1) + p^d, d = k, or without k the run's
            length: RBP lies in [RBP, RBP + RBP_resid] whatever the unjudged documents turn out to be
            (``rbp_residual=if_unjudged``: 0 when nothing within d is unjudged, trec_eval 10's rbp_resid)
==========  ==============================================================================================

The C/W/L family (:mod:`qrelkit.engine.kernels.cwl`, as cwl_eval 1.0.12 computes it) is sum_i W_i g_i over
the ranking cut or padded with zero gains to ``depth`` ranks (1000), with g_i = grade clipped at 0 / max_grade
(0 if unjudged) and W_i = prod_{j<i} C_j / sum_m prod_{j<m} C_j for the continuation probability C_i of
rank i (cumulative gain G_i = g_1 + ... + g_i):

==========  ==============================================================================================
INST        C_i = ((i + T + (T - G_i) - 1) / (i + T + (T - G_i)))^2, ``T`` = 1
INSQ        C_i = ((i + 2T - 1) / (i + 2T))^2
BPM@k       C_i = 1 while G_i < T and i < k, then 0 (static BPM, every document costing 1)
NERR8@k     C_i = 1 - g_i for i < k, then 0
NERR9@k     C_i = i / (i + 1) (1 - g_i) for i < k, then 0
NERR10      C_i = p (1 - g_i), ``p`` = 0.9
NERR11      C_i = ((i + 2T - 1) / (i + 2T))^2 (1 - g_i)
SDCG@k      C_i = log2(i + 1) / log2(i + 2) for i < k, then 0: DCG@k over the sum of its discounts
==========  ==============================================================================================

Compat (Clarke et al. 2020; :mod:`qrelkit.engine.kernels.compat`) is the rank-biased overlap (persistence ``p``,
0.95) of the run with the ideal ranking most compatible with it, divided by the ideal's own (``normalize``).

Diversity measures read subtopic judgments (:class:`qrelkit.data.values.DiversityQrels`; J(d, s) = 1 when the
document's grade for subtopic s is >= rel, C_s(i) = documents in the top i relevant to s), as ndeval:

- ``alpha_nDCG@k``: alpha-DCG@k = sum over ranks i <= k of sum_s J(d_i, s) (1 - alpha)^C_s(i-1) / log2(i + 1),
  divided by the alpha-DCG@k of ndeval's greedy ideal ordering (:mod:`qrelkit.engine.kernels.diversity`);
- ``ERR_IA@k``: the mean over the query's subtopics s having a relevant document of ERR_s@k / max@k, with
  ERR_s@k = sum over ranks i <= k of J(d_i, s) 0.5^(C_s(i-1) + 1) / i and max@k = sum over i <= k of 0.5^i / i.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MeasureSyntaxError, ValidationError, did_you_mean
from .conventions import (
    CHOICES,
    MEASURE_AXES,
    Conventions,
    GainMap,
    format_discount,
    parse_discount,
    parse_gain,
    parse_max_grade,
    parse_persistence,
)
from .irm_names import IRM_NAMES, TranslationError, needs_translation, translate


@dataclass(frozen=True)
class MeasureInfo:
    """What a measure family is, for the grammar: one entry of :data:`INFO` (what computes it is
    :data:`qrelkit.engine.registry.REGISTRY`'s)."""

    name: str
    cutoff: str  # "optional", "required", "none"
    uses_rel: bool
    axes: tuple[str, ...]  # convention axes that may be overridden per measure
    undefined_without_relevant: bool
    description: str
    # measure-specific parameters and their defaults, e.g. (("p", "0.8"),); printed when given
    params: tuple[tuple[str, str], ...] = ()
    # other spellings parse() reads as this family, lower case (matched case-insensitively)
    aliases: tuple[str, ...] = ()
    # "graded": (query, document, grade) judgments; "subtopics": diversity judgments (DiversityQrels)
    judgments: str = "graded"
    # a count of documents: summed over queries, not averaged, under counts = "sum"
    count: bool = False
    # its value reads returned documents below its cutoff, so streaming the top k is not enough (measures
    # with the ``ideal`` axis also read them under ideal = "returned": required_depth)
    past_cutoff: bool = False


_RANKING = ("unjudged", "ties", "precision", "negative")
_GAIN = ("gain", "discount")

_GM = (("summary", "mean"),)
#: the C/W/L family: its axes, and the depth its user model runs to (cwl_eval's --max_depth)
_CWL = (*_RANKING, "max_grade")
_DEPTH = ("depth", "1000")
_DIVERSITY = (*_RANKING, "no_relevant")
_RECALLS = "{0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1}"
_M = MeasureInfo

#: Every measure family of the grammar, by name. trec_eval 10's measures are at the end (``AP(summary=gmean)``
#: is gm_map, ``Rprec(mult=0.2)`` trec_eval's Rprec_mult; each parameter is documented in docs/trec_eval.md,
#: trec_eval's own names in :mod:`qrelkit.measures.trec_names`).
INFO: dict[str, MeasureInfo] = {
    m.name: m
    for m in [
        _M("nDCG", "optional", False, (*_GAIN, "ideal", *_RANKING, "no_relevant"), True,
           "normalised discounted cumulative gain", aliases=("ndcg", "ndcg_cut")),
        _M("DCG", "optional", False, (*_GAIN, *_RANKING), False, "discounted cumulative gain", aliases=("dcg",)),
        _M("IDCG", "optional", False, (*_GAIN, "ideal", *_RANKING), False, "DCG of the ideal ordering",
           aliases=("idcg",)),
        _M("NCG", "optional", False, ("gain", "ideal", *_RANKING, "no_relevant"), True,
           "normalised cumulative gain: the gain in the top k over the ideal ordering's", aliases=("ncg",)),
        _M("R", "optional", True, ("ideal", *_RANKING, "no_relevant", "nonpositive"), True, "recall",
           aliases=("r", "recall")),
        _M("P", "optional", True, (*_RANKING, "cutoff_denominator", "nonpositive"), False,
           "precision (without a cutoff: over every returned document)", aliases=("p", "precision")),
        _M("F1", "optional", True, ("ideal", *_RANKING, "no_relevant", "cutoff_denominator"), True,
           "harmonic mean of P@k and R@k (without a cutoff: of every returned document)", aliases=("f1",)),
        _M("AP", "optional", True, ("ideal", *_RANKING, "no_relevant", "nonpositive", "ap_denominator"), True,
           "average precision", _GM, aliases=("ap", "map", "map_cut")),
        _M("RR", "optional", True, ("ideal", *_RANKING, "no_relevant", "nonpositive"), True, "reciprocal rank",
           aliases=("rr", "mrr", "recip_rank")),
        _M("Rprec", "none", True, ("ideal", *_RANKING, "no_relevant"), True, "precision at R", (("mult", "1"),),
           aliases=("rprec", "r-prec"), past_cutoff=True),
        _M("FallOut", "optional", True, ("ideal", *_RANKING, "no_relevant"), True,
           "non-relevant documents in the top k / non-relevant documents (lower is better)",
           aliases=("fallout", "fall_out"), past_cutoff=True),
        _M("Judged", "optional", False, (*_RANKING, "cutoff_denominator"), False,
           "fraction of the top k that is judged (without a cutoff: of every returned document)",
           aliases=("judged",)),
        _M("NumRel", "none", True, ("negative",), False, "number of relevant judged documents",
           aliases=("numrel", "num_rel"), count=True),
        _M("NumRet", "optional", False, ("unjudged", "precision", "negative"), False,
           "number of documents returned", aliases=("numret", "num_ret"), count=True),
        _M("NumRelRet", "optional", True, _RANKING, False, "number of relevant documents returned",
           aliases=("numrelret", "num_rel_ret"), count=True),
        _M("NumQ", "none", False, (), False, "number of queries: 1 per scored query (their sum under counts=sum)",
           aliases=("numq",), count=True),
        _M("Accuracy", "optional", True, (*_RANKING, "no_relevant"), True,
           "pairwise accuracy: the share of (relevant, non-relevant) pairs of returned documents in the top k "
           "ranked relevant first (ir_measures' Accuracy)", aliases=("accuracy",)),
        # -- beyond trec_eval: cascade measures (engine/kernels/cascade.py) ------------------------------------------
        _M("ERR", "optional", False, (*_RANKING, "no_relevant", "max_grade"), True,
           "expected reciprocal rank (gdeval)", aliases=("err",)),
        _M("nERR", "optional", False, ("ideal", *_RANKING, "no_relevant", "max_grade"), True,
           "ERR normalised by the ERR of the ideal ordering", aliases=("nerr",)),
        _M("RBP", "optional", True, (*_RANKING, "no_relevant", "persistence", "rbp_gain"), True,
           "rank-biased precision (its lower bound: unjudged documents count 0)"),
        _M("RBP_resid", "optional", True, (*_RANKING, "persistence", "rbp_residual"), False,
           "RBP's residual: what unjudged documents and those beyond the depth could add"),
        _M("Compat", "none", False, (*_RANKING, "no_relevant"), True,
           "compatibility (Clarke et al. 2020): rank-biased overlap with the most compatible ideal ranking",
           (("p", "0.95"), ("normalize", "True"))),
        # -- the C/W/L family as cwl_eval computes it (engine/kernels/cwl.py) ---------------------------------------
        _M("INST", "none", False, _CWL, False, "INST (Moffat et al. 2015): C/W/L expected utility per document, "
           "a user who wants T gain", (("T", "1"), _DEPTH), aliases=("inst",)),
        _M("INSQ", "none", False, _CWL, False, "INSQ (Moffat et al. 2012): C/W/L expected utility per document, "
           "a user who wants T gain, not adapting to the gain seen", (("T", "1"), _DEPTH), aliases=("insq",)),
        _M("BPM", "required", False, _CWL, False, "static Bejeweled Player Model (Zhang et al. 2017): the mean "
           "gain of the ranks read until T gain or k documents", (("T", "1"), _DEPTH), aliases=("bpm",)),
        _M("NERR8", "required", False, _CWL, False, "C/W/L's near-ERR, eq. 8 (Azzopardi et al. 2021): "
           "continue with 1 - gain, stop at k", (_DEPTH,), aliases=("nerr8",)),
        _M("NERR9", "required", False, _CWL, False, "near-ERR, eq. 9: continue with rank / (rank + 1) "
           "(1 - gain), stop at k", (_DEPTH,), aliases=("nerr9",)),
        _M("NERR10", "none", False, _CWL, False, "near-ERR, eq. 10: continue with p (1 - gain)",
           (("p", "0.9"), _DEPTH), aliases=("nerr10",)),
        _M("NERR11", "none", False, _CWL, False, "near-ERR, eq. 11: continue with INSQ's C for T times "
           "(1 - gain)", (("T", "1"), _DEPTH), aliases=("nerr11",)),
        _M("SDCG", "required", False, _CWL, False, "scaled DCG@k (cwl_eval's NDCG-k): DCG@k with the "
           "discounts scaled to sum to 1, gains grade / max_grade", (_DEPTH,), aliases=("sdcg",)),
        # -- diversity measures over subtopic judgments (engine/kernels/diversity.py) ------------------------------
        _M("alpha_nDCG", "required", True, _DIVERSITY, True,
           "alpha-nDCG (Clarke et al. 2008, as ndeval): novelty-discounted gain over subtopics",
           (("alpha", "0.5"),), aliases=("alpha-ndcg", "alpha_ndcg"), judgments="subtopics"),
        _M("ERR_IA", "required", True, _DIVERSITY, True,
           "intent-aware ERR (Chapelle et al. 2009, as ndeval): ERR per subtopic, normalised, averaged",
           aliases=("err-ia", "err_ia"), judgments="subtopics"),
        # -- trec_eval 10's measures that qrelkit's first measures did not cover (engine/trec/measures.py) --
        _M("Success", "optional", True, _RANKING, False, "1 if a relevant document is in the top k"),
        _M("bpref", "none", True, _RANKING, False, "binary preference (Buckley & Voorhees 2004)", _GM),
        _M("infAP", "none", True, _RANKING, False, "inferred average precision (Yilmaz & Aslam 2006)"),
        _M("IPrec", "none", True, (*_RANKING, "iprec_cutoff"), False,
           "interpolated precision at a recall level", (("recall", "0"),)),
        _M("IPrecMean", "none", True, (*_RANKING, "iprec_cutoff"), False, "interpolated precision averaged over recall "
           "levels (trec_eval's 11pt_avg)", (("recall", _RECALLS),)),
        _M("SetP", "optional", True, _RANKING, False,
           "relevant returned / returned (SetP@k: under the ranx profiles only, read as P@k as ranx reads it)"),
        _M("SetRelP", "none", True, _RANKING, False, "relevant returned / min(returned, R)"),
        _M("SetAP", "none", True, _RANKING, False, "SetP times set recall"),
        _M("SetF", "none", True, _RANKING, False, "F-measure of SetP and set recall", (("beta", "1"),)),
        _M("RelP", "required", True, _RANKING, False, "relevant in the top k / min(k, R)"),
        _M("Utility", "none", True, _RANKING, False, "a*relret + b*nonrelret + c*relnotret + "
           "d*nonrelnotret", (("a", "1"), ("b", "-1"), ("c", "0"), ("d", "0"), ("docs", "0"))),
        _M("NumNonRelJudgedRet", "optional", True, _RANKING, False, "judged non-relevant documents returned"),
        _M("Unjudged", "required", False, _RANKING, False, "fraction of the top k that is not judged"),
        _M("binG", "none", True, _RANKING, False, "mean over relevant documents of "
           "1/log2(2 + non-relevant above)"),
        _M("G", "none", False, (*_GAIN, *_RANKING), False, "trec_eval's G (gain over cost)"),
        _M("nDCGRel", "none", False, (*_GAIN, *_RANKING), False,
           "nDCG averaged at relevant documents (trec_eval's ndcg_rel)"),
        _M("RnDCG", "none", True, (*_GAIN, *_RANKING), False,
           "nDCG averaged where the ideal gain changes (trec_eval's Rndcg)"),
    ]
}  # fmt: skip

#: Other spellings of the families (each :attr:`MeasureInfo.aliases`), lower case -> name.
ALIASES = {alias: m.name for m in INFO.values() for alias in m.aliases}

#: The measures that count documents: summed over queries under ``counts = "sum"``.
COUNT_MEASURES = frozenset(m.name for m in INFO.values() if m.count)

#: The measures reported when none are asked for: ordering (nDCG@10), coverage (R@100), judged depth.
DEFAULT_MEASURES = ("nDCG@10", "R@100", "Judged@10")


#: The measures that read subtopic judgments (:class:`qrelkit.data.values.DiversityQrels`), and those reported
#: for diversity judgments when none are asked for (the TREC Web track's official depth, 20).
DIVERSITY_MEASURES = frozenset(m.name for m in INFO.values() if m.judgments == "subtopics")
DIVERSITY_DEFAULT_MEASURES = ("alpha_nDCG@20", "ERR_IA@20")

_AXIS_ORDER = MEASURE_AXES
_UNSET = {"printed_decimals": "none", "summation": "exact"}


@dataclass(frozen=True)
class Measure:
    """One measure with its parameters. Build with :func:`parse`; compare and hash by value."""

    name: str
    k: int | None = None
    rel: int | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    params: tuple[tuple[str, str], ...] = ()  # measure parameters given (MeasureInfo.params), in its order

    @property
    def info(self) -> MeasureInfo:
        return INFO[self.name]

    def param(self, name: str) -> str:
        """A measure parameter's value as text: the one given, else the default (MeasureInfo.params)."""
        given = dict(self.params)
        return given[name] if name in given else dict(self.info.params)[name]

    def conventions(self, base: Conventions) -> Conventions:
        """The conventions this measure is computed under: ``base``, the axes ``base.by_measure`` sets for
        this measure's family (a family's conditions read ``base`` with this measure's own overrides), then
        this measure's own overrides."""
        changes: dict[str, str] = {}
        if base.by_measure:
            own = base.with_(**dict(self.overrides)) if self.overrides else base
            changes = base.measure_axes(self.name, self.k is not None, own)
        changes.update(self.overrides)
        if not changes:
            return base
        return base.with_(**changes)

    def __str__(self) -> str:
        params = []
        if self.info.uses_rel:
            params.append(f"rel={self.rel}")
        params += [f"{key}={value}" for key, value in self.params]
        params += [f"{axis}={value}" for axis, value in self.overrides]
        text = self.name + (f"({','.join(params)})" if params else "")
        return text + (f"@{self.k}" if self.k is not None else "")

    def describe(self, conventions: Conventions) -> str:
        """Every parameter that affects this measure's value, defaults included."""
        conv = self.conventions(conventions).to_dict()
        params = [f"rel={self.rel}"] if self.info.uses_rel else []
        params += [f"{key}={self.param(key)}" for key, _ in self.info.params]
        params += [f"{axis}={conv[axis]}" for axis in self.info.axes]
        # the axes every family reads, written where they are set
        params += [
            f"{axis}={conv[axis]}" for axis in ("printed_decimals", "summation") if conv[axis] != _UNSET[axis]
        ]
        return f"{self.name}({','.join(params)})" + (f"@{self.k}" if self.k is not None else "")


def required_depth(measures: Any, conventions: Conventions) -> int | None:
    """How many top documents per query (with the tied block at that depth) the measures need, or ``None``
    when some measure needs every returned document (no cutoff, R-precision, the returned-only ideal, or
    unjudged documents dropped before ranking, which changes which documents reach the top)."""
    depth = 0
    for m in measures:
        conv = m.conventions(conventions)
        if m.k is None or m.info.past_cutoff or conv.unjudged == "drop":
            return None
        if "ideal" in m.info.axes and conv.ideal == "returned":
            return None  # the ideal, or R, counts every returned document
        depth = max(depth, m.k)
    return depth or None


def _split_params(text: str, source: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise MeasureSyntaxError("unbalanced braces in measure parameters", got=source)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


_MEASURE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z_\-]*[0-9]*)\s*(?:\((.*)\))?\s*(?:@\s*([^\s]+))?\s*$", re.S)


def _normalise_override(axis: str, value: str, source: str) -> str:
    try:
        if axis == "gain":
            gain = parse_gain(value)
            return str(gain) if isinstance(gain, GainMap) else gain
        if axis == "discount":
            return format_discount(parse_discount(value))
        if axis == "max_grade":
            return str(parse_max_grade(value))
        if axis == "persistence":
            return repr(parse_persistence(value))
    except Exception as exc:  # ConventionError: re-raise as a syntax error naming the measure
        raise MeasureSyntaxError(f"in {source!r}: {exc}") from None
    choices = CHOICES[axis]
    if value not in choices:
        raise MeasureSyntaxError(
            f"unknown {axis} {value!r} in {source!r}{did_you_mean(value, choices)}",
            expected="one of " + ", ".join(choices),
        )
    return value


def _from_ir_measures(name: str, pairs: list[tuple[str, str]], k: str | None, text: str) -> str | None:
    """qrelkit's spelling of a measure written in ir_measures' vocabulary (:mod:`qrelkit.measures.irm_names`), or
    ``None`` when it is not."""
    if not needs_translation(name, pairs, k):
        return None
    try:
        translated = translate(name, pairs, k)
    except TranslationError as exc:
        raise MeasureSyntaxError(
            f"{exc}", got=text, fix="choose another measure (qrelkit measures: " + ", ".join(INFO) + ")"
        ) from None
    target = _MEASURE_RE.match(translated)
    if target is None or target.group(1) not in INFO:
        qname = target.group(1) if target else translated
        raise MeasureSyntaxError(
            f"ir_measures' {name} is qrelkit's {qname}, which this version does not compute",
            got=text,
            fix="choose another measure (qrelkit measures: " + ", ".join(INFO) + ")",
        )
    return translated


def parse(text: str | Measure) -> Measure:
    """Parse a measure string. Errors name the measure, the bad part, and the accepted forms."""
    if isinstance(text, Measure):
        return text
    match = _MEASURE_RE.match(text)
    if not match:
        raise MeasureSyntaxError(
            "cannot parse measure",
            got=text,
            expected="NAME, NAME@k or NAME(param=value,...)@k, e.g. nDCG@10, R(rel=2)@100",
        )
    raw_name, raw_params, raw_k = match.groups()
    pairs = [tuple(x.strip() for x in p.split("=", 1)) for p in _split_params(raw_params or "", text)]
    if all(len(p) == 2 for p in pairs):
        translated = _from_ir_measures(raw_name, pairs, raw_k, text)  # type: ignore[arg-type]
        if translated is not None:
            return parse(translated)
    name = raw_name if raw_name in INFO else ALIASES.get(raw_name.lower())
    if name is None and raw_name in IRM_NAMES:
        raise MeasureSyntaxError(
            f"ir_measures' {raw_name} is qrelkit's {IRM_NAMES[raw_name]}, which this version does not compute",
            got=text,
            fix="choose another measure (qrelkit measures: " + ", ".join(INFO) + ")",
        )
    if name is None:
        vocabulary = list(INFO) + list(ALIASES) + [n for n, q in IRM_NAMES.items() if q is not None]
        raise MeasureSyntaxError(
            f"unknown measure {raw_name!r}{did_you_mean(raw_name, vocabulary)}",
            expected="one of " + ", ".join(INFO) + " (or ir_measures' names, e.g. P@10, nDCG@10, RR@10)",
        )
    info = INFO[name]
    k: int | None = None
    if raw_k is not None:
        if info.cutoff == "none":
            raise MeasureSyntaxError(f"{name} takes no cutoff", got=text, fix=f"write {name} without @k")
        if not re.fullmatch(r"\d+", raw_k) or int(raw_k) < 1:
            raise MeasureSyntaxError(f"cutoff {raw_k!r} is not a positive whole number", got=text)
        from .trec_names import MAX_CUTOFF

        if len(raw_k) > 10 or int(raw_k) > MAX_CUTOFF:
            raise MeasureSyntaxError(
                f"cutoff {raw_k} is larger than {MAX_CUTOFF:,} (no ranking is that long)",
                got=text,
                fix=f"write {name}@k with k at most {MAX_CUTOFF:,}",
            )
        k = int(raw_k)
    elif info.cutoff == "required":
        raise MeasureSyntaxError(f"{name} needs a cutoff", got=text, fix=f"write {name}@k, e.g. {name}@10")
    rel: int | None = 1 if info.uses_rel else None
    overrides: dict[str, str] = {}
    given: dict[str, str] = {}
    param_names = [key for key, _ in info.params]
    for part in _split_params(raw_params or "", text):
        if "=" not in part:
            raise MeasureSyntaxError(f"parameter {part!r} has no value", got=text, expected="param=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key == "rel":
            if not info.uses_rel:
                raise MeasureSyntaxError(
                    f"{name} has no relevance threshold (it uses graded gains)", got=text, fix="remove rel="
                )
            if not re.fullmatch(r"-?\d+", value):
                raise MeasureSyntaxError(f"rel={value!r} is not a whole number", got=text)
            rel = int(value)
        elif key in param_names:
            if key in given:
                raise MeasureSyntaxError(f"{key} given twice", got=text)
            given[key] = _measure_param(name, key, value, text)
        elif key in info.axes:
            if key in overrides:
                raise MeasureSyntaxError(f"{key} given twice", got=text)
            overrides[key] = _normalise_override(key, value, text)
        else:
            allowed = (["rel"] if info.uses_rel else []) + param_names + list(info.axes)
            raise MeasureSyntaxError(
                f"{name} takes no parameter {key!r}{did_you_mean(key, allowed)}",
                got=text,
                expected="parameters " + ", ".join(allowed),
            )
    ordered = tuple((axis, overrides[axis]) for axis in _AXIS_ORDER if axis in overrides)
    return Measure(name, k, rel, ordered, tuple((key, given[key]) for key in param_names if key in given))


def _not_finite(x: float) -> bool:
    return not math.isfinite(x)


def _measure_param(name: str, key: str, value: str, source: str) -> str:
    """A measure parameter's value, checked and in canonical form."""
    if key == "summary":
        if value not in ("mean", "gmean"):
            raise MeasureSyntaxError(
                f"unknown summary {value!r} in {source!r}{did_you_mean(value, ['mean', 'gmean'])}",
                expected="mean, or gmean (the geometric mean of values floored at 0.00001, as gm_map)",
            )
        return value
    if key == "normalize":
        if value not in ("True", "False", "true", "false", "1", "0"):
            raise MeasureSyntaxError(
                f"normalize={value!r} in {source!r} is not True or False",
                expected="True (divide by the ideal's compatibility, as ir_measures) or False (RBO itself)",
            )
        return "True" if value in ("True", "true", "1") else "False"
    texts = value.strip("{}").split(",") if key == "recall" else [value]
    numbers = []
    for t in texts:
        try:
            numbers.append(float(t))
        except ValueError:
            raise MeasureSyntaxError(f"{key}={value!r} is not a number", got=source) from None
    bad: Callable[[float], bool] = {
        "recall": lambda x: not 0 <= x <= 1,
        "mult": lambda x: x <= 0,
        "beta": lambda x: x < 0,
        "docs": lambda x: x < 0 or not x.is_integer(),
        "alpha": lambda x: not 0 <= x <= 1,
        "T": lambda x: not 0 < x <= 1e6,
        "depth": lambda x: not 1 <= x <= 100_000 or not x.is_integer(),
    }.get(key, _not_finite)
    if any(bad(x) for x in numbers) or not numbers:
        raise MeasureSyntaxError(f"{key}={value!r} is out of range for {name}", got=source)
    canon = [repr(x) if not x.is_integer() else str(int(x)) for x in numbers]
    if key == "recall" and value.startswith("{"):
        return "{" + ",".join(canon) + "}"
    return canon[0] if len(canon) == 1 else "{" + ",".join(canon) + "}"


def parse_all(texts: Any) -> list[Measure]:
    """Parse several measures, refusing duplicates (two spellings of one measure). trec_eval's names
    (``P_10``, ``P.5,7,3``, ``ndcg_cut.10``, ``official``, ``all_trec``: :mod:`qrelkit.measures.trec_names`) are read
    where qrelkit's grammar does not read the text; a nickname expands to every measure it names."""
    out: list[Measure] = []
    for text in texts:
        for m in _parse_any(text):
            if m in out:
                raise MeasureSyntaxError(f"measure {m} is asked for twice", got=str(text))
            out.append(m)
    return out


def _parse_any(text: str | Measure) -> list[Measure]:
    from .trec_names import KIND, qrelkit_measures

    if isinstance(text, Measure):
        return [text]
    try:
        return [parse(text)]
    except MeasureSyntaxError as exc:
        spelled = qrelkit_measures(text.strip())
        if spelled is None and "unknown measure" in exc.problem and text.strip().partition(".")[0] in KIND:
            raise MeasureSyntaxError(
                f"trec_eval's {text.strip()!r} has no single qrelkit measure",
                fix="give its cutoffs (P_10, P.5,10) or run `qrelkit trec_eval -m ...` for trec_eval's output",
            ) from None
        if spelled is None:
            trec_like = re.fullmatch(r"\s*([A-Za-z0-9_]+?)(?:_\d+|\..*)\s*", text)
            if "unknown measure" in exc.problem or trec_like:
                raise _unknown_anywhere(trec_like.group(1) if trec_like else text) from None
            raise
        return [parse(t) for t in spelled]


def _unknown_anywhere(text: str) -> MeasureSyntaxError:
    from .trec_names import NICKNAMES, ORDER

    match = _MEASURE_RE.match(text)
    raw = match.group(1) if match else text
    names = list(INFO) + list(ALIASES) + ORDER + list(NICKNAMES)
    return MeasureSyntaxError(
        f"unknown measure {raw!r}{did_you_mean(raw, names)}",
        expected="one of " + ", ".join(INFO) + ", or a trec_eval name such as P_10, ndcg_cut.10, official",
    )


def parse_measures(measures: Iterable[str | Measure] | None) -> list[Measure]:
    """The measures asked for (:data:`DEFAULT_MEASURES` for ``None``), parsed; none at all is an error."""
    parsed = parse_all(DEFAULT_MEASURES if measures is None else list(measures))
    if not parsed:
        raise ValidationError("no measures to compute", fix="pass at least one measure, e.g. nDCG@10")
    return parsed


# ------------------------------------------------------------- a trec_eval name read without trec_eval's axes


def trec_name_notes(texts: Sequence[str], conventions: Any) -> list[str]:
    """One line per measure given by trec_eval's name (``ndcg_cut.10``, ``map``, ``P_10``, ``official``;
    not qrelkit's own family names such as ``P`` or ``nDCG``) whose value under ``conventions`` can differ
    from trec_eval's: it names qrelkit's measure, the axes that measure reads where they differ from the
    ``trec_eval`` profile's, and how to get trec_eval's number. No line when the conventions agree with
    trec_eval's on those axes (under ``--profile trec_eval``, for one)."""
    from .trec_names import is_trec_name

    trec = Conventions.from_profile("trec_eval")
    out = []
    for text in texts:
        t = str(text).strip()
        if t in INFO or not is_trec_name(t):
            continue
        measures = parse_all([t])
        differ: dict[str, tuple[str, str]] = {}
        for m in measures:
            ours, theirs = m.conventions(conventions).to_dict(), m.conventions(trec).to_dict()
            differ.update({a: (str(ours[a]), str(theirs[a])) for a in m.info.axes if ours[a] != theirs[a]})
        if not differ:
            continue
        what = str(measures[0]) if len(measures) == 1 else f"{len(measures)} measures"
        out.append(
            f"note: {t} is qrelkit's {what} with {', '.join(f'{a}={v}' for a, (v, _) in differ.items())} "
            f"(trec_eval's: {', '.join(f'{a}={v}' for a, (_, v) in differ.items())}); "
            "add --profile trec_eval for trec_eval's numbers"
        )
    return out
