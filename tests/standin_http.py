"""A stand-in service's HTTP server on 127.0.0.1: bound to a free port, served from a thread.

Every stand-in for an outside service (``fake_notion.py``, ``fake_chat.py``, ``fake_github.py``,
``fake_sponsorblock.py``, ``fake_supadata.py``, ``youtube_replay.py``, ``egress_standins.Site``) is a
``StandinServer``: ``with Fake() as fake`` serves it, ``fake.origin`` is its address, and leaving the
block stops it, closes its socket and waits for its thread. The stand-ins built around one
``handle(request_handler)`` function of theirs (``fake_deepgram.py``, ``fake_embeddings.py``,
``fake_llm.py``, ``fake_whisper.py``) are ``HandledStandin``: ``with`` gives them such a server
from ``start``, and ``url`` is its address.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["HandledStandin", "QuietHandler", "StandinServer", "reply", "start", "stop", "url_of"]

POLL_SEC = 0.05
"""How often ``serve_forever`` checks for ``shutdown``: a short poll makes teardown quick."""


class QuietHandler(BaseHTTPRequestHandler):
    """A stand-in's request handler: its access log would only clutter the test's output."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        return


class StandinServer(ThreadingHTTPServer):
    """A server on a free port of 127.0.0.1 answering with ``handler``, served inside ``with``."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, poll_sec: float = POLL_SEC) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self.serve_forever, args=(poll_sec,), daemon=True)

    @property
    def origin(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


def start(
    handle: Callable[[BaseHTTPRequestHandler], None],
    *,
    get: Callable[[BaseHTTPRequestHandler], None] | None = None,
    server: type[StandinServer] = StandinServer,
) -> StandinServer:
    """A ``server`` serving now, answering each POST with ``handle`` (and each GET with ``get``,
    when given; otherwise GET is the stdlib's 501), over HTTP/1.1."""
    methods: dict[str, Any] = {"protocol_version": "HTTP/1.1", "do_POST": lambda self: handle(self)}
    if get is not None:
        methods["do_GET"] = lambda self: get(self)
    return server(type("Handler", (QuietHandler,), methods)).__enter__()


def reply(
    http: BaseHTTPRequestHandler, status: int, data: bytes, headers: Mapping[str, str] | None = None
) -> None:
    """Answer ``status`` with ``headers`` (its content type among them), the length and ``data``."""
    http.send_response(status)
    for name, value in (headers or {}).items():
        http.send_header(name, value)
    http.send_header("Content-Length", str(len(data)))
    http.end_headers()
    http.wfile.write(data)


def url_of(server: StandinServer) -> str:
    return server.origin


def stop(server: StandinServer) -> None:
    server.__exit__()


class HandledStandin:
    """A stand-in that answers each POST with its ``_handle`` (and each GET with its ``_get``,
    when it has one) on a ``StandinServer`` of class ``_server_class``, served inside ``with``."""

    _server: StandinServer | None = None
    _server_class: type[StandinServer] = StandinServer
    _get: Callable[[BaseHTTPRequestHandler], None] | None = None

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self._server is not None
        return self._server.origin

    def __enter__(self) -> Self:
        self._server = start(self._handle, get=self._get, server=self._server_class)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            stop(self._server)
