"""The OAuth routes: discovery, ``/oauth/register``, ``authorize``, ``token`` and ``revoke``.

A thin HTTP skin over ``auth.server.OAuthServer``. These paths are outside ``/api/*``, so the API
key layer and its rate limiter never see them (the contract gives them to mcp-http's own
credentials); their limits are the server's own (registrations per address, wrong owner keys).
Answers are RFC-shaped: JSON ``{"error", "error_description", "hint"}`` from the token,
registration and revocation endpoints, with ``Cache-Control: no-store``; HTML pages from
``authorize``, or a redirect to the client carrying ``code`` and ``state`` (or ``error``).

Nothing secret is logged: the access log writes the path without its query string, the
``Location`` header is never logged, and forms (``owner_key``, codes, secrets) are read here and
nowhere else. Bodies are capped at ``MAX_FORM_BYTES`` as they stream in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from litestar import Request, Response, get, post, route
from litestar.datastructures import State
from litestar.enums import HttpMethod

from ..auth.consent import Approver, OwnerKeyApprover, consent_page, message_page
from ..auth.server import OAuthError, OAuthServer
from ..runtime import Runtime
from .middleware._asgi import origin_of
from .middleware.auth import parse_api_keys
from .middleware.client import client_ip

__all__ = ["MAX_FORM_BYTES", "OAuthRoutes", "oauth_routes"]

MAX_FORM_BYTES = 16 * 1024
_encode = msgspec.json.Encoder().encode
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_PUBLIC_JSON = {"Cache-Control": "public, max-age=3600"}
_PAGE_HEADERS = {
    **_NO_STORE,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class _FormError(Exception):
    def __init__(self, error: OAuthError) -> None:
        self.error = error


async def _read_form(request: Request[Any, Any, State]) -> dict[str, str]:
    """A ``application/x-www-form-urlencoded`` body, each parameter once (RFC 6749 §3.1)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            raise _FormError(
                OAuthError(
                    "invalid_request",
                    f"The body is over {MAX_FORM_BYTES // 1024} KiB.",
                    hint="Send only the parameters of the request.",
                    status=413,
                )
            )
        chunks.append(chunk)
    return _pairs(b"".join(chunks).decode("utf-8", "replace"))


def _pairs(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        if name in found:
            raise _FormError(
                OAuthError(
                    "invalid_request",
                    f"The parameter {name[:40]!r} is given twice.",
                    hint="Send each parameter once.",
                )
            )
        found[name] = value
    return found


_CORS = {"Access-Control-Allow-Origin": "*"}
"""On every JSON answer: browser-based MCP clients read them, and no cookie is ever involved."""
_PREFLIGHT = {
    **_CORS,
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "600",
}


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        _encode(body), status_code=status, media_type="application/json", headers={**_CORS, **(headers or {})}
    )


def _oauth_error(error: OAuthError) -> Response[bytes]:
    return _json(error.body(), error.status, {**_NO_STORE, **error.headers})


def _html(page: str, status: int = 200, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        page.encode(),
        status_code=status,
        media_type="text/html; charset=utf-8",
        headers={**_PAGE_HEADERS, **(headers or {})},
    )


def _redirect(location: str) -> Response[bytes]:
    return Response(
        b"", status_code=302, media_type="text/plain", headers={**_NO_STORE, "Location": location}
    )


@dataclass
class OAuthRoutes:
    """What ``create_app`` adds: the server (``server.clock`` is the one to set in tests) and
    its route handlers."""

    server: OAuthServer
    approver: Approver
    route_handlers: list[Any]


def oauth_routes(runtime: Runtime, approver: Approver | None = None) -> OAuthRoutes:
    """The routes for ``runtime``; ``approver`` decides who may approve (the owner key unless
    given: hosted mode passes its GitHub sign-in, see ``auth/consent.py``)."""
    assert runtime.oauth is not None, "every runtime builder sets an OAuth store"
    settings = runtime.settings
    server = OAuthServer(runtime.oauth, public_origin=settings.public_origin)
    approver = approver or OwnerKeyApprover(parse_api_keys(settings.api_keys), runtime.oauth)
    worker = runtime.name == "worker"

    def address(request: Request[Any, Any, State]) -> str:
        return client_ip(request.scope, worker=worker, trust_proxy=settings.trust_proxy)

    @get(
        ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"],
        include_in_schema=False,
        sync_to_thread=False,
    )
    def protected_resource(request: Request[Any, Any, State]) -> Response[bytes]:
        return _json(server.resource_metadata(origin_of(request.scope)), headers=_PUBLIC_JSON)

    @get("/.well-known/oauth-authorization-server", include_in_schema=False, sync_to_thread=False)
    def authorization_server(request: Request[Any, Any, State]) -> Response[bytes]:
        return _json(server.server_metadata(origin_of(request.scope)), headers=_PUBLIC_JSON)

    @post("/oauth/register", include_in_schema=False, status_code=201)
    async def register(request: Request[Any, Any, State]) -> Response[bytes]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return _oauth_error(
                OAuthError(
                    "invalid_client_metadata",
                    "The metadata is too large.",
                    hint="Send under 16 KiB.",
                    status=413,
                )
            )
        try:
            client = await server.register(body, address(request))
        except OAuthError as error:
            return _oauth_error(error)
        return _json(client, 201, _NO_STORE)

    async def show(
        request: Request[Any, Any, State],
        params: dict[str, str],
        error: str = "",
        status: int = 200,
        **headers: str,
    ) -> Response[bytes]:
        try:
            checked = await server.check_authorize(params, origin_of(request.scope))
        except OAuthError as refused:
            if "Location" in refused.headers:
                return _redirect(refused.headers["Location"])
            return _html(message_page("Cannot connect this app", refused.description, refused.hint), 400)
        csrf = await server.new_csrf(checked)
        return _html(consent_page(checked, csrf, approver, error), status, headers)

    @get("/oauth/authorize", include_in_schema=False)
    async def authorize_page(request: Request[Any, Any, State]) -> Response[bytes]:
        query = request.scope.get("query_string", b"")
        if len(query) > MAX_FORM_BYTES:
            return _html(
                message_page("Cannot connect this app", "The request is too long.", "Start again."), 414
            )
        try:
            params = _pairs(query.decode("utf-8", "replace"))
        except _FormError as bad:
            return _html(message_page("Cannot connect this app", bad.error.description, bad.error.hint), 400)
        return await show(request, params)

    @post("/oauth/authorize", include_in_schema=False)
    async def authorize_post(request: Request[Any, Any, State]) -> Response[bytes]:
        try:
            form = await _read_form(request)
        except _FormError as bad:
            return _html(message_page("Cannot connect this app", bad.error.description, bad.error.hint), 400)
        origin = origin_of(request.scope)
        try:
            checked = await server.check_authorize(form, origin)
        except OAuthError:
            return await show(request, form)
        if not await server.spend_csrf(form.get("csrf_token", ""), checked):
            return await show(
                request, form, "This form expired or did not come from this page: try again.", 403
            )
        if form.get("decision") == "deny":
            return _redirect(server.deny(checked))
        approval = await approver.approve(form, request, address(request))
        if approval.subject is None:
            if approval.retry_after is not None:
                return await show(
                    request, form, approval.error, 429, **{"Retry-After": str(approval.retry_after)}
                )
            return await show(request, form, approval.error, 403)
        return _redirect(await server.approve(checked, approval.subject))

    @post("/oauth/token", include_in_schema=False)
    async def token(request: Request[Any, Any, State]) -> Response[bytes]:
        try:
            form = await _read_form(request)
            answer = await server.token(form, request.headers.get("authorization"), origin_of(request.scope))
        except _FormError as bad:
            return _oauth_error(bad.error)
        except OAuthError as error:
            return _oauth_error(error)
        return _json(answer, 200, _NO_STORE)

    @post("/oauth/revoke", include_in_schema=False)
    async def revoke(request: Request[Any, Any, State]) -> Response[bytes]:
        try:
            form = await _read_form(request)
            await server.revoke(form, request.headers.get("authorization"))
        except _FormError as bad:
            return _oauth_error(bad.error)
        except OAuthError as error:
            return _oauth_error(error)
        return Response(b"", status_code=200, headers={**_CORS, **_NO_STORE})

    @route(
        [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/oauth/register",
            "/oauth/token",
            "/oauth/revoke",
        ],
        http_method=[HttpMethod.OPTIONS],
        include_in_schema=False,
        sync_to_thread=False,
    )
    def preflight() -> Response[None]:
        return Response(None, status_code=204, headers=_PREFLIGHT)

    handlers = [
        preflight,
        protected_resource,
        authorization_server,
        register,
        authorize_page,
        authorize_post,
        token,
        revoke,
    ]
    return OAuthRoutes(server=server, approver=approver, route_handlers=handlers)
