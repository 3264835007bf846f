"""An async context entered and left by a task of its own: ``Held.enter(factory)``, ``held.leave()``.

anyio task groups (Litestar's lifespan, the MCP SDK's session manager) must be left by the task
that entered them. Where the code that starts such a context is not the code that ends it (on the
Worker, one request's lifespan starts it and another's ends it; the first MCP message starts the
session manager and the app's lifespan ends it), a dedicated task enters it, waits, and leaves it
when told, so entering and leaving always happen in the same task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

__all__ = ["Held"]


class Held:
    """A context being held open by its task; ``leave()`` closes it and waits until it is closed."""

    def __init__(self, task: asyncio.Task[None], leave: asyncio.Event) -> None:
        self._task = task
        self._leave = leave

    @classmethod
    async def enter(cls, factory: Callable[[], AbstractAsyncContextManager[object]]) -> Held:
        """Enter ``factory()`` in a new task; a failing entry is raised here, to the caller."""
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        leave = asyncio.Event()
        task = asyncio.ensure_future(_hold(factory, started, leave))
        await started
        return cls(task, leave)

    async def leave(self) -> None:
        """Leave the context; a failing exit is raised here, to the caller."""
        self._leave.set()
        await self._task


async def _hold(
    factory: Callable[[], AbstractAsyncContextManager[object]],
    started: asyncio.Future[None],
    leave: asyncio.Event,
) -> None:
    try:
        async with factory():
            started.set_result(None)
            await leave.wait()
    except BaseException as error:
        if started.done():
            raise
        started.set_exception(error)
