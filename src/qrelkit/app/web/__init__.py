"""The judging web app: an ASGI application factory (Starlette), served by uvicorn.

``create_app(db_path)`` returns the app for one project database. Pages are rendered on the server
(Jinja2, autoescaped: a document's HTML is shown as text) with one small script for the keyboard.

The handlers are plain functions of the request, grouped by who uses them: :mod:`.auth` (sign-in by
invite link, sessions, sign-out, CSRF, the sign-in limit), :mod:`.labeller` (the labelling pages and
the grade API), :mod:`.admin` (the admin page, progress, kappa, the queue, invites, one pair) and
:mod:`.exports` (downloads). They read the project from the :class:`~.state.AppState` that
:func:`create_app` stores as ``app.state.judging``; the SQL they need lives in :mod:`..queries`, and
the rules in :mod:`..grades` and :mod:`..project`. ``ROUTES`` below is every URL the app answers.

Routes
    GET  /                      where to go: the labeller page, the admin page, or "use your invite link"
    GET  /invite/{token}        confirm sign-in with a one-time link; POST the same URL to sign in
    POST /signout
    GET  /label                 the labeller's next ungraded open pair (or "all done", "waiting for the gate",
                                "judging is paused for a rubric revision")
    GET  /label/{position}      one open pair of the labeller's own order; POST grades it (403 when closed)
    GET  /review                the labeller's own grades, filtered by query, grade and unsure; each pair opened
                                from it returns to it after its grade
    GET  /api/me/progress, /api/me/grades      the labeller's own progress and grades (JSON)
    GET  /admin                 the phase and rounds, calibration kappa and gate, the material for a revision,
                                progress and pace, the adjudication queue (?page=N), recent decisions,
                                invites, exports; it reloads its sections when /admin/api/changes moves
    GET  /admin/pair            one pair with every labeller's grade history (admin)
    GET  /admin/adjudicate/confirm   the confirmation step of a decision (its form POSTs /admin/adjudicate)
    POST /admin/invite, /admin/adjudicate, /admin/undo (undo a decision: an event), /admin/revise (a new
         rubric version: the next calibration round), /admin/override (open judging despite a failed gate,
         with a reason)
    GET  /admin/export/labeller/{name}, /admin/export/final, /admin/export/final/manifest
    GET  /admin/api/status, /admin/api/kappa, /admin/api/queue, /admin/api/rounds, /admin/api/changes,
         /admin/api/pace, /admin/api/labellers/{name}/grades
    GET  /healthz

A grade POST is answered only after the writer's COMMIT returned; with ``Accept: application/json`` the
answer is ``{"ok": true, "event_id": ..., "next": ...}``, otherwise a redirect to the next pair (or back to
the review list), whose page announces "Saved" in a live region. The ``event_id`` counts the labeller's own
grade events (1, 2, 3, ...), so it says nothing of anyone else's.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from qrelkit.errors import QrelkitError

from ..project import load_rubric_from_store
from ..security import DEFAULT_IDLE_TIMEOUT, RateLimiter, SecurityHeaders, Sessions
from ..store import SCHEMA_VERSION, Store, StoreError
from . import admin, auth, exports, labeller
from .state import HERE, AppState, http_error, make_env, state_of

__all__ = ["ROUTES", "AppState", "create_app", "listen", "server_url", "state_of"]


async def health(request: Request) -> Response:
    return JSONResponse({"ok": True, "schema_version": SCHEMA_VERSION})


async def no_favicon(request: Request) -> Response:
    return Response(status_code=204)


ROUTES = [
    # a grade and its page first: the router tries each route in turn, and these two answer only /label/N
    Route("/label/{position:int}", labeller.label_page, methods=["GET"]),
    Route("/label/{position:int}", labeller.label_post, methods=["POST"]),
    Route("/", auth.home),
    Route("/healthz", health),
    Route("/favicon.ico", no_favicon),
    Route("/invite/{token}", auth.invite_page, methods=["GET", "POST"]),
    Route("/signout", auth.signout, methods=["POST"]),
    Route("/label", labeller.label_next),
    Route("/review", labeller.review),
    Route("/api/me/progress", labeller.api_progress),
    Route("/api/me/grades", labeller.api_grades),
    Route("/admin", admin.admin_page),
    Route("/admin/pair", admin.admin_pair),
    Route("/admin/invite", admin.admin_invite, methods=["POST"]),
    Route("/admin/adjudicate", admin.admin_adjudicate, methods=["POST"]),
    Route("/admin/adjudicate/confirm", admin.admin_confirm),
    Route("/admin/undo", admin.admin_undo, methods=["POST"]),
    Route("/admin/revise", admin.admin_revise, methods=["POST"]),
    Route("/admin/override", admin.admin_override, methods=["POST"]),
    Route("/admin/export/final", exports.export_final),
    Route("/admin/export/final/manifest", exports.export_manifest),
    Route("/admin/export/labeller/{name}", exports.export_labeller),
    Route("/admin/export/{rest:path}", exports.export_unknown),
    Route("/admin/api/status", admin.api_status),
    Route("/admin/api/kappa", admin.api_kappa),
    Route("/admin/api/queue", admin.api_queue),
    Route("/admin/api/changes", admin.api_changes),
    Route("/admin/api/pace", admin.api_pace),
    Route("/admin/api/rounds", admin.api_rounds),
    Route("/admin/api/labellers/{name}/grades", admin.api_labeller_grades),
    Route("/admin/api/{rest:path}", admin.api_unknown),
    Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
]


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    try:
        yield
    finally:
        app.state.judging.store.close()


def create_app(
    db_path: str | Path,
    *,
    secret: str | None = None,
    base_url: str | None = None,
    signin_limit: tuple[int, float] = (10, 60.0),
    max_body: int = 16 * 1024,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    clock: Callable[[], float] = time.time,
    admin_refresh: float = 10.0,
) -> Starlette:
    """The judging app for the project database at ``db_path``.

    ``secret`` signs session cookies (default: the project's own secret, made by ``judge init``);
    ``base_url`` is used in invite links made from the admin page (default: the request's own URL);
    ``signin_limit`` is (failed attempts, seconds) per client address for the invite pages; ``max_body`` caps
    every form body in bytes; ``idle_timeout`` (seconds) ends a signed-in session unused that long, by
    ``clock`` (seconds since the epoch); ``admin_refresh`` is how often (seconds) an open admin page checks
    for changes (0: never). The store is closed when the app shuts down. Serve it with the limits of
    :func:`.server.server_config` (``qrelkit judge serve`` does).
    """
    store = Store(db_path)
    try:
        rubric = load_rubric_from_store(store)
        secret = secret or store.meta("secret")
        if not secret or len(secret) < 32:
            raise StoreError(
                "no session secret of at least 32 characters",
                source=str(db_path),
                fix="pass secret=..., or use a database made by `qrelkit judge init`",
            )
        project_name = store.meta("project_name") or Path(db_path).stem
    except BaseException:
        store.close()
        raise
    state = AppState(
        store=store,
        rubric=rubric,
        rubrics={rubric.content_hash: rubric},
        sessions=Sessions(secret, idle_timeout=idle_timeout, clock=clock),
        limiter=RateLimiter(*signin_limit),
        env=make_env(),
        project_name=project_name,
        base_url=base_url,
        max_body=max_body,
        admin_refresh=admin_refresh,
    )
    app = Starlette(routes=ROUTES, exception_handlers={HTTPException: http_error}, lifespan=_lifespan)
    app.state.judging = state
    app.add_middleware(SecurityHeaders)
    return app


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening, to hand to uvicorn (port 0: any free port).

    Binding first means a busy port is reported before anything announces a server. Raises
    :class:`~qrelkit.errors.QrelkitError` with one line naming the address and the fix.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn decides
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise QrelkitError(f"port {port} on {host} is in use; pass --port N") from None
        raise QrelkitError(
            f"cannot listen on port {port} of {host}: {exc.strerror or exc}",
            fix="pass a --host this machine has (127.0.0.1, 0.0.0.0) and a free --port",
        ) from None
    sock.set_inheritable(True)
    return sock


def server_url(host: str, port: int) -> str | None:
    """``http://host:port`` as a browser would open it; ``None`` for an all-addresses host (0.0.0.0, ::),
    which names no address a labeller could open."""
    if host in ("", "0.0.0.0", "::"):
        return None
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
