"""Hosted mode's daily quotas: videos read and speech-to-text minutes per account, videos per address.

A *video read* is a ``pipeline.get_context`` that goes to the platform: a library copy costs
nothing and is not counted (it is what makes a hosted server cheap to share). A *speech-to-text
minute* is a minute of audio the STT ladder (``pipeline.transcribe``) turned into a transcript:
the audio's probed length, else where its last segment ends, counted after a rung answered, and
checked before any rung starts. Both hooks are one line in the pipeline, through ``Ctx.meter``,
which the accounts layer sets for the request (``ctx.METER``).

Counters are KV values ``quota:<UTC day>:<who>:<what>`` with a two-day TTL, so a day's counters
vanish on their own; ``<who>`` is ``acct:<id>`` or ``addr:<address>`` (IPv6 by its /64, as the rate
limiter buckets). Read, compared and then incremented: not atomic across Worker isolates (KV has no
compare-and-set), so a burst can overshoot by a few, which is fine for a daily allowance. Over a
limit is ``rate-limited`` with ``Retry-After`` the seconds to 00:00 UTC. A KV outage lets the call
through with a warning: the meter must not become an outage of the service.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from ..errors import ErrorCode, VidError
from ..settings import Settings
from ..storage.base import KvStore
from .accounts import Usage, UsageCounts, UsageLimits

__all__ = ["Meter", "Quotas", "day_period"]

log = logging.getLogger("vid2context.api")

TTL_S = 2 * 86_400


def day_period(now: float) -> tuple[str, int]:
    """The UTC day of ``now`` (``2026-12-01``) and the whole seconds until it ends (at least 1)."""
    moment = datetime.fromtimestamp(now, UTC)
    midnight = datetime(moment.year, moment.month, moment.day, tzinfo=UTC) + timedelta(days=1)
    return moment.strftime("%Y-%m-%d"), max(1, math.ceil((midnight - moment).total_seconds()))


def _limit(value: int) -> int | None:
    return value or None


class Quotas:
    """The limits of ``settings`` over the counters in ``kv``."""

    def __init__(self, kv: KvStore, settings: Settings, *, clock: Callable[[], float] = time.time) -> None:
        self.kv = kv
        self.limits = UsageLimits(
            videos=_limit(settings.quota_videos),
            stt_minutes=_limit(settings.quota_stt_minutes),
            address_videos=_limit(settings.quota_address_videos),
        )
        self.clock = clock

    def meter(self, account_id: str, address: str) -> Meter:
        return Meter(self, account_id, address)

    def _key(self, who: str, what: str) -> tuple[str, int]:
        day, left = day_period(self.clock())
        return f"quota:{day}:{who}:{what}", left

    async def _read(self, key: str) -> int:
        try:
            raw = await self.kv.get(key)
        except Exception:
            log.warning("quotas: reading %s failed; not counting", key, exc_info=True)
            return 0
        try:
            return int(raw or 0)
        except ValueError:
            return 0

    async def _add(self, key: str, amount: int) -> None:
        try:
            await self.kv.incr(key, amount, ttl=TTL_S)
        except Exception:
            log.warning("quotas: counting %s failed", key, exc_info=True)

    async def usage(self, account_id: str) -> Usage:
        day, left = day_period(self.clock())
        videos = await self._read(f"quota:{day}:acct:{account_id}:videos")
        seconds = await self._read(f"quota:{day}:acct:{account_id}:stt-seconds")
        return Usage(
            period=day,
            used=UsageCounts(videos=videos, stt_minutes=math.ceil(seconds / 60)),
            limits=self.limits,
            resets_in_sec=left,
        )


def _over(what: str, limit: int, retry_after: int) -> VidError:
    return VidError(
        ErrorCode.RATE_LIMITED,
        f"The daily quota of {limit} {what} is used up.",
        hint=f"Tell the user this account's quota resets at 00:00 UTC, in {retry_after} s (Retry-After); "
        "library copies of videos already read stay free; do not retry before then.",
        retry_after=retry_after,
    )


class Meter:
    """One caller's counters for one request (``Ctx.meter``)."""

    def __init__(self, quotas: Quotas, account_id: str, address: str) -> None:
        self.quotas = quotas
        self.account = f"acct:{account_id}"
        self.address = f"addr:{address}"

    async def video_read(self) -> None:
        """Count a video read from its platform; ``rate-limited`` when the account's or the
        address's day is used up (then nothing is counted)."""
        limits = self.quotas.limits
        checks = [
            (self.account, limits.videos, "videos"),
            (self.address, limits.address_videos, "videos from this address"),
        ]
        keys = []
        for who, limit, what in checks:
            key, left = self.quotas._key(who, "videos")
            if limit is not None and await self.quotas._read(key) >= limit:
                raise _over(what, limit, left)
            keys.append(key)
        for key in keys:
            await self.quotas._add(key, 1)

    async def stt_allowed(self) -> None:
        """``rate-limited`` when the account's speech-to-text minutes of the day are used up."""
        limit = self.quotas.limits.stt_minutes
        if limit is None:
            return
        key, left = self.quotas._key(self.account, "stt-seconds")
        if await self.quotas._read(key) >= limit * 60:
            raise _over("speech-to-text minutes", limit, left)

    async def stt_used(self, seconds: float) -> None:
        """Count ``seconds`` of audio transcribed (rounded up to a whole second); never raises."""
        if seconds > 0:
            key, _ = self.quotas._key(self.account, "stt-seconds")
            await self.quotas._add(key, math.ceil(seconds))
