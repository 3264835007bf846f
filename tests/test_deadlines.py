"""The request timeout with one timer for every request in flight (``middleware/deadlines.py``):
each request that has not started its answer by its deadline is answered ``504 timeout``, in
the order they came, never before its deadline; the ones that answer in time, and the ones the
server cancels (client gone), are passed on as they were and leave nothing behind; one ``Limits``
serves one loop after another."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from vid2context.api.middleware.limits import Limits

TIMEOUT_S = 0.05


def _scope(name: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/test",
        "raw_path": b"/api/v1/test",
        "query_string": name.encode(),
        "headers": [],
        "state": {},
    }


class Inner:
    """An ASGI app whose requests named in ``instant`` answer at once (no await that suspends, so
    however slow the machine no deadline can come first) and the others never."""

    def __init__(self, instant: frozenset[str] = frozenset()) -> None:
        self.instant = instant
        self.entered: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        name = scope["query_string"].decode()
        self.entered.setdefault(name, asyncio.Event()).set()
        try:
            if name not in self.instant:
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(name)
            raise
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name.encode()})


async def _call(app: Limits, name: str, answers: list[tuple[str, int, float, float]]) -> None:
    scope = _scope(name)
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            sent.append((message["status"], time.monotonic()))
        elif message["type"] == "http.response.body" and sent[0][0] == 504:
            assert json.loads(message["body"])["error"]["code"] == "timeout"

    await app(scope, receive, send)
    ((status, at),) = sent
    answers.append((name, status, at, scope["state"]["deadline"]))


async def _one_loop(app: Limits) -> None:
    inner = app.app = Inner(frozenset({"b", "d"}))
    answers: list[tuple[str, int, float, float]] = []
    async with asyncio.timeout(60):  # a timer never armed again fails here rather than hangs
        await asyncio.gather(*(_call(app, name, answers) for name in ("a", "b", "d", "e")))
    assert [(name, status) for name, status, _, _ in answers] == [
        ("b", 200),
        ("d", 200),
        ("a", 504),
        ("e", 504),
    ]
    resolution = time.get_clock_info("monotonic").resolution
    assert all(at >= deadline - resolution for _, status, at, deadline in answers if status == 504)
    assert sorted(inner.cancelled) == ["a", "e"]
    assert app._deadlines is not None and len(app._deadlines) == 0  # nothing kept for them


def test_each_late_request_is_504_in_order_and_the_rest_pass_as_they_were() -> None:
    app = Limits(Inner(), max_body_bytes=0, timeout_s=TIMEOUT_S)
    asyncio.run(_one_loop(app))


def test_one_limits_times_requests_on_one_loop_after_another() -> None:
    app = Limits(Inner(), max_body_bytes=0, timeout_s=TIMEOUT_S)
    asyncio.run(_one_loop(app))
    first = app._deadlines
    asyncio.run(_one_loop(app))
    assert app._deadlines is not first


def test_a_request_the_server_cancels_is_passed_on_and_leaves_the_others_timed() -> None:
    async def cancel_one() -> None:
        app = Limits(Inner(), max_body_bytes=0, timeout_s=3600)  # nothing here is let to time out
        answers: list[tuple[str, int, float, float]] = []
        gone = asyncio.create_task(_call(app, "gone", answers))
        kept = asyncio.create_task(_call(app, "kept", answers))
        for name in ("gone", "kept"):
            await app.app.entered.setdefault(name, asyncio.Event()).wait()
        assert app._deadlines is not None and len(app._deadlines) == 2
        gone.cancel()  # what a server does when the client goes away
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert len(app._deadlines) == 1 and app.app.cancelled == ["gone"] and not answers
        kept.cancel()
        with pytest.raises(asyncio.CancelledError):
            await kept
        assert len(app._deadlines) == 0 and not answers

    asyncio.run(cancel_one())


def test_requests_after_a_quiet_spell_are_timed_again() -> None:
    """The timer is armed again once the dict has emptied and a request comes."""

    async def two_spells() -> None:
        app = Limits(Inner(), max_body_bytes=0, timeout_s=TIMEOUT_S)
        for _ in range(2):
            inner = app.app = Inner()
            answers: list[tuple[str, int, float, float]] = []
            async with asyncio.timeout(60):  # rather than hang
                await _call(app, "late", answers)
            assert [(name, status) for name, status, _, _ in answers] == [("late", 504)]
            assert inner.cancelled == ["late"]

    asyncio.run(two_spells())
