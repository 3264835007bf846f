"""Serving the docs site in ``site/``, Markdown to agents and HTML to people.

One policy for both deployments, as the HTTP contract's "Worker: site discovery" section says:

- a ``GET``/``HEAD`` whose ``Accept`` ranks ``text/markdown`` above ``text/html`` gets the page's
  ``.md`` twin (``/index.md`` for ``/``, then ``<path>.md``, then ``<path>/index.md``) as
  ``text/markdown; charset=utf-8`` with ``Vary: Accept``; without a twin, the HTML is served;
- HTML answers carry ``Vary: Accept`` and a ``Link`` header pointing at ``/llms.txt``, the OpenAPI
  document and ``/mcp``.

Where the bytes come from is the only platform difference, so it is a ``SiteReader``: files on
disk locally (``site_files.py``), the ``ASSETS`` binding on the Worker (``worker/entry.py``).
``is_app_path`` is the one rule that splits a request between the API app and the site, used by
the Worker's entry and by ``site_and_app`` for the local server, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

__all__ = [
    "LINK_HEADER",
    "SiteApp",
    "SiteReader",
    "is_app_path",
    "markdown_candidates",
    "media_type",
    "page_candidates",
    "prefers_markdown",
    "site_and_app",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MARKDOWN = "text/markdown; charset=utf-8"
HTML = "text/html; charset=utf-8"
LINK_HEADER = (
    '</llms.txt>; rel="alternate"; type="text/plain", '
    '</api/v1/openapi.json>; rel="service-desc"; type="application/openapi+json", '
    '</mcp>; rel="service"'
)
NOT_FOUND_PAGE = "/404"
MAX_PATH = 1024
_MEDIA_TYPES = {
    ".html": HTML,
    ".md": MARKDOWN,
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".xml": "application/xml",
}


class SiteReader(Protocol):
    """Reads one file of the site by its exact path (``/quick-start.md``); ``None`` when absent.

    Readers do no resolution of their own (no ``index.html``, no added extensions): ``SiteApp``
    decides which paths to try, so both platforms resolve pages identically.
    """

    async def read(self, path: str) -> bytes | None: ...


def is_app_path(path: str) -> bool:
    """True for what the API app serves: ``/api/*``, ``/mcp`` (and ``/mcp/server-card``),
    ``/oauth/*``, ``/.well-known/*`` and the web app (``/app``, ``/app/*``: ``api/webapp.py``);
    everything else is the site."""
    return path in ("/api", "/mcp", "/app") or path.startswith(
        ("/api/", "/mcp/", "/oauth/", "/.well-known/", "/app/")
    )


def _ranges(accept: str) -> list[tuple[str, str, float]]:
    """``(type, subtype, q)`` for each media range; a range with a malformed ``q`` is dropped."""
    ranges = []
    for item in accept.split(","):
        media, *params = item.split(";")
        kind, _, sub = media.strip().lower().partition("/")
        if not kind or not sub:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = -1.0
                if not 0.0 <= quality <= 1.0:
                    quality = -1.0
        if quality >= 0.0:
            ranges.append((kind, sub, quality))
    return ranges


def _quality(ranges: list[tuple[str, str, float]], kind: str, sub: str) -> float:
    """The quality of ``kind/sub``: from its most specific matching range (RFC 9110, 12.5.1)."""
    best, specificity = 0.0, -1
    for r_kind, r_sub, quality in ranges:
        if (r_kind, r_sub) == (kind, sub):
            rank = 2
        elif r_kind == kind and r_sub == "*":
            rank = 1
        elif (r_kind, r_sub) == ("*", "*"):
            rank = 0
        else:
            continue
        if rank > specificity:
            best, specificity = quality, rank
    return best


def prefers_markdown(accept: str | None) -> bool:
    """Whether ``accept`` ranks ``text/markdown`` strictly above ``text/html``.

    Ties go to HTML: a browser's ``*/*`` or a bare ``text/*`` is a person, not an agent asking for
    Markdown; no ``Accept`` at all means anything, which is HTML too.
    """
    if not accept:
        return False
    ranges = _ranges(accept[:4096])
    return _quality(ranges, "text", "markdown") > _quality(ranges, "text", "html")


def _clean(path: str) -> str | None:
    """``path`` without its trailing slash, or ``None`` when it cannot name a file of the site."""
    if not path.startswith("/") or len(path) > MAX_PATH or "\\" in path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(part.startswith(("_", ".")) for part in parts):
        return None  # no climbing out, no dotfiles, and `_`-prefixed files are build inputs
    return path.rstrip("/") or "/"


def markdown_candidates(path: str) -> list[str]:
    """The Markdown twins to try for ``path``, in the contract's order."""
    clean = _clean(path)
    if clean is None:
        return []
    if clean == "/":
        return ["/index.md"]
    return [f"{clean}.md", f"{clean}/index.md"]


def page_candidates(path: str) -> list[str]:
    """The files to try for ``path`` as a person sees it: its HTML page and the file itself.

    Each try is a read (on the Worker, a subrequest to ``ASSETS``), so the likely file comes first:
    the file itself when the name has an extension (``/llms.txt``), else the page (``/quick-start``
    is ``quick-start.html``), with the other kept as a fallback.
    """
    clean = _clean(path)
    if clean is None:
        return []
    if clean == "/":
        return ["/index.html"]
    pages = [f"{clean}.html", f"{clean}/index.html"]
    if path.endswith("/"):
        return pages
    if "." in clean.rsplit("/", 1)[-1]:
        return [clean, *pages]
    return [*pages, clean]


def media_type(path: str) -> str:
    """The ``Content-Type`` for a site file, by its extension."""
    dot = path.rfind(".")
    slash = path.rfind("/")
    extension = path[dot:].lower() if dot > slash else ""
    return _MEDIA_TYPES.get(extension, "application/octet-stream")


class SiteApp:
    """The site as an ASGI app over a ``SiteReader``.

    Only ``GET`` and ``HEAD``; a missing page answers 404 with the site's own 404 page (its
    Markdown twin for agents). The lifespan is acknowledged and otherwise ignored, so a server
    that runs it (the Worker does, around every request) needs nothing else.
    """

    def __init__(self, reader: SiteReader) -> None:
        self.reader = reader

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await _send(
                send,
                405,
                b"Method not allowed: the site answers GET and HEAD.\n",
                [(b"allow", b"GET, HEAD"), (b"content-type", b"text/plain; charset=utf-8")],
                head=False,
            )
            return
        accept = _header(scope, b"accept")
        status, path, body = await self._find(scope.get("path", "/"), prefers_markdown(accept))
        headers = [(b"content-type", media_type(path).encode()), (b"vary", b"Accept")]
        if path.endswith(".html"):
            headers.append((b"link", LINK_HEADER.encode()))
        await _send(send, status, body, headers, head=method == "HEAD")

    async def _find(self, path: str, markdown: bool) -> tuple[int, str, bytes]:
        candidates = page_candidates(path)
        if markdown:
            candidates = [*markdown_candidates(path), *candidates]
        for candidate in candidates:
            body = await self.reader.read(candidate)
            if body is not None:
                return 200, candidate, body
        missing = markdown_candidates(NOT_FOUND_PAGE) if markdown else []
        for candidate in [*missing, f"{NOT_FOUND_PAGE}.html"]:
            body = await self.reader.read(candidate)
            if body is not None:
                return 404, candidate, body
        return 404, "/404.txt", b"Not found.\n"


def site_and_app(app: ASGIApp, site: ASGIApp) -> ASGIApp:
    """One ASGI app: ``is_app_path`` requests (and the lifespan) to ``app``, the rest to ``site``."""

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or is_app_path(scope.get("path", "/")):
            await app(scope, receive, send)
        else:
            await site(scope, receive, send)

    return dispatch


def _header(scope: Scope, name: bytes) -> str | None:
    values = [value for key, value in scope.get("headers", ()) if key.lower() == name]
    return b", ".join(values).decode("latin-1") if values else None


async def _send(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]], *, head: bool
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
