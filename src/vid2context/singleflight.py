"""One upstream run for identical concurrent requests.

Twenty agents asking for the same video at once must cost one watch page, one player call and one
caption download. The first caller starts the run as a task of its own; later callers with the
same key wait on it. Each waiter waits with its own deadline, and the run is shielded, so one
caller giving up neither cancels the run nor fails the others. A run can outlive every caller (its
result is still saved), so where the platform only keeps tasks alive on request (the Worker's
``waitUntil``) the new task is handed to ``hand_off``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

from .errors import VidError

__all__ = ["SingleFlight"]

T = TypeVar("T")


class SingleFlight(Generic[T]):
    def __init__(self) -> None:
        self._runs: dict[Hashable, asyncio.Task[T]] = {}

    @property
    def in_flight(self) -> int:
        return len(self._runs)

    async def run(
        self,
        key: Hashable,
        work: Callable[[], Awaitable[T]],
        *,
        wait: float | None = None,
        hand_off: Callable[[asyncio.Task[T]], Any] | None = None,
    ) -> T:
        """Result of ``work()``, shared with every concurrent call for ``key``.

        ``wait`` bounds how long this caller waits (seconds); on expiry ``TimeoutError`` is
        raised here while the run goes on for the others. ``hand_off`` receives the run's task
        when this call starts it (``Runtime.hand_off``).
        """
        task = self._runs.get(key)
        if task is None:
            task = asyncio.ensure_future(work())
            self._runs[key] = task
            task.add_done_callback(lambda done, key=key: self._forget(key, done))
            if hand_off is not None:
                hand_off(task)
        try:
            result = await asyncio.wait_for(asyncio.shield(task), wait)
        except VidError as error:
            # Every waiter gets its own copy: one exception object raised in many tasks would
            # grow a traceback that mixes their stacks.
            raise VidError(
                error.code,
                error.message,
                hint=error.hints,
                attempts=error.attempts,
                retry_after=error.retry_after,
            ) from None
        return result

    def _forget(self, key: Hashable, done: asyncio.Task[T]) -> None:
        if self._runs.get(key) is done:
            del self._runs[key]
        if not done.cancelled():
            done.exception()  # mark retrieved: a run nobody waits for any more must not warn
