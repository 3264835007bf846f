"""This server's own URL, for the hints that name it (the Worker only).

A ``blocked`` answer on the edge names the exact command that brings the video here,
``vid2context push URL --to <this server>`` (``refusals.blocked``), and the edge knows its own
URL only from the request that reached it: its scheme and ``Host``. This layer puts that in
``refusals.EDGE_URL`` for the request's duration; tasks the request starts (a shared pipeline
run) inherit it. The hint prints it only when it looks like a URL (``refusals.push_command``).
"""

from __future__ import annotations

from litestar.types import ASGIApp, Receive, Scope, Send

from ...refusals import EDGE_URL
from ._asgi import header

__all__ = ["EdgeUrl", "origin_of"]


def origin_of(scope: Scope) -> str | None:
    """``scheme://host`` as the client reached this server, or ``None`` without a ``Host``."""
    host = (header(scope, b"host") or b"").decode("latin-1").strip()
    if not host:
        return None
    scheme = str(scope.get("scheme") or "https")
    return f"{scheme}://{host}"


class EdgeUrl:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = EDGE_URL.set(origin_of(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            EDGE_URL.reset(token)
