"""Sessions, CSRF tokens, sign-in rate limiting, bounded form parsing and security headers.

- The session is a cookie signed with the project secret (itsdangerous), HTTP-only, ``SameSite=Lax``,
  ``Secure`` over HTTPS. It holds the user id, the user's session epoch and a random nonce; a visitor
  without an account gets a nonce-only session so that the sign-in form has a CSRF token too. The nonce
  is replaced at sign-in (no session fixation).
- A signed-in session also lives on the server: a row of the ``sessions`` table, keyed by the SHA-256 of
  the nonce. Signing out ends the row, so the cookie, replayed, is refused; a session unused for longer
  than the idle timeout (default 12 hours) is refused too. Use refreshes ``last_seen`` at most every
  tenth of the timeout (and at least every minute), so that reading pages costs a write that rarely.
- Live sessions are also kept in memory, so that a request reads neither the cookie's signature nor the
  session's row again: a verified cookie is remembered with the time it was signed (its age is checked on
  every use), a live row with its ``last_seen``. The rows stay the record: a new ``last_seen`` is written
  through to the table before memory has it, a session not in memory (after a restart, say) is read back
  from its row, and a sign-out forgets the session in memory before its row is ended, for good. One server
  serves a database at a time (``judge serve``'s lock), and only the app writes this table, so memory
  cannot miss a change; revocation (``judge revoke``) moves the user's epoch, which every request reads
  from the users table, so it takes effect at the next request. Both memories are bounded
  (:data:`REMEMBERED`): when full they are emptied and refilled from the rows.
- The CSRF token is an HMAC of the nonce; every POST must carry it (form field ``csrf_token`` or header
  ``X-CSRF-Token``), and a POST whose ``Origin`` header names another site (or is opaque, ``null``) is
  refused as well.
- Failed sign-in attempts are limited per client address with a sliding window; an attempt counts from
  the moment it starts (and is taken back if it succeeds), so concurrent failures cannot pass the limit.
- Form bodies are read with a size limit and parsed strictly (UTF-8, bounded field count, no repeats).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .store import Store

SESSION_COOKIE = "qrelkit_session"
SESSION_MAX_AGE = 30 * 24 * 3600
#: A signed-in session unused this long (seconds) is over: ``judge serve --idle-timeout``.
DEFAULT_IDLE_TIMEOUT = 12 * 3600.0
#: At most this many verified cookies, and as many live sessions, are kept in memory (then emptied).
REMEMBERED = 10_000

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def _stamp(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seconds(stamp: str) -> float:
    return _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _session_key(session: dict[str, Any]) -> str:
    return hashlib.sha256(str(session.get("n", "")).encode()).hexdigest()


class Sessions:
    """Session cookies and their rows on the server.

    ``idle_timeout`` is in seconds; ``clock`` gives the time in seconds since the epoch (``time.time``),
    and is a parameter so that an idle timeout can be tested without waiting for it.
    """

    def __init__(
        self,
        secret: str,
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if idle_timeout <= 0:
            raise ValueError(f"the idle timeout must be positive, got {idle_timeout}")
        self._serializer = URLSafeTimedSerializer(secret, salt="qrelkit.app.session")
        self._csrf_key = hashlib.sha256(("csrf:" + secret).encode()).digest()
        self.idle_timeout, self.clock = idle_timeout, clock
        self._refresh = min(60.0, idle_timeout / 10)
        self._lock = threading.Lock()
        self._cookies: dict[str, tuple[dict[str, Any], float]] = {}  # verified cookie -> (data, signed at)
        self._live: dict[str, tuple[int, float]] = {}  # session key -> (user id, last_seen as stored)
        self._ended: set[str] = set()  # signed out while this process runs: never live again

    def load(self, request: Request) -> dict[str, Any]:
        raw = request.cookies.get(SESSION_COOKIE)
        if not raw or len(raw) > 1024:
            return {}
        known = self._cookies.get(raw)
        if known is not None and time.time() - known[1] <= SESSION_MAX_AGE:  # as the serializer checks
            return dict(known[0])
        try:
            data, signed = self._serializer.loads(raw, max_age=SESSION_MAX_AGE, return_timestamp=True)
        except BadSignature:
            return {}
        if not (isinstance(data, dict) and isinstance(data.get("n"), str)):
            return {}
        with self._lock:
            if len(self._cookies) >= REMEMBERED:
                self._cookies.clear()
            self._cookies[raw] = (data, signed.timestamp())
        return dict(data)

    def dump(self, data: dict[str, Any]) -> str:
        return self._serializer.dumps(data)

    @staticmethod
    def new(user_id: int | None = None, epoch: int = 0) -> dict[str, Any]:
        data: dict[str, Any] = {"n": secrets.token_urlsafe(16)}
        if user_id is not None:
            data.update(u=user_id, e=epoch)
        return data

    def begin(self, conn: sqlite3.Connection, user_id: int, epoch: int) -> dict[str, Any]:
        """A new signed-in session for ``user_id`` (a writer job): its row, and the cookie's data."""
        session = self.new(user_id, epoch)
        t = _stamp(self.clock())
        conn.execute(
            "INSERT INTO sessions (session_hash, user_id, created_at, last_seen) VALUES (?, ?, ?, ?)",
            (_session_key(session), user_id, t, t),
        )
        return session

    def end(self, conn: sqlite3.Connection, session: dict[str, Any]) -> None:
        """End the session on the server (a writer job): its cookie is refused from now on."""
        key = _session_key(session)
        with self._lock:  # first in memory: from here on no request takes it for live, nor reads it back
            self._ended.add(key)
            self._live.pop(key, None)
        conn.execute(
            "UPDATE sessions SET ended_at = ? WHERE session_hash = ? AND ended_at IS NULL",
            (_stamp(self.clock()), _session_key(session)),
        )

    def active(self, store: Store, session: dict[str, Any], user_id: int) -> bool:
        """Whether the signed-in session is live on the server: not ended, used within the idle timeout.

        A live session's ``last_seen`` is moved on when it is older than the refresh interval, in its row
        first and then in memory. A session not in memory is read from its row.
        """
        key = _session_key(session)
        live = self._live.get(key)
        if live is None:
            row = store.read(
                lambda c: c.execute(
                    "SELECT user_id, last_seen, ended_at FROM sessions WHERE session_hash = ?", (key,)
                ).fetchone()
            )
            if row is None or row["ended_at"] is not None:
                return False
            live = (int(row["user_id"]), _seconds(row["last_seen"]))
            self._remember(key, live)
        if live[0] != user_id:
            return False
        t = self.clock()
        idle = t - live[1]
        if idle > self.idle_timeout:
            with self._lock:
                self._live.pop(key, None)
            return False
        if idle > self._refresh:
            stamp = _stamp(t)
            store.write(
                lambda c: c.execute(
                    "UPDATE sessions SET last_seen = ? WHERE session_hash = ? AND ended_at IS NULL",
                    (stamp, key),
                )
            )
            self._remember(key, (live[0], _seconds(stamp)))
        return True

    def _remember(self, key: str, live: tuple[int, float]) -> None:
        """Keep ``key`` live in memory, unless it was signed out meanwhile."""
        with self._lock:
            if key in self._ended:
                return
            if len(self._live) >= REMEMBERED:
                self._live.clear()
            if len(self._ended) >= REMEMBERED:
                self._ended.clear()  # their rows are ended: read back, they stay refused
            self._live[key] = live

    def csrf_token(self, session: dict[str, Any]) -> str:
        return hmac.new(self._csrf_key, session.get("n", "").encode(), hashlib.sha256).hexdigest()

    def check_csrf(self, request: Request, session: dict[str, Any], form: dict[str, str]) -> None:
        origin = request.headers.get("origin")
        if origin is not None:  # browsers send it on every POST; "null" (an opaque origin) is refused too
            expected = f"{request.url.scheme}://{request.headers.get('host', '')}"
            if origin != expected:
                raise HTTPException(403, "cross-site request refused")
        sent = form.get("csrf_token") or request.headers.get("x-csrf-token") or ""
        if not session.get("n") or not hmac.compare_digest(sent.encode(), self.csrf_token(session).encode()):
            raise HTTPException(403, "missing or invalid CSRF token: reload the page and try again")

    def set_cookie(self, response: Any, request: Request, session: dict[str, Any]) -> None:
        response.set_cookie(
            SESSION_COOKIE,
            self.dump(session),
            max_age=SESSION_MAX_AGE,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
            path="/",
        )


class RateLimiter:
    """At most ``limit`` failures per ``window`` seconds per key (sliding window, in memory).

    Sign-in counts failures (an unknown, used or expired link; a missing CSRF token): a valid link cannot
    be guessed, so successes need no limit, and twenty labellers behind one office address can all sign
    in at nine o'clock. An attempt counts as a failure from the moment it starts (:meth:`attempt`, one
    step under the lock) and is taken back when it succeeds (:meth:`succeeded`): many concurrent bad
    attempts cannot pass the limit while each waits for its answer. Once a key is over its limit every
    attempt is refused until the window passes. While some of the attempts that fill the limit are still
    in flight (:meth:`in_flight`; :meth:`settled` ends one), a caller may wait for them instead of refusing:
    they may yet succeed, and so free their place.
    """

    def __init__(self, limit: int, window: float) -> None:
        self.limit, self.window = limit, window
        self._events: dict[str, deque[float]] = {}
        self._flying: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, t: float) -> deque[float]:
        if len(self._events) > 10_000:  # forget idle keys rather than grow without bound
            self._events = {k: v for k, v in self._events.items() if v and v[-1] > t - self.window}
        q = self._events.setdefault(key, deque())
        while q and q[0] <= t - self.window:
            q.popleft()
        return q

    def attempt(self, key: str) -> float | None:
        """Start an attempt, counted as failed until :meth:`succeeded`; ``None`` (refuse it) while the key
        has ``limit`` failures within the window. The value returned is the attempt's ticket."""
        t = time.monotonic()
        with self._lock:
            q = self._recent(key, t)
            if len(q) >= self.limit:
                return None
            q.append(t)
            self._flying.setdefault(key, []).append(t)
            return t

    def in_flight(self, key: str) -> bool:
        """Whether an attempt of ``key`` has started and not yet :meth:`settled`."""
        with self._lock:
            return bool(self._flying.get(key))

    def settled(self, key: str, ticket: float) -> None:
        """The attempt ``ticket`` has its answer (it stays a failure unless it :meth:`succeeded`)."""
        with self._lock:
            flying = self._flying.get(key)
            if flying is not None and ticket in flying:
                flying.remove(ticket)
                if not flying:
                    del self._flying[key]

    def succeeded(self, key: str, ticket: float) -> None:
        """The attempt ``ticket`` succeeded: it no longer counts."""
        with self._lock:
            q = self._events.get(key)
            if q is not None and ticket in q:
                q.remove(ticket)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def parse_duration(text: str) -> float:
    """``"12h"`` -> 43200.0 seconds; a number alone is seconds; units ``s``, ``m``, ``h``, ``d``."""
    found = _DURATION.fullmatch(text.strip())
    seconds = (
        float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)]
        if found
        else 0
    )
    if seconds <= 0:
        raise ValueError(f"expected a duration such as 12h, 30m or 90s, got {text!r}")
    return seconds


def parse_limit(text: str) -> tuple[int, float]:
    """``"10/60"`` -> (10, 60.0): at most 10 failed sign-in attempts per 60 seconds."""
    count, _, seconds = text.partition("/")
    try:
        limit, window = int(count), float(seconds or 60)
    except ValueError:
        raise ValueError(f"expected ATTEMPTS/SECONDS such as 10/60, got {text!r}") from None
    if limit < 1 or window <= 0:
        raise ValueError(f"expected ATTEMPTS/SECONDS such as 10/60, got {text!r}")
    return limit, window


async def read_form(request: Request, *, max_bytes: int, max_fields: int = 16) -> dict[str, str]:
    """Read an ``application/x-www-form-urlencoded`` body strictly; 413/415/400 on anything else."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise HTTPException(415, "expected a form (application/x-www-form-urlencoded)")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > max_bytes):
        raise HTTPException(413, f"form larger than {max_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise HTTPException(413, f"form larger than {max_bytes} bytes")
    try:
        text = bytes(body).decode("utf-8")
        pairs = urllib.parse.parse_qsl(
            text, keep_blank_values=True, strict_parsing=bool(text), max_num_fields=max_fields,
            errors="strict",
        )  # fmt: skip
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "malformed form") from None
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            raise HTTPException(400, f"form field {key!r} given twice")
        if "\x00" in value:
            raise HTTPException(400, "malformed form")
        form[key] = value
    return form


_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
_PAGE_HEADERS = (*_HEADERS, (b"cache-control", b"no-store"))
_STATIC_HEADERS = (*_HEADERS, (b"cache-control", b"public, max-age=300"))


class SecurityHeaders:
    """Adds CSP, no-sniff, a same-origin referrer policy (invite tokens live in URLs: they must not reach
    another site, while our own POSTs keep their Origin header) and no-store to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = _STATIC_HEADERS if scope.get("path", "").startswith("/static/") else _PAGE_HEADERS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *added]
            await send(message)

        await self.app(scope, receive, send_with_headers)
