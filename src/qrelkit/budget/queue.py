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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError
from .base import Estimate, Selection, State, strategy
from .problem import Problem, build_problem

__all__ = ["ProjectProblem", "estimate_project", "estimator_name", "plan_project", "project_problem"]


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
    material: Any, name: str, budget: int, seed: int, measure: str
) -> tuple[ProjectProblem, Selection]:
    """A one-shot design of the project's budget under strategy ``name``
    (:func:`qrelkit.budget.live.plan_queue`); a strategy needing the model's grade probabilities is refused
    without them."""
    from .live import plan_queue

    chosen = strategy(name)
    if chosen.needs_probabilities and material.probabilities is None:
        raise ValidationError(
            f"strategy {name!r} needs the model's grade probabilities, and model labeller {material.model!r} "
            "recorded none for some pooled pairs",
            fix="add the model with --logprobs N (or a program printing probabilities) and run it, or choose "
            "another --order",
        )
    built = project_problem(material, measure)
    return built, plan_queue(built.problem, built.state, name, budget, seed)


def estimate_project(
    material: Any, name: str, measure: str, design: Mapping[tuple[str, str], float], alpha: float = 0.05
) -> tuple[Estimate, ProjectProblem]:
    """Each pooled run's mean and interval under the design (its strategy's estimator, named)."""
    built = project_problem(material, measure, design)
    return strategy(name).estimate(built.problem, built.state, alpha), built


def estimator_name(name: str) -> str:
    """The estimator strategy ``name``'s estimate is valid under, as it names it (its module's ``ESTIMATOR``;
    the strategy's name when it has none)."""
    import importlib

    found = strategy(name)
    return str(getattr(importlib.import_module(type(found).__module__), "ESTIMATOR", found.name))
