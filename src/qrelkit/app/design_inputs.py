"""What a judging-budget strategy may read of a project, as plain values (:class:`Material`): the pooled pairs,
a model labeller's grades and probabilities, the people's settled grades, the pooled runs. The command line
hands it to :mod:`qrelkit.budget.queue`; the design chosen from it is stored by :mod:`.design`."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from qrelkit.errors import ValidationError

from .store import Store

__all__ = ["Material", "planning_material"]


@dataclass(frozen=True)
class Material:
    """What a strategy may read of a project (:func:`planning_material`), as plain values."""

    pairs: tuple[tuple[str, str], ...]  # the pooled pairs to judge (not judged before pooling)
    model: str  # the model labeller whose grades the strategy reads
    model_grades: dict[tuple[str, str], int]
    probabilities: dict[tuple[str, str], tuple[float, ...]] | None  # over 0..max(scale), or None
    people: dict[tuple[str, str], int]  # the people's settled grades (agreed, adjudicated, single)
    runs: list[Any]  # the runs the project pooled (qrelkit Runs)
    scale: tuple[int, ...]
    #: pairs people graded or marked (under the rubric in force) without a settled grade: two people apart, or
    #: marked unsure, waiting for a decision
    disputed: frozenset[tuple[str, str]] = frozenset()
    #: pairs people will grade whatever a design chooses (:func:`.design.held_pairs`), without a settled grade
    held: frozenset[tuple[str, str]] = frozenset()

    @property
    def certain(self) -> frozenset[tuple[str, str]]:
        """The pairs people settle whatever a design chooses: a design takes them with certainty."""
        return self.disputed | self.held


def planning_material(
    store: Store, model: str | None = None, people: dict[tuple[str, str], int] | None = None
) -> Material:
    """The project's pooled pairs, a model labeller's grades (``model``, else the one model labeller that
    graded every pooled pair; never a retired one) and their probabilities when every pair carries them,
    the people's settled grades (the pairs people graded without settling, and those they will grade
    whatever a design chooses), and the pooled runs.
    Refused, with the reason, without a model labeller's grades of every pooled pair or without runs.
    ``people``: the people's settled grades under the rubric in force when the caller has them already
    (:func:`.grades.final_grades` with ``people_only``), else merged here."""
    from .design import held_pairs, people_graded_pairs
    from .grades import final_grades, labeller_grades, stored_runs
    from .models.access import role_of
    from .models.probabilities import labeller_probabilities
    from .models.register import model_labellers
    from .phases import phase_of, rubric_by_hash

    def load(conn: sqlite3.Connection) -> tuple[Any, ...]:
        rubric_hash = phase_of(conn).rubric_hash
        pairs = tuple(sorted((q, d) for q, d in conn.execute("SELECT query_id, doc_id FROM pairs")))
        graded = {m.name: labeller_grades(conn, m.name, rubric_hash=rubric_hash) for m in model_labellers(conn)
                  if role_of(conn, m.user_id) != "retired"}  # fmt: skip
        people_graded = set(people_graded_pairs(conn, rubric_hash=rubric_hash, marked=True))
        return (
            pairs,
            graded,
            rubric_by_hash(conn, rubric_hash).scale,
            rubric_hash,
            people_graded,
            held_pairs(conn, rubric_hash),
        )

    pairs, graded, scale, rubric_hash, people_graded, held = store.read(load)
    why = "the live queue chooses the pairs people judge from a model labeller's grades of every pooled pair"
    if not graded:
        raise ValidationError(f"{why}, and the project has no model labeller",
                              fix="add one (`qrelkit judge model add DB NAME ...`), run it on the whole pool "
                              "(`qrelkit judge model run`), then `qrelkit judge plan DB`")  # fmt: skip
    if model is None:
        complete = [n for n, g in graded.items() if all(p in g for p in pairs)]
        if len(complete) > 1:
            raise ValidationError(f"several model labellers graded every pooled pair: {', '.join(complete)}",
                                  fix="name the one the strategy reads: --model NAME")  # fmt: skip
        model = complete[0] if complete else max(graded, key=lambda n: len(graded[n]))
    if model not in graded:
        raise ValidationError(
            f"no model labeller {model!r} in this project", expected=", ".join(sorted(graded))
        )
    missing = [p for p in pairs if p not in graded[model]]
    if missing:
        raise ValidationError(
            f"{why}; model labeller {model!r} graded {len(pairs) - len(missing)} of the {len(pairs)} pooled pairs "
            f"(the first without a grade: {missing[0][0]} {missing[0][1]})",
            fix=f"run it on the rest (`qrelkit judge model run DB {model}`; its gate must pass, or make it a "
            "predictor), then plan again",
        )
    runs = stored_runs(store)
    if not runs:
        raise ValidationError("the live queue weighs pairs by the pooled runs' rankings, and the project holds no runs",
                              fix="create the project with `qrelkit judge init ... --runs RUN ...`")  # fmt: skip
    found = store.read(lambda c: labeller_probabilities(c, model, rubric_hash=rubric_hash))
    probabilities = None
    if min(scale) >= 0 and all(p in found for p in pairs):
        top = max(scale)
        probabilities = {p: tuple(found[p].get(g, 0.0) for g in range(top + 1)) for p in pairs}
    if people is None:
        people = final_grades(store, rubric_hash=rubric_hash, people_only=True)[0]
    disputed = frozenset(p for p in people_graded if p not in people)
    waiting = frozenset(p for p in held if p not in people)
    return Material(pairs, model, dict(graded[model]), probabilities, {k: int(v) for k, v in people.items()},
                    runs, tuple(scale), disputed, waiting)  # fmt: skip
