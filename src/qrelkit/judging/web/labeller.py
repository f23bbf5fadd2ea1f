"""The labeller's pages and API: the next pair, one pair by position, the grade POST, own progress and grades.

A labeller addresses pairs only by position in their own list; every read goes through the blind
functions of :mod:`..grades`, which select that labeller's assignments and events and nothing else.
"""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from .. import grades as g
from .auth import form_of, require
from .state import int_field, only, render, state_of, wants_json

__all__ = ["api_grades", "api_progress", "label_next", "label_page", "label_post"]

#: The largest position SQLite can hold (a signed 64-bit integer); a larger one names no pair.
MAX_POSITION = 2**63 - 1


def _position(request: Request) -> int:
    position: int = request.path_params["position"]
    if position > MAX_POSITION:
        raise HTTPException(404, "no pair at this position in your list")
    return position


async def label_next(request: Request) -> Response:
    """GET /label: the first ungraded pair, or the "all done" page."""
    st = state_of(request)
    user = require(request, "labeller")
    uid = user["user_id"]
    pos, prog = st.store.read(lambda c: (g.next_position(c, uid), g.labeller_progress(c, uid)))
    if pos is None:
        return render(request, "done.html", user=user, progress=prog, last=prog["total"] - 1)
    return RedirectResponse(f"/label/{pos}", status_code=303)


async def label_page(request: Request) -> Response:
    """GET /label/{position}: one pair of the labeller's own list, with their current grade."""
    st = state_of(request)
    user = require(request, "labeller")
    pos, uid = _position(request), user["user_id"]
    view, prog = st.store.read(lambda c: (g.pair_view(c, uid, pos), g.labeller_progress(c, uid)))
    if view is None:
        raise HTTPException(404, "no pair at this position in your list")
    return render(request, "label.html", user=user, pair=view, progress=prog, keys=st.keys)


async def label_post(request: Request) -> Response:
    """POST /label/{position}: record a grade (or "unsure"); answered after the writer's COMMIT returned."""
    st = state_of(request)
    user = require(request, "labeller")
    pos = _position(request)
    form = await form_of(request)
    only(form, {"grade", "unsure", "note", "elapsed_ms"})
    grade = int_field(form, "grade", required=False)
    unsure_text = form.get("unsure", "")
    if unsure_text not in ("", "0", "1"):
        raise HTTPException(400, "form field 'unsure' must be 0 or 1")
    unsure = unsure_text == "1"
    note = form.get("note", "").strip() or None
    elapsed = int_field(form, "elapsed_ms", required=False)
    if elapsed is not None and not 0 <= elapsed <= g.MAX_TIME_MS:
        elapsed = None
    uid, rubric = user["user_id"], st.rubric
    job = st.store.submit(
        lambda c: g.record_grade(c, uid, pos, grade, unsure=unsure, note=note, time_spent_ms=elapsed,
                                 rubric=rubric)
    )  # fmt: skip
    try:
        saved = await asyncio.wrap_future(job)
    except g.NotAssigned:
        raise HTTPException(403, "this pair is not in your list") from None
    except g.ValidationError as exc:  # record_grade's checks: grade on the scale (or unsure), note length
        raise HTTPException(400, exc.problem) from None
    nxt = saved["next"]
    if wants_json(request):
        return JSONResponse({"ok": True, "event_id": saved["event_id"], "position": pos, "next": nxt})
    return RedirectResponse("/label" if nxt is None else f"/label/{nxt}", status_code=303)


async def api_progress(request: Request) -> Response:
    """GET /api/me/progress: ``{"total": ..., "done": ...}`` of the signed-in labeller."""
    st = state_of(request)
    uid = require(request, "labeller")["user_id"]
    return JSONResponse(st.store.read(lambda c: g.labeller_progress(c, uid)))


async def api_grades(request: Request) -> Response:
    """GET /api/me/grades: the signed-in labeller's current grades, by position."""
    st = state_of(request)
    uid = require(request, "labeller")["user_id"]
    return JSONResponse({"grades": st.store.read(lambda c: g.own_grades(c, uid))})
