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
    """An ASGI app whose requests answer when the test says so (``release``), or never."""

    def __init__(self) -> None:
        self.go: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []

    def release(self, name: str) -> None:
        self.go[name].set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        name = scope["query_string"].decode()
        self.entered.setdefault(name, asyncio.Event()).set()
        try:
            await self.go.setdefault(name, asyncio.Event()).wait()
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


async def _requests(
    app: Limits, inner: Inner
) -> tuple[list[tuple[str, int, float, float]], asyncio.Task[None]]:
    answers: list[tuple[str, int, float, float]] = []
    names = ["a", "b", "c", "d", "e"]
    tasks = {name: asyncio.create_task(_call(app, name, answers)) for name in names}
    for name in names:
        await inner.entered.setdefault(name, asyncio.Event()).wait()
    inner.release("b")
    inner.release("d")
    tasks["c"].cancel()  # what a server does when the client goes away
    await asyncio.gather(tasks["a"], tasks["b"], tasks["d"], tasks["e"])
    return answers, tasks["c"]


async def _one_loop(app: Limits) -> None:
    inner = app.app = Inner()
    async with asyncio.timeout(60):  # a timer never armed again fails here rather than hangs
        answers, cancelled = await _requests(app, inner)
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert [(name, status) for name, status, _, _ in answers] == [
        ("b", 200),
        ("d", 200),
        ("a", 504),
        ("e", 504),
    ]
    resolution = time.get_clock_info("monotonic").resolution
    assert all(at >= deadline - resolution for _, status, at, deadline in answers if status == 504)
    assert sorted(inner.cancelled) == ["a", "c", "e"]
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
