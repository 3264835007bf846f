"""One JSON line per request on stderr: ``ts, method, path, status, ms, requestId, key, ip``.

A line per request, machine-readable, is what log shippers and ``jq`` want; stderr keeps stdout
free for the CLI. ``key`` is the API key's *name* (``key-1``, or a hashed entry's name) that the
auth layer put in ``scope["state"]["key_name"]``, never the key; the query string is left out
because it may carry inputs the caller would rather not see in logs. Turned off with
``VID2CONTEXT_ACCESS_LOG=0`` (the layer is then not installed at all).

``status`` is what was sent; ``500`` when the app failed before answering (the outer layer then
answers ``internal``), ``499`` when the client went away first.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

import msgspec
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ._asgi import state_of
from .client import client_ip

__all__ = ["AccessLog"]

_encode = msgspec.json.Encoder().encode
MAX_PATH_CHARS = 1000


def _clean(text: str) -> str:
    """Text safe for JSON: lone surrogates (undecodable bytes in a path) become ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8")


class AccessLog:
    def __init__(
        self, app: ASGIApp, *, worker: bool = False, trust_proxy: bool = False, stream: TextIO | None = None
    ) -> None:
        self.app = app
        self.worker = worker
        self.trust_proxy = trust_proxy
        self.stream = stream
        """Where lines go; ``None`` means ``sys.stderr`` as it is at write time."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        except asyncio.CancelledError:
            status = status or 499
            raise
        except Exception:
            status = status or 500
            raise
        finally:
            self._write(scope, status or 500, (time.perf_counter() - started) * 1000)

    def _write(self, scope: Scope, status: int, ms: float) -> None:
        state: dict[str, Any] = state_of(scope)
        path = scope.get("path") or ""
        line = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "method": _clean(str(scope.get("method", ""))[:16]),
            "path": _clean(path[:MAX_PATH_CHARS]),
            "status": status,
            "ms": round(ms, 1),
            "requestId": state.get("request_id"),
            "key": state.get("key_name"),
            "ip": client_ip(scope, worker=self.worker, trust_proxy=self.trust_proxy),
        }
        stream = self.stream or sys.stderr
        try:
            stream.write(_encode(line).decode("utf-8") + "\n")
        except (OSError, ValueError):  # a closed or broken stderr must not fail the request
            pass
