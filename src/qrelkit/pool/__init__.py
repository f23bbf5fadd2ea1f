"""Depth-k pooling: which (query, document) pairs to judge, who judges them, and what it costs.

The pool of a query is the union of the top ``depth`` documents of every run. Runs are ranked the way
trec_eval ranks them: by score descending, ties broken by doc id descending (the rank column of the file
is ignored). Every pooled pair keeps its provenance (the rank at which each run returned it), so the
judging app can show why a document is there and the report can say how much each system contributed.

Counts and the cost estimate
----------------------------
``pairs_to_judge``
    pooled pairs not already judged in the given qrels (a negative grade means "in the pool, unjudged",
    as in trec_eval, so such a pair is to judge).
``calibration_pairs``
    the pairs to judge in the calibration queries; each is judged by ``calibration_labellers`` labellers
    (two by default), so it is counted ``calibration_labellers - 1`` more times.
``judgments = pairs_to_judge + (calibration_labellers - 1) * calibration_pairs`` and
``hours = judgments * seconds_per_judgment / 3600``.

Overlap between systems is measured on the pooled (query, document) pairs of all queries together: the
Jaccard index ``|A & B| / |A | B|`` of each pair of runs, and the number of pairs only one run contributed.

Calibration queries are drawn with ``numpy.random.default_rng(seed).choice`` without replacement from the
pooled queries that have pairs to judge, in sorted id order, so the same pool and seed give the same
sample. The default is :data:`DEFAULT_CALIBRATION` (30) queries, about what a kappa interval narrow enough
to gate on needs; a pool with fewer queries gives all of them, and :func:`calibration_notes` says so (and
warns under :data:`FEW_CALIBRATION` queries) in ``Pool.notes``, which the command prints. With labellers, each calibration query goes to ``calibration_labellers`` labellers (two by default:
the pairs of labellers taken in turn, ``(a, b), (a, c), (b, c), ...``; :func:`plan_assignments`); every other query goes whole to one labeller, largest query first,
each to the labeller with the fewest pairs so far (calibration pairs included; ties to the earlier
labeller), which balances the pair counts.

A run that arrives after the pool closed
----------------------------------------
:func:`extend_pool` is the one rule of which pairs new runs add: each new run's top ``depth`` documents
per query (ranked by :data:`TIE_RULE`), less every pair already judged (:class:`Judged`: the pairs of a
final qrels file with a grade >= 0, or every pair of a judging project's pool, graded or not, and its
pairs judged before pooling). Pairs of a query the judgments never held are left out, with a note
saying how many: such a query was pooled from no other run, so judging one run's documents for it would
measure that run alone; pool every run for it instead. A run whose name a project already pooled is
refused (:attr:`Judged.runs`), whatever the depth: its pairs are in the project, and its rows stored there
are the ones the adjudication queue reads. The extension is a :class:`Pool` with no calibration, so its
cost is its pairs (``qrelkit judge extend`` adds them to a project only while judging is open under a
rubric whose gate passed, was overridden or is not measured).

Reusability
-----------
:func:`leave_one_out` is the classic test of whether judgments are reusable for a run that took no part
in the pool (Zobel, 1998): for each run, the pairs only it contributed to the depth-``depth`` pool of the
runs given are removed from the qrels (treated unjudged), and the run is evaluated against that reduced
qrels and against the full one, by :func:`qrelkit.evaluation.core.evaluate`. Its rank among the runs is
counted with the other runs at their full-pool values (1 is the best; ties share the better rank), and
Kendall's tau (tau-b, ``scipy.stats.kendalltau``) compares the ranking of the runs by their full-pool
values with the ranking by their leave-one-out values.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..data.values import Qrels, Run, check_run_names
from ..errors import QrelkitError, ValidationError
from ..provenance import json_number

__all__ = [
    "COST_FORMULA",
    "DEFAULT_CALIBRATION",
    "FEW_CALIBRATION",
    "TIE_RULE",
    "Judged",
    "LeaveOneOut",
    "Pool",
    "build_pool",
    "calibration_notes",
    "check_calibration_labellers",
    "draw_calibration",
    "extend_pool",
    "judged_of_qrels",
    "leave_one_out",
    "meta_path",
    "plan_assignments",
    "rank_run",
    "recorded_draw",
]

DEFAULT_CALIBRATION = 30
"""Calibration queries drawn by default (``qrelkit pool``, :func:`build_pool`, ``qrelkit judge revise``)."""
FEW_CALIBRATION = 10
"""Fewer calibration queries than this get a warning: the kappa interval is too wide to gate on."""

TIE_RULE = "score descending, ties by doc_id descending (as trec_eval; the run file's rank column is ignored)"
COST_FORMULA = (
    "judgments = pairs_to_judge + (calibration_labellers - 1) * calibration_pairs (each calibration pair "
    "is judged by calibration_labellers labellers, 2 by default); "
    "hours = judgments * seconds_per_judgment / 3600"
)


def rank_run(run: Run) -> pl.DataFrame:
    """The run's rows with a 1-based ``rank`` per query under :data:`TIE_RULE`: query_id, doc_id, rank."""
    return (
        run.frame.select("query_id", "doc_id", "score")
        .sort(["query_id", "score", "doc_id"], descending=[False, True, True])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank"))
        .select("query_id", "doc_id", "rank")
    )


def meta_path(pool_path: str | Path) -> Path:
    """The sidecar of a pool file: ``pool.jsonl`` -> ``pool.meta.json`` (same stem)."""
    path = Path(pool_path)
    return path.with_name(f"{path.stem}.meta.json")


@dataclass(frozen=True, eq=False)
class Pool:
    """A pool: one row per pooled pair, and the statistics written to the sidecar.

    ``pairs`` has columns query_id, doc_id, runs (list of run names, in the order the runs were given),
    ranks (the matching ranks), best_rank, judged, calibration and, when labellers were given, labellers.
    It is sorted by query_id, then doc_id.
    """

    pairs: pl.DataFrame
    depth: int
    runs: tuple[Run, ...]
    seconds_per_judgment: float
    calibration_queries: tuple[str, ...] = ()
    seed: int | None = None
    labellers: tuple[str, ...] = ()
    qrels: Qrels | None = None
    notes: tuple[str, ...] = ()
    """Warnings for the command to print (e.g. fewer calibration queries than asked for)."""
    calibration_labellers: int = 2
    """Labellers per calibration query (:func:`plan_assignments`)."""
    extends: Mapping[str, Any] | None = None
    """For an extension (:func:`extend_pool`): what it extends (kind, source, pairs and queries judged) and
    the pairs left out because their query was never judged."""

    # -- statistics ----------------------------------------------------------------------------------------

    @property
    def run_names(self) -> list[str]:
        return [r.name for r in self.runs]

    def sizes(self) -> pl.DataFrame:
        """Per query: pooled, judged (already in the qrels) and to_judge pair counts, by query id."""
        return (
            self.pairs.group_by("query_id")
            .agg(
                pl.len().alias("pooled"),
                pl.col("judged").sum().cast(pl.Int64).alias("judged"),
            )
            .with_columns((pl.col("pooled") - pl.col("judged")).alias("to_judge"))
            .sort("query_id")
        )

    def overlap(self) -> dict[str, Any]:
        """Pairwise Jaccard of the runs' pooled pairs, and the pairs each run alone contributed."""
        names = self.run_names
        members = self.pairs.select(
            [pl.col("runs").list.contains(pl.lit(name)).alias(f"in{i}") for i, name in enumerate(names)]
        )
        sizes = members.sum().row(0)
        alone = self.pairs.filter(pl.col("runs").list.len() == 1).get_column("runs").list.first()
        unique = {name: 0 for name in names}
        unique.update(alone.value_counts().iter_rows())
        pairs = []
        for i, j in itertools.combinations(range(len(names)), 2):
            a, b = members.get_column(f"in{i}"), members.get_column(f"in{j}")
            inter, union = int((a & b).sum()), int((a | b).sum())
            pairs.append(
                {
                    "a": names[i],
                    "b": names[j],
                    "intersection": inter,
                    "union": union,
                    "jaccard": inter / union if union else math.nan,
                }
            )
        return {
            "measured_on": "pooled (query_id, doc_id) pairs of all queries together",
            "pooled_per_run": {name: int(n) for name, n in zip(names, sizes, strict=True)},
            "unique_per_run": {name: int(unique[name]) for name in names},
            "jaccard": pairs,
        }

    def counts(self) -> dict[str, int]:
        to_judge = ~pl.col("judged")
        row = self.pairs.select(
            pl.col("query_id").n_unique().alias("queries"),
            pl.len().alias("pooled_pairs"),
            pl.col("judged").sum().alias("already_judged"),
            to_judge.sum().alias("pairs_to_judge"),
            (to_judge & pl.col("calibration")).sum().alias("calibration_pairs"),
        ).row(0, named=True)
        out = {k: int(v or 0) for k, v in row.items()}
        out["calibration_queries"] = len(self.calibration_queries)
        out["judgments"] = out["pairs_to_judge"] + (self.calibration_labellers - 1) * out["calibration_pairs"]
        return out

    def cost(self) -> dict[str, Any]:
        c = self.counts()
        seconds = c["judgments"] * self.seconds_per_judgment
        return {
            "pairs_to_judge": c["pairs_to_judge"],
            "calibration_pairs": c["calibration_pairs"],
            "calibration_labellers": self.calibration_labellers,
            "judgments": c["judgments"],
            "seconds_per_judgment": self.seconds_per_judgment,
            "hours": seconds / 3600.0,
            "formula": COST_FORMULA,
        }

    def labeller_counts(self) -> dict[str, int]:
        """Pairs to judge per labeller (a calibration pair counts once for each of its labellers)."""
        if not self.labellers:
            return {}
        counts = {name: 0 for name in self.labellers}
        exploded = self.pairs.filter(~pl.col("judged")).select(pl.col("labellers").explode()).drop_nulls()
        counts.update(exploded.get_column("labellers").value_counts().iter_rows())
        return {name: int(counts[name]) for name in self.labellers}

    def meta(self) -> dict[str, Any]:
        """Everything the sidecar ``.meta.json`` holds."""
        sizes = self.sizes()
        per_query = {
            q: {"pooled": p, "judged": j, "to_judge": t}
            for q, p, j, t in sizes.select("query_id", "pooled", "judged", "to_judge").iter_rows()
        }
        pooled = sizes.get_column("pooled")
        qrels: dict[str, Any] | None = None
        if self.qrels is not None:
            qrels = {"name": self.qrels.name, "fingerprint": self.qrels.fingerprint.to_dict()}
            if "dataset" in self.qrels.meta:  # named by dataset (irds:ID): the id, version, files read
                qrels["dataset"] = self.qrels.meta["dataset"]
        from ..provenance import header

        return {
            "format": "qrelkit pool 2",
            **header(),
            "depth": self.depth,
            "tie_rule": TIE_RULE,
            "runs": [
                {"name": r.name, "source": r.meta.get("source"), "fingerprint": r.fingerprint.to_dict()}
                for r in self.runs
            ],
            "existing_qrels": qrels,
            "counts": self.counts(),
            "pool_size": {
                "mean": float(pooled.mean()) if len(pooled) else 0.0,
                "min": int(pooled.min()) if len(pooled) else 0,
                "max": int(pooled.max()) if len(pooled) else 0,
                "per_query": per_query,
            },
            "overlap": _json_safe(self.overlap()),
            "cost": self.cost(),
            "calibration": {
                "queries": list(self.calibration_queries),
                "seed": self.seed,
                "labellers_per_query": self.calibration_labellers,
                "method": "numpy.random.default_rng(seed).choice without replacement over the sorted "
                "ids of the queries with pairs to judge",
                "notes": list(self.notes),
            },
            "labellers": list(self.labellers),
            "pairs_per_labeller": self.labeller_counts(),
            **({} if self.extends is None else {"extends": dict(self.extends)}),
        }

    # -- output --------------------------------------------------------------------------------------------

    def jsonl_lines(self) -> list[str]:
        """One JSON object per pooled pair, in the documented key order."""
        cols = ["query_id", "doc_id", "runs", "ranks", "best_rank", "judged", "calibration"]
        with_labellers = "labellers" in self.pairs.columns
        if with_labellers:
            cols.append("labellers")
        lines = []
        for row in self.pairs.select(cols).iter_rows():
            obj: dict[str, Any] = {
                "query_id": row[0],
                "doc_id": row[1],
                "runs": dict(zip(row[2], row[3], strict=True)),
                "best_rank": row[4],
                "judged": row[5],
                "calibration": row[6],
            }
            if with_labellers:
                obj["labellers"] = list(row[7])
            lines.append(json.dumps(obj, ensure_ascii=False))
        return lines

    def write(self, path: str | Path) -> Path:
        """Write ``pool.jsonl`` and its ``pool.meta.json`` sidecar; return the sidecar's path."""
        path = Path(path)
        lines = self.jsonl_lines()
        side = meta_path(path)
        from ..formats.outputs import write_outputs

        write_outputs(
            [
                (path, "\n".join(lines) + ("\n" if lines else "")),
                (side, json.dumps(self.meta(), indent=2, ensure_ascii=False) + "\n"),
            ]
        )
        return side


def _json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    if isinstance(x, float):
        return json_number(x)
    return x


def _check_runs(runs: Sequence[Run]) -> tuple[Run, ...]:
    runs = tuple(runs)
    if not runs:
        raise ValidationError("no runs to pool", fix="pass at least one run file")
    for run in runs:
        if not isinstance(run, Run):
            raise ValidationError(
                f"expected a Run, got {type(run).__name__}", fix="read runs with qrelkit.read_run"
            )
    check_run_names([r.name for r in runs], [str(r.meta.get("source", "")) for r in runs])
    return runs


def _union(runs: tuple[Run, ...], depth: int) -> pl.DataFrame:
    tops = [
        rank_run(run)
        .filter(pl.col("rank") <= depth)
        .with_columns(pl.lit(i, dtype=pl.Int64).alias("run_index"))
        for i, run in enumerate(runs)
    ]
    names = pl.Series("names", [r.name for r in runs], dtype=pl.String)
    return (
        pl.concat(tops)
        .sort(["query_id", "doc_id", "run_index"])
        .group_by(["query_id", "doc_id"], maintain_order=True)
        .agg(
            pl.col("run_index").alias("run_index"),
            pl.col("rank").alias("ranks"),
            pl.col("rank").min().alias("best_rank"),
        )
        .with_columns(
            pl.col("run_index")
            .list.eval(pl.element().replace_strict(list(range(len(runs))), names))
            .alias("runs")
        )
        .select("query_id", "doc_id", "runs", "ranks", "best_rank")
    )


def draw_calibration(candidates: Sequence[str], n: int, seed: int) -> tuple[str, ...]:
    """The calibration queries: ``n`` of ``candidates`` drawn by the one rule every caller uses.

    ``numpy.random.default_rng(seed).choice`` without replacement over the candidates in sorted id
    order; returned sorted. ``qrelkit pool``, ``qrelkit judge init`` and ``qrelkit judge revise`` all call
    this, so the same queries and seed give the same sample. Asking for more queries than there are
    gives all of them (:func:`calibration_notes` says so).
    """
    candidates = sorted(candidates)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError("seed must be a non-negative integer", got=seed, fix="e.g. --seed 0")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValidationError("the number of calibration queries must be a non-negative integer", got=n,
                              fix="e.g. --calibration 30")  # fmt: skip
    n = min(n, len(candidates))
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(candidates), size=n, replace=False) if n else np.array([], dtype=np.int64)
    return tuple(sorted(candidates[int(i)] for i in picked))


#: The largest pool sidecar read back (``judge init --pool`` reads its calibration draw).
MAX_SIDECAR_BYTES = 64 << 20


def recorded_draw(
    pool_path: str | Path, marked: Sequence[str], candidates: Sequence[str]
) -> tuple[int | None, str]:
    """The seed of the calibration draw ``qrelkit pool`` recorded in ``pool_path``'s sidecar, when the
    queries the pool marks (``marked``) are exactly :func:`draw_calibration` of ``candidates`` (the queries
    with pairs to judge) with that seed: ``(seed, "")``; else ``(None, why)``. The draw is recomputed, so
    a sidecar edited by hand or belonging to another pool is not believed."""
    side = meta_path(pool_path)
    if not side.is_file():
        return None, f"the pool's sidecar {side.name} is not beside it"
    from ..formats.inputs import read_input

    try:
        meta = json.loads(read_input(side, "pool sidecar", kind="file", limit=MAX_SIDECAR_BYTES))
        seed = meta["calibration"]["seed"]
    except (ValueError, KeyError, TypeError, QrelkitError):
        return None, f"the pool's sidecar {side.name} records no calibration draw"
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return None, f"the pool's sidecar {side.name} records no calibration seed"
    if list(draw_calibration(candidates, len(set(marked)), seed)) != sorted(set(marked)):
        return None, (f"the queries the pool marks are not the draw its sidecar {side.name} records "
                      f"(seed {seed})")  # fmt: skip
    return seed, ""


def calibration_notes(asked: int, available: int) -> tuple[str, ...]:
    """What to tell the user about a calibration draw of ``asked`` queries among ``available``.

    More asked than available: all are taken. Fewer than :data:`FEW_CALIBRATION` taken (but some): the
    kappa interval will be wide, so the gate is hard to pass on merit.
    """
    notes = []
    drawn = min(asked, available)
    if asked > available:
        notes.append(
            f"asked for {asked} calibration queries, but only {available} queries have pairs to judge: all "
            f"{available} are calibration queries"
        )
    if 0 < drawn < FEW_CALIBRATION:
        notes.append(
            f"only {drawn} calibration quer{'y' if drawn == 1 else 'ies'}: the kappa interval will be wide "
            f"and the gate hard to pass; {DEFAULT_CALIBRATION} queries is the usual sample"
        )
    return tuple(notes)


def check_calibration_labellers(n: int, labellers: Sequence[str]) -> int:
    """``n`` labellers per calibration query: at least two, at most as many as there are labellers."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2 or (labellers and n > len(labellers)):
        raise ValidationError(
            "each calibration query needs at least two labellers, and no more than there are",
            got=n,
            expected=f"2 to {len(labellers)}" if labellers else "2 or more",
            fix="pass --calibration-labellers between 2 and the number of --labellers",
        )
    return n


def plan_assignments(
    to_judge: Mapping[str, int],
    calibration: Sequence[str],
    labellers: Sequence[str],
    calibration_labellers: int = 2,
) -> dict[str, list[str]]:
    """Query id -> its labellers (``calibration_labellers`` for calibration queries, one otherwise), the
    one assignment rule.

    ``to_judge`` maps each query to its number of pairs to judge. Calibration queries (in sorted order)
    take the groups of ``calibration_labellers`` labellers in turn (``itertools.combinations`` order: for
    two, ``(a, b), (a, c), (b, c), ...``; for as many as there are labellers, every labeller judges every
    calibration query); every other query goes whole to one labeller, largest query first, each to the
    labeller with the fewest pairs so far (calibration pairs included; ties to the earlier labeller).
    """
    calibration = tuple(sorted(calibration))
    labellers = tuple(labellers)
    load = {name: 0 for name in labellers}
    plan: dict[str, list[str]] = {}
    size = check_calibration_labellers(calibration_labellers, labellers) if calibration else 2
    duos = list(itertools.combinations(labellers, size))
    for i, q in enumerate(calibration):
        plan[q] = list(duos[i % len(duos)])
        for name in plan[q]:
            load[name] += to_judge.get(q, 0)
    rest = sorted((q for q in to_judge if q not in plan), key=lambda q: (-to_judge[q], q))
    order = {name: i for i, name in enumerate(labellers)}
    for q in rest:
        name = min(labellers, key=lambda n: (load[n], order[n]))
        plan[q] = [name]
        load[name] += to_judge[q]
    return plan


def build_pool(
    runs: Sequence[Run],
    depth: int = 20,
    *,
    qrels: Qrels | None = None,
    seconds_per_judgment: float = 30.0,
    calibration: int = DEFAULT_CALIBRATION,
    seed: int = 0,
    labellers: Sequence[str] | None = None,
    calibration_labellers: int = 2,
) -> Pool:
    """Pool the top ``depth`` documents of each run per query (module docstring for every rule)."""
    runs = _check_runs(runs)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValidationError("depth must be a positive integer", got=depth, fix="pass depth=20")
    if not isinstance(seconds_per_judgment, int | float) or not seconds_per_judgment > 0:
        raise ValidationError(
            "seconds per judgment must be a positive number", got=seconds_per_judgment, fix="e.g. 30"
        )
    if isinstance(calibration, bool) or not isinstance(calibration, int) or calibration < 0:
        raise ValidationError("calibration must be a non-negative integer", got=calibration, fix="e.g. 30")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError("seed must be a non-negative integer", got=seed, fix="e.g. --seed 0")
    names = tuple(labellers or ())
    if any(not n or n != n.strip() for n in names) or len(set(names)) != len(names):
        raise ValidationError(
            "labeller names must be distinct and non-empty",
            got=",".join(names),
            expected="a comma-separated list such as alice,bob,carol",
            fix="remove the repeated or empty name",
        )
    if names and calibration and len(names) < 2:
        raise ValidationError(
            "calibration queries are judged by two labellers, but only one labeller was given",
            got=",".join(names),
            expected="two or more labellers",
            fix="name a second labeller with --labellers, or pass --calibration 0 (agreement is then not "
            "measured: `qrelkit judge init --no-calibration`)",
        )

    if names and calibration:
        check_calibration_labellers(calibration_labellers, names)
    elif isinstance(calibration_labellers, bool) or not isinstance(calibration_labellers, int):
        check_calibration_labellers(calibration_labellers, ())
    pairs = _union(runs, depth)
    if qrels is not None:
        judged = (
            qrels.frame.filter(pl.col("grade") >= 0)
            .select("query_id", "doc_id")
            .unique()
            .with_columns(pl.lit(True).alias("judged"))
        )
        pairs = pairs.join(judged, on=["query_id", "doc_id"], how="left").with_columns(
            pl.col("judged").fill_null(False)
        )
    else:
        pairs = pairs.with_columns(pl.lit(False).alias("judged"))
    pairs = pairs.sort(["query_id", "doc_id"])

    to_judge = dict(
        pairs.filter(~pl.col("judged")).group_by("query_id").agg(pl.len()).sort("query_id").iter_rows()
    )
    calib = draw_calibration(list(to_judge), calibration, seed) if calibration else ()
    notes = calibration_notes(calibration, len(to_judge)) if calibration else ()
    pairs = pairs.with_columns(pl.col("query_id").is_in(list(calib)).alias("calibration"))
    if names:
        plan = plan_assignments(to_judge, calib, names, calibration_labellers)
        plan_frame = pl.DataFrame(
            {"query_id": list(plan), "labellers": list(plan.values())},
            schema={"query_id": pl.String, "labellers": pl.List(pl.String)},
        )
        pairs = pairs.join(plan_frame, on="query_id", how="left").with_columns(
            pl.when(pl.col("judged"))
            .then(pl.lit([], dtype=pl.List(pl.String)))
            .otherwise(pl.col("labellers").fill_null(pl.lit([], dtype=pl.List(pl.String))))
            .alias("labellers")
        )
        pairs = pairs.sort(["query_id", "doc_id"])
    return Pool(
        pairs=pairs,
        depth=depth,
        runs=runs,
        seconds_per_judgment=float(seconds_per_judgment),
        calibration_queries=calib,
        seed=seed if calibration else None,
        labellers=names,
        qrels=qrels,
        notes=notes,
        calibration_labellers=calibration_labellers,
    )


# -- a run that arrives after the pool closed ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Judged:
    """What an extension is measured against: the pairs not to judge again and the queries judged.

    ``pairs`` has columns query_id, doc_id (each pair once); ``source`` says where they come from (``kind``
    ``qrels`` or ``project``, ``path``, for qrels the fingerprint, for a project the phase it was read in),
    for the pool's sidecar. ``runs``: the names of the runs already pooled into it (a project's; a qrels
    file names none), which :func:`extend_pool` refuses.
    """

    pairs: pl.DataFrame
    queries: frozenset[str]
    source: Mapping[str, Any]
    runs: frozenset[str] = frozenset()


def judged_of_qrels(qrels: Qrels) -> Judged:
    """A final qrels file as :class:`Judged`: its pairs with a grade >= 0 (a negative grade is "in the pool,
    unjudged", as :func:`build_pool` reads it) and every query it names."""
    frame = qrels.frame
    pairs = frame.filter(pl.col("grade") >= 0).select("query_id", "doc_id").unique()
    queries = frozenset(frame.get_column("query_id").unique().to_list())
    source = {"kind": "qrels", "name": qrels.name, "fingerprint": qrels.fingerprint.to_dict()}
    return Judged(pairs, queries, source)


def extend_pool(
    runs: Sequence[Run], depth: int = 20, *, judged: Judged, seconds_per_judgment: float = 30.0
) -> Pool:
    """The pairs ``runs`` bring within ``depth`` that ``judged`` does not hold (module docstring): a
    :class:`Pool` of those pairs alone, with no calibration, its provenance naming the new runs."""
    runs = _check_runs(runs)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValidationError("depth must be a positive integer", got=depth, fix="pass depth=20")
    for run in runs:
        if run.name in judged.runs:
            raise ValidationError(
                f"a run named {run.name!r} was pooled into this {judged.source.get('kind', 'project')} "
                "already: its pairs are in it",
                source=str(run.meta.get("source", "")),
                fix="extend with a run it has not pooled (its tag names it)",
            )
    if not isinstance(seconds_per_judgment, int | float) or not seconds_per_judgment > 0:
        raise ValidationError(
            "seconds per judgment must be a positive number", got=seconds_per_judgment, fix="e.g. 30"
        )
    known = judged.pairs.select("query_id", "doc_id").unique()
    brought = _union(runs, depth)
    fresh = brought.join(known, on=["query_id", "doc_id"], how="anti")
    in_known = pl.col("query_id").is_in(sorted(judged.queries))
    outside = fresh.filter(~in_known)
    pairs = (
        fresh.filter(in_known)
        .with_columns(pl.lit(False).alias("judged"), pl.lit(False).alias("calibration"))
        .sort(["query_id", "doc_id"])
    )
    left_out = sorted(outside.get_column("query_id").unique().to_list())
    notes: tuple[str, ...] = ()
    if left_out:
        shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
        notes = (
            f"{outside.height} pair(s) of {len(left_out)} quer{'y' if len(left_out) == 1 else 'ies'} the "
            f"judgments never held left out ({shown}): no other run was pooled for them; pool every run "
            "for a new query instead",
        )
    extends = {
        **dict(judged.source),
        "judged_pairs": known.height,
        "judged_queries": len(judged.queries),
        "pairs_in_depth": brought.height,
        "already_judged": brought.height - fresh.height,
        "left_out_queries": left_out,
        "left_out_pairs": outside.height,
    }
    return Pool(
        pairs=pairs,
        depth=depth,
        runs=runs,
        seconds_per_judgment=float(seconds_per_judgment),
        notes=notes,
        extends=extends,
    )


# -- reusability ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaveOneOut:
    """:func:`leave_one_out`'s answer. ``rows``: one per (run, measure), in the runs' order, each with the
    keys run, measure, full, left_out, change, rank_full, rank_left_out, removed_pairs (judged pairs only
    that run contributed, removed), removed_relevant (those with a grade > 0), queries_full,
    queries_left_out. ``tau``: per measure, Kendall's tau-b of the two rankings (``None`` under two runs or
    when a ranking is all ties)."""

    rows: tuple[dict[str, Any], ...]
    tau: dict[str, float | None]
    depth: int
    measures: tuple[str, ...]
    runs: tuple[str, ...]
    qrels: Mapping[str, Any]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        from ..provenance import header

        return {
            "format": "qrelkit leave-one-out 1",
            **header(),
            "depth": self.depth,
            "tie_rule": TIE_RULE,
            "measures": list(self.measures),
            "runs": list(self.runs),
            "qrels": dict(self.qrels),
            "rule": "each run against the qrels without the judged pairs only it contributed to the pool of "
            "depth `depth` of the runs given, and against the full qrels; rank 1 is the best, the other "
            "runs at their full-pool values; tau: Kendall's tau-b of the full-pool and leave-one-out "
            "rankings",
            "rows": [_json_safe(dict(r)) for r in self.rows],
            "tau": {m: None if t is None else json_number(t) for m, t in self.tau.items()},
            "notes": list(self.notes),
        }


def _rank(value: float, others: Sequence[float]) -> int:
    """1 + the number of ``others`` strictly better than ``value`` (NaN counts as the worst)."""
    v = -math.inf if value != value else value
    return 1 + sum(1 for o in others if o == o and o > v)


def leave_one_out(
    runs: Sequence[Run],
    qrels: Qrels,
    depth: int = 20,
    measures: Sequence[str] = ("nDCG@10",),
    conventions: Any = None,
) -> LeaveOneOut:
    """Each run's measures under the pool built without it against the full pool (module docstring)."""
    from scipy.stats import kendalltau

    from ..data.values import qrels_from_frame
    from ..evaluation.core import evaluate

    runs = _check_runs(runs)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValidationError("depth must be a positive integer", got=depth, fix="pass depth=20")
    if not isinstance(qrels, Qrels):
        raise ValidationError(f"expected Qrels, got {type(qrels).__name__}", fix="read them with read_qrels")
    full = evaluate(qrels, list(runs), list(measures), conventions)
    names = full.measure_names
    union = _union(runs, depth)
    alone = union.filter(pl.col("runs").list.len() == 1).with_columns(
        pl.col("runs").list.first().alias("run")
    )
    graded = qrels.frame.select("query_id", "doc_id", "grade")
    full_means = {(r.name, m): full.mean(m, r.name) for r in runs for m in names}
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    loo_means: dict[tuple[str, str], float] = {}
    for run in runs:
        mine = alone.filter(pl.col("run") == run.name).select("query_id", "doc_id")
        removed = graded.join(mine, on=["query_id", "doc_id"], how="semi")
        kept = graded.join(mine, on=["query_id", "doc_id"], how="anti")
        reduced = qrels_from_frame(kept, name=f"{qrels.name} without {run.name}", scale=qrels.scale)
        result = evaluate(reduced, [run], list(measures), conventions)
        q_full, q_loo = len(full.values(names[0], run.name)), len(result.values(names[0], run.name))
        if q_loo != q_full:
            notes.append(
                f"{run.name}: {q_full - q_loo} quer{'y' if q_full - q_loo == 1 else 'ies'} judged only "
                "through its own documents drop out of its leave-one-out mean"
            )
        for m in names:
            value = result.mean(m, run.name)
            loo_means[run.name, m] = value
            others = [full_means[o.name, m] for o in runs if o.name != run.name]
            base = full_means[run.name, m]
            rows.append(
                {
                    "run": run.name,
                    "measure": m,
                    "full": base,
                    "left_out": value,
                    "change": value - base,
                    "rank_full": _rank(base, others),
                    "rank_left_out": _rank(value, others),
                    "removed_pairs": removed.filter(pl.col("grade") >= 0).height,
                    "removed_relevant": removed.filter(pl.col("grade") > 0).height,
                    "queries_full": q_full,
                    "queries_left_out": q_loo,
                }
            )
    tau: dict[str, float | None] = {}
    for m in names:
        a = [full_means[r.name, m] for r in runs]
        b = [loo_means[r.name, m] for r in runs]
        value = float(kendalltau(a, b).statistic) if len(runs) >= 2 else math.nan
        tau[m] = None if value != value else value
    source = {
        "name": qrels.name,
        "source": qrels.meta.get("source"),
        "fingerprint": qrels.fingerprint.to_dict(),
    }
    return LeaveOneOut(
        tuple(rows), tau, depth, tuple(names), tuple(r.name for r in runs), source, tuple(notes)
    )
