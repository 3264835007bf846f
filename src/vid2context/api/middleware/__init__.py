"""The ASGI layers every request passes through before Litestar routes it.

``build_middleware(runtime)`` gives them outermost first::

    RequestId    X-Request-Id and X-Robots-Tag (on /api/*) on every response, the headers inner
                 layers add (headers.py), the access log's line (VID2CONTEXT_ACCESS_LOG);
                 last-resort ``internal`` answer
    EdgeUrl      this server's URL for the hints that name it (the Worker only)
    Cors         allowlist, preflights before auth          (VID2CONTEXT_CORS_ORIGINS)
    Auth         API keys and scopes; accounts in hosted mode (VID2CONTEXT_API_KEYS, ..._HOSTED)
    RateLimit    token bucket per key or client address     (VID2CONTEXT_RATE_LIMIT)
    Limits       body size and request timeout              (VID2CONTEXT_MAX_BODY_KB, ..._PUSH_KB, ..._TIMEOUT_MS)

A layer whose setting turns it off is left out rather than made to check on every request.
``create_app`` wraps Litestar's own handler (router plus exception handlers) with them, so they
see every request, unknown routes and mounted apps included, and ``wrap`` does the same for any
ASGI app. Each is a plain ASGI callable (no ``BaseHTTPMiddleware``): no request object is built
and nothing is buffered. Only the outer layer wraps ``send`` on every request (``CORS`` too, when
on), so the headers of all of them are added in one pass. Errors they answer go through ``api/errors.py``, the one error shape.

Handlers get their per-request ``Ctx`` from ``request_ctx(request, runtime)``, the one builder: the
timeout's deadline, the request id, and an abort when the timeout answers ``504``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

from litestar.types import ASGIApp

from ...runtime import Runtime
from .access_log import AccessLog
from .auth import Auth, parse_api_keys
from .cors import Cors, parse_origins
from .edge import EdgeUrl
from .limits import Limits, request_ctx
from .ratelimit import RateLimit, bucket_store
from .request_id import RequestId

__all__ = ["Middleware", "build_middleware", "parse_api_keys", "request_ctx", "wrap"]

Middleware = Callable[[ASGIApp], ASGIApp]


def build_middleware(
    runtime: Runtime,
    *,
    clock: Callable[[], float] = time.time,
    log_stream: TextIO | None = None,
    hosted: Any = None,
) -> list[Middleware]:
    """The layers for ``runtime``'s settings, outermost first.

    Raises ``bad-request`` for a malformed ``VID2CONTEXT_API_KEYS`` entry, so a bad key list
    stops app creation. ``clock`` (wall seconds) drives the rate limiter's buckets; ``log_stream``
    replaces stderr for access-log lines; ``hosted`` (``auth.hosted.Hosted``, hosted mode) puts the
    auth layer in front even without keys, taking accounts' keys and sessions too.
    """
    settings = runtime.settings
    keys = parse_api_keys(settings.api_keys)
    worker = runtime.name == "worker"
    access_log = (
        AccessLog(worker=worker, trust_proxy=settings.trust_proxy, stream=log_stream)
        if settings.access_log
        else None
    )
    layers: list[Middleware] = [partial(RequestId, access_log=access_log)]
    if worker:
        layers.append(EdgeUrl)
    if settings.cors_origins:
        layers.append(partial(Cors, origins=parse_origins(settings.cors_origins)))
    if keys or hosted is not None:
        layers.append(
            partial(Auth, keys=keys, hosted=hosted, worker=worker, trust_proxy=settings.trust_proxy)
        )
    if settings.rate_limit > 0:
        layers.append(
            partial(
                RateLimit,
                kv=bucket_store(runtime),
                rate=settings.rate_limit,
                burst=settings.rate_burst,
                worker=worker,
                trust_proxy=settings.trust_proxy,
                clock=clock,
            )
        )
    layers.append(
        partial(
            Limits,
            max_body_bytes=settings.max_body_kb * 1024,
            timeout_s=settings.request_timeout_ms / 1000,
            max_push_bytes=settings.max_push_kb * 1024,
        )
    )
    return layers


def wrap(app: ASGIApp, middleware: Sequence[Middleware]) -> ASGIApp:
    """``app`` inside ``middleware`` (outermost first)."""
    for layer in reversed(middleware):
        app = layer(app)
    return app
