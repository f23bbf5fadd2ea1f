"""Who is asking: sign-in by invite link, sessions, sign-out, CSRF on every form, and the sign-in limit.

A session cookie (:class:`..security.Sessions`) names a user and their session epoch; the user counts as
signed in only while that epoch is the user's current one (``qrelkit judge revoke`` moves it on). Failed
sign-in attempts count against the client address; successes do not.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..project import invite_status, redeem_invite
from ..queries import user_by_id
from ..security import Sessions, read_form
from .state import only, render, state_of

__all__ = ["client", "form_of", "home", "invite_page", "require", "signout", "user_of"]


def user_of(request: Request) -> Any:
    """The signed-in user's row, or ``None``; the session goes to ``request.state.session`` either way."""
    st = state_of(request)
    session = st.sessions.load(request)
    request.state.session = session
    uid = session.get("u")
    if not isinstance(uid, int):
        return None
    row = st.store.read(lambda c: user_by_id(c, uid))
    if row is None or row["session_epoch"] != session.get("e"):
        return None
    return row


def require(request: Request, role: str) -> Any:
    """The signed-in user if they have ``role``: 401 without a valid session, 403 with another role."""
    user = user_of(request)
    if user is None:
        raise HTTPException(401, "sign in with the invite link you were given")
    if user["role"] != role:
        raise HTTPException(403, f"this page is for the {role} role")
    return user


async def form_of(request: Request, *, max_bytes: int | None = None) -> dict[str, str]:
    """The request's form, read with the size limit (``max_bytes``, default the app's), after the CSRF and
    same-origin checks passed."""
    st = state_of(request)
    form = await read_form(request, max_bytes=max_bytes or st.max_body)
    session = getattr(request.state, "session", None) or st.sessions.load(request)
    st.sessions.check_csrf(request, session, form)
    return form


def client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _landing(user: Any) -> str:
    return "/admin" if user["role"] == "admin" else "/label"


async def home(request: Request) -> Response:
    """GET /: the user's own page, or "use your invite link"."""
    user = user_of(request)
    if user is None:
        return render(request, "signin.html", invalid=False)
    return RedirectResponse(_landing(user), status_code=303)


async def invite_page(request: Request) -> Response:
    """GET /invite/{token} shows "Sign in as ..."; POST uses the link once and starts a new session."""
    st = state_of(request)
    address = client(request)
    if not st.limiter.allowed(address):
        raise HTTPException(429, "too many failed sign-in attempts; wait a minute and try again")
    token = request.path_params["token"]
    user_of(request)
    if request.method == "GET":
        user = invite_status(st.store, token)
        if user is None:
            st.limiter.fail(address)
            return render(request, "signin.html", code=403, invalid=True)
        return render(
            request, "invite.html", fresh_session=True, name=user["name"], role=user["role"], token=token
        )
    try:
        form = await form_of(request)
        only(form, set())
    except HTTPException:
        st.limiter.fail(address)
        raise
    user = await asyncio.wrap_future(st.store.submit(lambda c: redeem_invite(c, token)))
    if user is None:
        st.limiter.fail(address)
        return render(request, "signin.html", code=403, invalid=True)
    session = Sessions.new(user["user_id"], user["session_epoch"])  # a new nonce: no session fixation
    response = RedirectResponse(_landing(user), status_code=303)
    st.sessions.set_cookie(response, request, session)
    return response


async def signout(request: Request) -> Response:
    """POST /signout: replace the session with an anonymous one."""
    st = state_of(request)
    user_of(request)
    await form_of(request)
    response = RedirectResponse("/", status_code=303)
    st.sessions.set_cookie(response, request, Sessions.new())
    return response
