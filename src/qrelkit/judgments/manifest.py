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
                          "by", "at"} or null), "not_measured", "warnings" (each two labellers sharing
                          fewer than five calibration queries; every result read with the qrels repeats
                          them) and "rounds" (every calibration round:
                          rubric version and hash, queries, seed, status, agreement, override)
                          (:func:`qrelkit.judgments.adjudication.gated_calibration_fields`)
    adjudication          {"agreed", "single_labeller", "adjudicated", "overridden", "defaulted",
                           "unresolved_left_out", "ungraded_left_out", "total", "undecided_policy",
                           "override_allowed", ...} (:func:`qrelkit.judgments.adjudication.merge`)
    prediction_powered    written by a judging project's final export when model labellers' grades count in
                          the final qrels, or a predictor graded (null otherwise): {"model_qrels": [{"path",
                          "sha256", "queries", "judgments", "labeller", "model_id", "role" (labeller or
                          predictor; a predictor's adds "gate", "failing" and "role_decision"), "probabilities" (the side file
                          of its grade probabilities, {"path", "sha256", "pairs", "grades"}, or null)}], "human_qrels": {"path", "sha256", "queries",
                          "judgments", "grades"}, "sample": {"drawn": "random" (the calibration queries are
                          the project's seeded random draw, recomputed) or "given", "seed", "count", "round",
                          "candidates", "queries"}}; each model's qrels carry a manifest of their own with
                          this field, which ``qrelkit eval MODEL_QRELS RUNS`` reads (:func:`human_source`)
    design                written by a judging project's final export when a live queue chose what people
                          judged (null otherwise: :func:`qrelkit.app.design.design_field`): {"strategy",
                          "budget", "seed", "measure", "model", "kind" ("draw", or "round": a focused
                          round, every pair taken with certainty, the draw to come), "judged_before" (people's pairs
                          before the design, each at probability 1), "pairs": [{"query_id", "doc_id",
                          "probability" (its inclusion probability), "order"}], "spent", "chosen_judged",
                          "chosen_settled", "awaiting_decision" (chosen pairs people graded apart and
                          nobody decided), "people_pairs", "graded_outside" (pairs of the draw's frame
                          people graded after the plan unchosen, [{"query_id", "doc_id"}]: the estimate
                          leaves them out), ...}; estimates from such qrels use the strategy's estimator (eval,
                          compare and report name it: it depends on the measure)
    tool                  {"name": "qrelkit", "version"} (format 1 wrote "qrelkit_version")
    signature             {"algorithm": "hmac-sha256", "key_id", "hmac"} when exported from a judging
                          project: HMAC-SHA256 with the project's key (kept in the project database, never
                          in the manifest) over the manifest's canonical JSON without this field; absent
                          otherwise (:func:`sign_manifest`, :func:`check_signature`)

Reading checks that a manifest agrees with itself (:func:`check_consistency`): every gate's verdict is
recomputed from the number it records and its threshold, the status from the gate and the override, so
a verdict edited by hand ("failed" made "passed") is an error naming the field. Its signature, given
the project's key, says whether anything else was edited: "verified", or an error; without the key it
is "signature not checked", and a manifest without one "unsigned".

Evaluation reads the manifest (:func:`judgments_for`): ``qrelkit eval`` and ``compare`` look for one
beside the qrels (or take ``--manifest``), refuse qrels whose hash no longer matches, and carry
:func:`judgments_meaning` in every output, with a warning when agreement was not measured, the gate
failed, was overridden (with the reason, who and when) or is not decided yet, or pairs were left out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputFormatError, ValidationError
from ..fingerprint import file_sha256
from ..formats.inputs import read_input

if TYPE_CHECKING:  # reading a manifest (every `qrelkit eval`) loads no dataframe library
    from ..data.values import Qrels

__all__ = [
    "FIELDS",
    "MANIFEST_FORMAT",
    "SIGNATURE_ALGORITHM",
    "HumanSource",
    "check_consistency",
    "check_signature",
    "human_source",
    "judgments_for",
    "judgments_meaning",
    "manifest_beside",
    "manifest_path",
    "model_warnings",
    "predictor_warning",
    "qrels_with_manifest_text",
    "read_manifest",
    "recorded_scale",
    "sign_manifest",
    "with_run_models",
    "write_qrels_with_manifest",
]

MANIFEST_FORMAT = "qrelkit qrels manifest 2"
_READABLE = (MANIFEST_FORMAT, "qrelkit qrels manifest 1")  # 1: "qrelkit_version" instead of "tool"
FIELDS = ("rubric", "scale", "relevance_threshold", "labellers", "calibration", "adjudication",
          "model_labellers", "prediction_powered", "design")  # fmt: skip
"""Fields the caller supplies; ``format``, ``tool`` and ``qrels`` are filled in."""


def manifest_path(qrels_path: str | Path) -> Path:
    """``final.qrels`` -> ``final.qrels.manifest.json``."""
    path = Path(qrels_path)
    return path.with_name(path.name + ".manifest.json")


def manifest_beside(
    qrels_path: str | Path, manifest: str | Path | None = None
) -> tuple[Path, dict[str, Any]] | None:
    """(its path, the manifest read without verifying) of ``manifest``, or of ``<qrels>.manifest.json``
    beside the qrels; ``None`` when none is named and none lies beside them. What the manifest says of the
    files it names is each caller's to check."""
    path = Path(manifest) if manifest is not None else manifest_path(qrels_path)
    if manifest is None and not path.is_file():
        return None
    return path, read_manifest(path, verify=False)


def _qrels_summary(qrels: Qrels, name: str, digest: str) -> dict[str, Any]:
    grades = qrels.frame.group_by("grade").len().sort("grade")
    return {
        "path": name,
        "sha256": digest,
        "queries": qrels.frame.get_column("query_id").n_unique(),
        "judgments": qrels.frame.height,
        "grades": {str(g): int(n) for g, n in grades.iter_rows()},
    }


SIGNATURE_ALGORITHM = "hmac-sha256"


def _canonical(data: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the manifest without ``signature``, as sorted compact JSON."""
    body = {k: v for k, v in data.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def key_id(key: bytes) -> str:
    """A name for a project's key that does not reveal it: 16 hex digits of a SHA-256 of it."""
    return hashlib.sha256(b"qrelkit manifest key\0" + key).hexdigest()[:16]


def sign_manifest(data: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """``data`` with its ``signature``: HMAC-SHA256 under ``key`` of :func:`_canonical` of the rest."""
    mac = hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()
    return {**data, "signature": {"algorithm": SIGNATURE_ALGORITHM, "key_id": key_id(key), "hmac": mac}}


def check_signature(data: Mapping[str, Any], key: bytes | None, source: str | None = None) -> str:
    """``verified``, ``unsigned``, or ``signed ..., signature not checked`` (no key given); a signature that
    does not match the content, or another project's key, is an error."""
    sig = data.get("signature")
    if sig is None:
        return "unsigned"
    if not isinstance(sig, Mapping) or sig.get("algorithm") != SIGNATURE_ALGORITHM:
        raise ValidationError("the manifest's signature is not one qrelkit writes", source=source,
                              got=sig if not isinstance(sig, Mapping) else sig.get("algorithm"),
                              expected=SIGNATURE_ALGORITHM, fix="re-export the qrels from their project")  # fmt: skip
    if key is None:
        return f"signed with project key {sig.get('key_id')}, signature not checked (`qrelkit eval --project DB` checks it)"
    if sig.get("key_id") != key_id(key):
        raise ValidationError(
            "the manifest was signed with another project's key",
            source=source,
            got=f"key {sig.get('key_id')}",
            expected=f"key {key_id(key)} of the project given",
            fix="name the project these qrels were exported from",
        )
    mac = hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, str(sig.get("hmac", ""))):
        raise ValidationError(
            "the manifest's signature does not match its content: it was edited after export",
            source=source,
            fix="re-export the qrels with their manifest from the project (`qrelkit judge export --final`)",
        )
    return "verified"


def _gate_problem(where: str, gate: Any) -> str | None:
    """Why a gate's recorded verdict disagrees with its own number and threshold, or ``None``."""
    if not isinstance(gate, Mapping) or "value_used" not in gate:  # 0.1.0 did not record the number
        return None
    value, threshold, passed = gate.get("value_used"), gate.get("threshold"), gate.get("passed")
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or not isinstance(passed, bool):
        return f"{where}.threshold and {where}.passed must be a number and true or false"
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        return f"{where}.value_used must be a number or null"
    should = value is not None and value >= threshold
    if passed != should:
        shown = "null (undefined)" if value is None else repr(value)
        sign = ">=" if should else "<" if value is not None else "vs"
        return f"{where}.passed is {json.dumps(passed)} but value_used {shown} {sign} threshold {threshold!r}"
    return None


def _estimation_problem(pp: Any) -> str | None:
    """What is wrong with a ``prediction_powered`` field, or ``None``."""
    if pp is None:
        return None
    if not isinstance(pp, Mapping):
        return "prediction_powered must be an object or null"
    sample, human, models = pp.get("sample"), pp.get("human_qrels"), pp.get("model_qrels")
    if not isinstance(sample, Mapping) or sample.get("drawn") not in ("random", "given"):
        return 'prediction_powered.sample.drawn must be "random" or "given"'
    if sample.get("drawn") == "random" and (
        isinstance(sample.get("seed"), bool) or not isinstance(sample.get("seed"), int)
    ):
        return 'prediction_powered.sample.drawn is "random" but its seed is not recorded'
    files = [("prediction_powered.human_qrels", human)]
    files += [
        (f"prediction_powered.model_qrels[{i}]", m)
        for i, m in enumerate(models if isinstance(models, list) else [None])
    ]
    for where, f in files:
        if (
            not isinstance(f, Mapping)
            or not isinstance(f.get("path"), str)
            or not isinstance(f.get("sha256"), str)
        ):
            return f"{where} must name a file with its path and sha256"
        if Path(f["path"]).name != f["path"]:
            return f"{where}.path must be a file name beside the manifest, not {f['path']!r}"
    return None


def check_consistency(data: Mapping[str, Any], source: str | None = None) -> None:
    """Refuse a manifest that contradicts itself: a gate whose verdict is not its number against its
    threshold (every gate recorded: the calibration's, each pair of labellers', the group's, each
    round's), a status the gate or override does not bear out. The error names the field."""
    problems: list[str | None] = []
    cal = data.get("calibration")
    if isinstance(cal, Mapping):
        problems.append(_gate_problem("calibration.gate", cal.get("gate")))
        for i, pair in enumerate(cal.get("pairs_of_labellers") or []):
            if isinstance(pair, Mapping):
                problems.append(_gate_problem(f"calibration.pairs_of_labellers[{i}].gate", pair.get("gate")))
        group = cal.get("group")
        if isinstance(group, Mapping):
            problems.append(_gate_problem("calibration.group.gate", group.get("gate")))
        for i, r in enumerate(cal.get("rounds") or []):
            for j, pair in enumerate((r.get("agreement") or []) if isinstance(r, Mapping) else []):
                if isinstance(pair, Mapping):
                    problems.append(
                        _gate_problem(f"calibration.rounds[{i}].agreement[{j}].gate", pair.get("gate"))
                    )
        status, gate, override = cal.get("status"), cal.get("gate"), cal.get("override")
        passed = gate.get("passed") if isinstance(gate, Mapping) else None
        if status == "passed" and passed is not True:
            problems.append(
                f'calibration.status is "passed" but calibration.gate.passed is {json.dumps(passed)}'
            )
        if status == "failed" and passed is True:
            problems.append(f"calibration.status is {json.dumps(status)} but calibration.gate.passed is true")
        if status == "overridden" and not override:
            problems.append('calibration.status is "overridden" but calibration.override is empty')
        if override and status not in (None, "overridden"):
            problems.append(
                f"calibration.override is recorded but calibration.status is {json.dumps(status)}"
            )
    problems.append(_estimation_problem(data.get("prediction_powered")))
    found = [p for p in problems if p]
    if found:
        raise ValidationError(
            f"the manifest contradicts itself: {found[0]}",
            source=source,
            fix="re-export the qrels with their manifest; a manifest's verdicts are not edited by hand",
        )


def qrels_with_manifest_text(
    qrels: Qrels, name: str, manifest_fields: Mapping[str, Any], *, key: bytes | None = None
) -> tuple[str, str]:
    """``qrels`` as TREC text and its manifest as JSON text, for a qrels file to be called ``name``;
    signed (:func:`sign_manifest`) with ``key``, a judging project's key, when given.

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
    check_consistency(manifest, source=name)
    if key is not None:
        manifest = sign_manifest(manifest, key)
    return text, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def write_qrels_with_manifest(qrels: Qrels, path: str | Path, manifest_fields: Mapping[str, Any]) -> Path:
    """Write ``qrels`` as TREC qrels to ``path`` and its manifest beside it (:func:`qrels_with_manifest_text`);
    return the manifest's path."""
    from ..formats.outputs import write_outputs  # only a write needs it: `qrelkit eval` reads manifests

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
        "export the qrels with write_qrels_with_manifest (or qrelkit adjudicate-files -o)",
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
    check_consistency(data, source=str(mpath))
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


def judgments_for(
    qrels_path: str | Path, manifest: str | Path | None = None, *, key: bytes | None = None
) -> dict[str, Any] | None:
    """What the judgments in ``qrels_path`` mean, from their manifest; ``None`` when there is none.

    ``key``: the key of the judging project the qrels were exported from, to check the manifest's
    signature (:func:`check_signature`; ``signature`` in the meaning says what was found).

    ``manifest`` names the manifest; without it, ``<qrels>.manifest.json`` beside the qrels is used when
    it exists. Either way the qrels file's SHA-256 must be the one the manifest records: a manifest never
    describes a file edited after export (the error says how to fix it).
    """
    qrels_path = Path(qrels_path)
    beside = manifest_beside(qrels_path, manifest)
    if beside is None:
        return None
    manifest, data = beside
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
    signature = check_signature(data, key, source=str(manifest))
    return {**judgments_meaning(data, source=str(manifest)), "signature": signature}


def _own_model_entry(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``prediction_powered`` entry of the model's qrels this manifest describes, or ``None`` (the final
    qrels' own manifest, or no estimation parts)."""
    pp = data.get("prediction_powered")
    if not isinstance(pp, Mapping) or not isinstance(data.get("qrels"), Mapping):
        return None
    path = data["qrels"].get("path")
    return next(
        (m for m in pp.get("model_qrels") or () if isinstance(m, Mapping) and m.get("path") == path), None
    )


def judgments_meaning(data: Mapping[str, Any], source: str | None = None) -> dict[str, Any]:
    """The fields of a manifest every result carries, and the warnings they call for.

    Warnings: agreement not measured (no calibration, or a judging project made with
    ``--no-calibration``), a failed or not measurable gate, a gate overridden (with its reason, who and when), a gate not
    decided yet, the calibration's own warnings (two labellers sharing too few queries), disputed pairs
    left out, and, for a predictor's qrels, that the judge serves only as a predictor (:func:`predictor_warning`).
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
    elif calibration.get("not_measurable"):
        warnings.append(f"the calibration gate was not measurable: {calibration.get('not_measurable')}")
    elif gate is not None and not gate.get("passed"):
        warnings.append(f"the calibration gate failed: {gate.get('message')}")
    if override:
        what = "not measurable" if (calibration or {}).get("not_measurable") else "failed"
        warnings.append(
            f"full judging was opened despite the {what} gate: overridden by {override.get('by')} at "
            f"{override.get('at')}, reason: {override.get('reason')}"
        )
    warnings += [str(w) for w in (calibration or {}).get("warnings") or ()]  # e.g. too few shared queries
    unresolved = int(adjudication.get("unresolved_left_out", 0) or 0)
    if unresolved:
        warnings.append(f"{unresolved} disputed pair(s) were left out of these qrels and score as unjudged")
    models = [m for m in data.get("model_labellers") or () if m.get("counted_in_final")]
    warnings += model_warnings(models)
    own = _own_model_entry(data)
    if own is not None and own.get("role") == "predictor":  # these are a predictor's grades
        warnings.append(predictor_warning(own))
    overridden = int(adjudication.get("overridden", 0) or 0)
    keep = ("labellers", "kappa", "ci_low", "ci_high", "level", "weights", "n_pairs", "bootstrap_low",
            "bootstrap_high", "bootstrap_resamples", "bootstrap_seed", "not_measured", "not_measurable")  # fmt: skip
    each = ("labellers", "kappa", "ci_low", "ci_high", "level", "weights", "n_pairs", "bootstrap_low",
            "bootstrap_high")  # fmt: skip
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
        "pairs_of_labellers": [
            {k: p.get(k) for k in each} for p in (calibration or {}).get("pairs_of_labellers") or ()
        ],
        "calibration_status": status,
        "calibration_round": (calibration or {}).get("round"),
        "group_agreement": agreement,
        "gate": gate,
        "gate_override": override,
        "unresolved_left_out": unresolved,
        "overridden": overridden,
        "model_labellers": models,
        "warnings": warnings,
    }


def model_warnings(models: Sequence[Mapping[str, Any]]) -> list[str]:
    """The warning "judged in part by model NAME (model ID)" with its share of the final grades, and a model gate
    opened by an override, with its reason, for each model labeller counted in the final qrels."""
    out = []
    for m in models:
        out.append(
            f"judged in part by model {m.get('name')} (model {m.get('model_id')}): "
            f"{100 * float(m.get('share_alone') or 0):.1f}% of the final grades rest on it alone, "
            f"{100 * float(m.get('share_with_vote') or 0):.1f}% include its grade"
        )
        override = m.get("override")
        if override:
            out.append(
                f"model {m.get('name')} judged although its gate failed ({', '.join(m.get('failing') or ())}): "
                f"overridden by {override.get('by')} at {override.get('at')}, reason: {override.get('reason')}"
            )
        people = m.get("people_override")
        if people:
            out.append(
                f"model {m.get('name')} was measured against people whose own calibration gate failed: overridden "
                f"by {people.get('by')} at {people.get('at')}, reason: {people.get('reason')}"
            )
    return out


def recorded_scale(meaning: Mapping[str, Any] | None, scale: Any = None) -> Any:
    """The grade scale to read a model's qrels and their people's sample with, for an estimate: ``scale``
    (a rubric's) when given, else the scale the manifest's meaning (:func:`judgments_meaning`) records, so
    that a lenient judge that never gives the lowest grade is on the people's scale; ``None`` without
    either."""
    if scale is not None or not meaning or not meaning.get("scale"):
        return scale
    return tuple(sorted({int(g) for g in meaning["scale"]}))


def predictor_warning(entry: Mapping[str, Any]) -> str:
    """The line every estimate from a predictor's qrels carries: what the judge is, and its gate."""
    gate, failing = entry.get("gate"), ", ".join(entry.get("failing") or ())
    how = (f"failed its gate ({failing})" if gate == "failed" else
           "has no decided gate" if gate is None else f"gate {gate}")  # fmt: skip
    decision = entry.get("role_decision") or {}
    made = (f"; made a predictor by {decision.get('by')} at {decision.get('at')}: {decision.get('reason')}"
            if decision.get("by") else "")  # fmt: skip
    return (
        f"model {entry.get('labeller')} (model {entry.get('model_id')}) {how} and serves only as a "
        f"predictor, corrected by people's grades: its grades alone are not final qrels{made}"
    )


def with_run_models(meaning: dict[str, Any] | None, run_models: Mapping[str, str]) -> dict[str, Any] | None:
    """The meaning with each run's declared model (``--run-model RUN=ID``) recorded, and a self-preference
    warning for a run whose model is the model of a labeller that judged these qrels (Clarke and Dietz
    2024: a judge favours its own ranker)."""
    if not run_models or meaning is None:  # without a manifest no labeller is known to compare with
        return meaning
    out = dict(meaning)
    out["run_models"] = dict(run_models)
    judges = {m.get("model_id"): m.get("name") for m in (out.get("model_labellers") or ())}
    warnings = list(out.get("warnings") or ())
    for run, model_id in sorted(run_models.items()):
        if model_id in judges:
            warnings.append(
                f"self-preference: run {run} was made with model {model_id}, which judged these qrels as "
                f"model labeller {judges[model_id]}; its scores may be inflated"
            )
    out["warnings"] = warnings
    return out


class HumanSource:
    """The people's qrels a model's qrels were exported with (:func:`human_source`): ``path``, whether their
    queries are a ``random`` sample, the ``sample`` record, the ``model`` entry and the ``manifest`` read."""

    def __init__(
        self, path: Path, manifest: Path, model: Mapping[str, Any], sample: Mapping[str, Any]
    ) -> None:
        self.path, self.manifest, self.model, self.sample = path, manifest, dict(model), dict(sample)
        self.random = sample.get("drawn") == "random"

    def describe(self) -> str:
        how = (f"drawn at random with seed {self.sample.get('seed')}" if self.random
               else "not recorded as drawn at random")  # fmt: skip
        return (f"people's qrels {self.path.name} ({self.sample.get('count')} calibration queries, {how}) and "
                f"model {self.model.get('labeller')}'s qrels {self.model.get('path')} (model "
                f"{self.model.get('model_id')}), named by {self.manifest.name}")  # fmt: skip

    def warnings(self) -> list[str]:
        out = [predictor_warning(self.model)] if self.model.get("role") == "predictor" else []
        if not self.random:
            out.append(f"the manifest {self.manifest.name} does not say the people's queries were drawn at random "
                       f"(drawn: {self.sample.get('drawn')}): the interval's validity rests on their being a random "
                       "sample of the queries")  # fmt: skip
        return out


def human_source(qrels_path: str | Path, manifest: str | Path | None = None) -> HumanSource | None:
    """The people's qrels of the calibration queries that a judging project's final export wrote with the
    model's qrels ``qrels_path``, from the manifest beside them (or ``manifest``); ``None`` when the manifest
    is absent or does not describe a model's qrels (``prediction_powered``). Both files must be the ones
    the manifest records: a missing or altered file is an error naming the fix."""
    qrels_path = Path(qrels_path)
    beside = manifest_beside(qrels_path, manifest)
    if beside is None:
        return None
    mpath, data = beside
    pp = data.get("prediction_powered")
    if not pp:
        return None
    mine = next((m for m in pp["model_qrels"] if m["path"] == data["qrels"]["path"]), None)
    if mine is None:  # the final qrels' manifest: they are not a model's grades
        return None
    for path, entry, what in ((qrels_path, mine, "model's"), (mpath.with_name(pp["human_qrels"]["path"]),
                              pp["human_qrels"], "people's")):  # fmt: skip
        if not path.is_file():
            raise ValidationError(
                f"the manifest names the {what} qrels {entry['path']}, which is not beside it",
                source=str(mpath),
                fix=f"keep {entry['path']} from the same `qrelkit judge export --final` beside {mpath.name}, "
                "or give the people's qrels with --human",
            )
        digest = file_sha256(path)
        if digest != entry["sha256"]:
            raise ValidationError(
                f"the {what} qrels no longer match the manifest",
                source=str(path),
                got=f"sha256 {digest[:16]}...",
                expected=f"sha256 {entry['sha256'][:16]}... as recorded in {mpath.name}",
                fix="re-export with `qrelkit judge export --final`, or restore the exported file",
            )
    return HumanSource(mpath.with_name(pp["human_qrels"]["path"]), mpath, mine, pp["sample"])
