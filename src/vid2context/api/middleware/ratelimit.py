"""A token bucket per API key name (or per client address when the API is open).

``VID2CONTEXT_RATE_LIMIT`` tokens per minute drip into a bucket of ``VID2CONTEXT_RATE_BURST``
(default half the rate, at least 1); a request takes one token or is answered ``429
rate-limited`` with ``Retry-After``: the whole seconds until a token is back. Successful answers
carry ``X-RateLimit-Limit`` (the bucket size: the most requests that may come at once) and
``X-RateLimit-Remaining`` (whole tokens left), so ``Limit - Remaining`` is what was used.

The bucket is one KV value, ``ratelimit:<who>`` -> ``{"tokens": float, "at": seconds}``, read,
refilled for the time since ``at``, and written back with a TTL of the time it takes to refill
(at least 60 s, Cloudflare's minimum), after which a missing bucket means a full one. A
read-modify-write is not atomic across isolates; on the edge KV is eventually consistent anyway,
so a burst split over isolates can overshoot a little, which is fine for a limit of this kind.
Rejections write nothing. The clock is wall time (KV is shared between processes) and injectable.

On the local runtime (one server process) the buckets live in the process instead (``kv=None``):
a dict of ``Bucket`` values, with no storage round trip on the request's path (two SQLite
thread hops per request were most of a cached read's cost). It is bounded: past ``MAX_LOCAL``
buckets, those idle for longer than the TTL (full again, as a missing KV bucket is) are dropped,
then the least recently used. The Worker keeps KV: its isolates share nothing else.

Not limited: ``/api/v1/health`` and CORS preflights. When the KV store fails the request is let
through and a warning logged: an outage of the limiter must not become an outage of the API.
IPv6 clients are bucketed by their /64, which one client usually controls whole.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import msgspec
from litestar.types import ASGIApp, Receive, Scope, Send

from ...errors import ErrorCode, VidError
from ...storage.base import KvStore
from ..errors import send_error
from ._asgi import HEALTH_PATH, canonical_path, is_api, is_preflight, state_of
from .client import client_ip
from .headers import add_headers

__all__ = ["KEY_PREFIX", "Bucket", "RateLimit", "bucket_store", "burst_for"]

log = logging.getLogger("vid2context.api")

KEY_PREFIX = "ratelimit:"
MIN_TTL_S = 60
MAX_LOCAL = 65_536
"""In-process buckets kept at most (a few MB); past it the idle ones go first."""


class Bucket(msgspec.Struct):
    tokens: float
    at: float


_decode = msgspec.json.Decoder(Bucket).decode
_encode = msgspec.json.Encoder().encode


def burst_for(rate: int, burst: int | None) -> int:
    """The bucket size: ``burst`` when set, else half of ``rate``; at least 1."""
    return max(1, burst if burst is not None else rate // 2)


def bucket_store(runtime: Any) -> KvStore | None:
    """Where ``runtime``'s buckets live: KV on the Worker (isolates share nothing else), the
    process (``None``) on the local runtime, whose one server process sees every request."""
    return runtime.kv if runtime.name == "worker" else None


def _who(scope: Scope, *, worker: bool, trust_proxy: bool) -> str:
    name = state_of(scope).get("key_name")
    if name:
        return f"key:{name}"
    return _address_bucket(client_ip(scope, worker=worker, trust_proxy=trust_proxy))


@functools.lru_cache(maxsize=4096)
def _address_bucket(address: str) -> str:
    """``ip:<address>``, IPv6 by its /64; cached, as the same clients come back."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return f"ip:{address[:64]}"
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return f"ip:{parsed.ipv4_mapped}"
        return f"ip:{ipaddress.ip_network(f'{parsed}/64', strict=False).network_address}/64"
    return f"ip:{parsed}"


class RateLimit:
    def __init__(
        self,
        app: ASGIApp,
        *,
        kv: KvStore | None,
        rate: int,
        burst: int | None = None,
        worker: bool = False,
        trust_proxy: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive; leave the layer out to turn limiting off")
        self.app = app
        self.kv = kv
        self.burst = burst_for(rate, burst)
        self.per_second = rate / 60
        self.ttl = max(MIN_TTL_S, math.ceil(self.burst / self.per_second) + 1)
        self.worker = worker
        self.trust_proxy = trust_proxy
        self.clock = clock
        self._limit_header = str(self.burst).encode()
        self._local: dict[str, Bucket] = {}  # kv=None: insertion order is last use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = canonical_path(scope["path"])
        if not is_api(path) or path == HEALTH_PATH or is_preflight(scope):
            await self.app(scope, receive, send)
            return
        allowed, remaining, retry_after = await self.take(
            _who(scope, worker=self.worker, trust_proxy=self.trust_proxy)
        )
        limit_headers = [
            (b"x-ratelimit-limit", self._limit_header),
            (b"x-ratelimit-remaining", str(remaining).encode()),
        ]
        if not allowed:
            error = VidError(
                ErrorCode.RATE_LIMITED,
                f"Too many requests: at most {self.burst} at once "
                f"and {round(self.per_second * 60)} a minute.",
                hint=f"Wait {retry_after} s (Retry-After), then repeat the call; spread requests out.",
                retry_after=retry_after,
            )
            await send_error(
                send,
                error,
                headers=[(k.decode(), v.decode()) for k, v in limit_headers],
                head=scope.get("method") == "HEAD",
            )
            return

        add_headers(scope, limit_headers)  # the outer layer puts them on whatever answers inside
        await self.app(scope, receive, send)

    async def take(self, who: str) -> tuple[bool, int, int]:
        """Take a token from ``who``'s bucket: ``(allowed, whole tokens left, retry-after seconds)``."""
        key = KEY_PREFIX + who
        now = self.clock()
        if self.kv is None:
            return self._take_local(key, now)
        try:
            raw = await self.kv.get(key)
        except Exception:
            log.warning("rate limiter: reading %s failed; letting the request through", key, exc_info=True)
            return True, self.burst - 1, 0
        allowed, tokens, remaining, retry_after = self._spend(self._load(raw, now), now)
        if not allowed:
            return False, remaining, retry_after
        try:
            await self.kv.put(key, _encode(Bucket(tokens=tokens, at=now)).decode(), ttl=self.ttl)
        except Exception:
            log.warning("rate limiter: writing %s failed", key, exc_info=True)
        return True, remaining, 0

    def _take_local(self, key: str, now: float) -> tuple[bool, int, int]:
        """``take`` against the in-process buckets; a rejection changes nothing, as with KV."""
        buckets = self._local
        bucket = buckets.pop(key, None) or Bucket(tokens=float(self.burst), at=now)
        allowed, tokens, remaining, retry_after = self._spend(bucket, now)
        buckets[key] = Bucket(tokens=tokens, at=now) if allowed else bucket
        if len(buckets) > MAX_LOCAL:
            self._prune(now)
        return allowed, remaining, retry_after

    def _prune(self, now: float) -> None:
        """Drop buckets idle past the TTL (full again), then the least recently used, to ``MAX_LOCAL``."""
        buckets = self._local
        for key in [key for key, bucket in buckets.items() if now - bucket.at > self.ttl]:
            del buckets[key]
        while len(buckets) > MAX_LOCAL:
            del buckets[next(iter(buckets))]

    def _spend(self, bucket: Bucket, now: float) -> tuple[bool, float, int, int]:
        """``bucket`` refilled to ``now`` less one token: ``(allowed, tokens after, whole tokens
        left, retry-after seconds)``."""
        tokens = min(float(self.burst), bucket.tokens + max(0.0, now - bucket.at) * self.per_second)
        if tokens < 1:
            return False, tokens, 0, max(1, math.ceil((1 - tokens) / self.per_second))
        tokens -= 1
        return True, tokens, int(tokens + 1e-9), 0

    def _load(self, raw: Any, now: float) -> Bucket:
        if raw:
            try:
                return _decode(raw)
            except msgspec.DecodeError:
                pass
        return Bucket(tokens=float(self.burst), at=now)
