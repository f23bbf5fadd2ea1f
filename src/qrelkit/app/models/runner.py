"""Grading a model labeller's pairs: calibration first, the rest once its gate passed; cached, resumable.

Which pairs are open to a model labeller (:func:`.access.full_pool_open`): its calibration pairs (the current
round's blind sample) always; the rest of its assignment only when the people's round is open and the
model's own gate (:mod:`.gate`) passed or was overridden under the current rubric. :func:`record_model_grade`
checks that, as :func:`qrelkit.app.grades.record_grade` checks a person's grade, and appends the grade
event with what a model's grade carries (``model_grades``).

A run (:func:`run_model`) asks for every open pair of the model's assignment without a grade under the
current rubric, in its assignment's order, ``max_concurrency`` at a time. Before asking, it looks the
answer up in the cache (``model_answers``, keyed by the prompt's hash, the model id and the pair): a
reply paid for once is never asked again. The reply, its cache row and its grade event are one
transaction, acknowledged once on disk: a killed run loses only the replies it had not yet written, and
the next run asks only for those. One run (or probe run) of a labeller at a time (:func:`run_lock`), so
that no pair is asked and paid for twice by two runs at once. ``budget_pairs`` bounds the pairs asked of the endpoint (cached ones are
free), ``limit`` the pairs graded. Each failed attempt is a row of ``model_attempts`` with its raw text; a
pair whose every attempt failed stays ungraded, is counted, and is asked again by the next run.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from qrelkit.errors import QrelkitError, ValidationError
from qrelkit.rubric import Rubric

from ..grades import PairClosed, RubricChanged
from ..locks import try_lock_byte
from ..phases import phase_of
from ..store import Store, now
from .access import full_pool_open, role_of
from .audit import assign_audit
from .client import AttemptFailed, Client, EndpointError, Reply, ask_with_retries
from .gate import evaluate_model_gate
from .prompt import prompt_hash, render, rubric_payload
from .register import (
    ModelLabeller,
    cache_key,
    cache_probabilities,
    cached_probabilities,
    calibration_pair_ids,
    load_model,
    pair_text,
)

__all__ = [
    "NothingToSpend",
    "RunSummary",
    "cache_key",
    "open_pairs",
    "record_model_grade",
    "run_lock",
    "run_model",
]

#: Where the lock of a labeller's runs sits in the lock file beside the database: one byte a labeller (its
#: user id past this offset). Locks are advisory: the file holds no data.
RUN_LOCK_BASE = 2**30 - 2**20


def run_lock_path(db: os.PathLike[str] | str) -> str:
    """The file whose bytes :func:`run_lock` locks: ``<db>.run-lock`` beside the database (its real path,
    so two paths to one database share it). Created when missing and never deleted, so that a lock held
    on it is never on a file another process recreated."""
    return os.path.realpath(os.fspath(db)) + ".run-lock"


@contextlib.contextmanager
def run_lock(db: os.PathLike[str] | str, model: ModelLabeller) -> Iterator[None]:
    """Hold the lock of ``model``'s runs while it asks its endpoint: a second ``judge model run`` (or
    ``probe``) of the same labeller, from any process or thread, is refused with one line instead of
    asking and paying for the same pairs again.

    A lock of one byte of :func:`run_lock_path` (:func:`qrelkit.app.locks.try_lock_byte`), a file of its
    own: never the database file, since closing a descriptor of the database would drop the process's POSIX
    locks that SQLite holds on it."""
    path = run_lock_path(db)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise QrelkitError(
            f"cannot open {path} to lock the run: {exc.strerror or exc}",
            fix="run from an account that can write in the database's folder",
        ) from None
    try:
        if not try_lock_byte(fd, RUN_LOCK_BASE + int(model.user_id)):
            raise QrelkitError(
                f"model labeller {model.name!r} is already running on {db} (`judge model run` or `probe`); "
                "one run per labeller at a time, so that no pair is paid for twice",
                fix="wait for that run to end (or stop it), then run again: it asks only for what is left",
            )
        yield
    finally:
        os.close(fd)


class NothingToSpend(QrelkitError):
    """A run that would spend requests on grades that cannot count: the people's own gate failed (or could not
    be measured) and was not overridden, or the model is retired. Exit status 3, as a failed gate's."""

    exit_code = 3


def spending_refused(conn: sqlite3.Connection, model: ModelLabeller) -> NothingToSpend | None:
    """Why a run of ``model`` must not ask its endpoint for anything now, or ``None``."""
    if role_of(conn, model.user_id) == "retired":
        return NothingToSpend(f"model labeller {model.name!r} is retired: it asks for nothing (no run, no probe)",
                              fix="add the model again under a new name to grade again")  # fmt: skip
    phase = phase_of(conn)
    if phase.state == "paused":
        why = "could not be measured" if phase.unmeasurable else "failed"
        return NothingToSpend(
            f"the people's calibration gate of round {phase.round} {why} and was not overridden: a model "
            "held to people who do not agree is not run",
            fix="revise the rubric (`qrelkit judge revise`) or override the people's gate with a reason "
            "(`qrelkit judge override`), then run the model",
        )
    return None


def open_pairs(
    conn: sqlite3.Connection, model: ModelLabeller, *, calibration_only: bool = False
) -> list[int]:
    """The model's open pairs without a grade under the current rubric, in its assignment's order."""
    phase = phase_of(conn)
    calibration = calibration_pair_ids(conn, phase.round)
    everything = not calibration_only and full_pool_open(conn, model.user_id, phase)
    rows = conn.execute(
        "SELECT a.pair_id FROM assignments a WHERE a.user_id = ? AND NOT EXISTS (SELECT 1 FROM grade_events e "
        "WHERE e.user_id = a.user_id AND e.pair_id = a.pair_id AND e.rubric_hash = ?) ORDER BY a.position",
        (model.user_id, phase.rubric_hash),
    ).fetchall()
    return [r[0] for r in rows if everything or r[0] in calibration]


def record_model_grade(conn: sqlite3.Connection, model: ModelLabeller, pair_id: int, reply: Reply, *,
                       digest: str, rubric: Rubric) -> int:  # fmt: skip
    """Append the model's grade event for ``pair_id`` (in the writer), with the same checks as a person's:
    the grade on the scale, the current rubric, the pair assigned and open to the model."""
    rubric.check_grade(reply.grade)
    phase = phase_of(conn)
    if rubric.content_hash != phase.rubric_hash:
        raise RubricChanged("the rubric was revised during the run", fix="run `judge model run` again")
    if not conn.execute(
        "SELECT 1 FROM assignments WHERE user_id = ? AND pair_id = ?", (model.user_id, pair_id)
    ).fetchone():
        raise ValidationError(f"pair {pair_id} is not assigned to model labeller {model.name!r}")
    if role_of(conn, model.user_id) == "retired":
        raise PairClosed(
            f"model labeller {model.name!r} is retired", fix="add the model again under a new name"
        )
    if pair_id not in calibration_pair_ids(conn, phase.round) and not full_pool_open(
        conn, model.user_id, phase
    ):
        raise PairClosed(
            f"the full pool is closed to model labeller {model.name!r} until its gate passes",
            fix="grade the calibration pairs first and see `qrelkit judge model status`",
        )
    event_id = int(conn.execute(
        "INSERT INTO grade_events (user_id, pair_id, grade, unsure, note, rubric_hash, time_spent_ms, created_at) "
        "VALUES (?, ?, ?, 0, NULL, ?, ?, ?)",
        (model.user_id, pair_id, reply.grade, rubric.content_hash, reply.latency_ms, now()),
    ).lastrowid or 0)  # fmt: skip
    conn.execute(
        "INSERT INTO model_grades VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (event_id, digest, model.template_hash, model.model_id, reply.reason, reply.latency_ms,
         reply.prompt_tokens, reply.completion_tokens),
    )  # fmt: skip
    if reply.probabilities:
        conn.executemany("INSERT INTO model_grade_probabilities VALUES (?, ?, ?)",
                         [(event_id, int(g), float(p)) for g, p in sorted(reply.probabilities.items())])  # fmt: skip
    return event_id


@dataclass
class RunSummary:
    """What a run did: pairs graded (asked and from the cache), failed, left (budget or limit), the gate."""

    model: str
    graded: int = 0
    asked: int = 0
    cached: int = 0
    failed_pairs: int = 0
    failed_attempts: int = 0
    left: int = 0
    tokens: int = 0
    gate: dict[str, Any] | None = None
    audit: dict[str, Any] | None = None
    phases: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


Progress = Callable[[RunSummary, int], None]


def _grade_pairs(store: Store, model: ModelLabeller, rubric: Rubric, client: Client, pair_ids: list[int],
                 summary: RunSummary, budget: list[int | None], progress: Progress | None) -> None:  # fmt: skip
    """Grade ``pair_ids`` with ``max_concurrency`` threads; stop at the budget or the first fatal error."""
    lock = threading.Lock()
    stop = threading.Event()
    fatal: list[BaseException] = []
    texts = store.read(lambda c: {p: pair_text(c, p) for p in pair_ids})
    payload_rubric = rubric_payload(rubric)
    total = len(pair_ids)
    redact: Callable[[str], str] = getattr(client, "redact", lambda text: text)

    def one(pair_id: int) -> None:
        if stop.is_set():
            return
        query_id, doc_id, text = texts[pair_id]
        prompt = render(model.template, rubric, text)
        digest, pair_key = prompt_hash(prompt), f"{query_id}\t{doc_id}"
        key = cache_key(digest, model.cache_identity, pair_key)
        cached, kept = store.read(lambda c: (
            c.execute("SELECT * FROM model_answers WHERE cache_key = ?", (key,)).fetchone(),
            cached_probabilities(c, key)))  # fmt: skip
        if cached is not None:
            reply = Reply(int(cached["grade"]), cached["reason"] or "", int(cached["latency_ms"] or 0),
                          cached["prompt_tokens"], cached["completion_tokens"], kept)  # fmt: skip
        else:
            with lock:
                if budget[0] is not None and budget[0] <= 0:
                    summary.left += 1
                    return
                if budget[0] is not None:
                    budget[0] -= 1

            def failed(exc: AttemptFailed, last: bool) -> None:
                raw = None if exc.raw is None else redact(exc.raw)[:4000]  # the key out, then the cut
                store.write(lambda c: c.execute(
                    "INSERT INTO model_attempts (user_id, pair_key, prompt_hash, error, raw, latency_ms, final, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (model.user_id, pair_key, digest, redact(exc.error), raw,
                     exc.latency_ms, int(last), now())))  # fmt: skip
                with lock:
                    summary.failed_attempts += 1

            payload = {"query": text.query, "document": text.document, "rubric": payload_rubric}
            try:
                answer = ask_with_retries(client, str(pair_id), prompt, payload,
                                          max_retries=model.max_retries, on_failure=failed)  # fmt: skip
            except EndpointError as exc:
                fatal.append(exc)
                stop.set()
                return
            if answer is None:
                with lock:
                    summary.failed_pairs += 1
                    if progress:
                        progress(summary, total)
                return
            reply = answer

        def write(conn: sqlite3.Connection) -> None:
            if cached is None:
                conn.execute(
                    "INSERT OR IGNORE INTO model_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, model.user_id, pair_key, digest, model.model_id, reply.grade, reply.reason,
                     reply.latency_ms, reply.prompt_tokens, reply.completion_tokens, now()),
                )  # fmt: skip
                cache_probabilities(conn, key, reply.probabilities)
            record_model_grade(conn, model, pair_id, reply, digest=digest, rubric=rubric)

        store.write(write)
        with lock:
            summary.graded += 1
            summary.cached += cached is not None
            summary.asked += cached is None
            summary.tokens += (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
            if progress:
                progress(summary, total)

    with ThreadPoolExecutor(max_workers=model.max_concurrency, thread_name_prefix="qrelkit-model") as pool:
        for future in [pool.submit(one, p) for p in pair_ids]:
            exc = future.exception()
            if exc is not None and not fatal:
                fatal.append(exc)
                stop.set()
    if fatal:
        raise fatal[0]


def run_model(
    store: Store,
    name: str,
    *,
    calibration_only: bool = False,
    limit: int | None = None,
    budget_pairs: int | None = None,
    audit_share: float = 0.05,
    progress: Progress | None = None,
    client: Client | None = None,
) -> RunSummary:
    """Grade the model's open pairs (module docstring): calibration, its gate, then the rest, and give
    people the audit sample of its grades (``audit_share``, :mod:`.audit`)."""
    from qrelkit.app.project import load_rubric_from_store

    for value, what in ((limit, "--limit"), (budget_pairs, "--budget-pairs")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValidationError(f"{what} is a whole number >= 0", got=value)
    model = store.read(lambda c: load_model(c, name))
    refused = store.read(lambda c: spending_refused(c, model))
    if refused is not None:
        raise refused
    rubric = load_rubric_from_store(store)
    rubric_payload(rubric)
    summary = RunSummary(model.name)
    budget: list[int | None] = [budget_pairs]
    with run_lock(store.path, model):
        own = client or model.client(rubric)
        try:
            _run_stages(store, model, rubric, own, summary, budget, calibration_only=calibration_only,
                        limit=limit, audit_share=audit_share, progress=progress)  # fmt: skip
        finally:
            record_logprobs_refusal(store, model, own)
            if client is None:
                own.close()
    return summary


def record_logprobs_refusal(store: Store, model: ModelLabeller, client: Client) -> None:
    """Record that the endpoint refused log-probabilities during this run (:attr:`.client.ChatClient
    .logprobs_refused`): ``judge model status`` says so, and the grades since carry no probabilities."""
    why = getattr(client, "logprobs_refused", None)
    if why:
        store.write(lambda c: c.execute(
            "INSERT INTO model_logprobs_refusals (user_id, reason, created_at) VALUES (?, ?, ?)",
            (model.user_id, str(why)[:300], now())))  # fmt: skip


def _run_stages(store: Store, model: ModelLabeller, rubric: Rubric, client: Client, summary: RunSummary,
                budget: list[int | None], *, calibration_only: bool, limit: int | None, audit_share: float,
                progress: Progress | None) -> None:  # fmt: skip
    """Calibration, the gate, then the rest of the pool, and the audit sample (:func:`run_model`)."""
    tried: set[int] = set()
    for stage in ("calibration", "pool"):
        if stage == "pool":
            summary.gate = evaluate_model_gate(store, model.name)
            if calibration_only:
                break
        found = store.read(partial(open_pairs, model=model, calibration_only=stage == "calibration"))
        pairs = [p for p in found if p not in tried]
        if limit is not None:
            pairs = pairs[: max(0, limit - summary.graded - summary.failed_pairs)]
        tried.update(pairs)
        if pairs:
            summary.phases.append(stage)
            _grade_pairs(store, model, rubric, client, pairs, summary, budget, progress)
    if not calibration_only and store.read(lambda c: full_pool_open(c, model.user_id, phase_of(c))):
        # a predictor's grades are corrected by the calibration sample, so it has no audit sample of its own;
        # its pairs whose document carries instruction-like text still go to people (share 0: those only)
        predictor = store.read(lambda c: role_of(c, model.user_id)) != "labeller"
        summary.audit = assign_audit(store, model.name, share=0.0 if predictor else audit_share)
