"""Errors are values with a code.

Every failure a user can see is a ``VidError``: a code from ``ErrorCode``, a message naming the
problem, a hint naming the next step, and the ladder ``attempts`` that led to it. The REST API maps
the code through ``STATUS_BY_CODE``; the MCP layer returns the same error as an ``isError`` result.
Anything that is not a ``VidError`` is a bug and surfaces as ``internal`` with no detail.

The codes, by whose problem it is::

    the caller's input     unsupported-input  bad-request  not-found  too-large
    the video              unavailable  no-transcript
    the platform           blocked  rate-limited  upstream  auth (an upstream key failed)
    our ladder             no-provider  all-rungs-failed  timeout
    the caller's key       unauthorized  forbidden
    a bug                  internal

This module imports only ``models`` (for ``Attempt``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

from .models import Attempt

__all__ = ["STATUS_BY_CODE", "ErrorCode", "VidError", "error_body"]


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
        hint: str | None = None,
        attempts: list[Attempt] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.hint = hint
        self.attempts: list[Attempt] = list(attempts or [])
        self.retry_after = retry_after

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
            hint="This is a bug in vid2context; retry, and report it if it persists.",
            attempts=attempts,
        )


def error_body(error: VidError) -> dict[str, Any]:
    """The HTTP contract's error body: ``{"error": {code, message, hint?}, "attempts": [...]}``."""
    inner: dict[str, Any] = {"code": error.code.value, "message": error.message}
    if error.hint:
        inner["hint"] = error.hint
    return {"error": inner, "attempts": msgspec.to_builtins(error.attempts)}
