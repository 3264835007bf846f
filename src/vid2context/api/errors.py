"""Every failure becomes the contract's error body with the status from ``STATUS_BY_CODE``.

Framework errors (unknown route, wrong method, validation) are translated too, so a client only
ever sees one error shape. Unexpected exceptions are logged with their traceback and answered as
``internal`` with no detail.
"""

from __future__ import annotations

import logging

from litestar import Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_405_METHOD_NOT_ALLOWED

from ..errors import ErrorCode, VidError, error_body

__all__ = ["EXCEPTION_HANDLERS", "error_response"]

log = logging.getLogger("vid2context.api")


def error_response(error: VidError) -> Response[dict]:
    headers = {}
    if error.code is ErrorCode.RATE_LIMITED and error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    if error.code is ErrorCode.UNAUTHORIZED:
        headers["WWW-Authenticate"] = "Bearer"
    return Response(error_body(error), status_code=error.status, headers=headers)


def _vid_error(_: Request, exc: VidError) -> Response[dict]:
    return error_response(exc)


def _http_error(request: Request, exc: HTTPException) -> Response[dict]:
    if isinstance(exc, NotFoundException):
        error = VidError(
            ErrorCode.NOT_FOUND,
            f"No route {request.url.path[:100]}.",
            hint="See GET /api/v1/openapi.json for the routes.",
        )
    elif exc.status_code == HTTP_405_METHOD_NOT_ALLOWED:
        error = VidError(
            ErrorCode.BAD_REQUEST,
            f"{request.method} is not allowed on {request.url.path[:100]}.",
            hint="See GET /api/v1/openapi.json for the methods each route takes.",
        )
        response = error_response(error)
        response.status_code = HTTP_405_METHOD_NOT_ALLOWED
        return response
    elif isinstance(exc, ValidationException) or exc.status_code == 400:
        error = VidError(ErrorCode.BAD_REQUEST, "The request is not valid.", hint=str(exc.detail)[:200])
    elif exc.status_code == 413:
        error = VidError(ErrorCode.TOO_LARGE, "The request body is too large.", hint="Send a smaller body.")
    else:
        log.warning("HTTP %s on %s: %s", exc.status_code, request.url.path, exc.detail)
        error = VidError.internal()
    return error_response(error)


def _unexpected(request: Request, exc: Exception) -> Response[dict]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(VidError.internal())


EXCEPTION_HANDLERS = {
    VidError: _vid_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}
