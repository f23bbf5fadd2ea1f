"""A judging project as a budget :class:`~qrelkit.budget.problem.Problem`: what ``judge plan`` hands
:func:`qrelkit.budget.live.plan_queue`, and what ``judge status`` estimates from.

The project's material (:func:`qrelkit.app.design_inputs.planning_material`: the pooled pairs, a model labeller's
grades and probabilities, the people's settled grades, the pooled runs) becomes a Problem through
:func:`~qrelkit.budget.problem.build_problem`, whose FULL judgments are the people's grade where a person's is
settled and the model's elsewhere (FULL only names the pairs and the scale here: no oracle is made from it),
and a :class:`~qrelkit.budget.base.State` holding the people's grades: each at its inclusion probability under
the design (1 for a pair judged before it, or not chosen by it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError
from .base import Estimate, Selection, State, bounded, strategy
from .problem import Problem, build_problem

__all__ = [
    "ExportEstimate",
    "ProjectProblem",
    "budget_pairs",
    "check_order",
    "chosen_pairs",
    "estimate_export",
    "estimate_project",
    "plan_project",
    "project_problem",
]


@dataclass(frozen=True)
class ProjectProblem:
    problem: Problem
    state: State
    index: dict[tuple[str, str], int]  # pair -> its index in the Problem


def project_problem(
    material: Any, measure: str, design: Mapping[tuple[str, str], float] | None = None
) -> ProjectProblem:
    """The Problem and State of a project's ``material`` (module docstring); ``design``: each chosen pair's
    inclusion probability (a person's grade of a pair outside it counts at 1)."""
    from ..data.values import Qrels

    full = {p: material.people.get(p, material.model_grades[p]) for p in material.pairs}
    model = {p: material.model_grades[p] for p in material.pairs}
    problem, _ = build_problem(
        Qrels.from_grades(full, name="project"),
        Qrels.from_grades(model, name=f"model labeller {material.model}"),
        material.runs,
        measure,
        probabilities=None if material.probabilities is None else dict(material.probabilities),
    )
    index = {p: i for i, p in enumerate(problem.pairs)}
    bought = [(index[p], g) for p, g in sorted(material.people.items()) if p in index and g >= 0]
    state = State.empty(problem.n_pairs)
    if bought:
        pairs = np.array([i for i, _ in bought], dtype=np.int64)
        grades = np.array([g for _, g in bought], dtype=np.int64)
        chance = np.array([(design or {}).get(problem.pairs[i], 1.0) for i in pairs], dtype=np.float64)
        state.record(pairs, grades, chance)
        state.rounds.clear()
    return ProjectProblem(problem, state, index)


def plan_project(
    material: Any, name: str, budget: int, seed: int, measure: str, round_pairs: int | None = None
) -> tuple[ProjectProblem, Selection]:
    """A one-shot design of the project's budget under strategy ``name``
    (:func:`qrelkit.budget.live.plan_queue`), or with ``round_pairs`` a focused round of that many pairs
    (:func:`qrelkit.budget.live.plan_round`); a strategy needing the model's grade probabilities is refused
    without them."""
    from .live import plan_queue, plan_round

    chosen = strategy(name)
    if chosen.needs_probabilities and material.probabilities is None:
        raise ValidationError(
            f"strategy {name!r} needs the model's grade probabilities, and model labeller {material.model!r} "
            "recorded none for some pooled pairs",
            fix="add the model with --logprobs N (or a program printing probabilities) and run it, or choose "
            "another --order",
        )
    built = project_problem(material, measure)
    # the pairs people settle whatever the design (graded apart, or held in their plans): with certainty
    sure = np.array([built.index[p] for p in sorted(material.certain) if p in built.index], dtype=np.int64)
    if round_pairs is not None:
        return built, plan_round(built.problem, built.state, name, budget, round_pairs, seed, certain=sure)
    return built, plan_queue(built.problem, built.state, name, budget, seed, certain=sure)


def estimate_project(
    material: Any,
    name: str,
    measure: str,
    design: Mapping[tuple[str, str], float],
    alpha: float = 0.05,
    outside: Collection[tuple[str, str]] = (),
) -> tuple[Estimate, ProjectProblem]:
    """Each pooled run's mean and interval under the design (its strategy's estimator, named). ``outside``:
    pairs of the draw's frame people graded outside the design after it (:func:`qrelkit.app.design.
    graded_outside`), whose grades the estimate leaves out: the design did not choose them."""
    if outside:
        left = set(outside)
        material = dataclasses.replace(
            material, people={p: g for p, g in material.people.items() if p not in left}
        )
    built = project_problem(material, measure, design)
    return bounded(built.problem, strategy(name).estimate(built.problem, built.state, alpha)), built


@dataclass(frozen=True)
class ExportEstimate:
    """Each run's estimate of each measure from a final export under the design its manifest records."""

    design: dict[str, Any]  # the manifest's ``design``
    measures: tuple[str, ...]
    runs: tuple[str, ...]
    estimates: tuple[Estimate, ...]  # one a measure
    sources: dict[str, str]  # the files read: model, people, manifest
    withheld: str | None = None  # why no interval is given (:func:`intervals_withheld`), or None

    def to_dict(self) -> dict[str, Any]:
        from ..provenance import header, json_number

        rows = []
        for measure, found in zip(self.measures, self.estimates, strict=True):
            for i, run in enumerate(self.runs):
                rows.append({"run": run, "measure": measure, "estimate": json_number(found.means[i]),
                             "low": json_number(found.low[i]), "high": json_number(found.high[i]),
                             "estimator": found.estimator})  # fmt: skip
        design = {
            **{k: v for k, v in self.design.items() if k != "pairs"},
            "chosen": len(self.design.get("pairs") or ()),
        }
        return header(design=design, sources=self.sources, intervals_withheld=self.withheld, estimates=rows,
                      differences=self.differences())  # fmt: skip

    def differences(self, baselines: Any = None) -> list[dict[str, Any]]:
        """Each run against each baseline (default: the first run), per measure: the estimated difference of
        the means (run minus baseline) with its interval under the design (``None``: none)."""
        from ..provenance import json_number

        chosen = list(baselines) if baselines else list(self.runs[:1])
        unknown = [b for b in chosen if b not in self.runs]
        if unknown:
            raise ValidationError(
                f"no run {unknown[0]!r} among the runs compared", expected=", ".join(self.runs)
            )
        rows = []
        for measure, found in zip(self.measures, self.estimates, strict=True):
            for base in chosen:
                b = self.runs.index(base)
                for a, run in enumerate(self.runs):
                    if a != b:
                        rows.append({"measure": measure, "baseline": base, "run": run, "difference":
                                     json_number(found.diff[a, b]), "low": json_number(found.diff_low[a, b]),
                                     "high": json_number(found.diff_high[a, b]), "estimator": found.estimator})  # fmt: skip
        return rows


def estimate_export(
    qrels: str, runs: Any, measures: Any = None, manifest: str | None = None, alpha: float = 0.05
) -> ExportEstimate | None:
    """The estimate under the live queue's design of a judging project's final export (its manifest's
    ``design``), or ``None`` when the manifest records none. ``qrels``: any qrels of the export whose manifest
    records the design (the final qrels or the model's); the model labeller's qrels (with its grade
    probabilities when written) and the people's qrels of the design's sample are read from beside the
    manifest, each checked against the SHA-256 it records. ``runs``: paths or Runs; ``measures``: nDCG@k, P@k
    or R@k (default nDCG@10). Each estimate is the design strategy's own (:func:`estimate_project`)."""
    from pathlib import Path

    from ..app.design_inputs import Material
    from ..fingerprint import file_sha256
    from ..formats import read_qrels, read_run
    from ..formats.probabilities import read_probabilities
    from ..judgments.manifest import manifest_beside

    beside = manifest_beside(qrels, manifest)
    if beside is None:
        return None
    mpath, data = beside
    design = data.get("design")
    if not design:
        return None
    pp = data.get("prediction_powered") or {}
    model = next((m for m in pp.get("model_qrels") or () if m.get("labeller") == design.get("model")), None)
    people = pp.get("people_qrels")
    if model is None or people is None:
        raise ValidationError("the manifest records a design but not the model's and the people's qrels it rests on",
                              source=str(mpath), fix="re-export with `qrelkit judge export --final`")  # fmt: skip
    files = {"model": model, "people": people}
    if model.get("probabilities"):
        files["probabilities"] = model["probabilities"]
    for what, entry in files.items():
        path = mpath.with_name(entry["path"])
        if not path.is_file() or file_sha256(path) != entry["sha256"]:
            raise ValidationError(
                f"the {what} file {entry['path']} the manifest names is {'altered' if path.is_file() else 'missing'}",
                source=str(mpath),
                fix=f"keep {entry['path']} from the same `qrelkit judge export --final` beside {mpath.name}",
            )
    grades = {(q, d): int(g) for q, d, g in read_qrels(mpath.with_name(model["path"])).frame.select("query_id", "doc_id", "grade").iter_rows()}  # fmt: skip
    settled = {(q, d): int(g) for q, d, g in read_qrels(mpath.with_name(people["path"])).frame.select("query_id", "doc_id", "grade").iter_rows()}  # fmt: skip
    probabilities = None
    if "probabilities" in files:
        read = read_probabilities(mpath.with_name(files["probabilities"]["path"]))
        probabilities = read if all(p in read for p in grades) else None
    loaded = [r if not isinstance(r, str | Path) else read_run(r) for r in runs]
    material = Material(tuple(sorted(grades)), str(design["model"]), grades, probabilities, settled, loaded,
                        tuple(int(g) for g in data.get("scale") or ()))  # fmt: skip
    chance = {(p["query_id"], p["doc_id"]): float(p["probability"]) for p in design.get("pairs") or ()}
    withheld = intervals_withheld(list(chance), settled, str(design.get("kind") or "draw"))
    outside = [(p["query_id"], p["doc_id"]) for p in design.get("graded_outside") or ()]
    wanted = [str(m) for m in measures] if measures else [str(design.get("measure") or "nDCG@10")]
    found: list[Estimate] = []
    names: tuple[str, ...] = ()
    for measure in wanted:
        estimate, built = estimate_project(material, str(design["strategy"]), measure, chance, alpha, outside)
        found.append(
            estimate if withheld is None else Estimate.without_intervals(estimate.estimator, estimate.means)
        )
        names = built.problem.runs
    sources = {"manifest": str(mpath), "model": str(mpath.with_name(model["path"])),
               "people": str(mpath.with_name(people["path"]))}  # fmt: skip
    return ExportEstimate(dict(design), tuple(wanted), tuple(names), tuple(found), sources, withheld)


def intervals_withheld(
    chosen: Sequence[tuple[str, str]], settled: Collection[tuple[str, str]], kind: str
) -> str | None:
    """Why a live design's intervals do not hold yet, or ``None``: a focused round (``kind``) has no draw
    yet; a chosen pair without a settled people's grade (``settled``: not graded yet, or graded apart and
    undecided) leaves the design incomplete (a drawn pair's inverse-weighted correction, or a pair taken
    with certainty, is missing). ``judge status`` shows its intervals with this reason beside them while
    people work; an estimate from an export gives none."""
    if kind == "round":
        return (
            "a focused round has no draw yet: the intervals come with the final draw (`qrelkit judge plan` "
            "without --round)"
        )
    missing = [p for p in chosen if p not in settled]
    if missing:
        return (
            f"{len(missing)} of the {len(chosen)} chosen pairs have no settled people's grade (the first: "
            f"{missing[0][0]} {missing[0][1]}): the intervals hold once every one is judged and settled"
        )
    return None


def budget_pairs(text: str, pooled: int) -> int:
    """A budget as ``judge init --budget`` and ``judge plan --budget`` take it: a count of pairs or a share of
    the ``pooled`` pairs (:func:`qrelkit.budget.replay.parse_budgets`, one of them)."""
    from .replay import parse_budgets

    found = parse_budgets(text, pooled)
    if len(found) != 1:
        raise ValidationError("the live queue spends one budget", got=text, fix="pass one, e.g. --budget 500")
    return int(found[0].pairs)


def round_size(text: str, budget: int) -> int:
    """A focused round's size as ``judge plan --round`` takes it: a count of pairs, or a share of the
    ``budget`` (``5%``, the size of the replay's rounds: :data:`qrelkit.budget.active.ROUND`), rounded down;
    anything else, or less than one pair, is a one-line error naming the value."""
    from .replay import pairs_of

    item = str(text).strip()
    try:
        pairs, share = pairs_of(item, budget)
        if share is not None and not 0 < share <= 100:
            raise ValueError(item)
    except ValueError:
        raise ValidationError(
            f"a round of {text!r} is neither a count of pairs (50) nor a share of the budget (5%, at most 100%)",
            got=text,
            fix="pass e.g. --round 5% (a twentieth of the budget) or --round 50",
        ) from None
    if pairs < 1:
        raise ValidationError(
            f"a round of {text} is below one pair of the budget of {budget}",
            got=text,
            fix="pass a larger share or a count of at least 1",
        )
    return pairs


def check_order(order: str) -> None:
    """A strategy the live queue can plan (:data:`qrelkit.budget.live.PLANNED`), else a one-line error."""
    from .live import PLANNED

    if order not in PLANNED:
        raise ValidationError(f"--order {order!r} has no one-shot design for a live queue",
                              expected=", ".join(PLANNED), fix="--order active")  # fmt: skip


def chosen_pairs(built: ProjectProblem, selection: Selection) -> list[tuple[str, str, float]]:
    """``(query_id, doc_id, inclusion probability)`` of each pair of ``selection``, in its order."""
    return [
        (*built.problem.pairs[int(i)], float(p))
        for i, p in zip(selection.pairs, selection.probability, strict=True)
    ]
