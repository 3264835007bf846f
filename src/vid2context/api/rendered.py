"""Rendered answers kept in the process, for the reads that repeat.

A stored ``GET /api/v1/transcript`` did the same work on every request: read the saved context
(a thread hop to SQLite and a JSON decode) and render it again. ``RenderedCache`` keeps the
rendered bytes with their strong ``ETag`` under a key of everything the answer depends on (the
video, the format and its options, mode, language and speakers), bounded in bytes, least recently used out
first. A matching ``If-None-Match`` is answered ``304`` from the same entry.

**Freshness.** An entry is good only while the library row it came from is unchanged, and that
row may be changed by another process: ``vid2context push`` from a CLI, another worker of
``serve --workers N``, a job. So an entry remembers the library's version
(``storage/versions.py``) read *before* its row was read, and is served only while the version
is the same; on SQLite that is
``PRAGMA data_version``, which changes with every commit of any other connection to the file, in
this process or another, and costs a few µs on the event loop. Any commit retires every entry,
not only the changed video's: coarse, but exact, and nothing else to keep in step; on a
read-heavy server writes are rare beside reads. On the Worker, whose isolates see each other's
writes only by asking D1, the version is a row that every write to a saved video bumps
(``LibraryVersioned``; the triggers of ``migrations/0011_leanlist.sql``), read with one small
query per cacheable request, and each isolate keeps its own entries (at most
``WORKER_MAX_BYTES``: an isolate has 128 MB). A storage with neither gets no cache; its answers
still carry the ``ETag`` and still answer ``304``.

Only what came from the library is kept (the pipeline's one ``cache`` attempt), never a fresh
read from the platform nor a language model's translation (saved in the blob store, which the
version does not cover).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from typing import Any, NamedTuple

from litestar import Response
from litestar.datastructures import ResponseHeader
from litestar.openapi import ResponseSpec
from litestar.types import Receive, Scope, Send

from ..storage.versions import VersionNow, VersionReader
from .middleware._asgi import header

__all__ = [
    "ENTRY_OVERHEAD",
    "ETAG_HEADER",
    "NOT_MODIFIED",
    "WORKER_MAX_BYTES",
    "Rendered",
    "RenderedCache",
    "etag_of",
    "if_none_match_of",
    "not_modified",
    "rendered_response",
]

ETAG_HEADER = ResponseHeader(
    name="ETag",
    description="SHA-256 of the body, quoted.",
    documentation_only=True,
    value="",  # documentation only: gives the header its string schema
)
NOT_MODIFIED = {304: ResponseSpec(None, description="If-None-Match names the current ETag: no body.")}
"""The OpenAPI side of a route that answers ``If-None-Match``."""

WORKER_MAX_BYTES = 8 * 1024 * 1024
"""The bound of a Worker isolate's cache, whatever ``VID2CONTEXT_RESPONSE_CACHE_MB`` says: an
isolate has 128 MB, much of it Python's own."""

ENTRY_OVERHEAD = 400
"""Bytes counted per entry beside its body (key, headers, the entry itself), so that many tiny
entries cannot exceed the bound either."""


class Rendered(NamedTuple):
    body: bytes
    etag: str
    headers: tuple[tuple[bytes, bytes], ...]
    """The ``200``'s headers, encoded: those given, then ``ETag`` and ``Content-Length``."""

    @classmethod
    def of(cls, body: bytes, headers: dict[str, str]) -> Rendered:
        """``body`` with ``headers`` (``Content-Type``, ``Content-Language``...) and its ETag."""
        etag = etag_of(body)
        encoded = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
        ]
        encoded += [(b"etag", etag.encode("ascii")), (b"content-length", str(len(body)).encode("ascii"))]
        return cls(body, etag, tuple(encoded))


class _Ready(Response[bytes]):
    """A response already in its ASGI form: Litestar's own would encode and look up every header
    again on each hit (a third of a cached read's time in the handler)."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        super().__init__(b"")
        self._status, self._headers, self._body = status, headers, body

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ARG002 - nothing to merge
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self._status, "headers": self._headers})
        await send({"type": "http.response.body", "body": self._body})


class RenderedCache:
    """Rendered answers by key, for one storage version at a time, at most ``max_bytes``."""

    def __init__(
        self, version: VersionReader, *, max_bytes: int, version_now: VersionNow | None = None
    ) -> None:
        self.version = version
        """The library's version now (``storage.versions.version_reader``, chosen once): read it
        before reading what an entry is made from."""
        self.version_now = version_now
        """The same version read without waiting (``storage.versions.version_now``: SQLite's), or
        ``None`` where reading it is a query away (the Worker's D1): the front of cached reads
        (``cached_reads.py``) runs only where it is not ``None``."""
        self.max_bytes = max_bytes
        self.max_entry = max_bytes // 8
        """A larger answer is not kept: one long transcript must not flush all the others."""
        self._entries: dict[Hashable, tuple[Rendered, int]] = {}  # insertion order is last use
        self._at: int | None = None  # the version every entry was read at
        self.size = 0
        """Bytes counted: bodies, the keys' text and ``ENTRY_OVERHEAD`` per entry."""
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, version: int | None) -> Rendered | None:
        """The entry for ``key`` if it was read at ``version`` (``version()`` just now)."""
        found = self.peek(key, version)
        if found is None and version is not None:
            self.misses += 1
        return found

    def peek(self, key: Hashable, version: int | None) -> Rendered | None:
        """``get`` that does not count a miss: for a front that hands its misses on to the
        handler, which asks ``get`` again (``cached_reads.py``)."""
        if version is None:
            return None
        if version != self._at:
            self._retire(version)
        found = self._entries.pop(key, None)
        if found is None:
            return None
        self._entries[key] = found
        self.hits += 1
        return found[0]

    def put(self, key: tuple[Hashable, ...], version: int | None, rendered: Rendered) -> None:
        """Keep ``rendered``, made from what was read after ``version`` was."""
        cost = len(rendered.body) + ENTRY_OVERHEAD + sum(len(part) for part in key if isinstance(part, str))
        if version is None or cost > self.max_entry:
            return
        if version != self._at:
            self._retire(version)
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= old[1]
        self._entries[key] = (rendered, cost)
        self.size += cost
        while self.size > self.max_bytes:
            self.size -= self._entries.pop(next(iter(self._entries)))[1]

    def _retire(self, version: int) -> None:
        """Something was committed since the entries were read: none of them may be served."""
        self._entries.clear()
        self.size = 0
        self._at = version


def etag_of(body: bytes) -> str:
    """The contract's strong ETag: the SHA-256 of the body, quoted."""
    return f'"{hashlib.sha256(body).hexdigest()}"'


def if_none_match_of(scope: Scope) -> str | None:
    """The request's ``If-None-Match``, read from the scope (Litestar's ``request.headers`` would
    build a mapping of every header for it, on every hit)."""
    raw = header(scope, b"if-none-match")
    return None if raw is None else raw.decode("latin-1")


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, as RFC 9110 asks for GET)."""
    if not if_none_match:
        return False
    return any(
        tag == "*" or tag.removeprefix("W/") == etag for tag in map(str.strip, if_none_match.split(","))
    )


def not_modified(if_none_match: str | None, etag: str) -> Response[bytes] | None:
    """``304`` with the ``ETag`` when ``If-None-Match`` names it, else ``None``."""
    if not _matches(if_none_match, etag):
        return None
    return Response(b"", status_code=304, headers={"ETag": etag})


def rendered_response(rendered: Rendered, if_none_match: str | None) -> Response[bytes]:
    """The answer for ``rendered``: ``304`` with its ``ETag`` when the client has it, else the
    ``200``. Fresh header lists each time: the layers outside may extend them."""
    if _matches(if_none_match, rendered.etag):
        return _Ready(304, [(b"etag", rendered.etag.encode("ascii"))], b"")
    return _Ready(200, list(rendered.headers), rendered.body)
