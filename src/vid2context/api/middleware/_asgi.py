"""Small helpers over the raw ASGI scope that every middleware shares.

The middleware runs before Litestar routes the request, so it reads the scope directly: header
lookup, the per-request ``scope["state"]`` dict, and one canonical form of the path, so that
``//api/v1/./library`` cannot slip past a check that ``/api/v1/library`` would meet.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

__all__ = [
    "HEALTH_PATH",
    "OPEN_PATHS",
    "SIGNED_PREFIX",
    "canonical_path",
    "header",
    "is_api",
    "is_open",
    "is_preflight",
    "origin_of",
    "state_of",
]

HEALTH_PATH = "/api/v1/health"
OPENAPI_PATH = "/api/v1/openapi.json"
OPEN_PATHS = frozenset({HEALTH_PATH, OPENAPI_PATH})
"""Answered without an API key (the contract's ``security: []`` routes)."""
SIGNED_PREFIX = "/api/v1/bots/"
"""The chat platforms' webhooks: no API key (a platform cannot send ours), each request checked
against the platform's own signature instead (``bots/signatures.py``)."""


def is_open(path: str) -> bool:
    """Whether ``path`` (canonical) is answered without an API key."""
    return path in OPEN_PATHS or path.startswith(SIGNED_PREFIX)


_SLASHES = re.compile(r"/{2,}")


def header(scope: Any, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lowercase), or ``None``."""
    for key, value in scope.get("headers") or ():
        if key == name or key.lower() == name:
            return value
    return None


def state_of(scope: Any) -> dict[str, Any]:
    """``scope["state"]``, the dict Litestar's ``request.state`` reads; created when missing."""
    state = scope.get("state")
    if state is None:
        state = scope["state"] = {}
    return state


def canonical_path(path: str) -> str:
    """``path`` with repeated slashes, ``.`` and ``..`` segments and a trailing slash removed."""
    if "//" in path or "/." in path:
        path = posixpath.normpath(_SLASHES.sub("/", "/" + path))
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return path


def is_api(path: str) -> bool:
    """Whether a canonical path is under ``/api/``, where the contract's conventions apply."""
    return path.startswith("/api/") or path == "/api"


def is_preflight(scope: Any) -> bool:
    """A CORS preflight: ``OPTIONS`` with ``Access-Control-Request-Method``."""
    return scope.get("method") == "OPTIONS" and header(scope, b"access-control-request-method") is not None


def origin_of(scope: Any) -> str:
    """This server's own origin as the client reached it (scheme and Host header)."""
    host = (header(scope, b"host") or b"").decode("latin-1").strip()
    if not host and (server := scope.get("server")):
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"
