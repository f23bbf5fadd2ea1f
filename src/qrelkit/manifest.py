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
    calibration           {"kappa", "std_error", "ci_low", "ci_high", "level", "weights", "n_pairs",
                           "bootstrap_low", "bootstrap_high", "gate": {"passed", "threshold", "message"}}
    adjudication          {"agreed", "adjudicated", "defaulted", "single_labeller", "total", "default"}
    qrelkit_version
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from .data import Qrels
from .errors import InputFormatError, ValidationError

__all__ = [
    "FIELDS",
    "MANIFEST_FORMAT",
    "calibration_fields",
    "manifest_path",
    "read_manifest",
    "write_qrels_with_manifest",
]

MANIFEST_FORMAT = "qrelkit qrels manifest 1"
FIELDS = ("rubric", "scale", "relevance_threshold", "labellers", "calibration", "adjudication")
"""Fields the caller supplies; ``format``, ``qrels`` and ``qrelkit_version`` are filled in."""


def manifest_path(qrels_path: str | Path) -> Path:
    """``final.qrels`` -> ``final.qrels.manifest.json``."""
    path = Path(qrels_path)
    return path.with_name(path.name + ".manifest.json")


def calibration_fields(report: Any, gate_result: Any | None = None) -> dict[str, Any]:
    """The ``calibration`` field from an :class:`~qrelkit.agreement.AgreementReport` and a gate result."""

    def num(x: float) -> float | None:
        return None if x != x else float(x)  # NaN -> None

    k = report.kappa
    out: dict[str, Any] = {
        "kappa": num(k.kappa),
        "std_error": num(k.std_error),
        "ci_low": num(k.ci_low),
        "ci_high": num(k.ci_high),
        "level": k.level,
        "weights": k.weights,
        "n_pairs": k.n,
        "bootstrap_low": num(report.bootstrap.low),
        "bootstrap_high": num(report.bootstrap.high),
        "gate": None,
    }
    if gate_result is not None:
        out["gate"] = {
            "passed": gate_result.passed,
            "threshold": gate_result.threshold,
            "use": gate_result.use,
            "message": gate_result.message,
        }
    return out


def _qrels_summary(qrels: Qrels, path: Path, digest: str) -> dict[str, Any]:
    grades = qrels.frame.group_by("grade").len().sort("grade")
    return {
        "path": path.name,
        "sha256": digest,
        "queries": qrels.frame.get_column("query_id").n_unique(),
        "judgments": qrels.frame.height,
        "grades": {str(g): int(n) for g, n in grades.iter_rows()},
    }


def write_qrels_with_manifest(qrels: Qrels, path: str | Path, manifest_fields: Mapping[str, Any]) -> Path:
    """Write ``qrels`` as TREC qrels to ``path`` and its manifest beside it; return the manifest's path.

    ``manifest_fields`` holds any of :data:`FIELDS` (see the module docstring); missing ones are written
    as ``null`` and unknown keys are an error. Grades outside a given ``scale`` are an error.
    """
    from . import __version__
    from .formats import write_qrels

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
    path = Path(path)
    write_qrels(qrels, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = {
        "format": MANIFEST_FORMAT,
        "qrels": _qrels_summary(qrels, path, digest),
        **fields,
        "qrelkit_version": __version__,
    }
    out = manifest_path(path)
    out.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def read_manifest(path: str | Path, *, verify: bool = True) -> dict[str, Any]:
    """Read a manifest, given its own path or the qrels file's path.

    With ``verify`` (the default) and the qrels file present beside it, its SHA-256 must match the one
    recorded: a mismatch means the qrels were edited after export, and is an error.
    """
    path = Path(path)
    mpath = path if path.name.endswith(".manifest.json") else manifest_path(path)
    try:
        data = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(
            "manifest not found",
            source=str(mpath),
            fix="export the qrels with write_qrels_with_manifest (or qrelkit adjudicate -o)",
        ) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"manifest is not valid JSON ({exc.msg})", source=str(mpath), line=exc.lineno
        ) from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise InputFormatError(
            "not a qrelkit qrels manifest",
            source=str(mpath),
            got=data.get("format") if isinstance(data, dict) else type(data).__name__,
            expected=repr(MANIFEST_FORMAT),
        )
    qrels_file = mpath.with_name(data["qrels"]["path"])
    if verify and qrels_file.exists():
        digest = hashlib.sha256(qrels_file.read_bytes()).hexdigest()
        if digest != data["qrels"]["sha256"]:
            raise ValidationError(
                "the qrels file no longer matches its manifest",
                source=str(qrels_file),
                got=f"sha256 {digest[:16]}...",
                expected=f"sha256 {data['qrels']['sha256'][:16]}... as recorded in {mpath.name}",
                fix="re-export the qrels with their manifest, or restore the file that was exported",
            )
    return data
