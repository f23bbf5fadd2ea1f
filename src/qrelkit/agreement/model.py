"""A model labeller measured against people: kappa, confusion, per-grade recall, leniency, the alternative
annotator test.

The workflow (``qrelkit.app.models.gate``) decides the model's gate; this module owns the numbers.

- :func:`model_versus` compares the model with one reference labeller (a person, or the adjudicated
  calibration grades) on the pairs both graded: weighted kappa with its query-bootstrap interval
  (:func:`qrelkit.agreement.kappa.agreement_report`), the confusion matrix (rows: the reference's grade,
  columns: the model's), each reference grade's recall (the share of the reference's pairs at that grade
  the model gave the same grade), and leniency: the model's mean grade minus the reference's, with its
  percentile interval from the same query bootstrap (:func:`qrelkit.agreement.resample.query_bootstrap`,
  same resamples and seed as kappa's).
- :func:`alternative_annotator_test` is the alt-test of Calderon, Reichart and Dror (ACL 2025): for each
  person ``j`` left out, on every pair ``j`` and the model graded and at least one other person graded,
  the model's alignment with the other people (the share of them giving its grade) is compared with
  ``j``'s; ``d_i = W^h_i - W^f_i`` (``W^f_i = 1`` when the model aligns at least as well as ``j``,
  ``W^h_i = 1`` when ``j`` aligns at least as well as the model), and a one-sided one-sample t-test of
  ``H0: mean(d) >= epsilon`` against ``H1: mean(d) < epsilon`` (the model is not worse than ``j`` by more
  than the cost ``epsilon``). The p-values are corrected over people by Benjamini-Yekutieli; the winning
  rate is the share of people whose null is rejected at ``alpha``, and the model passes when it is at
  least 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.provenance import json_number as _num

from .kappa import AgreementReport, Weighting, _id_key, agreement_report, pair_grades
from .resample import (
    INTERVAL_LEVEL,
    QUERY_BOOTSTRAP_RESAMPLES,
    QUERY_BOOTSTRAP_SEED,
    BootstrapInterval,
    query_bootstrap,
)

__all__ = [
    "ALT_TEST_ALPHA",
    "ALT_TEST_EPSILON",
    "ALT_TEST_WINNING_RATE",
    "AltTest",
    "ModelAgreement",
    "alternative_annotator_test",
    "benjamini_yekutieli",
    "model_versus",
]

Grades = Mapping[tuple[str, str], int]

#: The alt-test's cost of using the model instead of a person, its level, and the winning rate to pass.
ALT_TEST_EPSILON = 0.1
ALT_TEST_ALPHA = 0.05
ALT_TEST_WINNING_RATE = 0.5


@dataclass(frozen=True, eq=False)
class ModelAgreement:
    """The model against one reference labeller on the pairs both graded."""

    reference: str
    report: AgreementReport
    leniency: float
    leniency_interval: BootstrapInterval
    recall: dict[int, float]

    def to_dict(self) -> dict[str, Any]:
        k, boot, scale = self.report.kappa, self.report.bootstrap, self.report.scale
        return {
            "reference": self.reference,
            "n_pairs": k.n,
            "kappa": _num(k.kappa),
            "weights": k.weights,
            "bootstrap_low": _num(boot.low),
            "bootstrap_high": _num(boot.high),
            "bootstrap_resamples": boot.n_resamples,
            "bootstrap_seed": boot.seed,
            "scale": list(scale),
            "confusion": k.confusion.astype(int).tolist(),
            "recall": {str(g): _num(v) for g, v in self.recall.items()},
            "leniency": _num(self.leniency),
            "leniency_low": _num(self.leniency_interval.low),
            "leniency_high": _num(self.leniency_interval.high),
        }


def model_versus(
    model: Grades,
    reference: Grades,
    scale: Sequence[int],
    *,
    name: str = "reference",
    weights: Weighting = "linear",
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> ModelAgreement:
    """Kappa (reference as labeller A, model as B), confusion, recall per reference grade, leniency."""
    paired = pair_grades(dict(reference), dict(model))
    report = agreement_report(paired, scale, weights=weights, n_resamples=n_resamples, seed=seed, level=level)
    confusion = report.kappa.confusion
    recall = {}
    for i, g in enumerate(report.scale):
        row = float(confusion[i].sum())
        recall[int(g)] = float(confusion[i, i]) / row if row else math.nan
    ref, mod = paired.grades_a.astype(np.float64), paired.grades_b.astype(np.float64)
    leniency = float(mod.mean() - ref.mean()) if paired.n else math.nan
    qids = sorted(set(paired.query_ids), key=_id_key)
    index = {q: i for i, q in enumerate(qids)}
    pieces = np.zeros((len(qids), 3))
    for q, a, b in zip(paired.query_ids, ref, mod, strict=True):
        pieces[index[q]] += (b, a, 1.0)

    def mean_difference(sums: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((sums[:, 0] - sums[:, 1]) / sums[:, 2])

    interval = query_bootstrap(pieces, mean_difference, n_resamples=n_resamples, seed=seed, level=level,
                               weights=weights, what="leniency")  # fmt: skip
    return ModelAgreement(name, report, leniency, interval, recall)


def benjamini_yekutieli(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Yekutieli adjusted p-values (valid under any dependence), in the input's order."""
    m = len(p_values)
    if m == 0:
        return []
    c = sum(1.0 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m * c / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


@dataclass(frozen=True)
class AltTest:
    """The alternative annotator test: per person left out, the pairs, rates, p-value and verdict."""

    people: tuple[str, ...]
    n_pairs: tuple[int, ...]
    model_rate: tuple[float, ...]  # p^f_j: share of pairs where the model aligns at least as well as j
    person_rate: tuple[float, ...]  # p^h_j
    p_values: tuple[float, ...]
    adjusted: tuple[float, ...]
    rejected: tuple[bool, ...]
    winning_rate: float
    epsilon: float
    alpha: float
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "winning_rate": _num(self.winning_rate),
            "required": ALT_TEST_WINNING_RATE,
            "passed": self.passed,
            "people": [
                {"name": n, "n_pairs": k, "model_rate": _num(f), "person_rate": _num(h), "p_value": _num(p),
                 "p_adjusted": _num(a), "rejected": r}
                for n, k, f, h, p, a, r in zip(self.people, self.n_pairs, self.model_rate, self.person_rate,
                                               self.p_values, self.adjusted, self.rejected, strict=True)
            ],
        }  # fmt: skip


def _one_sided_p(d: np.ndarray, epsilon: float) -> float:
    """P-value of H0: mean(d) >= epsilon against mean(d) < epsilon (one-sample t-test)."""
    from scipy import stats

    n = d.size
    if n < 2:
        return math.nan
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return 0.0 if float(d.mean()) < epsilon else 1.0
    t = (float(d.mean()) - epsilon) / (sd / math.sqrt(n))
    return float(stats.t.cdf(t, df=n - 1))


def alternative_annotator_test(
    model: Grades,
    people: Mapping[str, Grades],
    *,
    epsilon: float = ALT_TEST_EPSILON,
    alpha: float = ALT_TEST_ALPHA,
) -> AltTest | None:
    """The alt-test (module docstring); ``None`` with fewer than three people."""
    names = sorted(people)
    if len(names) < 3:
        return None
    counts, f_rates, h_rates, p_values = [], [], [], []
    for j in names:
        wf, wh = [], []
        for key, grade_j in people[j].items():
            if key not in model:
                continue
            others = [people[k][key] for k in names if k != j and key in people[k]]
            if not others:
                continue
            s_model = sum(g == model[key] for g in others) / len(others)
            s_person = sum(g == grade_j for g in others) / len(others)
            wf.append(1.0 if s_model >= s_person else 0.0)
            wh.append(1.0 if s_person >= s_model else 0.0)
        f, h = np.asarray(wf), np.asarray(wh)
        counts.append(int(f.size))
        f_rates.append(float(f.mean()) if f.size else math.nan)
        h_rates.append(float(h.mean()) if h.size else math.nan)
        p_values.append(_one_sided_p(h - f, epsilon))
    usable = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    adjusted = [math.nan] * len(names)
    for i, a in zip(usable, benjamini_yekutieli([p_values[i] for i in usable]), strict=True):
        adjusted[i] = a
    rejected = [not math.isnan(a) and a <= alpha for a in adjusted]
    rate = sum(rejected) / len(names)
    return AltTest(tuple(names), tuple(counts), tuple(f_rates), tuple(h_rates), tuple(p_values),
                   tuple(adjusted), tuple(rejected), rate, epsilon, alpha, rate >= ALT_TEST_WINNING_RATE)  # fmt: skip
