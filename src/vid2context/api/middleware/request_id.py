"""The outer layer: ``X-Request-Id``, the headers of every response, the access log, and the
last line of defence.

A client's id is kept when it is 1 to 128 characters of ``A-Za-z0-9._:-`` (enough for UUIDs, trace
ids and ``svc:1234``), so clients can correlate their logs with ours; anything else (too long,
CR/LF or other header-injection attempts, non-ASCII) is replaced by a fresh UUID (version 4)
rather than cleaned, so a hostile value is never echoed. The id lands in
``scope["state"]["request_id"]`` for handlers (``request.state.request_id``) and the access log.

It sees every response start, so it also puts on the headers of ``headers.py`` (the robots tag,
those inner layers added) and notes the status for the access line (``access_log.py``), written
when the request ends: one ``send`` wrapper for all of it.

It is the outermost layer, so it also catches an exception that escaped everything inside (a
failing KV store, a bug in a middleware) and answers ``internal`` in the contract's body instead
of the server's default error page.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Iterator

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import VidError
from ..errors import send_error
from ._asgi import canonical_path, header, is_api, state_of
from .access_log import AccessLog
from .headers import EXTRA_KEY, REQUEST_ID, ROBOTS, finish

__all__ = ["RequestId", "fresh_request_id", "is_valid_request_id"]

log = logging.getLogger("vid2context.api")

_VALID = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def is_valid_request_id(raw: bytes) -> bool:
    return _VALID.fullmatch(raw) is not None


_BATCH = 256
"""Ids made per read of the system's random source."""


def _batch() -> Iterator[str]:
    h = os.urandom(16 * _BATCH).hex()
    return iter(
        [
            f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-{_VARIANT[h[i + 16]]}{h[i + 17 : i + 20]}-"
            f"{h[i + 20 : i + 32]}"
            for i in range(0, len(h), 32)
        ]
    )


_ids: Iterator[str] = iter(())


def _forget() -> None:
    """In a forked child (granian's workers): ids left from the parent would be handed out twice."""
    global _ids
    _ids = iter(())


if hasattr(os, "register_at_fork"):  # not on Emscripten (the Worker's Pyodide), which never forks
    os.register_at_fork(after_in_child=_forget)


def fresh_request_id() -> str:
    """A random UUID (version 4, RFC 9562 variant) as text, the bytes of ``str(uuid.uuid4())``
    from the same source, read ``_BATCH`` ids at a time: ``os.urandom`` lets go of the GIL, and
    under load each release let granian's threads take it while the loop waited (a tenth of a
    worker's loop in py-spy). ``next`` on the batch is one step under the GIL, so two threads
    never take the same id; a refill raced by two threads makes two batches, both random."""
    global _ids
    try:
        return next(_ids)
    except StopIteration:
        _ids = _batch()
        return next(_ids)


class RequestId:
    def __init__(self, app: ASGIApp, *, access_log: AccessLog | None = None) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                state_of(scope)["request_id"] = self._choose(scope)
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        state = state_of(scope)
        request_id = state["request_id"] = self._choose(scope)
        api = is_api(canonical_path(scope["path"]))
        own = (
            [(REQUEST_ID, request_id.encode("ascii")), ROBOTS]
            if api
            else [(REQUEST_ID, request_id.encode("ascii"))]
        )
        status = 0

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = finish(message.get("headers"), own, api, state.get(EXTRA_KEY))
                message = {**message, "headers": headers}  # type: ignore[typeddict-item]
            await send(message)

        logged = 0
        try:
            await self.app(scope, receive, send_with_headers)
            logged = status
        except asyncio.CancelledError:
            logged = status or 499
            raise
        except Exception:
            logged = status or 500
            log.exception(
                "unhandled error outside the app on %s (request %s)", scope.get("method"), request_id
            )
            if status:
                raise
            state.pop(EXTRA_KEY, None)  # the layer that added them did not answer this
            await send_error(send_with_headers, VidError.internal(), head=scope.get("method") == "HEAD")
        finally:
            if self.access_log is not None:
                self.access_log.write(scope, logged or 500, (time.perf_counter() - began) * 1000)

    @staticmethod
    def _choose(scope: Scope) -> str:
        raw = header(scope, REQUEST_ID)
        if raw is not None and is_valid_request_id(raw):
            return raw.decode("ascii")
        return fresh_request_id()
