"""How a delivery leaves: one POST, its redirects never followed, and the target checked first.

A sender answers two calls: ``check(url)`` when a hook is created, and ``post(url, body,
headers)`` for each delivery attempt, which checks the URL again (``webhook_targets``) and
returns the receiver's status. A redirect is not followed (its status is the answer, and a
failure): following it would send the signed body to a host nobody checked when the hook was
made. ``HttpSender`` is the portable one (the Worker's, whose ``fetch`` has no route into the
server's own network); the local runtime's resolves names and pins the connection to checked
addresses (``webhook_egress.GuardedSender``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import httpx

from .webhook_targets import parse_target

__all__ = ["DELIVERY_TIMEOUT_S", "HttpSender", "Sender"]

DELIVERY_TIMEOUT_S = 10.0
"""A receiver answers within this, or the attempt fails (and is retried)."""


class Sender(Protocol):
    async def check(self, url: str) -> None:
        """Raise the ``VidError`` for a URL that may not be sent to now."""
        ...

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        """The receiver's HTTP status; raises ``VidError`` (refused) or ``httpx.HTTPError``."""
        ...

    async def aclose(self) -> None: ...


class HttpSender:
    """Over the runtime's own client (not closed here), with the URL's literal host and name
    checked at every attempt."""

    def __init__(self, http: httpx.AsyncClient, *, public: bool) -> None:
        self._http = http
        self._public = public

    async def check(self, url: str) -> None:
        parse_target(url, public=self._public)

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        parse_target(url, public=self._public)
        response = await self._http.post(
            url, content=body, headers=dict(headers), follow_redirects=False, timeout=DELIVERY_TIMEOUT_S
        )
        return response.status_code

    async def aclose(self) -> None:
        """The client is the runtime's."""
