"""Connections to an address already checked: directly, or through the operator's proxy.

A dialer is handed an address, never a name, so what was checked is what is connected to. It is
injected: tests map a public test address to a stand-in server on 127.0.0.1 (every real local
server is on loopback), so the guard runs for real against "public" destinations.

With ``VID2CONTEXT_PROXY`` set, the connection is a tunnel through that proxy (``CONNECT
address:port``, by address): the operator's proxy is trusted, but it would resolve a name again
by itself, so it is never given one.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Sequence
from typing import Protocol
from urllib.parse import unquote, urlsplit

from ..errors import ErrorCode, VidError
from .resolve import IPAddress

__all__ = ["CONNECT_TIMEOUT_S", "Dialer", "DirectDialer", "Streams", "UpstreamDialer", "connect_any"]

CONNECT_TIMEOUT_S = 30.0
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Dialer(Protocol):
    """Opens TCP connections to checked addresses."""

    async def dial(self, address: IPAddress, port: int) -> Streams:
        """A connection to exactly ``address:port``; raises ``OSError`` when none can be made."""
        ...


class DirectDialer:
    """Straight to the address, as this machine routes it."""

    def __init__(self, *, timeout: float = CONNECT_TIMEOUT_S) -> None:
        self._timeout = timeout

    async def dial(self, address: IPAddress, port: int) -> Streams:
        try:
            return await asyncio.wait_for(asyncio.open_connection(str(address), port), self._timeout)
        except TimeoutError:
            raise OSError(f"no connection within {self._timeout:g} s") from None


class UpstreamDialer:
    """Through an HTTP(S) proxy (``VID2CONTEXT_PROXY``) with ``CONNECT address:port``."""

    def __init__(self, proxy_url: str, *, timeout: float = CONNECT_TIMEOUT_S) -> None:
        parts = urlsplit(proxy_url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "In public mode VID2CONTEXT_PROXY must be an http:// or https:// proxy.",
                hint="Tell the user: public mode dials every checked address through the proxy with "
                "CONNECT, so VID2CONTEXT_PROXY must be an HTTP(S) proxy (SOCKS is not supported there) or "
                "unset; do not retry until then.",
            )
        self._host = parts.hostname
        self._port = parts.port or (443 if scheme == "https" else 80)
        self._tls = scheme == "https"
        self._auth = ""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._auth = "Proxy-Authorization: Basic " + base64.b64encode(pair).decode("ascii") + "\r\n"
        self._timeout = timeout

    async def dial(self, address: IPAddress, port: int) -> Streams:
        try:
            return await asyncio.wait_for(self._tunnel(address, port), self._timeout)
        except TimeoutError:
            raise OSError(f"the proxy gave no tunnel within {self._timeout:g} s") from None

    async def _tunnel(self, address: IPAddress, port: int) -> Streams:
        context = ssl.create_default_context() if self._tls else None
        reader, writer = await asyncio.open_connection(
            self._host, self._port, ssl=context, server_hostname=self._host if self._tls else None
        )
        target = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{self._auth}\r\n".encode("ascii"))
        try:
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            writer.close()
            raise OSError("the proxy closed the connection") from exc
        status = head.split(b"\r\n", 1)[0].split(b" ", 2)
        if len(status) < 2 or status[1] != b"200":
            writer.close()
            code = status[1].decode("ascii", "replace")[:3] if len(status) > 1 else "?"
            raise OSError(f"the proxy refused the tunnel (HTTP {code})")
        return reader, writer


async def connect_any(dialer: Dialer, addresses: Sequence[IPAddress], port: int) -> Streams:
    """A connection to the first of ``addresses`` that answers, all of them checked already."""
    failure: OSError = OSError("no address to connect to")
    for address in addresses:
        try:
            return await dialer.dial(address, port)
        except OSError as exc:
            failure = exc
    raise failure
