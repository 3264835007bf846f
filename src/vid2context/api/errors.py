"""Every failure becomes the contract's error body with the status from ``STATUS_BY_CODE``.

Framework errors (unknown route, wrong method, validation, Litestar's own body-size limit) are
translated too, so a client only ever sees one error shape. Unexpected exceptions are logged with
their traceback and answered as ``internal`` with no detail.

Two ways out, one shape: ``error_response`` gives a Litestar ``Response`` for exception handlers,
``send_error`` writes the same status, headers and body straight to an ASGI ``send`` for the
middleware that answers before Litestar runs (auth, rate limit, limits, CORS).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_405_METHOD_NOT_ALLOWED
from litestar.types import Send

from ..errors import ErrorCode, VidError, error_body

__all__ = ["EXCEPTION_HANDLERS", "error_body", "error_headers", "error_response", "send_error"]

log = logging.getLogger("vid2context.api")

_encode = msgspec.json.Encoder().encode


def _body(error: VidError) -> dict[str, Any]:
    """``error_body``, with text that cannot be UTF-8 (lone surrogates from undecodable bytes in a
    path a message quotes) replaced, so encoding the answer can never fail."""
    body = error_body(error)
    inner = body["error"]
    for field in ("message", "hint"):
        if field in inner:
            inner[field] = inner[field].encode("utf-8", "replace").decode("utf-8")
    return body


def error_headers(error: VidError) -> dict[str, str]:
    """The headers an error carries by contract: ``Retry-After`` on 429, ``WWW-Authenticate`` on 401."""
    headers: dict[str, str] = {}
    if error.code is ErrorCode.RATE_LIMITED and error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    if error.code is ErrorCode.UNAUTHORIZED:
        headers["WWW-Authenticate"] = "Bearer"
    return headers


def error_response(error: VidError, *, status: int | None = None) -> Response[dict]:
    """``error`` as a Litestar response; ``status`` overrides the code's status (405 only)."""
    return Response(_body(error), status_code=status or error.status, headers=error_headers(error))


async def send_error(
    send: Send,
    error: VidError,
    *,
    status: int | None = None,
    headers: Iterable[tuple[str, str]] = (),
    head: bool = False,
) -> None:
    """Answer ``error`` on a raw ASGI ``send`` with exactly the body ``error_response`` would give.

    ``head`` leaves the body out (a HEAD request), keeping its length in ``Content-Length``; a
    header in ``headers`` replaces the contract's default of that name (``WWW-Authenticate``).
    """
    body = _encode(_body(error))
    raw: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers = list(headers)
    given = {name.lower() for name, _ in headers}
    defaults = [(name, value) for name, value in error_headers(error).items() if name.lower() not in given]
    for name, value in [*defaults, *headers]:
        raw.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": status or error.status, "headers": raw})
    await send({"type": "http.response.body", "body": b"" if head else body})


_SOURCES = {"query": "query parameter", "path": "path parameter", "header": "header", "cookie": "cookie"}


def _validation_error(exc: HTTPException) -> VidError:
    """``bad-request`` naming each bad parameter and what was wrong with it.

    Litestar's own detail echoes the request line (``Validation failed for GET /x?...``), so it is
    rebuilt from ``extra`` instead: a hostile query string is never reflected back.
    """
    problems: list[str] = []
    names: list[str] = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if not isinstance(item, dict):
            continue
        source = str(getattr(item.get("source"), "value", item.get("source") or ""))
        key = str(item.get("key") or "")[:60]
        message = str(item.get("message") or "not valid")[:160]
        if source == "body" and key in ("", "data"):
            problems.append(f"the body: {message}")
            names.append("the body")
        else:
            label = f"{_SOURCES.get(source, 'field')} `{key}`" if key else "a parameter"
            problems.append(f"{label}: {message}")
            names.append(f"`{key}`" if key else "the parameters")
    if not problems:
        detail = str(exc.detail or "not valid").split(" for path ")[0][:200]
        if detail.startswith("Validation failed for "):
            detail = "not valid"
        problems.append(detail)
        if named := re.search(r"parameter '([^']{1,60})'", detail):
            names.append(f"`{named.group(1)}`")
    message = "The request is not valid: " + "; ".join(problems[:5]) + "."
    target = ", ".join(dict.fromkeys(names[:5])) or "the request"
    return VidError(
        ErrorCode.BAD_REQUEST,
        message,
        hint=f"Fix {target} and send the request again; GET /api/v1/openapi.json describes every parameter.",
    )


def _http_error(request: Request, exc: HTTPException) -> Response[dict]:
    path = request.scope.get("path", "")[:100]
    if isinstance(exc, NotFoundException):
        error = VidError(
            ErrorCode.NOT_FOUND,
            f"No route {path}.",
            hint="See GET /api/v1/openapi.json for the routes.",
        )
    elif exc.status_code == HTTP_405_METHOD_NOT_ALLOWED:
        error = VidError(
            ErrorCode.BAD_REQUEST,
            f"{request.method} is not allowed on {path}.",
            hint="See GET /api/v1/openapi.json for the methods each route takes.",
        )
        response = error_response(error, status=HTTP_405_METHOD_NOT_ALLOWED)
        if allow := (exc.headers or {}).get("allow"):
            response.headers["Allow"] = allow
        return response
    elif isinstance(exc, ValidationException) or exc.status_code == 400:
        error = _validation_error(exc)
    elif exc.status_code == 413:
        error = VidError(
            ErrorCode.TOO_LARGE,
            "The request body is too large.",
            hint="Send a smaller body; media goes to POST /api/v1/uploads.",
        )
    elif exc.status_code == 401:
        error = VidError(
            ErrorCode.UNAUTHORIZED,
            "An API key is required.",
            hint="Send Authorization: Bearer <key> with a key from VID2CONTEXT_API_KEYS.",
        )
    elif exc.status_code == 403:
        error = VidError(
            ErrorCode.FORBIDDEN,
            "This key may not do that.",
            hint="Tell the user this key's scope does not allow it (VID2CONTEXT_API_KEYS gives each key "
            "its scope); do not retry with this key.",
        )
    elif exc.status_code == 429:
        error = VidError(
            ErrorCode.RATE_LIMITED,
            "Too many requests.",
            hint="Wait the Retry-After seconds, then repeat the call; spread requests out.",
        )
    elif 400 <= exc.status_code < 500:
        # Other client errors (415, 406, ...) keep their status; the body is ours.
        error = VidError(ErrorCode.BAD_REQUEST, f"The request was refused ({exc.status_code}).")
        return error_response(error, status=exc.status_code)
    else:
        log.warning("HTTP %s on %s: %s", exc.status_code, path, exc.detail)
        error = VidError.internal()
    return error_response(error)


def _vid_error(_: Request, exc: VidError) -> Response[dict]:
    return error_response(exc)


def _unexpected(request: Request, exc: Exception) -> Response[dict]:
    log.error("unhandled error on %s %s", request.method, request.scope.get("path", "")[:200], exc_info=exc)
    return error_response(VidError.internal())


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    VidError: _vid_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}
