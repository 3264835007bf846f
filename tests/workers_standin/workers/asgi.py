"""Stand-in for ``workers.asgi``: ``fetch(app, request, env, ctx)`` as the runtime's adapter runs it.

Like the real adapter: the app's lifespan is started before and shut down after every request
(an app without lifespan support is served anyway); the scope's ``path`` is percent-decoded, with
``raw_path`` and ``query_string`` from the URL and ``env`` in the scope; the body arrives as the
request's chunks then an empty final message; ``http.disconnect`` once the response is complete.
An exception before the response starts propagates to the caller.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote, urlsplit

from . import Request, Response

ASGI = {"spec_version": "2.0", "version": "3.0"}


async def _start_lifespan(app: Any) -> tuple[Any, dict[str, Any]]:
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    state: dict[str, Any] = {}
    started: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    await inbox.put({"type": "lifespan.startup"})

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "lifespan.startup.complete" and not started.done():
            started.set_result(True)
        elif kind == "lifespan.startup.failed" and not started.done():
            started.set_exception(RuntimeError(message.get("message") or "ASGI lifespan startup failed"))
        elif kind in ("lifespan.shutdown.complete", "lifespan.shutdown.failed") and not stopped.done():
            stopped.set_result(None)

    async def run() -> None:
        try:
            await app({"type": "lifespan", "asgi": ASGI, "state": state}, inbox.get, send)
        except Exception:  # noqa: BLE001  as the real adapter: a failing startup means "no lifespan"
            if not started.done():
                started.set_result(False)
            return
        if not started.done():
            started.set_result(False)
        if not stopped.done():
            stopped.set_result(None)

    task = asyncio.ensure_future(run())
    if not await started:
        return None, state

    async def shutdown() -> None:
        await inbox.put({"type": "lifespan.shutdown"})
        await stopped
        await task

    return shutdown, state


def _scope(request: Request, env: Any, state: dict[str, Any]) -> dict[str, Any]:
    url = urlsplit(request.url)
    return {
        "type": "http",
        "asgi": ASGI,
        "http_version": "1.1",
        "method": request.method,
        "scheme": url.scheme,
        "path": unquote(url.path or "/"),
        "raw_path": (url.path or "/").encode(),
        "query_string": url.query.encode(),
        "headers": [(name.encode(), value.encode()) for name, value in request.headers.items()],
        "env": env,
        "state": dict(state),
    }


async def fetch(app: Any, request: Request, env: Any, ctx: Any = None) -> Response:
    shutdown, state = await _start_lifespan(app)
    try:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        if request.body is not None:
            async for chunk in request.body:
                await inbox.put({"type": "http.request", "body": chunk.to_bytes(), "more_body": True})
        await inbox.put({"type": "http.request", "body": b"", "more_body": False})
        done = asyncio.Event()
        start: dict[str, Any] = {}
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if not inbox.empty():
                return await inbox.get()
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        await app(_scope(request, env, state), receive, send)
        if not start:
            raise RuntimeError("The application did not generate a response")
        headers = [(k.decode().lower(), v.decode()) for k, v in start.get("headers", [])]
        return Response(b"".join(parts), status=start["status"], headers=headers)
    finally:
        if shutdown is not None:
            await shutdown()
