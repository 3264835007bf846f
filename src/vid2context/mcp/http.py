"""The MCP server over Streamable HTTP at ``/mcp``, inside the Litestar app: stateless, or with sessions.

``mcp_http(runtime)`` gives the route handlers and the lifespan ``create_app`` adds. A request to
``/mcp`` passes these checks, in order, before the SDK sees it; each refusal is answered here with
the HTTP API's error body::

    GET /mcp/server-card             public discovery (SEP-2127 Server Card), CORS *
    Host not loopback or allowed     403 forbidden   (only when the server is bound to loopback)
    Origin not allowed               403 forbidden   (VID2CONTEXT_CORS_ORIGINS, or the same origin)
    OPTIONS preflight                204 with CORS headers for an allowed origin
    GET or DELETE                    405             (stateless: no SSE stream, no session to end;
                                                      in session mode they reach the SDK)
    no or wrong bearer token         401 + WWW-Authenticate: Bearer (with resource_metadata and
                                     scope="mcp" when OAuth is on)
    over the rate limit              429 + Retry-After (a bucket per token, or per address when open)

Tokens are ``VID2CONTEXT_MCP_TOKENS`` (the ``VID2CONTEXT_API_KEYS`` format); when unset, the API
keys are taken, so a server whose API needs a key never serves ``/mcp`` open; with neither, ``/mcp``
is open (and ``vid2context serve`` binds loopback). With OAuth on (``VID2CONTEXT_OAUTH``, the
default), a live access token of ``auth/server.py`` issued for this server's ``/mcp`` is taken
too; it opens ``/mcp`` only, never ``/api/*``, and is never sent on to any upstream service. The rate limit reuses the REST API's token bucket
on ``runtime.kv`` (``VID2CONTEXT_MCP_RATE_LIMIT`` a minute, the whole minute's worth at once).

``/.well-known/ai-catalog.json`` (and the MCP catalog at ``/.well-known/mcp/catalog.json``) lists
the server card. The SDK app is built with ``stateless_http=True, json_response=True`` and its own
DNS-rebinding check off (the checks above replace it, and also work behind a public host name).
The SDK is imported, and its session manager started, on the first MCP message inside the Litestar
lifespan (REST requests and discovery never load it); the lifespan is counted, so the Worker, which
runs the ASGI lifespan around every request, gets one manager per burst of requests, never two.
``initialize``, ``notifications/initialized``, ``tools/list`` and ``prompts/list`` do not need it:
``lean.py`` gives the SDK's own answer to them without it, so a client's handshake and first
listing with a cold Worker isolate do not wait for the SDK's import.

**Session mode** (``VID2CONTEXT_MCP_SESSIONS=1``, the local server only: the Worker has no process
that outlives a request, so it ignores the setting and stays stateless) uses the SDK's own session
manager instead, with SSE responses: ``initialize`` answers an ``Mcp-Session-Id``, ``GET /mcp``
opens the session's stream for notifications (``resources/updated``, ``updates.py``), ``DELETE``
ends it, and the server can ask the client in the middle of a call (sampling, elicitation). A
session is bound to the caller that opened it (``owner.py``'s digest of the credential, or of an OAuth
grant's family, which lives through every refresh of its access token); another caller gets 404,
as for a session that does not exist. Sessions end after 30 idle minutes (the SDK's default).
Protocol 2026-07-28 has no sessions: its requests are served per request either way.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Litestar, Request, Response, get
from litestar.handlers import asgi
from litestar.types import Receive, Scope, Send

from .. import __version__
from ..api.errors import send_error
from ..api.middleware._asgi import header
from ..api.middleware._asgi import origin_of as _origin_of
from ..api.middleware.auth import ApiKey, Auth, bearer_token, parse_api_keys
from ..api.middleware.client import client_ip
from ..api.middleware.cors import parse_origins
from ..api.middleware.ratelimit import RateLimit, _address_bucket, bucket_store
from ..ctx import METER
from ..errors import ErrorCode, VidError
from ..held import Held
from ..runtime import Runtime
from .identity import PROTOCOL_VERSIONS, SERVER_NAME
from .lean import MAX_LEAN_BODY, lean_answer
from .listed import MCP_MAX_TOKENS
from .owner import RUN_OWNER, digest

if TYPE_CHECKING:
    from ..auth.server import OAuthServer
    from .server import VidServer

__all__ = ["CARD_MEDIA_TYPE", "McpHttp", "mcp_http"]

CARD_MEDIA_TYPE = "application/mcp-server-card+json"
CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
_DISCOVERY_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Content-Type",
    "Cache-Control": "public, max-age=3600",
}
_ALLOW_HEADERS = frozenset({"authorization", "content-type", "accept", "last-event-id"})
_EXPOSE = b"Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After, X-Request-Id"
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
_encode = msgspec.json.Encoder().encode
_NO_SESSION = VidError(
    ErrorCode.NOT_FOUND,
    "There is no such MCP session: it ended, or it was opened with another credential.",
    hint="Start a new session: send initialize without an Mcp-Session-Id header.",
)


def _is_loopback(host: str) -> bool:
    name = host.strip().lower().strip("[]")
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """``example.com`` from ``example.com:8787``, ``::1`` from ``[::1]:8787``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class _Checks:
    keys: tuple[ApiKey, ...]
    origins: frozenset[str]
    allowed_hosts: frozenset[str]


class McpHttp:
    """The ``/mcp`` mount: the checks, discovery, and the SDK's Streamable HTTP app behind them."""

    def __init__(
        self,
        runtime: Runtime,
        server: VidServer | None = None,
        oauth: OAuthServer | None = None,
        hosted: Any = None,
    ) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.oauth = oauth
        """Takes its access tokens beside the static ones (``auth/server.py``); ``None``: off."""
        self.server = server
        """Built with the SDK app, on the first MCP message (``_sdk_app``), unless given."""
        keys = parse_api_keys(settings.mcp_tokens) or parse_api_keys(settings.api_keys)
        self.checks = _Checks(
            keys=keys,
            origins=parse_origins(settings.cors_origins) if settings.cors_origins else frozenset(),
            allowed_hosts=frozenset(
                part.strip().lower() for part in (settings.mcp_allowed_hosts or "").split(",") if part.strip()
            ),
        )
        self.auth = (
            Auth(
                self._unused,
                keys=keys,
                hosted=hosted,  # hosted mode: account keys too, and /mcp is never open
                worker=runtime.name == "worker",
                trust_proxy=settings.trust_proxy,
            )
            if keys or hosted is not None
            else None
        )
        rate = settings.mcp_rate_limit
        self.limiter = (
            RateLimit(
                self._unused,
                kv=bucket_store(runtime),
                rate=rate,
                burst=rate,
                worker=runtime.name == "worker",
                trust_proxy=settings.trust_proxy,
            )
            if rate > 0
            else None
        )
        self.sessions = settings.mcp_sessions and runtime.name != "worker"
        """Session mode (``VID2CONTEXT_MCP_SESSIONS``); never on the Worker."""
        self.listed = server is None and settings.mcp_max_tokens == MCP_MAX_TOKENS
        """Whether ``listed.py`` holds this server's lists (``lean.py``): the server ``create_mcp``
        builds, with the page size they were built with (a server given here may list others)."""
        self._app: Any = None
        self._manager: Held | None = None
        """The SDK's session manager, held open by a task of its own (``held.py``)."""
        self._lock: asyncio.Lock | None = None
        self._users = 0

    @staticmethod
    async def _unused(scope: Scope, receive: Receive, send: Send) -> None:  # pragma: no cover
        raise RuntimeError("the /mcp checks call Auth and RateLimit directly, never as middleware")

    # -- the SDK app and its lifespan -----------------------------------------------------------------
    #
    # The SDK is imported, the server built and its session manager started on the first MCP
    # message, not at start-up: a REST request or a discovery document never pays the second of
    # imports (on the Worker, a cold isolate's first request). The session manager holds an anyio
    # task group, which must be left by the task that entered it, so a task of its own holds it
    # (``held.Held``), started by the first message and stopped when the app's lifespan ends.

    def _build(self) -> Any:
        from mcp.server.transport_security import TransportSecuritySettings

        if self.server is None:
            from .server import create_mcp

            self.server = create_mcp(self.runtime)
        return self.server.streamable_http_app(
            streamable_http_path="/",
            stateless_http=not self.sessions,
            json_response=not self.sessions,  # a session's calls stream, so the server can ask mid-call
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @asynccontextmanager
    async def lifespan(self, _: Litestar | None = None) -> AsyncIterator[None]:
        """The app's lifespan: MCP messages are served inside it (counted, so nested lifespans
        share one); the last one out stops the session manager and the runs still going."""
        self._users += 1
        try:
            yield
        finally:
            self._users -= 1
            if self._users == 0:
                await self._stop()

    async def _sdk_app(self) -> Any:
        """The SDK's app, started on first use; ``None`` outside the app's lifespan."""
        if self._users == 0:
            return None
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._manager is None:
                self._manager = await Held.enter(self._session_manager)
        return self._app

    @asynccontextmanager
    async def _session_manager(self) -> AsyncIterator[None]:
        app = self._build()
        try:
            async with app.router.lifespan_context(app):
                self._app = app
                yield
        finally:
            self._app = None

    async def _stop(self) -> None:
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._manager is None:
                return
            manager, self._manager = self._manager, None
            try:
                if self.server is not None:
                    await self.server.deps.runs.aclose()
            finally:
                await manager.leave()

    # -- the mount ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - Litestar sends only HTTP here
            return
        method = scope.get("method", "GET")
        path = scope.get("path", "/").rstrip("/") or "/"
        head = method == "HEAD"
        if path == "/server-card":
            await self._discovery(scope, send, self.server_card(scope), CARD_MEDIA_TYPE, method)
            return
        if not self._host_allowed(scope):
            await send_error(
                send,
                VidError(
                    ErrorCode.FORBIDDEN,
                    "This Host is not allowed for /mcp.",
                    hint="Connect through localhost, or add the host to VID2CONTEXT_MCP_ALLOWED_HOSTS.",
                ),
                head=head,
            )
            return
        origin = header(scope, b"origin")
        if origin is not None and not self._origin_allowed(scope, origin):
            await send_error(
                send,
                VidError(
                    ErrorCode.FORBIDDEN,
                    "This Origin is not allowed for /mcp.",
                    hint="Add the origin to VID2CONTEXT_CORS_ORIGINS.",
                ),
                head=head,
            )
            return
        cors = self._cors_headers(origin)
        if method == "OPTIONS":
            await self._preflight(scope, send, cors)
            return
        if path != "/":
            await send_error(
                send,
                VidError(
                    ErrorCode.NOT_FOUND,
                    "No such MCP endpoint.",
                    hint="The MCP endpoint is POST /mcp; its server card is GET /mcp/server-card.",
                ),
                headers=cors,
                head=head,
            )
            return
        if method != "POST" and not (self.sessions and method in ("GET", "DELETE")):
            error = (
                VidError(
                    ErrorCode.BAD_REQUEST,
                    f"{method} is not allowed on /mcp.",
                    hint="Send MCP messages with POST /mcp, open a session's stream with GET and end it "
                    "with DELETE.",
                )
                if self.sessions
                else VidError(
                    ErrorCode.BAD_REQUEST,
                    f"{method} is not allowed on /mcp: this server is stateless.",
                    hint="Send MCP messages with POST /mcp; there is no GET stream and no session to delete.",
                )
            )
            allow = "GET, POST, DELETE, OPTIONS" if self.sessions else "POST, OPTIONS"
            await send_error(send, error, status=405, headers=[("Allow", allow), *cors], head=head)
            return
        key_name = None
        meter = None
        owner: str | None = None
        if self.auth is not None:
            identified = await self._identify(scope)
            if identified is None:
                await self._unauthorized(scope, send, cors)
                return
            key_name, account_id, owner = identified
            if self.auth.hosted is not None and account_id is not None:
                address = client_ip(
                    scope, worker=self.runtime.name == "worker", trust_proxy=self.runtime.settings.trust_proxy
                )
                meter = self.auth.hosted.quotas.meter(
                    account_id, _address_bucket(address).removeprefix("ip:")
                )
        if self.limiter is not None:
            who = (
                f"mcp:key:{key_name}"
                if key_name
                else "mcp:ip:"
                + client_ip(
                    scope, worker=self.runtime.name == "worker", trust_proxy=self.runtime.settings.trust_proxy
                )
            )
            allowed, _, retry_after = await self.limiter.take(who)
            if not allowed:
                error = VidError(
                    ErrorCode.RATE_LIMITED,
                    f"Too many requests: at most {self.runtime.settings.mcp_rate_limit} a minute.",
                    hint=f"Wait {retry_after} s (Retry-After), then repeat the call.",
                    retry_after=retry_after,
                )
                await send_error(send, error, headers=cors)
                return
        raw_cors = [(k.lower().encode(), v.encode()) for k, v in cors]

        missing = False  # the SDK answered 404 for a session: answered with our error body instead

        async def send_with_cors(message: Any) -> None:
            nonlocal missing
            if self.sessions and message["type"] == "http.response.start" and message["status"] == 404:
                missing = True
                return
            if missing:
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    await send_error(send, _NO_SESSION, headers=cors, head=head)
                return
            if raw_cors and message["type"] == "http.response.start":
                message = {**message, "headers": [*(message.get("headers") or ()), *raw_cors]}
            await send(message)

        if self._users > 0 and not self.sessions:  # a session's initialize must reach the SDK
            replay = await self._answer_lean(scope, receive, send_with_cors)
            if replay is None:
                return
            receive = replay
        app = await self._sdk_app()
        if app is None:
            await send_error(
                send,
                VidError(
                    ErrorCode.INTERNAL,
                    "The MCP server is not running.",
                    hint="The app's lifespan has not started: repeat the call in a moment; if it persists, "
                    "tell the user, and do not retry.",
                ),
            )
            return
        inner = {**scope, "path": "/", "raw_path": b"/"}
        token = METER.set(meter)  # the tools' Ctx count against the account (hosted mode)
        if owner is None:  # a static token or an account key: its header, which never changes
            owner = (header(scope, b"authorization") or b"").decode("latin-1")
        owned = RUN_OWNER.set(digest(owner))  # whose long runs these are (owner.py)
        if self.sessions and self.auth is not None:  # a session answers only the caller that opened it
            inner["user"] = _session_user(digest(owner))
        try:
            await app(inner, receive, send_with_cors)
        finally:
            RUN_OWNER.reset(owned)
            METER.reset(token)

    async def _answer_lean(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer ``initialize`` or a list as the SDK would, without it (``lean.py``), and return ``None``;
        otherwise a ``receive`` that gives the SDK again what was read of the request."""
        read: list[Any] = []
        size = 0
        more = True
        while more and size <= MAX_LEAN_BODY:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            more = bool(message.get("more_body", False))
        if not more and size <= MAX_LEAN_BODY:
            body = b"".join(message.get("body", b"") for message in read if message["type"] == "http.request")
            answer = lean_answer(list(scope.get("headers") or ()), body, listed=self.listed)
            if answer is not None:
                status, headers, content = answer
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": content})
                return None

        async def replay() -> Any:
            return read.pop(0) if read else await receive()

        return replay

    # -- checks -------------------------------------------------------------------------------------

    async def _identify(self, scope: Scope) -> tuple[str, str | None, str | None] | None:
        """Who the bearer token names, the hosted-mode account it counts against, and the owner
        of its long runs (``owner.py``): a static token's name (no account, the header owns its
        runs), an account key's ``acct:<id>`` (likewise), ``oauth:<client_id>`` for a live OAuth
        access token issued for this server's ``/mcp`` (its account: the grant's subject, in
        hosted mode; its runs: ``oauth:<family>``, through every refresh), or ``None``."""
        assert self.auth is not None
        authorization = header(scope, b"authorization")
        key = await self.auth.caller(scope, cookies=False)
        if key is not None:
            return key.name, None if isinstance(key, ApiKey) else key.account.id, None
        token = bearer_token(authorization)
        if self.oauth is None or token is None:
            return None
        grant = await self.oauth.check_access(token.decode("ascii"), _origin_of(scope))
        if grant is None:
            return None
        hosted = self.auth.hosted is not None and grant.subject.startswith("acct_")
        return "oauth:" + grant.client_id, grant.subject if hosted else None, "oauth:" + grant.family

    async def _unauthorized(self, scope: Scope, send: Send, cors: list[tuple[str, str]]) -> None:
        presented = header(scope, b"authorization") is not None
        challenge = metadata = "Bearer"
        if self.oauth is not None:
            metadata = self.oauth.origin(_origin_of(scope)) + "/.well-known/oauth-protected-resource/mcp"
            challenge = f'Bearer resource_metadata="{metadata}", scope="mcp"'
        error = VidError(
            ErrorCode.UNAUTHORIZED,
            "The bearer token is not valid." if presented else "A bearer token is required.",
            hint=f"Send Authorization: Bearer <token> with a token from VID2CONTEXT_MCP_TOKENS, or an OAuth "
            f"access token (its authorization server is named at {metadata})."
            if self.oauth is not None
            else "Send Authorization: Bearer <token> with a token from VID2CONTEXT_MCP_TOKENS.",
        )
        await send_error(send, error, headers=[("WWW-Authenticate", challenge), *cors])

    def _host_allowed(self, scope: Scope) -> bool:
        """Every Host is fine unless the server listens on loopback; then loopback names or
        ``VID2CONTEXT_MCP_ALLOWED_HOSTS`` only (against DNS rebinding)."""
        server = scope.get("server")
        if not server or not _is_loopback(str(server[0])):
            return True
        raw = header(scope, b"host")
        if raw is None:
            return False
        host = raw.decode("latin-1").strip().lower()
        name = _host_name(host)
        return _is_loopback(name) or host in self.checks.allowed_hosts or name in self.checks.allowed_hosts

    def _origin_allowed(self, scope: Scope, origin: bytes) -> bool:
        value = origin.decode("latin-1").strip().rstrip("/")
        if "*" in self.checks.origins or value in self.checks.origins:
            return True
        return value.lower() == _origin_of(scope).lower()

    def _cors_headers(self, origin: bytes | None) -> list[tuple[str, str]]:
        if origin is None:
            return []
        value = "*" if "*" in self.checks.origins else origin.decode("latin-1").strip()
        return [
            ("Access-Control-Allow-Origin", value),
            ("Vary", "Origin"),
            ("Access-Control-Expose-Headers", _EXPOSE.decode()),
        ]

    async def _preflight(self, scope: Scope, send: Send, cors: list[tuple[str, str]]) -> None:
        requested = (header(scope, b"access-control-request-headers") or b"").decode("latin-1")
        allowed = [
            name.strip()
            for name in requested.split(",")
            if name.strip().lower() in _ALLOW_HEADERS or name.strip().lower().startswith("mcp-")
        ]
        headers = [
            *cors,
            ("Access-Control-Allow-Methods", "POST, OPTIONS"),
            ("Access-Control-Allow-Headers", ", ".join(allowed or ["Authorization", "Content-Type"])),
            ("Access-Control-Max-Age", "600"),
        ]
        await send(
            {
                "type": "http.response.start",
                "status": 204,
                "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    # -- discovery ----------------------------------------------------------------------------------

    def server_card(self, scope: Scope) -> dict[str, Any]:
        """The SEP-2127 Server Card: identity, the remote endpoint, its protocol versions."""
        remote: dict[str, Any] = {
            "type": "streamable-http",
            "url": _origin_of(scope) + "/mcp",
            "supportedProtocolVersions": PROTOCOL_VERSIONS,
        }
        if self.checks.keys:
            source = "one of the server's VID2CONTEXT_MCP_TOKENS"
            if self.oauth is not None:  # a client may sign in instead of being given a token
                source += (
                    ", or an OAuth access token (discovery: "
                    + self.oauth.origin(_origin_of(scope))
                    + "/.well-known/oauth-protected-resource/mcp)"
                )
            remote["headers"] = [
                {
                    "name": "Authorization",
                    "description": f"Bearer token: {source}.",
                    "isRequired": True,
                    "isSecret": True,
                    "value": "Bearer {token}",
                    "variables": {
                        "token": {
                            "description": "An MCP token for this server.",
                            "isRequired": True,
                            "isSecret": True,
                        }
                    },
                }
            ]
        return {
            "$schema": CARD_SCHEMA,
            "name": f"io.github.vid2context/{SERVER_NAME}",
            "version": __version__,
            "title": "vid2context",
            "description": "Any video as context for AI agents: outlines, sections, cited transcripts.",
            "websiteUrl": "https://github.com/vid2context",
            "remotes": [remote],
        }

    def catalog(self, scope: Scope) -> dict[str, Any]:
        """The AI Catalog (and MCP Catalog) listing this server's card."""
        origin = _origin_of(scope)
        host = _host_name(origin.split("://", 1)[-1]) or "localhost"
        return {
            "specVersion": "draft",
            "entries": [
                {
                    "identifier": f"urn:air:{host}:{SERVER_NAME}",
                    "displayName": "vid2context",
                    "type": CARD_MEDIA_TYPE,
                    "url": origin + "/mcp/server-card",
                }
            ],
        }

    @staticmethod
    async def _discovery(
        scope: Scope, send: Send, body: dict[str, Any], media_type: str, method: str
    ) -> None:
        if method == "OPTIONS":
            status, content = 204, b""
        elif method in ("GET", "HEAD"):
            status, content = 200, _encode(body)
        else:
            error = VidError(ErrorCode.BAD_REQUEST, f"{method} is not allowed here.", hint="Use GET.")
            await send_error(send, error, status=405, headers=[("Allow", "GET, HEAD, OPTIONS")])
            return
        headers = [(b"content-type", media_type.encode()), (b"content-length", str(len(content)).encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in _DISCOVERY_HEADERS.items()]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else content})


def _session_user(owner: str) -> Any:
    """The caller as the SDK's session manager compares it: a session opened by one owner answers
    404 to any other."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))


@dataclass
class McpRoutes:
    """What ``create_app`` adds for MCP: route handlers and a lifespan."""

    http: McpHttp
    route_handlers: list[Any]
    lifespan: Any


def mcp_http(
    runtime: Runtime, server: VidServer | None = None, oauth: OAuthServer | None = None, hosted: Any = None
) -> McpRoutes:
    """The ``/mcp`` mount and the discovery routes for ``runtime``; ``oauth``: its tokens open
    ``/mcp`` too; ``hosted`` (hosted mode's ``auth.hosted.Hosted``): so do account keys, and
    ``/mcp`` is never open."""
    glue = McpHttp(runtime, server, oauth, hosted)

    @asgi(path="/mcp", is_mount=True, copy_scope=True)
    async def mcp_mount(scope: Scope, receive: Receive, send: Send) -> None:
        await glue(scope, receive, send)

    @get(
        ["/.well-known/ai-catalog.json", "/.well-known/mcp/catalog.json"],
        include_in_schema=False,
        sync_to_thread=False,
    )
    def ai_catalog(request: Request) -> Response[bytes]:
        return Response(
            _encode(glue.catalog(request.scope)), media_type="application/json", headers=_DISCOVERY_HEADERS
        )

    return McpRoutes(http=glue, route_handlers=[mcp_mount, ai_catalog], lifespan=glue.lifespan)
