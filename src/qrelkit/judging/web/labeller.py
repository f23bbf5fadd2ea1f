"""The labeller's pages and API: the next pair, one pair by position, the grade POST, own progress and grades.

A labeller addresses pairs only by position in their own list; every read goes through the blind
functions of :mod:`..grades`, which select that labeller's assignments and events and nothing else, and
only the pairs open in the project's phase (:mod:`..phases`): the round's calibration pairs before the gate
passed, none while judging is paused, all of theirs once it is open. A closed pair is refused by page
(403, with the page that says why), by URL and by the API alike, in the writer as well as here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from qrelkit.rubric import Rubric

from .. import grades as g
from ..phases import Phase, ensure_gate
from .auth import form_of, require
from .state import current_rubric, int_field, only, render, state_of, wants_json

__all__ = ["api_grades", "api_progress", "label_next", "label_page", "label_post"]

#: The largest position SQLite can hold (a signed 64-bit integer); a larger one names no pair.
MAX_POSITION = 2**63 - 1


def _position(request: Request) -> int:
    position: int = request.path_params["position"]
    if position > MAX_POSITION:
        raise HTTPException(404, "no pair at this position in your list")
    return position


def _keys(rubric: Rubric) -> dict[int, str]:
    """Each grade from 0 to 9 of the rubric and its keyboard key."""
    return {lv.grade: str(lv.grade) for lv in rubric.levels if 0 <= lv.grade <= 9}


def _closed(
    request: Request, user: Any, phase: Phase, code: int, progress: dict[str, Any] | None = None
) -> Response:
    """The page a labeller sees where no pair is open to them: judging paused, or waiting for the gate."""
    return render(request, "phase.html", code=code, user=user, phase=phase, progress=progress)


async def label_next(request: Request) -> Response:
    """GET /label: the first ungraded open pair; else "all done", "waiting for the gate" or "paused"."""
    st = state_of(request)
    user = require(request, "labeller")
    uid = user["user_id"]
    phase = await run_in_threadpool(ensure_gate, st.store)
    if phase.state == "paused":
        return _closed(request, user, phase, 200)
    pos, prog, last = st.store.read(
        lambda c: (g.next_position(c, uid), g.labeller_progress(c, uid), g.last_open_position(c, uid))
    )
    if pos is not None:
        return RedirectResponse(f"/label/{pos}", status_code=303)
    if phase.state == "calibration":
        return _closed(request, user, phase, 200, prog)
    return render(request, "done.html", user=user, progress=prog, last=-1 if last is None else last)


async def label_page(request: Request) -> Response:
    """GET /label/{position}: one open pair of the labeller's own list, with their current grade."""
    st = state_of(request)
    user = require(request, "labeller")
    pos, uid = _position(request), user["user_id"]
    phase = await run_in_threadpool(ensure_gate, st.store)
    try:
        view, prog = st.store.read(lambda c: (g.pair_view(c, uid, pos), g.labeller_progress(c, uid)))
    except g.PairClosed:
        return _closed(request, user, phase, 403)
    if view is None:
        raise HTTPException(404, "no pair at this position in your list")
    rubric = current_rubric(st)
    return render(
        request, "label.html", user=user, pair=view, progress=prog, keys=_keys(rubric), rubric=rubric
    )


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
    uid, rubric = user["user_id"], current_rubric(st)
    job = st.store.submit(
        lambda c: g.record_grade(c, uid, pos, grade, unsure=unsure, note=note, time_spent_ms=elapsed,
                                 rubric=rubric)
    )  # fmt: skip
    try:
        saved = await asyncio.wrap_future(job)
    except g.NotAssigned:
        raise HTTPException(403, "this pair is not in your list") from None
    except g.PairClosed as exc:
        raise HTTPException(403, exc.problem) from None
    except g.RubricChanged as exc:
        raise HTTPException(409, f"{exc.problem}; {exc.fix}") from None
    except g.ValidationError as exc:  # record_grade's checks: grade on the scale (or unsure), note length
        raise HTTPException(400, exc.problem) from None
    nxt = saved["next"]
    if wants_json(request):
        return JSONResponse({"ok": True, "event_id": saved["labeller_event"], "position": pos, "next": nxt})
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
