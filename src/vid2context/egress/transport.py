"""An httpx transport whose every connection goes to a checked public address.

httpcore asks its network backend for a TCP stream to ``host:port`` each time it opens a
connection: for the first request to an origin, and for every redirect hop httpx follows to a new
one. This backend answers that call by resolving the name once, checking every address
(``resolve.pin``), and connecting to a checked address (``dial``); so the check holds at connect
time, a rebinding DNS answer cannot slip in between, and a redirect into a private network is
refused at its hop. The URL is never rewritten: the ``Host`` header, TLS SNI and certificate
verification all still use the name (httpcore starts TLS on the stream with
``server_hostname`` = the URL's host), and pooled connections stay keyed by name, so two names
on one address never share a connection verified for the other.

A refused connection raises the ``VidError`` (``unsupported-input``, naming the class) out of
``client.send``: httpx passes exceptions that are not httpcore's through unchanged. Local only.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from .dial import Dialer, connect_any
from .resolve import Pin, Refused, Unresolvable

__all__ = ["LIMITS", "GuardedBackend", "GuardedTransport"]

LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` over ``GuardedBackend`` (HTTP/1.1; no proxy of httpx's own:
    the dialer tunnels through ``VID2CONTEXT_PROXY`` when one is set)."""

    def __init__(
        self,
        pin: Pin,
        dialer: Dialer,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits = LIMITS,
    ) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # The pool httpx built is replaced by one with our backend; requests and exceptions are
        # still mapped by httpx's own handle_async_request.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(pin, dialer),
        )


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """TCP streams to checked addresses only (asyncio streams, TLS started by httpcore)."""

    def __init__(self, pin: Pin, dialer: Dialer) -> None:
        self._pin = pin
        self._dialer = dialer

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self._pin(host, port)
        except Refused as refused:
            raise refused.error("A request (or one of its redirects)") from None
        except Unresolvable:
            raise httpcore.ConnectError(f"{host!r} has no address") from None
        try:
            reader, writer = await asyncio.wait_for(connect_any(self._dialer, addresses, port), timeout)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to {host!r} in time") from None
        except OSError as exc:
            raise httpcore.ConnectError(f"no connection to {host!r}: {exc.strerror or exc}") from None
        return _Stream(reader, writer)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("public mode fetches over TCP only")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Stream(httpcore.AsyncNetworkStream):
    """httpcore's stream interface over an asyncio reader and writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return await asyncio.wait_for(self._reader.read(max_bytes), timeout)
        except TimeoutError:
            raise httpcore.ReadTimeout("read timed out") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            await asyncio.wait_for(self._writer.drain(), timeout)
        except TimeoutError:
            raise httpcore.WriteTimeout("write timed out") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from None

    async def aclose(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            await self._writer.start_tls(
                ssl_context, server_hostname=server_hostname, ssl_handshake_timeout=timeout
            )
        except TimeoutError:
            raise httpcore.ConnectTimeout("TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:  # a certificate for another name is an SSLError
            await self.aclose()
            raise httpcore.ConnectError(str(exc)) from None
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "is_readable":  # httpcore asks of an idle connection: has the server closed it?
            return self._reader.at_eof() or self._writer.is_closing()
        if info in ("client_addr", "server_addr"):
            return self._writer.get_extra_info("sockname" if info == "client_addr" else "peername")
        return None
