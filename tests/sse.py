"""Server-sent events read from an app's ASGI callable chunk by chunk, as the app sends them, so
a test sees live events and keep-alive comments as they happen and can go away mid-stream
(``__aexit__`` sends ``http.disconnect``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Self

from litestar import Litestar

__all__ = ["SseClient", "parse"]


class SseClient:
    """One request to the app's ASGI callable, its body chunks delivered as the app sends them."""

    def __init__(self, app: Litestar, path: str, headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.path = path
        self.headers = headers or {}
        self.status: int | None = None
        self.response_headers: dict[str, str] = {}
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.started = asyncio.Event()
        self.gone = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.buffer = b""

    async def __aenter__(self) -> Self:
        path, _, query = self.path.partition("?")
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": query.encode(), "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
            "headers": [(k.lower().encode(), v.encode()) for k, v in self.headers.items()], "state": {},
        }  # fmt: skip
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await self.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.response_headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
                self.started.set()
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    await self.chunks.put(message["body"])
                if not message.get("more_body"):
                    await self.chunks.put(None)

        self.task = asyncio.create_task(self.app(scope, receive, send))
        await self.started.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.gone.set()
        if self.task is not None:
            await asyncio.wait({self.task}, timeout=5)

    async def block(self) -> str | None:
        """The next SSE block (an event or a comment), or ``None`` at the end of the stream."""
        while b"\n\n" not in self.buffer:
            chunk = await self.chunks.get()
            if chunk is None:
                return None
            self.buffer += chunk
        block, self.buffer = self.buffer.split(b"\n\n", 1)
        return block.decode()

    async def rest(self) -> list[str]:
        found = []
        while (block := await self.block()) is not None:
            found.append(block)
        return found


def parse(block: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for line in block.split("\n"):
        if line.startswith(":"):
            fields["comment"] = line[1:].strip()
            continue
        name, _, value = line.partition(": ")
        fields[name] = json.loads(value) if name == "data" else value
    return fields
