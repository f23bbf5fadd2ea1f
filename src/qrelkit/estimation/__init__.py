"""Prediction-powered estimates: a measure's mean from a model's grades on every query, corrected by
people's grades on a random sample of queries.

Two evaluations of the same runs under the same conventions go in: one against the model's qrels
(``MODEL_QRELS``, every pooled pair), one against the people's (``HUMAN_QRELS``, the sampled queries
H). :func:`estimate` returns an :class:`Estimates`: per run and measure, the ``model``, ``human``,
``ppi`` and ``ppi++`` estimates (:mod:`qrelkit.estimation.ppi`), each with its interval, the lambda used,
|H|, |U| and the effective number of human-judged queries; :func:`pair_estimates` does the same for the
per-query differences of two runs (:func:`qrelkit.compare.compare` with ``human=`` calls it and applies
its correction across the family). :func:`estimate_files` reads the two qrels files and the runs;
the two qrels sources are its only inputs, so a judging project's manifest naming both can supply them:
:func:`human_for` decides which people's qrels an evaluation uses (``--human``, else the ones the model's
qrels' manifest names, :func:`qrelkit.judgments.manifest.human_source`).

See ``docs/prediction-powered.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import IncomparableError, ValidationError, did_you_mean
from ..evaluation.results import Results
from .ppi import (
    DEFAULT_ESTIMATOR,
    DEFAULT_INTERVAL,
    ESTIMATORS,
    INTERVAL_NAMES,
    INTERVALS,
    HumanPower,
    Interval,
    human_queries_needed,
)
from .ppi import interval as _interval

__all__ = [
    "DEFAULT_ESTIMATOR",
    "DEFAULT_INTERVAL",
    "ESTIMATORS",
    "INTERVALS",
    "Estimate",
    "Estimates",
    "PairEstimate",
    "check_estimator",
    "check_interval",
    "check_scales",
    "estimate",
    "estimate_files",
    "estimate_runs",
    "human_for",
    "on_recorded_scale",
    "pair_estimates",
    "read_human",
    "settings",
    "source_warnings",
    "with_meaning",
]

#: Fewer human-judged queries than this is refused: no variance can be estimated from one query.
MIN_HUMAN_QUERIES = 2
#: Fewer than this gets a warning: the interval of ppi and ppi++ rests on the per-query values being
#: roughly normal, which a handful of queries cannot show.
FEW_HUMAN_QUERIES = 5
#: Query ids named in an error at most.
SHOWN_IDS = 5


def check_estimator(estimator: str) -> str:
    if estimator not in ESTIMATORS:
        raise ValidationError(
            f"unknown estimator {estimator!r}{did_you_mean(str(estimator), ESTIMATORS)}",
            expected="one of " + ", ".join(ESTIMATORS),
            fix="--estimator ppi++ (the default), ppi, human or model",
        )
    return estimator


def check_interval(kind: str) -> str:
    if kind not in INTERVALS:
        raise ValidationError(
            f"unknown interval {kind!r}{did_you_mean(str(kind), INTERVALS)}",
            expected="one of " + ", ".join(INTERVALS),
            fix="--interval t (the default, small-sample) or normal (ppi_py's)",
        )
    return kind


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(q) for q in list(ids)[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def _qrels_entry(results: Results) -> dict[str, Any]:
    return {
        "name": results.qrels_name,
        "fingerprint": results.qrels_fingerprint.to_dict(),
        "rubric_hash": results.rubric_hash,
    }


def settings(
    model: Results, human: Results, estimator: str, alpha: float, interval: str = DEFAULT_INTERVAL
) -> dict[str, Any]:
    """What every output of an estimate records beside the conventions: the estimator, its interval (the
    ``ppi`` and ``ppi++`` one; ``human`` and ``model`` take the t-interval), its level, and both judgments
    (name, fingerprint, rubric hash)."""
    return {
        "estimator": estimator,
        "interval": interval,
        "interval_method": INTERVAL_NAMES[interval] if estimator in ("ppi", "ppi++") else INTERVAL_NAMES["t"],
        "alpha": alpha,
        "interval_level": 1.0 - alpha,
        "model_qrels": _qrels_entry(model),
        "human_qrels": _qrels_entry(human),
    }


# -- the checks -----------------------------------------------------------------------------------------


def check_pair(model: Results, human: Results) -> list[str]:
    """Refuse two evaluations the estimator cannot combine (one line each, naming the fix), and return the
    warnings of those it can: different conventions, runs, measures or rubrics; queries the people judged
    that the model did not; fewer than :data:`MIN_HUMAN_QUERIES` human-judged queries (a warning below
    :data:`FEW_HUMAN_QUERIES`)."""
    diff = model.conventions.differences(human.conventions)
    if diff:
        axes = "; ".join(f"{axis}: {a} vs {b}" for axis, a, b in diff)
        raise IncomparableError(
            f"the model's and the people's judgments were evaluated under different conventions ({axes})",
            fix="evaluate both with the same --profile and convention flags",
        )
    runs = {r.name: r.fingerprint.sha256 for r in model.runs}
    if runs != {r.name: r.fingerprint.sha256 for r in human.runs}:
        raise IncomparableError(
            "the model's and the people's evaluations are of different runs",
            fix="evaluate the same run files against MODEL_QRELS and HUMAN_QRELS",
        )
    if model.measure_names != human.measure_names:
        raise IncomparableError(
            "the model's and the people's evaluations are of different measures",
            fix="evaluate both with the same -m measures",
        )
    if model.rubric_hash and human.rubric_hash and model.rubric_hash != human.rubric_hash:
        raise IncomparableError(
            "the model's and the people's judgments were read under different rubrics",
            fix="grade both on one rubric's scale (--rubric)",
        )
    model_ids = {q for r in model.runs for q in r.queries.query_ids}
    human_ids = {q for r in human.runs for q in r.queries.query_ids}
    extra = sorted(human_ids - model_ids)
    if extra:
        raise ValidationError(
            f"{len(extra)} queries judged by people are not in the model's judgments: {_ids(extra)}",
            source=human.qrels_name,
            fix="the model must grade every pooled pair: judge these queries with the model too, or drop them "
            "from HUMAN_QRELS",
        )
    if len(human_ids) < MIN_HUMAN_QUERIES:
        raise ValidationError(
            f"{len(human_ids)} human-judged query: no interval can be estimated from fewer than "
            f"{MIN_HUMAN_QUERIES}",
            source=human.qrels_name,
            fix="have people judge a random sample of at least 30 queries",
        )
    if len(human_ids) < FEW_HUMAN_QUERIES:
        return [
            f"only {len(human_ids)} human-judged queries: the interval of ppi and ppi++ is unreliable "
            f"below {FEW_HUMAN_QUERIES} (use --estimator human, or judge more randomly drawn queries)",
            *identical_grades(model, human),
        ]
    return identical_grades(model, human)


def identical_grades(model: Results, human: Results) -> list[str]:
    """A warning when the model's and the people's values are equal on every human-judged query, for every
    run and measure (the same file given twice, or two files with the same grades on H): the correction is
    then empty and every estimate is the model's alone, with no check of its bias."""
    same_file = model.qrels_fingerprint.sha256 == human.qrels_fingerprint.sha256
    for run in model.run_names:
        for m in model.measure_names:
            a, b = _values(model, run, m), _values(human, run, m)
            if any(q not in a or abs(a[q] - v) > 1e-12 for q, v in b.items()):
                return []
    what = "are the same file" if same_file else "give the same values on every human-judged query"
    return [
        f"the model's qrels ({model.qrels_name}) and the people's ({human.qrels_name}) {what}: the correction "
        "is empty, so every estimate is the model's grades alone, with nothing to check their bias against "
        "(give the people's own grades of the sampled queries as --human)"
    ]


def check_scales(model_qrels: Any, human_qrels: Any) -> None:
    """Refuse a model's and people's judgments on different grade scales: each file's grades must lie within
    the other's lowest and highest grade (the rubric's scale when one was given)."""

    def span(qrels: Any) -> tuple[int, int] | None:
        if qrels.scale:
            return min(qrels.scale), max(qrels.scale)
        grades = qrels.frame["grade"]
        return (int(grades.min()), int(grades.max())) if len(grades) else None

    a, b = span(model_qrels), span(human_qrels)
    if a is not None and b is not None and a != b:
        raise IncomparableError(
            f"the model's grades run {a[0]}..{a[1]} but the people's {b[0]}..{b[1]}: different grade scales",
            source=human_qrels.name,
            fix="map both to one rubric's scale before estimating (--rubric checks both)",
        )


# -- per run and measure -------------------------------------------------------------------------------


def _values(results: Results, run: str, measure: str) -> dict[str, float]:
    return {q: v for q, v in results.values(measure, run).items() if not math.isnan(v)}


def split(
    model: dict[str, float], human: dict[str, float]
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(H, people's values on H, model's values on H, model's values on U): H the queries with a defined
    value under both, U the queries with a model value and no people's judgment, both in id order."""
    h = sorted(q for q in human if q in model)
    u = sorted(q for q in model if q not in human)
    y = np.array([human[q] for q in h], dtype=np.float64)
    yhat = np.array([model[q] for q in h], dtype=np.float64)
    return h, y, yhat, np.array([model[q] for q in u], dtype=np.float64)


def _nan_interval(estimator: str, n: int, big_n: int, kind: str) -> Interval:
    reason = f"{n} human-judged queries with a value: an interval needs at least {MIN_HUMAN_QUERIES}"
    nan = math.nan
    return Interval(estimator, nan, nan, nan, nan, nan, None, n, big_n, None, kind, reason)


def _intervals(
    y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, alpha: float, kind: str = DEFAULT_INTERVAL
) -> dict[str, Interval]:
    if len(y) < MIN_HUMAN_QUERIES:
        return {e: _nan_interval(e, len(y), len(yhat_u), kind) for e in ESTIMATORS}
    return {e: _interval(e, y, yhat, yhat_u, alpha, kind) for e in ESTIMATORS}


@dataclass(frozen=True)
class Estimate:
    """One run under one measure: every estimator's estimate (``intervals``) and the chosen one."""

    run: str
    measure: str
    estimator: str
    intervals: dict[str, Interval]
    human_queries: tuple[str, ...] = field(repr=False)

    @property
    def chosen(self) -> Interval:
        return self.intervals[self.estimator]

    def to_dict(self) -> dict[str, Any]:
        c = self.chosen
        return {
            "run": self.run,
            "measure": self.measure,
            "estimator": self.estimator,
            **{k: v for k, v in c.to_dict().items() if k != "estimator"},
            "by_estimator": {e: i.to_dict() for e, i in self.intervals.items()},
        }


@dataclass(frozen=True)
class Estimates:
    """What :func:`estimate` found, with both evaluations and every choice it made."""

    model: Results = field(repr=False)
    human: Results = field(repr=False)
    estimator: str
    alpha: float
    rows: tuple[Estimate, ...]
    warnings: tuple[str, ...] = ()
    interval: str = DEFAULT_INTERVAL  # of ppi and ppi++: "t" (small-sample) or "normal" (ppi_py's)

    def row(self, run: str, measure: str) -> Estimate:
        name = self.model._measure_name(measure)
        for r in self.rows:
            if (r.run, r.measure) == (run, name):
                return r
        raise ValidationError(f"no estimate of run {run!r} under {measure}")

    def settings(self) -> dict[str, Any]:
        """The estimator, its level and both judgments' fingerprints: written into every output."""
        return settings(self.model, self.human, self.estimator, self.alpha, self.interval)

    def to_dict(self) -> dict[str, Any]:
        out = self.model.provenance()
        out["estimation"] = self.settings()
        out["estimates"] = [r.to_dict() for r in self.rows]
        if self.warnings:
            out["estimation"]["warnings"] = list(self.warnings)
        return out


def estimate(
    model_results: Results,
    human_results: Results,
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
) -> Estimates:
    """Every run's and measure's mean estimated from the model's per-query values (``model_results``) and
    the people's on a random sample of queries (``human_results``), by ``estimator`` (``ppi++``, ``ppi``,
    ``human``, ``model``; all four are computed and kept, the chosen one is the headline), ``ppi`` and
    ``ppi++`` with the ``interval`` named (``t``, the default, or ``normal``: ppi_py's)."""
    return _estimate(
        model_results, human_results, check_estimator(estimator), alpha, check_interval(interval)
    )


def _estimate(
    model_results: Results, human_results: Results, estimator: str, alpha: float, kind: str = DEFAULT_INTERVAL
) -> Estimates:
    """:func:`estimate` of an estimator already checked (each door checks it once: :func:`check_estimator`)."""
    if not 0.0 < alpha < 1.0:
        raise ValidationError("alpha must be strictly between 0 and 1", got=alpha, fix="e.g. 0.05")
    warnings = check_pair(model_results, human_results)
    rows = []
    for run in model_results.run_names:
        for m in model_results.measure_names:
            h, y, yhat, yhat_u = split(_values(model_results, run, m), _values(human_results, run, m))
            rows.append(Estimate(run, m, estimator, _intervals(y, yhat, yhat_u, alpha, kind), tuple(h)))
    return Estimates(model_results, human_results, estimator, alpha, tuple(rows), tuple(warnings), kind)


# -- per pair of runs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairEstimate:
    """One (baseline, treatment) pair under one measure: the estimator applied to the per-query differences
    (treatment - baseline), the raw p-value of "no difference", and the people-only and model-only
    differences for contrast; ``p_adjusted``, ``significant`` and ``verdict`` are set by the comparison."""

    baseline: str
    treatment: str
    measure: str
    estimate: Interval
    model_difference: float
    human_difference: float
    power: HumanPower | None = None
    p_adjusted: float = math.nan
    significant: bool = False
    verdict: str | None = None

    def to_dict(self) -> dict[str, Any]:
        from ..provenance import json_number as num

        out: dict[str, Any] = {
            "baseline": self.baseline,
            "treatment": self.treatment,
            "measure": self.measure,
            **self.estimate.to_dict(),
            "difference": num(self.estimate.value),
            "model_difference": num(self.model_difference),
            "human_difference": num(self.human_difference),
            "p_adjusted": num(self.p_adjusted),
            "significant": self.significant,
        }
        if self.power is not None:
            out["power"] = self.power.to_dict()
        if self.verdict is not None:
            out["verdict"] = self.verdict
        return out


def _differences(results: Results, baseline: str, treatment: str, measure: str) -> dict[str, float]:
    a, b = _values(results, baseline, measure), _values(results, treatment, measure)
    return {q: b[q] - a[q] for q in a if q in b}


def pair_estimates(
    model: Results,
    human: Results,
    pairs: Sequence[tuple[str, str]],
    measures: Sequence[str],
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    alpha: float = 0.05,
    power: bool = False,
    power_delta: float | None = None,
    power_target: float = 0.8,
    interval: str = DEFAULT_INTERVAL,
) -> list[PairEstimate]:
    """The estimator applied to each pair's per-query differences (queries both runs scored), with the raw
    p-value and ``interval``'s interval; with ``power`` (or a ``power_delta``) the human-judged queries
    needed to detect the observed (or given) difference. The caller corrects the p-values across its
    family."""
    check_estimator(estimator)
    check_interval(interval)
    check_pair(model, human)
    out = []
    for b, t in pairs:
        for m in measures:
            _, y, yhat, yhat_u = split(_differences(model, b, t, m), _differences(human, b, t, m))
            found = _intervals(y, yhat, yhat_u, alpha, interval)
            chosen = found[estimator]
            if chosen.reason:  # the values of a pair are its per-query differences
                from dataclasses import replace

                chosen = replace(chosen, reason=chosen.reason.replace(" values ", " per-query differences "))
            pw = None
            if (power or power_delta is not None) and len(y) >= MIN_HUMAN_QUERIES:
                delta = power_delta if power_delta is not None else chosen.value
                pw = human_queries_needed(estimator, y, yhat, yhat_u, delta, alpha, power_target)
            out.append(PairEstimate(b, t, m, chosen, found["model"].value, found["human"].value, pw))
    return out


# -- from judgments and files --------------------------------------------------------------------------


def estimate_runs(
    model_qrels: Any,
    human_qrels: Any,
    runs: Sequence[Any],
    measures: Sequence[Any] | None = None,
    conventions: Any = None,
    *,
    estimator: str = DEFAULT_ESTIMATOR,
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
) -> Estimates:
    """Evaluate ``runs`` against both judgments (:func:`qrelkit.evaluate`, the same conventions) and
    :func:`estimate`; the two judgments must share a grade scale (:func:`check_scales`)."""
    return _estimate_runs(
        model_qrels, human_qrels, runs, measures, conventions, check_estimator(estimator), alpha,
        check_interval(interval),
    )  # fmt: skip


def _estimate_runs(
    model_qrels: Any,
    human_qrels: Any,
    runs: Sequence[Any],
    measures: Sequence[Any] | None,
    conventions: Any,
    estimator: str,
    alpha: float,
    kind: str = DEFAULT_INTERVAL,
) -> Estimates:
    """:func:`estimate_runs` of an estimator already checked."""
    from ..evaluation.core import evaluate

    check_scales(model_qrels, human_qrels)
    model = evaluate(model_qrels, runs, measures, conventions)
    human = evaluate(human_qrels, runs, measures, conventions)
    return _estimate(model, human, estimator, alpha, kind)


def read_human(path: Any, conventions: Any, reader: Any = None) -> Any:
    """The people's judgments read as the model's are (``reader``'s options, a
    :class:`qrelkit.evaluation.plan.ReaderOptions`, those unset taken from the profile; the same rubric)."""
    from ..evaluation.plan import read_judgments, whole_plan

    return read_judgments(whole_plan(path, (), conventions, reader))


def estimate_files(
    model_path: Any,
    human_path: Any,
    run_paths: Sequence[Any],
    measures: Sequence[Any] | None = None,
    conventions: Any = None,
    reader: Any = None,
    *,
    estimator: str = DEFAULT_ESTIMATOR,
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
    judgments: dict[str, Any] | None = None,
) -> Estimates:
    """:func:`estimate_runs` over files: ``MODEL_QRELS``, ``HUMAN_QRELS`` and the runs, read whole with
    ``reader``'s options (those unset taken from ``conventions``' profile; ``qrelkit eval --human``'s way in).
    ``judgments``: what the model's qrels mean, from their manifest
    (:func:`qrelkit.judgments.manifest.judgments_meaning`): its scale is both files' when no rubric gave
    one (:func:`on_recorded_scale`), and its warnings (a predictor's line, a failed gate) are the estimates'
    (:func:`with_meaning`)."""
    from ..evaluation.files import read_whole
    from ..measures.conventions import DEFAULT

    conv = conventions or DEFAULT
    check_estimator(estimator)
    check_interval(interval)
    model_qrels, runs = read_whole(model_path, run_paths, conv, reader)
    human_qrels = read_human(human_path, conv, reader)
    scale = (judgments or {}).get("scale")
    model_qrels, human_qrels = on_recorded_scale(model_qrels, scale), on_recorded_scale(human_qrels, scale)
    found = _estimate_runs(model_qrels, human_qrels, runs, measures, conv, estimator, alpha, interval)
    return with_meaning(found, judgments, source_warnings(model_path, human_path) if judgments else ())


def source_warnings(model_path: Any, human_path: Any) -> tuple[str, ...]:
    """The warnings of the people's qrels the model's manifest names (:class:`~qrelkit.judgments.manifest.
    HumanSource`: not drawn at random), when they are the people's qrels estimated with."""
    from pathlib import Path

    from ..judgments.manifest import human_source

    try:
        found = human_source(model_path)
    except (ValidationError, OSError):
        return ()
    if found is None or found.path.resolve() != Path(human_path).resolve():
        return ()
    return tuple(found.warnings())


def on_recorded_scale(qrels: Any, scale: Sequence[int] | None) -> Any:
    """``qrels`` on the ``scale`` a manifest records, when no rubric gave them one and every grade is on
    it (:func:`check_scales` then compares scales, not the grades each file happens to use: a lenient
    judge that never gives 0 is on the same scale as the people). Grades off the scale keep their own
    span, so a file on another scale is still refused."""
    from dataclasses import replace

    if qrels.scale or not scale:
        return qrels
    allowed = tuple(sorted({int(g) for g in scale}))
    grades = qrels.frame["grade"]
    if len(grades) and not grades.is_in(list(allowed)).all():
        return qrels
    return replace(qrels, scale=allowed)


def with_meaning(
    estimates: Estimates, judgments: dict[str, Any] | None, source: Sequence[str] = ()
) -> Estimates:
    """``estimates`` whose model results carry what the model's qrels mean (their manifest's
    :func:`~qrelkit.judgments.manifest.judgments_meaning`) and whose warnings say its warnings and
    ``source``'s (the people's qrels the manifest names: not drawn at random), so that the table, the JSON
    and the report all say them (a predictor's line, a failed gate)."""
    from dataclasses import replace

    if not judgments:
        return estimates
    added = list(dict.fromkeys(w for w in (*(judgments.get("warnings") or ()), *source)
                               if w not in estimates.warnings))  # fmt: skip
    return replace(
        estimates, model=estimates.model.with_judgments(judgments), warnings=(*estimates.warnings, *added)
    )


@dataclass(frozen=True)
class HumanChoice:
    """Which people's qrels an evaluation estimates with (``path``; ``None``: no estimate), and the lines
    to tell the user: ``notes`` (which files, and why) and ``warnings``."""

    path: str | None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def human_for(
    qrels_path: Any, human: Any = None, manifest: Any = None, estimator: str = DEFAULT_ESTIMATOR
) -> HumanChoice:
    """The people's qrels for an evaluation of ``qrels_path``: ``human`` when given (it wins over a manifest
    naming others, and the note says so), else those the model's qrels' manifest names
    (:func:`qrelkit.judgments.manifest.human_source`), with a warning when the manifest does not say their
    queries were drawn at random; ``HumanChoice(None)`` when neither."""
    from ..judgments.manifest import human_source

    try:
        found = human_source(qrels_path, manifest)
    except ValidationError:
        if human is None:
            raise
        found = None  # --human given: a manifest's missing or altered people's file is not needed
    if human is not None:
        notes = (f"estimator {estimator}: people's qrels {human} (--human); it wins over the people's qrels "
                 f"{found.path.name} that {found.manifest.name} names",) if found else ()  # fmt: skip
        return HumanChoice(str(human), notes)
    if found is None:
        return HumanChoice(None)
    return HumanChoice(
        str(found.path), (f"estimator {estimator}: {found.describe()}",), tuple(found.warnings())
    )
