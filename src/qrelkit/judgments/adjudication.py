"""From labellers' grades to final qrels: the one owner of the merge, the override rule, the calibration
agreement and gate, and the manifest's fields.

The file-based path (``qrelkit agree`` / ``qrelkit adjudicate-files``) and the judging app (its admin page,
``qrelkit judge kappa|adjudicate|export``) both call these functions, so the same grades give the same
final qrels, the same kappa interval and the same manifest whichever way they were collected.

The merge, pair by pair (:func:`pair_status`, :func:`merge`)
------------------------------------------------------------
``agreed``
    every labeller who judged the pair gave the same grade, none marked it unsure: that grade.
``single``
    one labeller judged it: that grade.
``disputed``
    the grades differ, or a labeller marked the pair unsure: the adjudicated decision when there is one.
    Without one the ``undecided`` policy applies: ``refuse`` (the default: no final qrels while a pair is
    unresolved; the error names them), ``leave-out`` (the pair is left out of the qrels, so it scores as
    unjudged, and the count is recorded), or, for two labellers, ``a``/``b``/``max``/``min``.
``ungraded``
    nobody graded it yet: left out, counted.

A decision for a pair that is not disputed overrides what the labellers said. That is refused unless
``allow_override`` is given, and every override is counted in the manifest (``overridden``).

Calibration agreement (:func:`calibration_agreement`)
-----------------------------------------------------
Linear-weighted Cohen's kappa over the rubric's full scale on the calibration pairs both labellers graded,
its normal interval, a query bootstrap with :data:`BOOTSTRAP_RESAMPLES` resamples from
``numpy.random.default_rng(BOOTSTRAP_SEED)``, and the gate: the lower end of the interval against
``min_kappa``. The count and the seed are written into the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import polars as pl

from ..agreement.group import GroupGrades, GroupReport
from ..agreement.kappa import (
    AgreementReport,
    GateResult,
    GateUse,
    Weighting,
    agreement_report,
    gate,
    pair_grades,
)
from ..agreement.resample import QUERY_BOOTSTRAP_RESAMPLES, QUERY_BOOTSTRAP_SEED
from ..data.values import Qrels
from ..errors import InputFormatError, ValidationError
from ..provenance import json_number as num

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CALIBRATION_KEYS",
    "DEFAULT_POLICIES",
    "UNDECIDED_POLICIES",
    "AgreementDocument",
    "Calibration",
    "GroupAgreementDocument",
    "GroupCalibration",
    "Merged",
    "Vote",
    "adjudication_fields",
    "agreement_document",
    "calibration_agreement",
    "calibration_fields",
    "check_decision",
    "gated_calibration_fields",
    "group_agreement_document",
    "group_calibration",
    "group_calibration_fields",
    "manifest_fields",
    "merge",
    "merge_two",
    "pair_status",
    "read_decisions",
    "rubric_fields",
    "votes_from_qrels",
]

Pair = tuple[str, str]
UndecidedPolicy = Literal["refuse", "leave-out", "a", "b", "max", "min"]
UNDECIDED_POLICIES: tuple[str, ...] = get_args(UndecidedPolicy)
#: The policies that give a disputed pair a grade (two labellers only): all but refuse and leave-out.
DEFAULT_POLICIES: tuple[str, ...] = tuple(p for p in UNDECIDED_POLICIES if p not in ("refuse", "leave-out"))
Status = Literal["agreed", "single", "disputed", "ungraded"]

BOOTSTRAP_RESAMPLES = QUERY_BOOTSTRAP_RESAMPLES
"""Query-bootstrap resamples for the calibration kappa interval, everywhere it is computed
(:mod:`qrelkit.agreement.resample` owns the number)."""
BOOTSTRAP_SEED = QUERY_BOOTSTRAP_SEED
"""Seed of that bootstrap (``numpy.random.default_rng``; :mod:`qrelkit.agreement.resample`)."""


@dataclass(frozen=True)
class Vote:
    """One labeller's current word on a pair: a grade, or ``None`` with ``unsure`` set."""

    labeller: str
    grade: int | None
    unsure: bool = False


def pair_status(votes: Sequence[Vote]) -> Status:
    """How the labellers left a pair (the module docstring defines each status)."""
    graded = [v for v in votes if v.grade is not None or v.unsure]
    if not graded:
        return "ungraded"
    if any(v.unsure for v in graded):
        return "disputed"
    if len({v.grade for v in graded}) > 1:
        return "disputed"
    return "single" if len(graded) == 1 else "agreed"


def check_decision(pair: Pair, votes: Sequence[Vote], *, allow_override: bool) -> Status:
    """Refuse a decision on a pair that is not disputed unless ``allow_override``; return its status."""
    status = pair_status(votes)
    if status != "disputed" and not allow_override:
        said = (
            ", ".join(f"{v.labeller} {v.grade}" for v in votes if v.grade is not None) or "nobody graded it"
        )
        raise ValidationError(
            f"pair ({pair[0]}, {pair[1]}) is not disputed ({status}: {said}); a decision would override it",
            expected="decisions only for pairs the labellers graded differently or marked unsure",
            fix="drop the decision, or allow the override explicitly (--allow-override); it is recorded",
        )
    return status


@dataclass(frozen=True)
class Merged:
    """Final grades and how each was reached (``counts`` goes into the manifest's ``adjudication``)."""

    grades: dict[Pair, int]
    counts: dict[str, Any]
    unresolved: tuple[Pair, ...] = field(default=())

    def qrels(self, name: str = "final") -> Qrels:
        return Qrels.from_grades(self.grades, name=name)


def _pairs_text(pairs: Sequence[Pair], limit: int = 5) -> str:
    text = "; ".join(f"({q}, {d})" for q, d in pairs[:limit])
    return text + (f"; and {len(pairs) - limit} more" if len(pairs) > limit else "")


def _default_grade(votes: Sequence[Vote], policy: str, order: Sequence[str]) -> int | None:
    given = {v.labeller: v.grade for v in votes if v.grade is not None and not v.unsure}
    if policy in ("a", "b"):
        who = order[0 if policy == "a" else 1] if len(order) > (0 if policy == "a" else 1) else None
        return given.get(who) if who is not None else None
    if not given:
        return None
    return max(given.values()) if policy == "max" else min(given.values())


def merge(
    votes: Mapping[Pair, Sequence[Vote]],
    decisions: Mapping[Pair, int] | None = None,
    *,
    undecided: str = "refuse",
    allow_override: bool = False,
    order: Sequence[str] = (),
    source: str | None = None,
    decision_lines: Mapping[Pair, int] | None = None,
) -> Merged:
    """Final grades from every pair's votes and the adjudicated decisions (module docstring for the rules).

    ``order`` names the labellers behind the ``a`` and ``b`` policies. ``source`` and ``decision_lines``
    let an error name the decisions file and line.
    """
    if undecided not in UNDECIDED_POLICIES:
        raise ValidationError(
            f"unknown policy for undecided pairs {undecided!r}",
            expected="one of " + ", ".join(UNDECIDED_POLICIES),
            fix="pass refuse (the default) or leave-out",
        )
    decisions = dict(decisions or {})
    lines = decision_lines or {}
    unknown = sorted(p for p in decisions if p not in votes)
    if unknown:
        raise ValidationError(
            f"{len(unknown)} decision(s) are for pairs no labeller was given, first ({unknown[0][0]}, "
            f"{unknown[0][1]})",
            source=source,
            line=lines.get(unknown[0]),
            fix="check the query and document ids of the decision",
        )
    counts: dict[str, Any] = dict.fromkeys(
        ("agreed", "single_labeller", "adjudicated", "overridden", "defaulted", "unresolved_left_out",
         "ungraded_left_out"), 0
    )  # fmt: skip
    grades: dict[Pair, int] = {}
    unresolved: list[Pair] = []
    for pair in sorted(votes):
        vs = votes[pair]
        status = pair_status(vs)
        if pair in decisions:
            if status != "disputed":
                try:
                    check_decision(pair, vs, allow_override=allow_override)
                except ValidationError as exc:
                    raise ValidationError(
                        exc.problem, source=source, line=lines.get(pair), expected=exc.expected, fix=exc.fix
                    ) from None
                counts["overridden"] += 1
            else:
                counts["adjudicated"] += 1
            grades[pair] = int(decisions[pair])
        elif status == "ungraded":
            counts["ungraded_left_out"] += 1
        elif status == "disputed":
            value = None if undecided in ("refuse", "leave-out") else _default_grade(vs, undecided, order)
            if value is None:
                unresolved.append(pair)
            else:
                grades[pair] = value
                counts["defaulted"] += 1
        else:
            grades[pair] = next(v.grade for v in vs if v.grade is not None)
            counts["agreed" if status == "agreed" else "single_labeller"] += 1
    if unresolved and undecided != "leave-out":
        raise ValidationError(
            f"{len(unresolved)} disputed pair(s) have no decision: {_pairs_text(unresolved)}",
            source=source,
            expected="a decision for every pair the labellers graded differently or marked unsure",
            fix="adjudicate them, or pass --allow-unresolved leave-out to export without them (they then "
            "score as unjudged; the count is recorded)",
        )
    counts["unresolved_left_out"] = len(unresolved)
    counts["total"] = len(grades)
    counts["undecided_policy"] = undecided
    counts["override_allowed"] = bool(allow_override)
    return Merged(grades, counts, tuple(unresolved))


def votes_from_qrels(qrels_a: Qrels, qrels_b: Qrels, names: Sequence[str]) -> dict[Pair, list[Vote]]:
    """Each pair's votes from two labellers' qrels files (a pair in one file only has one vote)."""
    votes: dict[Pair, list[Vote]] = {}
    for name, q in zip(names, (qrels_a, qrels_b), strict=True):
        for qid, did, grade in q.frame.select("query_id", "doc_id", "grade").iter_rows():
            votes.setdefault((qid, did), []).append(Vote(name, int(grade)))
    return votes


def merge_two(
    qrels_a: Qrels,
    qrels_b: Qrels,
    decisions: Mapping[Pair, int] | pl.DataFrame | None = None,
    *,
    names: Sequence[str] = ("a", "b"),
    undecided: str = "refuse",
    allow_override: bool = False,
    source: str | None = None,
    decision_lines: Mapping[Pair, int] | None = None,
) -> Merged:
    """:func:`merge` for two labellers' qrels files (``qrelkit adjudicate-files --decisions``); ``decisions``
    may be the frame :func:`read_decisions` returns, whose lines errors then name."""
    if len(names) == 2 and names[0] == names[1]:
        names = (f"{names[0]} (A)", f"{names[1]} (B)")
    if isinstance(decisions, pl.DataFrame):
        rows = list(decisions.select("query_id", "doc_id", "grade", "line").iter_rows())
        decisions = {(q, d): int(g) for q, d, g, _ in rows}
        decision_lines = {(q, d): int(n) for q, d, _, n in rows}
    return merge(
        votes_from_qrels(qrels_a, qrels_b, names),
        decisions,
        undecided=undecided,
        allow_override=allow_override,
        order=names,
        source=source,
        decision_lines=decision_lines,
    )


# -- calibration agreement and the gate ----------------------------------------------------------------

#: Two labellers sharing fewer calibration queries than this get a warning wherever their gate is shown
#: (``judge kappa``, the admin page): the query bootstrap resamples whole queries, so its interval on two
#: or three queries has two or three values to draw from, and a kappa on so few queries says more about
#: those queries than about the labellers. K queries give the bootstrap at most C(2K-1, K) distinct
#: draws: 3 for two queries, 10 for three, 35 for four, 126 for five; below five its 2.5% and 97.5%
#: points are set by a handful of distinct values. Five is a floor, not a recommendation (the default
#: draw is 30 queries: ``pool.DEFAULT_CALIBRATION``).
MIN_SHARED_QUERIES = 5


def few_shared_queries(labellers: tuple[str, str], queries: int) -> str | None:
    """The warning for two labellers whose shared calibration pairs lie in fewer than
    :data:`MIN_SHARED_QUERIES` queries, or ``None``."""
    if queries >= MIN_SHARED_QUERIES or queries == 0:
        return None
    a, b = labellers
    return (
        f"{a} and {b} share only {queries} calibration quer{'y' if queries == 1 else 'ies'} (fewer than "
        f"{MIN_SHARED_QUERIES}): their kappa and its query-bootstrap interval rest on {queries} "
        f"quer{'y' if queries == 1 else 'ies'}; draw more calibration queries (`qrelkit judge revise "
        "--calibration N`) or give each query to more labellers (`--calibration-labellers`)"
    )


@dataclass(frozen=True, eq=False)
class Calibration:
    """Agreement of two labellers on their shared calibration pairs, and the gate's verdict."""

    report: AgreementReport
    gate: GateResult | None
    labellers: tuple[str, str]


def calibration_agreement(
    grades_a: Any,
    grades_b: Any,
    scale: Sequence[int],
    *,
    min_kappa: float | None = 0.6,
    labellers: tuple[str, str] = ("a", "b"),
    weights: Weighting = "linear",
    use: GateUse = "ci_low",
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Calibration:
    """Kappa with both intervals and the gate, on the pairs both labellers graded.

    ``grades_a``/``grades_b``: anything :func:`qrelkit.agreement.kappa.pair_grades` takes (a ``{(query, doc):
    grade}`` mapping, qrels frames, ...). Every caller uses the same bootstrap count and seed unless it
    says otherwise, so the app, ``qrelkit agree`` and the manifest give the same interval. With
    ``min_kappa=None`` there is no gate.
    """
    report = agreement_report(
        pair_grades(grades_a, grades_b), scale, weights=weights, n_resamples=n_resamples, seed=seed
    )
    verdict = None if min_kappa is None else gate(report, min_kappa, use=use)
    return Calibration(report, verdict, labellers)


@dataclass(frozen=True, eq=False)
class GroupCalibration:
    """Agreement of two or more labellers on their calibration pairs, and the gate on ``statistic``.

    ``pairs`` holds :func:`calibration_agreement` of every two labellers sharing graded pairs (kappa with
    both intervals and each one's gate); ``report`` the statistics of the whole group. With ``statistic``
    ``kappa`` the gate is the lowest of the pairs' gates (every two labellers must pass); otherwise it is
    :func:`qrelkit.agreement.group.group_gate` on the group statistic's query-bootstrap interval.
    """

    report: GroupReport
    gate: GateResult | None
    statistic: str
    pairs: tuple[Calibration, ...]
    grades: GroupGrades


def group_calibration(
    grades: Mapping[str, Any],
    scale: Sequence[int],
    *,
    statistic: str | None = None,
    min_kappa: float | None = 0.6,
    weights: Weighting = "linear",
    use: GateUse | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> GroupCalibration:
    """Agreement of the labellers in ``grades`` (name -> their grades, as :func:`calibration_agreement`
    takes them) on the pairs they graded, with the gate on ``statistic`` (default:
    :func:`qrelkit.agreement.group.default_statistic` of the largest number of labellers on one pair).

    ``use``: for ``kappa``, ``ci_low`` (default) or ``bootstrap_low``, as :func:`calibration_agreement`;
    for a group statistic, ``bootstrap_low`` (default) or ``kappa`` (the point value).
    """
    from ..agreement.group import (
        GROUP_STATISTICS,
        STATISTICS,
        default_statistic,
        group_agreement,
        group_gate,
        group_grades,
    )

    aligned = group_grades(grades)
    per_pair = int((~_isnan(aligned.ratings)).sum(axis=0).max()) if aligned.keys else 2
    statistic = statistic or default_statistic(per_pair)
    if statistic not in STATISTICS:
        raise ValidationError(f"unknown agreement statistic {statistic!r}", expected=", ".join(STATISTICS),
                              fix="pass --statistic mean_kappa, for example")  # fmt: skip
    if statistic in GROUP_STATISTICS and use == "ci_low":
        raise ValidationError(
            f"{statistic} has no normal interval: its gate compares the lower end of the query bootstrap",
            fix="gate on bootstrap_low (the default for this statistic), or on the statistic kappa",
        )
    report = group_agreement(aligned, scale, weights=weights, n_resamples=n_resamples, seed=seed)
    names = aligned.labellers
    pairs = []
    for a, b in report.pairwise:
        if report.pairwise[a, b].n:
            ga, gb = (_column(aligned, names.index(x)) for x in (a, b))
            pairs.append(calibration_agreement(ga, gb, scale, min_kappa=min_kappa, labellers=(a, b), weights=weights,
                                               use=use or "ci_low", n_resamples=n_resamples, seed=seed))  # fmt: skip
    verdict = None
    if min_kappa is not None and statistic == "kappa":
        gates = [c.gate for c in pairs if c.gate is not None]
        verdict = min(gates, key=lambda g: (g.passed, g.value_used if g.value_used == g.value_used else -2.0),
                      default=None)  # fmt: skip
    elif min_kappa is not None:
        verdict = group_gate(report, min_kappa, statistic, use=use or "bootstrap_low")
    return GroupCalibration(report, verdict, statistic, tuple(pairs), aligned)


def _isnan(x: Any) -> Any:
    import numpy as np

    return np.isnan(x)


def _column(aligned: Any, row: int) -> dict[tuple[Any, Any], int]:
    values = aligned.ratings[row]
    return {key: int(v) for key, v in zip(aligned.keys, values, strict=True) if v == v}


def group_calibration_fields(found: GroupCalibration | None) -> dict[str, Any] | None:
    """The manifest's ``group`` field: the statistic, its value and interval, every group statistic with
    its interval, the pairwise kappa matrix and the gate (NaN becomes ``null``; ``None`` when not measured)."""
    if found is None:
        return None
    r, g = found.report, found.gate
    from ..agreement.group import STATISTIC_NAMES

    chosen = r.intervals.get(found.statistic)
    return {
        "statistic": found.statistic,
        "name": STATISTIC_NAMES[found.statistic],
        "labellers": list(r.labellers),
        "value": num(r.value(found.statistic)),
        "bootstrap_low": None if chosen is None else num(chosen.low),
        "bootstrap_high": None if chosen is None else num(chosen.high),
        "level": (chosen or r.intervals["mean_kappa"]).level,
        "bootstrap_resamples": r.intervals["mean_kappa"].n_resamples,
        "bootstrap_seed": r.intervals["mean_kappa"].seed,
        "weights": r.weights,
        "n_units": r.n_units,
        "n_queries": r.n_queries,
        "n_single": r.n_single,
        "statistics": {
            s: {"value": num(r.value(s)), "bootstrap_low": num(b.low), "bootstrap_high": num(b.high)}
            for s, b in r.intervals.items()
        },
        "kappa_matrix": [[num(x) for x in row] for row in r.kappa_matrix.tolist()],
        "pairs_matrix": r.pairs_matrix.tolist(),
        "gate": None if g is None else g.to_dict(),
    }


def calibration_fields(calibration: Calibration | None) -> dict[str, Any] | None:
    """The manifest's ``calibration`` field (every key always present; NaN becomes ``null``)."""
    if calibration is None:
        return None

    k, boot, g = calibration.report.kappa, calibration.report.bootstrap, calibration.gate
    return {
        "labellers": list(calibration.labellers),
        "kappa": num(k.kappa),
        "std_error": num(k.std_error),
        "ci_low": num(k.ci_low),
        "ci_high": num(k.ci_high),
        "level": k.level,
        "weights": k.weights,
        "n_pairs": k.n,
        "bootstrap_low": num(boot.low),
        "bootstrap_high": num(boot.high),
        "bootstrap_resamples": boot.n_resamples,
        "bootstrap_seed": boot.seed,
        "gate": None if g is None else g.to_dict(),
    }


CALIBRATION_KEYS = ("labellers", "kappa", "std_error", "ci_low", "ci_high", "level", "weights", "n_pairs",
                    "bootstrap_low", "bootstrap_high", "bootstrap_resamples", "bootstrap_seed", "gate")  # fmt: skip
"""The keys :func:`calibration_fields` writes."""


def gated_calibration_fields(
    round_entry: Mapping[str, Any], rounds: Sequence[Mapping[str, Any]], *, warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """The manifest's ``calibration`` field for judgments collected by a judging project with phases.

    ``round_entry`` is the round whose rubric the judgments were given under, ``rounds`` every round
    (:func:`qrelkit.app.phases.rounds_history`). The keys of :func:`calibration_fields` describe the
    two labellers who agree least (the lowest value compared with the threshold; all ``null`` when
    agreement was not measured or is still being measured), and ``gate`` is the round's gate: theirs with
    the statistic ``kappa``, the group's otherwise; beside them: ``statistic`` (what the gate compared,
    :data:`qrelkit.agreement.group.STATISTICS`), ``group`` (:func:`group_calibration_fields` of every
    labeller of the round: alpha, Fleiss' kappa, the pairwise kappa matrix), ``status``
    (``passed``, ``failed``, ``not measurable``, ``overridden``, ``not measured``, ``measuring``), ``round``,
    ``pairs_of_labellers`` (:func:`calibration_fields` of every two labellers of the round), ``gate_rule``,
    ``override`` (``{"reason", "by", "at"}`` or ``null``), ``not_measured`` (why, or ``null``),
    ``not_measurable`` (why the gate could not be measured, or ``null``), ``warnings`` (what every result
    read with these judgments must say of their agreement: :func:`few_shared_queries` of each two
    labellers of the round, given by the caller), and ``rounds``: each round's rubric (name, version, content hash), queries and how they were chosen
    (``initial``, ``drawn``, ``same``, ``none``), seed, status, when its gate was decided, its agreement
    per two labellers and its override.
    """
    pairs = list(round_entry.get("agreement") or [])
    deciding = round_entry.get("deciding")
    top = pairs[deciding] if pairs and deciding is not None else dict.fromkeys(CALIBRATION_KEYS)
    group = round_entry.get("group")
    statistic = round_entry.get("statistic")
    fields = {k: top.get(k) for k in CALIBRATION_KEYS}
    if statistic not in (None, "kappa") and group is not None:
        fields["gate"] = group.get("gate")
    keep = ("round", "rubric", "query_rule", "seed", "queries", "started_at", "started_by", "note", "status",
            "evaluated_at", "last_grade_event", "agreement", "statistic", "group", "override", "not_measured",
            "not_measurable")  # fmt: skip
    return {
        **fields,
        "status": round_entry.get("status"),
        "round": round_entry.get("round"),
        "statistic": statistic,
        "gate_rule": round_entry.get("gate_rule")
        or "every two labellers sharing calibration pairs pass: the lower end of the interval against the threshold",
        "pairs_of_labellers": pairs,
        "group": group,
        "override": round_entry.get("override"),
        "not_measured": round_entry.get("not_measured"),
        "not_measurable": round_entry.get("not_measurable"),
        "warnings": list(warnings),
        "rounds": [{k: r.get(k) for k in keep} for r in rounds],
    }


def adjudication_fields(merged: Merged | Mapping[str, Any], **extra: int) -> dict[str, Any]:
    """The manifest's ``adjudication`` field: the merge's counts and policies (of a :class:`Merged`, or
    its ``counts`` as given), plus ``extra`` counts."""
    counts = merged.counts if isinstance(merged, Merged) else merged
    return {**counts, **extra}


def rubric_fields(rubric: Any) -> dict[str, Any] | None:
    """The manifest's ``rubric`` field: name, version and content hash (``None`` without a rubric)."""
    if rubric is None:
        return None
    return {"name": rubric.name, "version": rubric.version, "content_hash": rubric.content_hash}


def manifest_fields(
    *,
    rubric: Any,
    scale: Sequence[int],
    relevance_threshold: int,
    labellers: Sequence[str],
    calibration: Mapping[str, Any] | None,
    adjudication: Mapping[str, Any],
    model_labellers: Sequence[Mapping[str, Any]] | None = None,
    prediction_powered: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every field a manifest's caller supplies (:data:`qrelkit.judgments.manifest.FIELDS`), for both export
    paths (``qrelkit adjudicate-files --decisions`` and the judging project's final export): the rubric
    (:func:`rubric_fields`), its scale, the relevance threshold, the labellers, the calibration
    (:func:`calibration_fields` or :func:`gated_calibration_fields`) and the adjudication
    (:func:`adjudication_fields`), and the model labellers (``None`` on the path without a judging project;
    :func:`qrelkit.app.models.manifest_fields.model_manifest_fields` in a project's export), and the inputs of a
    prediction-powered estimate (``None`` unless a project's export counts a model's grades;
    :func:`qrelkit.app.models.estimation_parts.estimation_parts`)."""
    return {
        "rubric": rubric_fields(rubric),
        "scale": [int(g) for g in scale],
        "relevance_threshold": relevance_threshold,
        "labellers": list(labellers),
        "calibration": None if calibration is None else dict(calibration),
        "adjudication": dict(adjudication),
        "model_labellers": None if model_labellers is None else [dict(m) for m in model_labellers],
        "prediction_powered": None if prediction_powered is None else dict(prediction_powered),
        "design": None,  # a live queue's design, written by a judging project's export (qrelkit.app.design)
    }


# -- the decisions file ---------------------------------------------------------------------------


def read_decisions(path: str | Path, scale: Sequence[int] | None = None) -> pl.DataFrame:
    """Read an adjudication file: ``query_id<TAB>doc_id<TAB>grade`` per line.

    Blank lines and lines starting with ``#`` are skipped; a first line ``query_id<TAB>doc_id<TAB>grade``
    is a header. Returns columns query_id, doc_id, grade, line. A pair decided twice is an error.
    """
    path = Path(path)
    source = str(path)
    from ..formats.inputs import read_input

    try:
        text = read_input(path, kind="decisions").decode("utf-8")
    except UnicodeDecodeError:
        raise InputFormatError("file is not UTF-8 text", source=source, fix="save it as UTF-8") from None
    rows: list[tuple[str, str, int, int]] = []
    first = True
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if first and [f.strip().lower() for f in fields] == ["query_id", "doc_id", "grade"]:
            first = False
            continue
        first = False
        if len(fields) != 3 or not fields[0].strip() or not fields[1].strip():
            raise InputFormatError(
                f"expected 3 tab-separated fields, found {len(fields)}",
                source=source,
                line=number,
                got=line,
                expected="query_id<TAB>doc_id<TAB>grade",
                fix="separate the three fields with single tabs",
            )
        try:
            grade = int(fields[2].strip())
        except ValueError:
            raise InputFormatError(
                f"grade {fields[2].strip()!r} is not an integer",
                source=source,
                line=number,
                got=line,
                expected="a whole-number grade",
                fix="write the adjudicated grade as a whole number",
            ) from None
        if scale is not None and grade not in scale:
            raise ValidationError(
                f"grade {grade} is not on the scale {sorted(scale)}",
                source=source,
                line=number,
                got=line,
                fix="use a grade from the rubric's scale",
            )
        rows.append((fields[0].strip(), fields[1].strip(), grade, number))
    frame = pl.DataFrame(
        rows,
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64, "line": pl.Int64},
        orient="row",
    )
    dup = frame.filter(pl.struct(["query_id", "doc_id"]).is_duplicated()).sort("line")
    if dup.height:
        q, d = dup.item(0, "query_id"), dup.item(0, "doc_id")
        lines = dup.filter((pl.col("query_id") == q) & (pl.col("doc_id") == d)).get_column("line").to_list()
        raise ValidationError(
            f"pair ({q}, {d}) is decided more than once (lines {', '.join(map(str, lines))})",
            source=source,
            line=lines[1],
            fix="keep one decision per pair",
        )
    return frame


# -- the agreement document (`qrelkit agree`) ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AgreementDocument:
    """Everything ``qrelkit agree`` reports about two labellers, as one value (rendered by
    :mod:`qrelkit.report.agreement`; :meth:`to_dict` is its JSON form)."""

    calibration: Calibration
    alpha: dict[str, Any]
    header: dict[str, Any]
    metric: dict[str, Any] | None
    decisions: Any = None
    """The runs' order and significant differences under both labellers' grades, when runs were given
    (:class:`qrelkit.compare.decisions.DecisionAgreement`)."""

    def to_dict(self) -> dict[str, Any]:
        g = self.calibration.gate
        out = {
            **self.header,
            "agreement": self.calibration.report.to_dict(),
            "alpha": {lvl: a.to_dict() for lvl, a in self.alpha.items()},
            "gate": g.to_dict() if g else None,
            "metric_agreement": self.metric,
        }
        if self.decisions is not None:
            out["decision_agreement"] = self.decisions.to_dict()
        return out


def _rubric_header(rubric: Any) -> dict[str, Any] | None:
    """The rubric as an agreement document's header names it (``None`` without a rubric)."""
    if rubric is None:
        return None
    return {**rubric_fields(rubric), "source": rubric.source}  # type: ignore[dict-item]


def agreement_document(
    qrels_a: Qrels,
    qrels_b: Qrels,
    scale: Sequence[int],
    *,
    labellers: tuple[str, str],
    paths: tuple[str, str],
    rubric: Any = None,
    scale_source: str = "rubric",
    weights: Weighting = "linear",
    min_kappa: float | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    runs: Sequence[Any] = (),
    k: int = 10,
) -> AgreementDocument:
    """Kappa with both intervals and the gate (:func:`calibration_agreement`), Krippendorff's alpha at the
    ordinal and interval levels and, with ``runs``, nDCG@k and R@k under each labeller's grades."""
    import numpy as np

    from ..agreement.kappa import krippendorff_alpha
    from ..provenance import header

    calibration = calibration_agreement(
        qrels_a.frame, qrels_b.frame, scale, min_kappa=min_kappa, labellers=labellers, weights=weights,
        n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    paired = pair_grades(qrels_a.frame, qrels_b.frame)
    ratings = np.vstack([paired.grades_a, paired.grades_b]).astype(np.float64)
    alpha = {
        lvl: krippendorff_alpha(ratings, level=lvl, value_domain=scale) for lvl in ("ordinal", "interval")
    }
    metric = None
    if runs:
        from .leverage import metric_agreement, metric_agreement_summary

        frame = metric_agreement(qrels_a, qrels_b, list(runs), k)
        metric = metric_agreement_summary(frame, k) | {
            "runs": [{"name": r.name, "fingerprint": r.fingerprint.to_dict()} for r in runs]
        }
    head = header(
        labellers={
            who: {"name": name, "path": path, "judgments": q.frame.height, "fingerprint": q.fingerprint.to_dict()}
            for who, name, path, q in (("a", labellers[0], paths[0], qrels_a), ("b", labellers[1], paths[1], qrels_b))
        },
        rubric=_rubric_header(rubric),
        scale=list(scale),
        scale_source=scale_source,
        weights=weights,
    )  # fmt: skip
    return AgreementDocument(calibration, alpha, head, metric)


@dataclass(frozen=True, eq=False)
class GroupAgreementDocument:
    """Everything ``qrelkit agree`` reports about two or more labellers with a group statistic, as one
    value (rendered by :mod:`qrelkit.report.agreement`; :meth:`to_dict` is its JSON form)."""

    calibration: GroupCalibration
    header: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        from ..agreement.kappa import _jsonable

        g = self.calibration.gate
        r = self.calibration.report
        return {
            **self.header,
            "group": group_calibration_fields(self.calibration),
            "pairs_of_labellers": [calibration_fields(c) for c in self.calibration.pairs],
            "alpha": {lvl: a.to_dict() for lvl, a in r.alpha.items()},
            "fleiss": r.fleiss.to_dict(),
            "intervals": {s: b.to_dict() for s, b in r.intervals.items()},
            "disagreements": [
                {
                    "query_id": q,
                    "doc_id": d,
                    "grades": {n: _jsonable(v) for n, v in zip(r.labellers, vs, strict=True)},
                }
                for q, d, vs in self.disagreements()
            ],
            "gate": g.to_dict() if g else None,
        }

    def disagreements(self) -> list[tuple[Any, Any, list[float]]]:
        """The pairs two labellers graded differently: largest spread first, then by query and document."""
        rows = []
        grades = self.calibration.grades
        for (q, d), column in zip(grades.keys, grades.ratings.T, strict=True):
            given = [v for v in column.tolist() if v == v]
            if max(given) != min(given):
                rows.append((max(given) - min(given), q, d, column.tolist()))
        rows.sort(key=lambda x: (-x[0], x[1], x[2]))
        return [(q, d, vs) for _, q, d, vs in rows]


def group_agreement_document(
    qrels: Sequence[Qrels],
    scale: Sequence[int],
    *,
    labellers: Sequence[str],
    paths: Sequence[str],
    rubric: Any = None,
    scale_source: str = "rubric",
    weights: Weighting = "linear",
    statistic: str | None = None,
    min_kappa: float | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> GroupAgreementDocument:
    """:func:`group_calibration` of the labellers' qrels, with the provenance of each file."""
    from ..provenance import header

    found = group_calibration(
        {name: q.frame for name, q in zip(labellers, qrels, strict=True)}, scale, statistic=statistic,
        min_kappa=min_kappa, weights=weights, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    head = header(
        labellers=[{"name": name, "path": path, "judgments": q.frame.height, "fingerprint": q.fingerprint.to_dict()}
                   for name, path, q in zip(labellers, paths, qrels, strict=True)],
        rubric=_rubric_header(rubric),
        scale=list(scale),
        scale_source=scale_source,
        weights=weights,
    )  # fmt: skip
    return GroupAgreementDocument(found, head)
