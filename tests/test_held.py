"""``held.Held``: a context entered and left by one task of its own, whoever starts and stops it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from vid2context.held import Held

pytestmark = pytest.mark.anyio


async def test_a_task_group_entered_by_one_caller_can_be_left_from_another_task() -> None:
    """The case it exists for: without it, leaving an anyio task group from another task fails."""
    events: list[str] = []

    @asynccontextmanager
    async def with_task_group() -> AsyncIterator[None]:
        async with anyio.create_task_group():
            events.append("entered")
            yield
        events.append("left")

    held = await asyncio.create_task(Held.enter(with_task_group))  # entered on behalf of one task
    await asyncio.create_task(held.leave())  # left on behalf of another
    assert events == ["entered", "left"]


async def test_a_failing_entry_is_raised_to_the_caller_of_enter() -> None:
    @asynccontextmanager
    async def broken() -> AsyncIterator[None]:
        raise RuntimeError("cannot start")
        yield  # pragma: no cover

    with pytest.raises(RuntimeError, match="cannot start"):
        await Held.enter(broken)


async def test_a_failing_exit_is_raised_to_the_caller_of_leave() -> None:
    @asynccontextmanager
    async def fails_on_exit() -> AsyncIterator[None]:
        yield
        raise RuntimeError("cannot stop")

    held = await Held.enter(fails_on_exit)
    with pytest.raises(RuntimeError, match="cannot stop"):
        await held.leave()
