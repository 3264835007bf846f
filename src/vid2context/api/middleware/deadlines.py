"""The timeouts of every request in flight on one event loop, with one timer between them.

``Limits`` (``limits.py``) gave each request a ``loop.call_later`` of its own, cancelled when it
ended: under wrk making, heaping and cancelling those handles was a tenth of a cached read's time
in the loop. Every request of one ``Limits`` has the same timeout, so deadlines come in the order
requests arrived: the requests in flight, in a dict in that order, and one timer armed for the
oldest. When it fires, the ones due are expired, oldest first (what each one's own timer did),
and it is armed again for the oldest left; a request that ends leaves the dict, so nothing is
kept for it. An expiry runs at the loop time its own timer would have run at: ``call_at`` of the
same deadline, and due is what ``asyncio`` counts as due (before now plus the clock's resolution).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["Deadlines"]

_RESOLUTION = time.get_clock_info("monotonic").resolution  # what asyncio's loop adds to its clock


class Deadlines:
    """The timed requests of one loop, oldest first, each by its expiry, and the one timer."""

    __slots__ = ("_live", "_timer", "loop", "timeout")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.timeout = timeout
        self._live: dict[Callable[[], None], float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, expire: Callable[[], None]) -> None:
        """Time a request from now: ``expire`` runs at its deadline unless ``discard`` comes first."""
        when = self.loop.time() + self.timeout
        self._live[expire] = when
        if self._timer is None:
            self._timer = self.loop.call_at(when, self._fire)

    def discard(self, expire: Callable[[], None]) -> None:
        self._live.pop(expire, None)

    def __len__(self) -> int:
        return len(self._live)

    def _fire(self) -> None:
        self._timer = None
        live = self._live
        try:
            due_before = self.loop.time() + _RESOLUTION
            while live:
                expire, when = next(iter(live.items()))
                if when >= due_before:
                    break
                del live[expire]
                expire()
        finally:
            if live:
                self._timer = self.loop.call_at(next(iter(live.values())), self._fire)
