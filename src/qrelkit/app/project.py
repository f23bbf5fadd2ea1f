"""Creating a judging project: reading the pool, documents and queries, planning who judges what, invites.

``init_project`` validates every input before writing anything, so a bad line in ``pool.jsonl`` leaves no
half-made database behind. The assignment plan is the pool's ``labellers`` field when present; otherwise
the calibration queries are drawn and the pairs assigned by the same functions ``qrelkit pool`` uses
(:func:`qrelkit.pool.draw_calibration`, :func:`qrelkit.pool.plan_assignments`), so the same seed gives the
same calibration queries and the same plan either way. Each
labeller sees the calibration pairs first, then the rest, each part shuffled with a seed derived from the
project seed and the labeller's name, so the order is fixed for a labeller and differs between them.

A project without calibration queries is refused unless ``no_calibration`` is given; the project starts
in round 1 of calibration (:mod:`.phases`), or, without calibration, open with "agreement not measured".
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.data.values import check_run_names
from qrelkit.errors import InputFormatError, ValidationError, did_you_mean
from qrelkit.formats.inputs import read_lines
from qrelkit.naming import check_id
from qrelkit.pool import calibration_notes, draw_calibration, plan_assignments, recorded_draw
from qrelkit.rubric import Rubric, load_rubric, refuse_lint_errors

from .phases import labeller_order, start_first_round
from .store import Store, StoreError, check_name, now

__all__ = [
    "DEFAULT_BASE_URL",
    "PoolEntry",
    "create_invite",
    "find_user",
    "init_project",
    "invite_status",
    "load_rubric_from_store",
    "read_docs",
    "read_pool",
    "read_queries",
    "record_base_url",
    "recorded_base_url",
    "redeem_invite",
    "revoke_user",
]


@dataclass(frozen=True)
class PoolEntry:
    query_id: str
    doc_id: str
    runs: dict[str, int] = field(default_factory=dict)
    best_rank: int | None = None
    judged: bool = False
    calibration: bool = False
    labellers: tuple[str, ...] | None = None


def _lines(path: Path, kind: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a project's text file, streamed (:func:`qrelkit.formats.inputs.read_lines`: a
    NUL byte refused where it lies, each line within its kind's bound), each decoded as UTF-8."""
    for number, raw in read_lines(path, kind, what=f"{kind} file"):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputFormatError(
                f"line is not UTF-8 ({exc.reason})", source=str(path), line=number
            ) from None
        if line.strip():
            yield number, line


def _json_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"line is not valid JSON ({exc.msg})", source=str(path), line=number, got=line
        ) from None
    except RecursionError:
        raise InputFormatError(
            "line nests JSON arrays or objects too deeply", source=str(path), line=number, got=line[:40]
        ) from None
    if not isinstance(value, dict):
        raise InputFormatError("line is not a JSON object", source=str(path), line=number, got=line)
    if "\\u" in line:  # an escape such as "\\ud800" decodes to a lone surrogate, which is not text
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputFormatError(
                "line holds a lone surrogate escape (such as \\ud800): not a Unicode character",
                source=str(path),
                line=number,
                fix="write the character itself, or a complete surrogate pair",
            ) from None
    return value


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, number: int) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputFormatError(
            f"field {key!r} is missing or not {names}",
            source=str(path),
            line=number,
            got=value,
            expected=f"{key!r}: {names}",
        )
    return value


def read_pool(path: str | os.PathLike[str]) -> list[PoolEntry]:
    """Read ``pool.jsonl`` (one JSON object per line, as ``qrelkit pool`` writes it), strictly."""
    path = Path(path)
    known = {"query_id", "doc_id", "runs", "best_rank", "judged", "calibration", "labellers"}
    entries, seen = [], set()
    for number, line in _lines(path, "pool"):
        obj = _json_line(path, number, line)
        unknown = sorted(set(obj) - known)
        if unknown:
            raise InputFormatError(
                f"unknown field {unknown[0]!r}{did_you_mean(unknown[0], known)}",
                source=str(path),
                line=number,
                expected=", ".join(sorted(known)),
            )
        q = check_id(_field(obj, "query_id", str, path, number), "query_id", str(path), number)
        d = check_id(_field(obj, "doc_id", str, path, number), "doc_id", str(path), number)
        runs = obj.get("runs", {})
        if not isinstance(runs, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in runs.items()
        ):
            raise InputFormatError(
                "field 'runs' must map run names to ranks",
                source=str(path),
                line=number,
                got=runs,
                expected='{"bm25": 3, ...}',
            )
        best = obj.get("best_rank")
        if best is not None and (
            not isinstance(best, int) or isinstance(best, bool) or not 1 <= best < 2**63
        ):
            raise InputFormatError(
                "field 'best_rank' must be a rank: an integer from 1 to 2^63-1",
                source=str(path),
                line=number,
                got=best
                if not isinstance(best, int) or best < 10**20
                else f"an integer of {len(str(best))} digits",
            )
        for run, rank in runs.items():
            if not 1 <= rank < 2**63:
                raise InputFormatError(
                    f"rank of run {run!r} in field 'runs' must be an integer from 1 to 2^63-1",
                    source=str(path),
                    line=number,
                    got=rank if rank < 10**20 else f"an integer of {len(str(rank))} digits",
                )
        flags = {}
        for key in ("judged", "calibration"):
            flags[key] = obj.get(key, False)
            if not isinstance(flags[key], bool):
                raise InputFormatError(
                    f"field {key!r} must be true or false", source=str(path), line=number, got=flags[key]
                )
        labellers = obj.get("labellers")
        if labellers is not None:
            if not isinstance(labellers, list) or not all(isinstance(x, str) for x in labellers):
                raise InputFormatError(
                    "field 'labellers' must be a list of names", source=str(path), line=number, got=labellers
                )
            for name in labellers:
                check_name(name)
            labellers = tuple(dict.fromkeys(labellers))
        if (q, d) in seen:
            raise InputFormatError(
                f"pair ({q}, {d}) is listed twice", source=str(path), line=number, fix="pool each pair once"
            )
        seen.add((q, d))
        entries.append(PoolEntry(q, d, dict(runs), best, flags["judged"], flags["calibration"], labellers))
    if not entries:
        raise InputFormatError("the pool is empty", source=str(path), fix="check the right file was passed")
    return entries


def read_docs(path: str | os.PathLike[str]) -> dict[str, tuple[str, str]]:
    """Read ``docs.jsonl``: ``{"doc_id", "title", "text"}`` per line; returns doc_id -> (title, text)."""
    path = Path(path)
    docs: dict[str, tuple[str, str]] = {}
    for number, line in _lines(path, "docs"):
        obj = _json_line(path, number, line)
        doc_id = check_id(_field(obj, "doc_id", str, path, number), "doc_id", str(path), number)
        title = obj.get("title", "")
        text = _field(obj, "text", str, path, number)
        if not isinstance(title, str):
            raise InputFormatError("field 'title' must be a string", source=str(path), line=number)
        if doc_id in docs:
            raise InputFormatError(f"document {doc_id!r} is listed twice", source=str(path), line=number)
        docs[doc_id] = (title, text)
    return docs


def read_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read ``queries.tsv``: ``query_id<TAB>text`` per line, no header; ``irds:ID`` names the queries of
    an ir_datasets dataset instead (:func:`qrelkit.formats.irds.read_dataset_queries`)."""
    from ..formats import is_dataset

    if is_dataset(path):
        from ..formats.irds import read_dataset_queries

        return read_dataset_queries(str(path))[0]
    path = Path(path)
    queries: dict[str, str] = {}
    for number, line in _lines(path, "queries"):
        query_id, tab, text = line.partition("\t")
        if not tab or not query_id.strip() or not text.strip():
            raise InputFormatError(
                "line is not query_id<TAB>text",
                source=str(path),
                line=number,
                got=line,
                expected="q01\\ttext",
            )
        query_id = check_id(query_id.strip(), "query_id", str(path), number)
        if query_id in queries:
            raise InputFormatError(
                f"query {query_id!r} is listed twice",
                source=str(path),
                line=number,
                fix="give each query one line (two texts for one id would make the labellers' page ambiguous)",
            )
        queries[query_id] = text.strip()
    return queries


def _dataset_record(queries: str | os.PathLike[str]) -> str | None:
    """The JSON record of the dataset ``irds:ID`` queries were read from (``None`` for a file)."""
    from ..formats import is_dataset

    if not is_dataset(queries):
        return None
    from ..formats.irds import resolve

    return json.dumps(resolve(str(queries), "queries")[1].to_dict(), sort_keys=True)


def init_project(
    db_path: str | os.PathLike[str],
    *,
    rubric: str | os.PathLike[str],
    pool: str | os.PathLike[str],
    docs: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    labellers: Sequence[str] = (),
    calibration: int = 0,
    no_calibration: bool = False,
    runs: Sequence[str | os.PathLike[str]] = (),
    admin: str = "admin",
    seed: int | None = None,
    min_kappa: float = 0.6,
    weights: str = "linear",
    gate_use: str | None = None,
    name: str | None = None,
    calibration_labellers: int | None = None,
    gate_statistic: str | None = None,
) -> dict[str, Any]:
    """Create the project database; return a summary (pairs, labellers, calibration queries, notes, ...).

    The calibration queries are those the pool marks, else ``calibration`` queries drawn here. A project
    without any is refused unless ``no_calibration``: judging is then open from the start and the
    manifest says agreement was not measured. ``calibration_labellers`` labellers judge each calibration
    query (default: as the pool's plan has it, else two). ``min_kappa``, ``weights`` (of Cohen's kappa),
    ``gate_statistic`` (:data:`qrelkit.agreement.group.STATISTICS`; default ``kappa`` for two labellers
    per calibration query, ``mean_kappa`` for more) and ``gate_use`` (``ci_low``: the lower end of the
    normal interval, kappa only and its default; ``bootstrap_low``: of the query bootstrap) make the gate
    (:mod:`.phases`).
    """
    from qrelkit.agreement.group import GROUP_STATISTICS, STATISTICS, default_statistic
    from qrelkit.agreement.kappa import GATE_LOWER_BOUNDS, WEIGHTINGS

    if (
        weights not in WEIGHTINGS
        or gate_use not in (None, *GATE_LOWER_BOUNDS)
        or gate_statistic not in (None, *STATISTICS)
    ):
        raise ValidationError(
            "unknown gate statistic",
            got=f"weights={weights}, statistic {gate_statistic}, gate on {gate_use}",
            expected="weights linear, quadratic or unweighted; statistic one of " + ", ".join(STATISTICS)
            + "; gate on ci_low or bootstrap_low",
        )  # fmt: skip
    if gate_statistic in GROUP_STATISTICS and gate_use == "ci_low":
        raise ValidationError(
            f"the statistic {gate_statistic} has no normal interval: its gate compares the lower end of the "
            "query bootstrap",
            fix="leave --gate-on out (bootstrap_low is this statistic's gate), or gate on --statistic kappa",
        )
    if no_calibration and calibration:
        raise ValidationError(
            f"--calibration {calibration} and --no-calibration contradict each other",
            fix="pass one of them",
        )
    the_rubric = load_rubric(rubric)
    refuse_lint_errors(the_rubric, rubric)  # as a revision does: labellers never grade with a broken rubric
    entries = read_pool(pool)
    doc_map = read_docs(docs)
    query_map = read_queries(queries)
    queries_dataset = _dataset_record(queries)
    run_rows = _read_runs(runs)
    for e in entries:
        if e.judged:  # judged elsewhere: never shown, so its text need not be at hand
            continue
        if e.query_id not in query_map:
            raise ValidationError(
                f"pool query {e.query_id!r} is not in the queries file{did_you_mean(e.query_id, query_map)}",
                source=str(queries),
                fix="add the query, or pool from the same query set",
            )
        if e.doc_id not in doc_map:
            raise ValidationError(
                f"pool document {e.doc_id!r} is not in the documents file{did_you_mean(e.doc_id, doc_map)}",
                source=str(docs),
                fix="add the document, or pool from the same collection",
            )
    names = [check_name(n) for n in labellers]
    if len(set(names)) != len(names):
        raise ValidationError("a labeller is listed twice", got=",".join(names))
    check_name(admin, "admin name")
    to_judge = [e for e in entries if not e.judged]
    planned = [e for e in to_judge if e.labellers is not None]
    if planned and len(planned) != len(to_judge):
        raise ValidationError(
            "some pool lines have 'labellers' and some do not",
            source=str(pool),
            fix="give every line to judge an assignment, or none (and pass --labellers)",
        )
    marked = {e.query_id for e in to_judge if e.calibration}
    if no_calibration and marked:
        raise ValidationError(
            f"--no-calibration, but the pool marks {len(marked)} calibration queries",
            source=str(pool),
            fix="leave --no-calibration out to measure agreement on them, or pool again with --calibration 0",
        )
    if not no_calibration and not marked and not calibration:
        raise ValidationError(
            "the pool marks no calibration queries, so agreement would never be measured",
            source=str(pool),
            fix="pool with `qrelkit pool` (30 calibration queries by default), or pass --calibration N to "
            "draw them here; --no-calibration judges without measuring agreement (the manifest says so)",
        )
    if marked and calibration and calibration != len(marked):
        raise ValidationError(
            f"--calibration {calibration} conflicts with the pool, which marks {len(marked)} calibration "
            "queries",
            source=str(pool),
            fix=f"leave --calibration out (the pool's {len(marked)} queries are used), or pool again with "
            f"--calibration {calibration}",
        )
    notes: tuple[str, ...] = ()
    drawn_with: int | None = None  # the seed of the pool's own calibration draw, recomputed
    if marked:
        drawn_with, why = recorded_draw(pool, sorted(marked), sorted({e.query_id for e in to_judge}))
        if drawn_with is None:
            notes = (f"the calibration queries are recorded as given, not drawn at random: {why} (estimates "
                     "from this project will warn that their interval rests on a random sample)",)  # fmt: skip
    project_seed = (
        seed if seed is not None else drawn_with if drawn_with is not None else secrets.randbelow(2**31)
    )
    if planned:
        in_pool = list(dict.fromkeys(n for e in planned for n in e.labellers or ()))
        unknown = [n for n in in_pool if names and n not in names]
        if unknown:
            raise ValidationError(
                f"the pool assigns pairs to {unknown[0]!r}, who is not in --labellers",
                got=",".join(names),
                fix="add the name to --labellers, or leave --labellers out to use the pool's names",
            )
        names = names or in_pool
        plan = {(e.query_id, e.doc_id): tuple(e.labellers or ()) for e in planned}
        calibration_queries = marked
        in_plan = max((len(e.labellers or ()) for e in planned if e.calibration), default=2)
        if calibration_labellers is not None and marked and calibration_labellers != in_plan:
            raise ValidationError(
                f"--calibration-labellers {calibration_labellers} conflicts with the pool, whose plan gives "
                f"each calibration query {in_plan} labellers",
                source=str(pool),
                fix="leave --calibration-labellers out, or pool again with --calibration-labellers "
                f"{calibration_labellers}",
            )
        calibration_labellers = in_plan
    else:
        if not names:
            raise ValidationError(
                "no labellers: the pool has no assignment plan and --labellers is empty",
                fix="pass --labellers alice,bob",
            )
        pairs_of: dict[str, list[tuple[str, str]]] = {}
        for e in to_judge:
            pairs_of.setdefault(e.query_id, []).append((e.query_id, e.doc_id))
        calibration_queries = marked or (
            set(draw_calibration(list(pairs_of), calibration, project_seed)) if calibration else set()
        )
        if calibration and not marked:
            notes += calibration_notes(calibration, len(pairs_of))
        if calibration_queries and len(names) < 2:
            raise ValidationError(
                "calibration needs two labellers", got=",".join(names), fix="pass --labellers alice,bob"
            )
        calibration_labellers = calibration_labellers or 2
        by_query = plan_assignments(
            {q: len(p) for q, p in pairs_of.items()}, calibration_queries, names, calibration_labellers
        )
        plan = {pair: tuple(by_query[q]) for q, pairs in pairs_of.items() for pair in pairs}
    statistic = gate_statistic or default_statistic(calibration_labellers)
    gate_use = gate_use or ("ci_low" if statistic == "kappa" else "bootstrap_low")
    if admin in names:
        raise ValidationError(f"{admin!r} is both the admin and a labeller", fix="pass another --admin name")
    store = Store(db_path, create=True)
    try:
        summary = store.write(
            lambda conn: _fill(
                conn, the_rubric, entries, doc_map, query_map, names, admin, plan, calibration_queries,
                run_rows, project_seed, min_kappa, name or Path(db_path).stem, weights, gate_use,
                statistic, calibration_labellers, queries_dataset, drawn_with,
            )
        )  # fmt: skip
    except BaseException:
        store.close()
        Path(db_path).unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
        raise
    store.close()
    return {**summary, "notes": list(notes)}


def _read_runs(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, str, str, float, int, int]]:
    from qrelkit.formats import read_run

    rows = []
    runs = [read_run(path) for path in paths]
    check_run_names([r.name for r in runs], [str(p) for p in paths])
    for run in runs:
        frame = run.frame.select("query_id", "doc_id", "score", "rank", "line")
        rows += [(run.name, q, d, float(s), r, ln) for q, d, s, r, ln in frame.iter_rows()]
    return rows


def _fill(
    conn: sqlite3.Connection,
    rubric: Rubric,
    entries: Sequence[PoolEntry],
    docs: dict[str, tuple[str, str]],
    queries: dict[str, str],
    labellers: Sequence[str],
    admin: str,
    plan: dict[tuple[str, str], tuple[str, ...]],
    calibration: set[str],
    run_rows: list[tuple[str, str, str, float, int, int]],
    seed: int,
    min_kappa: float,
    name: str,
    weights: str,
    gate_use: str,
    statistic: str,
    calibration_labellers: int,
    queries_dataset: str | None = None,
    calibration_seed: int | None = None,
) -> dict[str, Any]:
    created = now()
    meta = {
        "kappa_weights": weights,
        "gate_use": gate_use,
        "gate_statistic": statistic,
        "calibration_labellers": str(calibration_labellers),
        "project_name": name,
        "rubric": json.dumps(rubric.to_dict(), ensure_ascii=False),
        "rubric_hash": rubric.content_hash,
        "seed": str(seed),
        "secret": secrets.token_hex(32),
        "min_kappa": repr(float(min_kappa)),
        "created_at": created,
    }
    if queries_dataset is not None:  # queries named by dataset: the id, ir_datasets' version, the files read
        meta["queries_dataset"] = queries_dataset
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    used_queries = {e.query_id for e in entries if not e.judged}
    used_docs = {e.doc_id for e in entries if not e.judged}
    conn.executemany("INSERT INTO queries VALUES (?, ?)", [(q, queries[q]) for q in sorted(used_queries)])
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", [(d, *docs[d]) for d in sorted(used_docs)])
    from .models.flags import record_flags

    record_flags(conn)  # documents that speak to a grader, shown wherever a model labeller is
    pair_ids: dict[tuple[str, str], int] = {}
    calibration_ids: set[int] = set()
    for e in entries:
        if e.judged:
            conn.execute("INSERT INTO prejudged VALUES (?, ?)", (e.query_id, e.doc_id))
            continue
        is_cal = e.query_id in calibration
        cur = conn.execute(
            "INSERT INTO pairs (query_id, doc_id, calibration) VALUES (?, ?, ?)",
            (e.query_id, e.doc_id, is_cal),
        )
        pair_id = int(cur.lastrowid or 0)
        pair_ids[e.query_id, e.doc_id] = pair_id
        if is_cal:
            calibration_ids.add(pair_id)
        conn.execute(
            "INSERT INTO pool_provenance VALUES (?, ?, ?)", (pair_id, json.dumps(e.runs), e.best_rank)
        )
    conn.executemany("INSERT INTO run_rows VALUES (?, ?, ?, ?, ?, ?)", run_rows)
    user_ids = {}
    for user, role in [(admin, "admin"), *((n, "labeller") for n in labellers)]:
        cur = conn.execute(
            "INSERT INTO users (name, role, created_at) VALUES (?, ?, ?)", (user, role, created)
        )
        user_ids[user] = int(cur.lastrowid or 0)
    per_user: dict[str, list[int]] = {n: [] for n in labellers}
    query_of = {pair_id: q for (q, _), pair_id in pair_ids.items()}
    for pair, names in plan.items():
        for n in names:
            per_user[n].append(pair_ids[pair])
    for n, ids in per_user.items():
        order = labeller_order({p: query_of[p] for p in ids}, calibration_ids, seed, n)
        conn.executemany(
            "INSERT INTO assignments VALUES (?, ?, ?)", [(user_ids[n], p, i) for i, p in enumerate(order)]
        )
    # round 1 records the seed its queries were drawn with: the pool's, when the pool drew them
    first_seed = seed if calibration_seed is None else calibration_seed
    start_first_round(conn, rubric, first_seed, admin, [(user_ids[n], p) for n, ids in per_user.items()
                                                        for p in ids if p in calibration_ids])  # fmt: skip
    return {
        "pairs": len(pair_ids),
        "prejudged": sum(e.judged for e in entries),
        "queries": len({q for q, _ in pair_ids}),
        "calibration_queries": sorted(calibration),
        "calibration_labellers": calibration_labellers,
        "gate_statistic": statistic,
        "gate_use": gate_use,
        "labellers": {n: len(ids) for n, ids in per_user.items()},
        "admin": admin,
        "runs": sorted({r[0] for r in run_rows}),
        "rubric_hash": rubric.content_hash,
        "seed": seed,
    }


def load_rubric_from_store(store: Store) -> Rubric:
    text = store.meta("rubric")
    if text is None:
        raise StoreError("the project database has no rubric", source=str(store.path))
    return Rubric.from_dict(json.loads(text), source=f"{store.path} (meta.rubric)")


# users and invites

#: Where invite links point when ``judge serve`` has recorded no URL.
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def record_base_url(store: Store, url: str) -> None:
    """Record where the server is reachable (``judge serve`` does, at start) for later invite links."""
    store.set_meta("base_url", url.rstrip("/"))


def recorded_base_url(store: Store) -> str | None:
    """The URL ``judge serve`` last recorded, or ``None``."""
    return store.meta("base_url")


def find_user(store: Store, name: str) -> sqlite3.Row:
    row = store.read(lambda c: c.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone())
    if row is None:
        names = store.read(lambda c: [r[0] for r in c.execute("SELECT name FROM users")])
        raise ValidationError(
            f"no user {name!r} in this project{did_you_mean(name, names)}",
            source=str(store.path),
            expected="one of " + ", ".join(sorted(names)),
        )
    return row


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def create_invite(store: Store, name: str, *, hours: float = 72.0) -> str:
    """A one-time sign-in token for user ``name``, valid for ``hours``; only its hash is stored."""
    if not 0 < hours <= 24 * 90:
        raise ValidationError("an invite must last between 0 and 2160 hours", got=hours)
    user = find_user(store, name)
    if user["role"] == "model":
        raise ValidationError(
            f"{name!r} is a model labeller: it grades through `qrelkit judge model run`, never the web pages",
            fix="invite the people of the project",
        )
    token = secrets.token_urlsafe(32)
    expires = _dt.datetime.now(_dt.UTC) + _dt.timedelta(hours=hours)
    expires_at = expires.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    store.write(
        lambda c: c.execute(
            "INSERT INTO invites VALUES (?, ?, ?, ?, NULL)",
            (_token_hash(token), user["user_id"], now(), expires_at),
        )
    )
    return token


def invite_status(store: Store, token: str) -> sqlite3.Row | None:
    """The user an unused, unexpired invite token is for; ``None`` for any other token."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return None
    return store.read(
        lambda c: c.execute(
            "SELECT u.* FROM invites i JOIN users u USING (user_id) "
            "WHERE i.token_hash = ? AND i.used_at IS NULL AND i.expires_at > ?",
            (_token_hash(token), now()),
        ).fetchone()
    )


def redeem_invite(conn: sqlite3.Connection, token: str) -> sqlite3.Row | None:
    """Mark the token used and return its user, in the writer; ``None`` if used, expired or unknown."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return None
    cur = conn.execute(
        "UPDATE invites SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
        (now(), _token_hash(token), now()),
    )
    if cur.rowcount != 1:
        return None
    return conn.execute(
        "SELECT u.* FROM invites i JOIN users u USING (user_id) WHERE i.token_hash = ?", (_token_hash(token),)
    ).fetchone()


def revoke_user(store: Store, name: str) -> tuple[int, int]:
    """End every session of ``name`` (their cookies stop working) and cancel their unused invites.

    Returns (the new session epoch, the number of invites cancelled). Grades are untouched.
    """
    user = find_user(store, name)

    def write(conn: sqlite3.Connection) -> tuple[int, int]:
        conn.execute(
            "UPDATE users SET session_epoch = session_epoch + 1 WHERE user_id = ?", (user["user_id"],)
        )
        cur = conn.execute(
            "UPDATE invites SET used_at = ? WHERE user_id = ? AND used_at IS NULL", (now(), user["user_id"])
        )
        epoch = conn.execute(
            "SELECT session_epoch FROM users WHERE user_id = ?", (user["user_id"],)
        ).fetchone()[0]
        return int(epoch), int(cur.rowcount)

    return store.write(write)
