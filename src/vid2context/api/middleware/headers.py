"""The headers every response gets, added in one pass by the outer layer (``RequestId``).

- ``X-Request-Id`` on every response.
- ``X-Robots-Tag: noindex`` on every ``/api/*`` response: JSON answers must never compete with
  the docs in search results, and a header is the only way to say so for responses that are not
  HTML. Error responses get it too, hence the outer layer, not a handler hook.
- Those an inner layer asked for with ``add_headers`` (the rate limiter's ``X-RateLimit-*``):
  they go on the response that layer lets through, and on any error answered inside it.

One pass instead of a ``send`` wrapper per layer: each wrapper was a closure, a copied message
and a rebuilt header list on every request.
"""

from __future__ import annotations

from typing import Any

from ._asgi import state_of

__all__ = ["EXTRA_KEY", "ROBOTS", "add_headers", "finish"]

ROBOTS = (b"x-robots-tag", b"noindex")
REQUEST_ID = b"x-request-id"
EXTRA_KEY = "response_headers"
"""``scope["state"]`` key of the headers inner layers add."""
_OURS = frozenset({REQUEST_ID})
_OURS_API = frozenset({REQUEST_ID, ROBOTS[0]})


def add_headers(scope: Any, headers: list[tuple[bytes, bytes]]) -> None:
    """Have ``headers`` put on this request's response (the outer layer adds them at its start)."""
    state = state_of(scope)
    if (earlier := state.get(EXTRA_KEY)) is not None:
        earlier.extend(headers)
    else:
        state[EXTRA_KEY] = headers


def finish(
    headers: Any, own: list[tuple[bytes, bytes]], api: bool, extra: list[tuple[bytes, bytes]] | None
) -> list[tuple[bytes, bytes]]:
    """A response start's ``headers`` with ours in place of any the app set, then ``extra``."""
    replaced = _OURS_API if api else _OURS
    out = [(k, v) for k, v in headers or () if k.lower() not in replaced]
    out += own
    if extra:
        out += extra
    return out
