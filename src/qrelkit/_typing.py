"""Closed option sets shared by the library and the command line, as documented Literal aliases.

Kept free of heavy imports so that the command line can build its options without loading polars, and
free of :mod:`typing` and :mod:`pathlib` at run time, which ``qrelkit trec_eval``'s start-up does without
(about 10 ms of a 40 ms command on a small run, ``benchmarks/startup_floor.py``): each option set is a tuple
(``FORMAT_CHOICES``, ...), the one spelling at run time; its ``Literal`` alias (``Format``, ...) is spelled
for type checkers below and built from the tuple on first use (:func:`__getattr__`);
``tests/test_option_sets.py`` holds the two spellings equal.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

#: Input formats. ``auto`` picks by suffix (.jsonl/.ndjson, .csv, .tsv, .parquet; ``.gz`` looked through),
#: TREC whitespace-separated text otherwise.
if TYPE_CHECKING:
    Format = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]

#: What a document listed twice for one query means: an ``error`` (default), or keep the ``first`` line,
#: the ``last`` line (ir_measures' behaviour), or the line with the ``max`` score (grade, for qrels).
if TYPE_CHECKING:
    OnDuplicate = Literal["error", "first", "last", "max"]

#: The reader's rules when neither the caller nor a profile sets them: a document given twice is an error,
#: no line is a comment (:func:`qrelkit.measures.profiles.reader_rules`).
DEFAULT_ON_DUPLICATE = "error"
DEFAULT_COMMENTS = False

#: How a mean is estimated from a model's grades and people's grades of a sample of queries
#: (:mod:`qrelkit.estimation.ppi`): ``ppi++`` (the default), ``ppi``, ``human`` alone, ``model`` alone.
if TYPE_CHECKING:
    Estimator = Literal["ppi++", "ppi", "human", "model"]

#: The estimator a command uses when none is named.
DEFAULT_ESTIMATOR: Estimator = "ppi++"

#: The interval of ``ppi`` and ``ppi++`` (:mod:`qrelkit.estimation.ppi`): ``t``, the small-sample one (the t
#: quantile with |H| - 1 degrees of freedom, variances divided by the count less one; the default), or
#: ``normal``, ppi_py's (the normal quantile, variances divided by the count).
if TYPE_CHECKING:
    IntervalKind = Literal["t", "normal"]

#: The interval a command uses when none is named.
DEFAULT_INTERVAL: IntervalKind = "t"

#: Where an evaluation computes: this process, or Spark (``qrelkit[spark]``).
if TYPE_CHECKING:
    Engine = Literal["local", "spark"]

#: What ``eval`` writes results as (:func:`qrelkit.report.render`).
if TYPE_CHECKING:
    ResultFormat = Literal["table", "tsv", "csv", "json", "markdown", "latex", "html", "trec"]

#: What ``compare`` writes a comparison as (:func:`qrelkit.report.compare.render_compare`).
if TYPE_CHECKING:
    CompareFormat = Literal["table", "tsv", "csv", "json", "markdown", "latex", "html"]

#: What ``eval --human`` writes estimates as (:func:`qrelkit.report.estimates.render_estimates`).
if TYPE_CHECKING:
    EstimatesFormat = Literal["table", "json", "markdown", "tsv", "csv", "latex", "html"]

FORMAT_CHOICES: tuple[str, ...] = ("auto", "trec", "jsonl", "csv", "tsv", "parquet")
ENGINE_CHOICES: tuple[str, ...] = ("local", "spark")
RESULT_FORMATS: tuple[str, ...] = ("table", "tsv", "csv", "json", "markdown", "latex", "html", "trec")
COMPARE_FORMATS: tuple[str, ...] = ("table", "tsv", "csv", "json", "markdown", "latex", "html")
ESTIMATES_FORMATS: tuple[str, ...] = ("table", "json", "markdown", "tsv", "csv", "latex", "html")
ON_DUPLICATE_CHOICES: tuple[str, ...] = ("error", "first", "last", "max")
ESTIMATOR_CHOICES: tuple[str, ...] = ("ppi++", "ppi", "human", "model")
INTERVAL_CHOICES: tuple[str, ...] = ("t", "normal")


def detect_format(path: str | Path) -> str:
    """The format named by the file's suffix (``.gz`` looked through); TREC text otherwise. The suffixes
    are ``Path(path).suffixes``, taken without :mod:`pathlib`."""
    import os

    name = os.path.basename(os.fspath(path).rstrip("/" + os.sep))
    suffixes = [] if name.endswith(".") else ["." + s.lower() for s in name.lstrip(".").split(".")[1:]]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}.get(
        last, "trec"
    )


#: Each Literal alias and the tuple it is built from at run time.
_ALIASES = {"Format": "FORMAT_CHOICES", "Engine": "ENGINE_CHOICES", "ResultFormat": "RESULT_FORMATS",
            "CompareFormat": "COMPARE_FORMATS", "EstimatesFormat": "ESTIMATES_FORMATS",
            "OnDuplicate": "ON_DUPLICATE_CHOICES", "Estimator": "ESTIMATOR_CHOICES",
            "IntervalKind": "INTERVAL_CHOICES"}  # fmt: skip


def __getattr__(name: str) -> object:
    """A ``Literal`` alias (``Format``, ...) built from its tuple on first use, when :mod:`typing` loads."""
    if name in _ALIASES:
        import typing

        alias: object = typing.Literal.__getitem__(globals()[_ALIASES[name]])  # Literal["a", "b"]
        globals()[name] = alias
        return alias
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Every measure family the grammar reads (:data:`qrelkit.measures.grammar.INFO`), named in ``eval --help``
#: without importing the grammar at start-up; tests/cli/test_help.py holds the two equal.
MEASURE_NAMES: tuple[str, ...] = (
    "AP", "Accuracy", "BPM", "Compat", "DCG", "ERR", "ERR_IA", "F1", "FallOut", "G", "IDCG", "INSQ", "INST", "IPrec",
    "IPrecMean", "Judged", "NCG", "NERR10", "NERR11", "NERR8", "NERR9", "NumNonRelJudgedRet", "NumQ", "NumRel",
    "NumRelRet", "NumRet", "P", "R", "RBP", "RBP_resid", "RR", "RelP", "RnDCG", "Rprec", "SDCG", "SetAP", "SetF",
    "SetP", "SetRelP", "Success", "Unjudged", "Utility", "alpha_nDCG", "binG", "bpref", "infAP", "nDCG", "nDCGRel",
    "nERR",
)  # fmt: skip
