"""What every handler shares: the app's state value, page rendering, and strict form-field checks.

The app factory builds one :class:`AppState` and stores it as ``app.state.judging``; a handler reads it
with :func:`state_of`. Nothing else is shared between requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from qrelkit.rubric import Rubric

from ..security import RateLimiter, Sessions
from ..store import Store

__all__ = [
    "AppState",
    "current_rubric",
    "http_error",
    "int_field",
    "make_env",
    "only",
    "render",
    "state_of",
    "wants_json",
]

HERE = Path(__file__).resolve().parent.parent  # qrelkit/app: templates/ and static/
_INT = re.compile(r"-?\d{1,9}")


@dataclass(frozen=True)
class AppState:
    """One project's app: its store and rubric, and what the handlers need to answer a request.

    ``base_url`` (or ``None``: the request's own URL) roots the invite links made on the admin page;
    ``max_body`` caps every form body in bytes; ``admin_refresh`` is how often (seconds) the open admin page
    checks for changes. ``rubric`` is the rubric the app started with; pages use
    :func:`current_rubric`, which follows revisions (``rubrics`` caches each version by hash).
    """

    store: Store
    rubric: Rubric
    sessions: Sessions
    limiter: RateLimiter
    env: Environment
    project_name: str
    base_url: str | None = None
    max_body: int = 16 * 1024
    rubrics: dict[str, Rubric] = field(default_factory=dict)  # by content hash, filled as versions appear
    admin_refresh: float = 10.0  # seconds between the admin page's checks for changes; 0: never


def current_rubric(st: AppState) -> Rubric:
    """The project's current rubric (a revision made by the command line while serving is picked up)."""
    from ..project import load_rubric_from_store

    rubric_hash = st.store.meta("rubric_hash") or ""
    found = st.rubrics.get(rubric_hash)
    if found is None:
        found = load_rubric_from_store(st.store)
        st.rubrics[found.content_hash] = found
    return found


def state_of(request: Request) -> AppState:
    state: AppState = request.app.state.judging
    return state


def make_env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)  # fmt: skip
    env.filters["pct"] = lambda a, b: 0 if not b else round(100 * a / b)
    env.filters["num"] = lambda x, d=2: "–" if x is None else f"{x:.{d}f}"
    env.filters["duration"] = _duration
    return env


def _duration(seconds: float | None) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``; ``–`` for ``None``."""
    if seconds is None:
        return "–"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "") or request.url.path.startswith(
        ("/api/", "/admin/api/")
    )


def render(
    request: Request, template: str, code: int = 200, *, fresh_session: bool = False, **context: Any
) -> HTMLResponse:
    """Render a page; ``fresh_session`` gives a visitor without a session one (for a form's CSRF token).

    Other pages never set a cookie, so that a stray request (a favicon, an error page) cannot replace the
    session whose token a form on another tab carries.
    """
    st = state_of(request)
    session = getattr(request.state, "session", None) or {}
    new = fresh_session and not session.get("n")
    if new:
        session = Sessions.new()
        request.state.session = session
    token = st.sessions.csrf_token(session) if session.get("n") else ""
    context.setdefault("rubric", current_rubric(st))
    context.update(project=st.project_name, csrf_token=token)
    response = HTMLResponse(st.env.get_template(template).render(**context), status_code=code)
    if new:
        st.sessions.set_cookie(response, request, session)
    return response


def only(form: dict[str, str], allowed: set[str]) -> None:
    """400 for any form field besides ``allowed`` and the CSRF token."""
    extra = sorted(set(form) - allowed - {"csrf_token"})
    if extra:
        raise HTTPException(400, f"unexpected form field {extra[0]!r}")


def int_field(form: dict[str, str], key: str, *, required: bool = True) -> int | None:
    """The integer in form field ``key`` (at most 9 digits); 400 otherwise; ``None`` if optional and empty."""
    value = form.get(key, "")
    if value == "" and not required:
        return None
    if not _INT.fullmatch(value):
        raise HTTPException(400, f"form field {key!r} must be an integer")
    return int(value)


async def http_error(request: Request, exc: Exception) -> Response:
    """Every HTTPException: JSON for API paths and JSON requests, the error page otherwise."""
    assert isinstance(exc, HTTPException)
    headers = {"retry-after": "60"} if exc.status_code == 429 else None
    if wants_json(request):
        return JSONResponse({"ok": False, "error": exc.detail}, status_code=exc.status_code, headers=headers)
    response = render(request, "error.html", code=exc.status_code, status_code=exc.status_code,
                      message=exc.detail, user=None)  # fmt: skip
    if headers:
        response.headers.update(headers)
    return response
