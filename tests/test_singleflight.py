"""Identical concurrent work runs once; a waiter's deadline is its own."""

from __future__ import annotations

import asyncio

import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.singleflight import SingleFlight


def test_concurrent_callers_share_one_run() -> None:
    async def scenario() -> None:
        flights: SingleFlight[int] = SingleFlight()
        runs = 0
        gate = asyncio.Event()

        async def work() -> int:
            nonlocal runs
            runs += 1
            await gate.wait()
            return 42

        waiters = [asyncio.ensure_future(flights.run("k", work)) for _ in range(20)]
        await asyncio.sleep(0)
        assert flights.in_flight == 1
        gate.set()
        assert await asyncio.gather(*waiters) == [42] * 20
        assert runs == 1
        assert flights.in_flight == 0

    asyncio.run(scenario())


def test_errors_reach_every_waiter_as_their_own_copy() -> None:
    async def scenario() -> None:
        flights: SingleFlight[int] = SingleFlight()
        gate = asyncio.Event()

        async def work() -> int:
            await gate.wait()
            raise VidError(ErrorCode.NOT_FOUND, "gone", hint="check it")

        waiters = [asyncio.ensure_future(flights.run("k", work)) for _ in range(3)]
        await asyncio.sleep(0)
        gate.set()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert all(isinstance(r, VidError) and r.code is ErrorCode.NOT_FOUND for r in results)
        assert len({id(r) for r in results}) == 3

    asyncio.run(scenario())


def test_a_waiter_giving_up_does_not_cancel_the_run() -> None:
    async def scenario() -> None:
        flights: SingleFlight[str] = SingleFlight()
        gate = asyncio.Event()

        async def work() -> str:
            await gate.wait()
            return "done"

        impatient = asyncio.ensure_future(flights.run("k", work, wait=0))
        patient = asyncio.ensure_future(flights.run("k", work))
        with pytest.raises(TimeoutError):
            await impatient
        gate.set()
        assert await patient == "done"

    asyncio.run(scenario())


def test_different_keys_run_separately() -> None:
    async def scenario() -> None:
        flights: SingleFlight[str] = SingleFlight()

        async def work(value: str) -> str:
            await asyncio.sleep(0)
            return value

        results = await asyncio.gather(
            flights.run("a", lambda: work("a")), flights.run("b", lambda: work("b"))
        )
        assert results == ["a", "b"]

    asyncio.run(scenario())


def test_the_run_is_handed_off_once_and_outlives_a_caller_that_gave_up() -> None:
    """On the Worker ``hand_off`` is ``waitUntil``: the run it gets must be the one that finishes
    (and saves its result) after the only caller timed out."""

    async def scenario() -> None:
        flights: SingleFlight[int] = SingleFlight()
        handed: list[asyncio.Task[int]] = []
        gate = asyncio.Event()

        async def work() -> int:
            await gate.wait()
            return 7

        callers = [asyncio.ensure_future(flights.run("k", work, hand_off=handed.append)) for _ in range(3)]
        await asyncio.sleep(0)
        assert len(handed) == 1  # one run, handed off once, by the caller that started it
        with pytest.raises(TimeoutError):
            await flights.run("k", work, wait=0.01, hand_off=handed.append)
        gate.set()
        assert await handed[0] == 7
        assert await asyncio.gather(*callers) == [7, 7, 7]
        assert len(handed) == 1

    asyncio.run(scenario())
