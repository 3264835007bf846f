"""A rendezvous for concurrency tests: no sleep standing in for "long enough for the others".

A test that wants to see ``n`` calls in flight at once used to make each call sleep a little and
hope the others arrived meanwhile; on a loaded machine they need not, and the test failed with the
code right. ``Together(n)`` holds every call until ``n`` are inside at once, then lets them all go
and holds nothing more: the peak reaches ``n`` whatever the machine's speed, and a client that
sends more than ``n`` still shows it (the ones it sends while the first are held are counted).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

__all__ = ["GUARD_S", "Together", "TogetherThreads"]

GUARD_S = 60.0
"""How long a call waits for the others before it gives up and fails (a client that never sends
``n`` at once is a bug); no correct run comes near it."""


class Together:
    """The rendezvous for calls on one event loop (pytest-httpx callbacks, stand-in services)."""

    def __init__(self, n: int, *, guard_s: float = GUARD_S) -> None:
        self.n = n
        self.guard_s = guard_s
        self.in_flight = 0
        self.peak = 0
        self._open = asyncio.Event()

    @asynccontextmanager
    async def inside(self) -> AsyncIterator[None]:
        """Count this call in flight; return once ``n`` were in flight together (or ever were)."""
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.in_flight >= self.n:
                self._open.set()
            await asyncio.wait_for(self._open.wait(), self.guard_s)
            yield
        finally:
            self.in_flight -= 1


class TogetherThreads:
    """The same for calls on threads (the fake Whisper server answers each request on its own)."""

    def __init__(self, n: int, *, guard_s: float = GUARD_S) -> None:
        self.n = n
        self.guard_s = guard_s
        self.in_flight = 0
        self.peak = 0
        self._opened = False
        self._changed = threading.Condition()

    @contextmanager
    def inside(self) -> Iterator[None]:
        with self._changed:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.in_flight >= self.n:
                self._opened = True
                self._changed.notify_all()
            if not self._changed.wait_for(lambda: self._opened, self.guard_s):
                self.in_flight -= 1
                raise TimeoutError(f"{self.n} calls were never in flight at once")
        try:
            yield
        finally:
            with self._changed:
                self.in_flight -= 1
