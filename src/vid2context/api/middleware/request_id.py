"""``X-Request-Id`` on every response, and the last line of defence.

A client's id is kept when it is 1 to 128 characters of ``A-Za-z0-9._:-`` (enough for UUIDs, trace
ids and ``svc:1234``), so clients can correlate their logs with ours; anything else (too long,
CR/LF or other header-injection attempts, non-ASCII) is replaced by a fresh UUID rather than
cleaned, so a hostile value is never echoed. The id lands in ``scope["state"]["request_id"]`` for
handlers (``request.state.request_id``) and the access log.

It is the outermost layer, so it also catches an exception that escaped everything inside (a
failing KV store, a bug in a middleware) and answers ``internal`` in the contract's body instead
of the server's default error page.
"""

from __future__ import annotations

import logging
import re
import uuid

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import VidError
from ..errors import send_error
from ._asgi import canonical_path, header, is_api, state_of

__all__ = ["RequestId", "is_valid_request_id"]

log = logging.getLogger("vid2context.api")

_VALID = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
_NAME = b"x-request-id"


def is_valid_request_id(raw: bytes) -> bool:
    return _VALID.fullmatch(raw) is not None


class RequestId:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                state_of(scope)["request_id"] = self._choose(scope)
            await self.app(scope, receive, send)
            return
        request_id = self._choose(scope)
        state_of(scope)["request_id"] = request_id
        value = request_id.encode("ascii")
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers") or () if k.lower() != _NAME]
                headers.append((_NAME, value))
                message = {**message, "headers": headers}  # type: ignore[typeddict-item]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception(
                "unhandled error outside the app on %s (request %s)", scope.get("method"), request_id
            )
            if started:
                raise
            api = is_api(canonical_path(scope["path"]))
            await send_error(
                send_with_id,
                VidError.internal(),
                headers=[("X-Robots-Tag", "noindex")] if api else (),
                head=scope.get("method") == "HEAD",
            )

    @staticmethod
    def _choose(scope: Scope) -> str:
        raw = header(scope, _NAME)
        if raw is not None and is_valid_request_id(raw):
            return raw.decode("ascii")
        return str(uuid.uuid4())
