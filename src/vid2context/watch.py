"""Watch lists: refresh the collections whose ``Schedule`` is due, each as a queued ``refresh`` job.

One function, ``refresh_due``, serves every trigger: the Worker's Cron Trigger (``scheduled`` in
``worker/entry.py``), the scheduler ``vid2context serve`` runs in-process (``scheduler_loop``)
and ``vid2context refresh --due`` for a system cron. Triggers may overlap (two cron events, a
laptop's serve and its crontab), so a due time is claimed first (``WatchClaims``): only the
claimant submits the refresh. The claim is for the collection's next due time, computed from its
last refresh (``checkedAt``), so once that refresh has run the next due time is later and can be
claimed again; a claim older than ``STALE_CLAIM`` (a refresh that died) can be taken over.

What a refresh added is its job's result (``CollectionResult.summary.added``): the video
summaries, in order, which later webhooks and MCP notifications announce.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from .collections_io import watch_of
from .errors import VidError

if TYPE_CHECKING:
    from .jobs import Job
    from .runtime import Runtime

__all__ = [
    "STALE_CLAIM",
    "KvClaims",
    "WatchClaims",
    "WithScheduler",
    "due_now",
    "refresh_due",
    "scheduler_loop",
]

log = logging.getLogger("vid2context.watch")

STALE_CLAIM = timedelta(hours=6)
TICK_S = 60.0
"""How often the in-process scheduler looks for due lists."""


class WatchClaims(Protocol):
    async def claim(self, collection_id: str, due_at: str, now: str, stale_before: str) -> bool:
        """Claim ``due_at`` of the collection; True for exactly one caller per due time (until
        the claim is older than ``stale_before``)."""
        ...


class KvClaims:
    """Claims on the KV's atomic ``incr``: the first to count 1 wins (the local SQLite KV counts
    in one transaction, across processes). Kept for ``STALE_CLAIM``, then claimable again."""

    def __init__(self, kv: Any) -> None:
        self._kv = kv

    async def claim(self, collection_id: str, due_at: str, now: str, stale_before: str) -> bool:
        key = f"watch:{collection_id}:{due_at}"
        return await self._kv.incr(key, ttl=int(STALE_CLAIM.total_seconds())) == 1


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def due_now(runtime: Runtime, now: datetime) -> list[tuple[str, str]]:
    """``(collection id, due time)`` of every enabled watch list due at ``now``."""
    due: list[tuple[str, str]] = []
    for collection in await runtime.storage.list_collections():
        watch = watch_of(collection)
        at = watch.state.next_due_at if watch is not None else None
        if at is not None and at <= _stamp(now):
            due.append((collection.id, at))
    return due


async def refresh_due(runtime: Runtime, *, now: datetime | None = None) -> list[Job]:
    """Submit one ``refresh`` job per due watch list this call claims; the jobs submitted."""
    now = now or datetime.now(UTC)
    claims: WatchClaims = runtime.claims if runtime.claims is not None else KvClaims(runtime.kv)
    jobs: list[Job] = []
    for collection_id, due_at in await due_now(runtime, now):
        if not await claims.claim(collection_id, due_at, _stamp(now), _stamp(now - STALE_CLAIM)):
            continue
        try:
            jobs.append(await runtime.jobs.submit(runtime, "refresh", collection_id, {}))
        except VidError as error:  # deleted meanwhile, or the queue is shutting down
            log.warning("watch: refresh of %s not submitted: %s", collection_id, error.code.value)
    return jobs


async def scheduler_loop(
    runtime: Runtime, *, tick_s: float = TICK_S, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
) -> None:
    """``refresh_due`` every ``tick_s`` until canceled; a failing round is logged, never fatal."""
    while True:
        try:
            await refresh_due(runtime)
        except Exception:
            log.exception("watch: a scheduler round failed")
        await sleep(tick_s)


class WithScheduler:
    """An ASGI app with the scheduler running for as long as its lifespan (``vid2context serve``):
    started at ``lifespan.startup``, stopped at ``lifespan.shutdown``."""

    def __init__(self, app: Any, runtime: Runtime, *, tick_s: float = TICK_S) -> None:
        self.app = app
        self.runtime = runtime
        self.tick_s = tick_s
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def watched() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "lifespan.startup" and self._task is None:
                self._task = asyncio.ensure_future(scheduler_loop(self.runtime, tick_s=self.tick_s))
            elif message["type"] == "lifespan.shutdown" and self._task is not None:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
                self._task = None
            return message

        await self.app(scope, watched, send)
