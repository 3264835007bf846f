"""Stand-in for the Python Workers ``workers`` module (see ../README.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import Any

__all__ = ["Request", "Response", "WorkerEntrypoint", "pending", "wait_until"]

pending: list[asyncio.Future[Any]] = []
"""What was handed to ``wait_until``: the runtime keeps the request alive until these settle."""


def wait_until(awaitable: Awaitable[Any]) -> None:
    pending.append(asyncio.ensure_future(awaitable))


class _Chunk:
    """A body chunk as the runtime yields it: a JS ``Uint8Array`` with ``to_bytes()``."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def to_bytes(self) -> bytes:
        return self._data


class Request:
    """An incoming request: ``url``, ``method``, ``headers`` (pairs), ``body`` (chunks or None)."""

    def __init__(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Iterable[tuple[str, str]] = (),
        body: bytes | None = None,
        chunk_size: int = 64 * 1024,
    ) -> None:
        self.url = url
        self.method = method
        self._headers = list(headers)
        self._raw = body
        self._chunk_size = chunk_size

    @property
    def headers(self) -> _Headers:
        return _Headers(self._headers)

    @property
    def body(self) -> AsyncIterator[_Chunk] | None:
        if not self._raw:
            return None
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[_Chunk]:
        for start in range(0, len(self._raw or b""), self._chunk_size):
            yield _Chunk((self._raw or b"")[start : start + self._chunk_size])


class _Headers:
    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def items(self) -> list[tuple[str, str]]:
        return [(name.lower(), value) for name, value in self._pairs]

    def get(self, name: str) -> str | None:
        values = [value for key, value in self._pairs if key.lower() == name.lower()]
        return ", ".join(values) if values else None


class Response:
    """The response the runtime sends: ``status``, ``headers`` (pairs, lower-case names), ``body``."""

    def __init__(self, body: bytes, *, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key == name.lower()]
        return ", ".join(values) if values else None

    def text(self) -> str:
        return self.body.decode()


class WorkerEntrypoint:
    def __init__(self, ctx: Any, env: Any) -> None:
        self.ctx = ctx
        self.env = env
