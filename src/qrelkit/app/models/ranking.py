"""What a model labeller's ranking agreement is measured on: the adjudicated calibration grades (the truth),
the model's grades of the same pairs, and the runs the project holds.

:func:`ranking_inputs` only reads. The numbers are :func:`qrelkit.compare.decisions.decision_agreement`'s
(``judge model status`` computes them); a project holds runs when ``judge init --runs`` stored them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store import Store
from .gate import gate_material
from .register import load_model

__all__ = ["RankingInputs", "ranking_inputs"]


@dataclass(frozen=True, eq=False)
class RankingInputs:
    """The two sets of grades as Qrels over the same calibration pairs (``people``: adjudicated, or the
    people's grade where they all agree; ``model``: the model's), the project's runs, the pairs left out
    (disputed among the people, or not graded by the model) and, when nothing can be measured, why."""

    people: Any
    model: Any
    runs: tuple[Any, ...]
    left_out: int
    note: str | None = None


def ranking_inputs(store: Store, name: str) -> RankingInputs:
    """The model ``name``'s ranking-agreement inputs in the project of ``store`` (the module docstring)."""
    from qrelkit.data.values import Qrels

    from ..grades import stored_runs

    def read(conn: Any) -> tuple[dict[str, Any], bool]:
        has_runs = bool(conn.execute("SELECT EXISTS (SELECT 1 FROM run_rows)").fetchone()[0])
        return gate_material(conn, load_model(conn, name)), has_runs

    material, has_runs = store.read(read)
    people, mine = material["adjudicated"], material["model"]
    shared = sorted(set(people) & set(mine))
    left_out = material["calibration"] - len(shared)
    if not has_runs:
        note = "the project holds no runs (judge init --runs stores the pooled runs)"
        return RankingInputs(None, None, (), left_out, note)
    if not shared:
        note = "no calibration pair has both the people's settled grade and the model's"
        return RankingInputs(None, None, (), left_out, note)
    runs = tuple(stored_runs(store))
    if len(runs) < 2:
        return RankingInputs(
            None, None, runs, left_out, "the project holds one run: there is no order to agree on"
        )
    return RankingInputs(
        Qrels.from_grades({k: people[k] for k in shared}, name="people (adjudicated calibration)"),
        Qrels.from_grades({k: mine[k] for k in shared}, name=f"model {name}"),
        runs,
        left_out,
    )
