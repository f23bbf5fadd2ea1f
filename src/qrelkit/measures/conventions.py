"""Conventions: every choice that changes a number, as one frozen, printable value.

Two evaluation libraries fed identical rankings and judgments return different nDCG because each makes a
handful of choices silently. qrelkit names each choice (an *axis*), gives it a documented default, and writes
the full set next to every number it reports. Nothing here computes; it only describes.

Axes and their values
---------------------
gain
    What a grade is worth. ``exponential``: 2^g - 1 (3 -> 7, 2 -> 3, 1 -> 1, 0 -> 0), the default.
    ``linear``: g. A custom map ``{0:0,1:1,2:3.5,3:7}`` gives each grade its gain (any grade not in the map is an
    error, never a guess).
discount
    Rank discount 1/log_b(i + 1) for a document at rank i (1-based). ``log2`` is the default; ``ln``, ``log10``
    or ``log<b>`` choose another base (this scales DCG, and cancels out of nDCG).
ideal
    Where IDCG's ordering comes from. ``judged`` (default): every judged document of the query, sorted by gain,
    truncated at k. ``returned``: only the documents the run returned, as scikit-learn and torchmetrics do;
    optimistic, since a relevant document the run missed no longer lowers the score. The same choice gives
    recall, R-precision, AP and RR their number of relevant documents R (every relevant judged document, or
    the relevant documents the run returned: torchmetrics' ``target.sum()`` over the documents passed in),
    and FallOut its non-relevant documents.
unjudged
    Returned documents with no judgment. ``zero`` (default): they stay in place with gain 0. ``drop``: they are
    removed before ranking (trec_eval ``-J``, the "condensed list"), which promotes everything below them.
ties
    Order of documents with equal scores. ``average`` (default): the expected value over all orderings of each
    tied block (McSherry & Najork 2008), so the input order of tied documents cannot change the result.
    ``docid_desc`` (trec_eval), ``docid_asc`` (trectools), ``file_order`` (the order in the run file),
    ``optimistic`` (higher grade first: credits the run with an order it did not produce), ``pessimistic``
    (lower grade first).
precision
    Scores as read (``double``) or rounded to 32-bit floats before ranking (``single``), as trec_eval 9 and
    pytrec_eval store them; this creates ties between scores that differ past the 7th significant digit.
negative
    Judgments with a negative grade. ``unjudged`` (default, trec_eval's meaning: in the pool but not judged):
    gain 0, not in the ideal, not counted as judged. ``zero``: judged with grade 0. ``reject``: an error.
    ``gain``: judged, and worth the gain of the grade itself (linear: -1 -> -1; exponential: 2^-1 - 1 =
    -0.5), in the ranking and in the ideal ordering alike, as torchmetrics does. With negative gains the
    ideal keeps every judged gain (zero and negative ones too) truncated at k, and nDCG is undefined only
    where IDCG is exactly 0; it can leave [0, 1].
missing_queries
    Judged queries that the run does not contain. ``zero`` (default): scored as an empty ranking (0 for every
    effectiveness measure) and counted in the mean. ``skip``: left out of the mean (pytrec_eval's behaviour).
extra_queries
    Run queries that have no judgments. ``skip`` (default): not scored, and listed in the report. ``reject``:
    an error.
no_relevant
    Judged queries with nothing relevant (IDCG = 0, or no document at the relevance threshold), where nDCG,
    recall, AP and RR are undefined. ``zero`` (default, as trec_eval): the query scores 0 and counts.
    ``skip``: the query is left out of that measure's mean. ``skip_unretrieved``: as ``skip``, and a query
    whose value is 0 because nothing relevant was retrieved within the cutoff (DCG@k = 0, no relevant
    document in the top k) is left undefined too, as trectools does (its per-query nDCG is NaN there).
    ``one``: the query scores 1 and counts, as torchmetrics' ``empty_target_action="pos"`` (FallOut's
    default there, where the undefined query is one with nothing non-relevant). Reports count the queries
    this touched.
mean
    How a measure's per-query values become one number. ``defined`` (default): the mean over the queries
    where the value is defined. ``run_queries``: the sum of the defined values divided by the number of
    distinct queries in the run, judged or not, as trectools does (``sum() / len(run.topics())``): run
    queries without judgments and queries left undefined count as 0, judged queries the run lacks do not
    count at all.
cutoff_denominator
    What P@k and Judged@k divide by when the run returned fewer than k documents. ``k`` (default, as
    trec_eval): always k. ``returned``: min(k, documents returned), as ir_measures' Judged does (a query
    with nothing returned scores 0).
missing_score
    What a judged query the run lacks scores under ``missing_queries = "zero"``. ``empty`` (default): the
    value of an empty ranking, so NumRel still counts its relevant documents. ``zero``: 0 for every measure,
    as ir_measures gives such a query ``measure.DEFAULT``.
counts
    How the count measures (NumRel, NumRet, NumRelRet) are summarised over queries. ``mean`` (default):
    like every other measure, under the ``mean`` axis. ``sum``: their sum, as ir_measures' aggregate and
    trec_eval's summary line give it.
nonpositive
    Returned documents whose score is 0 or below (after ``precision``). ``retrieved`` (default): a score only
    orders the documents. ``not_retrieved``: they keep their ranks (below every positive score) but never
    count as relevant documents retrieved by recall, precision, AP and RR, as torchmetrics' classes for
    those measures zero the target where ``preds <= 0``; R, under ``ideal = "returned"``, still counts them.
ap_denominator
    What AP divides its sum of precisions by. ``relevant`` (default, trec_eval): R, the number of relevant
    documents (see ``ideal``). ``retrieved``: the relevant documents retrieved within the cutoff, as
    torchmetrics does (``positions.mean()``); optimistic, a run that finds one relevant document at rank 1
    and nothing else scores 1.
max_grade
    ERR's scale: the probability that a user stops at a document of grade g is (2^g - 1) / 2^max_grade
    (Chapelle et al. 2009); 4 by default, gdeval's ``$MAX_JUDGMENT``. A judged grade above it is an error
    for ERR and nERR.
persistence, rbp_gain
    RBP's user model (Moffat & Zobel 2008): the probability ``persistence`` (default 0.8, as ir_measures
    and trectools; 0.9 in trec_eval 10) of looking at the next document, and what a document is worth:
    ``binary`` (1 at or above the measure's relevance threshold, trectools), ``grade`` (its grade at or
    above the threshold, ranx's ``rbp``) or ``scaled`` (its grade at or above the threshold divided by the
    query's highest judged grade when that is above 1, so gains lie in 0..1: trec_eval 10's ``m_rbp.c``).
rbp_residual
    When RBP_resid (the weight RBP leaves to unjudged documents and to those beyond the depth) is given.
    ``always`` (default, trectools): the weight of the unjudged ranks within the depth plus p^depth.
    ``if_unjudged``: the same, but 0 when every document within the depth is judged, as trec_eval 10's
    ``m_rbp_resid.c`` leaves its value at 0 when no returned document is unjudged.
iprec_cutoff
    Which relevant document interpolated precision at recall level r is read at (IPrec, IPrecMean: trec_eval's
    iprec_at_recall and 11pt_avg): the t-th, t = r * R. ``round`` (default, trec_eval 10: ``lround``):
    to the nearest whole number, halves up. ``truncate`` (trec_eval 9 and pytrec_eval): ``(long)(r * R +
    0.9)``, 0.9 added, then truncated.
printed_decimals
    The decimals a tool prints each per-query value with before the number is read back. ``none``
    (default): values as computed. A whole number d from 0 to 17: each per-query value is rounded to d
    decimals exactly as ``float(f"{v:.{d}f}")`` rounds it, which is C's and perl's ``printf("%.<d>f")``
    read back with ``float()`` (both convert the double itself to decimal, correctly rounded, a half
    going to the even digit). ir_measures runs gdeval.pl for ERR@k and ``nDCG(dcg='exp-log2')@k`` and
    reads its ``%.5f`` back: 5. Applied once, to every per-query value of every engine
    (:func:`qrelkit.engine.dispatch.compute`), before any mean.
summation
    How a mean adds its per-query values. ``exact`` (default): the correctly rounded sum
    (``math.fsum``), whatever the order of the queries. ``numeric_order``: floating-point additions left to
    right over the queries in the numeric order of their ids (ids that are whole numbers by value, the
    others after them by text), as ir_measures' mean adds the values gdeval.pl prints topic by topic
    (``MeanAgg``: ``self.sum += value``); the result can differ from ``exact`` in the last bits.
    ``run_order``: the same over the run's queries in the order the run first gives them, then the
    judged queries the run lacks by id as text, as ir_measures' pytrec_eval, judged and MS MARCO
    providers give them (the order of each query's first line, on every engine). ``numpy``: numpy's own sum (``np.sum``: pairwise, eight running sums a block) over the
    queries by id as text, as ranx's ``np.mean`` adds its per-query array.
by_measure
    Axes a profile sets for one measure family only, because the tool computes that family with other code
    (ir_measures computes RR@k with its MS MARCO provider and Judged with its own): ``RR@k(ties=docid_asc,
    precision=double); Judged(...)``. A family is a measure name, or a name with ``@k`` for the measure with
    a cutoff only, optionally followed by conditions in brackets that the measure's own conventions (the
    evaluation's, with the measure's own parameters) must meet: ``nDCG@k[gain=exponential](discount=ln)``
    applies to nDCG@k with exponential gain only (ir_measures computes ``nDCG(dcg='exp-log2')@k`` with
    gdeval.pl, plain nDCG with pytrec_eval). A measure's own parameters (``RR(ties=average)@10``) override
    these; both are written with every result (the measure's full form lists every axis it was computed
    under).
profile
    Not an axis: the name of the named profile (see :mod:`qrelkit.measures.profiles`) these conventions started
    from, or none. It is written with the conventions (``trec_eval``, or ``trec_eval with ties=average``
    when an axis was changed afterwards) and never makes two conventions differ.

The relevance threshold for binary measures (recall, precision, AP, RR, ...) is a parameter of each measure
(``R(rel=2)@100``), not a convention, because one report often mixes thresholds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

from ..errors import ConventionError, did_you_mean

GainName = Literal["exponential", "linear"]
Ideal = Literal["judged", "returned"]
Unjudged = Literal["zero", "drop"]
Ties = Literal["average", "docid_desc", "docid_asc", "file_order", "optimistic", "pessimistic"]
Precision = Literal["double", "single"]
Negative = Literal["unjudged", "zero", "reject", "gain"]
MissingQueries = Literal["zero", "skip"]
ExtraQueries = Literal["skip", "reject"]
NoRelevant = Literal["zero", "skip", "skip_unretrieved", "one"]
Mean = Literal["defined", "run_queries"]
CutoffDenominator = Literal["k", "returned"]
MissingScore = Literal["empty", "zero"]
Counts = Literal["mean", "sum"]
RbpGain = Literal["binary", "grade", "scaled"]
RbpResidual = Literal["always", "if_unjudged"]
IprecCutoff = Literal["round", "truncate"]
Nonpositive = Literal["retrieved", "not_retrieved"]
ApDenominator = Literal["relevant", "retrieved"]
Summation = Literal["exact", "numeric_order", "run_order", "numpy"]

#: The most decimals :attr:`Conventions.printed_decimals` takes (a double holds 17 significant digits).
MAX_PRINTED_DECIMALS = 17


_TREC: dict[str, Any] = {
    "gain": "linear",
    "discount": 2.0,
    "ideal": "judged",
    "unjudged": "zero",
    "ties": "docid_desc",
    "precision": "double",
    "negative": "unjudged",
    "missing_queries": "skip",
    "extra_queries": "skip",
    "no_relevant": "zero",
    "mean": "defined",
    "iprec_cutoff": "round",
}
#: trec_eval 10's rbp and rbp_resid (m_rbp.c, m_rbp_resid.c: p = 0.9, gains scaled to 0..1, a residual only
#: where something returned is unjudged); trec_eval 9 has neither, so its profiles keep RBP's defaults.
#: iprec_at_recall and 11pt_avg: lround in trec_eval 10, (long)(r * R + 0.9) in trec_eval 9.
_TREC10 = _TREC | {"persistence": 0.9, "rbp_gain": "scaled", "rbp_residual": "if_unjudged"}
_TREC9 = _TREC | {"precision": "single", "iprec_cutoff": "truncate"}

PROFILE_AXES: dict[str, dict[str, Any]] = {
    "trec_eval": _TREC10,
    "trec_eval-c": _TREC10 | {"missing_queries": "zero"},
    "trec_eval-J": _TREC10 | {"unjudged": "drop"},
    "trec_eval9": _TREC9,
    "pytrec_eval": _TREC9,
    "ir_measures": _TREC9 | {
        "missing_queries": "zero", "missing_score": "zero", "counts": "sum",
        # base.py's MeanAgg adds each provider's values in the order it yields them: the pytrec_eval, judged
        # and MS MARCO (RR@k) providers' in the run's order, then the judged queries the run lacks
        # (base.Evaluator, sorted; the MS MARCO provider's queries with nothing relevant too, all 0)
        "summation": "run_order",
        # ERR@k and nDCG(dcg='exp-log2')@k: gdeval_provider.py runs gdeval.pl, which prints "%.5f" per topic,
        # and base.py's MeanAgg adds them back in the order printed (topics by number)
        # accuracy_provider.py: Python's stable sort by score, descending (tied scores in file order); it
        # reports only the queries with a relevant and a non-relevant document returned, and no default
        # for the others (its iter_calc replaces base.Evaluator's)
        "by_measure": "Accuracy(ties=file_order,precision=double,no_relevant=skip,missing_score=empty); "
                      "RR@k(ties=docid_asc,precision=double); "
                      "ERR(precision=double,printed_decimals=5,summation=numeric_order); "
                      "nDCG@k[gain=exponential](discount=ln,precision=double,printed_decimals=5,"
                      "summation=numeric_order); "
                      "Judged(ties=docid_asc,precision=double,negative=zero,cutoff_denominator=returned); "
                      "Compat(ties=docid_asc,precision=double)",
    },
    # ranx's bpref counts a document judged with a negative grade as judged non-relevant
    # (ranx/metrics/bpref.py: every judged document not relevant is in its non-relevant count)
    # ranx.evaluate's mean is np.mean of its per-query array, queries in qrels' order (summation=numpy)
    "ranx": {"gain": "linear", "ties": "file_order", "negative": "unjudged", "missing_queries": "zero",
             "extra_queries": "skip", "rbp_gain": "grade", "summation": "numpy",
             "by_measure": "bpref(negative=zero)"},
    "ranx-burges": {"gain": "exponential", "ties": "file_order", "negative": "unjudged",
                    "missing_queries": "zero", "extra_queries": "skip", "rbp_gain": "grade", "summation": "numpy",
                    "by_measure": "bpref(negative=zero)"},
    "sklearn": {"gain": "linear", "ideal": "returned", "ties": "average", "negative": "reject",
                "missing_queries": "skip", "extra_queries": "skip"},
    "torchmetrics": {"gain": "linear", "ideal": "returned", "ties": "average", "precision": "single",
                     "negative": "gain", "missing_queries": "skip", "extra_queries": "skip",
                     "by_measure": "AP(nonpositive=not_retrieved,ap_denominator=retrieved); "
                                   "FallOut(no_relevant=one); P(nonpositive=not_retrieved); "
                                   "R(nonpositive=not_retrieved); RR(nonpositive=not_retrieved)"},
    "trectools": {"gain": "linear", "ties": "docid_asc", "negative": "unjudged", "missing_queries": "skip",
                  "extra_queries": "skip", "no_relevant": "skip_unretrieved", "mean": "run_queries",
                  "by_measure": "AP(ties=docid_desc,no_relevant=skip); Judged(ties=docid_desc); "
                                "P(ties=docid_desc); R(ties=docid_desc,no_relevant=skip); "
                                "RBP(ties=average); RBP_resid(ties=average); "
                                "RR(ties=docid_desc); Rprec(ties=docid_desc)"},
    "gdeval": {"gain": "exponential", "discount": "ln", "ties": "docid_desc", "negative": "unjudged",
               "missing_queries": "skip", "extra_queries": "skip", "no_relevant": "skip",
               "printed_decimals": 5},  # printf "%.5f" per topic
    # cwl_eval.py main: each query's documents in the file's order (neither rank nor score read); only the
    # run's queries are scored; gains are the gain file's values, at most --max_gain (1): grade / 1, so a
    # grade above 1 is refused unless max_grade says how to scale it; cwl_rbp.py's theta defaults to 0.9
    "cwl_eval": {"ties": "file_order", "missing_queries": "skip", "extra_queries": "skip", "max_grade": 1,
                 "persistence": 0.9},
}  # fmt: skip
"""The axes each named profile sets (the rest keep the defaults). What else a profile does (its reader
option for duplicates, the inputs it refuses, the evidence from the tool's source) is
:mod:`qrelkit.measures.profiles`; the axes live here so that a :class:`Conventions` value can name its profile
and say how it departs from it without importing anything above this module."""


Unmapped = Literal["error", "grade"]


@dataclass(frozen=True)
class GainMap:
    """A custom gain per grade, e.g. ``{0: 0, 1: 1, 2: 3.5, 3: 7}``. A grade not listed is an error
    (``unmapped = "error"``, qrelkit's ``gain=``), or worth the grade itself (``"grade"``, written
    ``{0:1,1:4,else:grade}``): ir_measures' ``gains=`` (``gains.get(grade, grade)`` in its pytrec_eval
    provider)."""

    items: tuple[tuple[int, float], ...]
    unmapped: Unmapped = "error"

    def gain(self, grade: int) -> float | None:
        """The gain of ``grade``: its entry, else the grade itself under ``unmapped = "grade"``, else None."""
        for g, value in self.items:
            if g == grade:
                return value
        return float(grade) if self.unmapped == "grade" else None

    @classmethod
    def from_mapping(cls, mapping: Mapping[int, float], unmapped: Unmapped = "error") -> GainMap:
        items = []
        for grade, gain in mapping.items():
            if isinstance(grade, bool) or not isinstance(grade, int):
                raise ConventionError(
                    f"gain map grade {grade!r} is not an integer", fix="use whole-number grades"
                )
            gain = float(gain)
            if not math.isfinite(gain):
                raise ConventionError(f"gain for grade {grade} is {gain}", expected="a finite number")
            items.append((grade, gain))
        if not items:
            raise ConventionError(
                "gain map is empty", fix="give a gain for each grade, e.g. {0:0,1:1,2:3,3:7}"
            )
        return cls(tuple(sorted(items)), unmapped)

    @classmethod
    def parse(cls, text: str) -> GainMap:
        """Parse ``{0:0,1:1,2:3.5}`` (braces optional; ``=`` may replace ``:``); an entry ``else:grade``
        gives a grade not listed the grade itself as gain."""
        body = text.strip()
        if body.startswith("{") and body.endswith("}"):
            body = body[1:-1]
        mapping: dict[int, float] = {}
        unmapped: Unmapped = "error"
        for part in filter(None, (p.strip() for p in body.split(","))):
            if re.fullmatch(r"else\s*[:=]\s*grade", part):
                unmapped = "grade"
                continue
            match = re.fullmatch(r"(-?\d+)\s*[:=]\s*([-+0-9.eE]+)", part)
            if not match:
                raise ConventionError(
                    f"cannot read gain map entry {part!r}",
                    got=text,
                    expected="grade:gain pairs such as {0:0,1:1,2:3.5,3:7}",
                )
            grade = int(match.group(1))
            if grade in mapping:
                raise ConventionError(f"gain map lists grade {grade} twice", got=text)
            try:
                mapping[grade] = float(match.group(2))
            except ValueError:
                raise ConventionError(f"gain {match.group(2)!r} is not a number", got=text) from None
        return cls.from_mapping(mapping, unmapped)

    def as_dict(self) -> dict[int, float]:
        return dict(self.items)

    def __str__(self) -> str:
        rest = ",else:grade" if self.unmapped == "grade" else ""
        return "{" + ",".join(f"{g}:{_num(v)}" for g, v in self.items) + rest + "}"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


Gain = GainName | GainMap

# The axes whose closed choices are documented Literal aliases (used for parsing and error messages).
CHOICES: dict[str, tuple[str, ...]] = {
    "ideal": get_args(Ideal),
    "unjudged": get_args(Unjudged),
    "ties": get_args(Ties),
    "precision": get_args(Precision),
    "negative": get_args(Negative),
    "missing_queries": get_args(MissingQueries),
    "extra_queries": get_args(ExtraQueries),
    "no_relevant": get_args(NoRelevant),
    "mean": get_args(Mean),
    "cutoff_denominator": get_args(CutoffDenominator),
    "missing_score": get_args(MissingScore),
    "counts": get_args(Counts),
    "rbp_gain": get_args(RbpGain),
    "rbp_residual": get_args(RbpResidual),
    "iprec_cutoff": get_args(IprecCutoff),
    "nonpositive": get_args(Nonpositive),
    "ap_denominator": get_args(ApDenominator),
    "summation": get_args(Summation),
}

#: The named profiles, in the order of :data:`PROFILE_AXES` (their one list: the command line's choices,
#: :data:`qrelkit.measures.profiles.PROFILES`, the tests).
PROFILE_NAMES: tuple[str, ...] = tuple(PROFILE_AXES)
GAIN_NAMES: tuple[GainName, ...] = get_args(GainName)


def parse_gain(value: str | GainMap | Mapping[int, float]) -> Gain:
    if isinstance(value, GainMap):
        return value
    if isinstance(value, Mapping):
        return GainMap.from_mapping(value)
    text = str(value).strip()
    for name in GAIN_NAMES:
        if text == name:
            return name
    if text in ("exp", "exp2", "exponential2"):
        raise ConventionError(f"unknown gain {text!r} (did you mean 'exponential'?)")
    if any(ch in text for ch in ":={"):
        return GainMap.parse(text)
    raise ConventionError(
        f"unknown gain {text!r}{did_you_mean(text, GAIN_NAMES)}",
        expected="exponential, linear, or a map such as {0:0,1:1,2:3,3:7}",
    )


def parse_discount(value: str | float) -> float:
    """``log2`` -> 2.0, ``ln`` -> e, ``log10`` -> 10.0, ``log1.5`` -> 1.5; a number is taken as the base."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        base = float(value)
    else:
        text = str(value).strip().lower()
        if text == "ln":
            base = math.e
        else:
            match = re.fullmatch(r"log\s*([0-9]*\.?[0-9]+)", text)
            if not match:
                raise ConventionError(
                    f"unknown discount {value!r}",
                    expected="log2 (1/log2(i+1)), ln, log10, or log<b> for another base",
                )
            base = float(match.group(1))
    if not (base > 1 and math.isfinite(base)):
        raise ConventionError(f"discount base {base} must be a finite number greater than 1")
    return base


def format_discount(base: float) -> str:
    if base == math.e:
        return "ln"
    return f"log{_num(base)}"


#: Axes a profile may set for one measure family (:attr:`Conventions.by_measure`), in the order written.
MEASURE_AXES = (
    "gain",
    "discount",
    "ideal",
    "unjudged",
    "ties",
    "precision",
    "negative",
    "no_relevant",
    "cutoff_denominator",
    "max_grade",
    "persistence",
    "rbp_gain",
    "rbp_residual",
    "iprec_cutoff",
    "nonpositive",
    "ap_denominator",
    "printed_decimals",
    "summation",
    "missing_score",
)

MeasureAxes = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

_FAMILY_RE = re.compile(r"\s*([A-Za-z][A-Za-z_\-]*(?:@k)?)\s*(?:\[([^\]]*)\])?\s*\((.*)\)\s*", re.S)
_FAMILY_NAME_RE = re.compile(r"([A-Za-z][A-Za-z_\-]*(?:@k)?)(?:\[([^\]]*)\])?")


def _axis_value(axis: str, value: Any, source: str) -> str:
    """One per-family axis value, checked and in its written form."""
    if axis not in MEASURE_AXES:
        raise ConventionError(
            f"axis {axis!r} cannot be set per measure{did_you_mean(axis, MEASURE_AXES)}",
            got=source,
            expected="axes " + ", ".join(MEASURE_AXES),
        )
    if axis == "gain":
        gain = parse_gain(value)
        return str(gain)
    if axis == "discount":
        return format_discount(parse_discount(value))
    if axis == "max_grade":
        return str(parse_max_grade(value))
    if axis == "persistence":
        return _num(parse_persistence(value))
    if axis == "printed_decimals":
        return format_printed_decimals(parse_printed_decimals(value))
    text = str(value).strip()
    if text not in CHOICES[axis]:
        raise ConventionError(
            f"unknown {axis} {text!r}{did_you_mean(text, CHOICES[axis])}",
            got=source,
            expected="one of " + ", ".join(CHOICES[axis]),
        )
    return text


def _split_top(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch in "({") - (ch in ")}")
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _axes_of(text: str, source: str) -> dict[str, str]:
    """``axis=value,...`` as a dict of the raw values."""
    axes: dict[str, str] = {}
    for pair in _split_top(text, ","):
        if "=" not in pair:
            raise ConventionError(f"per-measure axis {pair!r} has no value", got=source)
        axis, raw = (x.strip() for x in pair.split("=", 1))
        axes[axis] = raw
    return axes


def _family(text: str) -> str:
    """A family in its written form: ``NAME`` or ``NAME@k``, either with conditions ``[axis=value,...]``
    (checked, in :data:`MEASURE_AXES` order)."""
    match = _FAMILY_NAME_RE.fullmatch(text.strip())
    if not match:
        raise ConventionError(
            f"{text!r} is not a measure family",
            expected="a name such as RR or RR@k, with conditions such as nDCG@k[gain=exponential]",
        )
    name, conditions = match.group(1), match.group(2)
    if conditions is None:
        return name
    given = {a: _axis_value(a, v, f"{name}[{a}={v}]") for a, v in _axes_of(conditions, text).items()}
    if not given:
        raise ConventionError(f"{text!r} has empty conditions", fix=f"write {name} without brackets")
    return name + "[" + ",".join(f"{axis}={given[axis]}" for axis in MEASURE_AXES if axis in given) + "]"


def family_conditions(family: str) -> tuple[str, bool, tuple[tuple[str, str], ...]]:
    """A family's measure name, whether it is ``@k`` (the measure with a cutoff only), and its conditions
    (``nDCG@k[gain=exponential]``: ``("nDCG", True, (("gain", "exponential"),))``)."""
    match = _FAMILY_NAME_RE.fullmatch(family)
    assert match is not None  # families are checked when conventions are built
    name = match.group(1)
    conditions = tuple(_axes_of(match.group(2) or "", family).items())
    return name.removesuffix("@k"), name.endswith("@k"), conditions


def parse_by_measure(value: Any) -> MeasureAxes:
    """Per-family axes from their written form (``RR@k(ties=docid_asc); Judged(negative=zero);
    nDCG@k[gain=exponential](discount=ln)``), a mapping ``{family: {axis: value}}``, or the tuple form;
    ``none`` or empty for none. Families sorted, axes (and conditions) in :data:`MEASURE_AXES` order."""
    if value is None:
        return ()
    items: dict[str, dict[str, str]] = {}
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "none"):
            return ()
        for part in _split_top(text, ";"):
            match = _FAMILY_RE.fullmatch(part)
            if not match:
                raise ConventionError(
                    f"cannot read per-measure axes {part!r}",
                    got=value,
                    expected="FAMILY(axis=value,...) separated by ';', e.g. RR@k(ties=docid_asc)",
                )
            family = match.group(1) + (f"[{match.group(2)}]" if match.group(2) is not None else "")
            items[family] = _axes_of(match.group(3), value)
    elif isinstance(value, Mapping):
        items = {str(k): dict(v) for k, v in value.items()}
    else:
        items = {str(family): dict(axes) for family, axes in value}
    checked = {_family(written): axes for written, axes in items.items()}
    out = []
    for family in sorted(checked):
        given = {axis: _axis_value(axis, v, f"{family}({axis}={v})") for axis, v in checked[family].items()}
        if given:
            out.append((family, tuple((axis, given[axis]) for axis in MEASURE_AXES if axis in given)))
    return tuple(out)


def parse_printed_decimals(value: Any) -> int | None:
    """The decimals per-query values are rounded to: ``none`` (or ``None``) or a whole number from 0 to
    :data:`MAX_PRINTED_DECIMALS`."""
    if value is None:
        return None
    text = str(value).strip()
    if text == "none":
        return None
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", text) or int(text) > MAX_PRINTED_DECIMALS:
        raise ConventionError(
            f"printed_decimals {value!r} is not none or a whole number from 0 to {MAX_PRINTED_DECIMALS}",
            expected="none, or e.g. 5 (gdeval.pl prints %.5f)",
        )
    return int(text)


def format_printed_decimals(value: int | None) -> str:
    return "none" if value is None else str(value)


def parse_max_grade(value: Any) -> int:
    """ERR's max grade: a whole number from 1 to 30."""
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= 30:
        raise ConventionError(f"max_grade {value!r} is not a whole number from 1 to 30", expected="e.g. 4")
    return int(text)


def parse_persistence(value: Any) -> float:
    """RBP's persistence: a number strictly between 0 and 1."""
    try:
        p = float(value)
    except (TypeError, ValueError):
        p = math.nan
    if isinstance(value, bool) or not 0.0 < p < 1.0:
        raise ConventionError(
            f"persistence {value!r} is not a number strictly between 0 and 1", expected="e.g. 0.8"
        )
    return p


def format_by_measure(value: MeasureAxes) -> str:
    if not value:
        return "none"
    return "; ".join(f"{family}({','.join(f'{a}={v}' for a, v in axes)})" for family, axes in value)


@dataclass(frozen=True)
class Conventions:
    """The full set of choices behind a number. Defaults are the chapter's; see the module docstring."""

    gain: Gain = "exponential"
    discount: float = 2.0
    ideal: Ideal = "judged"
    unjudged: Unjudged = "zero"
    ties: Ties = "average"
    precision: Precision = "double"
    negative: Negative = "unjudged"
    missing_queries: MissingQueries = "zero"
    extra_queries: ExtraQueries = "skip"
    no_relevant: NoRelevant = "zero"
    mean: Mean = "defined"
    cutoff_denominator: CutoffDenominator = "k"
    missing_score: MissingScore = "empty"
    counts: Counts = "mean"
    max_grade: int = 4
    persistence: float = 0.8
    rbp_gain: RbpGain = "binary"
    rbp_residual: RbpResidual = "always"
    iprec_cutoff: IprecCutoff = "round"
    nonpositive: Nonpositive = "retrieved"
    ap_denominator: ApDenominator = "relevant"
    printed_decimals: int | None = None
    summation: Summation = "exact"
    by_measure: MeasureAxes = ()
    profile: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.profile is not None and self.profile not in PROFILE_AXES:
            raise ConventionError(
                f"unknown profile {self.profile!r}{did_you_mean(str(self.profile), PROFILE_AXES)}",
                expected="one of " + ", ".join(PROFILE_AXES),
            )
        object.__setattr__(self, "gain", parse_gain(self.gain))
        object.__setattr__(self, "discount", parse_discount(self.discount))
        object.__setattr__(self, "by_measure", parse_by_measure(self.by_measure))
        object.__setattr__(self, "max_grade", parse_max_grade(self.max_grade))
        object.__setattr__(self, "persistence", parse_persistence(self.persistence))
        object.__setattr__(self, "printed_decimals", parse_printed_decimals(self.printed_decimals))
        for axis, choices in CHOICES.items():
            value = getattr(self, axis)
            if value not in choices:
                raise ConventionError(
                    f"unknown {axis} {value!r}{did_you_mean(str(value), choices)}",
                    expected="one of " + ", ".join(choices),
                )

    # -- conversion ----------------------------------------------------------------------------------------

    def axes(self) -> dict[str, str]:
        """Every axis, defaults included, as strings (no profile name)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "profile":
                continue
            if f.name == "gain":
                out[f.name] = str(value)
            elif f.name == "discount":
                out[f.name] = format_discount(value)
            elif f.name == "by_measure":
                out[f.name] = format_by_measure(value)
            elif f.name == "printed_decimals":
                out[f.name] = format_printed_decimals(value)
            else:
                out[f.name] = str(value)
        return out

    def to_dict(self) -> dict[str, str]:
        """Every axis, defaults included, as strings, and the profile label (the form written into every
        output file): ``"none"``, a profile name, or ``"<name> with <axis>=<value>,..."`` when axes were
        changed after the profile was chosen."""
        return self.axes() | {"profile": self.profile_label()}

    def profile_label(self) -> str:
        if self.profile is None:
            return "none"
        changed = Conventions(**PROFILE_AXES[self.profile]).differences(self)
        if not changed:
            return self.profile
        return f"{self.profile} with " + ",".join(f"{axis}={new}" for axis, _, new in changed)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Conventions:
        """Read back :meth:`to_dict` (the profile label may be absent, ``none``, a name, or a name with
        changes; the axes given are what count)."""
        data = dict(data)
        label = data.pop("profile", None)
        known = {f.name for f in fields(cls)} - {"profile"}
        unknown = [k for k in data if k not in known]
        if unknown:
            raise ConventionError(
                f"unknown convention axis {unknown[0]!r}{did_you_mean(unknown[0], known)}",
                expected="axes " + ", ".join(sorted(known)),
            )
        profile = None
        if label not in (None, "none"):
            profile = str(label).split(" with ", 1)[0]
        return cls(**data, profile=profile)

    @classmethod
    def from_profile(cls, name: str) -> Conventions:
        """The conventions of a named profile (:data:`PROFILE_AXES`; :mod:`qrelkit.measures.profiles` for the rest)."""
        if name not in PROFILE_AXES:
            raise ConventionError(
                f"unknown profile {name!r}{did_you_mean(name, PROFILE_AXES)}",
                expected="one of " + ", ".join(PROFILE_AXES),
            )
        return cls(**PROFILE_AXES[name], profile=name)

    def with_(self, **changes: Any) -> Conventions:
        """A copy with some axes changed (validated like the constructor)."""
        known = {f.name for f in fields(self)}
        for key in changes:
            if key not in known:
                raise ConventionError(
                    f"unknown convention axis {key!r}{did_you_mean(key, known)}",
                    expected="axes " + ", ".join(sorted(known)),
                )
        return replace(self, **changes)

    def differences(self, other: Conventions) -> list[tuple[str, str, str]]:
        """The axes on which two conventions differ: ``[(axis, self_value, other_value), ...]``. The
        profile label is not an axis: conventions spelled out flag by flag equal the profile's."""
        a, b = self.axes(), other.axes()
        return [(k, a[k], b[k]) for k in a if a[k] != b[k]]

    def measure_axes(self, name: str, with_cutoff: bool, own: Conventions | None = None) -> dict[str, str]:
        """The axes :attr:`by_measure` sets for the measure ``name`` (with a cutoff or without), whose own
        conventions (these, with the measure's own parameters; these by default) are ``own``: a family
        with conditions (``nDCG@k[gain=exponential]``) applies only where ``own`` meets every one."""
        out: dict[str, str] = {}
        written = (own or self).axes() if any("[" in family for family, _ in self.by_measure) else {}
        for family, axes in self.by_measure:
            base, at_k, conditions = family_conditions(family)
            if base != name or (at_k and not with_cutoff):
                continue
            if all(written[axis] == value for axis, value in conditions):
                out.update(axes)
        return out

    def __str__(self) -> str:
        text = ", ".join(f"{k}={v}" for k, v in self.axes().items())
        return text if self.profile is None else f"{text}, profile={self.profile_label()}"

    # -- numbers -------------------------------------------------------------------------------------------

    def gain_of(self, grade: int) -> float:
        """The gain of one grade (for explanations and the reference oracle; kernels vectorise this)."""
        if isinstance(self.gain, GainMap):
            value = self.gain.gain(grade)
            if value is None:
                raise ConventionError(
                    f"grade {grade} is not in the gain map {self.gain}",
                    fix="add the grade to the gain map",
                )
            return value
        if self.gain == "linear":
            return float(grade)
        return float(2**grade - 1)


DEFAULT = Conventions()

#: The per-measure parameters that override conventions in a measure string such as nDCG(gain=linear)@10.
RANKING_AXES = ("gain", "discount", "ideal", "unjudged", "ties", "precision", "negative", "no_relevant")
