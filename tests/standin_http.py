"""A stand-in service's HTTP server on 127.0.0.1: one call to start it, one to stop it.

The stand-ins for hosted services (``fake_deepgram.py``; the older fakes still carry their own
copy of these lines) answer every POST through one ``handle(request_handler)`` function of theirs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["start", "stop", "url_of"]


def start(handle: Callable[[BaseHTTPRequestHandler], None]) -> ThreadingHTTPServer:
    """A server on a free port of 127.0.0.1, answering each POST with ``handle``, in a thread."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            handle(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()
