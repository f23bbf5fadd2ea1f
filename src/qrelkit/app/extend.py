"""New runs after the pool closed: what a project already holds, and adding a run's new pairs as a segment.

Which pairs a new run adds is :func:`qrelkit.pool.extend_pool`'s rule; here are the project's side
of it. :func:`project_judged` reads, without writing, every pair the project holds (its pool, graded or
not, and its pairs judged before pooling), its queries, the runs it pooled and the phase it is in (as
read: a round whose calibration just completed reads "calibration" until a write decides its gate). :func:`judged_of` opens either a project or a
final qrels file as that rule takes it (``qrelkit pool --extend``). :func:`extend_project`
(``qrelkit judge extend``) adds the pairs as a new segment of the project:

- only while judging is open under the current rubric version: its gate passed, was overridden with a
  reason, or the project judges without calibration (agreement not measured, as its manifest says). The
  new pairs are then judged without a calibration round of their own: the rubric was already measured
  on this project's labellers. In calibration, or paused after a failed gate, it is refused;
- the pairs are assigned by the plan ``judge init`` uses (:func:`qrelkit.pool.plan_assignments`
  with no calibration queries: each query whole to one labeller, balancing the new pairs), and each
  labeller's new pairs go after their others, in :func:`qrelkit.app.phases.labeller_order` (one query's
  pairs together, shuffled with the segment's seed; blind: which run brought a pair is admin-side only);
- people labellers only: a model labeller's pairs are given by ``judge model add``;
- a document the project has no text for must be in ``--docs`` (``docs.jsonl``, as ``judge init`` reads
  it); a query whose text the project lacks (all its pairs were judged before pooling) must be in
  ``--queries``. Pairs of queries the project never held are left out (the rule's note says how many);
- a run whose name the project already pooled or stored is refused, at any depth (the rule's, so
  ``qrelkit pool --extend`` refuses it too: :attr:`qrelkit.pool.Judged.runs`);
- the segment is recorded (``segments``, ``segment_pairs``: schema version 8) with its round, rubric
  version, the gate's outcome that opened judging, the runs (name, source, fingerprint), depth, seed, who
  and when; the runs' rows are stored as ``judge init --runs`` stores them (the adjudication queue's
  leverage reads them). The final export holds the new pairs once graded, as every pair of the pool.

The segment's seed is the first 8 hex digits of SHA-256 of ``"{project_seed}:segment {n}"``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from qrelkit.errors import ValidationError

from .store import Store, now

__all__ = ["extend_project", "is_project_file", "judged_of", "phase_note", "project_judged", "segment_seed"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_project_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite database (a judging project) rather than a text file of judgments."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def segment_seed(project_seed: int, segment: int) -> int:
    """The seed of segment ``segment``'s order: the first 8 hex digits of SHA-256 of
    ``"{project_seed}:segment {segment}"``."""
    return int(hashlib.sha256(f"{project_seed}:segment {segment}".encode()).hexdigest()[:8], 16)


def _judged(conn: sqlite3.Connection, path: str) -> Any:
    import polars as pl

    from qrelkit.pool import Judged

    rows = conn.execute(
        "SELECT query_id, doc_id FROM pairs UNION SELECT query_id, doc_id FROM prejudged"
    ).fetchall()
    frame = pl.DataFrame(
        [tuple(r) for r in rows], schema={"query_id": pl.String, "doc_id": pl.String}, orient="row"
    )
    from .phases import phase_of, round_complete

    queries = frozenset(frame.get_column("query_id").to_list())
    phase = phase_of(conn)
    read = {"state": phase.state, "round": phase.round, "outcome": phase.outcome,
            "calibration_complete": phase.state == "calibration" and round_complete(conn, phase.round)}  # fmt: skip
    return Judged(
        frame, queries, {"kind": "project", "path": path, "phase": read}, frozenset(_pooled_runs(conn))
    )


def project_judged(store: Store) -> Any:
    """Every pair the project holds (pool, graded or not, and judged before pooling) and its queries, as
    :class:`qrelkit.pool.Judged`."""
    return store.read(lambda c: _judged(c, str(store.path)))


def judged_of(path: str | os.PathLike[str], *, input_format: str = "auto") -> Any:
    """A judging project (read-only: nothing is written, not even a migration) or a final qrels file, as
    :class:`qrelkit.pool.Judged`."""
    if is_project_file(path):
        with Store(path, read_only=True) as store:
            return project_judged(store)
    from qrelkit.formats import read_qrels
    from qrelkit.pool import judged_of_qrels

    judged = judged_of_qrels(read_qrels(path, format=input_format))
    return type(judged)(judged.pairs, judged.queries, {**judged.source, "path": str(path)})


def _pooled_runs(conn: sqlite3.Connection) -> set[str]:
    names = {r[0] for r in conn.execute("SELECT DISTINCT run FROM run_rows")}
    for (text,) in conn.execute("SELECT DISTINCT runs FROM pool_provenance"):
        names.update(json.loads(text))
    return names


def _texts(conn: sqlite3.Connection, pool: Any, given: dict[str, tuple[Any, Any]]) -> tuple[list, list]:
    """The documents' and queries' rows to add: those of the new pairs the project has no text for, from
    ``given`` (kind -> (the file, its texts read before the writer's transaction began), or ``None``)."""
    from qrelkit.errors import did_you_mean

    need = {
        "document": sorted(set(pool.pairs.get_column("doc_id").to_list()) - {r[0] for r in conn.execute("SELECT doc_id FROM docs")}),
        "query": sorted(set(pool.pairs.get_column("query_id").to_list()) - {r[0] for r in conn.execute("SELECT query_id FROM queries")}),
    }  # fmt: skip
    out: list[list[tuple[Any, ...]]] = []
    for what, option in (("document", "--docs docs.jsonl"), ("query", "--queries queries.tsv")):
        wanted, (source, texts) = need[what], given[what]
        if wanted and texts is None:
            raise ValidationError(
                f"{len(wanted)} {what} text(s) of the new pairs are not in the project (first: {wanted[0]!r})",
                fix=f"pass {option} holding them (as `judge init` reads it)",
            )
        missing = [x for x in wanted if x not in texts]
        if missing:
            raise ValidationError(
                f"{what} {missing[0]!r} of the new pairs is not in the {what} file"
                f"{did_you_mean(missing[0], texts)} ({len(missing)} missing)",
                source=str(source),
                fix=f"add the {what}, or pass the file of the run's collection",
            )
        out.append([(x, *texts[x]) if what == "document" else (x, texts[x]) for x in wanted])
    return out[0], out[1]


def phase_note(phase: dict[str, Any]) -> str:
    """What ``judge extend`` would do in the phase :func:`project_judged` read (its ``source["phase"]``),
    in words: add the pairs (judging open) or refuse (:func:`_refuse_closed`'s rule)."""
    state, number, outcome = phase.get("state"), phase.get("round"), phase.get("outcome")
    if state == "open":
        return f"round {number}'s gate: {outcome}; `judge extend` would add these pairs with no calibration round"
    if state == "calibration" and phase.get("calibration_complete"):
        return (f"round {number}'s calibration is complete but its gate is not decided yet; `judge extend` "
                "decides it first and adds these pairs only if it passes")  # fmt: skip
    if state == "calibration":
        return f"round {number} is in calibration; `judge extend` would refuse until its gate passes"
    return (
        f"round {number}'s gate: {outcome}; `judge extend` would refuse (revise the rubric or override first)"
    )


def _refuse_closed(phase: Any) -> None:
    if phase.state == "open":
        return
    if phase.state == "calibration":
        why = f"round {phase.round} is still in calibration (its gate is not decided)"
        fix = "finish the round's calibration pairs so the gate is decided, then extend"
    else:
        why = f"the gate of round {phase.round} {'could not be measured' if phase.unmeasurable else 'failed'}"
        fix = "revise the rubric (`judge revise`) until a round passes, or `judge override` with a reason, then extend"
    raise ValidationError(
        f"{why}: new pairs are judged only under a rubric version whose gate passed (or was overridden)",
        fix=fix,
    )


def extend_project(
    db: str | os.PathLike[str],
    runs: Sequence[str | os.PathLike[str]],
    *,
    depth: int = 20,
    docs: str | os.PathLike[str] | None = None,
    queries: str | os.PathLike[str] | None = None,
    by: str | None = None,
    note: str | None = None,
    input_format: str = "auto",
) -> dict[str, Any]:
    """Add the pairs ``runs`` bring within ``depth`` to the project ``db`` as a new segment (module
    docstring for every rule); return a summary: segment, pairs, queries, per labeller, notes."""
    from qrelkit.data.values import check_run_names
    from qrelkit.formats import read_run

    from .project import read_docs, read_queries

    run_objs = [read_run(p, format=input_format) for p in runs]
    check_run_names([r.name for r in run_objs], [str(p) for p in runs])
    given = {  # read before the writer's transaction, which the app's grades wait for
        "document": (docs, None if docs is None else read_docs(docs)),
        "query": (queries, None if queries is None else read_queries(queries)),
    }
    if note is not None and len(note) > 2000:
        raise ValidationError("a note is at most 2000 characters", got=len(note))
    with Store(db) as store:
        from .phases import ensure_gate

        ensure_gate(store)  # a round whose calibration just completed is decided first
        return store.write(lambda c: _extend(c, str(store.path), run_objs, depth, given, by, note))


def _extend(
    conn: sqlite3.Connection, path: str, runs: list[Any], depth: int, given: dict[str, tuple[Any, Any]],
    by: str | None, note: str | None,
) -> dict[str, Any]:  # fmt: skip
    # long: one transaction: the checks, the rule, the texts, the plan, the pairs, the segment and the orders
    from qrelkit.pool import extend_pool, plan_assignments

    from .phases import labeller_order, phase_of

    phase = phase_of(conn)
    _refuse_closed(phase)
    pool = extend_pool(runs, depth, judged=_judged(conn, path))  # refuses a run the project pooled already
    labellers = [
        r[0] for r in conn.execute("SELECT name FROM users WHERE role = 'labeller' ORDER BY user_id")
    ]
    summary: dict[str, Any] = {"segment": None, "pairs": pool.pairs.height, "queries": 0, "labellers": {},
                               "runs": [r.name for r in runs], "depth": depth, "round": phase.round,
                               "gate": phase.outcome, "notes": list(pool.notes), "extends": pool.extends}  # fmt: skip
    if pool.pairs.height == 0:
        return summary
    if not labellers:
        raise ValidationError("the project has no labellers to judge the new pairs", source=path)
    doc_rows, query_rows = _texts(conn, pool, given)
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", doc_rows)
    from .models.flags import record_flags

    record_flags(conn)  # documents that speak to a grader, shown wherever a model labeller is
    conn.executemany("INSERT INTO queries VALUES (?, ?)", query_rows)
    segment = int(conn.execute("SELECT COALESCE(MAX(segment), 1) + 1 FROM segments").fetchone()[0])
    seed = segment_seed(int(conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0]), segment)
    described = [
        {"name": r.name, "source": r.meta.get("source"), "fingerprint": r.fingerprint.to_dict()} for r in runs
    ]
    conn.execute(
        "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (segment, phase.round, phase.rubric_hash, phase.outcome, json.dumps(described), depth, seed, now(), by, note),
    )  # fmt: skip
    query_of: dict[int, str] = {}
    for q, d, names, ranks, best in pool.pairs.select(
        "query_id", "doc_id", "runs", "ranks", "best_rank"
    ).iter_rows():
        cur = conn.execute("INSERT INTO pairs (query_id, doc_id, calibration) VALUES (?, ?, 0)", (q, d))
        pair_id = int(cur.lastrowid or 0)
        query_of[pair_id] = q
        conn.execute("INSERT INTO pool_provenance VALUES (?, ?, ?)",
                     (pair_id, json.dumps(dict(zip(names, ranks, strict=True))), best))  # fmt: skip
        conn.execute("INSERT INTO segment_pairs VALUES (?, ?)", (pair_id, segment))
    for run in runs:
        frame = run.frame.select("query_id", "doc_id", "score", "rank", "line")
        conn.executemany("INSERT INTO run_rows VALUES (?, ?, ?, ?, ?, ?)",
                         [(run.name, q, d, float(s), r, ln) for q, d, s, r, ln in frame.iter_rows()])  # fmt: skip
    sizes: dict[str, int] = {}
    for q in query_of.values():
        sizes[q] = sizes.get(q, 0) + 1
    plan = plan_assignments(sizes, (), labellers)
    ids = dict(conn.execute("SELECT name, user_id FROM users"))
    for name in labellers:
        mine = {p: q for p, q in query_of.items() if name in plan[q]}
        start = conn.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM assignments WHERE user_id = ?",
                             (ids[name],)).fetchone()[0]  # fmt: skip
        order = labeller_order(mine, set(), seed, name)
        conn.executemany("INSERT INTO assignments VALUES (?, ?, ?)",
                         [(ids[name], p, start + i) for i, p in enumerate(order)])  # fmt: skip
        summary["labellers"][name] = len(order)
    summary.update(segment=segment, queries=len(sizes), seed=seed, docs_added=len(doc_rows),
                   queries_added=len(query_rows))  # fmt: skip
    return summary
