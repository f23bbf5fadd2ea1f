"""Downloads for the admin: one labeller's qrels, the final qrels, and the final qrels' manifest.

Bodies are built in memory. The download name carries the project name, which may hold any character:
:func:`content_disposition` writes it as RFC 6266 asks (an ASCII ``filename`` plus ``filename*`` in UTF-8).
"""

from __future__ import annotations

import tempfile
import urllib.parse
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from qrelkit.rubric import Rubric

from .. import grades as g
from ..queries import labeller_qrels_text
from ..store import Store
from .auth import require
from .state import state_of

__all__ = ["content_disposition", "export_final", "export_labeller", "export_manifest", "export_unknown",
           "final_export_texts"]  # fmt: skip

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


def final_export_texts(store: Store, rubric: Rubric) -> tuple[str, str]:
    """(the final qrels, their manifest) as text.

    :func:`..grades.export_final` writes both files, so this runs it in a temporary directory and reads
    them back; it is the only place the downloads touch the disk.
    """
    with tempfile.TemporaryDirectory() as tmp:
        info = g.export_final(store, rubric, Path(tmp) / "final.qrels")
        return Path(info["path"]).read_text(), Path(info["manifest"]).read_text()


async def export_final(request: Request) -> Response:
    """GET /admin/export/final: the final qrels."""
    st = state_of(request)
    require(request, "admin")
    qrels, _ = await run_in_threadpool(final_export_texts, st.store, st.rubric)
    return _download(qrels, f"{st.project_name}.final.qrels")


async def export_manifest(request: Request) -> Response:
    """GET /admin/export/final/manifest: the final qrels' manifest (JSON)."""
    st = state_of(request)
    require(request, "admin")
    _, manifest = await run_in_threadpool(final_export_texts, st.store, st.rubric)
    return Response(manifest, media_type="application/json")


async def export_labeller(request: Request) -> Response:
    """GET /admin/export/labeller/{name}: that labeller's current grades; 404 for an unknown name."""
    st = state_of(request)
    require(request, "admin")
    name = request.path_params["name"]
    try:
        text = await run_in_threadpool(labeller_qrels_text, st.store, name)
    except g.ValidationError as exc:
        raise HTTPException(404, str(exc)) from None
    return _download(text, f"{st.project_name}.{name}.qrels")


async def export_unknown(request: Request) -> Response:
    """Any other path under /admin/export/: 404, after the admin check (anonymous visitors get 401)."""
    require(request, "admin")
    raise HTTPException(404, "unknown export")
