"""The judging web app: an ASGI application factory (Starlette), served by uvicorn.

``create_app(db_path)`` returns the app for one project database. Pages are rendered on the server
(Jinja2, autoescaped: a document's HTML is shown as text) with one small script for the keyboard.

Routes
    GET  /                      where to go: the labeller page, the admin page, or "use your invite link"
    GET  /invite/{token}        confirm sign-in with a one-time link; POST the same URL to sign in
    POST /signout
    GET  /label                 the labeller's next ungraded pair (or "all done")
    GET  /label/{position}      one pair of the labeller's own order; POST grades it
    GET  /api/me/progress, /api/me/grades      the labeller's own progress and grades (JSON)
    GET  /admin                 progress, calibration kappa and gate, the adjudication queue, invites, exports
    GET  /admin/pair            one pair with every labeller's grade history (admin)
    POST /admin/invite, /admin/adjudicate
    GET  /admin/export/labeller/{name}, /admin/export/final, /admin/export/final/manifest
    GET  /admin/api/status, /admin/api/kappa, /admin/api/queue, /admin/api/labellers/{name}/grades
    GET  /healthz

A grade POST is answered only after the writer's COMMIT returned; with ``Accept: application/json`` the
answer is ``{"ok": true, "event_id": ..., "next": ...}``, otherwise a redirect to the next pair.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from . import grades as g
from .project import create_invite, find_user, invite_status, load_rubric_from_store, redeem_invite
from .security import RateLimiter, SecurityHeaders, Sessions, read_form
from .store import SCHEMA_VERSION, Store, StoreError

__all__ = ["create_app"]

HERE = Path(__file__).resolve().parent
_INT = re.compile(r"-?\d{1,9}")


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)  # fmt: skip
    env.filters["pct"] = lambda a, b: 0 if not b else round(100 * a / b)
    env.filters["num"] = lambda x, d=2: "–" if x is None else f"{x:.{d}f}"
    return env


def create_app(
    db_path: str | Path,
    *,
    secret: str | None = None,
    base_url: str | None = None,
    signin_limit: tuple[int, float] = (10, 60.0),
    max_body: int = 16 * 1024,
) -> Starlette:
    """The judging app for the project database at ``db_path``.

    ``secret`` signs session cookies (default: the project's own secret, made by ``judge init``);
    ``base_url`` is used in invite links made from the admin page (default: the request's own URL);
    ``signin_limit`` is (failed attempts, seconds) per client address for the invite pages; ``max_body`` caps
    every form body in bytes.
    """
    store = Store(db_path)
    rubric = load_rubric_from_store(store)
    secret = secret or store.meta("secret")
    if not secret or len(secret) < 32:
        store.close()
        raise StoreError(
            "no session secret of at least 32 characters",
            source=str(db_path),
            fix="pass secret=..., or use a database made by `qrelkit judge init`",
        )
    sessions = Sessions(secret)
    limiter = RateLimiter(*signin_limit)
    env = _env()
    project_name = store.meta("project_name") or Path(db_path).stem
    keys = {lv.grade: str(lv.grade) for lv in rubric.levels if 0 <= lv.grade <= 9}

    # helpers

    def wants_json(request: Request) -> bool:
        return "application/json" in request.headers.get("accept", "") or request.url.path.startswith(
            ("/api/", "/admin/api/")
        )

    def user_of(request: Request) -> Any:
        session = sessions.load(request)
        request.state.session = session
        uid = session.get("u")
        if not isinstance(uid, int):
            return None
        row = store.read(lambda c: c.execute("SELECT * FROM users WHERE user_id = ?", (uid,)).fetchone())
        if row is None or row["session_epoch"] != session.get("e"):
            return None
        return row

    def require(request: Request, role: str) -> Any:
        user = user_of(request)
        if user is None:
            raise HTTPException(401, "sign in with the invite link you were given")
        if user["role"] != role:
            raise HTTPException(403, f"this page is for the {role} role")
        return user

    def render(
        request: Request, template: str, code: int = 200, *, fresh_session: bool = False, **context: Any
    ) -> HTMLResponse:
        """Render a page; ``fresh_session`` gives a visitor without a session one (for a form's CSRF token).

        Other pages never set a cookie, so that a stray request (a favicon, an error page) cannot replace
        the session whose token a form on another tab carries.
        """
        session = getattr(request.state, "session", None) or {}
        new = fresh_session and not session.get("n")
        if new:
            session = Sessions.new()
            request.state.session = session
        token = sessions.csrf_token(session) if session.get("n") else ""
        context.update(project=project_name, csrf_token=token, rubric=rubric)
        response = HTMLResponse(env.get_template(template).render(**context), status_code=code)
        if new:
            sessions.set_cookie(response, request, session)
        return response

    async def form_of(request: Request) -> dict[str, str]:
        form = await read_form(request, max_bytes=max_body)
        sessions.check_csrf(request, getattr(request.state, "session", None) or sessions.load(request), form)
        return form

    def only(form: dict[str, str], allowed: set[str]) -> None:
        extra = sorted(set(form) - allowed - {"csrf_token"})
        if extra:
            raise HTTPException(400, f"unexpected form field {extra[0]!r}")

    def int_field(form: dict[str, str], key: str, *, required: bool = True) -> int | None:
        value = form.get(key, "")
        if value == "" and not required:
            return None
        if not _INT.fullmatch(value):
            raise HTTPException(400, f"form field {key!r} must be an integer")
        return int(value)

    def client(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    # public pages

    async def home(request: Request) -> Response:
        user = user_of(request)
        if user is None:
            return render(request, "signin.html", invalid=False)
        return RedirectResponse("/admin" if user["role"] == "admin" else "/label", status_code=303)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "schema_version": SCHEMA_VERSION})

    async def invite_page(request: Request) -> Response:
        address = client(request)
        if not limiter.allowed(address):
            raise HTTPException(429, "too many failed sign-in attempts; wait a minute and try again")
        token = request.path_params["token"]
        user_of(request)
        if request.method == "GET":
            user = invite_status(store, token)
            if user is None:
                limiter.fail(address)
                return render(request, "signin.html", code=403, invalid=True)
            return render(
                request, "invite.html", fresh_session=True, name=user["name"], role=user["role"], token=token
            )
        try:
            form = await form_of(request)
            only(form, set())
        except HTTPException:
            limiter.fail(address)
            raise
        user = await asyncio.wrap_future(store.submit(lambda c: redeem_invite(c, token)))
        if user is None:
            limiter.fail(address)
            return render(request, "signin.html", code=403, invalid=True)
        session = Sessions.new(user["user_id"], user["session_epoch"])
        response = RedirectResponse("/admin" if user["role"] == "admin" else "/label", status_code=303)
        sessions.set_cookie(response, request, session)
        return response

    async def signout(request: Request) -> Response:
        user_of(request)
        await form_of(request)
        response = RedirectResponse("/", status_code=303)
        sessions.set_cookie(response, request, Sessions.new())
        return response

    # the labeller

    async def label_next(request: Request) -> Response:
        user = require(request, "labeller")
        pos, prog = store.read(
            lambda c: (g.next_position(c, user["user_id"]), g.labeller_progress(c, user["user_id"]))
        )
        if pos is None:
            return render(request, "done.html", user=user, progress=prog, last=prog["total"] - 1)
        return RedirectResponse(f"/label/{pos}", status_code=303)

    async def label_page(request: Request) -> Response:
        user = require(request, "labeller")
        pos = request.path_params["position"]
        view, prog = store.read(
            lambda c: (g.pair_view(c, user["user_id"], pos), g.labeller_progress(c, user["user_id"]))
        )
        if view is None:
            raise HTTPException(404, "no pair at this position in your list")
        return render(request, "label.html", user=user, pair=view, progress=prog, keys=keys)

    async def label_post(request: Request) -> Response:
        user = require(request, "labeller")
        pos = request.path_params["position"]
        form = await form_of(request)
        only(form, {"grade", "unsure", "note", "elapsed_ms"})
        grade = int_field(form, "grade", required=False)
        if grade is not None and grade not in rubric.scale:
            raise HTTPException(400, "grade is not on the rubric's scale")
        unsure_text = form.get("unsure", "")
        if unsure_text not in ("", "0", "1"):
            raise HTTPException(400, "form field 'unsure' must be 0 or 1")
        unsure = unsure_text == "1"
        if grade is None and not unsure:
            raise HTTPException(400, "give a grade, or mark the pair unsure")
        note = form.get("note", "").strip() or None
        if note is not None and len(note) > g.MAX_NOTE:
            raise HTTPException(400, f"a note is at most {g.MAX_NOTE} characters")
        elapsed = int_field(form, "elapsed_ms", required=False)
        if elapsed is not None and not 0 <= elapsed <= g.MAX_TIME_MS:
            elapsed = None
        uid = user["user_id"]
        job = store.submit(
            lambda c: g.record_grade(c, uid, pos, grade, unsure=unsure, note=note, time_spent_ms=elapsed,
                                     rubric=rubric)
        )  # fmt: skip
        try:
            saved = await asyncio.wrap_future(job)
        except g.NotAssigned:
            raise HTTPException(403, "this pair is not in your list") from None
        nxt = saved["next"]
        if wants_json(request):
            return JSONResponse({"ok": True, "event_id": saved["event_id"], "position": pos, "next": nxt})
        return RedirectResponse("/label" if nxt is None else f"/label/{nxt}", status_code=303)

    async def api_progress(request: Request) -> Response:
        user = require(request, "labeller")
        return JSONResponse(store.read(lambda c: g.labeller_progress(c, user["user_id"])))

    async def api_grades(request: Request) -> Response:
        user = require(request, "labeller")
        return JSONResponse({"grades": store.read(lambda c: g.own_grades(c, user["user_id"]))})

    # the admin

    def admin_context() -> dict[str, Any]:
        return {
            "status": store.read(g.progress),
            "calibration": g.calibration_status(store, rubric),
            "queue": g.adjudication_queue(store, rubric),
        }

    async def admin_page(request: Request) -> Response:
        user = require(request, "admin")
        context = await run_in_threadpool(admin_context)
        return render(request, "admin.html", user=user, invite=None, **context)

    async def admin_invite(request: Request) -> Response:
        user = require(request, "admin")
        form = await form_of(request)
        only(form, {"name"})
        name = form.get("name", "")
        try:
            token = await run_in_threadpool(create_invite, store, name)
        except g.ValidationError as exc:
            raise HTTPException(400, str(exc)) from None
        root = (base_url or str(request.base_url)).rstrip("/")
        invite = {"name": name, "url": f"{root}/invite/{token}"}
        context = await run_in_threadpool(admin_context)
        return render(request, "admin.html", user=user, invite=invite, **context)

    async def admin_adjudicate(request: Request) -> Response:
        user = require(request, "admin")
        form = await form_of(request)
        only(form, {"query_id", "doc_id", "grade", "note"})
        grade = int_field(form, "grade")
        note = form.get("note", "").strip() or None
        try:
            await run_in_threadpool(
                lambda: g.adjudicate(store, rubric, form.get("query_id", ""), form.get("doc_id", ""), grade,
                                     by=user["name"], note=note)  # type: ignore[arg-type]
            )  # fmt: skip
        except g.ValidationError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse("/admin#queue", status_code=303)

    async def admin_pair(request: Request) -> Response:
        user = require(request, "admin")
        q, d = request.query_params.get("query_id", ""), request.query_params.get("doc_id", "")

        def load(c: Any) -> Any:
            pair = c.execute(
                "SELECT p.*, qu.text AS query, dc.title, dc.text FROM pairs p JOIN queries qu USING (query_id) "
                "JOIN docs dc ON dc.doc_id = p.doc_id WHERE p.query_id = ? AND p.doc_id = ?",
                (q, d),
            ).fetchone()
            if pair is None:
                return None, [], []
            events = c.execute(
                "SELECT u.name, e.grade, e.unsure, e.note, e.time_spent_ms, e.created_at FROM grade_events e "
                "JOIN users u USING (user_id) WHERE e.pair_id = ? ORDER BY e.event_id",
                (pair["pair_id"],),
            ).fetchall()
            adjs = c.execute(
                "SELECT a.grade, a.note, a.created_at, u.name FROM adjudications a LEFT JOIN users u "
                "USING (user_id) WHERE a.pair_id = ? ORDER BY a.event_id",
                (pair["pair_id"],),
            ).fetchall()
            return pair, events, adjs

        pair, events, adjs = store.read(load)
        if pair is None:
            raise HTTPException(404, "no such pair in this project")
        return render(request, "pair.html", user=user, pair=pair, events=events, adjudications=adjs)

    async def export(request: Request) -> Response:
        require(request, "admin")
        kind = request.path_params["kind"]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "final.qrels"
            if kind == "final" or kind == "final/manifest":
                await run_in_threadpool(g.export_final, store, rubric, path)
                if kind == "final/manifest":
                    text = path.with_name("final.qrels.manifest.json").read_text()
                    return Response(text, media_type="application/json")
                filename = f"{project_name}.final.qrels"
            elif kind.startswith("labeller/"):
                name = kind.split("/", 1)[1]
                try:
                    await run_in_threadpool(g.export_labeller, store, name, path)
                except g.ValidationError as exc:
                    raise HTTPException(404, str(exc)) from None
                filename = f"{project_name}.{name}.qrels"
            else:
                raise HTTPException(404, "unknown export")
            text = path.read_text()
        headers = {"content-disposition": f'attachment; filename="{filename}"'}
        return PlainTextResponse(text, headers=headers)

    async def admin_api(request: Request) -> Response:
        require(request, "admin")
        what = request.path_params["what"]
        if what == "status":
            return JSONResponse(store.read(g.progress))
        if what == "kappa":
            states = await run_in_threadpool(g.calibration_status, store, rubric)
            return JSONResponse({"calibration": [s.to_dict() for s in states]})
        if what == "queue":
            return JSONResponse(await run_in_threadpool(g.adjudication_queue, store, rubric))
        if what.startswith("labellers/") and what.endswith("/grades"):
            name = what[len("labellers/") : -len("/grades")]
            try:
                user = find_user(store, name)
            except g.ValidationError as exc:
                raise HTTPException(404, str(exc)) from None
            return JSONResponse(
                {"labeller": name, "grades": store.read(lambda c: g.own_grades(c, user["user_id"]))}
            )
        raise HTTPException(404, "unknown admin API")

    # errors

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers = {"retry-after": "60"} if exc.status_code == 429 else None
        if wants_json(request):
            return JSONResponse(
                {"ok": False, "error": exc.detail}, status_code=exc.status_code, headers=headers
            )
        response = render(request, "error.html", code=exc.status_code, status_code=exc.status_code,
                          message=exc.detail, user=None)  # fmt: skip
        if headers:
            response.headers.update(headers)
        return response

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    routes = [
        Route("/", home),
        Route("/healthz", health),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/invite/{token}", invite_page, methods=["GET", "POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/label", label_next),
        Route("/label/{position:int}", label_page, methods=["GET"]),
        Route("/label/{position:int}", label_post, methods=["POST"]),
        Route("/api/me/progress", api_progress),
        Route("/api/me/grades", api_grades),
        Route("/admin", admin_page),
        Route("/admin/pair", admin_pair),
        Route("/admin/invite", admin_invite, methods=["POST"]),
        Route("/admin/adjudicate", admin_adjudicate, methods=["POST"]),
        Route("/admin/export/{kind:path}", export),
        Route("/admin/api/{what:path}", admin_api),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan)
    app.state.store = store
    app.state.rubric = rubric
    app.add_middleware(SecurityHeaders)
    return app
