"""One JSON line per request on stderr: ``ts, method, path, status, ms, requestId, key, ip``.

A line per request, machine-readable, is what log shippers and ``jq`` want; stderr keeps stdout
free for the CLI. ``key`` is the API key's *name* (``key-1``, or a hashed entry's name) that the
auth layer put in ``scope["state"]["key_name"]``, never the key; the query string is left out
because it may carry inputs the caller would rather not see in logs. Turned off with
``VID2CONTEXT_ACCESS_LOG=0`` (then no ``AccessLog`` is made at all).

``status`` is what was sent; ``500`` when the app failed before answering (the outer layer then
answers ``internal``), ``499`` when the client went away first. The outer layer
(``request_id.RequestId``) times the request and calls ``write``: it already sees every response
start, so the log needs no layer (and no ``send`` wrapper) of its own.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import msgspec

from ._asgi import state_of
from .client import client_ip

__all__ = ["AccessLog"]

_encode = msgspec.json.Encoder().encode
MAX_PATH_CHARS = 1000


def _clean(text: str) -> str:
    """Text safe for JSON: lone surrogates (undecodable bytes in a path) become ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8")


class AccessLog:
    """Writes the lines; made once per app."""

    def __init__(
        self, *, worker: bool = False, trust_proxy: bool = False, stream: TextIO | None = None
    ) -> None:
        self.worker = worker
        self.trust_proxy = trust_proxy
        self.stream = stream
        """Where lines go; ``None`` means ``sys.stderr`` as it is at write time."""
        self._second = -1
        self._prefix = ""

    def _timestamp(self, now: float) -> str:
        """``now`` as ISO 8601 UTC to the millisecond; the part up to the second made once a second."""
        second = int(now)
        if second != self._second:
            self._second, self._prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._prefix}.{int((now - second) * 1000):03d}Z"

    def write(self, scope: Any, status: int, ms: float) -> None:
        state: dict[str, Any] = state_of(scope)
        path = scope.get("path") or ""
        line = {
            "ts": self._timestamp(time.time()),
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
