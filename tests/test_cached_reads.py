"""The front that answers rendered transcripts before Litestar (``api/cached_reads.py``) answers
exactly what Litestar's handler answers.

Two real apps over two SQLite runtimes with the same settings, each having read the same replayed
video twice (the second read is the library's, so it is kept): one with the front, one with
``front=False`` (every request through Litestar's router and handler). Every request goes to
both, and the answers must be the same: status, every header but ``date`` and the request id's
value, and the body byte for byte; and the access log lines the same but for time and id. The
front's own count says which answers it made, so a case meant to be a hit is known to be one and
a case meant for Litestar is known to have gone there.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.api import create_app
from vid2context.api.cached_reads import MAX_QUERY_BYTES

from .runtimes import Runtimes, serve
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("runtime_kind", ["sqlite"], indirect=True)]

PATH = "/api/v1/transcript"
QUERY = "url=GJLlxj_dtq8&format=srt"
KEY = "plain-key-for-tests"
READ_KEY = "read-key-for-tests"
ORIGIN = "https://app.example"
SETTINGS = {
    "VID2CONTEXT_API_KEYS": f"{KEY},reader:read:{hashlib.sha256(READ_KEY.encode()).hexdigest()}",
    "VID2CONTEXT_CORS_ORIGINS": ORIGIN,
    "VID2CONTEXT_RATE_LIMIT": "1",  # a token a minute: X-RateLimit-Remaining counts requests alone
    "VID2CONTEXT_RATE_BURST": "100000",
}
AUTH = {"authorization": f"Bearer {KEY}"}
_UNCOMPARED = {"date", "x-request-id"}


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


class Pair:
    """The app with the front (``fast``) and the one without (``slow``)."""

    def __init__(self, fast: httpx.AsyncClient, slow: httpx.AsyncClient, front: Any) -> None:
        self.fast, self.slow, self.front = fast, slow, front

    async def both(self, method: str, target: str, headers: dict[str, str] | None = None) -> httpx.Response:
        """``method target`` sent to both apps; their answers compared; the front's answer."""
        answers = [
            await client.request(method, target, headers=headers or {}) for client in (self.fast, self.slow)
        ]
        fast, slow = (_comparable(answer) for answer in answers)
        assert fast == slow, (method, target, headers)
        return answers[0]

    async def hit(self, method: str, target: str, headers: dict[str, str] | None = None) -> httpx.Response:
        """``both``, where the front must have answered."""
        before = self.front.answered
        answer = await self.both(method, target, headers)
        assert self.front.answered == before + 1, (method, target, headers)
        return answer

    async def passed(self, method: str, target: str, headers: dict[str, str] | None = None) -> httpx.Response:
        """``both``, where Litestar must have answered."""
        before = self.front.answered
        answer = await self.both(method, target, headers)
        assert self.front.answered == before, (method, target, headers)
        return answer


def _comparable(answer: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes, bool]:
    headers = [(name, value) for name, value in answer.headers.multi_items() if name not in _UNCOMPARED]
    return answer.status_code, headers, answer.content, "x-request-id" in answer.headers


async def _pair(runtimes: Runtimes, settings: dict[str, str], opened: AsyncExitStack) -> Pair:
    clients = []
    apps = []
    for front in (True, False):
        app = create_app(await runtimes.build(settings), front=front)
        apps.append(app)
        clients.append(await opened.enter_async_context(serve(app)))
    return Pair(clients[0], clients[1], apps[0].state.cached_reads)


@pytest.fixture
async def pair(youtube: HTTPXMock, runtimes: Runtimes) -> AsyncIterator[Pair]:
    async with AsyncExitStack() as opened:
        served = await _pair(runtimes, SETTINGS, opened)
        assert served.front is not None
        for _ in range(2):  # from YouTube, then from the library: kept
            await served.passed("GET", f"{PATH}?{QUERY}", AUTH)
        yield served


async def test_a_hit_is_the_handlers_answer_byte_for_byte(pair: Pair) -> None:
    answer = await pair.hit("GET", f"{PATH}?{QUERY}", AUTH)
    assert answer.status_code == 200
    assert answer.text.startswith("1\n00:00:00")
    assert answer.headers["etag"] and answer.headers["x-ratelimit-limit"]
    for query in ("format=srt&url=GJLlxj_dtq8", f"{QUERY}&mode=auto", f"{QUERY}&timestamps=0"):
        await pair.hit("GET", f"{PATH}?{query}", AUTH)  # the same key: the defaults spelt out
    for query in (f"{QUERY}&timestamps=1", f"{QUERY}&lang=en", f"{QUERY}&speakers=0", "url=GJLlxj_dtq8"):
        await pair.passed("GET", f"{PATH}?{query}", AUTH)  # other keys: read by Litestar, kept
        await pair.hit("GET", f"{PATH}?{query}", AUTH)


async def test_auth_and_scopes_are_the_same(pair: Pair) -> None:
    target = f"{PATH}?{QUERY}"
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic abc"}):
        answer = await pair.passed("GET", target, headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
    assert (await pair.hit("GET", target, {"authorization": f"Bearer {READ_KEY}"})).status_code == 200
    assert (await pair.hit("GET", target, {"x-api-key": KEY} | AUTH)).status_code == 200


async def test_cors_preflights_and_simple_requests_are_the_same(pair: Pair) -> None:
    target = f"{PATH}?{QUERY}"
    preflight = {"origin": ORIGIN, "access-control-request-method": "GET"}
    answer = await pair.passed("OPTIONS", target, preflight)
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    answer = await pair.hit("GET", target, {"origin": ORIGIN} | AUTH)
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    answer = await pair.hit("GET", target, {"origin": "https://elsewhere.example"} | AUTH)
    assert "access-control-allow-origin" not in answer.headers


async def test_if_none_match_and_other_methods_are_the_same(pair: Pair) -> None:
    target = f"{PATH}?{QUERY}"
    etag = (await pair.hit("GET", target, AUTH)).headers["etag"]
    for tag in (etag, f"W/{etag}", "*", f'"other", {etag}'):
        answer = await pair.hit("GET", target, {"if-none-match": tag} | AUTH)
        assert answer.status_code == 304 and answer.content == b"" and answer.headers["etag"] == etag
    assert (await pair.hit("GET", target, {"if-none-match": '"other"'} | AUTH)).status_code == 200
    for method in ("HEAD", "POST", "PUT", "DELETE"):
        await pair.passed(method, target, AUTH)


@pytest.mark.parametrize(
    "query",
    [
        "url=GJLlxj_dtq8&url=GJLlxj_dtq8&format=srt",  # repeated
        "url=GJLlxj_dtq8&format=srt&format=srt",
        f"{QUERY}&unknown=1",
        f"{QUERY}&skip=1",
        f"{QUERY}&translate=1",  # without lang: the handler's 400
        f"{QUERY}&translate=0",
        f"{QUERY}&lang=",  # empty
        f"{QUERY}&mode=nonsense",
        f"{QUERY}&timestamps=perhaps",
        f"{QUERY}&include=everything",
        "url=%zz&format=srt",  # bad percent-encoding
        "url=%E2%28%A1&format=srt",  # not UTF-8
        "url=GJLlxj_dtq8%00&format=srt",
        "format=srt",  # no url
        "url=GJLlxj_dtq8&format=nonsense",
        f"url={'x' * (MAX_QUERY_BYTES + 10)}&format=srt",  # over the front's bound
        f"url={'%41' * 3000}&format=srt",
        "url=GJLlxj_dtq8;format=srt",
        "",
    ],
)
async def test_unusual_queries_go_to_litestar_and_get_its_answer(pair: Pair, query: str) -> None:
    await pair.passed("GET", f"{PATH}?{query}" if query else PATH, AUTH)


async def test_hostile_values_a_hit_may_carry_are_the_same(pair: Pair) -> None:
    """Percent-encoded spellings of a kept query are decoded as Litestar decodes them: one key."""
    for query in (
        "url=GJLlxj%5Fdtq8&format=srt",
        "url=GJLlxj_dtq8&format=s%72t",
        "url=GJLlxj_dtq8&format=srt&",
    ):
        answer = await pair.hit("GET", f"{PATH}?{query}", AUTH)
        assert answer.status_code == 200
    for path in (f"{PATH}/", "/api/v1//transcript", f"{PATH.upper()}"):
        await pair.passed("GET", f"{path}?{QUERY}", AUTH)
    await pair.passed("GET", f"{PATH}?{QUERY}", {"host": "bad host\\"} | AUTH)  # Litestar's 400
    for request_id in ("mine-123", "x" * 200, "bad\nid", "%0d%0aset-cookie: a=b"):
        answer = await pair.hit("GET", f"{PATH}?{QUERY}", {"x-request-id": request_id} | AUTH)
        assert (answer.headers["x-request-id"] == request_id) is (request_id == "mine-123")


async def test_a_rate_limited_read_is_the_same(youtube: HTTPXMock, runtimes: Runtimes) -> None:
    """``Retry-After`` counts whole seconds of the wall clock, so its number is left out."""
    settings = {**SETTINGS, "VID2CONTEXT_RATE_LIMIT": "1", "VID2CONTEXT_RATE_BURST": "3"}
    async with AsyncExitStack() as opened:
        served = await _pair(runtimes, settings, opened)
        target = f"{PATH}?{QUERY}"
        answers: list[list[httpx.Response]] = [[], []]
        for side, client in enumerate((served.fast, served.slow)):
            answers[side] = [await client.get(target, headers=AUTH) for _ in range(4)]
        assert served.front.answered == 1  # the third read
        for fast, slow in zip(*answers, strict=True):
            assert _without_seconds(fast) == _without_seconds(slow)
        assert [answer.status_code for answer in answers[0]] == [200, 200, 200, 429]
        assert int(answers[0][3].headers["retry-after"]) > 0
        assert answers[0][2].headers["x-ratelimit-remaining"] == "0"


def _without_seconds(answer: httpx.Response) -> tuple[object, ...]:
    status, headers, body, has_id = _comparable(answer)
    headers = [(name, "N" if name == "retry-after" else value) for name, value in headers]
    return status, headers, re.sub(rb"Wait \d+ s", b"Wait N s", body), has_id


async def test_the_access_log_lines_are_the_same(
    youtube: HTTPXMock, runtimes: Runtimes, capsys: pytest.CaptureFixture[str]
) -> None:
    async with AsyncExitStack() as opened:
        served = await _pair(runtimes, {**SETTINGS, "VID2CONTEXT_ACCESS_LOG": "1"}, opened)
        for _ in range(2):
            await served.passed("GET", f"{PATH}?{QUERY}", AUTH)
        capsys.readouterr()
        for headers in (AUTH, {}, {"authorization": f"Bearer {READ_KEY}"}, {"if-none-match": "*"} | AUTH):
            await served.both("GET", f"{PATH}?{QUERY}", headers)
        assert served.front.answered == 3
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    kept = [{k: v for k, v in line.items() if k not in {"ts", "ms", "requestId"}} for line in lines]
    assert len(kept) == 8 and kept[0::2] == kept[1::2]
    assert [line["status"] for line in kept[0::2]] == [200, 401, 200, 304]
    assert [line["key"] for line in kept[0::2]] == ["key-1", None, "reader", "key-1"]
