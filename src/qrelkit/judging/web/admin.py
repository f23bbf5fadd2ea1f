"""The admin's pages and API: the phase and calibration rounds, the revision and override forms, progress,
calibration kappa and gate, the material for revising a rubric, the adjudication queue, invites, one pair.

Every number comes from the library functions the commands call (:mod:`..grades`, :mod:`..project`);
the slow ones (kappa, the queue's leverage) run in the thread pool.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from qrelkit.adjudication import group_calibration_fields
from qrelkit.errors import QrelkitError

from .. import grades as g
from ..grades import round_material
from ..phases import ensure_gate, override_gate, revise, rounds_history
from ..project import create_invite, find_user
from ..queries import pair_history
from .auth import form_of, require
from .state import AppState, current_rubric, int_field, only, render, state_of

__all__ = ["admin_adjudicate", "admin_invite", "admin_override", "admin_page", "admin_pair", "admin_revise",
           "api_kappa", "api_labeller_grades", "api_queue", "api_rounds", "api_status", "api_unknown"]  # fmt: skip


def _overview(st: AppState) -> dict[str, Any]:
    """What the admin page shows: the phase and the rounds' history, progress, the current round's
    calibration states, the material for a revision when its gate failed, the adjudication queue."""
    phase = ensure_gate(st.store)
    rubric = current_rubric(st)
    history = st.store.read(rounds_history)
    failed = history[-1]["status"] in ("failed", "overridden")
    return {
        "phase": phase,
        "history": history,
        "status": st.store.read(g.progress),
        "calibration": g.calibration_status(st.store, rubric),
        "group": group_calibration_fields(g.group_status(st.store)),
        "statistic": st.store.meta("gate_statistic") or "kappa",
        "material": round_material(st.store) if failed else [],
        "queue": g.adjudication_queue(st.store, rubric),
        "rubric": rubric,
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
            lambda: g.adjudicate(st.store, current_rubric(st), query_id, doc_id, grade,  # type: ignore[arg-type]
                                 by=user["name"], note=note, allow_override=override)
        )  # fmt: skip
    except g.ValidationError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse("/admin#queue", status_code=303)


#: The largest rubric form the admin page takes (a rubric's TOML, URL-encoded).
MAX_RUBRIC_FORM = 256 * 1024


async def admin_revise(request: Request) -> Response:
    """POST /admin/revise: a new rubric version (its TOML text) starts the next calibration round."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request, max_bytes=MAX_RUBRIC_FORM)
    only(form, {"rubric", "same_queries", "note"})
    text = form.get("rubric", "")
    if not text.strip():
        raise HTTPException(400, "paste the revised rubric's TOML")
    same = form.get("same_queries", "") == "1"
    note = form.get("note", "").strip() or None

    def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="qrelkit-rubric-") as tmp:
            path = Path(tmp) / "rubric-from-the-admin-page.toml"
            path.write_text(text, encoding="utf-8")
            return revise(st.store, path, same_queries=same, by=user["name"], note=note)

    try:
        await run_in_threadpool(run)
    except QrelkitError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse("/admin#rounds", status_code=303)


async def admin_override(request: Request) -> Response:
    """POST /admin/override: open full judging despite the failed gate, with a written reason."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request)
    only(form, {"reason"})
    try:
        await run_in_threadpool(
            lambda: override_gate(st.store, reason=form.get("reason", ""), by=user["name"])
        )
    except QrelkitError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse("/admin#rounds", status_code=303)


async def api_rounds(request: Request) -> Response:
    """GET /admin/api/rounds: the phase and every calibration round (rubric, queries, verdict, override)."""
    st = state_of(request)
    require(request, "admin")
    phase = await run_in_threadpool(ensure_gate, st.store)
    return JSONResponse({"phase": phase.to_dict(), "rounds": st.store.read(rounds_history)})


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
    """GET /admin/api/kappa: the calibration agreement of each labeller pair, and of the whole group
    (``group``: :func:`qrelkit.adjudication.group_calibration_fields`, as in the manifest)."""
    st = state_of(request)
    require(request, "admin")
    await run_in_threadpool(ensure_gate, st.store)
    states = await run_in_threadpool(g.calibration_status, st.store, current_rubric(st))
    group = await run_in_threadpool(g.group_status, st.store)
    return JSONResponse(
        {"calibration": [s.to_dict() for s in states], "group": group_calibration_fields(group)}
    )


async def api_queue(request: Request) -> Response:
    """GET /admin/api/queue: the adjudication queue and how it is ordered."""
    st = state_of(request)
    require(request, "admin")
    return JSONResponse(await run_in_threadpool(g.adjudication_queue, st.store, current_rubric(st)))


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
