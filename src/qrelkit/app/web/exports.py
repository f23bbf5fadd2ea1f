"""Downloads for the admin: one labeller's qrels, the final qrels, and the final qrels' manifest.

Bodies are built in memory. The download name carries the project name, which may hold any character:
:func:`content_disposition` writes it as RFC 6266 asks (an ASCII ``filename`` plus ``filename*`` in UTF-8).
"""

from __future__ import annotations

import urllib.parse

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from .. import grades as g
from .auth import require
from .state import current_rubric, state_of

__all__ = ["content_disposition", "export_final", "export_labeller", "export_manifest", "export_unknown"]  # fmt: skip

# RFC 5987 attr-char besides letters and digits: what may stand unencoded in ``filename*``.
_ATTR_CHARS = "!#$&+-.^_`|~"


def content_disposition(filename: str) -> str:
    """``attachment`` with ``filename`` (printable ASCII; anything else, quotes, slashes and ``%`` become
    ``_``) and ``filename*`` (the name in UTF-8, percent-encoded), as RFC 6266 recommends.

    Any name gives a valid header: clients that read ``filename*`` get the name exactly, others a
    readable ASCII stand-in.
    """
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\/%' else "_" for c in filename)
    encoded = urllib.parse.quote(filename, safe=_ATTR_CHARS, encoding="utf-8")
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"


def _download(text: str, filename: str) -> Response:
    return PlainTextResponse(text, headers={"content-disposition": content_disposition(filename)})


def _final(request: Request) -> tuple[str, str]:
    """The final qrels and manifest, under the policy the URL names (``?unresolved=leave-out``; else refuse,
    answered 409 with the pairs named)."""
    st = state_of(request)
    policy = request.query_params.get("unresolved", "refuse")
    if policy not in ("refuse", "leave-out"):
        raise HTTPException(400, "unresolved must be refuse or leave-out")
    try:
        qrels, manifest, _ = g.final_qrels_text(
            st.store, current_rubric(st), name=f"{st.project_name}.final.qrels", undecided=policy
        )
    except g.ValidationError as exc:
        raise HTTPException(409, str(exc)) from None
    return qrels, manifest


async def export_final(request: Request) -> Response:
    """GET /admin/export/final: the final qrels."""
    st = state_of(request)
    require(request, "admin")
    qrels, _ = await run_in_threadpool(_final, request)
    return _download(qrels, f"{st.project_name}.final.qrels")


async def export_manifest(request: Request) -> Response:
    """GET /admin/export/final/manifest: the final qrels' manifest (JSON)."""
    require(request, "admin")
    _, manifest = await run_in_threadpool(_final, request)
    return Response(manifest, media_type="application/json")


async def export_labeller(request: Request) -> Response:
    """GET /admin/export/labeller/{name}: that labeller's current grades; 404 for an unknown name."""
    st = state_of(request)
    require(request, "admin")
    name = request.path_params["name"]
    try:
        text = await run_in_threadpool(g.labeller_qrels_text, st.store, name)
    except g.ValidationError as exc:
        raise HTTPException(404, str(exc)) from None
    return _download(text, f"{st.project_name}.{name}.qrels")


async def export_unknown(request: Request) -> Response:
    """Any other path under /admin/export/: 404, after the admin check (anonymous visitors get 401)."""
    require(request, "admin")
    raise HTTPException(404, "unknown export")
