"""The filtering proxy that yt-dlp and ffmpeg fetch through in public mode.

Those programs open their own sockets and resolve names themselves, so no check made before they
start holds at connect time: a redirect, a playlist entry or a second DNS answer could take them
anywhere. Both honour an HTTP proxy (yt-dlp ``--proxy``; ffmpeg the ``http_proxy`` that yt-dlp
sets for it), so every connection they make comes here first, on 127.0.0.1. For each one the
proxy resolves the destination once, checks every address (``resolve.pin``), and dials a checked
address itself (``dial``): the name is never resolved again, and a redirect is a new request that
is checked again. Two request forms, as HTTP proxies speak them::

    CONNECT host:port HTTP/1.1 ......... a tunnel (https): 200, then bytes both ways
    GET http://host/path HTTP/1.1 ...... forwarded in origin form, with Connection: close
    anything else (ftp://, origin form)  400
    no or unknown run credential ....... 407 (ffmpeg sends its credential only when asked)
    refused destination ................ 403, and the refusal is recorded for the run (calls.py)
    no address, no connection .......... 502

It runs in a thread with an event loop of its own, started on first use and stopped with the
runtime (``guard.Egress``): it serves every run whichever event loop started it, and its byte
copying never competes with the server's requests. Local only; on Cloudflare the Worker's
``fetch`` has no route into the server's own network, so there is nothing to filter there.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import threading
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from .calls import Call, Calls
from .dial import Dialer, connect_any
from .resolve import Pin, Refused, Unresolvable

__all__ = ["FilteringProxy"]

log = logging.getLogger("vid2context.egress")

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT_S = 60.0
IDLE_TIMEOUT_S = 300.0
"""A connection with no byte either way for this long is closed (the programs time out sooner)."""
_CHUNK = 64 * 1024
_HOP_BY_HOP = {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "te", "upgrade"}


class FilteringProxy:
    """An HTTP forward proxy on 127.0.0.1 that only reaches checked public addresses."""

    def __init__(self, *, pin: Pin, dialer: Dialer, calls: Calls, host: str = "127.0.0.1") -> None:
        self._pin = pin
        self._dialer = dialer
        self._calls = calls
        self._host = host
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._failure: OSError | None = None
        self._port: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int | None:
        """The port it listens on, once started."""
        return self._port

    def start(self) -> int:
        """Start it unless it runs; the port. Blocks until it listens (a few milliseconds)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive() and self._port is not None:
                return self._port
            self._started.clear()
            self._failure, self._port = None, None
            self._thread = threading.Thread(target=self._run, name="vid2context-egress-proxy", daemon=True)
            self._thread.start()
            self._started.wait()
            if self._failure is not None or self._port is None:
                raise self._failure or OSError("the filtering proxy did not start")
            return self._port

    def stop(self) -> None:
        """Close it and every connection it holds; it starts again on the next ``start``."""
        with self._lock:
            thread, loop, stopping = self._thread, self._loop, self._stopping
            if thread is None:
                return
            if loop is not None and stopping is not None:
                with contextlib.suppress(RuntimeError):  # its loop has ended already
                    loop.call_soon_threadsafe(stopping.set)
            thread.join()
            self._thread, self._loop, self._stopping, self._port = None, None, None, None

    # -- its own thread and loop --

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            server = await asyncio.start_server(self._accept, self._host, 0, limit=HEAD_LIMIT)
        except OSError as exc:
            self._failure = exc
            self._started.set()
            return
        self._port = server.sockets[0].getsockname()[1]
        self._started.set()
        async with server:
            await self._stopping.wait()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass  # the client went away, or sent too much or too little: nothing to answer
        except Exception:  # a bug here must not end the proxy's loop; the connection just closes
            log.exception("filtering proxy: a connection failed")
        finally:
            if task is not None:
                self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = _Head.parse(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S))
        if head is None:
            return await _answer(writer, 400, "Bad Request", "not an HTTP proxy request")
        call = self._calls.get(_call_id(head.header("proxy-authorization")))
        if call is None:
            return await _answer(
                writer,
                407,
                "Proxy Authentication Required",
                extra='Proxy-Authenticate: Basic realm="vid2context"',
            )
        url: SplitResult | None = None
        if head.method == "CONNECT":
            destination = _authority(head.target)
        else:
            url = _absolute_http(head.target)
            destination = (url.hostname or "", url.port or 80) if url is not None else None
        if destination is None:
            return await _answer(writer, 400, "Bad Request", "only CONNECT and absolute http:// requests")
        up = await self._open(call, *destination, writer)
        if up is None:
            return
        up_reader, up_writer = up
        try:
            if url is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                up_writer.write(head.forward(url))
                await up_writer.drain()
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _open(
        self, call: Call, host: str, port: int, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The checked connection upstream, or ``None`` once the client has its refusal."""
        try:
            addresses = await self._pin(host, port)
        except Refused as refused:
            self._calls.record(call, refused)
            await _answer(writer, 403, "Forbidden", f"vid2context does not fetch this destination: {refused}")
            return None
        except Unresolvable:
            await _answer(writer, 502, "Bad Gateway", "the host name has no address")
            return None
        try:
            return await connect_any(self._dialer, addresses, port)
        except OSError:
            await _answer(writer, 502, "Bad Gateway", "no connection could be made")
            return None


@dataclass
class _Head:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]

    @classmethod
    def parse(cls, raw: bytes) -> _Head | None:
        lines = raw.decode("latin-1").split("\r\n")
        request = lines[0].split(" ")
        if len(request) != 3 or not request[2].startswith("HTTP/1.") or not request[0].isalpha():
            return None
        headers = []
        for line in lines[1:]:
            if not line:
                continue
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                return None
            headers.append((name, value.strip()))
        return cls(request[0].upper(), request[1], request[2], headers)

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name), None)

    def forward(self, url: SplitResult) -> bytes:
        """The request as the origin server expects it: origin form, hop-by-hop headers dropped,
        one request per connection (so nothing after it can reach another host through it)."""
        listed = {v.strip().lower() for v in (self.header("connection") or "").split(",")}
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        lines = [f"{self.method} {path} {self.version}"]
        if self.header("host") is None:
            lines.append(f"Host: {url.netloc.rpartition('@')[2]}")
        lines += [f"{k}: {v}" for k, v in self.headers if k.lower() not in _HOP_BY_HOP | listed]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _call_id(value: str | None) -> str:
    """The run id in ``Proxy-Authorization: Basic base64(id:x)``; empty when there is none."""
    scheme, _, token = (value or "").partition(" ")
    if scheme.lower() != "basic":
        return ""
    try:
        return base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")[0]
    except (ValueError, UnicodeDecodeError):
        return ""


def _authority(target: str) -> tuple[str, int] | None:
    """``(host, port)`` of a CONNECT target: ``host:port`` or ``[v6]:port``."""
    host, colon, port = target.rpartition(":")
    if not colon or not port.isdigit() or not host:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        return None
    number = int(port)
    return (host, number) if 0 < number < 65536 else None


def _absolute_http(target: str) -> SplitResult | None:
    try:
        url = urlsplit(target)
        url.port  # noqa: B018  raises ValueError for a malformed port
    except ValueError:
        return None
    return url if url.scheme.lower() == "http" and url.hostname else None


async def _answer(
    writer: asyncio.StreamWriter, status: int, reason: str, body: str = "", *, extra: str = ""
) -> None:
    data = body.encode()
    head = f"HTTP/1.1 {status} {reason}\r\n" + (f"{extra}\r\n" if extra else "")
    head += (
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + data)
    await writer.drain()


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    while data := await asyncio.wait_for(source.read(_CHUNK), IDLE_TIMEOUT_S):
        target.write(data)
        await target.drain()


async def _splice(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until the server's side ends (the client's end only half-closes it)."""

    async def upload() -> None:
        with contextlib.suppress(OSError, TimeoutError):
            await _copy(client_reader, up_writer)
            if up_writer.can_write_eof():
                up_writer.write_eof()

    sending = asyncio.ensure_future(upload())
    try:
        with contextlib.suppress(OSError, TimeoutError):
            await _copy(up_reader, client_writer)
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
