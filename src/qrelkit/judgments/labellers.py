"""The file-based path from labellers' judgments files: each labeller's qrels, their names and the scale
(:func:`read_labellers`), their agreement (:func:`agreement_of`), and the merge of adjudicated decisions
into final qrels with their manifest (:func:`merge_decisions`). ``qrelkit agree`` and ``qrelkit
adjudicate`` parse their options, call these and render what they return.

The scale weights kappa and spans the confusion matrix, so it must be the rubric's full scale. Without a
rubric, :func:`judgment_scale` takes every step from the lowest grade seen to the highest, bounded by
:data:`qrelkit.rubric.MAX_ABS_GRADE`, and says so in a warning: grades beyond those ends that
nobody used cannot be known. Names come from :func:`qrelkit.naming.labeller_names`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..agreement.kappa import Weighting
from ..agreement.resample import QUERY_BOOTSTRAP_RESAMPLES, QUERY_BOOTSTRAP_SEED
from ..naming import labeller_names
from ..rubric import MAX_ABS_GRADE, Rubric, grade_bound_error
from .adjudication import (
    AgreementDocument,
    Calibration,
    GroupAgreementDocument,
    Merged,
    adjudication_fields,
    agreement_document,
    calibration_agreement,
    calibration_fields,
    group_agreement_document,
    manifest_fields,
    merge_two,
    read_decisions,
)

__all__ = [
    "JudgmentScale",
    "Labellers",
    "MergedFiles",
    "agreement_of",
    "is_group",
    "judgment_scale",
    "merge_decisions",
    "read_labellers",
    "scale_warning",
]

ScaleSource = Literal["rubric", "grades seen"]


@dataclass(frozen=True)
class JudgmentScale:
    """The scale agreement is computed over, where it came from (``rubric`` or ``grades seen``), and the
    warning to show when it was inferred (``None`` with a rubric)."""

    scale: tuple[int, ...]
    source: ScaleSource
    warning: str | None


def scale_warning(scale: Sequence[int]) -> str:
    """Why an inferred scale may be short of the rubric's (the text after ``warning: ``)."""
    return (
        f"no --rubric: the scale is taken as {scale[0]}..{scale[-1]}, the lowest to the highest grade seen; "
        "grades beyond these ends that nobody used cannot be known, and the confusion matrix, marginals and "
        "alpha cannot show them. Pass --rubric for the full scale."
    )


def judgment_scale(qrels: Sequence[Any], rubric: Rubric | None = None) -> JudgmentScale:
    """The rubric's scale, or without one every grade from the lowest seen in ``qrels`` to the highest.

    A grade beyond :data:`~qrelkit.rubric.MAX_ABS_GRADE` is an error naming its file and line
    (an inferred scale is bounded)."""
    if rubric is not None:
        return JudgmentScale(tuple(rubric.scale), "rubric", None)
    import polars as pl

    for q in qrels:
        outside = q.frame.filter(pl.col("grade").abs() > MAX_ABS_GRADE)
        if outside.height:
            row = outside.row(0, named=True)
            error = grade_bound_error(row["grade"], source=q.meta.get("source"), line=row["line"])
            error.fix = f"{error.fix}; or pass --rubric with the scale the judgments use"
            raise error
    grades = [g for q in qrels for g in q.frame.get_column("grade").to_list()]
    scale = tuple(range(min(grades), max(grades) + 1))
    return JudgmentScale(scale, "grades seen", scale_warning(scale))


@dataclass(frozen=True, eq=False)
class Labellers:
    """Every labeller's qrels (in the order of the files), their names, the rubric (or ``None``) and the
    scale (:class:`JudgmentScale`)."""

    qrels: tuple[Any, ...]
    names: tuple[str, ...]
    paths: tuple[str, ...]
    rubric: Rubric | None
    scale: JudgmentScale


def read_labellers(paths: Sequence[str | Path], rubric: str | Path | Rubric | None = None) -> Labellers:
    """Read each labeller's qrels file, on the rubric's scale when there is one (a grade outside it is an
    error naming its line; the qrels carry the rubric's hash), else on :func:`judgment_scale`'s."""
    from ..formats import read_qrels

    if rubric is not None and not isinstance(rubric, Rubric):
        from ..rubric import load_rubric

        rubric = load_rubric(rubric) if rubric else None
    allowed = rubric.scale if rubric is not None else None
    qrels = [read_qrels(p, scale=allowed) for p in paths]
    if rubric is not None:
        qrels = [replace(q, rubric_hash=rubric.content_hash) for q in qrels]
    scale = judgment_scale(qrels, rubric)
    names = tuple(labeller_names(paths))
    return Labellers(tuple(qrels), names, tuple(str(p) for p in paths), rubric, scale)


def is_group(n_labellers: int, statistic: str | None) -> bool:
    """Whether agreement is the group's (three or more labellers, or a statistic other than ``kappa``)
    rather than two labellers' kappa with its metric-level agreement."""
    return n_labellers > 2 or statistic not in (None, "kappa")


def agreement_of(
    labellers: Labellers,
    *,
    weights: Weighting = "linear",
    statistic: str | None = None,
    min_kappa: float | None = None,
    n_resamples: int = QUERY_BOOTSTRAP_RESAMPLES,
    seed: int = QUERY_BOOTSTRAP_SEED,
    runs: Sequence[Any] = (),
    k: int = 10,
) -> AgreementDocument | GroupAgreementDocument:
    """What ``qrelkit agree`` reports: for a group (:func:`is_group`) the group's agreement and gate
    (:func:`~qrelkit.judgments.adjudication.group_agreement_document`), else two labellers' kappa, alpha
    and, with ``runs``, nDCG@k and R@k under each (:func:`~qrelkit.judgments.adjudication.agreement_document`)."""
    scale = labellers.scale
    common: dict[str, Any] = dict(rubric=labellers.rubric, scale_source=scale.source, weights=weights,
                                  min_kappa=min_kappa, n_resamples=n_resamples, seed=seed)  # fmt: skip
    if is_group(len(labellers.qrels), statistic):
        return group_agreement_document(list(labellers.qrels), scale.scale, labellers=list(labellers.names),
                                        paths=list(labellers.paths), statistic=statistic, **common)  # fmt: skip
    qa, qb = labellers.qrels
    (na, nb), (pa, pb) = labellers.names, labellers.paths
    return agreement_document(
        qa, qb, scale.scale, labellers=(na, nb), paths=(pa, pb), runs=runs, k=k, **common
    )


@dataclass(frozen=True, eq=False)
class MergedFiles:
    """What :func:`merge_decisions` wrote: the merge, the calibration agreement recorded in the manifest,
    and the manifest's path."""

    merged: Merged
    calibration: Calibration
    manifest: Path


def merge_decisions(
    labellers: Labellers,
    decisions: str | Path,
    output: str | Path,
    *,
    undecided: str = "refuse",
    allow_override: bool = False,
    min_kappa: float = 0.6,
    relevance_threshold: int = 1,
) -> MergedFiles:
    """Merge two labellers' qrels with the decisions file (:func:`~qrelkit.judgments.adjudication.merge_two`),
    write the final qrels to ``output`` and their manifest beside them: the rubric, the scale, the
    relevance threshold, the labellers, the calibration agreement and gate
    (:func:`~qrelkit.judgments.adjudication.calibration_agreement` with the default bootstrap) and the
    adjudication counts."""
    from .manifest import write_qrels_with_manifest

    qa, qb = labellers.qrels
    names = labellers.names
    scale = labellers.scale.scale
    merged = merge_two(qa, qb, read_decisions(decisions, scale), names=names, undecided=undecided,
                       allow_override=allow_override, source=str(decisions))  # fmt: skip
    calibration = calibration_agreement(
        qa.frame, qb.frame, scale, min_kappa=min_kappa, labellers=(names[0], names[1])
    )
    fields = manifest_fields(rubric=labellers.rubric, scale=scale, relevance_threshold=relevance_threshold,
                             labellers=names, calibration=calibration_fields(calibration),
                             adjudication=adjudication_fields(merged))  # fmt: skip
    side = write_qrels_with_manifest(merged.qrels(Path(output).name), output, fields)
    return MergedFiles(merged, calibration, side)
