"""The admin's pages and API: progress, calibration kappa and gate, the adjudication queue, invites, one pair.

Every number comes from the library functions the commands call (:mod:`..grades`, :mod:`..project`);
the slow ones (kappa, the queue's leverage) run in the thread pool.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from .. import grades as g
from ..project import create_invite, find_user
from ..queries import pair_history
from .auth import form_of, require
from .state import AppState, int_field, only, render, state_of

__all__ = ["admin_adjudicate", "admin_invite", "admin_page", "admin_pair", "api_kappa", "api_labeller_grades",
           "api_queue", "api_status", "api_unknown"]  # fmt: skip


def _overview(st: AppState) -> dict[str, Any]:
    """What the admin page shows: progress, calibration states, the adjudication queue."""
    return {
        "status": st.store.read(g.progress),
        "calibration": g.calibration_status(st.store, st.rubric),
        "queue": g.adjudication_queue(st.store, st.rubric),
    }


async def admin_page(request: Request) -> Response:
    """GET /admin."""
    st = state_of(request)
    user = require(request, "admin")
    context = await run_in_threadpool(_overview, st)
    return render(request, "admin.html", user=user, invite=None, **context)


async def admin_invite(request: Request) -> Response:
    """POST /admin/invite: make a one-time link for a user and show it on the admin page."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request)
    only(form, {"name"})
    name = form.get("name", "")
    try:
        token = await run_in_threadpool(create_invite, st.store, name)
    except g.ValidationError as exc:
        raise HTTPException(400, str(exc)) from None
    root = (st.base_url or str(request.base_url)).rstrip("/")
    invite = {"name": name, "url": f"{root}/invite/{token}"}
    context = await run_in_threadpool(_overview, st)
    return render(request, "admin.html", user=user, invite=invite, **context)


async def admin_adjudicate(request: Request) -> Response:
    """POST /admin/adjudicate: record a final grade for a pair, then back to the queue."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request)
    only(form, {"query_id", "doc_id", "grade", "note", "override"})
    grade = int_field(form, "grade")
    override = form.get("override", "") == "1"
    note = form.get("note", "").strip() or None
    query_id, doc_id = form.get("query_id", ""), form.get("doc_id", "")
    try:
        await run_in_threadpool(
            lambda: g.adjudicate(st.store, st.rubric, query_id, doc_id, grade,  # type: ignore[arg-type]
                                 by=user["name"], note=note, allow_override=override)
        )  # fmt: skip
    except g.ValidationError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse("/admin#queue", status_code=303)


async def admin_pair(request: Request) -> Response:
    """GET /admin/pair?query_id=...&doc_id=...: one pair with every grade event and decision."""
    st = state_of(request)
    user = require(request, "admin")
    q, d = request.query_params.get("query_id", ""), request.query_params.get("doc_id", "")
    pair, events, adjs = st.store.read(lambda c: pair_history(c, q, d))
    if pair is None:
        raise HTTPException(404, "no such pair in this project")
    return render(request, "pair.html", user=user, pair=pair, events=events, adjudications=adjs)


async def api_status(request: Request) -> Response:
    """GET /admin/api/status: progress per labeller and per query."""
    st = state_of(request)
    require(request, "admin")
    return JSONResponse(st.store.read(g.progress))


async def api_kappa(request: Request) -> Response:
    """GET /admin/api/kappa: the calibration agreement of each labeller pair."""
    st = state_of(request)
    require(request, "admin")
    states = await run_in_threadpool(g.calibration_status, st.store, st.rubric)
    return JSONResponse({"calibration": [s.to_dict() for s in states]})


async def api_queue(request: Request) -> Response:
    """GET /admin/api/queue: the adjudication queue and how it is ordered."""
    st = state_of(request)
    require(request, "admin")
    return JSONResponse(await run_in_threadpool(g.adjudication_queue, st.store, st.rubric))


async def api_labeller_grades(request: Request) -> Response:
    """GET /admin/api/labellers/{name}/grades: one labeller's current grades; 404 for an unknown name."""
    st = state_of(request)
    require(request, "admin")
    name = request.path_params["name"]
    try:
        user = find_user(st.store, name)
    except g.ValidationError as exc:
        raise HTTPException(404, str(exc)) from None
    uid = user["user_id"]
    return JSONResponse({"labeller": name, "grades": st.store.read(lambda c: g.own_grades(c, uid))})


async def api_unknown(request: Request) -> Response:
    """Any other path under /admin/api/: 404, after the admin check (anonymous visitors get 401)."""
    require(request, "admin")
    raise HTTPException(404, "unknown admin API")
