"""Adding a model labeller: its user (role ``model``), its record, and its assignment.

A model labeller is recorded once: name, endpoint or command, model id, the name of the environment
variable holding its key (never the key), temperature, seed, prompt template and its hash, concurrency,
timeout and retries. Changing any of them is a new labeller under a new name, as a new rubric is a new
round: its grades carry the template's hash and the model id.

Its assignment is every pair of the pool (or the pairs of ``--pairs FILE``, with the current round's
calibration pairs always included), in :func:`qrelkit.app.phases.labeller_order`'s order (calibration
first), in its own rows of ``assignments``: the people's plan is never changed.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.errors import ValidationError, did_you_mean
from qrelkit.rubric import Rubric

from ..phases import labeller_order, phase_of
from ..store import Store, check_name, now
from .client import (
    AttemptFailed,
    ChatClient,
    Client,
    CommandClient,
    EndpointError,
    Reply,
    check_endpoint,
    read_key,
)
from .prompt import PairText, check_template, prompt_hash, render, rubric_payload, template_hash

__all__ = [
    "LIMITS",
    "ROLES",
    "ModelLabeller",
    "add_model",
    "cache_key",
    "cache_probabilities",
    "cached_probabilities",
    "calibration_pair_ids",
    "check_model",
    "load_model",
    "model_labellers",
    "pair_text",
    "read_pairs_file",
]

#: Bounds of the numeric settings: (lowest, highest).
LIMITS = {"temperature": (0.0, 2.0), "max_concurrency": (1, 64), "timeout": (0.1, 3600.0), "max_retries": (0, 20),
          "margin": (0.0, 1.0)}  # fmt: skip
MAX_PAIRS_FILE_LINES = 10_000_000
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
ROLES = ("labeller", "predictor")
"""The roles a model labeller is added with (``--role``; :mod:`.roles`)."""


@dataclass(frozen=True)
class ModelLabeller:
    user_id: int
    name: str
    kind: str  # endpoint or command
    endpoint: str | None
    command: str | None
    model_id: str
    api_key_env: str | None
    temperature: float
    seed: int | None
    template: str
    template_hash: str
    max_concurrency: int
    timeout: float
    max_retries: int
    margin: float
    created_at: str
    #: Token log-probabilities asked per reply (``--logprobs N``: ``top_logprobs``), or ``None``.
    top_logprobs: int | None = None

    @property
    def host(self) -> str | None:
        """The endpoint's host (the manifest records it, never the full URL's path or a key)."""
        return None if self.endpoint is None else urllib.parse.urlsplit(self.endpoint).hostname

    @property
    def cache_identity(self) -> str:
        """What besides the prompt decides a reply: the model id, where it runs, temperature and seed (a
        labeller added again under another name with these unchanged reuses the answers paid for). Asking for
        log-probabilities is part of it: an answer paid for without them is asked again with them."""
        identity = f"{self.model_id}|{self.endpoint or self.command}|{self.temperature!r}|{self.seed}"
        return identity if self.top_logprobs is None else f"{identity}|logprobs={self.top_logprobs}"

    def client(self, rubric: Rubric) -> Client:
        if self.kind == "command":
            assert self.command is not None
            return CommandClient(self.command, scale=rubric.scale, timeout=self.timeout)
        assert self.endpoint is not None
        return ChatClient(self.endpoint, self.model_id, scale=rubric.scale, api_key=read_key(self.api_key_env),
                          api_key_env=self.api_key_env, temperature=self.temperature, seed=self.seed,
                          timeout=self.timeout, top_logprobs=self.top_logprobs)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "model_id": self.model_id,
            "endpoint_host": self.host,
            "command": self.command,
            "api_key_env": self.api_key_env,
            "temperature": self.temperature,
            "seed": self.seed,
            "template_hash": self.template_hash,
            "max_concurrency": self.max_concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "margin": self.margin,
            "created_at": self.created_at,
            "top_logprobs": self.top_logprobs,
        }


def cache_key(prompt_digest: str, model: str, pair_key: str) -> str:
    """The answer cache's key: the prompt's hash, the model (:attr:`ModelLabeller.cache_identity`), the pair."""
    return hashlib.sha256(f"{prompt_digest}\n{model}\n{pair_key}".encode()).hexdigest()


def cache_probabilities(conn: sqlite3.Connection, key: str, probabilities: dict[int, float] | None) -> None:
    """Keep a cached answer's grade probabilities beside it (none given: nothing kept)."""
    if probabilities:
        conn.executemany("INSERT OR IGNORE INTO model_answer_probabilities VALUES (?, ?, ?)",
                         [(key, int(g), float(p)) for g, p in sorted(probabilities.items())])  # fmt: skip


def cached_probabilities(conn: sqlite3.Connection, key: str) -> dict[int, float] | None:
    """A cached answer's grade probabilities, or ``None``."""
    rows = conn.execute(
        "SELECT grade, probability FROM model_answer_probabilities WHERE cache_key = ? ORDER BY grade", (key,)
    ).fetchall()
    return {int(g): float(p) for g, p in rows} or None


def check_model(store: Store, model: ModelLabeller, rubric: Rubric, pair_id: int, *,
                source: str = "the default prompt template") -> tuple[str, str, str, Reply]:  # fmt: skip
    """One request to ``model``'s endpoint (one line to its program) for the grade of ``pair_id``, with no
    retry: ``(cache key, prompt hash, pair key, reply)``; an :class:`~.client.EndpointError` naming the fix
    when no grade comes back (the endpoint unreachable, the model id unknown, the key refused, a reply that
    is not a grade on the scale, the program gone)."""
    query_id, doc_id, text = store.read(lambda c: pair_text(c, pair_id))
    prompt = render(model.template, rubric, text, source=source)
    payload = {"query": text.query, "document": text.document, "rubric": rubric_payload(rubric)}
    client = model.client(rubric)
    try:
        reply = client.ask(str(pair_id), prompt, payload)
    except AttemptFailed as exc:
        raise EndpointError(
            f"--check: the one request got no grade ({exc.error}); the model labeller was not added",
            got=None if exc.raw is None else " ".join(exc.raw.split())[:200],
            fix="check --model and --endpoint (or the --command program) and add it again",
        ) from None
    except EndpointError as exc:
        raise EndpointError(
            f"--check: {exc.problem}; the model labeller was not added", fix=exc.fix
        ) from None
    finally:
        client.close()
    digest, pair_key = prompt_hash(prompt), f"{query_id}\t{doc_id}"
    return cache_key(digest, model.cache_identity, pair_key), digest, pair_key, reply


def _row_to_model(row: sqlite3.Row) -> ModelLabeller:
    return ModelLabeller(
        int(row["user_id"]), row["name"], row["kind"], row["endpoint"], row["command"], row["model_id"],
        row["api_key_env"], float(row["temperature"]), row["seed"], row["template"], row["template_hash"],
        int(row["max_concurrency"]), float(row["timeout"]), int(row["max_retries"]), float(row["margin"]),
        row["created_at"], None if row["top_logprobs"] is None else int(row["top_logprobs"]),
    )  # fmt: skip


#: A model labeller's record joined with its name and the log-probabilities it asks for.
_SELECT = (
    "SELECT m.*, u.name, l.top_logprobs FROM model_labellers m JOIN users u USING (user_id) "
    "LEFT JOIN model_logprobs l USING (user_id)"
)


def model_labellers(conn: sqlite3.Connection) -> list[ModelLabeller]:
    rows = conn.execute(f"{_SELECT} ORDER BY u.name").fetchall()
    return [_row_to_model(r) for r in rows]


def load_model(conn: sqlite3.Connection, name: str) -> ModelLabeller:
    row = conn.execute(f"{_SELECT} WHERE u.name = ?", (name,)).fetchone()
    if row is None:
        names = [r[0] for r in conn.execute("SELECT name FROM users WHERE role = 'model'")]
        raise ValidationError(
            f"no model labeller {name!r} in this project{did_you_mean(name, names)}",
            expected="one of " + ", ".join(sorted(names)) if names else "a model labeller added first",
            fix="add it with `qrelkit judge model add DB NAME --endpoint URL --model ID`",
        )
    return _row_to_model(row)


def calibration_pair_ids(conn: sqlite3.Connection, round_number: int) -> set[int]:
    """The round's calibration pairs: the blind sample the people grade, and the model's gate sample."""
    return {
        r[0]
        for r in conn.execute("SELECT DISTINCT pair_id FROM round_pairs WHERE round = ?", (round_number,))
    }


def pair_text(conn: sqlite3.Connection, pair_id: int) -> tuple[str, str, PairText]:
    """(query id, doc id, what the model sees): the query's text and the document, nothing else."""
    row = conn.execute(
        "SELECT p.query_id, p.doc_id, q.text, d.title, d.text FROM pairs p JOIN queries q USING (query_id) "
        "JOIN docs d USING (doc_id) WHERE p.pair_id = ?",
        (pair_id,),
    ).fetchone()
    return row[0], row[1], PairText(row[2], row[3], row[4])


def read_pairs_file(path: str | Path) -> list[tuple[str, str]]:
    """``--pairs FILE``: one ``query_id doc_id`` a line (blank lines and ``#`` comments skipped)."""
    from qrelkit.formats.inputs import read_lines

    pairs = []
    for number, raw in read_lines(Path(path), "pool", what="pairs file"):
        line = raw.decode("utf-8", errors="replace")
        if number > MAX_PAIRS_FILE_LINES:
            raise ValidationError(f"more than {MAX_PAIRS_FILE_LINES} lines", source=str(path))
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            raise ValidationError(
                f"expected 2 fields (query_id doc_id), got {len(fields)}",
                source=str(path),
                line=number,
                got=line[:200],
                fix="write one query id and one document id a line",
            )
        pairs.append((fields[0], fields[1]))
    return pairs


def _check_settings(name: str, endpoint: str | None, command: str | None, model_id: str | None,
                    api_key_env: str | None, settings: dict[str, Any]) -> tuple[str | None, str]:  # fmt: skip
    check_name(name, "model labeller name")
    if (endpoint is None) == (command is None):
        raise ValidationError(
            "a model labeller needs exactly one of --endpoint and --command",
            fix='--endpoint URL --model ID for a server, or --command "PROGRAM ARGS" for a local program',
        )
    if endpoint is not None:
        endpoint = check_endpoint(endpoint)
        if not model_id:
            raise ValidationError("--endpoint needs --model ID", fix="e.g. --model llama-3.1-8b-instruct")
    if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
        raise ValidationError(
            "--api-key-env names an environment variable, not a key",
            got="(not shown)",
            fix="pass the variable's name, e.g. --api-key-env OPENAI_API_KEY",
        )
    for key, (low, high) in LIMITS.items():
        value = settings[key]
        if not low <= value <= high:
            raise ValidationError(f"--{key.replace('_', '-')} must be between {low} and {high}", got=value)
    if model_id is not None and not 0 < len(model_id) <= 256:
        raise ValidationError("--model is 1 to 256 characters", got=model_id[:300])
    return endpoint, model_id or "command"


def add_model(
    store: Store,
    rubric: Rubric,
    name: str,
    *,
    endpoint: str | None = None,
    command: str | None = None,
    model_id: str | None = None,
    api_key_env: str | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    template: str,
    template_source: str = "the default prompt template",
    max_concurrency: int = 4,
    timeout: float = 60.0,
    max_retries: int = 5,
    margin: float = 0.05,
    pairs: Sequence[tuple[str, str]] | None = None,
    role: str = "labeller",
    check: bool = False,
    by: str | None = None,
    top_logprobs: int | None = None,
) -> dict[str, Any]:
    """Record a model labeller and assign it its pairs (module docstring); returns a summary with the
    prompt of its first calibration pair (``judge model add --show-prompt`` prints it).

    ``role``: ``labeller`` (its grades may replace people's once its gate passed) or ``predictor`` (they only
    predict, corrected by people's: :mod:`.roles`). ``check``: before anything is recorded, ask the endpoint
    (or the program) for the grade of the first calibration pair, once, without retries
    (:func:`check_model`): a model id the server does not serve, a dead endpoint or a program that does not
    answer is refused here, not at the first run; the reply is cached, so the run does not pay for it
    again. ``by``: who made it a predictor (recorded with its role; default: the project's admin).
    ``top_logprobs``: ask the endpoint for each reply's token log-probabilities with that many alternatives, and
    record each grade's probability (:func:`.client.grade_probabilities`); a program prints its own."""
    settings = {"temperature": temperature, "max_concurrency": max_concurrency, "timeout": timeout,
                "max_retries": max_retries, "margin": margin}  # fmt: skip
    endpoint, model = _check_settings(name, endpoint, command, model_id, api_key_env, settings)
    if top_logprobs is not None:
        if command is not None:
            raise ValidationError(
                "--logprobs is for an endpoint; a --command program prints its own probabilities",
                fix='drop --logprobs; the program may print "probabilities" beside its grade (docs/model-labellers.md)',
            )
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or not 1 <= top_logprobs <= 20:
            raise ValidationError("--logprobs is a whole number from 1 to 20", got=top_logprobs,
                                  fix="ask for at least as many alternatives as the scale has grades, e.g. --logprobs 5")  # fmt: skip
    rubric_payload(rubric)  # a rubric without levels is refused here
    check_template(template, template_source)

    if role not in ROLES:
        raise ValidationError(f"unknown role {role!r}", expected=" or ".join(ROLES),
                              fix="--role labeller (may replace people once its gate passed) or --role predictor "
                              "(only predicts, corrected by people's grades)")  # fmt: skip

    if by is not None and not str(by).strip():
        raise ValidationError("--by is empty", fix="name who decides it, e.g. --by ann")
    admin = "SELECT name FROM users WHERE role = 'admin' ORDER BY user_id"
    decided_by = by if by is not None else store.read(lambda c: (c.execute(admin).fetchone() or [None])[0])

    def plan(conn: sqlite3.Connection) -> tuple[set[int], set[int], list[int]]:
        if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
            raise ValidationError(
                f"the project has a user {name!r} already",
                fix="choose a new name: a changed prompt, model or setting is a new labeller version",
            )
        phase = phase_of(conn)
        calibration = calibration_pair_ids(conn, phase.round)
        queries = dict(conn.execute("SELECT pair_id, query_id FROM pairs"))
        chosen = set(queries)
        if pairs is not None:
            ids = {(q, d): p for p, q, d in conn.execute("SELECT pair_id, query_id, doc_id FROM pairs")}
            unknown = [f"{q} {d}" for q, d in pairs if (q, d) not in ids]
            if unknown:
                raise ValidationError(
                    f"{len(unknown)} pair(s) of --pairs are not in the project's pool, first: {unknown[0]}",
                    fix="list pairs of the pool (query_id doc_id)",
                )
            chosen = {ids[p] for p in pairs} | calibration
        seed_value = int(conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0])
        return (
            calibration,
            chosen,
            labeller_order({p: queries[p] for p in chosen}, calibration, seed_value, name),
        )

    checked = None
    if check:  # one request (or one line to the program) before anything is recorded
        calibration, _, order = store.read(plan)
        first = next((p for p in order if p in calibration), order[0] if order else None)
        if first is None:
            raise ValidationError("the model labeller would have no pairs: nothing to check it with")
        probe = ModelLabeller(0, name, "endpoint" if endpoint else "command", endpoint, command, model,
                              api_key_env, float(temperature), seed, template, template_hash(template),
                              max_concurrency, float(timeout), 0, float(margin), "", top_logprobs)  # fmt: skip
        checked = (first, *check_model(store, probe, rubric, first, source=template_source))

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        calibration, chosen, order = plan(conn)
        created = now()
        user_id = conn.execute(
            "INSERT INTO users (name, role, created_at) VALUES (?, 'model', ?)", (name, created)
        ).lastrowid
        conn.execute(
            "INSERT INTO model_labellers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (user_id, "endpoint" if endpoint else "command", endpoint, command, model, api_key_env,
             float(temperature), seed, template, template_hash(template), max_concurrency, float(timeout),
             max_retries, float(margin), created),
        )  # fmt: skip
        if top_logprobs is not None:
            conn.execute("INSERT INTO model_logprobs VALUES (?, ?, ?)", (user_id, top_logprobs, created))
        conn.executemany(
            "INSERT INTO assignments VALUES (?, ?, ?)", [(user_id, p, i) for i, p in enumerate(order)]
        )
        if role != "labeller":
            conn.execute(
                "INSERT INTO model_role_events (user_id, role, reason, decided_by, created_at) VALUES (?, ?, ?, ?, ?)",
                (user_id, role, f"added as a {role} (judge model add --role {role})", decided_by, created),
            )
        if checked is not None:  # the check's reply is paid for: cached, so the run does not ask again
            _, key, digest, pair_key, reply = checked
            conn.execute(
                "INSERT OR IGNORE INTO model_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, user_id, pair_key, digest, model, reply.grade, reply.reason, reply.latency_ms,
                 reply.prompt_tokens, reply.completion_tokens, created),
            )  # fmt: skip
            cache_probabilities(conn, key, reply.probabilities)
        first = next((p for p in order if p in calibration), order[0] if order else None)
        prompt = None
        if first is not None:
            prompt = render(template, rubric, pair_text(conn, first)[2], source=template_source)
        return {"name": name, "model_id": model, "kind": "endpoint" if endpoint else "command",
                "pairs": len(order), "calibration_pairs": len(calibration & chosen),
                "template_hash": template_hash(template), "prompt": prompt, "role": role,
                "top_logprobs": top_logprobs,
                "checked": None if checked is None else {"grade": checked[4].grade,
                                                         "latency_ms": checked[4].latency_ms,
                                                         "probabilities": checked[4].probabilities}}  # fmt: skip

    return store.write(write)
