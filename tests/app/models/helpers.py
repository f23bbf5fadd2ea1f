"""Helpers of the model labeller tests: a synthetic project with people's grades, and a real HTTP server on
the loopback interface speaking the chat completions protocol for a scripted labeller."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RUBRIC = """\
[rubric]
name = "model-fixture"
version = "1.0"
description = "Grade how well the document answers the query."
scale = [0, 1, 2, 3]

[[levels]]
grade = 3
label = "Answers it"
question = "Does the document answer the query completely?"

[[levels]]
grade = 2
label = "Answers part"
question = "Does the document answer part of the query?"

[[levels]]
grade = 1
label = "On topic"
question = "Is the document on the topic of the query without answering it?"

[[levels]]
grade = 0
label = "Off topic"
question = "Is the document about something else?"
"""

QUERIES = 12
DOCS = 5


def truth(q: int, d: int) -> int:
    """The pair's true grade: a fixed pattern over the scale."""
    return (q + 2 * d) % 4


def make_synthetic(tmp: Path, *, people: tuple[str, ...] = ("alice", "bob"), calibration: int = 8,
                   min_kappa: float = 0.3, per_query: int | None = None) -> Path:  # fmt: skip
    """A project of QUERIES x DOCS pairs, ``calibration`` calibration queries, the people named."""
    from qrelkit.app.project import init_project

    (tmp / "rubric.toml").write_text(RUBRIC)
    with open(tmp / "queries.tsv", "w") as f:
        for q in range(QUERIES):
            f.write(f"q{q}\tquery number {q} about topic{q}\n")
    with open(tmp / "docs.jsonl", "w") as f, open(tmp / "pool.jsonl", "w") as p:
        for q in range(QUERIES):
            for d in range(DOCS):
                f.write(
                    json.dumps(
                        {
                            "doc_id": f"d{q}-{d}",
                            "title": f"Title {q}-{d}",
                            "text": f"Body of document {q}-{d} with several plain words to read.",
                        }
                    )
                    + "\n"
                )
                p.write(json.dumps({"query_id": f"q{q}", "doc_id": f"d{q}-{d}", "runs": {"sys": d + 1},
                                    "best_rank": d + 1, "calibration": q < calibration}) + "\n")  # fmt: skip
    db = tmp / "project.db"
    init_project(db, rubric=tmp / "rubric.toml", pool=tmp / "pool.jsonl", docs=tmp / "docs.jsonl",
                 queries=tmp / "queries.tsv", labellers=list(people), seed=11, min_kappa=min_kappa,
                 calibration_labellers=per_query)  # fmt: skip
    return db


def key_of(query_id: str, doc_id: str) -> tuple[int, int]:
    q = int(query_id[1:])
    return q, int(doc_id.split("-")[1])


def grade_calibration(db: Path, grader: Callable[[str, str, str], int]) -> None:
    """Every person grades their calibration pairs with ``grader(name, query_id, doc_id)``."""
    from qrelkit.app.grades import record_grade
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    with Store(db) as store:
        rubric = load_rubric_from_store(store)
        rows = store.read(lambda c: c.execute(
            "SELECT u.user_id, u.name, a.position, p.query_id, p.doc_id FROM round_pairs rp "
            "JOIN users u USING (user_id) JOIN assignments a ON a.user_id = rp.user_id AND a.pair_id = rp.pair_id "
            "JOIN pairs p ON p.pair_id = rp.pair_id ORDER BY u.user_id, a.position").fetchall())  # fmt: skip
        for uid, name, pos, q, d in rows:
            g = grader(name, q, d)
            store.write(lambda c, u=uid, p=pos, g=g: record_grade(c, u, p, g, unsure=False, note=None,
                                                                   time_spent_ms=1000, rubric=rubric))  # fmt: skip
        from qrelkit.app.phases import ensure_gate

        ensure_gate(store)


def person(name: str, q: str, d: str) -> int:
    """People: the truth, except that bob moves one pair in seven by one grade."""
    qi, di = key_of(q, d)
    g = truth(qi, di)
    if name == "bob" and (qi * DOCS + di) % 7 == 3:
        return min(3, g + 1)
    if name == "carol" and (qi * DOCS + di) % 9 == 4:
        return max(0, g - 1)
    return g


PAIR_RE = re.compile(r"Query: query number (\d+) about.*?Title (\d+)-(\d+)", re.S)


class ChatServer:
    """A real HTTP server on 127.0.0.1 (http.server in a thread) answering ``POST /v1/chat/completions``.

    ``answer(q, d, prompt)`` gives the grade of the scripted labeller, read from the prompt's query and
    document (the only things a blind prompt holds). ``script`` maps a request count per pair to a
    misbehaviour: ``429`` (with Retry-After), ``500``, ``slow``, ``malformed``, ``offscale``, ``prose``.
    Every request body is kept in ``bodies``.

    Log-probabilities: a request with ``"logprobs": true`` is answered with ``choices[0].logprobs.content``,
    the reply's content cut into tokens as a tokenizer would (``{"``, ``grade``, ``":``, `` 2``, ``,``, the
    rest); the grade token's ``top_logprobs`` are ``logprobs(q, d, grade)`` (``{token: logprob}``), the first
    ``top_logprobs`` of them. ``refuse_logprobs``: such a request is answered 400, as a server without the
    option answers."""

    def __init__(self, answer: Callable[[int, int, str], int], *, key: str | None = None,
                 models: tuple[str, ...] = ("judge-1",), script: dict[tuple[int, int, int], str] | None = None,
                 slow_seconds: float = 3.0, delay: float = 0.0,
                 logprobs: Callable[[int, int, int], dict[str, float]] | None = None,
                 refuse_logprobs: bool = False) -> None:  # fmt: skip
        self.answer, self.key, self.models, self.script = answer, key, models, script or {}
        self.slow_seconds, self.delay = slow_seconds, delay
        self.logprobs, self.refuse_logprobs = logprobs, refuse_logprobs
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.asked: dict[tuple[int, int], int] = {}
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.reply(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        try:
            handler.send_response(status)
            for k, v in (headers or {}).items():
                handler.send_header(k, v)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def reply(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self.lock:
            self.bodies.append(body)
            self.headers.append(dict(handler.headers))
        if handler.path != "/v1/chat/completions":
            return self._send(handler, 404, {"error": "no such route"})
        if self.key is not None and handler.headers.get("Authorization") != f"Bearer {self.key}":
            return self._send(handler, 401, {"error": {"message": "invalid api key"}})
        if body.get("model") not in self.models:
            return self._send(handler, 404, {"error": {"message": f"model {body.get('model')} not found"}})
        prompt = body["messages"][-1]["content"]
        found = PAIR_RE.search(prompt)
        q, d = (int(found.group(2)), int(found.group(3))) if found else (-1, -1)
        with self.lock:
            n = self.asked.get((q, d), 0) + 1
            self.asked[q, d] = n
        if self.delay:
            time.sleep(self.delay)
        trick = self.script.get((q, d, n))
        grade = self.answer(q, d, prompt)
        content: str = json.dumps({"grade": grade, "reason": f"scripted grade {grade}"})
        if trick == "429":
            return self._send(handler, 429, {"error": "slow down"}, {"Retry-After": "1"})
        if trick == "500":
            return self._send(handler, 500, {"error": "boom"})
        if trick == "slow":
            time.sleep(self.slow_seconds)
        if trick == "malformed":
            content = '{"grade": 2, "reason": '
        if trick == "offscale":
            content = json.dumps({"grade": 7, "reason": "very relevant"})
        if trick == "prose":
            content = "I would say this document is highly relevant, maybe a 3."
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}  # fmt: skip
        if body.get("logprobs"):
            if self.refuse_logprobs:
                return self._send(
                    handler, 400, {"error": {"message": "logprobs is not supported by this server"}}
                )
            choice["logprobs"] = {
                "content": self._tokens(content, q, d, grade, int(body.get("top_logprobs", 0)))
            }
        self._send(handler, 200, {"id": "x", "object": "chat.completion", "model": body["model"],
                                  "choices": [choice],
                                  "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})  # fmt: skip
        return None

    def _tokens(self, content: str, q: int, d: int, grade: int, top: int) -> list[dict[str, Any]]:
        """The reply's tokens with their log-probabilities: the grade token's alternatives from ``logprobs``."""
        head = '{"grade": '
        if not content.startswith(head + str(grade)):
            return [{"token": content, "logprob": 0.0, "top_logprobs": []}]
        rest = content[len(head) + len(str(grade)) :]
        alternatives = (self.logprobs or (lambda *_: {}))(q, d, grade)
        tokens = [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": t, "logprob": 0.0}]}
                  for t in ('{"', "grade", '":')]  # fmt: skip
        chosen = f" {grade}"
        listed = sorted(alternatives.items(), key=lambda kv: -kv[1])[:top]
        tokens.append({"token": chosen, "logprob": alternatives.get(chosen, 0.0),
                       "top_logprobs": [{"token": t, "logprob": lp} for t, lp in listed]})  # fmt: skip
        tokens += [{"token": t, "logprob": 0.0, "top_logprobs": []} for t in (rest[:1], rest[1:])]
        return tokens

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def scripted(confusion_seed: int, flip_every: int = 5) -> Callable[[int, int, str], int]:
    """A scripted model: the truth, except every ``flip_every``-th pair is one grade higher (lenient)."""
    rng = random.Random(confusion_seed)
    flips = {(q, d) for q in range(QUERIES) for d in range(DOCS) if rng.randrange(flip_every) == 0}

    def answer(q: int, d: int, prompt: str) -> int:
        g = truth(q, d) if q >= 0 else 0
        return min(3, g + 1) if (q, d) in flips else g

    return answer


def free_port_closed() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
