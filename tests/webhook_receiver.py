"""A webhook receiver as a user would write it from the docs page alone (``site/_src/webhooks.md``).

Its check is not ours: ``docs_verify`` is the Python block of the page's "Verifying a delivery"
section, executed as it is written there, so the page's recipe (timestamp tolerance and
constant-time comparison included) is what the tests hold deliveries to. ``Receiver`` is a small
HTTP server on 127.0.0.1 in the test's event loop: it records every request (path, headers, raw
body, and whether the recipe accepted it) and answers with the statuses it is told, in turn.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Delivery", "Receiver", "docs_block", "docs_verify"]

PAGE = Path(__file__).resolve().parents[1] / "site" / "_src" / "webhooks.md"


def docs_block(language: str) -> str:
    """The ``language`` code block of the docs page's "Verifying a delivery" section."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Verifying a delivery", 1)[1].split("\n## ", 1)[0]
    block = re.search(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert block is not None, f"the docs page lost its {language} verification recipe"
    return block.group(1)


def docs_verify() -> Callable[..., bool]:
    """``verify(secret, header, body, now=None)`` from the docs page's Python block."""
    namespace: dict[str, object] = {}
    exec(compile(docs_block("python"), str(PAGE), "exec"), namespace)  # noqa: S102 (the docs' own code)
    verify = namespace["verify"]
    assert callable(verify)
    return verify


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    """Lower-case names."""
    body: bytes
    verified: bool


class Receiver:
    """Answers ``statuses`` in turn (the last repeats); ``redirect`` answers 302 to it instead."""

    def __init__(
        self, secret: str = "", *, statuses: tuple[int, ...] = (200,), redirect: str | None = None
    ) -> None:
        self.secret = secret
        self.statuses = list(statuses)
        self.redirect = redirect
        self.got: list[Delivery] = []
        self.arrived = asyncio.Event()
        self._verify = docs_verify()
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/vid2context"

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def wait_for(self, count: int, timeout: float = 60.0) -> list[Delivery]:
        """Until ``count`` requests arrived (``timeout`` only bounds a broken test)."""
        async with asyncio.timeout(timeout):
            while len(self.got) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.got

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            signature = headers.get("x-vid2context-signature", "")
            verified = bool(self.secret) and self._verify(self.secret, signature, body)
            self.got.append(Delivery(path, headers, body, verified))
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            extra = f"location: {self.redirect}\r\n" if self.redirect else ""
            if self.redirect:
                status = 302
            writer.write(
                f"HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\nconnection: close\r\n\r\n".encode()
            )
            await writer.drain()
            self.arrived.set()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
