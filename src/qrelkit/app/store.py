"""The judging project store: one SQLite file, versioned migrations, one writer.

Durability. The database runs in WAL mode with ``synchronous=FULL``: every COMMIT syncs the write-ahead
log to disk before it returns, so a grade that was acknowledged survives a crash of the process and a
loss of power alike. (``NORMAL`` would only sync at checkpoints and can lose the last transactions on
power loss, which is exactly the acknowledged-then-lost case this store exists to rule out.)

One writer. All writes go through a single :class:`Writer` thread owning the only write connection. Jobs
are queued; the thread takes every job waiting, runs each inside its own SAVEPOINT of one transaction
(group commit: one disk sync for many grades), and resolves the jobs' futures only after COMMIT has
returned. A caller is therefore told "saved" only once the row is on disk, and a job that fails rolls
back alone. Readers use their own connections (one per thread); WAL lets them read while the writer
writes.

Private files. The database holds the session secret, so it is created readable and writable by its owner
alone (0600), and SQLite gives its ``-wal`` and ``-shm`` files the database's mode. An existing file that
grants its group or others any access is tightened to 0600 when opened for writing, if this user owns it;
opened read-only, nothing is changed (no chmod, no ``-shm`` created: ``immutable`` when no writer has the
file open); either way :attr:`Store.notes` says what was found, with the fix, for the commands to print.

Migrations are an ordered list of ``(version, name, sql)``; the file's ``PRAGMA user_version`` says
which have run, ``schema_migrations`` records when. A file written by a newer qrelkit is refused.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as _dt
import os
import queue
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from qrelkit.errors import QrelkitError, ValidationError

from .models import schema as _model_schema

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Store", "StoreError", "check_project_file", "now"]

T = TypeVar("T")


class StoreError(QrelkitError):
    """The project database is missing, newer than this qrelkit, or refused a write."""


def now() -> str:
    """The current UTC time as ISO 8601 with milliseconds, the format every timestamp in the store uses."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (query_id TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE docs (doc_id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE pairs (
    pair_id INTEGER PRIMARY KEY,
    query_id TEXT NOT NULL REFERENCES queries (query_id),
    doc_id TEXT NOT NULL REFERENCES docs (doc_id),
    calibration INTEGER NOT NULL DEFAULT 0 CHECK (calibration IN (0, 1)),
    UNIQUE (query_id, doc_id)
);
-- Which systems retrieved a pair and how high: admin-side only, never read by a labeller's view.
CREATE TABLE pool_provenance (
    pair_id INTEGER PRIMARY KEY REFERENCES pairs (pair_id),
    runs TEXT NOT NULL,
    best_rank INTEGER
);
-- Pairs of the pool already judged elsewhere: kept for the record, never shown for judging.
CREATE TABLE prejudged (query_id TEXT NOT NULL, doc_id TEXT NOT NULL, PRIMARY KEY (query_id, doc_id));
CREATE TABLE run_rows (
    run TEXT NOT NULL,
    query_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    score REAL NOT NULL,
    rank INTEGER,
    line INTEGER,
    PRIMARY KEY (run, query_id, doc_id)
);
CREATE TABLE users (
    user_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'labeller')),
    session_epoch INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE assignments (
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    pair_id INTEGER NOT NULL REFERENCES pairs (pair_id),
    position INTEGER NOT NULL,
    PRIMARY KEY (user_id, pair_id),
    UNIQUE (user_id, position)
);
CREATE TABLE invites (
    token_hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
);
CREATE TABLE grade_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL,
    pair_id INTEGER NOT NULL,
    grade INTEGER,
    unsure INTEGER NOT NULL DEFAULT 0 CHECK (unsure IN (0, 1)),
    note TEXT,
    rubric_hash TEXT NOT NULL,
    time_spent_ms INTEGER,
    created_at TEXT NOT NULL,
    FOREIGN KEY (user_id, pair_id) REFERENCES assignments (user_id, pair_id),
    CHECK (grade IS NOT NULL OR unsure = 1)
);
CREATE INDEX grade_events_user_pair ON grade_events (user_id, pair_id, event_id);
CREATE TRIGGER grade_events_no_update BEFORE UPDATE ON grade_events
BEGIN SELECT RAISE(ABORT, 'grade events are append-only'); END;
CREATE TRIGGER grade_events_no_delete BEFORE DELETE ON grade_events
BEGIN SELECT RAISE(ABORT, 'grade events are append-only'); END;
CREATE VIEW current_grades AS
    SELECT e.* FROM grade_events AS e
    JOIN (SELECT MAX(event_id) AS event_id FROM grade_events GROUP BY user_id, pair_id) AS last
    USING (event_id);
CREATE TABLE adjudications (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    pair_id INTEGER NOT NULL REFERENCES pairs (pair_id),
    grade INTEGER NOT NULL,
    user_id INTEGER REFERENCES users (user_id),
    note TEXT,
    rubric_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX adjudications_pair ON adjudications (pair_id, event_id);
CREATE TRIGGER adjudications_no_update BEFORE UPDATE ON adjudications
BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
CREATE TRIGGER adjudications_no_delete BEFORE DELETE ON adjudications
BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
CREATE VIEW current_adjudications AS
    SELECT a.* FROM adjudications AS a
    JOIN (SELECT MAX(event_id) AS event_id FROM adjudications GROUP BY pair_id) AS last
    USING (event_id);
"""

_V2 = """
-- Every rubric the project has used, by content hash; meta.rubric and meta.rubric_hash hold the current one.
CREATE TABLE rubrics (
    rubric_hash TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
-- Calibration rounds (qrelkit.app.phases): each under its own rubric version, on its own pairs.
CREATE TABLE rounds (
    round INTEGER PRIMARY KEY,
    rubric_hash TEXT NOT NULL UNIQUE REFERENCES rubrics (rubric_hash),
    query_rule TEXT NOT NULL CHECK (query_rule IN ('initial', 'drawn', 'same', 'none')),
    seed INTEGER,
    started_at TEXT NOT NULL,
    started_by TEXT,
    note TEXT
);
-- Who grades which pair in a round's calibration (two labellers per pair).
CREATE TABLE round_pairs (
    round INTEGER NOT NULL REFERENCES rounds (round),
    user_id INTEGER NOT NULL,
    pair_id INTEGER NOT NULL,
    PRIMARY KEY (round, user_id, pair_id),
    FOREIGN KEY (user_id, pair_id) REFERENCES assignments (user_id, pair_id)
);
-- The gate's history: evaluated (passed, failed), overridden with a reason, or not measured.
CREATE TABLE gate_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    round INTEGER NOT NULL REFERENCES rounds (round),
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'override', 'not-measured')),
    detail TEXT,
    last_event INTEGER,
    reason TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL
);
CREATE TRIGGER gate_events_no_update BEFORE UPDATE ON gate_events
BEGIN SELECT RAISE(ABORT, 'gate events are append-only'); END;
CREATE TRIGGER gate_events_no_delete BEFORE DELETE ON gate_events
BEGIN SELECT RAISE(ABORT, 'gate events are append-only'); END;
-- A project made before rounds: its rubric and calibration pairs become round 1; without calibration
-- pairs, agreement was not measured and judging stays open.
INSERT INTO rubrics
    SELECT h.value, r.value, COALESCE((SELECT value FROM meta WHERE key = 'created_at'), '')
    FROM meta h, meta r WHERE h.key = 'rubric_hash' AND r.key = 'rubric';
INSERT INTO rounds
    SELECT 1, rubric_hash,
        CASE WHEN EXISTS (SELECT 1 FROM pairs WHERE calibration = 1) THEN 'initial' ELSE 'none' END,
        CAST((SELECT value FROM meta WHERE key = 'seed') AS INTEGER), recorded_at, NULL, NULL
    FROM rubrics;
INSERT INTO round_pairs
    SELECT 1, a.user_id, a.pair_id FROM assignments a JOIN pairs p USING (pair_id)
    WHERE p.calibration = 1 AND EXISTS (SELECT 1 FROM rounds);
INSERT INTO gate_events (round, outcome, reason, created_at)
    SELECT 1, 'not-measured', 'the project was made without calibration pairs, before calibration gated judging',
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    FROM rounds WHERE query_rule = 'none';
"""

_V3 = """
-- Signed-in sessions, by the SHA-256 of the cookie's nonce: sign-out ends one, idleness expires one.
CREATE TABLE sessions (
    session_hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    created_at TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    ended_at TEXT
);
"""

_V4 = """
-- Undoing an adjudication is an event too (qrelkit.app.decisions): the adjudication stays, this row
-- says it no longer counts. A pair's decision is its latest adjudication that was not undone.
CREATE TABLE adjudication_undos (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    adjudication_id INTEGER NOT NULL UNIQUE REFERENCES adjudications (event_id),
    user_id INTEGER REFERENCES users (user_id),
    note TEXT,
    created_at TEXT NOT NULL
);
CREATE TRIGGER adjudication_undos_no_update BEFORE UPDATE ON adjudication_undos
BEGIN SELECT RAISE(ABORT, 'adjudication undos are append-only'); END;
CREATE TRIGGER adjudication_undos_no_delete BEFORE DELETE ON adjudication_undos
BEGIN SELECT RAISE(ABORT, 'adjudication undos are append-only'); END;
DROP VIEW current_adjudications;
CREATE VIEW current_adjudications AS
    SELECT a.* FROM adjudications AS a
    JOIN (SELECT MAX(event_id) AS event_id FROM adjudications
          WHERE event_id NOT IN (SELECT adjudication_id FROM adjudication_undos) GROUP BY pair_id) AS last
    USING (event_id);
"""

_V6 = """
-- The gate's third verdict: agreement could not be measured (qrelkit.app.phases.Unmeasurable), with
-- the reason; and a round's calibration pairs given from one labeller to another (qrelkit.app.phases
-- .reassign), after which the round measures again. SQLite cannot change a CHECK in place: the table is
-- copied under the new one.
CREATE TABLE gate_events_v5 (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    round INTEGER NOT NULL REFERENCES rounds (round),
    outcome TEXT NOT NULL
        CHECK (outcome IN ('passed', 'failed', 'unmeasurable', 'override', 'not-measured', 'reassigned')),
    detail TEXT,
    last_event INTEGER,
    reason TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL
);
INSERT INTO gate_events_v5 SELECT event_id, round, outcome, detail, last_event, reason, decided_by, created_at
    FROM gate_events;
DROP TABLE gate_events;
ALTER TABLE gate_events_v5 RENAME TO gate_events;
CREATE TRIGGER gate_events_no_update BEFORE UPDATE ON gate_events
BEGIN SELECT RAISE(ABORT, 'gate events are append-only'); END;
CREATE TRIGGER gate_events_no_delete BEFORE DELETE ON gate_events
BEGIN SELECT RAISE(ABORT, 'gate events are append-only'); END;
"""

_V7 = """
-- The project's key for signing the manifests of its exports (qrelkit.judgments.manifest.sign_manifest):
-- 32 random bytes, kept here and never written into a manifest.
INSERT INTO meta (key, value) SELECT 'manifest_key', lower(hex(randomblob(32)))
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'manifest_key');
"""

_V8 = """
-- Pairs added after the pool closed (qrelkit.app.extend): each top-up is a segment (the first pool is
-- segment 1 and has no row), judged under the rubric version whose gate had opened judging, with the runs
-- that brought it. (IF NOT EXISTS: a file rolled back to an older version keeps its segments.)
CREATE TABLE IF NOT EXISTS segments (
    segment INTEGER PRIMARY KEY CHECK (segment >= 2),
    round INTEGER NOT NULL REFERENCES rounds (round),
    rubric_hash TEXT NOT NULL REFERENCES rubrics (rubric_hash),
    gate TEXT NOT NULL,
    runs TEXT NOT NULL,
    depth INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT,
    note TEXT
);
CREATE TABLE IF NOT EXISTS segment_pairs (
    pair_id INTEGER PRIMARY KEY REFERENCES pairs (pair_id),
    segment INTEGER NOT NULL REFERENCES segments (segment)
);
CREATE TRIGGER IF NOT EXISTS segments_no_update BEFORE UPDATE ON segments
BEGIN SELECT RAISE(ABORT, 'segments are append-only'); END;
CREATE TRIGGER IF NOT EXISTS segments_no_delete BEFORE DELETE ON segments
BEGIN SELECT RAISE(ABORT, 'segments are append-only'); END;
"""

_V11 = """
-- The live queue's designs (qrelkit.app.design): a judging budget spent by a strategy. A design is
-- 'pending' (asked for at `judge init --order`, the people's queue beyond calibration held until it is
-- planned) or 'planned' (`judge plan`): its chosen pairs, in order, each with its inclusion probability
-- and the person given it. The latest design is in force; earlier ones stay for the record.
CREATE TABLE IF NOT EXISTS designs (
    design INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy TEXT NOT NULL,
    budget INTEGER NOT NULL CHECK (budget >= 1),
    seed INTEGER NOT NULL,
    measure TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'planned')),
    model TEXT,
    judged_before INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    created_by TEXT
);
CREATE TABLE IF NOT EXISTS design_pairs (
    design INTEGER NOT NULL REFERENCES designs (design),
    pair_id INTEGER NOT NULL REFERENCES pairs (pair_id),
    position INTEGER NOT NULL,
    probability REAL NOT NULL CHECK (probability > 0.0 AND probability <= 1.0),
    user_id INTEGER REFERENCES users (user_id),
    PRIMARY KEY (design, pair_id),
    UNIQUE (design, position)
);
CREATE TRIGGER IF NOT EXISTS designs_no_update BEFORE UPDATE ON designs
BEGIN SELECT RAISE(ABORT, 'designs are append-only'); END;
CREATE TRIGGER IF NOT EXISTS designs_no_delete BEFORE DELETE ON designs
BEGIN SELECT RAISE(ABORT, 'designs are append-only'); END;
CREATE TRIGGER IF NOT EXISTS design_pairs_no_update BEFORE UPDATE ON design_pairs
BEGIN SELECT RAISE(ABORT, 'design pairs are append-only'); END;
CREATE TRIGGER IF NOT EXISTS design_pairs_no_delete BEFORE DELETE ON design_pairs
BEGIN SELECT RAISE(ABORT, 'design pairs are append-only'); END;
"""

_V12 = """
-- A planned design's kind when it is not a draw (the rest of the budget drawn with known probabilities):
-- 'round', a focused round (`judge plan --round`: pairs taken with certainty, the draw still to come).
CREATE TABLE IF NOT EXISTS design_kinds (
    design INTEGER PRIMARY KEY REFERENCES designs (design),
    kind TEXT NOT NULL CHECK (kind IN ('round'))
);
CREATE TRIGGER IF NOT EXISTS design_kinds_no_update BEFORE UPDATE ON design_kinds
BEGIN SELECT RAISE(ABORT, 'design kinds are append-only'); END;
CREATE TRIGGER IF NOT EXISTS design_kinds_no_delete BEFORE DELETE ON design_kinds
BEGIN SELECT RAISE(ABORT, 'design kinds are append-only'); END;
"""

#: ``(version, name, sql)``, applied in order; never edit a released entry, append a new one.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "initial schema", _V1),
    (2, "calibration rounds, rubric versions and the gate", _V2),
    (3, "server-side sessions", _V3),
    (4, "undoing an adjudication is an event", _V4),
    (5, "model labellers", _model_schema.MIGRATION),
    (6, "the gate's not measurable outcome and reassigned calibration pairs", _V6),
    (7, "the project's key for signing manifests", _V7),
    (8, "segments: pairs added after the pool closed", _V8),
    (9, "model labellers' roles: predictor, retired", _model_schema.ROLES_MIGRATION),
    (10, "model labellers' grade probabilities", _model_schema.PROBABILITIES_MIGRATION),
    (11, "the live queue's designs: a judging budget spent by a strategy", _V11),
    (12, "the live queue's focused rounds", _V12),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


class Connection(sqlite3.Connection):
    """A store's connection, with ``memo``: what jobs keep between transactions of the writer (each
    labeller's own count of events, say). The writer empties it whenever a job or a transaction rolls
    back, so that it holds only what was committed; a job using it checks ``PRAGMA data_version`` for
    commits of other connections."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo: dict[str, Any] = {}


def _connect(path: Path, *, timeout: float = 30.0, read_only: bool = False) -> sqlite3.Connection:
    if read_only:  # SQLite's own read-only open: no statement of this connection can change the file
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
        if not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists():
            # no connection has the file open for writing (a writer keeps both files while it runs), so
            # nothing is to be read from a log: read the file as it stands, without creating a -shm
            # (SQLite's mode=ro alone would create one, with the database's mode) and without locks
            uri += "&immutable=1"
        conn = sqlite3.connect(uri, timeout=timeout, isolation_level=None, check_same_thread=True, uri=True,
                               factory=Connection)  # fmt: skip
    else:
        conn = sqlite3.connect(
            path, timeout=timeout, isolation_level=None, check_same_thread=True, factory=Connection
        )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def check_project_file(path: str | os.PathLike[str]) -> None:
    """Refuse a file that is not a qrelkit project, or cannot be written, before anything is written beside
    it (``judge serve`` checks this before it creates its lock file). A missing file passes: opening the
    :class:`Store` then says what is wrong."""
    path = Path(path)
    if not path.is_file():
        return
    _check_writable(path)
    try:
        conn = _connect(path, read_only=True)
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"is not an SQLite database, or cannot be opened ({exc})",
            source=str(path),
            fix="name the project database that `qrelkit judge init` created",
        ) from None
    try:
        _check_project(conn, str(path), read_only=False)
    finally:
        conn.close()


#: The mode of the database and its ``-wal`` and ``-shm`` files: the owner's alone.
PRIVATE_MODE = 0o600


def _make_private(path: Path, *, create: bool) -> list[str]:
    """Create the database file 0600, or tighten an existing one (and its -wal, -shm) to 0600 if ours."""
    if create:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))
        return []
    notes = []
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = file.stat()
        except OSError:
            continue
        if st.st_mode & 0o077 == 0:
            continue
        old = f"{st.st_mode & 0o777:04o}"
        try:
            if st.st_uid != os.getuid():
                raise PermissionError
            os.chmod(file, PRIVATE_MODE)
            notes.append(f"{file} was mode {old} (others could read the session secret): now 0600")
        except OSError:
            notes.append(f"{file} is mode {old}: others can read the session secret; chmod 600 it")
    return notes


def _readable_by_others(path: Path) -> list[str]:
    """For a read-only open, which never changes a file: the files others can read, each with the fix."""
    notes = []
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            mode = file.stat().st_mode
        except OSError:
            continue
        if mode & 0o077:
            notes.append(f"{file} is mode {mode & 0o777:04o}: others can read the session secret; "
                         f"`chmod 600 {file}` (a command that changes the project tightens it)")  # fmt: skip
    return notes


def _check_project(conn: sqlite3.Connection, source: str, *, read_only: bool) -> int:
    """The schema version of a qrelkit project file; a clear error for any other file. Nothing is written:
    a database that is not a project (another application's, or bytes that are not SQLite) is refused
    before a migration could create qrelkit's tables in it."""
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"is not an SQLite database ({exc})",
            source=source,
            fix="name the project database that `qrelkit judge init` created",
        ) from None
    if (tables or read_only) and (version == 0 or "schema_migrations" not in tables):
        raise StoreError(
            "is not a qrelkit judging project (no qrelkit schema in this SQLite database)",
            source=source,
            fix="name the project database that `qrelkit judge init` created",
        )
    if read_only and version > SCHEMA_VERSION:  # a newer qrelkit's tables: this one would misread them
        raise _newer_schema(version, source)
    if read_only and version < SCHEMA_VERSION:
        raise StoreError(
            f"the project database has schema version {version}, older than this qrelkit's "
            f"{SCHEMA_VERSION}, and this command only reads",
            source=source,
            fix="run a command that changes the project once (e.g. `qrelkit judge serve`): it migrates the file",
        )
    return version


def _newer_schema(version: int, source: str) -> StoreError:
    """A project file made by a newer qrelkit: refused, whether it would be read or migrated."""
    return StoreError(
        f"the project database has schema version {version}, newer than this qrelkit knows",
        source=source,
        got=version,
        expected=f"version {SCHEMA_VERSION} or lower",
        fix="upgrade qrelkit",
    )


def _check_writable(path: Path) -> None:
    """Refuse to open for writing a project whose file or folder cannot be written (SQLite would fail on
    the first write instead, or could not create its write-ahead log beside the file)."""
    folder = path.resolve().parent
    for target, what in ((path, "the file"), (folder, "its folder")):
        # no write permission bit counts as read-only even for a user (root) whom the system would let write
        if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
            raise StoreError(
                f"the project database is read-only ({what} cannot be written)",
                source=str(path),
                fix="make the file and its folder writable by this user, or copy the project to a "
                "writable folder; status, queue, show and export --labeller only read",
            )


def _migrate(conn: sqlite3.Connection, source: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise _newer_schema(version, source)
    for number, name, sql in MIGRATIONS:
        if number <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if number == 1:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            for statement in _split_sql(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (number, name, now()))
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; ``sqlite3.complete_statement`` keeps triggers and strings whole."""
    statements, current = [], ""
    for piece in script.split(";"):
        current += piece + ";"
        if sqlite3.complete_statement(current):
            text = "\n".join(
                line for line in current.splitlines() if not line.strip().startswith("--")
            ).strip()
            if text.strip("; \n"):
                statements.append(text)
            current = ""
    if current.strip("; \n"):
        statements.append(current.strip())
    return statements


class _Stop:
    pass


class Writer:
    """The single writer: a thread, its connection, and a queue of jobs committed in groups."""

    def __init__(self, path: Path, *, max_batch: int = 256) -> None:
        self.path = path
        self.max_batch = max_batch
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ready = concurrent.futures.Future[None]()
        self._thread = threading.Thread(target=self._run, name=f"qrelkit-writer:{path.name}", daemon=True)
        self._thread.start()
        self._ready.result()  # re-raises a failure to open

    def submit(self, fn: Callable[[sqlite3.Connection], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn(connection)``; the future resolves after the COMMIT that includes it returned."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        if not self._thread.is_alive():
            future.set_exception(StoreError("the store's writer has stopped", source=str(self.path)))
            return future
        self._jobs.put((fn, future))
        return future

    def close(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(_Stop())
            self._thread.join()

    def _run(self) -> None:
        try:
            conn = _connect(self.path)
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while True:
                batch = [self._jobs.get()]
                while len(batch) < self.max_batch:
                    try:
                        batch.append(self._jobs.get_nowait())
                    except queue.Empty:
                        break
                stop = any(isinstance(job, _Stop) for job in batch)
                jobs = [job for job in batch if not isinstance(job, _Stop)]
                if jobs:
                    self._commit(conn, jobs)
                if stop:
                    break
        finally:
            conn.close()

    @staticmethod
    def _commit(conn: sqlite3.Connection, jobs: list[tuple[Callable[..., Any], Any]]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, _ in jobs:
                conn.execute("SAVEPOINT job")
                try:
                    outcomes.append((True, fn(conn)))
                    conn.execute("RELEASE job")
                except BaseException as exc:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    _forget(conn)
                    outcomes.append((False, exc))
            conn.execute("COMMIT")
        except BaseException as exc:
            _forget(conn)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for _, future in jobs:
                future.set_exception(exc)
            return
        for (ok, value), (_, future) in zip(outcomes, jobs, strict=True):
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


def _forget(conn: sqlite3.Connection) -> None:
    """Empty the connection's memo: what it held may be rolled back."""
    memo = getattr(conn, "memo", None)
    if memo is not None:
        memo.clear()


class Store:
    """A judging project database: migrations on open, one writer, per-thread readers.

    ``Store(path, create=True)`` makes a new file (refusing one that exists); ``Store(path)`` opens an
    existing one. Use :meth:`write` (blocking) or :meth:`submit` (a future) for every change and
    :meth:`read` for queries. Close it when done. ``notes`` lists, one line each, the files found readable
    by others on opening (tightened to 0600, or not ours to tighten).

    ``Store(path, read_only=True)`` opens an existing project with SQLite's ``mode=ro``: no migration, no
    writer, and :meth:`write` refuses; the commands that only read use it, so they never change the file.
    Any file that is not a qrelkit project (another SQLite database, random bytes) is refused either way,
    and a project whose file or folder is not writable is refused unless opened read-only.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = False, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        if create and self.path.exists():
            raise StoreError(
                "the project database already exists",
                source=str(self.path),
                fix="choose another path, or delete the file if you mean to start over",
            )
        if create and not self.path.parent.is_dir():
            raise StoreError(
                "the folder to create the project database in does not exist",
                source=str(self.path),
                fix="create the folder first, or choose another path",
            )
        if not create and not self.path.is_file():
            raise StoreError(
                "no project database at this path",
                source=str(self.path),
                fix="create one with `qrelkit judge init`",
            )
        self.read_only = read_only
        if not read_only:
            _check_writable(self.path)
        self.notes = _readable_by_others(self.path) if read_only else _make_private(self.path, create=create)
        try:
            setup = _connect(self.path, read_only=read_only)
        except sqlite3.DatabaseError as exc:  # bytes that are not SQLite fail at the first statement
            raise StoreError(
                f"is not an SQLite database, or cannot be opened ({exc})",
                source=str(self.path),
                fix="name the project database that `qrelkit judge init` created",
            ) from None
        try:
            _check_project(setup, str(self.path), read_only=read_only)
            if not read_only:
                mode = setup.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise StoreError("SQLite refused WAL mode", source=str(self.path), got=mode)
                _migrate(setup, str(self.path))
        finally:
            setup.close()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self.writer = None if read_only else Writer(self.path)
        self._closed = False

    # writes

    def submit(self, fn: Callable[[sqlite3.Connection], T]) -> concurrent.futures.Future[T]:
        if self.writer is None:
            raise StoreError(
                "the project database was opened read-only",
                source=str(self.path),
                fix="open it without read_only",
            )
        return self.writer.submit(fn)

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` in the writer; return its result once committed (or raise its error)."""
        return self.submit(fn).result()

    # reads

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path, read_only=self.read_only)
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on this thread's read-only connection, inside one read transaction."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            return fn(conn)
        finally:
            conn.execute("COMMIT")

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.read(lambda c: c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone())
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        """Record ``value`` under ``key`` in the meta table (replacing an earlier value), once committed."""
        self.write(
            lambda c: c.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )

    def integrity_check(self) -> str:
        rows = self.read(lambda c: c.execute("PRAGMA integrity_check").fetchall())
        return "; ".join(r[0] for r in rows)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.writer is not None:
            self.writer.close()
        with self._readers_lock:
            for conn in self._readers:
                with contextlib.suppress(sqlite3.ProgrammingError):  # opened by another thread
                    conn.close()
            self._readers.clear()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_name(name: str, what: str = "labeller name") -> str:
    """A user name: 1-64 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit."""
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
        raise ValidationError(
            f"{what} {name!r} is not allowed",
            got=name,
            expected="1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            fix="rename it, e.g. alice or j.smith",
        )
    return name
