"""The admin's pages and API: the phase and calibration rounds, the revision and override forms, progress
and pace, calibration kappa and gate, the material for revising a rubric, the adjudication queue (a page
of it), its confirmation step and undo, invites, one pair.

The admin page reloads its own sections in place (``static/admin.js``): it polls
``/admin/api/changes`` and fetches the page again only when that token moved.

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

from qrelkit.errors import QrelkitError
from qrelkit.judgments.adjudication import group_calibration_fields

from .. import grades as g
from ..decisions import QUEUE_PAGE_SIZE, queue_page, recent_decisions, undo_adjudication
from ..grades import round_material
from ..models.status import models_overview
from ..pace import labeller_pace
from ..phases import ensure_gate, override_gate, revise, rounds_history
from ..project import create_invite, find_user
from ..queries import change_token, pair_history
from .auth import form_of, require
from .state import AppState, current_rubric, int_field, only, render, state_of

__all__ = ["admin_adjudicate", "admin_confirm", "admin_invite", "admin_override", "admin_page", "admin_pair",
           "admin_revise", "admin_undo", "api_changes", "api_kappa", "api_labeller_grades", "api_pace",
           "api_queue", "api_rounds", "api_status", "api_unknown"]  # fmt: skip


#: How the errors of a rubric pasted on the admin page name it (the temporary file it is read from is gone).
PASTED = "the pasted rubric"


def _overview(st: AppState, page: int = 1, per_page: int = QUEUE_PAGE_SIZE) -> dict[str, Any]:
    """What the admin page shows: the phase and the rounds' history, progress and pace, the current
    round's calibration states, the material for a revision when its gate failed, one page of the
    adjudication queue and the recent decisions."""
    phase = ensure_gate(st.store)
    rubric = current_rubric(st)
    history = st.store.read(rounds_history)
    failed = history[-1]["status"] in ("failed", "overridden")
    token, status, pace, recent = st.store.read(
        lambda c: (change_token(c), g.progress(c), labeller_pace(c), recent_decisions(c, rubric.content_hash))
    )
    return {
        "phase": phase,
        "history": history,
        "status": status,
        "pace": pace,
        "calibration": g.calibration_status(st.store, rubric),
        "group": group_calibration_fields(g.group_status(st.store)),
        "statistic": st.store.meta("gate_statistic") or "kappa",
        "material": round_material(st.store) if failed else [],
        "queue": queue_page(g.adjudication_queue(st.store, rubric), page, per_page),
        "recent": recent,
        "models": st.store.read(models_overview),
        "rubric": rubric,
        "token": token,
        "refresh_ms": int(st.admin_refresh * 1000),
    }


def _page_number(value: str | None) -> int:
    """``?page=N`` (1-based); anything else is page 1."""
    return int(value) if value and value.isdigit() and len(value) < 10 else 1


async def admin_page(request: Request) -> Response:
    """GET /admin[?page=N&per_page=M][&decided=EVENT|&undone=EVENT]: the admin page, with page N of the
    queue (M rows a page, default :data:`..decisions.QUEUE_PAGE_SIZE`)."""
    st = state_of(request)
    user = require(request, "admin")
    page = _page_number(request.query_params.get("page"))
    per_page = _page_number(request.query_params.get("per_page", str(QUEUE_PAGE_SIZE)))
    context = await run_in_threadpool(_overview, st, page, per_page)
    return render(request, "admin.html", user=user, invite=None, notice=_notice(request, context), **context)


def _notice(request: Request, context: dict[str, Any]) -> dict[str, Any] | None:
    """The decision just recorded (``?decided=``) or undone (``?undone=``), found among the recent ones."""
    for kind in ("decided", "undone"):
        value = request.query_params.get(kind, "")
        if value.isdigit():
            for d in context["recent"]:
                if str(d["event_id"]) == value:
                    return {"kind": kind, "decision": d}
    return None


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


async def admin_confirm(request: Request) -> Response:
    """GET /admin/adjudicate/confirm?query_id=&doc_id=&grade=[&note=&override=1&page=N]: the step before a
    decision is recorded: the pair, its grades and the chosen final grade, with "record" and "cancel"."""
    st = state_of(request)
    user = require(request, "admin")
    params = dict(request.query_params)
    only(params, {"query_id", "doc_id", "grade", "note", "override", "page"})
    grade = int_field(params, "grade")
    rubric = current_rubric(st)
    level = next((lv for lv in rubric.levels if lv.grade == grade), None)
    if level is None:
        raise HTTPException(400, f"grade {grade} is not on the rubric's scale {list(rubric.scale)}")
    q, d = params.get("query_id", ""), params.get("doc_id", "")
    pair, events, adjs = st.store.read(lambda c: pair_history(c, q, d))
    if pair is None:
        raise HTTPException(404, "no such pair in this project")
    current = [e for e in events if e["rubric_hash"] == rubric.content_hash]
    latest = {e["name"]: e for e in current}  # oldest first: the last one per labeller stays
    return render(request, "confirm.html", user=user, pair=pair, level=level, grades=list(latest.values()),
                  decisions=[a for a in adjs if not a["undone_at"] and a["rubric_hash"] == rubric.content_hash],
                  note=params.get("note", "").strip(),
                  override=params.get("override", "") == "1", page=_page_number(params.get("page")))  # fmt: skip


async def admin_adjudicate(request: Request) -> Response:
    """POST /admin/adjudicate: record a final grade for a pair (the confirmed step), then back to the queue
    with a notice that offers the undo."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request)
    only(form, {"query_id", "doc_id", "grade", "note", "override", "page"})
    grade = int_field(form, "grade")
    override = form.get("override", "") == "1"
    note = form.get("note", "").strip() or None
    query_id, doc_id = form.get("query_id", ""), form.get("doc_id", "")
    try:
        event = await run_in_threadpool(
            lambda: g.adjudicate(st.store, current_rubric(st), query_id, doc_id, grade,  # type: ignore[arg-type]
                                 by=user["name"], note=note, allow_override=override)
        )  # fmt: skip
    except g.ValidationError as exc:
        raise HTTPException(400, str(exc)) from None
    page = _page_number(form.get("page"))
    return RedirectResponse(f"/admin?page={page}&decided={event}#queue", status_code=303)


async def admin_undo(request: Request) -> Response:
    """POST /admin/undo: undo a decision (an event too: :func:`..decisions.undo_adjudication`)."""
    st = state_of(request)
    user = require(request, "admin")
    form = await form_of(request)
    only(form, {"event_id", "page"})
    event = int_field(form, "event_id")
    try:
        await run_in_threadpool(lambda: undo_adjudication(st.store, event, by=user["name"]))  # type: ignore[arg-type]
    except g.ValidationError as exc:
        raise HTTPException(400, str(exc)) from None
    page = _page_number(form.get("page"))
    return RedirectResponse(f"/admin?page={page}&undone={event}#queue", status_code=303)


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

    def run() -> list[str]:
        """The revision's errors, every lint error of the pasted text included (none: the round started)."""
        from qrelkit.rubric import format_findings, lint, load_rubric

        with tempfile.TemporaryDirectory(prefix="qrelkit-rubric-") as tmp:
            path = Path(tmp) / "rubric-from-the-admin-page.toml"
            path.write_text(text, encoding="utf-8")
            try:  # the temporary file's name means nothing to the admin: the errors name the pasted text
                rubric = load_rubric(path)
                errors = [f for f in lint(rubric) if f.severity == "error"]
                if errors:
                    head = (
                        f"the rubric has {len(errors)} lint error(s); fix them before labellers grade with it"
                    )
                    return [head, *format_findings(errors, rubric).replace(str(path), PASTED).splitlines()]
                revise(st.store, path, same_queries=same, by=user["name"], note=note)
            except QrelkitError as exc:
                return [str(exc).replace(str(path), PASTED)]
        return []

    errors = await run_in_threadpool(run)
    if not errors:
        return RedirectResponse("/admin#rounds", status_code=303)
    context = await run_in_threadpool(_overview, st)
    kept = {"errors": errors, "text": text, "note": note or "", "same": same}
    context["refresh_ms"] = 0  # this page answers a POST: it does not update itself while the text is fixed
    return render(request, "admin.html", 400, user=user, invite=None, notice=None, revision=kept, **context)


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


async def api_changes(request: Request) -> Response:
    """GET /admin/api/changes: ``{"token": ...}``, which moves whenever the admin page may have changed."""
    st = state_of(request)
    require(request, "admin")
    return JSONResponse({"token": st.store.read(change_token)}, headers={"cache-control": "no-store"})


async def api_pace(request: Request) -> Response:
    """GET /admin/api/pace: each labeller's pairs per hour and median seconds per pair (:mod:`..pace`)."""
    st = state_of(request)
    require(request, "admin")
    found = st.store.read(labeller_pace)
    return JSONResponse({"labellers": {name: p.to_dict() for name, p in found.items()}})


async def api_kappa(request: Request) -> Response:
    """GET /admin/api/kappa: the calibration agreement of each labeller pair, and of the whole group
    (``group``: :func:`qrelkit.judgments.adjudication.group_calibration_fields`, as in the manifest), with
    the phase (``phase``: its gate outcome, and the reason when agreement is not measurable)."""
    st = state_of(request)
    require(request, "admin")
    phase = await run_in_threadpool(ensure_gate, st.store)
    states = await run_in_threadpool(g.calibration_status, st.store, current_rubric(st))
    group = await run_in_threadpool(g.group_status, st.store)
    return JSONResponse(
        {"phase": phase.to_dict(), "calibration": [s.to_dict() for s in states],
         "group": group_calibration_fields(group)}
    )  # fmt: skip


async def api_queue(request: Request) -> Response:
    """GET /admin/api/queue[?page=N&per_page=M]: one page of the adjudication queue (default: the first
    50 rows), the total count, and how it is ordered (:mod:`..decisions`)."""
    st = state_of(request)
    require(request, "admin")
    page = _page_number(request.query_params.get("page"))
    per_page = request.query_params.get("per_page", "50")
    if not per_page.isdigit() or len(per_page) > 6:
        raise HTTPException(400, "per_page must be a whole number from 1 to 500")
    queue = await run_in_threadpool(g.adjudication_queue, st.store, current_rubric(st))
    return JSONResponse(queue_page(queue, page, int(per_page)))


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
