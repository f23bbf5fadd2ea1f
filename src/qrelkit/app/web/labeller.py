"""The labeller's pages and API: the next pair, one pair by position, the grade POST, the review list of
their own grades, own progress and grades.

A labeller addresses pairs only by position in their own list; every read goes through the blind
functions of :mod:`..grades`, which select that labeller's assignments and events and nothing else, and
only the pairs open in the project's phase (:mod:`..phases`): the round's calibration pairs before the gate
passed, none while judging is paused, all of theirs once it is open. A closed pair is refused by page
(403, with the page that says why), by URL and by the API alike, in the writer as well as here.

After a grade the next page announces "Saved" in a live region: the grade POST's redirect sets a
short-lived cookie (:data:`SAVED_COOKIE`, the grade or ``u``) that the next page reads once and clears.
A pair opened from the review list (:mod:`..review`), or re-graded once every open pair was graded,
returns to the list after its grade instead of going on to the next pair.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from qrelkit.errors import ValidationError
from qrelkit.rubric import Rubric

from .. import grades as g
from ..phases import Phase, ensure_gate
from ..review import REVIEW_PATH, ReviewFilter, parse_return, review_page
from .auth import form_of, require
from .state import current_rubric, int_field, only, render, state_of, wants_json

__all__ = ["api_grades", "api_progress", "label_next", "label_page", "label_post", "review"]

#: The cookie that carries "saved" from a grade POST to the page after it (the grade, or ``u``).
SAVED_COOKIE = "qk_saved"
#: The labeller's first pairs of a browser session show every level's examples open (label.js counts).
EXAMPLES_OPEN_FOR = 5

#: A document's text shown at first on the labeller's page, in characters; "Show all" (``?full=1``) shows
#: the rest. A megabyte-long document (or one token that long) keeps the page light until asked for.
DOC_SHOWN = 20_000
#: A document's title shown, in characters (the whole title with ``?full=1``).
TITLE_SHOWN = 500

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


def _saved(request: Request, rubric: Rubric) -> str:
    """The "saved" message for the grade the previous request recorded, or "" (a stale or forged cookie
    value names no grade and says nothing)."""
    value = request.cookies.get(SAVED_COOKIE, "")
    if value == "u":
        return "Saved: marked unsure."
    for level in rubric.levels:
        if value == str(level.grade):
            return f"Saved: grade {level.grade}, {level.label}."
    return ""


def _page(request: Request, template: str, code: int = 200, **context: Any) -> Response:
    """Render a labeller page with the "saved" message, if any, and clear its cookie."""
    rubric = current_rubric(state_of(request))
    response = render(request, template, code, saved=_saved(request, rubric), **context)
    if SAVED_COOKIE in request.cookies:
        response.delete_cookie(SAVED_COOKIE, path="/")
    return response


def _after_grade(request: Request, url: str, grade: int | None) -> Response:
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(SAVED_COOKIE, "u" if grade is None else str(grade), max_age=60, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")  # fmt: skip
    return response


def _closed(
    request: Request, user: Any, phase: Phase, code: int, progress: dict[str, Any] | None = None
) -> Response:
    """The page a labeller sees where no pair is open to them: judging paused, or waiting for the gate."""
    return _page(request, "phase.html", code, user=user, phase=phase, progress=progress)


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
    return _page(request, "done.html", user=user, progress=prog, last=-1 if last is None else last)


async def label_page(request: Request) -> Response:
    """GET /label/{position}: one open pair of the labeller's own list, with their current grade.

    ``?review=1`` with the list's filter (``query``, ``grade``, ``unsure``, ``page``): opened from the
    review list, which the grade then returns to; so does re-grading once every open pair is graded.
    The document's text is shown up to :data:`DOC_SHOWN` characters (its title to :data:`TITLE_SHOWN`),
    with a link to show all of it (``?full=1``).
    """
    st = state_of(request)
    user = require(request, "labeller")
    pos, uid = _position(request), user["user_id"]
    phase = await run_in_threadpool(ensure_gate, st.store)
    rubric = current_rubric(st)
    params = dict(request.query_params)
    full = params.pop("full", None) == "1"
    back_to: ReviewFilter | None = None
    if params.pop("review", None) is not None:
        back_to = _filter(params, rubric)
    try:
        view, prog = st.store.read(lambda c: (g.pair_view(c, uid, pos), g.labeller_progress(c, uid)))
    except g.PairClosed:
        return _closed(request, user, phase, 403)
    if view is None:
        raise HTTPException(404, "no pair at this position in your list")
    if back_to is None and view["graded"] and prog["done"] >= prog["total"]:
        back_to = ReviewFilter()
    shown = _shown(view, full, f"/label/{pos}?" + urlencode({**dict(request.query_params), "full": "1"}))
    return _page(request, "label.html", user=user, pair={**view, **shown}, progress=prog, keys=_keys(rubric),
                 rubric=rubric, return_to="" if back_to is None else back_to.url(),
                 examples_open_for=EXAMPLES_OPEN_FOR)  # fmt: skip


def _shown(view: dict[str, Any], full: bool, full_url: str) -> dict[str, Any]:
    """The document as the page shows it: text and title cut to :data:`DOC_SHOWN` and :data:`TITLE_SHOWN`
    characters unless ``full``, with what was cut (``text_length``, ``cut``) and the link to all of it."""
    text, title = view["text"] or "", view["title"] or ""
    cut = not full and (len(text) > DOC_SHOWN or len(title) > TITLE_SHOWN)
    if cut:
        text, title = text[:DOC_SHOWN], title[:TITLE_SHOWN] + ("…" if len(title) > TITLE_SHOWN else "")
    return {"text": text, "title": title, "text_length": len(view["text"] or ""), "cut": cut,
            "full_url": full_url}  # fmt: skip


def _filter(params: dict[str, str], rubric: Rubric) -> ReviewFilter:
    try:
        return ReviewFilter.parse(params, rubric)
    except ValidationError as exc:
        raise HTTPException(400, str(exc.problem)) from None


async def label_post(request: Request) -> Response:
    """POST /label/{position}: record a grade (or "unsure"); answered after the writer's COMMIT returned."""
    st = state_of(request)
    user = require(request, "labeller")
    pos = _position(request)
    form = await form_of(request)
    only(form, {"grade", "unsure", "note", "elapsed_ms", "return_to"})
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
    try:
        back_to = parse_return(form.get("return_to", ""), rubric)
    except ValidationError as exc:
        raise HTTPException(400, str(exc.problem)) from None
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
    if back_to is not None:
        return _after_grade(request, f"{back_to.url()}#pair-{pos}", grade)
    return _after_grade(request, "/label" if nxt is None else f"/label/{nxt}", grade)


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


async def review(request: Request) -> Response:
    """GET /review: the labeller's own current grades, filtered by query, grade and unsure, a page at a
    time, each linking to its pair."""
    st = state_of(request)
    user = require(request, "labeller")
    uid = user["user_id"]
    phase = await run_in_threadpool(ensure_gate, st.store)
    if phase.state == "paused":
        return _closed(request, user, phase, 200)
    rubric = current_rubric(st)
    flt = _filter(dict(request.query_params), rubric)
    listing, prog = st.store.read(lambda c: (review_page(c, uid, flt, rubric), g.labeller_progress(c, uid)))
    jump = "?" + urlencode({"review": "1", **flt.params()})  # a pair opened from here returns here
    return _page(request, "review.html", user=user, listing=listing, flt=flt, progress=prog, rubric=rubric,
                 jump=jump, review_path=REVIEW_PATH)  # fmt: skip
