"""How the judging app is served: connection limits, a request-read timeout, trusted proxies, one process.

uvicorn alone does not bound a slow client. Its HTTP/1.1 protocol (h11) arms no timer while a request's
headers arrive (the keep-alive timer runs only between requests, and the first byte of the next request
cancels it), so a connection that sends half a request is held for ever; and its ``limit_concurrency``
counts open connections, half-open ones included, and answers every request past the limit with 503, so
a client holding that many half-open requests turns everyone else away instead of itself. With the
usual limit of 1,024 open files, 1,100 half-open requests leave no descriptor to accept anyone else.

:func:`server_config` therefore serves the app with :class:`GuardedH11Protocol`, which adds:

- a **request-read timeout**: from the moment a connection opens, or a response ends, the client has
  ``request_timeout`` seconds to send the whole request (headers and body), or the connection is closed;
  a connection idle between requests is closed after ``keep_alive`` seconds (uvicorn's own timer);
- a **limit per client address**: at most ``per_client`` open connections from one address (trusted
  proxies, which carry everyone's requests, are exempt); a connection past it is closed at once;
- a **limit on all connections**: at most ``max_connections``; a connection past it takes the place of the
  one that has waited longest for a request (idle or half-sent), else it is closed at once.

A client holding many half-open requests thus holds at most ``per_client`` connections, each for at most
``request_timeout`` seconds, and never the server's whole capacity. ``X-Forwarded-For`` and
``X-Forwarded-Proto`` are read only from the addresses in ``trusted_proxies`` (none by default), through
uvicorn's proxy-headers middleware; from anyone else they are ignored.

:func:`serve_lock` lets one ``qrelkit judge serve`` at a time serve a database: the store has one writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import fcntl
import ipaddress
import os
import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from qrelkit.errors import QrelkitError

from ..locks import try_lock_byte

__all__ = [
    "GuardedH11Protocol",
    "ServerLimits",
    "describe",
    "ensure_file_limit",
    "serve_lock",
    "serve_project",
    "server_config",
]


@dataclass(frozen=True)
class ServerLimits:
    """What ``qrelkit judge serve`` allows a client; every default is printed when it starts."""

    #: Seconds a client has to send a whole request once its connection opens or its last response ends.
    request_timeout: float = 10.0
    #: Seconds an idle keep-alive connection is kept between requests.
    keep_alive: int = 5
    #: Open connections in all.
    max_connections: int = 512
    #: Open connections from one client address (trusted proxies exempt).
    per_client: int = 128
    #: Connections taken from the kernel per turn of the event loop, and the kernel's queue of them. asyncio
    #: accepts this many before any is looked at, so the open-file limit must leave room for a few batches.
    backlog: int = 128
    #: Addresses (or networks, ``10.0.0.0/8``) whose ``X-Forwarded-For``/``-Proto`` headers are believed.
    trusted_proxies: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("request_timeout", "keep_alive", "max_connections", "per_client", "backlog"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for proxy in self.trusted_proxies:
            try:
                _networks((proxy,))
            except ValueError:
                raise ValueError(
                    f"a trusted proxy is an IP address or network such as 10.0.0.5 or 10.0.0.0/24, got {proxy!r}"
                ) from None


def describe(limits: ServerLimits) -> str:
    """The limits in one line, as ``serve`` prints them at start."""
    proxies = ", ".join(limits.trusted_proxies) or "none"
    return (
        f"a request must arrive within {limits.request_timeout:g} s; at most {limits.max_connections} "
        f"connections, {limits.per_client} per client address; idle connections close after "
        f"{limits.keep_alive} s; X-Forwarded-For trusted from: {proxies}"
    )


class _Guard:
    """The connections of one server: counts per address, and those waiting for a request, oldest first."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.trusted = _Trusted(limits.trusted_proxies)
        self.open: set[GuardedH11Protocol] = set()
        self.per_address: dict[str, int] = {}
        self.waiting: dict[GuardedH11Protocol, None] = {}  # insertion order: the longest waiting first

    def admit(self, conn: GuardedH11Protocol) -> bool:
        address = conn.address
        if address not in self.trusted and self.per_address.get(address, 0) >= self.limits.per_client:
            return False
        if len(self.open) >= self.limits.max_connections:
            if not self.waiting:
                return False
            oldest = next(iter(self.waiting))
            self.release(oldest)
            oldest.transport.close()
        self.open.add(conn)
        self.per_address[address] = self.per_address.get(address, 0) + 1
        return True

    def release(self, conn: GuardedH11Protocol) -> None:
        self.waiting.pop(conn, None)
        if conn in self.open:
            self.open.discard(conn)
            left = self.per_address[conn.address] - 1
            if left:
                self.per_address[conn.address] = left
            else:
                del self.per_address[conn.address]


def _networks(proxies: tuple[str, ...]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(p, strict=False) for p in proxies]


class _Trusted:
    def __init__(self, proxies: tuple[str, ...]) -> None:
        self.networks = _networks(proxies)

    def __contains__(self, host: str) -> bool:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-read timeout and connection limits (see the module)."""

    guard: ClassVar[_Guard]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        self._timer: asyncio.TimerHandle | None = None
        if not self.guard.admit(self):
            transport.close()
            return
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        if getattr(self, "_timer", None) is not None:
            self._timer.cancel()  # type: ignore[union-attr]
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def _follow(self) -> None:
        """Arm the request timer when the connection starts waiting for (the rest of) a request; disarm it
        once the request is in. Bytes trickling in do not move the deadline."""
        if self.transport.is_closing() or self not in self.guard.open:
            return
        waiting = self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
        if waiting and self._timer is None:
            self._timer = self.loop.call_later(self.guard.limits.request_timeout, self._expire)
            self.guard.waiting[self] = None
        elif not waiting and self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self.guard.waiting.pop(self, None)

    def _expire(self) -> None:
        self._timer = None
        self.guard.release(self)
        if not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, limits: ServerLimits, **options: Any) -> Config:
    """A uvicorn ``Config`` serving ``app`` under ``limits`` (``options`` go to ``Config``: host, port,
    log_level...). Each config gets its own connection guard."""
    protocol = type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": _Guard(limits)})
    return Config(
        app,
        http=protocol,
        timeout_keep_alive=limits.keep_alive,
        limit_concurrency=None,  # it counts half-open connections and answers the others 503: see above
        proxy_headers=bool(limits.trusted_proxies),
        forwarded_allow_ips=list(limits.trusted_proxies) or None,
        workers=1,
        backlog=limits.backlog,
        server_header=False,  # no "server: uvicorn": it names the software to anyone, and costs a header
        **options,
    )


def ensure_file_limit(limits: ServerLimits, *, spare: int = 64) -> tuple[ServerLimits, str | None]:
    """Raise this process's open-file limit to hold ``max_connections``, four accept batches (accepted,
    being looked at, being closed, the next) and ``spare`` more. Past the hard limit, fewer connections
    are allowed: the limits to serve with, and a line saying so (``None`` when nothing changed).

    Running out of files is what a connection flood does to a server otherwise: asyncio stops accepting
    for a second at a time and logs each failure.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    overhead = 4 * limits.backlog + spare
    need = limits.max_connections + overhead
    if soft == resource.RLIM_INFINITY or soft >= need:
        return limits, None
    if hard == resource.RLIM_INFINITY or hard >= need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return limits, None
    allowed = hard - overhead
    if allowed < 1:
        raise QrelkitError(
            f"this process may open {hard} files, too few to serve",
            fix=f"raise the open-file limit (`ulimit -n {need}`)",
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    note = (
        f"this process may open {hard} files: at most {allowed} connections instead of "
        f"{limits.max_connections} (`ulimit -Hn {need}` for more)"
    )
    return dataclasses.replace(
        limits, max_connections=allowed, per_client=min(limits.per_client, allowed)
    ), note


class _Unlocked:
    @staticmethod
    def note(text: str) -> None:
        pass


@contextlib.contextmanager
def serve_lock(db: Path) -> Iterator[Any]:
    """Hold ``DB-serve.lock`` (an exclusive ``flock``, released by the kernel however the process ends)
    while serving; a second ``serve`` of the same database gets a one-line error naming the first. The
    database file itself is locked too (:func:`_identity_lock`): the lock file goes by path, the file's
    lock by device and inode, so a symlink or a hard link to a served database is refused as well.

    The value yielded has ``note(text)``, which records ``text`` (the URL) in the lock file for that
    message. The file is left in place: removing it could let two servers lock two different files.
    """
    path = Path(f"{db}-serve.lock")
    if not Path(db).is_file():  # no database, no lock file left beside nothing: the store says what is wrong
        yield _Unlocked()
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise QrelkitError(
            f"cannot create the lock file {path}: {exc.strerror or exc}",
            fix="serve from a folder you can write to (the database's -wal file goes there too)",
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
            raise QrelkitError(
                f"{db} is already being served ({holder}); one `qrelkit judge serve` per database: "
                "stop that one first, or use its address"
            ) from None

        class _Lock:
            @staticmethod
            def note(text: str) -> None:
                data = f"pid {os.getpid()}{', ' + text if text else ''}\n".encode()
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)

        lock = _Lock()
        lock.note("")
        with _identity_lock(db):
            yield lock
    finally:
        os.close(fd)


#: The byte of the database file the identity lock holds: below the range SQLite's own locks use (from its
#: pending byte, 2**30). Locks are advisory, so pages stored there read and write as ever; a lock past the
#: end of a small file is allowed.
IDENTITY_LOCK_BYTE = 2**30 - 256


@contextlib.contextmanager
def _identity_lock(db: Path) -> Iterator[None]:
    """Lock the database file itself (its device and inode, whatever the path), so that a symlink or a
    hard link to a served database is refused too.

    A lock of one byte SQLite does not use (:func:`qrelkit.app.locks.try_lock_byte`): it neither conflicts
    with SQLite's own locks nor is dropped when another descriptor of the file closes. The descriptor stays
    open until the server is done (after the store closed).
    """
    try:
        fd = os.open(db, os.O_RDWR)
    except OSError as exc:
        raise QrelkitError(f"cannot open {db} to lock it: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not try_lock_byte(fd, IDENTITY_LOCK_BYTE, whole_file_fallback=True):
            raise QrelkitError(
                f"{db} is already being served under another name (the same file, device {st.st_dev} "
                f"inode {st.st_ino}: a symlink or hard link to it); one `qrelkit judge serve` per database: "
                "stop that one first, or use its address"
            )
        yield
    finally:
        os.close(fd)


def serve_project(
    db: Path,
    *,
    host: str,
    port: int,
    base_url: str | None,
    signin_limit: Any,
    idle_timeout: float,
    idle_text: str,
    limits: ServerLimits,
    log_level: str,
    say: Callable[[str], None],
) -> bool:
    """Serve the judging app for ``db`` until stopped (``qrelkit judge serve``); ``say`` prints each line
    meant for the admin. Return whether the server started (the reason it did not was logged).

    The open-file limit is raised for ``limits`` first; the project file is checked before the lock file
    (:func:`serve_lock`) is made beside it; the port is bound before anything is announced; the URL
    labellers open (``base_url``, else ``http://HOST:PORT``) is recorded in ``db`` for invites."""
    import uvicorn

    from ..project import record_base_url
    from ..store import Store, check_project_file
    from . import create_app, listen, server_url

    limits, note = ensure_file_limit(limits)
    if note:
        say(note)
    check_project_file(db)  # before the lock file is made beside it
    with serve_lock(db) as lock:
        sock = listen(host, port)
        try:
            port = sock.getsockname()[1]
            public = base_url or server_url(host, port)
            with Store(db) as store:
                for note in store.notes:
                    say(note)
                if public:
                    record_base_url(store, public)
            app = create_app(db, base_url=base_url, signin_limit=signin_limit, idle_timeout=idle_timeout)
            shown = f"[{host}]" if ":" in host else host
            lock.note(f"http://{shown}:{port}")
            say(f"serving {db} on http://{shown}:{port} (Ctrl-C to stop)")
            if public:
                say(f"invite links (qrelkit judge invite): {public.rstrip('/')}/invite/...")
            else:
                say("invite links: pass --base-url URL, the address labellers open")
            say(f"limits: {describe(limits)}; sessions end after {idle_text} unused")
            server = uvicorn.Server(server_config(app, limits, log_level=log_level, access_log=False))
            server.run(sockets=[sock])
        finally:
            sock.close()
    return bool(server.started)
