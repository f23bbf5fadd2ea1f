"""ir_measures' measure names, translated to qrelkit's measure grammar.

ir_measures writes ``Name(param=value,...)@cutoff`` (``P@10``, ``nDCG(dcg='exp-log2')@10``,
``RBP(p=0.8,rel=2)`` (RBP's ``p`` is qrelkit's ``persistence``), ``NumRet(rel=1)``, ``AP(judged_only=True)``). Most names are qrelkit's own; this module
maps the rest (aliases such as ``MAP``, ``MRR``, ``NDCG``, ``Recall``, ``RPrec``) and the parameters qrelkit
spells as conventions: ``judged_only=True`` is ``unjudged=drop``, ``dcg='log2'`` / ``dcg='exp-log2'`` are
``gain=linear`` / ``gain=exponential``, ``gains={...}`` is a gain map, and ``NumRet(rel=r)`` (relevant
documents retrieved) is ``NumRelRet(rel=r)``. :func:`qrelkit.measures.grammar.parse` calls :func:`translate` for a
name or a parameter it does not know, so ``qrelkit eval -m`` takes ir_measures' names as they are.

The measure is qrelkit's (computed under the evaluation's conventions, written beside every number); to
reproduce ir_measures' numbers as well, evaluate under ``--profile ir_measures``.
"""

from __future__ import annotations

import re

#: ir_measures 0.4.3's measure names (``ir_measures.measures.registry``) and their qrelkit names; ``None``
#: where qrelkit has no such measure.
IRM_NAMES: dict[str, str | None] = {
    "AP": "AP",
    "MAP": "AP",
    "P": "P",
    "Precision": "P",
    "R": "R",
    "Recall": "R",
    "RR": "RR",
    "MRR": "RR",
    "Rprec": "Rprec",
    "RPrec": "Rprec",
    "nDCG": "nDCG",
    "NDCG": "nDCG",
    "Judged": "Judged",
    "NumRel": "NumRel",
    "NumRet": "NumRet",
    "NumRelRet": "NumRelRet",
    "ERR": "ERR",
    "RBP": "RBP",
    "Success": "Success",
    "Bpref": "bpref",
    "BPref": "bpref",
    "infAP": "infAP",
    "IPrec": "IPrec",
    "SetP": "SetP",
    "SetR": "R",
    "SetF": "SetF",
    "SetAP": "SetAP",
    "SetRelP": "SetRelP",
    "NumQ": "NumQ",
    "SDCG": "SDCG",
    "alpha_nDCG": "alpha_nDCG",
    "α_nDCG": "alpha_nDCG",
    "alpha_DCG": None,
    "α_DCG": None,
    "ERR_IA": "ERR_IA",
    "nERR_IA": None,
    "AP_IA": None,
    "MAP_IA": None,
    "P_IA": None,
    "NRBP": None,
    "nNRBP": None,
    "StRecall": None,
    "Compat": "Compat",
    "INST": "INST",
    "INSQ": "INSQ",
    "BPM": "BPM",
    "Accuracy": "Accuracy",
    "NERR8": "NERR8",
    "NERR9": "NERR9",
    "NERR10": "NERR10",
    "NERR11": "NERR11",
}

#: ir_measures' parameters that qrelkit spells as conventions or under another name (``SetP(relative=True)``
#: is qrelkit's ``SetRelP``)
IRM_PARAMS = ("judged_only", "dcg", "gains", "relative", "min_rel", "max_rel")

_TRUE, _FALSE = ("True", "true", "1"), ("False", "false", "0")

_DCG = {"log2": "linear", "exp-log2": "exponential"}


class TranslationError(ValueError):
    """An ir_measures name or parameter with no qrelkit equivalent (the parser words the error)."""


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def needs_translation(name: str, params: list[tuple[str, str]], cutoff: str | None = None) -> bool:
    """Whether a measure written ``name(params)@cutoff`` uses ir_measures' vocabulary rather than
    qrelkit's (``IPrec@0.5``: ir_measures writes the recall level as the cutoff)."""
    keys = {k for k, _ in params}
    if name == "IPrec" and cutoff is not None and "recall" not in keys:
        return True
    if keys & set(IRM_PARAMS):
        return True
    if name == "NumRet" and "rel" in keys:
        return True
    if name == "RBP" and "p" in keys:
        return True
    return name in IRM_NAMES and IRM_NAMES[name] != name


def translate(name: str, params: list[tuple[str, str]], k: str | None) -> str:
    """The qrelkit spelling of ir_measures' ``name(params)@k``. Raises :class:`TranslationError` for a
    measure or parameter qrelkit lacks."""
    target = IRM_NAMES.get(name, name)
    if target is None:
        raise TranslationError(f"ir_measures' {name} has no qrelkit measure")
    out: list[str] = []
    keys = {key for key, _ in params}
    if name == "NumRet" and "rel" in keys:
        target = "NumRelRet"
    for key, raw in params:
        value = _unquote(raw)
        if key in ("judged_only", "relative") and value not in _TRUE + _FALSE:
            raise TranslationError(f"{key}={value!r} is not True or False")
        if key == "judged_only":
            if value in _TRUE:
                out.append("unjudged=drop")
        elif key == "relative":  # SetP(relative=True): relevant returned / min(returned, R)
            if name != "SetP":
                raise TranslationError(f"relative= is a parameter of ir_measures' SetP, not of {name}")
            if value in _TRUE:
                target = "SetRelP"
        elif key == "max_rel":  # the C/W/L family's gains: grade / max_rel (qrelkit's max_grade)
            out.append(f"max_grade={value}")
        elif key == "min_rel":
            if value != "0":
                raise TranslationError(f"min_rel={value}: qrelkit's C/W/L gains start at grade 0 (min_rel=0)")
        elif key == "dcg" and name == "SDCG":
            if value != "log2":
                raise TranslationError(f"dcg={value!r}: SDCG is cwl_eval's, over log2 discounts")
        elif key == "dcg":
            if value not in _DCG:
                raise TranslationError(f"dcg={value!r}: qrelkit knows {', '.join(_DCG)}")
            out.append(f"gain={_DCG[value]}")
        elif key == "p" and name == "RBP":
            out.append(f"persistence={value}")
        elif key == "gains":
            if not re.fullmatch(r"\{.*\}", value.strip(), re.S):
                raise TranslationError(f"gains={value!r} is not a map such as {{0:0,1:1,2:3}}")
            # ir_measures keeps a grade the map does not list as its own gain (gains.get(grade, grade))
            out.append(f"gain={value.replace(' ', '')[:-1]},else:grade}}")
        else:
            out.append(f"{key}={value}")
    if name == "IPrec" and k is not None:  # ir_measures' IPrec@r: interpolated precision at recall r
        out.append(f"recall={k}")
        k = None
    text = target + (f"({','.join(out)})" if out else "")
    return text + (f"@{k}" if k is not None else "")
