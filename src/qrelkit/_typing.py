"""Closed option sets shared by the library and the command line, as documented Literal aliases.

Kept free of heavy imports so that the command line can build its options without loading polars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

#: Input formats. ``auto`` picks by suffix (.jsonl/.ndjson, .csv, .tsv, .parquet; ``.gz`` looked through),
#: TREC whitespace-separated text otherwise.
Format = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]

#: What a document listed twice for one query means: an ``error`` (default), or keep the ``first`` line,
#: the ``last`` line (ir_measures' behaviour), or the line with the ``max`` score (grade, for qrels).
OnDuplicate = Literal["error", "first", "last", "max"]

#: The reader's rules when neither the caller nor a profile sets them: a document given twice is an error,
#: no line is a comment (:func:`qrelkit.measures.profiles.reader_rules`).
DEFAULT_ON_DUPLICATE = "error"
DEFAULT_COMMENTS = False

#: How a mean is estimated from a model's grades and people's grades of a sample of queries
#: (:mod:`qrelkit.estimation.ppi`): ``ppi++`` (the default), ``ppi``, ``human`` alone, ``model`` alone.
Estimator = Literal["ppi++", "ppi", "human", "model"]

#: The estimator a command uses when none is named.
DEFAULT_ESTIMATOR: Estimator = "ppi++"

#: The interval of ``ppi`` and ``ppi++`` (:mod:`qrelkit.estimation.ppi`): ``t``, the small-sample one (the t
#: quantile with |H| - 1 degrees of freedom, variances divided by the count less one; the default), or
#: ``normal``, ppi_py's (the normal quantile, variances divided by the count).
IntervalKind = Literal["t", "normal"]

#: The interval a command uses when none is named.
DEFAULT_INTERVAL: IntervalKind = "t"

#: Where an evaluation computes: this process, or Spark (``qrelkit[spark]``).
Engine = Literal["local", "spark"]

#: What ``eval`` writes results as (:func:`qrelkit.report.render`).
ResultFormat = Literal["table", "tsv", "csv", "json", "markdown", "latex", "html", "trec"]

#: What ``compare`` writes a comparison as (:func:`qrelkit.report.compare.render_compare`).
CompareFormat = Literal["table", "tsv", "csv", "json", "markdown", "latex", "html"]

#: What ``eval --human`` writes estimates as (:func:`qrelkit.report.estimates.render_estimates`).
EstimatesFormat = Literal["table", "json", "markdown", "tsv", "csv", "latex", "html"]

FORMAT_CHOICES: tuple[str, ...] = get_args(Format)
ENGINE_CHOICES: tuple[str, ...] = get_args(Engine)
RESULT_FORMATS: tuple[str, ...] = get_args(ResultFormat)
COMPARE_FORMATS: tuple[str, ...] = get_args(CompareFormat)
ESTIMATES_FORMATS: tuple[str, ...] = get_args(EstimatesFormat)
ON_DUPLICATE_CHOICES: tuple[str, ...] = get_args(OnDuplicate)
ESTIMATOR_CHOICES: tuple[str, ...] = get_args(Estimator)
INTERVAL_CHOICES: tuple[str, ...] = get_args(IntervalKind)


def detect_format(path: Path) -> str:
    """The format named by the file's suffix (``.gz`` looked through); TREC text otherwise."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}.get(
        last, "trec"
    )


#: Every measure family the grammar reads (:data:`qrelkit.measures.grammar.INFO`), named in ``eval --help``
#: without importing the grammar at start-up; tests/cli/test_help.py holds the two equal.
MEASURE_NAMES: tuple[str, ...] = (
    "AP", "Accuracy", "BPM", "Compat", "DCG", "ERR", "ERR_IA", "F1", "FallOut", "G", "IDCG", "INSQ", "INST", "IPrec",
    "IPrecMean", "Judged", "NCG", "NERR10", "NERR11", "NERR8", "NERR9", "NumNonRelJudgedRet", "NumQ", "NumRel",
    "NumRelRet", "NumRet", "P", "R", "RBP", "RBP_resid", "RR", "RelP", "RnDCG", "Rprec", "SDCG", "SetAP", "SetF",
    "SetP", "SetRelP", "Success", "Unjudged", "Utility", "alpha_nDCG", "binG", "bpref", "infAP", "nDCG", "nDCGRel",
    "nERR",
)  # fmt: skip
