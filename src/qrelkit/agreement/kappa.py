"""Agreement between two labellers' graded judgments: weighted kappa, its interval, alpha, the gate.

All statistics are computed from grade VALUES over the rubric's full scale, never from the positions of
the labels that happen to occur in the data. If nobody used grade 1 on a 0-3 scale, grades 0 and 2 are
still two steps apart; libraries that build weights from the labels present (scikit-learn's
``cohen_kappa_score`` without ``labels``, statsmodels' ``cohens_kappa`` on a table without the empty
rows) make them neighbours and report a different kappa.

Weighted kappa (Cohen 1968, "Weighted kappa", Psychological Bulletin 70(4), 213-220). With ``n`` pairs,
``p_ij`` the proportion of pairs graded ``g_i`` by A and ``g_j`` by B, row marginals ``p_i.`` (A), column
marginals ``p_.j`` (B) and agreement weights ``w_ij`` (1 on the diagonal)::

    linear      w_ij = 1 - |g_i - g_j| / (g_max - g_min)
    quadratic   w_ij = 1 - (g_i - g_j)^2 / (g_max - g_min)^2
    unweighted  w_ij = 1 if i == j else 0

    D_o = sum_ij (1 - w_ij) p_ij          observed disagreement
    D_e = sum_ij (1 - w_ij) p_i. p_.j     disagreement expected by chance from the two marginals
    kappa = 1 - D_o / D_e

Standard error: the large-sample (non-null) standard error of Fleiss, Cohen & Everitt (1969), "Large
sample standard errors of kappa and weighted kappa", Psychological Bulletin 72(5), 323-327::

    P_e = 1 - D_e,   wbar_i. = sum_j p_.j w_ij,   wbar_.j = sum_i p_i. w_ij
    var = [sum_ij p_ij (w_ij - (wbar_i. + wbar_.j)(1 - kappa))^2 - (kappa - P_e (1 - kappa))^2]
          / (n (1 - P_e)^2)

The numerator is the variance of ``x_ij = w_ij - (wbar_i. + wbar_.j)(1 - kappa)`` under ``p`` (its mean
is ``kappa - P_e (1 - kappa)``), so it is computed over integers, exactly: never negative, zero when it is
zero, and the same for A against B as for B against A (:func:`_fce_variance`).
It is the ASE printed by SAS PROC FREQ and the ``std_kappa`` of statsmodels' ``cohens_kappa``. irrCAC's
Conger kappa (equal to Cohen's for two labellers) reports Gwet's linearisation variance instead, which
is this one times ``n / (n - 1)``, with a Student-t interval.

Because kappa is a ratio of disagreements, the common factor ``1 / (g_max - g_min)`` cancels: with
value-based weights, listing an unused grade changes the shape of the confusion matrix, never kappa.

Krippendorff's alpha follows Krippendorff (2011), "Computing Krippendorff's alpha-reliability",
University of Pennsylvania, via the coincidence matrix; see :func:`krippendorff_alpha`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from statistics import NormalDist
from typing import Any, Literal, get_args

import numpy as np

from qrelkit.errors import ValidationError, did_you_mean
from qrelkit.provenance import json_number

from .resample import (
    INTERVAL_LEVEL,
    QUERY_BOOTSTRAP_RESAMPLES,
    QUERY_BOOTSTRAP_SEED,
    BootstrapInterval,
    query_bootstrap,
    resample_counts,
)
from .resample import check_level as _check_level

__all__ = [
    "AgreementReport",
    "AlphaLevel",
    "AlphaResult",
    "BootstrapInterval",
    "Disagreement",
    "GateResult",
    "GateUse",
    "KappaResult",
    "PairedGrades",
    "QueryAgreement",
    "Weighting",
    "agreement_report",
    "alpha_batch",
    "bootstrap_kappa_ci",
    "cohen_kappa",
    "gate",
    "krippendorff_alpha",
    "pair_grades",
    "query_bootstrap",
    "resample_counts",
    "weight_matrix",
]

Weighting = Literal["linear", "quadratic", "unweighted"]
"""How far apart two grades are: ``linear`` (|difference| / range, the default for graded relevance),
``quadratic`` (squared difference / squared range), ``unweighted`` (every disagreement counts fully)."""

AlphaLevel = Literal["nominal", "ordinal", "interval"]
"""Krippendorff's level of measurement: ``nominal`` (any difference counts 1), ``ordinal`` (rank
distance through the observed value frequencies), ``interval`` (squared value difference)."""

GateUse = Literal["ci_low", "bootstrap_low", "kappa"]
"""What the gate compares with the threshold: the lower bound of the normal interval, the lower bound of
the query bootstrap interval (needs an :class:`AgreementReport`), or the point estimate."""

WEIGHTINGS: tuple[str, ...] = get_args(Weighting)
ALPHA_LEVELS: tuple[str, ...] = get_args(AlphaLevel)
GATE_USES: tuple[str, ...] = get_args(GateUse)
#: The lower bounds a gate can compare (every :data:`GateUse` but the point estimate).
GATE_LOWER_BOUNDS: tuple[str, ...] = tuple(u for u in GATE_USES if u != "kappa")

NOTE_NO_PAIRS = "no pairs were judged by both labellers; kappa is undefined"
NOTE_NO_CHANCE_DISAGREEMENT = (
    "both labellers gave every pair the same single grade, so chance-expected disagreement is 0 and kappa "
    "is undefined (the agreement is total but says nothing about the rubric)"
)


# validation and conversion helpers


def _bad(problem: str, got: object, expected: str, fix: str) -> ValidationError:
    return ValidationError(problem, got=got, expected=expected, fix=fix)


def _one_of(value: object, choices: tuple[str, ...], what: str) -> Any:
    if not isinstance(value, str) or value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        options = ", ".join(repr(c) for c in choices)
        raise _bad(f"unknown {what}{hint}", value, f"one of {options}", f"pass {what}= one of {options}")
    return value


def _is_int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _check_scale(scale: Sequence[int]) -> tuple[int, ...]:
    values = tuple(scale) if isinstance(scale, Sequence | np.ndarray) else ()
    if len(values) < 2 or not all(map(_is_int, values)) or any(x >= y for x, y in itertools.pairwise(values)):
        raise _bad(
            "the grade scale must list at least two distinct integer grades in increasing order",
            scale,
            "the rubric's full scale, e.g. (0, 1, 2, 3), including grades nobody used",
            "pass the scale from the rubric, sorted ascending",
        )
    return tuple(int(g) for g in values)


def _grade_codes(
    grades: Any, scale: tuple[int, ...], who: str, keys: Sequence[Any] | None = None
) -> np.ndarray:
    """Validate one labeller's grades against the scale and return their indices into it."""
    arr = np.asarray(grades)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise _bad(
            f"grades of labeller {who} must be a one-dimensional sequence of integers",
            f"array of shape {arr.shape} and dtype {arr.dtype}",
            f"integer grades from the scale {scale}",
            "convert the grades to integers; leave unjudged pairs out rather than using NaN",
        )
    arr = arr.astype(np.int64)
    codes = np.minimum(np.searchsorted(np.asarray(scale), arr), len(scale) - 1)
    bad = np.asarray(scale)[codes] != arr
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = f"for pair {tuple(keys[i])!r}" if keys is not None else f"at position {i}"
        raise _bad(
            f"labeller {who} used grade {arr[i]} {where}, which is not on the scale {scale} "
            f"({int(bad.sum())} pair(s) affected)",
            int(arr[i]),
            f"one of {scale}",
            "pass the rubric's full scale, or correct the judgments that use a grade outside it",
        )
    return codes


def weight_matrix(scale: Sequence[int], weights: Weighting = "linear") -> np.ndarray:
    """Agreement weights ``w_ij`` (1 = same grade, 0 = opposite ends of the scale) from grade values.

    ``scale`` is the rubric's full scale; the weights depend on the values ``g_i``, so a scale such as
    ``(0, 1, 3)`` puts 1 and 3 twice as far apart as 0 and 1. Rows and columns follow ``scale``.
    """
    g = np.asarray(_check_scale(scale), dtype=np.float64)
    if _one_of(weights, WEIGHTINGS, "weights") == "unweighted":
        return np.eye(len(g))
    d = np.abs(g[:, None] - g[None, :]) / (g[-1] - g[0])
    out: np.ndarray = 1.0 - (d if weights == "linear" else d * d)
    return out


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _record(x: Any) -> dict[str, Any]:
    """A dataclass instance's fields as plain JSON values (see :func:`_jsonable`)."""
    return {f.name: _jsonable(getattr(x, f.name)) for f in dataclasses.fields(x)}


def _jsonable(x: Any) -> Any:
    """Plain JSON values: NaN (an undefined statistic, explained by a note) becomes None
    (:func:`qrelkit.provenance.json_number`)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _record(x)
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if x is None or isinstance(x, bool | str):
        return x
    if _is_int(x):
        return int(x)
    if isinstance(x, Real):
        return json_number(x)
    return str(x)


def _id_key(x: Any) -> tuple[str, Any]:
    return (type(x).__name__, x)  # orders ids of one type naturally and mixed types deterministically


# pairing


@dataclass(frozen=True, eq=False)
class PairedGrades:
    """Grades from labellers A and B for the (query_id, doc_id) pairs both judged.

    ``only_a``/``only_b`` are the pairs judged by one labeller only: they take no part in kappa but are
    counted so a report can say how much of the intended overlap was actually double-judged.
    """

    query_ids: tuple[Any, ...]
    doc_ids: tuple[Any, ...]
    grades_a: np.ndarray
    grades_b: np.ndarray
    only_a: tuple[tuple[Any, Any], ...] = ()
    only_b: tuple[tuple[Any, Any], ...] = ()

    def __post_init__(self) -> None:
        sizes = (len(self.query_ids), len(self.doc_ids), len(self.grades_a), len(self.grades_b))
        if len(set(sizes)) != 1:
            raise _bad(
                "query ids, doc ids and both labellers' grades must have the same length",
                sizes,
                "one entry per pair in each",
                "build the pairs with pair_grades() or PairedGrades.from_arrays()",
            )
        for name in ("grades_a", "grades_b"):
            object.__setattr__(self, name, _readonly(np.array(getattr(self, name))))

    @classmethod
    def from_arrays(
        cls, query_ids: Sequence[Any], grades_a: Any, grades_b: Any, doc_ids: Sequence[Any] | None = None
    ) -> PairedGrades:
        """Pairs given position by position; doc ids default to ``0, 1, 2, ...``."""
        docs = tuple(range(len(query_ids))) if doc_ids is None else tuple(doc_ids)
        return cls(tuple(query_ids), docs, np.asarray(grades_a), np.asarray(grades_b))

    @property
    def n(self) -> int:
        return len(self.query_ids)


def _as_mapping(x: Any, who: str) -> dict[tuple[Any, Any], int]:
    if not isinstance(x, Mapping):
        import polars as pl

        if not isinstance(x, pl.DataFrame) or not {"query_id", "doc_id", "grade"} <= set(x.columns):
            raise _bad(
                f"labeller {who}'s judgments are neither a mapping nor a frame with the needed columns",
                type(x).__name__,
                "a mapping (query_id, doc_id) -> grade, or a polars DataFrame with query_id, doc_id, grade",
                "read the judgments with qrelkit.formats, or build a dict",
            )
        rows, x = x.select("query_id", "doc_id", "grade").rows(), {}
        for q, d, g in rows:
            if (q, d) in x:
                raise _bad(f"labeller {who} judged pair {(q, d)!r} more than once", (x[q, d], g),
                           "one grade per (query_id, doc_id)", "adjudicate duplicates first")  # fmt: skip
            x[q, d] = g
    for key, grade in x.items():
        if not (isinstance(key, tuple) and len(key) == 2 and _is_int(grade)):
            raise _bad(
                f"labeller {who}'s judgments must map (query_id, doc_id) to an integer grade",
                (key, grade),
                "a 2-tuple key and an int grade",
                "key each grade by (query_id, doc_id), cast grades to int, leave unjudged pairs out",
            )
    return {k: int(g) for k, g in x.items()}


def pair_grades(a: Any, b: Any) -> PairedGrades:
    """Align two labellers' judgments on the pairs both judged.

    ``a`` and ``b`` are each a mapping ``(query_id, doc_id) -> grade`` or a polars DataFrame with
    columns ``query_id``, ``doc_id``, ``grade``. Pairs come out sorted by (query_id, doc_id); the pairs
    judged by only one labeller are returned, also sorted, in ``only_a`` / ``only_b``.
    """
    ma, mb = _as_mapping(a, "A"), _as_mapping(b, "B")

    def ordered(keys: Any) -> list[Any]:
        return sorted(keys, key=lambda k: (_id_key(k[0]), _id_key(k[1])))

    both = ordered(ma.keys() & mb.keys())
    return PairedGrades(
        query_ids=tuple(k[0] for k in both),
        doc_ids=tuple(k[1] for k in both),
        grades_a=np.array([ma[k] for k in both], dtype=np.int64),
        grades_b=np.array([mb[k] for k in both], dtype=np.int64),
        only_a=tuple(ordered(ma.keys() - mb.keys())),
        only_b=tuple(ordered(mb.keys() - ma.keys())),
    )


# kappa


@dataclass(frozen=True, eq=False)
class KappaResult:
    """Weighted kappa with its Fleiss-Cohen-Everitt standard error and normal interval.

    ``confusion[i, j]`` counts pairs graded ``scale[i]`` by A (rows) and ``scale[j]`` by B (columns);
    ``marginal_a``/``marginal_b`` are its row/column sums; ``weight_matrix`` holds the agreement weights
    ``w_ij``. ``observed``/``expected`` are the disagreements ``D_o`` and ``D_e`` (module docstring).
    When kappa is undefined (no pairs; or both labellers constant on the same grade) kappa, the standard
    error and the interval are NaN and ``note`` says why.
    """

    kappa: float
    std_error: float
    ci_low: float
    ci_high: float
    level: float
    observed: float
    expected: float
    exact_agreement: float
    n: int
    scale: tuple[int, ...]
    weights: Weighting
    confusion: np.ndarray
    weight_matrix: np.ndarray
    note: str | None = None

    @property
    def marginal_a(self) -> np.ndarray:
        out: np.ndarray = self.confusion.sum(axis=1)
        return out

    @property
    def marginal_b(self) -> np.ndarray:
        out: np.ndarray = self.confusion.sum(axis=0)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = _record(self)
        out.update(marginal_a=self.marginal_a.tolist(), marginal_b=self.marginal_b.tolist())
        out["std_error_method"] = "Fleiss, Cohen & Everitt (1969) large-sample; interval kappa +- z * se"
        return out


def _kappa_batch(tables: np.ndarray, disagreement: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kappa, D_o and D_e for a stack of confusion tables ``(R, k, k)``; kappa NaN where D_e == 0."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tables / n[:, None, None]
        d_o = np.einsum("rij,ij->r", p, disagreement)
        d_e = np.einsum("ri,ij,rj->r", p.sum(axis=2), disagreement, p.sum(axis=1))
        kappa = np.where(d_e > 0, 1.0 - d_o / np.where(d_e > 0, d_e, 1.0), np.nan)
    return kappa, d_o, d_e


def _integer_weights(scale: tuple[int, ...], weights: Weighting) -> tuple[list[list[int]], int]:
    """The agreement weights as integers over one denominator: ``w_ij = W_ij / D`` exactly."""
    g, span = scale, scale[-1] - scale[0]
    if weights == "unweighted":
        return [[int(i == j) for j in range(len(g))] for i in range(len(g))], 1
    if weights == "linear":
        return [[span - abs(a - b) for b in g] for a in g], span
    return [[span * span - (a - b) ** 2 for b in g] for a in g], span * span


def _fce_variance(table: np.ndarray, scale: tuple[int, ...], weights: Weighting) -> float:
    """Fleiss, Cohen & Everitt's (1969) variance of kappa (module docstring), in exact integer arithmetic.

    With ``x_ij = w_ij - (wbar_i. + wbar_.j)(1 - kappa)``, ``sum_ij p_ij x_ij`` equals
    ``kappa - P_e (1 - kappa)``, so the numerator is the variance of ``x`` under ``p``: never negative, and
    zero exactly when ``x`` is constant on the pairs seen. Evaluated in floats the two terms cancel and
    leave a residue of either sign that depends on the order of the sums (1e-16, whose square root is
    1e-8), so A against B and B against A differed. Over integers (``w_ij = W_ij / D``; ``X_ij`` is ``x_ij``
    times ``n D K`` with ``K = n^2 D (1 - P_e)``) the variance is ``(n sum T X^2 - (sum T X)^2) / (n K^4)``,
    one correctly rounded division, the same for the table and its transpose. ``0.0`` when ``K`` is 0.
    """
    wn, d = _integer_weights(scale, weights)
    t: list[list[int]] = table.astype(np.int64).tolist()
    k = len(scale)
    n = sum(map(sum, t))
    rows = [sum(r) for r in t]
    cols = [sum(t[i][j] for i in range(k)) for j in range(k)]
    used_r = [i for i in range(k) if rows[i]]
    used_c = [j for j in range(k) if cols[j]]
    observed = sum(t[i][j] * wn[i][j] for i in used_r for j in used_c)  # n D p_o
    expected = sum(rows[i] * cols[j] * wn[i][j] for i in used_r for j in used_c)  # n^2 D p_e
    big_k = n * n * d - expected  # n^2 D (1 - p_e)
    if big_k <= 0:
        return 0.0
    one_minus_kappa = n * n * d - observed * n  # times K
    a_row = {i: sum(cols[j] * wn[i][j] for j in used_c) for i in used_r}  # n D wbar_i.
    a_col = {j: sum(rows[i] * wn[i][j] for i in used_r) for j in used_c}  # n D wbar_.j
    s1 = s2 = 0
    for i in used_r:
        for j in used_c:
            if t[i][j]:
                x = wn[i][j] * n * big_k - (a_row[i] + a_col[j]) * one_minus_kappa
                s1 += t[i][j] * x
                s2 += t[i][j] * x * x
    return float((n * s2 - s1 * s1) / (n * big_k**4))


def _kappa_from_table(
    table: np.ndarray, scale: tuple[int, ...], weights: Weighting, level: float
) -> KappaResult:
    w = weight_matrix(scale, weights)
    n = int(table.sum())
    nan = math.nan
    common: dict[str, Any] = dict(level=level, n=n, scale=scale, weights=weights)
    common.update(confusion=_readonly(table.astype(np.int64)), weight_matrix=_readonly(w))
    if n == 0:
        return KappaResult(nan, nan, nan, nan, observed=nan, expected=nan, exact_agreement=nan,
                           note=NOTE_NO_PAIRS, **common)  # fmt: skip
    kappa_arr, d_o_arr, d_e_arr = _kappa_batch(table[None].astype(np.float64), 1.0 - w)
    kappa, d_o, d_e = float(kappa_arr[0]), float(d_o_arr[0]), float(d_e_arr[0])
    exact = float(np.trace(table)) / n
    if not d_e > 0:
        return KappaResult(nan, nan, nan, nan, observed=d_o, expected=d_e, exact_agreement=exact,
                           note=NOTE_NO_CHANCE_DISAGREEMENT, **common)  # fmt: skip
    se = math.sqrt(_fce_variance(table, scale, weights))
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    return KappaResult(kappa, se, kappa - z * se, kappa + z * se, observed=d_o, expected=d_e,
                       exact_agreement=exact, **common)  # fmt: skip


def cohen_kappa(
    grades_a: Sequence[int],
    grades_b: Sequence[int],
    scale: Sequence[int],
    weights: Weighting = "linear",
    *,
    level: float = INTERVAL_LEVEL,
) -> KappaResult:
    """Cohen's (1968) weighted kappa of two labellers' grades for the same pairs, position by position.

    Weights come from grade values over the full ``scale`` (see :func:`weight_matrix`). The standard
    error is Fleiss, Cohen & Everitt's (1969) large-sample one and the interval is
    ``kappa +- z * std_error``, ``z`` the normal quantile for ``level``. Both treat pairs as
    independent; pairs within a query are not, so also look at :func:`bootstrap_kappa_ci`.
    """
    scale = _check_scale(scale)
    weights = _one_of(weights, WEIGHTINGS, "weights")
    level = _check_level(level)
    ca, cb = _grade_codes(grades_a, scale, "A"), _grade_codes(grades_b, scale, "B")
    if len(ca) != len(cb):
        raise _bad(
            "the two labellers' grade sequences differ in length",
            (len(ca), len(cb)),
            "one grade from each labeller per pair, in the same order",
            "align the judgments on (query_id, doc_id) with pair_grades()",
        )
    k = len(scale)
    table = np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)
    return _kappa_from_table(table, scale, weights, level)


# query bootstrap


def _query_tables(paired: PairedGrades, scale: tuple[int, ...]) -> tuple[list[Any], np.ndarray]:
    """Sorted distinct query ids and their confusion tables ``(n_queries, k, k)``."""
    k = len(scale)
    keys = list(zip(paired.query_ids, paired.doc_ids, strict=True))
    ca, cb = _grade_codes(paired.grades_a, scale, "A", keys), _grade_codes(paired.grades_b, scale, "B", keys)
    qids = sorted(set(paired.query_ids), key=_id_key)
    index = {q: i for i, q in enumerate(qids)}
    qcodes = np.fromiter((index[q] for q in paired.query_ids), dtype=np.int64, count=paired.n)
    counts = np.bincount(qcodes * (k * k) + ca * k + cb, minlength=len(qids) * k * k)
    return qids, counts.reshape(len(qids), k, k)


def bootstrap_kappa_ci(
    paired: PairedGrades,
    scale: Sequence[int],
    weights: Weighting = "linear",
    *,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> BootstrapInterval:
    """Percentile interval for kappa from a cluster bootstrap over queries (:func:`query_bootstrap` of the
    per-query confusion tables).

    Pairs of one query share a topic, a pool and usually a labelling session, so they are not
    independent; resampling queries with all their pairs keeps that dependence. The same pairs and seed
    give the same interval, in any input order.
    """
    scale, weights = _check_scale(scale), _one_of(weights, WEIGHTINGS, "weights")
    qids, tables = _query_tables(paired, scale)
    k, w = len(scale), weight_matrix(scale, weights)

    def kappas(resampled: np.ndarray) -> np.ndarray:
        return _kappa_batch(resampled.reshape(-1, k, k), 1.0 - w)[0]

    return query_bootstrap(tables.reshape(len(qids), k * k), kappas, n_resamples=n_resamples, seed=seed,
                           level=level, weights=weights, what="kappa")  # fmt: skip


# Krippendorff's alpha


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with its disagreements ``observed`` (D_o) and ``expected`` (D_e)."""

    alpha: float
    level: AlphaLevel
    value_domain: tuple[float, ...]
    n_units: int
    n_pairable: int
    observed: float
    expected: float
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _record(self)


def krippendorff_alpha(
    ratings: Any, level: AlphaLevel = "ordinal", value_domain: Sequence[float] | None = None
) -> AlphaResult:
    """Krippendorff's alpha for two or more labellers (Krippendorff 2011).

    ``ratings`` is a (labellers x units) array with NaN where a labeller did not rate a unit. Units with
    fewer than two ratings are not pairable and are dropped (``n_units`` counts the ones kept). With
    ``m_u`` ratings in unit ``u``, ``n_uc`` of them equal to value ``c``, the coincidence matrix is
    ``o_ck = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)``; ``n_c = sum_k o_ck``, ``n = sum_c n_c``;
    ``D_o = sum o_ck delta_ck / n``, ``D_e = sum n_c n_k delta_ck / (n (n - 1))`` and
    ``alpha = 1 - D_o / D_e``. Distances: nominal ``[c != k]``; interval ``(c - k)^2``; ordinal
    ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` over the value domain in order.

    ``value_domain`` defaults to the values observed; every rating must lie in it. A value nobody used
    has ``n_g = 0`` and changes no distance, so alpha does not depend on unused grades (the
    ``krippendorff`` package agrees when given ``value_domain``).
    """
    level = _one_of(level, ALPHA_LEVELS, "level")
    try:
        r = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError):
        r = np.full((0,), np.nan)
    if r.ndim != 2 or r.shape[0] < 2 or np.isinf(r).any():
        raise _bad(
            "ratings must be a (labellers x units) array with at least two labellers and no infinities",
            f"array of shape {r.shape}",
            "shape (m, n) with m >= 2; NaN marks a missing rating",
            "stack one row per labeller; use NaN for the units a labeller did not rate",
        )
    present = ~np.isnan(r)
    seen = np.unique(r[present])
    domain = seen if value_domain is None else np.asarray(value_domain, dtype=np.float64)
    if domain.ndim != 1 or np.any(np.diff(domain) <= 0) or not np.isin(seen, domain).all():
        raise _bad(
            "ratings must come from a value domain listed in increasing order",
            f"values {seen.tolist()[:10]} with domain {domain.tolist()}",
            "value_domain sorted ascending and containing every rating",
            "pass value_domain=the rubric's full scale, or correct the out-of-domain ratings",
        )
    v = len(domain)
    unit = np.broadcast_to(np.arange(r.shape[1]), r.shape)[present]
    counts = np.zeros((r.shape[1], v))
    np.add.at(counts, (unit, np.searchsorted(domain, r[present])), 1.0)
    m_u = counts.sum(axis=1)
    counts, m_u = counts[m_u >= 2], m_u[m_u >= 2]
    base: dict[str, Any] = dict(level=level, value_domain=tuple(domain.tolist()), n_units=len(m_u))
    if len(m_u) == 0:
        return AlphaResult(math.nan, n_pairable=0, observed=math.nan, expected=math.nan, **base,
                           note="no unit was rated by two or more labellers; alpha is undefined")  # fmt: skip
    scaled = counts / (m_u - 1.0)[:, None]
    o = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    alpha, d_o, d_e = alpha_batch(o[None], domain, level)
    base.update(n_pairable=round(float(o.sum())), observed=float(d_o[0]), expected=float(d_e[0]))
    if not d_e[0] > 0:
        return AlphaResult(
            math.nan, **base, note="every pairable rating has the same value; alpha is undefined"
        )
    return AlphaResult(float(alpha[0]), **base)


def alpha_batch(o: np.ndarray, domain: np.ndarray, level: AlphaLevel) -> tuple[np.ndarray, ...]:
    """Alpha, D_o and D_e for a stack of coincidence matrices ``(R, v, v)`` (:func:`krippendorff_alpha`
    for the formulas); alpha is NaN where D_e is 0."""
    v = len(domain)
    n_c = o.sum(axis=1)
    n = n_c.sum(axis=1)
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(v), o.shape)
    elif level == "interval":
        delta = np.broadcast_to((domain[:, None] - domain[None, :]) ** 2, o.shape)
    else:
        cum = np.concatenate([np.zeros((len(o), 1)), np.cumsum(n_c, axis=1)], axis=1)
        i, j = np.meshgrid(np.arange(v), np.arange(v), indexing="ij")
        between = cum[:, np.maximum(i, j) + 1] - cum[:, np.minimum(i, j)]
        delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = (o * delta).sum(axis=(1, 2)) / n
        d_e = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2)) / (n * (n - 1.0))
        alpha = np.where(d_e > 0, 1.0 - d_o / np.where(d_e > 0, d_e, 1.0), np.nan)
    return alpha, d_o, d_e


# the report and the gate


@dataclass(frozen=True)
class QueryAgreement:
    """Agreement within one query; ``kappa`` is NaN where undefined (e.g. one grade throughout)."""

    query_id: Any
    n_pairs: int
    exact_agreement: float
    kappa: float


@dataclass(frozen=True)
class Disagreement:
    """One pair the labellers graded differently; ``distance`` = |grade_a - grade_b| in grade units."""

    query_id: Any
    doc_id: Any
    grade_a: int
    grade_b: int
    distance: int


@dataclass(frozen=True, eq=False)
class AgreementReport:
    """Everything the agreement step reports, as one value.

    ``per_query`` is in sorted query-id order. ``disagreements`` are largest distance first, then in
    (query_id, doc_id) order. Undefined values are NaN here and ``None`` in :meth:`to_dict`, with the
    reason in the ``note`` fields.
    """

    scale: tuple[int, ...]
    weights: Weighting
    kappa: KappaResult
    bootstrap: BootstrapInterval
    alpha: AlphaResult
    per_query: tuple[QueryAgreement, ...]
    disagreements: tuple[Disagreement, ...]
    n_only_a: int
    n_only_b: int

    @property
    def confusion(self) -> np.ndarray:
        return self.kappa.confusion

    @property
    def marginals(self) -> dict[int, tuple[int, int]]:
        """Per grade of the scale: (pairs A gave it, pairs B gave it)."""
        a, b = self.kappa.marginal_a, self.kappa.marginal_b
        return {g: (int(a[i]), int(b[i])) for i, g in enumerate(self.scale)}

    def to_dict(self) -> dict[str, Any]:
        out = _record(self)
        out["kappa"] = self.kappa.to_dict()
        out["n_pairs"] = self.kappa.n
        return out


def agreement_report(
    paired: PairedGrades,
    scale: Sequence[int],
    *,
    weights: Weighting = "linear",
    level: float = INTERVAL_LEVEL,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    alpha_level: AlphaLevel = "ordinal",
) -> AgreementReport:
    """Kappa (linear by default) with both intervals, alpha, per-query agreement and the disagreements."""
    scale = _check_scale(scale)
    weights = _one_of(weights, WEIGHTINGS, "weights")
    qids, tables = _query_tables(paired, scale)  # validates the grades, naming the offending pair
    kappa = _kappa_from_table(tables.sum(axis=0), scale, weights, _check_level(level))
    boot = bootstrap_kappa_ci(paired, scale, weights, n_resamples=n_resamples, seed=seed, level=level)
    ratings = np.vstack([paired.grades_a, paired.grades_b]).astype(np.float64)
    alpha = krippendorff_alpha(ratings, level=alpha_level, value_domain=scale)
    q_kappa, _, _ = _kappa_batch(tables.astype(np.float64), 1.0 - kappa.weight_matrix)
    per_query = tuple(
        QueryAgreement(q, int(t.sum()), float(np.trace(t)) / float(t.sum()), float(kq))
        for q, t, kq in zip(qids, tables, q_kappa, strict=True)
    )
    ga, gb = paired.grades_a.tolist(), paired.grades_b.tolist()
    rows = sorted(
        (i for i in range(paired.n) if ga[i] != gb[i]),
        key=lambda i: (-abs(ga[i] - gb[i]), _id_key(paired.query_ids[i]), _id_key(paired.doc_ids[i])),
    )
    diff = tuple(
        Disagreement(paired.query_ids[i], paired.doc_ids[i], ga[i], gb[i], abs(ga[i] - gb[i])) for i in rows
    )
    n_a, n_b = len(paired.only_a), len(paired.only_b)
    return AgreementReport(scale, weights, kappa, boot, alpha, per_query, diff, n_a, n_b)


@dataclass(frozen=True)
class GateResult:
    """Whether agreement clears the threshold, the number compared, and a one-line explanation."""

    passed: bool
    threshold: float
    value_used: float
    use: GateUse
    message: str

    def to_dict(self) -> dict[str, Any]:
        return _record(self)


def _fmt_pair(x: float, t: float) -> tuple[str, str]:
    """Value and threshold with enough decimals that the printed comparison reads as the true one."""
    for digits in (2, 3, 4, 6):
        a, b = f"{x:.{digits}f}", f"{t:.{digits}f}"
        if (a == b) == (x == t):
            return a, b
    return repr(x), repr(t)


def gate(
    result: KappaResult | AgreementReport, min_kappa: float = 0.6, *, use: GateUse = "ci_low"
) -> GateResult:
    """Pass only if the chosen number is at least ``min_kappa``.

    The default compares the lower bound of the normal interval: a kappa of 0.65 measured on a few
    dozen pairs does not show that agreement is above 0.6. ``use="bootstrap_low"`` takes the lower bound
    of the query bootstrap (needs an :class:`AgreementReport`); ``use="kappa"`` the point estimate. An
    undefined kappa or bound fails, and the message says why.
    """
    use = _one_of(use, GATE_USES, "use")
    if isinstance(min_kappa, bool) or not isinstance(min_kappa, Real) or not -1.0 <= min_kappa <= 1.0:
        raise _bad("min_kappa must be a number between -1 and 1", min_kappa, "e.g. 0.6", "pass min_kappa=0.6")
    report = result if isinstance(result, AgreementReport) else None
    k = report.kappa if report is not None else result
    if not isinstance(k, KappaResult):
        raise _bad(
            "gate() needs a KappaResult or an AgreementReport",
            type(result).__name__,
            "the result of cohen_kappa() or agreement_report()",
            "compute the agreement first",
        )
    threshold = float(min_kappa)
    low, high, label = k.ci_low, k.ci_high, f"{k.level * 100:g}% CI"
    if use == "bootstrap_low":
        if report is None:
            raise _bad(
                "use='bootstrap_low' needs the query bootstrap of an AgreementReport",
                "a KappaResult",
                "an AgreementReport",
                "pass agreement_report(...) or use='ci_low'",
            )
        b = report.bootstrap
        low, high, label = b.low, b.high, f"{b.level * 100:g}% query-bootstrap CI"
    value, what = (k.kappa, "kappa") if use == "kappa" else (low, "lower bound")
    if math.isnan(value):
        why = k.note or (report.bootstrap.note if report is not None else None) or "undefined"
        msg = f"kappa undefined or without interval ({why}); threshold {threshold:.2f}: FAIL"
        return GateResult(False, threshold, value, use, msg)
    passed = value >= threshold
    v, t = _fmt_pair(value, threshold)
    head = f"kappa {k.kappa:.2f}, {label} [{low:.2f}, {high:.2f}]"
    msg = f"{head}; {what} {v} {'>=' if passed else '<'} {t}: {'PASS' if passed else 'FAIL'}"
    return GateResult(passed, threshold, value, use, msg)
