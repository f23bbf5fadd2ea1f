"""The tables of model labellers (migration 5 of :mod:`qrelkit.app.store`).

A model labeller is a user with the role ``model``: its grades are rows of ``grade_events`` like a
person's, and ``model_grades`` adds what a model's grade carries beyond a person's (the prompt's hash, the
model id, the reply's reason, latency and token counts). ``model_answers`` is the answer cache: a reply
already paid for is never asked again (key: prompt hash, model id and pair). ``model_attempts`` records
every failed attempt with its raw text. ``model_gate_events`` is the model's gate history, apart from the
round's (a model that fails its gate never pauses the people). ``model_audit`` is the audit sample (pairs the model graded, given to a person too); ``probe_pairs`` holds the adversarial pairs
of ``judge model probe``: stored apart from the pool, never shown to people, never exported.

The role is added to ``users``' CHECK in place (SQLite's documented procedure for a change of a CHECK
constraint that leaves the stored rows valid: edit the schema text, then a schema change reloads it).
"""

from __future__ import annotations

__all__ = ["MIGRATION", "PROBABILITIES_MIGRATION", "ROLES_MIGRATION"]

MIGRATION = """
PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = replace(sql, 'CHECK (role IN (''admin'', ''labeller''))',
    'CHECK (role IN (''admin'', ''labeller'', ''model''))') WHERE type = 'table' AND name = 'users';
PRAGMA writable_schema = RESET;
CREATE TABLE model_labellers (
    user_id INTEGER PRIMARY KEY REFERENCES users (user_id),
    kind TEXT NOT NULL CHECK (kind IN ('endpoint', 'command')),
    endpoint TEXT,
    command TEXT,
    model_id TEXT NOT NULL,
    api_key_env TEXT,
    temperature REAL NOT NULL,
    seed INTEGER,
    template TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    max_concurrency INTEGER NOT NULL,
    timeout REAL NOT NULL,
    max_retries INTEGER NOT NULL,
    margin REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE model_grades (
    event_id INTEGER PRIMARY KEY REFERENCES grade_events (event_id),
    prompt_hash TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    model_id TEXT NOT NULL,
    reason TEXT,
    latency_ms INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER
);
CREATE TABLE model_answers (
    cache_key TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    pair_key TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    model_id TEXT NOT NULL,
    grade INTEGER NOT NULL,
    reason TEXT,
    latency_ms INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT NOT NULL
);
CREATE TABLE model_attempts (
    attempt_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    pair_key TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    error TEXT NOT NULL,
    raw TEXT,
    latency_ms INTEGER,
    final INTEGER NOT NULL DEFAULT 0 CHECK (final IN (0, 1)),
    created_at TEXT NOT NULL
);
CREATE TABLE model_gate_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    round INTEGER NOT NULL REFERENCES rounds (round),
    rubric_hash TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'override')),
    detail TEXT,
    reason TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL
);
CREATE TRIGGER model_gate_events_no_update BEFORE UPDATE ON model_gate_events
BEGIN SELECT RAISE(ABORT, 'model gate events are append-only'); END;
CREATE TRIGGER model_gate_events_no_delete BEFORE DELETE ON model_gate_events
BEGIN SELECT RAISE(ABORT, 'model gate events are append-only'); END;
-- The audit sample: pairs a model graded outside calibration, assigned to a person as well.
CREATE TABLE model_audit (
    model_id INTEGER NOT NULL REFERENCES users (user_id),
    pair_id INTEGER NOT NULL REFERENCES pairs (pair_id),
    person_id INTEGER NOT NULL REFERENCES users (user_id),
    created_at TEXT NOT NULL,
    PRIMARY KEY (model_id, pair_id)
);
CREATE TABLE probe_pairs (
    probe_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    rubric_hash TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('stuffing', 'injection', 'order')),
    variant INTEGER NOT NULL,
    pair_id INTEGER NOT NULL REFERENCES pairs (pair_id),
    query_text TEXT NOT NULL,
    document TEXT NOT NULL,
    base_grade INTEGER,
    grade INTEGER,
    reason TEXT,
    error TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (user_id, rubric_hash, kind, variant, pair_id)
);
"""

#: Migration 9: a model labeller's role as events (:mod:`.roles`): predictor, retired.
ROLES_MIGRATION = """
CREATE TABLE IF NOT EXISTS model_role_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    role TEXT NOT NULL CHECK (role IN ('labeller', 'predictor', 'retired')),
    reason TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS model_role_events_no_update BEFORE UPDATE ON model_role_events
BEGIN SELECT RAISE(ABORT, 'model role events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS model_role_events_no_delete BEFORE DELETE ON model_role_events
BEGIN SELECT RAISE(ABORT, 'model role events are append-only'); END;
"""

#: Migration 10: grade probabilities (``judge model add --logprobs N``, a program's ``probabilities``).
#: ``model_logprobs``: a labeller registered to ask for the endpoint's log-probabilities, with the
#: alternatives asked per token (no row: none asked; the labeller's record stays as migration 5 made it).
#: ``model_logprobs_refusals``: each run in which the endpoint refused them (asked without since).
#: ``model_grade_probabilities``: a model grade event's probability of every grade of the scale.
#: ``model_answer_probabilities``: the same for a cached answer, so a grade from the cache carries them.
#: (IF NOT EXISTS: a file rolled back to an older version keeps its rows.)
PROBABILITIES_MIGRATION = """
CREATE TABLE IF NOT EXISTS model_logprobs (
    user_id INTEGER PRIMARY KEY REFERENCES users (user_id),
    top_logprobs INTEGER NOT NULL CHECK (top_logprobs BETWEEN 1 AND 20),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS model_logprobs_refusals (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (user_id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS model_grade_probabilities (
    event_id INTEGER NOT NULL REFERENCES grade_events (event_id),
    grade INTEGER NOT NULL,
    probability REAL NOT NULL CHECK (probability >= 0.0 AND probability <= 1.0),
    PRIMARY KEY (event_id, grade)
);
CREATE TABLE IF NOT EXISTS model_answer_probabilities (
    cache_key TEXT NOT NULL REFERENCES model_answers (cache_key),
    grade INTEGER NOT NULL,
    probability REAL NOT NULL CHECK (probability >= 0.0 AND probability <= 1.0),
    PRIMARY KEY (cache_key, grade)
);
CREATE TRIGGER IF NOT EXISTS model_grade_probabilities_no_update BEFORE UPDATE ON model_grade_probabilities
BEGIN SELECT RAISE(ABORT, 'grade probabilities are append-only'); END;
CREATE TRIGGER IF NOT EXISTS model_grade_probabilities_no_delete BEFORE DELETE ON model_grade_probabilities
BEGIN SELECT RAISE(ABORT, 'grade probabilities are append-only'); END;
"""
