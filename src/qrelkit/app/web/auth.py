"""Who is asking: sign-in by invite link, sessions, sign-out, CSRF on every form, and the sign-in limit.

A session cookie (:class:`..security.Sessions`) names a user and their session epoch; the user counts as
signed in only while that epoch is the user's current one (``qrelkit judge revoke`` moves it on) and the
session's row on the server is live (not signed out, not idle past the timeout). Failed sign-in attempts
count against the client address (the connection's peer; ``X-Forwarded-For`` only from a trusted proxy,
which the server settles before the app sees the request); successes do not.
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
    if not st.sessions.active(st.store, session, uid):
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
    """GET /invite/{token} shows "Sign in as ..."; POST uses the link once and starts a new session.

    The attempt counts against the client address from its start, and is taken back once it succeeded.
    When the address's limit is filled by attempts still in flight (twenty labellers behind one office
    address signing in at once), it waits for their answers, up to :data:`SIGN_IN_WAIT` seconds, rather than
    being refused for failures nobody made. A valid invite always passes: over the limit, the link is still
    looked up, and one that is valid (unused, unexpired) signs in; only links that are not are refused (429),
    so bad attempts from an address never lock a labeller with a good link out.
    """
    st = state_of(request)
    address = client(request)
    ticket = st.limiter.attempt(address)
    waited = 0.0
    while ticket is None and waited < SIGN_IN_WAIT and st.limiter.in_flight(address):
        await asyncio.sleep(0.02)
        waited += 0.02
        ticket = st.limiter.attempt(address)
    if ticket is None:
        token = request.path_params["token"]
        if invite_status(st.store, token) is None:
            raise HTTPException(429, "too many failed sign-in attempts; wait a minute and try again")
        return await _invite(request, st, address, None)  # a valid link passes the address's limit
    try:
        return await _invite(request, st, address, ticket)
    finally:
        st.limiter.settled(address, ticket)


#: Seconds a sign-in waits for the attempts in flight from its address before it is refused.
SIGN_IN_WAIT = 5.0


async def _invite(request: Request, st: Any, address: str, ticket: float | None) -> Response:
    token = request.path_params["token"]
    user_of(request)
    if request.method == "GET":
        user = invite_status(st.store, token)
        if user is None:
            return render(request, "signin.html", code=403, invalid=True)
        if ticket is not None:
            st.limiter.succeeded(address, ticket)
        return render(
            request, "invite.html", fresh_session=True, name=user["name"], role=user["role"], token=token
        )
    form = await form_of(request)
    only(form, set())

    def redeem(c: Any) -> tuple[Any, dict[str, Any] | None]:
        user = redeem_invite(c, token)
        if user is None:
            return None, None
        # a new nonce: no session fixation
        return user, st.sessions.begin(c, user["user_id"], user["session_epoch"])

    user, session = await asyncio.wrap_future(st.store.submit(redeem))
    if user is None or session is None:
        return render(request, "signin.html", code=403, invalid=True)
    if ticket is not None:
        st.limiter.succeeded(address, ticket)
    response = RedirectResponse(_landing(user), status_code=303)
    st.sessions.set_cookie(response, request, session)
    return response


async def signout(request: Request) -> Response:
    """POST /signout: end the session on the server and replace the cookie with an anonymous one."""
    st = state_of(request)
    user_of(request)
    await form_of(request)
    session = request.state.session
    if session.get("u") is not None:
        await asyncio.wrap_future(st.store.submit(lambda c: st.sessions.end(c, session)))
    response = RedirectResponse("/", status_code=303)
    st.sessions.set_cookie(response, request, Sessions.new())
    return response
