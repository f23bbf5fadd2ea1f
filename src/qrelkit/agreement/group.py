"""Agreement of two or more labellers on the same pairs: Krippendorff's alpha, Fleiss' kappa, the matrix of
pairwise weighted kappas, their query-bootstrap intervals and the gate on the statistic a project chose.

Every statistic is computed from grade VALUES over the rubric's full scale, as in :mod:`qrelkit.agreement.kappa`,
which owns kappa, alpha and the query bootstrap; this module puts them together for ``n`` labellers.

The ratings are a (labellers x units) matrix, a unit being a (query_id, doc_id) pair that at least one
labeller graded, NaN where a labeller did not grade it (not assigned, or marked unsure without a grade).

Statistics (:data:`Statistic`)
------------------------------
``kappa``
    Cohen's weighted kappa (:func:`qrelkit.agreement.kappa.cohen_kappa`) of each two labellers on the pairs both
    graded; the gate passes when every two labellers sharing pairs pass. The default for two labellers.
``mean_kappa``
    The mean of those pairwise kappas over the pairs of labellers that share graded pairs (Light 1971's
    average, with weights). Equal to ``kappa`` for two labellers; the default for more than two
    (:func:`default_statistic` says why).
``alpha_interval`` / ``alpha_ordinal``
    Krippendorff's alpha (:func:`qrelkit.agreement.kappa.krippendorff_alpha`) over the scale's values: squared
    value differences, or rank distances through the grades' frequencies.
``fleiss``
    Fleiss' (1971) kappa, unweighted: the chance that two ratings of one unit agree, against the chance
    that two ratings drawn from the pooled grade frequencies agree. Units may have different numbers of
    ratings: Gwet's (2014) form, ``p_a`` the mean over units with two or more ratings of
    ``sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``, ``pi_k`` the mean over units of ``r_ik / r_i``,
    ``p_e = sum_k pi_k^2`` and ``kappa = (p_a - p_e) / (1 - p_e)``; with the same number of ratings in
    every unit it is Fleiss' 1971 kappa (statsmodels' ``fleiss_kappa``), and with weights ``w_kl``
    irrCAC's weighted form (``r_ik`` replaced by ``sum_l w_kl r_il`` inside the bracket, ``p_e`` by
    ``sum_kl w_kl pi_k pi_l``).

The intervals of ``mean_kappa``, alpha and Fleiss' kappa are percentile intervals of the cluster bootstrap
over queries (:func:`qrelkit.agreement.resample.query_bootstrap`, the same draws as kappa's), so the gate of a
group statistic compares the lower end of its query-bootstrap interval with the threshold.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from qrelkit.agreement.kappa import (
    WEIGHTINGS,
    AlphaLevel,
    AlphaResult,
    GateResult,
    KappaResult,
    Weighting,
    _as_mapping,
    _bad,
    _check_scale,
    _fmt_pair,
    _id_key,
    _kappa_batch,
    _kappa_from_table,
    _one_of,
    _record,
    alpha_batch,
    krippendorff_alpha,
    weight_matrix,
)
from qrelkit.agreement.resample import (
    INTERVAL_LEVEL,
    QUERY_BOOTSTRAP_RESAMPLES,
    QUERY_BOOTSTRAP_SEED,
    BootstrapInterval,
    query_bootstrap,
)

__all__ = [
    "GROUP_STATISTICS",
    "STATISTICS",
    "STATISTIC_NAMES",
    "FleissResult",
    "GroupGrades",
    "GroupReport",
    "Statistic",
    "default_statistic",
    "fleiss_kappa",
    "group_agreement",
    "group_gate",
    "group_grades",
]

Statistic = Literal["kappa", "mean_kappa", "alpha_interval", "alpha_ordinal", "fleiss"]
"""What a calibration gate compares (module docstring)."""
STATISTICS: tuple[str, ...] = ("kappa", "mean_kappa", "alpha_interval", "alpha_ordinal", "fleiss")
GROUP_STATISTICS: tuple[str, ...] = ("mean_kappa", "alpha_interval", "alpha_ordinal", "fleiss")
"""The statistics of the whole group, gated on their query-bootstrap interval."""
STATISTIC_NAMES = {
    "kappa": "weighted kappa of every two labellers",
    "mean_kappa": "mean pairwise weighted kappa",
    "alpha_interval": "Krippendorff's alpha (interval)",
    "alpha_ordinal": "Krippendorff's alpha (ordinal)",
    "fleiss": "Fleiss' kappa (unweighted)",
}


def default_statistic(labellers_per_pair: int) -> Statistic:
    """``kappa`` when each calibration pair has two labellers, ``mean_kappa`` with more: for two labellers
    it is that kappa, so the threshold means the same whatever the number of labellers (alpha at the
    interval level weighs differences squared, like quadratic kappa, and reads higher on the same grades)."""
    return "kappa" if labellers_per_pair <= 2 else "mean_kappa"


@dataclass(frozen=True, eq=False)
class GroupGrades:
    """Grades of ``labellers`` (rows) for ``keys`` (units, sorted by query then document; NaN: no grade).

    Only the pairs graded by two or more labellers are units; ``n_single`` counts the pairs graded by one
    labeller only, which take no part (as for two labellers, :func:`qrelkit.agreement.kappa.pair_grades`).
    """

    labellers: tuple[str, ...]
    keys: tuple[tuple[Any, Any], ...]
    ratings: np.ndarray
    n_single: int = 0

    @property
    def query_ids(self) -> tuple[Any, ...]:
        return tuple(k[0] for k in self.keys)


def group_grades(grades: Mapping[str, Any]) -> GroupGrades:
    """Align labellers' judgments (name -> a ``{(query_id, doc_id): grade}`` mapping or a frame with
    query_id, doc_id, grade) on the pairs two or more of them graded."""
    if not isinstance(grades, Mapping) or len(grades) < 2:
        raise _bad(
            "agreement needs the grades of at least two labellers",
            None if not isinstance(grades, Mapping) else list(grades),
            "a mapping labeller name -> that labeller's grades, two or more",
            "pass every labeller's grades",
        )
    names = tuple(str(n) for n in grades)
    if len(set(names)) != len(names):
        raise _bad("two labellers have the same name", list(names), "distinct names", "rename one of them")
    maps = [_as_mapping(g, name) for name, g in zip(names, grades.values(), strict=True)]
    times: dict[tuple[Any, Any], int] = {}
    for m in maps:
        for key in m:
            times[key] = times.get(key, 0) + 1
    keys = tuple(
        sorted((k for k, n in times.items() if n >= 2), key=lambda k: (_id_key(k[0]), _id_key(k[1])))
    )
    ratings = np.full((len(names), len(keys)), np.nan)
    for i, m in enumerate(maps):
        for j, key in enumerate(keys):
            if key in m:
                ratings[i, j] = m[key]
    return GroupGrades(names, keys, ratings, sum(n == 1 for n in times.values()))


# Fleiss' kappa


@dataclass(frozen=True)
class FleissResult:
    """Fleiss' kappa with its agreement ``observed`` (p_a) and ``expected`` by chance (p_e)."""

    kappa: float
    observed: float
    expected: float
    n_units: int
    ratings_per_unit: tuple[int, int]
    weights: Weighting
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _record(self)


def _fleiss_pieces(codes: np.ndarray, k: int, w: np.ndarray) -> np.ndarray:
    """Per unit: [p_a term, 1 if two or more ratings, r_ik / r_i for each grade, 1 if any rating]."""
    counts = np.stack([(codes == c).sum(axis=0) for c in range(k)], axis=1).astype(np.float64)
    r = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = (counts * (counts @ w.T - 1.0)).sum(axis=1) / (r * (r - 1.0))
        share = counts / r[:, None]
    two = r >= 2
    return np.column_stack(
        [np.where(two, agree, 0.0), two, np.where(r[:, None] >= 1, share, 0.0), r >= 1]
    ).astype(np.float64)


def _fleiss_from_sums(sums: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kappa, p_a and p_e from summed pieces ``(R, 3 + k)``; kappa NaN where undefined."""
    k = w.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_a = sums[:, 0] / sums[:, 1]
        pi = sums[:, 2 : 2 + k] / sums[:, 2 + k : 3 + k]
        p_e = np.einsum("ri,ij,rj->r", pi, w, pi)
        kappa = np.where((sums[:, 1] > 0) & (p_e < 1.0), (p_a - p_e) / np.where(p_e < 1, 1 - p_e, 1), np.nan)
    return kappa, p_a, p_e


def _codes(ratings: np.ndarray, scale: tuple[int, ...]) -> np.ndarray:
    """Indices into the scale, -1 where no grade; an off-scale grade is an error."""
    present = ~np.isnan(ratings)
    values = ratings[present]
    pos = np.searchsorted(np.asarray(scale, dtype=np.float64), values)
    pos = np.minimum(pos, len(scale) - 1)
    if (np.asarray(scale, dtype=np.float64)[pos] != values).any():
        bad = values[np.asarray(scale, dtype=np.float64)[pos] != values][0]
        raise _bad(f"grade {bad:g} is not on the scale {scale}", bad, f"one of {scale}",
                   "pass the rubric's full scale, or correct the judgments that use a grade outside it")  # fmt: skip
    out = np.full(ratings.shape, -1, dtype=np.int64)
    out[present] = pos
    return out


def fleiss_kappa(ratings: Any, scale: Sequence[int], weights: Weighting = "unweighted") -> FleissResult:
    """Fleiss' kappa of a (labellers x units) array of grades (NaN: no rating) over the full ``scale``
    (module docstring for the formula; ``weights`` as :func:`qrelkit.agreement.kappa.weight_matrix`)."""
    scale = _check_scale(scale)
    weights = _one_of(weights, WEIGHTINGS, "weights")
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2:
        raise _bad("ratings must be a (labellers x units) array with at least two labellers",
                   f"array of shape {r.shape}", "shape (m, n) with m >= 2; NaN marks a missing rating",
                   "stack one row per labeller")  # fmt: skip
    codes = _codes(r, scale)
    codes = codes[:, (codes >= 0).any(axis=0)]
    w = weight_matrix(scale, weights)
    pieces = _fleiss_pieces(codes, len(scale), w)
    kappa, p_a, p_e = _fleiss_from_sums(pieces.sum(axis=0)[None], w)
    per_unit = (codes >= 0).sum(axis=0)
    spread = (int(per_unit.min()), int(per_unit.max())) if per_unit.size else (0, 0)
    note = None
    if math.isnan(kappa[0]):
        note = "no unit has two ratings, or every rating is the same grade: Fleiss' kappa is undefined"
    return FleissResult(float(kappa[0]), float(p_a[0]), float(p_e[0]), codes.shape[1], spread, weights, note)


# the report of a group


@dataclass(frozen=True, eq=False)
class GroupReport:
    """Every agreement statistic of two or more labellers, with the query-bootstrap intervals.

    ``pairwise`` maps each two labellers (in the order given) to their :class:`KappaResult` on the pairs
    both graded; ``kappa_matrix`` and ``pairs_matrix`` lay those out (NaN / 0 where two labellers share no
    graded pair, 1 / their count on the diagonal). ``intervals`` holds each group statistic's interval.
    """

    labellers: tuple[str, ...]
    scale: tuple[int, ...]
    weights: Weighting
    n_units: int
    n_queries: int
    n_single: int
    pairwise: dict[tuple[str, str], KappaResult]
    mean_kappa: float
    alpha: dict[str, AlphaResult]
    fleiss: FleissResult
    intervals: dict[str, BootstrapInterval]

    @property
    def kappa_matrix(self) -> np.ndarray:
        n = len(self.labellers)
        m = np.eye(n)
        for (a, b), k in self.pairwise.items():
            i, j = self.labellers.index(a), self.labellers.index(b)
            m[i, j] = m[j, i] = k.kappa if k.n else math.nan
        return m

    @property
    def pairs_matrix(self) -> np.ndarray:
        n = len(self.labellers)
        m = np.zeros((n, n), dtype=np.int64)
        for (a, b), k in self.pairwise.items():
            i, j = self.labellers.index(a), self.labellers.index(b)
            m[i, j] = m[j, i] = k.n
        return m

    def value(self, statistic: str) -> float:
        """The point value of a group statistic (``kappa``: the lowest pairwise kappa)."""
        if statistic in ("kappa", "mean_kappa"):
            defined = [k.kappa for k in self.pairwise.values() if k.n]
            if statistic == "mean_kappa":
                return self.mean_kappa
            return min(defined) if defined else math.nan
        if statistic == "fleiss":
            return self.fleiss.kappa
        return self.alpha[statistic.removeprefix("alpha_")].alpha

    def to_dict(self) -> dict[str, Any]:
        from qrelkit.agreement.kappa import _jsonable

        return {
            "labellers": list(self.labellers),
            "scale": list(self.scale),
            "weights": self.weights,
            "n_units": self.n_units,
            "n_queries": self.n_queries,
            "n_single": self.n_single,
            "pairwise": [
                {
                    "labellers": [a, b],
                    "kappa": _jsonable(k.kappa),
                    "n_pairs": k.n,
                    "ci_low": _jsonable(k.ci_low),
                    "ci_high": _jsonable(k.ci_high),
                    "note": k.note,
                }
                for (a, b), k in self.pairwise.items()
            ],
            "kappa_matrix": _jsonable(self.kappa_matrix),
            "pairs_matrix": self.pairs_matrix.tolist(),
            "mean_kappa": _jsonable(self.mean_kappa),
            "alpha": {lvl: a.to_dict() for lvl, a in self.alpha.items()},
            "fleiss": self.fleiss.to_dict(),
            "intervals": {s: b.to_dict() for s, b in self.intervals.items()},
        }


def _mean_defined(values: np.ndarray) -> np.ndarray:
    """Row means over the defined (non-NaN) values; NaN for a row with none."""
    defined = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined.any(axis=1), np.where(defined, values, 0.0).sum(axis=1) / defined.sum(axis=1),
                        np.nan)  # fmt: skip


def group_agreement(
    grades: GroupGrades,
    scale: Sequence[int],
    *,
    weights: Weighting = "linear",
    level: float = INTERVAL_LEVEL,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
) -> GroupReport:
    """Pairwise weighted kappas and their mean, Krippendorff's alpha (interval and ordinal) and Fleiss'
    kappa of the labellers in ``grades``, each group statistic with its query-bootstrap interval."""
    scale = _check_scale(scale)
    weights = _one_of(weights, WEIGHTINGS, "weights")
    codes = _codes(grades.ratings, scale)
    k, n_l = len(scale), len(grades.labellers)
    qids = sorted(set(grades.query_ids), key=_id_key)
    index = {q: i for i, q in enumerate(qids)}
    unit_q = np.fromiter((index[q] for q in grades.query_ids), dtype=np.int64, count=len(grades.keys))
    n_q = len(qids)
    boot: dict[str, Any] = dict(n_resamples=n_resamples, seed=seed, level=level)

    # pairwise kappa: per query and per two labellers, the confusion table of the pairs both graded
    duos = list(itertools.combinations(range(n_l), 2))
    tables = np.zeros((len(duos), n_q, k, k), dtype=np.int64)
    for d, (i, j) in enumerate(duos):
        both = (codes[i] >= 0) & (codes[j] >= 0)
        flat = unit_q[both] * (k * k) + codes[i][both] * k + codes[j][both]
        tables[d] = np.bincount(flat, minlength=n_q * k * k).reshape(n_q, k, k)
    pairwise = {
        (grades.labellers[i], grades.labellers[j]): _kappa_from_table(
            tables[d].sum(axis=0), scale, weights, level
        )
        for d, (i, j) in enumerate(duos)
    }
    shared = [d for d in range(len(duos)) if tables[d].sum() > 0]
    point = np.array([[pairwise[grades.labellers[i], grades.labellers[j]].kappa for i, j in duos]])[:, shared]
    mean_kappa = float(_mean_defined(point)[0]) if shared else math.nan
    dis = 1.0 - weight_matrix(scale, weights)

    def mean_kappas(sums: np.ndarray) -> np.ndarray:
        r = sums.shape[0]
        kappas = _kappa_batch(sums.reshape(r * len(shared), k, k), dis)[0].reshape(r, len(shared))
        return _mean_defined(kappas)

    per_query_tables = np.moveaxis(tables[shared], 0, 1).reshape(n_q, len(shared) * k * k)
    intervals = {"mean_kappa": query_bootstrap(per_query_tables, mean_kappas, weights=weights,
                                               what="mean pairwise kappa", **boot)}  # fmt: skip

    # Krippendorff's alpha: per query, the coincidence matrix of its units
    domain = np.asarray(scale, dtype=np.float64)
    counts = np.stack([(codes == c).sum(axis=0) for c in range(k)], axis=1).astype(np.float64)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    scaled = counts[pairable] / (m_u[pairable] - 1.0)[:, None]
    unit_o = np.einsum("ui,uj->uij", scaled, counts[pairable])
    unit_o[:, np.arange(k), np.arange(k)] -= scaled
    coincidence = np.zeros((n_q, k, k))
    np.add.at(coincidence, unit_q[pairable], unit_o)
    alpha: dict[str, AlphaResult] = {}
    lvl: AlphaLevel
    for lvl in ("interval", "ordinal"):
        alpha[lvl] = krippendorff_alpha(grades.ratings, lvl, value_domain=scale)
        intervals[f"alpha_{lvl}"] = query_bootstrap(
            coincidence.reshape(n_q, k * k),
            lambda s, lvl=lvl: alpha_batch(s.reshape(-1, k, k), domain, lvl)[0],
            weights=weights, what=f"alpha ({lvl})", **boot,
        )  # fmt: skip

    # Fleiss' kappa (unweighted): per query, the sums of its units' pieces
    eye = np.eye(k)
    pieces = _fleiss_pieces(codes, k, eye)
    fleiss_sums = np.zeros((n_q, pieces.shape[1]))
    np.add.at(fleiss_sums, unit_q, pieces)
    fleiss = fleiss_kappa(grades.ratings, scale)
    intervals["fleiss"] = query_bootstrap(fleiss_sums, lambda s: _fleiss_from_sums(s, eye)[0],
                                          weights="unweighted", what="Fleiss' kappa", **boot)  # fmt: skip
    return GroupReport(grades.labellers, scale, weights, len(grades.keys), n_q, grades.n_single, pairwise,
                       mean_kappa, alpha, fleiss, intervals)  # fmt: skip


def _why_undefined(report: GroupReport, statistic: str) -> str:
    """The reason a group statistic is undefined, from the statistic's own note where it has one."""
    if not report.n_units:
        return "no pair was graded by two labellers"
    if statistic == "fleiss":
        note = report.fleiss.note
    elif statistic.startswith("alpha_"):
        note = report.alpha[statistic.removeprefix("alpha_")].note
    else:
        note = next((k.note for k in report.pairwise.values() if k.n and k.note), None)
    return note or "undefined"


def group_gate(
    report: GroupReport, threshold: float, statistic: str, *, use: str = "bootstrap_low"
) -> GateResult:
    """Pass only if the group statistic's lower query-bootstrap bound (``use="bootstrap_low"``) or point
    value (``use="kappa"``) is at least ``threshold``; undefined fails, and the message says why."""
    statistic = _one_of(statistic, GROUP_STATISTICS, "statistic")
    use = _one_of(use, ("bootstrap_low", "kappa"), "use")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not -1.0 <= threshold <= 1.0:
        raise _bad("the threshold must be a number between -1 and 1", threshold, "e.g. 0.6",
                   "pass --min-kappa 0.6")  # fmt: skip
    threshold = float(threshold)
    name = STATISTIC_NAMES[statistic]
    value, b = report.value(statistic), report.intervals[statistic]
    used, what = (value, "value") if use == "kappa" else (b.low, "lower bound")
    if math.isnan(used):
        why = b.note if use != "kappa" and not math.isnan(value) else _why_undefined(report, statistic)
        msg = f"{name} undefined or without interval ({why}); threshold {threshold:.2f}: FAIL"
        return GateResult(False, threshold, used, use, msg)  # type: ignore[arg-type]
    passed = used >= threshold
    v, t = _fmt_pair(used, threshold)
    head = f"{name} {value:.2f}, {b.level * 100:g}% query-bootstrap CI [{b.low:.2f}, {b.high:.2f}]"
    msg = f"{head}; {what} {v} {'>=' if passed else '<'} {t}: {'PASS' if passed else 'FAIL'}"
    return GateResult(passed, threshold, used, use, msg)  # type: ignore[arg-type]
