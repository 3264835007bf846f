"""Body size and request time limits for ``/api/*``.

**Body.** ``VID2CONTEXT_MAX_BODY_KB`` caps request bodies: a declared ``Content-Length`` over the
cap is ``413 too-large`` before a byte is read, and a body without one (chunked) is counted as it
streams through ``receive``; the chunk that crosses the cap raises ``BodyTooLarge`` (a
``VidError``), which Litestar's exception handlers turn into the same 413 (or this layer does,
when the reader is not Litestar). Nothing is buffered here. ``multipart/form-data`` to
``POST /api/v1/uploads`` is left to the upload route's own cap (``VID2CONTEXT_MAX_UPLOAD_MB``), and
``PUT /api/v1/library/{id}`` (a pushed transcript with its vectors, megabytes for a long video) has
its own, ``VID2CONTEXT_MAX_PUSH_KB``. ``0`` turns a cap off.

**Time.** ``VID2CONTEXT_REQUEST_TIMEOUT_MS`` bounds how long a request may take to *start* its
answer. At the deadline (one timer for all the requests in flight, ``deadlines.py``) the
request's expiry aborts every ``Ctx`` registered for the request with reason ``timeout`` (so
work in other tasks, shielded from cancellation, stops at its next ``ctx.check()``), then
cancels the task, which interrupts the handler wherever it awaits; when the cancellation has
unwound to this layer the client gets ``504 timeout``. This is ``asyncio.timeout``'s mechanism
with a hook before the cancel: the same effect as running the app in a task of its own and
cancelling that, at a third of the cost per request (no extra task, no extra loop iterations).
A cancellation that came from the server
(client gone, shutdown) is told apart with ``Task.uncancel()`` and passed on. A response that has
started (a streamed bundle, an SSE feed) is no longer timed here: its handler bounds its own work
with the same deadline through its ``Ctx``. ``0`` turns the timeout off.

How handlers take part: this layer puts the deadline, a ``time.monotonic()`` value, in
``scope["state"]["deadline"]`` and a list in ``scope["state"]["ctxs"]``. Every handler builds its
``Ctx`` with ``request_ctx(request, runtime)``, the one builder, which reads the first and joins
the second, so the core gives up no later than this layer answers, and is told to stop when it
does.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...runtime import Runtime
from ..errors import send_error
from ._asgi import canonical_path, header, is_api, state_of
from .deadlines import Deadlines
from .request_id import is_valid_request_id

__all__ = ["LIBRARY_PREFIX", "UPLOADS_PATH", "BodyTooLarge", "Limits", "request_ctx"]

UPLOADS_PATH = "/api/v1/uploads"
LIBRARY_PREFIX = "/api/v1/library/"


class BodyTooLarge(VidError):
    def __init__(self, limit: int, setting: str = "VID2CONTEXT_MAX_BODY_KB") -> None:
        super().__init__(
            ErrorCode.TOO_LARGE,
            f"The request body is larger than {limit // 1024} KiB.",
            hint=f"Send a smaller body (the server's {setting}); send media with POST /api/v1/uploads.",
        )


def _request_id(scope: Any, state: dict[str, Any]) -> str | None:
    """The id ``RequestId`` settled on, else a well-formed client value, else none (a fresh one)."""
    chosen = state.get("request_id")
    if isinstance(chosen, str) and is_valid_request_id(chosen.encode()):
        return chosen
    raw = header(scope, b"x-request-id")
    return raw.decode("ascii") if raw is not None and is_valid_request_id(raw) else None


def request_ctx(connection: Any, runtime: Runtime) -> Ctx:
    """The ``Ctx`` of one request: the one way every handler builds it.

    Its deadline is ``VID2CONTEXT_REQUEST_TIMEOUT_MS`` from now (``0``: none), or this layer's
    ``scope["state"]["deadline"]`` when that is sooner, so the core gives up no later than the
    timeout answers (without this layer, a handler called directly, the setting alone). Its
    request id is the one ``RequestId`` chose. It joins ``scope["state"]["ctxs"]``, so the
    timeout's ``504`` aborts it. ``connection`` is a Litestar ``Request`` or a raw ASGI scope.
    """
    scope = getattr(connection, "scope", connection)
    state = state_of(scope)
    timeout_ms = runtime.settings.request_timeout_ms
    ctx = Ctx(timeout=timeout_ms / 1000 if timeout_ms > 0 else None, request_id=_request_id(scope, state))
    deadline = state.get("deadline")
    if isinstance(deadline, (int, float)) and not isinstance(deadline, bool):
        ctx.deadline = float(deadline) if ctx.deadline is None else min(ctx.deadline, float(deadline))
    ctxs = state.get("ctxs")
    if isinstance(ctxs, list):
        ctxs.append(ctx)
    return ctx


class Limits:
    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, timeout_s: float, max_push_bytes: int = 0
    ) -> None:
        self.app = app
        self.max_body = max_body_bytes
        self.max_push = max_push_bytes
        self.timeout = timeout_s
        self._deadlines: Deadlines | None = None
        """The requests in flight on the loop this runs on (one timer for them all)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api(path := canonical_path(scope["path"])):
            await self.app(scope, receive, send)
            return
        head = scope.get("method") == "HEAD"
        push = scope.get("method") == "PUT" and path.startswith(LIBRARY_PREFIX)
        limit = self.max_push if push else self.max_body
        setting = "VID2CONTEXT_MAX_PUSH_KB" if push else "VID2CONTEXT_MAX_BODY_KB"
        if limit and not self._exempt(scope, path):
            declared = header(scope, b"content-length")
            if declared is not None:
                if not declared.strip().isdigit():
                    error = VidError(
                        ErrorCode.BAD_REQUEST,
                        "The Content-Length header is not a number.",
                        hint="Send a valid Content-Length, or none with a chunked body.",
                    )
                    await send_error(send, error, head=head)
                    return
                if int(declared) > limit:
                    await send_error(send, BodyTooLarge(limit, setting), head=head)
                    return
            receive = self._counting(receive, limit, setting)
        await self._run(scope, receive, send, head)

    @staticmethod
    def _exempt(scope: Scope, path: str) -> bool:
        if path != UPLOADS_PATH or scope.get("method") != "POST":
            return False
        content_type = header(scope, b"content-type") or b""
        return content_type.lower().lstrip().startswith(b"multipart/form-data")

    @staticmethod
    def _counting(receive: Receive, limit: int, setting: str) -> Receive:
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, setting)
            return message

        return counting_receive

    async def _run(self, scope: Scope, receive: Receive, send: Send, head: bool) -> None:
        """The app under the timeout (when there is one), answering what escapes it unanswered."""
        task = asyncio.current_task()
        assert task is not None
        ctxs: list[Ctx] = []
        if self.timeout > 0:
            state = state_of(scope)
            state["deadline"] = time.monotonic() + self.timeout
            state["ctxs"] = ctxs
        started = False
        fired = False

        async def noting_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        def expire() -> None:
            nonlocal fired
            if started:
                return  # streaming: the answer has begun; its handler's Ctx bounds the rest
            fired = True
            for ctx in ctxs:
                ctx.abort("timeout")
            task.cancel()

        deadlines = None
        if self.timeout > 0:
            deadlines, loop = self._deadlines, task.get_loop()
            if deadlines is None or deadlines.loop is not loop:
                deadlines = self._deadlines = Deadlines(loop, self.timeout)
            deadlines.add(expire)
        try:
            await self.app(scope, receive, noting_send)
        except asyncio.CancelledError:
            if not fired or task.uncancel() > 0:
                raise  # the server cancelled the request (client gone, shutdown), not us
            if not started:
                error = VidError(
                    ErrorCode.TIMEOUT,
                    f"The request took longer than {self.timeout:g} s.",
                    hint="Repeat the call once (what was read is saved); long work (big playlists, long "
                    "videos) belongs in a job (POST /api/v1/jobs).",
                )
                await send_error(send, error, head=head)
            return
        except BodyTooLarge as error:
            if started:
                raise
            await send_error(send, error, head=head)
            return
        finally:
            if deadlines is not None:
                deadlines.discard(expire)
        if fired:
            task.uncancel()  # the app swallowed the cancellation and answered anyway
