"""``GET /api/v1/openapi.json``: the OpenAPI 3.1 document Litestar builds from the routes.

Litestar derives paths, parameters and response schemas from the handlers and their msgspec
types; ``finish`` then makes the document tell the truth about what the middleware adds:

- a ``bearerAuth`` security scheme, required when ``VID2CONTEXT_API_KEYS`` is set and optional
  otherwise, and ``security: []`` on the open routes (health and this document);
- the contract's error body (``ErrorBody``) for every error status, replacing Litestar's own
  validation-error shape, which the API never sends;
- the statuses the middleware itself can answer on every route (400, 401/403 with keys, 413 for
  bodies, 429 with ``Retry-After``, 500, 504), and ``default`` for any other error status a route
  may answer, all with ``ErrorBody``;
- a ``string`` schema on response headers Litestar documents without one (3.1 requires it).

Only the JSON document is served (no UI pages), so nothing else appears under ``/api/v1``.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
from litestar import Request, Response, Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin

from .. import __version__
from ..errors import ErrorCode, VidError
from ..models import Attempt
from ..settings import Settings
from .errors import error_response
from .middleware._asgi import OPENAPI_PATH, SIGNED_PREFIX, is_open

__all__ = ["ERROR_BODY_SCHEMA", "finish", "openapi_config"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


def _attempt_schema() -> dict[str, Any]:
    schema = msgspec.json.schema(Attempt)
    return schema.get("$defs", {}).get("Attempt", schema)


ERROR_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error: a code from the contract's table, a message, a hint when there is a "
    "next step, and every provider rung tried.",
    "required": ["error", "attempts"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": [code.value for code in ErrorCode]},
                "message": {"type": "string"},
                "hint": {"type": "string"},
            },
        },
        "attempts": {"type": "array", "items": _attempt_schema()},
    },
}


def _error(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_REF}},
    }
    if headers:
        response["headers"] = headers
    return response


def _int_header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "integer"}}


def finish(schema: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """A copy of Litestar's ``schema`` with our security, error body and middleware statuses."""
    doc = copy.deepcopy(schema)
    keys = bool(settings.api_keys)
    components = doc.setdefault("components", {})
    components.setdefault("schemas", {})["ErrorBody"] = ERROR_BODY_SCHEMA
    components.setdefault("securitySchemes", {})["bearerAuth"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "A key from VID2CONTEXT_API_KEYS, sent as Authorization: Bearer <key>.",
    }
    doc["security"] = [{"bearerAuth": []}] if keys else [{"bearerAuth": []}, {}]
    paths = doc.setdefault("paths", {})
    paths.setdefault(
        OPENAPI_PATH,
        {
            "get": {
                "summary": "This OpenAPI 3.1 document",
                "operationId": "openapi",
                "responses": {
                    "200": {
                        "description": "The document",
                        "content": {"application/vnd.oai.openapi+json": {"schema": {"type": "object"}}},
                    }
                },
            }
        },
    )
    for path, item in paths.items():
        for method in _METHODS:
            operation = item.get(method)
            if isinstance(operation, dict):
                _finish_operation(path, operation, settings, keys)
    return doc


def _finish_operation(path: str, operation: dict[str, Any], settings: Settings, keys: bool) -> None:
    responses = operation.setdefault("responses", {})
    for status, response in responses.items():
        if not isinstance(response, dict):
            continue
        if status.isdigit() and int(status) >= 400:
            response["content"] = {"application/json": {"schema": _ERROR_REF}}
        for header in (response.get("headers") or {}).values():
            # Litestar leaves out the schema of a documentation-only header; 3.1 requires one.
            if isinstance(header, dict) and "schema" not in header and "content" not in header:
                header["schema"] = {"type": "string"}
    open_route = is_open(path)
    if open_route:
        operation["security"] = []
    if path.startswith(SIGNED_PREFIX):
        responses.setdefault("401", _error("unauthorized: the platform's signature does not check out"))
    responses.setdefault("400", _error("bad-request: a parameter or the body is not valid"))
    if keys and not open_route:
        responses.setdefault(
            "401",
            _error(
                "unauthorized: the API key is missing or wrong",
                {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
            ),
        )
        responses.setdefault("403", _error("forbidden: the key's scope does not allow this"))
    if "requestBody" in operation and settings.max_body_kb:
        responses.setdefault("413", _error("too-large: the body is over VID2CONTEXT_MAX_BODY_KB"))
    if settings.rate_limit and path != "/api/v1/health":
        responses.setdefault(
            "429",
            _error(
                "rate-limited: too many requests",
                {
                    "Retry-After": _int_header("Seconds until a request will be accepted"),
                    "X-RateLimit-Limit": _int_header("Bucket size"),
                    "X-RateLimit-Remaining": _int_header("Requests left now"),
                },
            ),
        )
    responses.setdefault("500", _error("internal: a bug; nothing about it is shown"))
    if settings.request_timeout_ms:
        responses.setdefault(
            "504", _error("timeout: the request took longer than VID2CONTEXT_REQUEST_TIMEOUT_MS")
        )
    responses.setdefault(
        "default", _error("Any other error, with the code's status from the contract's table")
    )


class _FinishedJson(JsonRenderPlugin):
    """Serves ``finish(schema)``; built once per Litestar schema (a new route makes a new one)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(path="/")
        self._settings = settings
        self._cache: tuple[int, bytes] | None = None

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        if self._cache is None or self._cache[0] != id(openapi_schema):
            self._cache = (
                id(openapi_schema),
                self.render_json(request, finish(openapi_schema, self._settings)),
            )
        return self._cache[1]


def _not_found(response: Response) -> Response:
    """Litestar adds an HTML 404 page under the document's path; answer our body instead."""
    if response.status_code == 404:
        return error_response(
            VidError(
                ErrorCode.NOT_FOUND,
                "No such document.",
                hint="Read the routes from GET /api/v1/openapi.json.",
            )
        )
    return response


def openapi_config(settings: Settings) -> OpenAPIConfig:
    """Litestar's OpenAPI settings: 3.1, title and version, served only at ``/api/v1/openapi.json``."""
    return OpenAPIConfig(
        title="vid2context",
        version=__version__,
        description="Turn any video into context an AI agent can use. Errors share one body (ErrorBody); "
        "every response carries X-Request-Id.",
        use_handler_docstrings=True,
        render_plugins=[_FinishedJson(settings)],
        openapi_router=Router(
            OPENAPI_PATH, route_handlers=[], include_in_schema=False, after_request=_not_found
        ),
    )
