"""trec_eval's measure vocabulary: its names, nicknames, ``-m name.params`` parameters and printed names.

This module is the one place that knows how trec_eval spells a measure. ``qrelkit trec_eval`` selects
measures with :func:`select`, and ``qrelkit eval -m`` reads trec_eval's names (``P_10``, ``P.10``,
``P.5,7,3``, ``ndcg_cut.10``, ``map``, ``recip_rank``, ``official``, ``all_trec``) through
:func:`qrelkit_measures`, so both speak the same language. The definitions of the measures themselves are
in :mod:`qrelkit.engine.trec.kernels`.

Parameter kinds follow trec_eval's ``meas_init.c``: whole-number cutoffs (sorted, printed ``P_10``),
fractional cutoffs (sorted, printed ``iprec_at_recall_0.10`` with ``%3.2f``), a list of numbers printed as
given (``utility_2,-1,0,0``), and ``name=value`` pairs printed as given (``ndcg_1=3,2=9``).
"""

from __future__ import annotations

from ..errors import MeasureSyntaxError, did_you_mean

# kind: "long" (one value, printed as a whole number and summed over queries), "double" (one value, mean),
# "cut" (whole-number cutoffs), "fcut" (fractional cutoffs), "list" (numbers), "pairs" (name=value),
# "gm" (geometric mean, summary only), "runid", "num_q", "string" (relstring)
_SPECS: list[tuple[str, str, str | None]] = [
    ("runid", "runid", None),
    ("num_q", "num_q", None),
    ("num_ret", "long", None),
    ("num_rel", "long", None),
    ("num_rel_ret", "long", None),
    ("map", "double", None),
    ("gm_map", "gm", None),
    ("Rprec", "double", None),
    ("bpref", "double", None),
    ("recip_rank", "double", None),
    ("iprec_at_recall", "fcut", "0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1"),
    ("P", "cut", "5,10,15,20,30,100,200,500,1000"),
    ("relstring", "string", "10"),
    ("recall", "cut", "5,10,15,20,30,100,200,500,1000"),
    ("infAP", "double", None),
    ("gm_bpref", "gm", None),
    ("Rprec_mult", "fcut", "0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0"),
    ("utility", "list", "1,-1,0,0"),
    ("11pt_avg", "list", "0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1"),
    ("binG", "double", None),
    ("G", "pairs", ""),
    ("ndcg", "pairs", ""),
    ("ndcg_rel", "pairs", ""),
    ("Rndcg", "pairs", ""),
    ("ndcg_cut", "cut", "5,10,15,20,30,100,200,500,1000"),
    ("map_cut", "cut", "5,10,15,20,30,100,200,500,1000"),
    ("relative_P", "cut", "5,10,15,20,30,100,200,500,1000"),
    ("success", "cut", "1,5,10"),
    ("set_P", "double", None),
    ("set_relative_P", "double", None),
    ("set_recall", "double", None),
    ("set_map", "double", None),
    ("set_F", "list", "1.0"),
    ("num_nonrel_judged_ret", "long", None),
    ("rbp", "pairs", ""),
    ("rbp_resid", "pairs", ""),
    ("unj", "cut", "5,10,20"),
]

ORDER = [name for name, _, _ in _SPECS]
"""trec_eval's measures in the order it computes and prints them (``measures.c``)."""
KIND = {name: kind for name, kind, _ in _SPECS}
DEFAULT_PARAMS = {name: default for name, _, default in _SPECS}

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid",
                 "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success",
                 "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall",
                 "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"),
}  # fmt: skip
"""trec_eval 10's nicknames (``measures.c``); its preference and ``qrels_jg`` measures are not offered."""


class TrecMeasure:
    """One trec_eval measure as selected: its name, kind, parameter text and parsed values. A frozen
    record written out (not a dataclass: ``dataclasses`` loads ``inspect``, which ``qrelkit trec_eval``'s
    start-up, :mod:`qrelkit.evaluation.trec_lean`, does without)."""

    __slots__ = ("given", "kind", "name", "params")
    name: str
    kind: str
    params: str | None  # the text after the first '.', or the default (None: takes none)
    given: bool  # parameters came from the command line

    def __init__(self, name: str, kind: str, params: str | None, given: bool) -> None:
        for field, value in (("name", name), ("kind", kind), ("params", params), ("given", given)):
            object.__setattr__(self, field, value)

    def _fields(self) -> tuple[str, str, str | None, bool]:
        return (self.name, self.kind, self.params, self.given)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"TrecMeasure(name={self.name!r}, kind={self.kind!r}, params={self.params!r}, given={self.given!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    @property
    def values(self) -> list[float]:
        if self.kind in ("cut", "fcut", "list", "string"):
            return [_number(v, self) for v in (self.params or "").split(",")]
        return []

    @property
    def cutoffs(self) -> list[int]:
        """Whole-number cutoffs, sorted (``atol`` of each, as trec_eval reads them)."""
        return sorted(_atol(v) for v in (self.params or "").split(","))

    @property
    def fractions(self) -> list[float]:
        return sorted(self.values)

    @property
    def pairs(self) -> list[tuple[str, float]]:
        out = []
        for part in filter(None, (self.params or "").split(",")):
            key, _, value = part.partition("=")
            out.append((key, _number(value, self)))
        return out

    def printed_names(self) -> list[str]:
        """The names trec_eval prints for this measure, one per value it reports."""
        if self.kind == "cut":
            return [f"{self.name}_{c}" for c in self.cutoffs]
        if self.kind == "fcut":
            return [f"{self.name}_{v:3.2f}" for v in self.fractions]
        if self.kind in ("list", "pairs", "string") and self.given and self.params:
            return [f"{self.name}_{self.params}"]
        return [self.name]


#: The largest cutoff of any measure, in qrelkit's grammar (``nDCG@k``) and trec_eval's (``P.k``), and of
#: ``qrelkit trec_eval -M``: a ranking longer than a billion documents for one query
#: exceeds what any run file within the readers' bounds holds, so a larger number is a typo; and every
#: position is then exact in the 64-bit integers the kernels count in.
MAX_CUTOFF = 1_000_000_000


def _atol(text: str) -> int:
    import re  # (loaded on use: qrelkit trec_eval's native reader reads only the names here)

    match = re.match(r"\s*[-+]?\d+", text)
    return int(match.group(0)) if match else 0


def _number(text: str, m: TrecMeasure) -> float:
    import re

    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    if not match:
        raise MeasureSyntaxError(
            f"trec_eval measure {m.name!r}: parameter {text!r} is not a number",
            got=f"{m.name}.{m.params}",
            expected="numbers separated by commas, e.g. P.5,10",
        )
    return float(match.group(0))


def _unknown(name: str) -> MeasureSyntaxError:
    return MeasureSyntaxError(
        f"unknown trec_eval measure {name!r}{did_you_mean(name, ORDER + list(NICKNAMES))}",
        expected="a trec_eval measure (map, P, ndcg_cut, ...) or a nickname (official, set, all_trec)",
    )


def select(args: list[str] | tuple[str, ...]) -> list[TrecMeasure]:
    """The measures ``-m`` arguments select, in trec_eval's printing order (``official`` when none).

    As in trec_eval, ``name.params`` sets a measure's parameters (the first setting wins) and marks it;
    a nickname marks its members with their defaults."""
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in args or ("official",):
        name, dot, rest = arg.partition(".")
        if dot:
            if not rest:
                raise MeasureSyntaxError(f"trec_eval measure {name!r} has an empty parameter list", got=arg)
            if name in NICKNAMES or name not in KIND:
                raise _unknown(name)
            if KIND[name] not in ("cut", "fcut", "list", "pairs", "string"):
                raise MeasureSyntaxError(f"trec_eval measure {name!r} takes no parameters", got=arg)
            params.setdefault(name, rest)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in KIND:
            marked.add(name)
        else:
            raise _unknown(name)
    out = []
    for name in ORDER:
        if name in marked:
            given = name in params
            m = TrecMeasure(name, KIND[name], params.get(name, DEFAULT_PARAMS[name]), given)
            _check(m, arg=f"{name}.{m.params}")
            out.append(m)
    return out


def _check(m: TrecMeasure, arg: str) -> None:
    if m.kind == "cut":
        cuts = m.cutoffs
        if cuts[0] <= 0:
            raise MeasureSyntaxError(f"{m.name}: cutoffs must be positive", got=arg)
        if len(set(cuts)) != len(cuts):
            raise MeasureSyntaxError(f"{m.name}: a cutoff is given twice", got=arg)
        if max(cuts) > MAX_CUTOFF:
            raise MeasureSyntaxError(
                f"{m.name}: a cutoff is larger than {MAX_CUTOFF:,} (no ranking is that long)", got=arg
            )
    elif m.kind == "fcut":
        fr = m.fractions
        if len(set(fr)) != len(fr):
            raise MeasureSyntaxError(f"{m.name}: a cutoff is given twice", got=arg)
    elif m.kind == "list":
        values = m.values
        if m.name == "utility" and len(values) != 4:
            raise MeasureSyntaxError("utility takes 4 coefficients", got=arg, expected="utility.a,b,c,d")
    elif m.kind == "pairs" and m.params:
        for part in m.params.split(","):
            if "=" not in part:
                raise MeasureSyntaxError(f"{m.name}: parameter {part!r} is not name=value", got=arg)
        m.pairs  # noqa: B018  (parses the numbers, raising on a bad one)


# ------------------------------------------------------------------------ trec_eval names in `eval -m`

_SIMPLE = {
    "map": "AP(rel={rel})",
    "Rprec": "Rprec(rel={rel})",
    "recip_rank": "RR(rel={rel})",
    "ndcg": "nDCG",
    "num_rel": "NumRel(rel={rel})",
    "num_ret": "NumRet",
    "num_rel_ret": "NumRelRet(rel={rel})",
    "bpref": "bpref(rel={rel})",
    "infAP": "infAP(rel={rel})",
    "set_P": "SetP(rel={rel})",
    "set_recall": "R(rel={rel})",
    "num_nonrel_judged_ret": "NumNonRelJudgedRet(rel={rel})",
    "binG": "binG(rel={rel})",
}
_CUT = {
    "P": "P(rel={rel})@{k}",
    "recall": "R(rel={rel})@{k}",
    "ndcg_cut": "nDCG@{k}",
    "map_cut": "AP(rel={rel})@{k}",
    "success": "Success(rel={rel})@{k}",
    "relative_P": "RelP(rel={rel})@{k}",
    "unj": "Unjudged@{k}",
}


def qrelkit_measures(text: str, rel: int = 1) -> list[str] | None:
    """qrelkit's spelling of a trec_eval measure name (``P_10``, ``P.10``, ``P.5,7,3``, ``ndcg_cut.10``,
    ``map``, ``recip_rank``, a nickname), or ``None`` when ``text`` is not one of trec_eval's names."""
    if text in NICKNAMES:
        out: list[str] = []
        for name in NICKNAMES[text]:
            out += _nickname_member(name, rel)
        return out
    if text in _SIMPLE:
        return [_SIMPLE[text].format(rel=rel)]
    if text in ("gm_map", "gm_bpref", "utility", "11pt_avg", "G", "ndcg_rel", "Rndcg", "set_relative_P",
                "set_map", "set_F", "rbp", "rbp_resid", "iprec_at_recall", "Rprec_mult"):  # fmt: skip
        return _nickname_member(text, rel)
    import re

    fractional = re.fullmatch(r"(iprec_at_recall|Rprec_mult)[_.](\d*\.?\d+(?:,\d*\.?\d+)*)", text)
    if fractional:
        key = "recall" if fractional.group(1) == "iprec_at_recall" else "mult"
        name = "IPrec" if key == "recall" else "Rprec"
        return [f"{name}(rel={rel},{key}={float(v)!r})" for v in fractional.group(2).split(",")]
    match = re.fullmatch(r"([A-Za-z][A-Za-z_]*?)(?:_(\d+)|\.(\d+(?:,\d+)*))", text)
    if match and match.group(1) in _CUT:
        ks = [match.group(2)] if match.group(2) else match.group(3).split(",")
        return [_CUT[match.group(1)].format(rel=rel, k=int(k)) for k in ks]
    return None


#: trec_eval 10's rbp and rbp_resid (m_rbp.c, m_rbp_resid.c) in qrelkit's grammar: RBP under the axes the
#: trec_eval profile sets
_RBP = "RBP(rel=1,persistence=0.9,rbp_gain=scaled)"
_RBP_RESID = "RBP_resid(rel=1,persistence=0.9,rbp_residual=if_unjudged)"


def _nickname_member(name: str, rel: int) -> list[str]:
    """A nickname's member with trec_eval's default parameters, where qrelkit's grammar holds it."""
    if name in _CUT:
        return [_CUT[name].format(rel=rel, k=int(k)) for k in (DEFAULT_PARAMS[name] or "").split(",")]
    extra = {
        "gm_map": [f"AP(rel={rel},summary=gmean)"],
        "gm_bpref": [f"bpref(rel={rel},summary=gmean)"],
        "iprec_at_recall": [
            f"IPrec(rel={rel},recall={r})" for r in (DEFAULT_PARAMS["iprec_at_recall"] or "").split(",")
        ],
        "Rprec_mult": [f"Rprec(rel={rel},mult={m})" for m in (DEFAULT_PARAMS["Rprec_mult"] or "").split(",")],
        "utility": [f"Utility(rel={rel})"],
        "11pt_avg": [f"IPrecMean(rel={rel})"],
        "G": ["G"],
        "ndcg_rel": ["nDCGRel"],
        "Rndcg": ["RnDCG"],
        "set_relative_P": [f"SetRelP(rel={rel})"],
        "set_map": [f"SetAP(rel={rel})"],
        "set_F": [f"SetF(rel={rel})"],
        # trec_eval's rbp ignores -l (every positive grade has a gain): the threshold stays 1
        "rbp": [_RBP],
        "rbp_resid": [_RBP_RESID],
    }
    if name in extra:
        return extra[name]
    return qrelkit_measures(name, rel) or []


def is_trec_name(text: str) -> bool:
    return text in KIND or text in NICKNAMES or qrelkit_measures(text) is not None


# ------------------------------------------------------------------- qrelkit measures in trec_eval's names

_COUNTS = {"NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret",
           "NumNonRelJudgedRet": "num_nonrel_judged_ret"}  # fmt: skip
_PLAIN = {"infAP": "infAP", "binG": "binG", "G": "G", "nDCGRel": "ndcg_rel", "RnDCG": "Rndcg",
          "SetP": "set_P", "SetRelP": "set_relative_P", "SetAP": "set_map", "RR": "recip_rank"}  # fmt: skip
_AT = {"P": "P", "R": "recall", "nDCG": "ndcg_cut", "AP": "map_cut", "Success": "success", "RelP": "relative_P",
       "Unjudged": "unj"}  # fmt: skip


def is_count(measure: object) -> bool:
    """Whether trec_eval sums this measure over queries in its summary (counts) instead of averaging."""
    return getattr(measure, "name", None) in _COUNTS and getattr(measure, "k", None) is None


def trec_name(measure: object) -> str | None:
    """The name trec_eval prints for a qrelkit measure (``P(rel=1)@10`` -> ``P_10``), or ``None``."""
    name, k = getattr(measure, "name", ""), getattr(measure, "k", None)
    params = dict(getattr(measure, "params", ()))
    if k is None and name in _COUNTS:
        return _COUNTS[name]
    if k is None and name in _PLAIN:
        return _PLAIN[name]
    if k is not None and name in _AT and not params:
        return f"{_AT[name]}_{k}"
    if k is not None:
        return None
    if name == "AP":
        return "gm_map" if params.get("summary") == "gmean" else "map"
    if name == "bpref":
        return "gm_bpref" if params.get("summary") == "gmean" else "bpref"
    if name == "Rprec":
        return f"Rprec_mult_{float(params['mult']):3.2f}" if "mult" in params else "Rprec"
    if name == "R":
        return "set_recall"
    if name == "nDCG":
        return "ndcg"
    if name == "IPrec":
        return f"iprec_at_recall_{float(params.get('recall', 0)):3.2f}"
    simple = {"IPrecMean": "11pt_avg", "SetF": "set_F", "Utility": "utility"}
    if name in simple and not params:
        return simple[name]
    if str(measure) in (_RBP, _RBP_RESID):
        return "rbp" if name == "RBP" else "rbp_resid"
    return None
