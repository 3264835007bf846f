"""API keys for ``/api/*`` (``VID2CONTEXT_API_KEYS``); the layer is absent when no key is set.

Each comma-separated entry is a plain key (full access, named ``key-1``, ``key-2``... in order
among the plain keys) or ``name:scope:sha256hex``, where the hex is the SHA-256 of the key, so a
config file need not hold the key itself. Scopes, from the contract:

- ``read``: ``GET``/``HEAD``/``OPTIONS``, and the POST routes that only compute an answer
  (``READ_POSTS``: ``/pack``, ``/bundle``, ``/ask``, ``/chat``, ``/research``, ``/duplicates``,
  ``/exports/obsidian``);
- ``write``: also every other ``POST``, ``PUT``, ``PATCH`` and ``DELETE``;
- ``admin``: everything.

In hosted mode (``VID2CONTEXT_HOSTED=1``, ``auth.hosted.Hosted``) the same layer also takes an
account's own keys (``Bearer v2c_...``, looked up by digest) and its browser session (the
``v2c_session`` cookie), and is present even without configured keys. An account may read
(``read`` scope: the library is shared, so an account does not change it) and manage itself under
``/api/v1/me``; a cookie-signed request that changes something must come from this origin (a
foreign ``Origin`` is ``403``). ``/api/v1/auth/*`` stays open, so people can sign in. The account's
quotas go with the request (``ctx.METER``).

The presented key is hashed once and compared with ``hmac.compare_digest`` against *every*
configured digest, without stopping at a match, so timing says nothing about which key or how
much of it matched. ``/api/v1/health`` and ``/api/v1/openapi.json`` stay open, and so do the bot
webhooks under ``/api/v1/bots/``, which check the platform's signature instead. A missing or wrong
key is ``401 unauthorized`` with ``WWW-Authenticate: Bearer``; a key without the scope is
``403 forbidden``. The matched key's name goes to ``scope["state"]["key_name"]`` for the rate
limiter and the access log; the key itself is never stored or logged. A malformed entry stops
app creation with a message naming its position, never its text.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import TYPE_CHECKING, NamedTuple

from litestar.types import ASGIApp, Receive, Scope, Send

from ...ctx import METER
from ...errors import ErrorCode, VidError
from ..errors import send_error
from ._asgi import canonical_path, header, is_api, is_open, state_of
from .client import client_ip
from .ratelimit import _address_bucket

if TYPE_CHECKING:
    from ...auth.hosted import Hosted, Principal

__all__ = [
    "ACCOUNT_PATH",
    "READ_POSTS",
    "SCOPES",
    "ApiKey",
    "Auth",
    "bearer_token",
    "parse_api_keys",
    "required_scope",
]

SCOPES = ("read", "write", "admin")
_RANK = {scope: rank for rank, scope in enumerate(SCOPES)}
READ_POSTS = frozenset(
    "/api/v1/" + route
    for route in ("pack", "bundle", "ask", "chat", "research", "duplicates", "exports/obsidian")
)
"""POST routes that compute an answer without changing anything: a ``read`` key may call them."""

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_HASHED = re.compile(r"([A-Za-z0-9._-]{1,64}):(read|write|admin):([0-9A-Fa-f]{64})")
_PLAIN = re.compile(r"[\x21-\x2b\x2d-\x39\x3b-\x7e]+")  # visible ASCII without ',' and ':'
_BEARER = re.compile(rb"[Bb][Ee][Aa][Rr][Ee][Rr] +([\x21-\x7e]+) *")


class ApiKey(NamedTuple):
    name: str
    scope: str
    digest: bytes
    """SHA-256 of the key; the key itself is not kept."""


def _malformed(position: int, total: int, why: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"VID2CONTEXT_API_KEYS entry {position} of {total} is not valid: {why}.",
        hint="Fix VID2CONTEXT_API_KEYS: each comma-separated entry is a plain key (visible ASCII, no ':' "
        "or spaces) or name:scope:sha256hex with scope read, write or admin and the SHA-256 of the key "
        "in hex.",
    )


def parse_api_keys(raw: str | None) -> tuple[ApiKey, ...]:
    """The configured keys; empty when unset. Raises ``bad-request`` naming a bad entry's position."""
    if raw is None:
        return ()
    entries = raw.split(",")
    keys: list[ApiKey] = []
    plain = 0
    for position, entry in enumerate(entries, 1):
        entry = entry.strip()
        if not entry:
            continue  # a trailing comma is harmless
        if ":" in entry:
            match = _HASHED.fullmatch(entry)
            if match is None:
                raise _malformed(position, len(entries), "expected name:scope:sha256hex")
            name, scope, hexdigest = match.groups()
            key = ApiKey(name, scope, bytes.fromhex(hexdigest))
        else:
            if not _PLAIN.fullmatch(entry):
                raise _malformed(position, len(entries), "a plain key is visible ASCII without spaces")
            plain += 1
            key = ApiKey(f"key-{plain}", "admin", hashlib.sha256(entry.encode("ascii")).digest())
        if any(k.name == key.name for k in keys):
            raise _malformed(position, len(entries), "its name is used by an earlier entry")
        keys.append(key)
    if not keys:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "VID2CONTEXT_API_KEYS is set but lists no key.",
            hint="Unset it to run open on 127.0.0.1, or list at least one key.",
        )
    return tuple(keys)


def bearer_token(authorization: bytes | None) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header, or ``None``."""
    match = _BEARER.fullmatch(authorization) if authorization else None
    return match.group(1) if match else None


def required_scope(method: str, path: str) -> str:
    """The least scope that may call ``method path`` (``path`` canonical)."""
    if method in _READ_METHODS or (method == "POST" and path in READ_POSTS):
        return "read"
    if method in _WRITE_METHODS:
        return "write"
    return "admin"


ACCOUNT_PATH = "/api/v1/me"
"""An account's own routes: any method, for the account itself."""
_AUTH_PREFIX = "/api/v1/auth/"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Auth:
    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: tuple[ApiKey, ...],
        hosted: Hosted | None = None,
        worker: bool = False,
        trust_proxy: bool = False,
    ) -> None:
        if not keys and hosted is None:
            raise ValueError("Auth needs at least one key, or hosted mode")
        self.app = app
        self.keys = keys
        self.hosted = hosted
        self.worker = worker
        self.trust_proxy = trust_proxy

    async def caller(self, scope: Scope, *, cookies: bool = True) -> ApiKey | Principal | None:
        """Who ``scope``'s request is: a configured key, else (hosted mode) an account by its key
        or, with ``cookies`` and no bearer token at all, by its session cookie."""
        authorization = header(scope, b"authorization")
        key = self.identify(authorization)
        if key is not None or self.hosted is None:
            return key
        match = _BEARER.fullmatch(authorization) if authorization else None
        if match is not None:
            token = match.group(1)
            return (
                await self.hosted.from_key(token.decode("latin-1"))
                if self.hosted.is_account_key(token)
                else None
            )
        if authorization is None and cookies:
            return await self.hosted.from_session(scope)
        return None

    def identify(self, authorization: bytes | None) -> ApiKey | None:
        """The configured key a ``Bearer`` header presents, compared in constant time."""
        match = _BEARER.fullmatch(authorization) if authorization else None
        # A missing header still costs one hash and a full pass, like a wrong key.
        digest = hashlib.sha256(match.group(1) if match else b"").digest()
        found: ApiKey | None = None
        for key in self.keys:
            if hmac.compare_digest(digest, key.digest) and found is None and match is not None:
                found = key
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = canonical_path(scope["path"])
        if not is_api(path) or is_open(path) or (self.hosted and path.startswith(_AUTH_PREFIX)):
            await self.app(scope, receive, send)
            return
        authorization = header(scope, b"authorization")
        key = await self.caller(scope)
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        if key is None:
            error = VidError(
                ErrorCode.UNAUTHORIZED,
                "An API key is required." if authorization is None else "The API key is not valid.",
                hint="Sign in with GitHub at GET /api/v1/auth/github/login, or send Authorization: Bearer "
                "<key> with a key from POST /api/v1/me/keys."
                if self.hosted is not None
                else "Send Authorization: Bearer <key> with a key from VID2CONTEXT_API_KEYS.",
            )
            await self._refuse(scope, send, error)
            return
        if not isinstance(key, ApiKey):
            await self._account(key, scope, receive, send, path, method)
            return
        needed = required_scope(method, path)
        if _RANK[key.scope] < _RANK[needed]:
            error = VidError(
                ErrorCode.FORBIDDEN,
                f"Key {key.name} has scope {key.scope}; {method} {path[:100]} needs {needed}.",
                hint=f"Tell the user this key may not do it: it takes a key with scope {needed} or admin in "
                "VID2CONTEXT_API_KEYS; do not retry with this key.",
            )
            await self._refuse(scope, send, error)
            return
        state_of(scope)["key_name"] = key.name
        await self.app(scope, receive, send)

    async def _account(
        self, principal: Principal, scope: Scope, receive: Receive, send: Send, path: str, method: str
    ) -> None:
        assert self.hosted is not None
        own = path == ACCOUNT_PATH or path.startswith(ACCOUNT_PATH + "/")
        if not own and required_scope(method, path) != "read":
            error = VidError(
                ErrorCode.FORBIDDEN,
                f"An account may read; {method} {path[:100]} changes the shared library.",
                hint="Tell the user an account's keys and sign-ins only read: changing the shared library "
                "takes one of the server's own keys (VID2CONTEXT_API_KEYS); do not retry with this key.",
            )
            await self._refuse(scope, send, error)
            return
        origin = header(scope, b"origin")
        if principal.via == "session" and method not in _SAFE_METHODS and origin is not None:
            from ...auth.signin import request_origin

            if origin.decode("latin-1").rstrip("/").lower() != request_origin(scope).lower():
                error = VidError(
                    ErrorCode.FORBIDDEN,
                    "A signed-in browser may change its account from this site only.",
                    hint="Send the request from this server's own pages, or with Authorization: Bearer <key>.",
                )
                await self._refuse(scope, send, error)
                return
        state = state_of(scope)
        state["key_name"] = principal.name
        state["account"] = principal
        address = _address_bucket(client_ip(scope, worker=self.worker, trust_proxy=self.trust_proxy))
        token = METER.set(self.hosted.meter(principal, address.removeprefix("ip:")))
        try:
            await self.app(scope, receive, send)
        finally:
            METER.reset(token)

    @staticmethod
    async def _refuse(scope: Scope, send: Send, error: VidError) -> None:
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
            return
        await send_error(send, error, head=scope.get("method") == "HEAD")
