"""Errors are values with a code.

Every failure a user can see is a ``VidError``: a code from ``ErrorCode``, a message naming the
problem, a hint naming the next step, and the ladder ``attempts`` that led to it. The REST API maps
the code through ``STATUS_BY_CODE``; the MCP layer returns the same error as an ``isError`` result.
Anything that is not a ``VidError`` is a bug and surfaces as ``internal`` with no detail.

A hint names the next step, and the step depends on who is asking: a REST client lists
collections with ``GET /api/v1/collections``, an MCP client with ``list_collections``. So a hint is
one text for every surface, or a text per surface: ``steps("List them with {collections}.")``
names the route or the tool from ``STEPS`` (the one table of steps that hints name), and
``per_surface(rest=..., mcp=...)`` says something else to each. Each boundary renders
its own (``error_body`` the REST text, the MCP layer ``hint_for("mcp")``); code that copies a hint
into data on the way (a ``FailedInput`` in a summary) reads ``error.hint``, the text for the
surface of the call it runs in (``SURFACE``, set by the MCP layer for its calls, REST otherwise),
and code that makes a new error from another passes ``error.hints`` so no surface's text is lost.

What a hint says: what the reader can do now, on its surface, and nothing it cannot do.

- One of: another tool or route (``steps``), another argument of the same call (``mode=stt``, a
  ``cursor``), a setting from ``settings.SETTINGS`` for the user to set, or, when nothing the
  caller does would help, "tell the user ...; do not retry". An agent cannot set a server's
  environment, so a setting is always something to tell the user.
- "Retry" only where a retry can succeed (a timeout, a wait the platform asked for, a flaky
  answer), and then once; never for a refusal that the same call would meet again.
- Where the server runs changes the way out (``refusals.py``): the local runtime never tells its
  user to run vid2context locally, the Worker never offers a proxy or yt-dlp's cookies.
- ``tests/test_error_table.py`` makes every code on each surface and checks that its hint names a
  step that exists there.

The codes, by whose problem it is::

    the caller's input     unsupported-input  bad-request  not-found  too-large
                           precondition-failed (If-Match names another copy)
    the video              unavailable  no-transcript
    the platform           blocked  rate-limited  upstream  auth (an upstream key failed)
    our ladder             no-provider  all-rungs-failed  timeout
    the caller's key       unauthorized  forbidden
    a bug                  internal

This module imports only ``models`` (for ``Attempt``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import Any, Literal

import msgspec

from .models import Attempt

__all__ = [
    "STATUS_BY_CODE",
    "SURFACE",
    "ErrorCode",
    "STEPS",
    "Hint",
    "Surface",
    "VidError",
    "error_body",
    "on_surface",
    "per_surface",
    "steps",
]

Surface = Literal["rest", "mcp"]
SURFACE: ContextVar[Surface] = ContextVar("vid2context_surface", default="rest")
"""The surface the running call came in on; the MCP layer sets ``mcp`` for its calls."""

Hint = str | Mapping[str, str]
"""One text for every surface, or a text per surface (``per_surface``)."""


STEPS: dict[str, tuple[str, str]] = {
    "outline": ("GET /api/v1/outline", "get_outline"),
    "items": ("GET /api/v1/items", "list_items"),
    "collections": ("GET /api/v1/collections", "list_collections"),
    "add_videos": ("POST /api/v1/collections/{id}/items", "add_to_collection"),
    "rungs": ("GET /api/v1/health", "list_models"),
    "embed_rungs": ("GET /api/v1/models?kind=embed", "list_models with kind=embed"),
    "llm_rungs": ("GET /api/v1/models?kind=llm", "list_models with kind=llm"),
    "library": ("GET /api/v1/library", "resources/list"),
    "metadata": ("GET /api/v1/metadata", "get_metadata"),
    "formats": ("GET /api/v1/formats", "list_formats"),
}
"""The steps hints name: ``(REST route, MCP tool or method)``; tests check that each exists."""


def steps(template: str) -> dict[str, str]:
    """A hint per surface: ``template`` with each ``{step}`` replaced by that surface's route or tool."""
    return {
        surface: template.format_map({name: pair[i] for name, pair in STEPS.items()})
        for i, surface in enumerate(("rest", "mcp"))
    }


def per_surface(*, rest: str, mcp: str) -> dict[str, str]:
    """A hint that names a route to REST clients and a tool to MCP clients."""
    return {"rest": rest, "mcp": mcp}


@contextmanager
def on_surface(surface: Surface) -> Iterator[None]:
    """Run the block as a call from ``surface`` (tasks started inside inherit it)."""
    token = SURFACE.set(surface)
    try:
        yield
    finally:
        SURFACE.reset(token)


class ErrorCode(StrEnum):
    UNSUPPORTED_INPUT = "unsupported-input"
    BAD_REQUEST = "bad-request"
    NOT_FOUND = "not-found"
    UNAVAILABLE = "unavailable"
    NO_TRANSCRIPT = "no-transcript"
    TOO_LARGE = "too-large"
    RATE_LIMITED = "rate-limited"
    TIMEOUT = "timeout"
    BLOCKED = "blocked"
    NO_PROVIDER = "no-provider"
    ALL_RUNGS_FAILED = "all-rungs-failed"
    AUTH = "auth"
    UPSTREAM = "upstream"
    INTERNAL = "internal"
    CANCELED = "canceled"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    PRECONDITION_FAILED = "precondition-failed"


STATUS_BY_CODE: dict[ErrorCode, int] = {
    ErrorCode.UNSUPPORTED_INPUT: 400,
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.UNAVAILABLE: 403,
    ErrorCode.NO_TRANSCRIPT: 422,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.BLOCKED: 503,
    ErrorCode.NO_PROVIDER: 503,
    ErrorCode.ALL_RUNGS_FAILED: 502,
    ErrorCode.AUTH: 502,
    ErrorCode.UPSTREAM: 502,
    ErrorCode.INTERNAL: 500,
    # A job canceled by its owner; only ever seen in job results, never as an HTTP answer of its own.
    ErrorCode.CANCELED: 409,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    # PUT /library/{id} with an If-Match that names another copy than the saved one.
    ErrorCode.PRECONDITION_FAILED: 412,
}


class VidError(Exception):
    """A failure the user can act on.

    ``retry_after`` (seconds) is set for ``rate-limited`` when the upstream said how long to wait.
    """

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        *,
        hint: Hint | None = None,
        attempts: list[Attempt] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.hints: dict[str, str] = (
            {} if not hint else {"rest": hint, "mcp": hint} if isinstance(hint, str) else dict(hint)
        )
        self.attempts: list[Attempt] = list(attempts or [])
        self.retry_after = retry_after

    @property
    def hint(self) -> str | None:
        """The hint for the surface of the running call."""
        return self.hint_for(SURFACE.get())

    def hint_for(self, surface: Surface) -> str | None:
        return self.hints.get(surface) or self.hints.get("rest") or None

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]

    def __repr__(self) -> str:
        return f"VidError({self.code.value!r}, {self.message!r})"

    @classmethod
    def internal(cls, attempts: list[Attempt] | None = None) -> VidError:
        """The error an unexpected exception becomes: nothing about it leaks."""
        return cls(
            ErrorCode.INTERNAL,
            "Internal error.",
            hint="Tell the user something failed inside vid2context (the server's log has the "
            "details; report it as a bug); do not retry more than once.",
            attempts=attempts,
        )


def error_body(error: VidError) -> dict[str, Any]:
    """The HTTP contract's error body: ``{"error": {code, message, hint?}, "attempts": [...]}``."""
    inner: dict[str, Any] = {"code": error.code.value, "message": error.message}
    hint = error.hint_for("rest")
    if hint:
        inner["hint"] = hint
    return {"error": inner, "attempts": msgspec.to_builtins(error.attempts)}
