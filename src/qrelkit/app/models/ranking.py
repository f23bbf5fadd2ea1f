"""What a model labeller's ranking agreement is measured on: the adjudicated calibration grades (the truth),
the model's grades of the same pairs, and the runs of the project.

The runs are those ``judge init --runs`` stored, whole. Without them, the pool's own record serves: each
pooled pair keeps the rank every run gave it (``pool_provenance``), so each run's ranking of a calibration
query is known down to the pool's depth, in the pool's order of tied scores (by document id descending, as
trec_eval). That is each run's whole top ``k`` when the pool reaches rank ``k``; a measure with a deeper
cutoff, or a calibration query with pairs judged before the pool (kept without their ranks), is not
measured, and the note says why. The pool keeps ranks, not scores, so which documents a run tied is not
known: pooled runs are measured with ties broken as the pool broke them, and the measure says so
(``nDCG(ties=docid_desc)@10``, :attr:`RankingInputs.measure`), where stored runs are measured as ``qrelkit
eval`` measures them (``nDCG@10``: tied documents averaged over their orders). :func:`ranking_inputs` only
reads; the numbers are :func:`qrelkit.compare.decisions.decision_agreement`'s (``judge model status``
computes them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..store import Store
from .gate import gate_material
from .register import load_model

__all__ = ["RankingInputs", "ranking_inputs"]

#: Where the runs came from.
STORED, POOLED = (
    "the runs stored by judge init --runs",
    "the pooled runs' rankings (the pool's record of ranks: tied scores in the pool's order, doc id descending)",
)


@dataclass(frozen=True, eq=False)
class RankingInputs:
    """The two sets of grades as Qrels over the same calibration pairs (``people``: adjudicated, or the
    people's grade where they all agree; ``model``: the model's), the runs and where they came from, the
    pairs left out (disputed among the people, or not graded by the model), when nothing can be measured,
    why, and the measure the runs are ordered by (with pooled runs, ties broken as the pool broke them)."""

    people: Any
    model: Any
    runs: tuple[Any, ...]
    left_out: int
    note: str | None = None
    runs_from: str | None = None
    measure: str = "nDCG@10"


def _pooled_runs(conn: Any, queries: set[str], depth: int) -> tuple[list[Any], str | None]:
    """Each run's ranking of the calibration ``queries`` from the pool's record, or why it cannot be used."""
    import polars as pl

    from qrelkit.data.values import run_from_frame

    rows = conn.execute(
        "SELECT p.query_id, p.doc_id, v.runs FROM pool_provenance v JOIN pairs p USING (pair_id)"
    ).fetchall()
    reached = 0
    by_run: dict[str, list[tuple[str, str, float]]] = {}
    for q, d, runs in rows:
        for run, rank in json.loads(runs).items():
            reached = max(reached, int(rank))
            if q in queries:
                by_run.setdefault(run, []).append((q, d, -float(rank)))
    if not by_run:
        return (
            [],
            "the project holds no runs and its pool recorded no run's ranks (judge init --runs stores runs)",
        )
    if reached < depth:
        return [], (f"the pool's record of ranks reaches rank {reached}, short of the measure's cutoff {depth} "
                    "(judge init --runs stores whole runs)")  # fmt: skip
    before = [q for (q,) in conn.execute("SELECT DISTINCT query_id FROM prejudged") if q in queries]
    if before:
        return [], (f"calibration query {sorted(before)[0]} has pairs judged before the pool, kept without "
                    "their ranks (judge init --runs stores whole runs)")  # fmt: skip
    runs = [
        run_from_frame(pl.DataFrame(v, schema=["query_id", "doc_id", "score"], orient="row"), name=k)
        for k, v in sorted(by_run.items())
    ]
    return runs, None


def ranking_inputs(store: Store, name: str, depth: int = 10) -> RankingInputs:
    """The model ``name``'s ranking-agreement inputs in the project of ``store`` (the module docstring);
    ``depth``: the cutoff of the measure the runs are ordered by (nDCG@10: 10)."""
    from qrelkit.data.values import Qrels

    from ..grades import stored_runs

    def read(conn: Any) -> tuple[dict[str, Any], bool, list[Any], str | None]:
        material = gate_material(conn, load_model(conn, name))
        if conn.execute("SELECT EXISTS (SELECT 1 FROM run_rows)").fetchone()[0]:
            return material, True, [], None
        queries = {q for q, _ in material["adjudicated"]}
        return material, False, *_pooled_runs(conn, queries, depth)

    material, stored, runs, why = store.read(read)
    people, mine = material["adjudicated"], material["model"]
    shared = sorted(set(people) & set(mine))
    left_out = material["calibration"] - len(shared)
    if not shared:
        note = "no calibration pair has both the people's settled grade and the model's"
        return RankingInputs(None, None, (), left_out, note)
    if stored:
        runs = list(stored_runs(store))
    if why is not None:
        return RankingInputs(None, None, (), left_out, why)
    source = STORED if stored else POOLED
    measure = f"nDCG@{depth}" if stored else f"nDCG(ties=docid_desc)@{depth}"
    if len(runs) < 2:
        note = f"{source}: one run, so there is no order to agree on"
        return RankingInputs(None, None, tuple(runs), left_out, note, source, measure)
    return RankingInputs(
        Qrels.from_grades({k: people[k] for k in shared}, name="people (adjudicated calibration)"),
        Qrels.from_grades({k: mine[k] for k in shared}, name=f"model {name}"),
        tuple(runs),
        left_out,
        runs_from=source,
        measure=measure,
    )
