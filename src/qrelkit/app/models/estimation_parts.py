"""What a final export adds when model labellers' grades are counted in it: the inputs of a
prediction-powered estimate (:mod:`qrelkit.estimation`).

For each model labeller counted in the final qrels (its gate passed or was overridden, and it graded),
the model's qrels: its current grade of every pair it graded, named ``<final>.model.qrels`` (one model)
or ``<final>.model.<NAME>.qrels`` (several), each with a manifest beside it; and for each predictor
(:mod:`.roles`: its grades never join the final qrels) that graded, its qrels the same way, named
``<final>.predictor.qrels`` (or ``<final>.predictor.<NAME>.qrels``), its entry saying ``"role":
"predictor"`` with its gate's outcome and failing parts; and the people's qrels of
the calibration queries, ``<final>.human.qrels``: the people's agreed or adjudicated grades (model grades
take no part), the calibration sample being the queries :func:`qrelkit.app.phases.calibration_sample`
reports (drawn at random with the project seed, recomputed). Every manifest of the export records the
field ``prediction_powered`` (:mod:`qrelkit.judgments.manifest`), naming the files with their SHA-256 and
how the calibration queries were drawn; ``qrelkit eval MODEL_QRELS RUNS`` reads it
(:func:`qrelkit.judgments.manifest.human_source`). A model's grade probabilities, when its grades carry
them, go beside its qrels in ``<qrels>.probabilities.tsv`` (:mod:`qrelkit.formats.probabilities`), named
with their SHA-256 in its ``model_qrels`` entry. When a live queue's design chose what people judged
(:mod:`..design`), the people's settled grades of every pair they judged go in ``<final>.people.qrels``
(``people_qrels``): the design's sample, which an estimate under the design reads.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["companion_name", "estimation_parts"]


def companion_name(name: str, part: str) -> str:
    """``final.qrels`` -> ``final.<part>.qrels`` (``final`` -> ``final.<part>``)."""
    path = Path(name)
    return path.stem + "." + part + path.suffix if path.suffix else name + "." + part


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _entry(text: str, name: str, grades: Mapping[tuple[str, str], int]) -> dict[str, Any]:
    return {
        "path": name,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "queries": len({q for q, _ in grades}),
        "judgments": len(grades),
    }


def estimation_parts(
    store: Any,
    rubric_hash: str,
    name: str,
    models: Sequence[Mapping[str, Any]],
    people: Callable[[], Mapping[tuple[str, str], int]],
    grades_of: Callable[[str], Mapping[tuple[str, str], int]],
) -> tuple[dict[str, Any] | None, list[tuple[str, str, dict[str, Any], dict[tuple[str, str], int]]]]:
    """(the ``prediction_powered`` field, or ``None`` when no model's grades count or there is no
    calibration sample; the files to write beside the final qrels called ``name``: ``(file name, qrels
    text, the model labeller's manifest entry or {} for the people's file, its grades)``).

    ``people()``: the people's merged grades, model grades taking no part
    (:func:`qrelkit.app.grades.final_grades` with ``people_only``); ``grades_of(name)``: a labeller's
    current grades (:func:`qrelkit.app.grades.labeller_grades`). A model's grade probabilities are written
    beside its qrels in ``<qrels>.probabilities.tsv`` and named in its entry (``probabilities``; null
    without: :func:`.probabilities.labeller_side_file`)."""
    from qrelkit.data.values import Qrels
    from qrelkit.formats import qrels_text

    from ..phases import calibration_sample
    from .probabilities import labeller_side_file

    counted = [m for m in models if m.get("counted_in_final") and m.get("final_grades_with_model_vote")]
    counted += [m for m in models if m.get("role") == "predictor" and grades_of(str(m["name"]))]
    if not counted:
        return None, []
    sample = store.read(lambda c: calibration_sample(c, rubric_hash))
    if sample is None:
        return None, []
    chosen = set(sample["queries"])
    human = {k: int(g) for k, g in people().items() if k[0] in chosen}
    human_name = companion_name(name, "human")
    human_text = qrels_text(Qrels.from_grades(human, name=human_name))
    files: list[tuple[str, str, dict[str, Any], dict[tuple[str, str], int]]] = [
        (human_name, human_text, {}, human)
    ]
    model_entries = []
    for m in counted:
        grades = {k: int(g) for k, g in grades_of(str(m["name"])).items()}
        predictor = m.get("role") == "predictor"
        kind = "predictor" if predictor else "model"
        part = kind if sum((c.get("role") == "predictor") == predictor for c in counted) == 1 else (
            kind + "." + _safe(str(m["name"])))  # fmt: skip
        model_name = companion_name(name, part)
        text = qrels_text(Qrels.from_grades(grades, name=model_name))
        entry = {**_entry(text, model_name, grades), "labeller": m["name"], "model_id": m["model_id"],
                 "role": m.get("role") or "labeller"}  # fmt: skip
        if predictor:  # its gate is still decided and reported: an estimate says what the judge is
            entry.update(gate=m.get("gate"), failing=list(m.get("failing") or ()),
                         role_decision=m.get("role_decision"))  # fmt: skip
        side = store.read(
            lambda c, n=str(m["name"]), f=model_name: labeller_side_file(c, n, f, rubric_hash=rubric_hash)
        )
        entry["probabilities"] = None if side is None else side[2]
        model_entries.append(entry)
        files.append((model_name, text, dict(m), grades))
        if side is not None:
            files.append((side[0], side[1], {}, {}))
    from ..design import current_design

    design = store.read(current_design)
    if design is not None and design.state == "planned":  # the design's sample: every pair people settled
        everyone = {k: int(g) for k, g in people().items()}
        people_name = companion_name(name, "people")
        people_text = qrels_text(Qrels.from_grades(everyone, name=people_name))
        files.append((people_name, people_text, {}, everyone))
    field: dict[str, Any] = {
        "model_qrels": model_entries,
        "human_qrels": {
            **_entry(human_text, human_name, human),
            "grades": "the people's agreed or adjudicated grades of the calibration queries; model grades take no part",
        },
        "sample": {
            "drawn": sample["drawn"],
            "seed": sample["seed"],
            "count": sample["count"],
            "round": sample["round"],
            "candidates": sample["candidates"],
            "queries": sample["queries"],
        },
    }
    if design is not None and design.state == "planned":
        field["people_qrels"] = {**_entry(people_text, people_name, everyone),
                                 "grades": "the people's settled grades of every pair they judged (agreed, adjudicated "
                                 "or single): the sample of the live queue's design; model grades take no part"}  # fmt: skip
    return field, files
