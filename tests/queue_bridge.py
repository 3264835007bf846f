"""The other end of the Miniflare harness's queue consumer: batches and cron events into Python.

Miniflare runs the real queue (``tests/miniflare/server.mjs``: ``JOBS``, its consumer, retries
and the dead-letter queue) and its worker forwards each batch to ``POST /queue`` and each Cron
event to ``POST /scheduled`` of the URL set with ``harness.set_consumer``. ``Bridge`` serves that
on 127.0.0.1 in the test's own event loop and hands them to a ``worker/entry.py`` isolate's
``queue(batch, env, ctx)`` and ``scheduled(controller, env, ctx)``, with ``Batch`` and
``Message`` as the Python Workers runtime presents them (``queue``, ``messages``; ``id``,
``body``, ``attempts``, ``ack()``, ``retry(delaySeconds=...)``). Each message's decision goes
back to the worker, which acks or retries it on the real queue.

``kill()`` is an isolate dying: the listening socket closes and every batch in flight is cut
off, so Miniflare retries its messages, and the next consumer set gets them again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["Batch", "Bridge", "Message"]


class Message:
    def __init__(self, fields: dict[str, Any]) -> None:
        self.id = fields["id"]
        self.body = fields["body"]
        self.attempts = fields.get("attempts", 1)
        self.decision: dict[str, Any] | None = None

    def ack(self) -> None:
        self.decision = {"id": self.id, "ack": True}

    def retry(self, delaySeconds: int = 0) -> None:  # noqa: N803 (the runtime's own name)
        self.decision = {"id": self.id, "ack": False, "delaySeconds": int(delaySeconds)}


class Batch:
    def __init__(self, queue: str, messages: list[dict[str, Any]]) -> None:
        self.queue = queue
        self.messages = [Message(m) for m in messages]


class Controller:
    def __init__(self, cron: str, scheduled_time: Any) -> None:
        self.cron = cron
        self.scheduledTime = scheduled_time


class Bridge:
    """An HTTP server on 127.0.0.1 that runs ``entry``'s handlers (an isolate's ``Default``)."""

    def __init__(self, entrypoint: Any) -> None:
        self.entrypoint = entrypoint
        self.batches: list[Batch] = []
        self.scheduled_runs = 0
        self.written = 0
        """Answers written back to Miniflare (its decisions reach the queue)."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> Bridge:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def kill(self) -> None:
        """Die: stop listening and cut every request in flight (no answer reaches the queue)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = next(
                    (
                        int(line.split(":", 1)[1])
                        for line in lines
                        if line.lower().startswith("content-length:")
                    ),
                    0,
                )
                body = json.loads(await reader.readexactly(length)) if length else {}
                status, answer = await self._answer(path, body)
                data = json.dumps(answer).encode()
                writer.write(
                    f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
                self.written += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/queue":
            batch = Batch(body["queue"], body["messages"])
            self.batches.append(batch)
            await self.entrypoint.queue(batch, self.entrypoint.env, self.entrypoint.ctx)
            return 200, {"decisions": [m.decision for m in batch.messages if m.decision is not None]}
        if path == "/scheduled":
            self.scheduled_runs += 1
            await self.entrypoint.scheduled(
                Controller(body["cron"], body.get("scheduledTime")), self.entrypoint.env, self.entrypoint.ctx
            )
            return 200, {}
        return 404, {}
