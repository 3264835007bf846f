"""CORS for ``/api/*`` from an allowlist (``VID2CONTEXT_CORS_ORIGINS``); off when unset.

Browsers send a preflight ``OPTIONS`` without credentials, so preflights are answered here, before
the auth layer could refuse them for lacking a key. An allowed origin gets its own value back
(or ``*`` when the list is ``*``), the request headers a client needs (``Authorization``,
``Content-Type``, ``X-Request-Id``, ``If-None-Match``) and, on real responses, the headers a
script may read. A refused preflight is ``403 forbidden`` in the contract's body; a refused
simple request is answered normally but without ``Access-Control-Allow-Origin``, so the browser
hides it from the page. ``Vary: Origin`` goes on every ``/api/*`` response, so a cache never
serves one origin's answer to another. No cookies are used, so credentials are never allowed.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import ErrorCode, VidError
from ..errors import send_error
from ._asgi import canonical_path, header, is_api, is_preflight

__all__ = ["ALLOWED_HEADERS", "EXPOSED_HEADERS", "Cors", "parse_origins"]

ALLOWED_HEADERS = "Authorization, Content-Type, X-Request-Id, If-None-Match"
EXPOSED_HEADERS = (
    "X-Request-Id, Retry-After, ETag, Content-Disposition, X-Data-Attribution, "
    "X-RateLimit-Limit, X-RateLimit-Remaining"
)
ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
MAX_AGE_S = 600


def parse_origins(raw: str) -> frozenset[str]:
    """The comma-separated allowlist; ``*`` allows any origin. A trailing ``/`` is ignored."""
    return frozenset(o.strip().rstrip("/") for o in raw.split(",") if o.strip())


def _with_vary_origin(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    for i, (name, value) in enumerate(headers):
        if name.lower() == b"vary":
            if b"origin" not in value.lower() and value.strip() != b"*":
                headers[i] = (name, value + b", Origin")
            return headers
    headers.append((b"vary", b"Origin"))
    return headers


class Cors:
    def __init__(self, app: ASGIApp, *, origins: frozenset[str]) -> None:
        self.app = app
        self.any_origin = "*" in origins
        self.origins = frozenset(o.encode("latin-1") for o in origins if o != "*")

    def _allow_origin(self, origin: bytes | None) -> bytes | None:
        """The ``Access-Control-Allow-Origin`` value for ``origin``, or ``None`` when refused."""
        if origin is None:
            return None
        if self.any_origin:
            return b"*"
        return origin if origin in self.origins else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api(canonical_path(scope["path"])):
            await self.app(scope, receive, send)
            return
        origin = header(scope, b"origin")
        allowed = self._allow_origin(origin)
        if origin is not None and is_preflight(scope):
            await self._preflight(send, allowed)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = _with_vary_origin(list(message.get("headers") or ()))
                if allowed is not None:
                    headers.append((b"access-control-allow-origin", allowed))
                    headers.append((b"access-control-expose-headers", EXPOSED_HEADERS.encode()))
                message = {**message, "headers": headers}  # type: ignore[typeddict-item]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    @staticmethod
    async def _preflight(send: Send, allowed: bytes | None) -> None:
        if allowed is None:
            error = VidError(
                ErrorCode.FORBIDDEN,
                "This origin is not allowed to call the API from a browser.",
                hint="Tell the user to add this origin to VID2CONTEXT_CORS_ORIGINS on the server; do not retry until then.",
            )
            await send_error(send, error, headers=[("Vary", "Origin")])
            return
        headers = [
            (b"access-control-allow-origin", allowed),
            (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
            (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
            (b"access-control-max-age", str(MAX_AGE_S).encode()),
            (b"vary", b"Origin"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
