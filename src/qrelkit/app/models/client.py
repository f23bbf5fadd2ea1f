"""Asking a model labeller for a grade: the chat completions protocol, or a local program's JSON lines.

:class:`ChatClient` speaks the OpenAI-compatible chat completions protocol (``POST {URL}/chat/completions``,
served by vLLM, llama.cpp's server, Ollama, LM Studio and OpenAI) with the standard library: the request
asks for a JSON object of an integer ``grade`` on the rubric's scale and a string ``reason``
(``response_format`` with that JSON schema). :class:`CommandClient` runs a local program once and
exchanges one JSON object a line: ``{"pair_id", "query", "document", "rubric", "prompt"}`` in,
``{"pair_id", "grade", "reason"}`` out (and, optionally, ``"probabilities"``: below).

Grade probabilities. A labeller registered with ``top_logprobs`` N (``judge model add --logprobs N``) asks
the endpoint for token log-probabilities (``"logprobs": true, "top_logprobs": N``); :func:`grade_probabilities`
reads the grade token's alternatives from ``choices[0].logprobs.content`` and gives each grade of the scale
its share (docs/model-labellers.md, "Grade probabilities"). An endpoint that refuses the option (a 400 or
422 to a request that carried it, where the same request without it is answered) is asked without it from
then on, and :attr:`ChatClient.logprobs_refused` says why; one that ignores it answers grades without
probabilities. A program may print ``"probabilities": {"0": p0, ...}`` beside its grade
(:func:`parse_probabilities`). Either way :attr:`Reply.probabilities` holds them, or ``None``.

One call of ``ask`` is one attempt. A reply that is not such an object with a grade on the scale (prose,
malformed JSON, a grade off the scale), a 429 or 5xx status, or no reply within the timeout is an
:class:`AttemptFailed` with the raw text; :func:`ask_with_retries` retries it (waiting what
``Retry-After`` says, or a growing pause) up to ``max_retries`` times. A grade is never guessed from free
text. What no retry can mend (the endpoint unreachable, the key refused, the model unknown, the program
gone) is an :class:`EndpointError`: one line naming the fix, and the run stops.

The key is read from the environment variable the labeller names, held in memory for the request
header, and never written to the database, a log or a message.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import math
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from qrelkit.errors import QrelkitError, ValidationError

__all__ = [
    "MAX_REPLY_BYTES",
    "AttemptFailed",
    "ChatClient",
    "CommandClient",
    "EndpointError",
    "Reply",
    "ask_with_retries",
    "check_endpoint",
    "grade_probabilities",
    "parse_answer",
    "parse_probabilities",
    "read_key",
]

#: The largest reply read (a chat completion, or one line of a program), in bytes.
MAX_REPLY_BYTES = 1 << 20
#: What an echoed key is replaced by in every text stored or printed.
REDACTED = "[key]"
#: The longest wait a ``Retry-After`` is honoured for, and the growing pause without one.
MAX_RETRY_AFTER = 120.0
BACKOFF_START = 0.25
BACKOFF_MAX = 8.0
#: The most alternatives asked per token (``top_logprobs``; OpenAI's own bound).
MAX_TOP_LOGPROBS = 20
#: How far a program's probabilities may sum from 1 before they are refused (they are then normalised).
PROBABILITY_SUM_TOLERANCE = 1e-3


class EndpointError(QrelkitError):
    """The endpoint or the program cannot answer at all: the run stops with this one line."""


class AttemptFailed(Exception):
    """One failed attempt: why, the raw reply (if any), and how long the server asked to wait."""

    def __init__(self, error: str, raw: str | None = None, *, retry_after: float | None = None,
                 latency_ms: int | None = None) -> None:  # fmt: skip
        super().__init__(error)
        self.error = error
        self.raw = raw
        self.retry_after = retry_after
        self.latency_ms = latency_ms


@dataclass(frozen=True)
class Reply:
    grade: int
    reason: str
    latency_ms: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: ``{grade: probability}`` over the whole scale (summing to 1), or ``None`` when the reply gave none.
    probabilities: dict[int, float] | None = None


class Client(Protocol):
    def ask(self, pair_id: str, prompt: str, payload: dict[str, Any]) -> Reply: ...

    def close(self) -> None: ...


def check_endpoint(url: str) -> str:
    """An endpoint URL (``http`` or ``https`` with a host), without a trailing slash."""
    parsed = urllib.parse.urlsplit(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValidationError(
            "the endpoint is not an http(s) URL",
            got=url,
            fix="pass the server's base URL, e.g. --endpoint http://127.0.0.1:8000/v1",
        )
    if parsed.username or parsed.password:
        raise ValidationError(
            "the endpoint URL holds a user name or password",
            fix="drop them from the URL and name the environment variable with the key: --api-key-env VAR",
        )
    return url.rstrip("/")


def read_key(variable: str | None) -> str | None:
    """The key from the environment variable ``variable`` (``None``: no key)."""
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ValidationError(
            f"the environment variable {variable} holds no key",
            fix=f"export {variable}=... before the run (the key is read from there, never stored)",
        )
    return key


def parse_answer(content: str, scale: Sequence[int]) -> tuple[int, str]:
    """The grade and reason of a reply's content: a JSON object with an integer ``grade`` on the scale
    and a string ``reason``; anything else is an :class:`AttemptFailed` carrying the text."""
    try:
        answer = json.loads(content)
    except (ValueError, TypeError, RecursionError):
        raise AttemptFailed("the reply is not a JSON object (prose or malformed JSON)", content) from None
    if not isinstance(answer, dict):
        raise AttemptFailed("the reply is JSON but not an object", content)
    grade, reason = answer.get("grade"), answer.get("reason", "")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise AttemptFailed("the reply has no integer field 'grade'", content)
    if grade not in scale:
        raise AttemptFailed(f"the reply's grade {grade} is not on the rubric's scale {list(scale)}", content)
    if not isinstance(reason, str):
        raise AttemptFailed("the reply's field 'reason' is not a string", content)
    return grade, reason[:2000]


def parse_probabilities(value: Any, scale: Sequence[int]) -> dict[int, float]:
    """A program's ``probabilities`` field: a JSON object ``{"<grade>": probability}`` with grades of the
    scale as keys and numbers in [0, 1] summing to 1 within :data:`PROBABILITY_SUM_TOLERANCE`. A grade left
    out has probability 0; the values are normalised to sum to 1. Anything else is an :class:`AttemptFailed`
    (the grade is not kept without them: a program that means to give probabilities gives them right)."""
    if not isinstance(value, dict) or not value:
        raise AttemptFailed("the field 'probabilities' is not a JSON object of grades to probabilities")
    found: dict[int, float] = {}
    for key, p in value.items():
        try:
            grade = int(key)
        except (TypeError, ValueError):
            raise AttemptFailed(f"the field 'probabilities' has the key {key!r}, not a grade") from None
        if str(grade) != str(key).strip() or grade not in scale:
            raise AttemptFailed(
                f"the field 'probabilities' has the key {key!r}, not a grade of the scale {list(scale)}"
            )
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or not 0 <= p <= 1:
            raise AttemptFailed(f"the probability of grade {grade} is {p!r}, not a number from 0 to 1")
        found[grade] = float(p)
    total = math.fsum(found.values())
    if abs(total - 1.0) > PROBABILITY_SUM_TOLERANCE:
        raise AttemptFailed(
            f"the probabilities sum to {total:.6g}, not 1 (within {PROBABILITY_SUM_TOLERANCE:g})"
        )
    return {g: found.get(g, 0.0) / total for g in scale}


_GRADE_FIELD = re.compile(r'"grade"\s*:\s*(-?\d+)')


def grade_probabilities(logprobs: Any, scale: Sequence[int]) -> dict[int, float] | None:
    """Each grade's probability from a chat completion's ``choices[0].logprobs`` (``{"content": [{"token",
    "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]}``), or ``None`` when they cannot be read.

    The reply's tokens, joined, hold ``"grade": <n>``; the grade token is the one holding the number's
    first character, and the number must lie wholly within it (a grade written over two tokens, as ``-1``
    may be, gives ``None``). What the token holds around the number (a space before, a comma after) is its
    frame; each alternative of ``top_logprobs`` (and the token itself) written as the same frame around a
    grade of the scale counts for that grade, ``exp(logprob)`` summed over the ways of writing it. The
    grades found are normalised to sum to 1 over the scale; **a grade absent from the top list gets 0**
    (its probability is below the smallest listed; ask for at least as many alternatives as the scale has
    grades). No grade of the scale among them: ``None``."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None
    tokens = logprobs["content"]
    texts: list[str] = []
    for item in tokens:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            return None
        texts.append(item["token"])
    joined = "".join(texts)
    found = _GRADE_FIELD.search(joined)
    if found is None:
        return None
    offset, number = found.start(1), found.group(1)
    start = index = 0
    while start + len(texts[index]) <= offset:  # the match lies within the joined tokens
        start += len(texts[index])
        index += 1
    item, text = tokens[index], texts[index]
    prefix, rest = text[: offset - start], text[offset - start :]
    if not rest.startswith(number) or rest[len(number) : len(number) + 1].isdigit():
        return None  # the number goes on in the next token
    frame = re.compile(re.escape(prefix) + r"(-?\d+)" + re.escape(rest[len(number) :]))
    candidates = {text: item.get("logprob")}
    for alternative in item.get("top_logprobs") or ():
        if isinstance(alternative, dict) and isinstance(alternative.get("token"), str):
            candidates.setdefault(alternative["token"], alternative.get("logprob"))
    mass: dict[int, float] = {}
    for token, logprob in candidates.items():
        match = frame.fullmatch(token)
        if match is None or isinstance(logprob, bool) or not isinstance(logprob, int | float):
            continue
        grade = int(match.group(1))
        if grade in scale and not math.isnan(logprob) and logprob != math.inf:
            mass[grade] = mass.get(grade, 0.0) + math.exp(min(float(logprob), 0.0))
    total = math.fsum(mass.values())
    if not mass or total <= 0.0:
        return None
    return {g: mass.get(g, 0.0) / total for g in scale}


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, min(seconds, MAX_RETRY_AFTER))


def response_format(scale: Sequence[int]) -> dict[str, Any]:
    """The JSON schema of a reply: an integer grade on the scale and a string reason."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "relevance_grade",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "grade": {"type": "integer", "enum": list(scale)},
                    "reason": {"type": "string"},
                },
                "required": ["grade", "reason"],
                "additionalProperties": False,
            },
        },
    }


def _timed_out(timeout: float, start: float) -> AttemptFailed:
    return AttemptFailed(f"no reply within {timeout:g} s (--timeout)",
                         latency_ms=int((time.monotonic() - start) * 1000))  # fmt: skip


def _proxy_for(parts: urllib.parse.SplitResult) -> urllib.parse.SplitResult | None:
    """The proxy the environment names for this URL (``https_proxy``, ``http_proxy``, ``no_proxy``), as
    urllib reads them, or None."""
    import urllib.request

    found = urllib.request.getproxies().get(parts.scheme)
    if not found or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxy = urllib.parse.urlsplit(found if "://" in found else f"http://{found}")
    return proxy if proxy.hostname else None


def _proxy_auth(proxy: urllib.parse.SplitResult) -> dict[str, str]:
    if not proxy.username:
        return {}
    import base64

    user = urllib.parse.unquote(proxy.username)
    password = urllib.parse.unquote(proxy.password or "")
    return {"Proxy-Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _post(url: str, data: bytes, headers: dict[str, str], timeout: float) -> tuple[int, Any, bytes]:
    """POST ``data`` to ``url`` once: the status, the headers and at most :data:`MAX_REPLY_BYTES` + 1 bytes
    of the body. ``timeout`` is a deadline for the whole attempt (connecting, sending, the status line,
    the headers and the body): when it passes the socket is shut, whatever trickles in. No redirect is
    followed (``http.client`` follows none): the caller sees the 3xx. A reply that does not speak HTTP (a
    garbage status line, too many or too long headers, a bad chunk size, a body cut short) is an
    :class:`AttemptFailed` naming the fault; an endpoint that cannot be reached is an :class:`EndpointError`."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    proxy = _proxy_for(parts)
    if proxy is None:
        conn = connection_class(parts.hostname or "", parts.port, timeout=timeout)
    else:  # as urllib would: through the proxy the environment names (a tunnel for https)
        conn = connection_class(proxy.hostname or "", proxy.port, timeout=timeout)
        auth = _proxy_auth(proxy)
        if parts.scheme == "https":
            conn.set_tunnel(parts.hostname or "", parts.port, headers=auth)
        else:
            path, headers = url, {**headers, **auth}
    start = time.monotonic()
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        try:
            conn.connect()
        except TimeoutError:
            raise _timed_out(timeout, start) from None
        except OSError as exc:
            if expired.is_set():
                raise _timed_out(timeout, start) from None
            raise EndpointError(
                f"cannot reach the endpoint {url} ({exc.strerror or exc})",
                fix="start the model server, or correct --endpoint (the base URL before /chat/completions)",
            ) from None
        try:
            conn.request("POST", path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read(MAX_REPLY_BYTES + 1)
        except (http.client.HTTPException, ValueError, OSError) as exc:
            if expired.is_set() or isinstance(exc, TimeoutError):
                raise _timed_out(timeout, start) from None
            if isinstance(exc, http.client.HTTPException | ValueError):
                raise AttemptFailed(f"the reply is not valid HTTP ({type(exc).__name__}: {str(exc)[:200]})",
                                    latency_ms=int((time.monotonic() - start) * 1000)) from None  # fmt: skip
            raise AttemptFailed(f"the connection failed ({exc})",
                                latency_ms=int((time.monotonic() - start) * 1000)) from None  # fmt: skip
        if expired.is_set():
            raise _timed_out(timeout, start)
        if len(raw) <= MAX_REPLY_BYTES and response.length:  # the connection closed before the body ended
            raise AttemptFailed(f"the reply is not valid HTTP (its body ended {response.length} bytes short of its "
                                "Content-Length)", latency_ms=int((time.monotonic() - start) * 1000))  # fmt: skip
        if len(raw) > MAX_REPLY_BYTES:
            raise AttemptFailed(f"the reply is larger than {MAX_REPLY_BYTES} bytes",
                                latency_ms=int((time.monotonic() - start) * 1000))  # fmt: skip
        return response.status, response.headers, raw
    finally:
        timer.cancel()
        conn.close()


class ChatClient:
    """The OpenAI-compatible chat completions client (module docstring)."""

    def __init__(self, endpoint: str, model_id: str, *, scale: Sequence[int], api_key: str | None = None,
                 api_key_env: str | None = None, temperature: float = 0.0, seed: int | None = None,
                 timeout: float = 60.0, top_logprobs: int | None = None) -> None:  # fmt: skip
        self.url = check_endpoint(endpoint) + "/chat/completions"
        if top_logprobs is not None and not 1 <= top_logprobs <= MAX_TOP_LOGPROBS:
            raise ValidationError(
                f"--logprobs is a whole number from 1 to {MAX_TOP_LOGPROBS}", got=top_logprobs
            )
        #: The alternatives asked per token, or ``None``: no log-probabilities asked.
        self.top_logprobs = top_logprobs
        #: Why the endpoint refused log-probabilities (``"<status>: <message>"``), once it did: asked without
        #: them from then on.
        self.logprobs_refused: str | None = None
        self._refusal = threading.Lock()
        self.model_id = model_id
        self.scale = tuple(scale)
        self._key = api_key
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout

    @property
    def asks_logprobs(self) -> bool:
        """Whether requests carry ``logprobs``: registered with them, and not refused by the endpoint."""
        return self.top_logprobs is not None and self.logprobs_refused is None

    def body(self, prompt: str, *, logprobs: bool | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature,
            "response_format": response_format(self.scale),
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.asks_logprobs if logprobs is None else logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        return body

    def redact(self, text: str) -> str:
        """``text`` with the key's value (as sent, and as JSON escapes it, in any letter case: an endpoint
        may echo it upper-cased) replaced by ``[key]``: what an endpoint echoes is stored and printed
        without it."""
        if not self._key or not text:
            return text
        for form in {self._key, json.dumps(self._key)[1:-1]}:
            text = re.sub(re.escape(form), REDACTED, text, flags=re.IGNORECASE)
        return text

    def ask(self, pair_id: str, prompt: str, payload: dict[str, Any]) -> Reply:
        try:
            logprobs = self.asks_logprobs
            try:
                reply = self._ask(prompt, logprobs=logprobs)
            except _LogprobsRefused as refused:
                # the same request without logprobs: answered, the endpoint does not take the option
                reply = self._ask(prompt, logprobs=False)
                with self._refusal:
                    self.logprobs_refused = self.logprobs_refused or refused.why
        except AttemptFailed as exc:
            exc.error = self.redact(exc.error)
            exc.raw = None if exc.raw is None else self.redact(exc.raw)
            raise
        return Reply(reply.grade, self.redact(reply.reason), reply.latency_ms, reply.prompt_tokens,
                     reply.completion_tokens, reply.probabilities)  # fmt: skip

    def _ask(self, prompt: str, *, logprobs: bool) -> Reply:
        data = json.dumps(self.body(prompt, logprobs=logprobs)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        start = time.monotonic()
        status, reply_headers, raw = _post(self.url, data, headers, self.timeout)
        latency = int((time.monotonic() - start) * 1000)
        # the key out before anything is cut: a key echoed across a cut would leave its head behind
        text = self.redact(raw.decode("utf-8", errors="replace"))
        if 300 <= status < 400:
            raise AttemptFailed(
                f"the endpoint answered {status}, a redirect to {reply_headers.get('Location', '(no Location)')!r}"
                " (redirects are not followed: the request and its key go to --endpoint only)",
                text[:4000],
                latency_ms=latency,
            )
        if status in (400, 422) and logprobs:
            raise _LogprobsRefused(f"{status}: {' '.join(self.redact(text).split())[:200]}")
        if status >= 400:
            self._status(status, reply_headers, text, latency)
        if not 200 <= status < 300:
            raise AttemptFailed(f"the endpoint answered {status}", text[:4000], latency_ms=latency)
        try:
            message = json.loads(text)
            choice = message["choices"][0]
            content = choice["message"]["content"]
            usage = message.get("usage") or {}
            probabilities = grade_probabilities(choice.get("logprobs"), self.scale) if logprobs else None
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
            raise AttemptFailed(
                "the reply is not a chat completion", text[:4000], latency_ms=latency
            ) from None
        try:
            grade, reason = parse_answer(content, self.scale)
        except AttemptFailed as exc:
            exc.latency_ms = latency
            raise
        tokens = [
            usage.get(k) if isinstance(usage, dict) else None for k in ("prompt_tokens", "completion_tokens")
        ]
        prompt_tokens, completion_tokens = (t if isinstance(t, int) else None for t in tokens)
        return Reply(grade, reason, latency, prompt_tokens, completion_tokens, probabilities)

    def _status(self, code: int, headers: Any, text: str, latency: int) -> None:
        body = self.redact(text)[:4000]
        if code in (401, 403):
            raise EndpointError(
                f"the endpoint refused the key ({code})",
                fix=f"set {self.api_key_env} to a valid key"
                if self.api_key_env
                else "name the environment variable that holds the key: --api-key-env VAR",
            )
        if code == 404:
            raise EndpointError(
                f"the endpoint answered 404 for model {self.model_id!r} at {self.url}",
                fix="pass a model id the server serves (its /models list) as --model, "
                "and the base URL before /chat/completions as --endpoint",
            )
        if code == 429 or code >= 500:
            raise AttemptFailed(f"the endpoint answered {code}", body,
                                retry_after=_retry_after(headers.get("Retry-After")), latency_ms=latency)  # fmt: skip
        raise EndpointError(
            f"the endpoint refused the request ({code}: {' '.join(body.split())[:200]})",
            fix="check that the server supports chat completions with response_format json_schema",
        )

    def close(self) -> None:
        pass


class _LogprobsRefused(Exception):
    """The endpoint refused a request that carried ``logprobs`` (400 or 422): asked again without them."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class CommandClient:
    """A local program, started once in its own process group, answering one JSON line for each JSON line
    it reads.

    ``timeout`` is a deadline for each attempt, writing the request included: a program that stops
    reading its input, or answers nothing, is ended with every process it started (its process group) and
    started again for the next attempt. A program that exits is noticed at once, even when a child it
    left behind still holds its output open."""

    def __init__(self, command: str, *, scale: Sequence[int], timeout: float = 60.0) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValidationError("the --command is empty", fix='e.g. --command "python my_judge.py"')
        self.scale = tuple(scale)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close(), lives as long as the program

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None:
            if self._proc.poll() is None:
                return self._proc
            _end_group(self._proc)  # what the last program left behind
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self._stderr, start_new_session=True)  # fmt: skip
        except OSError as exc:
            raise EndpointError(
                f"cannot start the command {self.argv[0]!r} ({exc.strerror or exc})",
                fix="check the program's path in --command",
            ) from None
        self._lines = queue.SimpleQueue()
        lines = self._lines
        stdout = proc.stdout

        def pump() -> None:
            assert stdout is not None
            for line in iter(lambda: stdout.readline(MAX_REPLY_BYTES + 1), b""):
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self._proc = proc
        return proc

    def _last_error_line(self) -> str:
        self._stderr.seek(0)
        lines = [line for line in self._stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1].strip()[:300] if lines else "no message on stderr"

    def _write(self, proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> bool:
        """Write ``data`` to the program's input by ``deadline``: False when it did not read it in time,
        raises :meth:`_gone` when it is gone."""
        failed: list[BaseException] = []
        stdin = proc.stdin
        assert stdin is not None

        def write() -> None:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as exc:  # a broken pipe; a pipe closed when the group was ended
                failed.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(max(0.0, deadline - time.monotonic()))
        if writer.is_alive():
            return False
        if failed:
            raise self._gone(proc)
        return True

    def _read(self, proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        """The program's next line by ``deadline`` (None when none came), or :meth:`_gone` when it exited."""
        exited_at: float | None = None
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=min(left, POLL_SECONDS))
            except queue.Empty:
                if proc.poll() is not None:  # exited, though a child may hold its output open
                    exited_at = exited_at or time.monotonic()
                    if time.monotonic() - exited_at > EXIT_GRACE_SECONDS:
                        raise self._gone(proc) from None
                continue
            if line is None:
                raise self._gone(proc)
            return line
        return None

    def ask(self, pair_id: str, prompt: str, payload: dict[str, Any]) -> Reply:
        with self._lock:
            proc = self._start()
            message = {"pair_id": pair_id, **payload, "prompt": prompt}
            start = time.monotonic()
            deadline = start + self.timeout
            if not self._write(proc, json.dumps(message, ensure_ascii=False).encode() + b"\n", deadline):
                _end_group(proc)
                raise AttemptFailed(f"the program did not read the request within {self.timeout:g} s "
                                    "(--timeout); it was ended and is started again",
                                    latency_ms=int((time.monotonic() - start) * 1000))  # fmt: skip
            line = self._read(proc, deadline)
            if line is None:
                _end_group(proc)
                raise AttemptFailed(f"no reply within {self.timeout:g} s (--timeout); the program was "
                                    "restarted", latency_ms=int((time.monotonic() - start) * 1000))  # fmt: skip
        latency = int((time.monotonic() - start) * 1000)
        text = line.decode("utf-8", errors="replace").strip()
        try:
            answer = json.loads(text)
        except (ValueError, RecursionError):
            raise AttemptFailed(
                "the program's line is not a JSON object", text[:4000], latency_ms=latency
            ) from None
        if not isinstance(answer, dict) or answer.get("pair_id") != pair_id:
            raise AttemptFailed(f"the program's line does not answer pair_id {pair_id!r}", text[:4000],
                                latency_ms=latency)  # fmt: skip
        grade, reason = parse_answer(json.dumps({k: answer.get(k) for k in ("grade", "reason")}), self.scale)
        probabilities = None
        if answer.get("probabilities") is not None:
            try:
                probabilities = parse_probabilities(answer["probabilities"], self.scale)
            except AttemptFailed as exc:
                raise AttemptFailed(exc.error, text[:4000], latency_ms=latency) from None
        return Reply(grade, reason, latency, probabilities=probabilities)

    def _gone(self, proc: subprocess.Popen[bytes]) -> EndpointError:
        """The error of a program whose output ended: it exited, or it closed its output and runs on (then
        it is ended with its group after a short grace, never waited for without a bound)."""
        try:
            code: int | None = proc.wait(timeout=EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        _end_group(proc)
        if code is None:
            return EndpointError(
                f"the command {self.argv[0]!r} closed its output and kept running; it was ended "
                f"({self._last_error_line()})",
                fix="the program writes one JSON line per request to its output and keeps it open",
            )
        return EndpointError(
            f"the command {self.argv[0]!r} exited (code {code}): {self._last_error_line()}",
            fix="run the command by hand with one JSON line on its input to see why",
        )

    def close(self) -> None:
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                assert proc.stdin is not None
                try:
                    proc.stdin.close()
                    proc.wait(timeout=CLOSE_GRACE_SECONDS)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            _end_group(proc)
        self._stderr.close()


#: How often a wait for a program's line looks whether the program exited, and how long a line it wrote
#: before exiting may take to arrive; how long a program may take to exit once its input is closed.
POLL_SECONDS = 0.05
EXIT_GRACE_SECONDS = 0.2
CLOSE_GRACE_SECONDS = 5.0


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc`` and every process of its group (it leads its own: ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def ask_with_retries(
    client: Client,
    pair_id: str,
    prompt: str,
    payload: dict[str, Any],
    *,
    max_retries: int,
    on_failure: Callable[[AttemptFailed, bool], None],
    sleep: Callable[[float], None] = time.sleep,
) -> Reply | None:
    """One grade, with up to ``max_retries`` retries of failed attempts (each reported to ``on_failure``
    with whether it was the last); ``None`` when every attempt failed."""
    for attempt in range(max_retries + 1):
        try:
            return client.ask(pair_id, prompt, payload)
        except AttemptFailed as exc:
            last = attempt == max_retries
            on_failure(exc, last)
            if last:
                return None
            wait = (
                exc.retry_after
                if exc.retry_after is not None
                else min(BACKOFF_MAX, BACKOFF_START * 2**attempt)
            )
            sleep(wait)
    return None
