"""A rendered ``GET /api/v1/transcript`` answered before Litestar routes it.

Over sockets a cached read cost ours about three times what a bare Litestar route did, and most
of what was left was Litestar's own work for a request whose answer was already made: routing,
the signature model parsing seven query parameters, the handler's ``Request``, its exception
layer, its ``send`` wrappers. ``CachedReads`` sits where Litestar's handler sat, *inside* every
layer of ``api/middleware`` (request id, CORS, auth and scopes, rate limit, body and time limits,
the access log), so those run exactly as for any other request; it only answers what the handler
would answer from ``RenderedCache`` without reading anything:

- ``GET`` of exactly ``/api/v1/transcript`` (no ``root_path``), a ``Host`` Litestar accepts;
- a query string of at most ``MAX_QUERY_BYTES``, decoded by Litestar's own parser, naming only
  ``url``, ``format``, ``timestamps``, ``mode``, ``lang``, ``speakers`` and ``include``, each at
  most once and none empty (never ``skip`` nor ``translate``: those answers are never kept);
- checked by the handler's own ``transcript_query.transcript_ask`` without an error, under the
  handler's key, at the storage's version read now (SQLite's ``PRAGMA data_version`` on the
  event loop: no thread hop);
- a hit: the same ``rendered_response`` the handler returns, ``304`` for a matching
  ``If-None-Match``.

Everything else (a miss, another method, a bad value, an unusual query) goes on to Litestar
unchanged, which answers it as before: the handler counts the miss, reads, renders and keeps.
On the Worker, where the version is a D1 query away, there is no front (``create_app``).
"""

from __future__ import annotations

from litestar._asgi.utils import is_valid_host
from litestar._parsers import parse_query_string
from litestar.types import ASGIApp, Receive, Scope, Send

from ..errors import VidError
from ..runtime import Runtime
from .rendered import Rendered, RenderedCache, if_none_match_of, rendered_response
from .transcript_query import transcript_ask

__all__ = ["MAX_QUERY_BYTES", "TRANSCRIPT_PATH", "CachedReads"]

TRANSCRIPT_PATH = "/api/v1/transcript"
MAX_QUERY_BYTES = 2048
"""A longer query string goes to Litestar: a hit's query is a video and a few options."""
_NAMES = ("url", "format", "timestamps", "mode", "lang", "speakers", "include")
_KNOWN = frozenset(_NAMES)


class CachedReads:
    """``app`` (Litestar's handler) behind a front that answers rendered-cache hits itself."""

    def __init__(self, app: ASGIApp, *, cache: RenderedCache, runtime: Runtime) -> None:
        version_now = cache.version_now
        if version_now is None:
            raise ValueError("the front needs a version read without waiting (SQLite's)")
        self.app = app
        self.cache = cache
        self.runtime = runtime
        self._version_now = version_now
        self.answered = 0
        """Requests this front answered itself (the rest went on to Litestar)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == TRANSCRIPT_PATH and scope.get("method") == "GET":
            kept = self._kept(scope)
            if kept is not None:
                self.answered += 1
                await rendered_response(kept, if_none_match_of(scope))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _kept(self, scope: Scope) -> Rendered | None:
        """The entry the handler would answer with, or ``None`` to leave the request to it."""
        raw = scope.get("query_string") or b""
        if scope.get("root_path") or len(raw) > MAX_QUERY_BYTES:
            return None
        host = next((value for name, value in scope.get("headers") or () if name == b"host"), None)
        if host is not None and not is_valid_host(host):  # as Litestar's router looks for it
            return None  # Litestar answers it 400
        given: dict[str, str] = {}
        for name, value in parse_query_string(raw):
            if name not in _KNOWN or name in given or not value:
                return None
            given[name] = value
        try:
            ask = transcript_ask(
                self.runtime,
                given.get("url"),
                given.get("format"),
                given.get("timestamps"),
                given.get("mode"),
                given.get("lang"),
                None,
                None,
                given.get("speakers"),
                given.get("include"),
            )
        except VidError:
            return None  # the handler reports it
        return self.cache.peek(ask.key, self._version_now())
