"""Qrels with their meaning: a manifest written beside every exported qrels file.

A qrels file says which grade each pair got; it does not say what a grade means. The manifest
``final.qrels.manifest.json`` does: the rubric (name, version, content hash) and its scale, the relevance
threshold binary measures should use, who judged, how well they agreed on the calibration sample (kappa,
its interval and the gate), how the disagreements were resolved, and the SHA-256 of the qrels file as
written, so that a manifest cannot silently describe an edited file.

Fields (every field is always present; unknown values are ``null``)::

    format                "qrelkit qrels manifest 1"
    qrels                 {"path": file name, "sha256": of the bytes written, "queries", "judgments",
                           "grades": {grade: count}}
    rubric                {"name", "version", "content_hash"} or null
    scale                 [grades], the rubric's full scale
    relevance_threshold   lowest grade counted relevant by binary measures (R, P, AP, RR)
    labellers             [names]
    calibration           {"labellers", "kappa", "std_error", "ci_low", "ci_high", "level", "weights",
                           "n_pairs", "bootstrap_low", "bootstrap_high", "bootstrap_resamples",
                           "bootstrap_seed", "gate": {"passed", "threshold", "value_used", "use",
                           "message"}} or null; "value_used" (the number compared with the
                          threshold) is absent from manifests written by qrelkit 0.1.0
                          (:func:`qrelkit.judgments.adjudication.calibration_fields`); a judging project's
                          export adds "status" (passed, failed, overridden, not measured, measuring),
                          "round", "statistic" (what the gate compared), "gate_rule", "pairs_of_labellers",
                          "group" (every labeller of the round: alpha, Fleiss' kappa, the pairwise kappa
                          matrix, each statistic's query-bootstrap interval, the gate;
                          :func:`qrelkit.judgments.adjudication.group_calibration_fields`), "override" ({"reason",
                          "by", "at"} or null), "not_measured" and "rounds" (every calibration round:
                          rubric version and hash, queries, seed, status, agreement, override)
                          (:func:`qrelkit.judgments.adjudication.gated_calibration_fields`)
    adjudication          {"agreed", "single_labeller", "adjudicated", "overridden", "defaulted",
                           "unresolved_left_out", "ungraded_left_out", "total", "undecided_policy",
                           "override_allowed", ...} (:func:`qrelkit.judgments.adjudication.merge`)
    tool                  {"name": "qrelkit", "version"} (format 1 wrote "qrelkit_version")

Evaluation reads the manifest (:func:`judgments_for`): ``qrelkit eval`` and ``compare`` look for one
beside the qrels (or take ``--manifest``), refuse qrels whose hash no longer matches, and carry
:func:`judgments_meaning` in every output, with a warning when agreement was not measured, the gate
failed, was overridden (with the reason, who and when) or is not decided yet, or pairs were left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputFormatError, ValidationError
from ..fingerprint import file_sha256
from ..formats.inputs import read_input
from ..formats.outputs import write_outputs

if TYPE_CHECKING:  # reading a manifest (every `qrelkit eval`) loads no dataframe library
    from ..data.values import Qrels

__all__ = [
    "FIELDS",
    "MANIFEST_FORMAT",
    "judgments_for",
    "judgments_meaning",
    "manifest_path",
    "qrels_with_manifest_text",
    "read_manifest",
    "write_qrels_with_manifest",
]

MANIFEST_FORMAT = "qrelkit qrels manifest 2"
_READABLE = (MANIFEST_FORMAT, "qrelkit qrels manifest 1")  # 1: "qrelkit_version" instead of "tool"
FIELDS = ("rubric", "scale", "relevance_threshold", "labellers", "calibration", "adjudication")
"""Fields the caller supplies; ``format``, ``tool`` and ``qrels`` are filled in."""


def manifest_path(qrels_path: str | Path) -> Path:
    """``final.qrels`` -> ``final.qrels.manifest.json``."""
    path = Path(qrels_path)
    return path.with_name(path.name + ".manifest.json")


def _qrels_summary(qrels: Qrels, name: str, digest: str) -> dict[str, Any]:
    grades = qrels.frame.group_by("grade").len().sort("grade")
    return {
        "path": name,
        "sha256": digest,
        "queries": qrels.frame.get_column("query_id").n_unique(),
        "judgments": qrels.frame.height,
        "grades": {str(g): int(n) for g, n in grades.iter_rows()},
    }


def qrels_with_manifest_text(qrels: Qrels, name: str, manifest_fields: Mapping[str, Any]) -> tuple[str, str]:
    """``qrels`` as TREC text and its manifest as JSON text, for a qrels file to be called ``name``.

    ``manifest_fields`` holds any of :data:`FIELDS` (see the module docstring); missing ones are written
    as ``null`` and unknown keys are an error. Grades outside a given ``scale`` are an error. The manifest
    records the SHA-256 of the qrels text's UTF-8 bytes, the bytes a file written from it holds.
    """
    import polars as pl

    from ..data.values import Qrels
    from ..formats import qrels_text
    from ..provenance import header

    if not isinstance(qrels, Qrels):
        raise ValidationError(
            f"expected Qrels, got {type(qrels).__name__}", fix="read or build the judgments as qrelkit Qrels"
        )
    unknown = sorted(set(manifest_fields) - set(FIELDS))
    if unknown:
        raise ValidationError(
            f"unknown manifest field(s) {', '.join(unknown)}",
            expected="fields among " + ", ".join(FIELDS),
            fix="remove them, or record them elsewhere",
        )
    fields = {name: manifest_fields.get(name) for name in FIELDS}
    scale = fields["scale"]
    if scale is not None:
        scale = [int(g) for g in scale]
        fields["scale"] = scale
        outside = qrels.frame.filter(~pl.col("grade").is_in(scale))
        if outside.height:
            q, d, g = outside.row(0)[:3]
            raise ValidationError(
                f"grade {g} of ({q}, {d}) is not on the manifest's scale {scale}",
                got=g,
                fix="correct the judgment, or record the scale the judgments were made with",
            )
    text = qrels_text(qrels)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    manifest = {
        "format": MANIFEST_FORMAT,
        **header(),
        "qrels": _qrels_summary(qrels, name, digest),
        **fields,
    }
    return text, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def write_qrels_with_manifest(qrels: Qrels, path: str | Path, manifest_fields: Mapping[str, Any]) -> Path:
    """Write ``qrels`` as TREC qrels to ``path`` and its manifest beside it (:func:`qrels_with_manifest_text`);
    return the manifest's path."""
    path = Path(path)
    text, manifest = qrels_with_manifest_text(qrels, path.name, manifest_fields)
    out = manifest_path(path)
    write_outputs([(path, text), (out, manifest)])
    return out


def read_manifest(path: str | Path, *, verify: bool = True) -> dict[str, Any]:
    """Read a manifest, given its own path or the qrels file's path.

    With ``verify`` (the default) and the qrels file present beside it, its SHA-256 must match the one
    recorded: a mismatch means the qrels were edited after export, and is an error.
    """
    path = Path(path)
    mpath = path if path.suffix == ".json" else manifest_path(path)
    raw = read_input(
        mpath,
        "manifest",
        "export the qrels with write_qrels_with_manifest (or qrelkit adjudicate -o)",
        kind="manifest",
    )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputFormatError(
            "manifest is not UTF-8 text", source=str(mpath), fix="save it as UTF-8"
        ) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"manifest is not valid JSON ({exc.msg})", source=str(mpath), line=exc.lineno
        ) from None
    if not isinstance(data, dict) or data.get("format") not in _READABLE:
        raise InputFormatError(
            "not a qrelkit qrels manifest",
            source=str(mpath),
            got=data.get("format") if isinstance(data, dict) else type(data).__name__,
            expected=repr(MANIFEST_FORMAT),
        )
    qrels_file = mpath.with_name(data["qrels"]["path"])
    if verify and qrels_file.exists():
        digest = file_sha256(qrels_file)
        if digest != data["qrels"]["sha256"]:
            raise ValidationError(
                "the qrels file no longer matches its manifest",
                source=str(qrels_file),
                got=f"sha256 {digest[:16]}...",
                expected=f"sha256 {data['qrels']['sha256'][:16]}... as recorded in {mpath.name}",
                fix="re-export the qrels with their manifest, or restore the file that was exported",
            )
    return data


def judgments_for(qrels_path: str | Path, manifest: str | Path | None = None) -> dict[str, Any] | None:
    """What the judgments in ``qrels_path`` mean, from their manifest; ``None`` when there is none.

    ``manifest`` names the manifest; without it, ``<qrels>.manifest.json`` beside the qrels is used when
    it exists. Either way the qrels file's SHA-256 must be the one the manifest records: a manifest never
    describes a file edited after export (the error says how to fix it).
    """
    qrels_path = Path(qrels_path)
    if manifest is None:
        found = manifest_path(qrels_path)
        if not found.is_file():
            return None
        manifest = found
    data = read_manifest(manifest, verify=False)
    if qrels_path.is_file():
        digest = file_sha256(qrels_path)
        if digest != data["qrels"]["sha256"]:
            raise ValidationError(
                "the qrels file no longer matches its manifest",
                source=str(qrels_path),
                got=f"sha256 {digest[:16]}...",
                expected=f"sha256 {data['qrels']['sha256'][:16]}... as recorded in {Path(manifest).name}",
                fix="re-export the qrels with their manifest, restore the exported file, or name the right "
                "manifest with --manifest",
            )
    return judgments_meaning(data, source=str(manifest))


def judgments_meaning(data: Mapping[str, Any], source: str | None = None) -> dict[str, Any]:
    """The fields of a manifest every result carries, and the warnings they call for.

    Warnings: agreement not measured (no calibration, or a judging project made with
    ``--no-calibration``), a failed gate, a gate overridden (with its reason, who and when), a gate not
    decided yet, and disputed pairs left out.
    """
    calibration = data.get("calibration")
    adjudication = data.get("adjudication") or {}
    gate = (calibration or {}).get("gate")
    status = (calibration or {}).get("status")
    override = (calibration or {}).get("override")
    warnings = []
    if calibration is None:
        warnings.append("agreement was not measured on these judgments (the manifest has no calibration)")
    elif status == "not measured":
        reason = calibration.get("not_measured")
        warnings.append("agreement was not measured on these judgments" + (f" ({reason})" if reason else ""))
    elif status == "measuring":
        warnings.append(
            f"the calibration gate was not decided yet (round {calibration.get('round')} is still measuring)"
        )
    elif gate is not None and not gate.get("passed"):
        warnings.append(f"the calibration gate failed: {gate.get('message')}")
    if override:
        warnings.append(
            f"full judging was opened despite the failed gate: overridden by {override.get('by')} at "
            f"{override.get('at')}, reason: {override.get('reason')}"
        )
    unresolved = int(adjudication.get("unresolved_left_out", 0) or 0)
    if unresolved:
        warnings.append(f"{unresolved} disputed pair(s) were left out of these qrels and score as unjudged")
    overridden = int(adjudication.get("overridden", 0) or 0)
    keep = ("kappa", "ci_low", "ci_high", "level", "weights", "n_pairs", "bootstrap_low", "bootstrap_high",
            "bootstrap_resamples", "bootstrap_seed")  # fmt: skip
    group = (calibration or {}).get("group")
    agreement = None
    if group and (len(group.get("labellers") or ()) > 2 or group.get("statistic") != "kappa"):
        chosen = (group.get("statistics") or {}).get(group.get("statistic")) or {}
        agreement = {"statistic": group.get("statistic"), "name": group.get("name"), "value": group.get("value"),
                     "bootstrap_low": chosen.get("bootstrap_low"), "bootstrap_high": chosen.get("bootstrap_high"),
                     "labellers": group.get("labellers"), "n_units": group.get("n_units")}  # fmt: skip
    return {
        "manifest": source,
        "qrels_sha256": data["qrels"]["sha256"],
        "rubric": data.get("rubric"),
        "scale": data.get("scale"),
        "relevance_threshold": data.get("relevance_threshold"),
        "labellers": data.get("labellers"),
        "calibration": None if calibration is None else {k: calibration.get(k) for k in keep},
        "calibration_status": status,
        "calibration_round": (calibration or {}).get("round"),
        "group_agreement": agreement,
        "gate": gate,
        "gate_override": override,
        "unresolved_left_out": unresolved,
        "overridden": overridden,
        "warnings": warnings,
    }
