"""Who is asking: the client address the rate limiter buckets by and the access log prints.

The socket address is the truth unless something we trust put the client in a header:
Cloudflare's ``CF-Connecting-IP`` on the Worker (the edge overwrites it, a client cannot forge
it), or ``X-Real-IP`` / ``X-Forwarded-For`` when ``VID2CONTEXT_TRUST_PROXY=1`` says a proxy of our
own is in front. Of ``X-Forwarded-For`` the last entry counts: it is the one our proxy appended;
earlier entries are whatever the client sent.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ._asgi import header

__all__ = ["client_ip"]


def _address(raw: bytes | None) -> str | None:
    if not raw or len(raw) > 64:
        return None
    try:
        return ipaddress.ip_address(raw.decode("latin-1").strip()).compressed
    except ValueError:
        return None


def client_ip(scope: Any, *, worker: bool = False, trust_proxy: bool = False) -> str:
    """The client's address as text, or ``unknown`` when the server gave none."""
    if worker and (found := _address(header(scope, b"cf-connecting-ip"))):
        return found
    if trust_proxy:
        if found := _address(header(scope, b"x-real-ip")):
            return found
        forwarded = header(scope, b"x-forwarded-for")
        if forwarded and (found := _address(forwarded.rsplit(b",", 1)[-1])):
            return found
    client = scope.get("client")
    if client:
        return str(client[0])
    return "unknown"
