"""The pipeline with the real YouTube provider, answered from recorded responses.

Only the network is replaced (pytest-httpx serves ``youtube_replay.answer``); the runtime,
storage, single-flight and provider are the real ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.pipeline import get_context, get_metadata, list_items
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .youtube_replay import httpx_callback

VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True)
    return httpx_mock


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    rt = build_runtime(load_settings({}), http=httpx.AsyncClient())
    yield rt
    asyncio.run(rt.aclose())


def _paths(mock: HTTPXMock) -> list[str]:
    return [f"{r.method} {urlsplit(str(r.url)).path}" for r in mock.get_requests()]


def test_context_from_captions_records_every_rung(youtube: HTTPXMock, runtime: Runtime) -> None:
    context = asyncio.run(get_context(runtime, VIDEO))
    assert context.id == "youtube:GJLlxj_dtq8"
    assert context.metadata.title.startswith("Surface Go Review")
    assert context.transcript is not None
    assert context.transcript.segments[0].text == "Hey, this is just a test"
    assert context.transcript.producer == "youtube/innertube"
    assert [(a.id, a.stage, a.outcome) for a in context.attempts] == [
        ("youtube", "metadata", "ok"),
        ("youtube", "captions", "ok"),
        ("memory", "save", "ok"),
    ]
    assert context.fetched_at.endswith("Z")


def test_twenty_identical_concurrent_calls_make_one_upstream_run(
    youtube: HTTPXMock, runtime: Runtime
) -> None:
    async def scenario() -> list:
        return await asyncio.gather(*(get_context(runtime, VIDEO) for _ in range(20)))

    results = asyncio.run(scenario())
    assert len({r.transcript.segments[0].text for r in results}) == 1
    paths = _paths(youtube)
    assert paths.count("GET /watch") == 1
    assert paths.count("POST /youtubei/v1/player") == 1
    assert len(paths) <= 4, paths  # watch, player, and the caption download (json3, maybe srv3)


def test_the_upstream_run_is_handed_to_the_platform_to_outlive_its_caller(
    youtube: HTTPXMock, runtime: Runtime
) -> None:
    """On the Worker ``keep_alive`` is ``waitUntil``: a run whose caller timed out still finishes
    and saves its result, as the timeout's hint promises."""
    handed: list[asyncio.Future[object]] = []
    runtime.keep_alive = handed.append

    async def scenario() -> None:
        await get_context(runtime, VIDEO)
        assert len(handed) == 1 and handed[0].done()
        await get_context(runtime, VIDEO)  # from the library: no new run to hand off
        assert len(handed) == 1

    asyncio.run(scenario())


def test_saved_context_answers_without_upstream(youtube: HTTPXMock, runtime: Runtime) -> None:
    asyncio.run(get_context(runtime, VIDEO))
    before = len(youtube.get_requests())
    again = asyncio.run(get_context(runtime, "GJLlxj_dtq8"))
    assert len(youtube.get_requests()) == before
    assert [(a.id, a.stage) for a in again.attempts] == [("memory", "cache")]
    asyncio.run(get_context(runtime, VIDEO, refresh=True))
    assert len(youtube.get_requests()) > before


def test_metadata_only_fetches_no_captions(youtube: HTTPXMock, runtime: Runtime) -> None:
    metadata = asyncio.run(get_metadata(runtime, VIDEO))
    assert metadata.duration_sec == 316
    assert "GET /api/timedtext" not in _paths(youtube)


@pytest.mark.parametrize(
    ("video", "code"),
    [
        ("botCheck001", ErrorCode.BLOCKED),
        ("Njp5uhTorCo", ErrorCode.UNAVAILABLE),
        ("unavailable", ErrorCode.NOT_FOUND),
        ("unplayable1", ErrorCode.UNAVAILABLE),
        ("dsMFmonKDD4", ErrorCode.NO_TRANSCRIPT),
        ("tooMany429x", ErrorCode.RATE_LIMITED),
    ],
)
def test_failures_carry_code_hint_and_attempts(
    youtube: HTTPXMock, runtime: Runtime, video: str, code: ErrorCode
) -> None:
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, video))
    error = caught.value
    assert error.code is code
    assert error.hint
    assert error.attempts and error.attempts[0].id == "youtube"
    assert any(a.outcome == "error" and a.reason == code.value for a in error.attempts)


def test_rate_limit_keeps_retry_after(youtube: HTTPXMock, runtime: Runtime) -> None:
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, "tooMany429x"))
    assert caught.value.retry_after == 120


def test_no_captions_in_auto_mode_without_a_rung_says_how_to_set_one_up(
    youtube: HTTPXMock, runtime: Runtime
) -> None:
    """Auto mode has already looked for a speech-to-text rung: pointing at mode=stt would only
    fail the same way, so the hint names the keys that turn a rung on."""
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, "dsMFmonKDD4"))
    assert caught.value.code is ErrorCode.NO_TRANSCRIPT
    hint = caught.value.hint or ""
    assert "GROQ_API_KEY" in hint
    assert "mode=stt" not in hint
    assert ("stt", "skipped") in [(a.stage, a.outcome) for a in caught.value.attempts]


def test_no_captions_in_auto_mode_without_audio_here_points_to_the_local_runtime(youtube: HTTPXMock) -> None:
    """A rung is set up, but this runtime cannot fetch YouTube audio (the Worker's case): the hint
    is the local runtime (or, for REST, an upload of the audio), not mode=stt on the same video."""
    rt = build_runtime(
        load_settings({"VID2CONTEXT_STT_URL": "http://127.0.0.1:9/v1"}), http=httpx.AsyncClient()
    )
    assert any(rung.enabled for rung in rt.stt)
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(rt, "dsMFmonKDD4"))
    assert caught.value.code is ErrorCode.NO_TRANSCRIPT
    rest, mcp = caught.value.hint_for("rest") or "", caught.value.hint_for("mcp") or ""
    assert "local runtime" in rest and "local runtime" in mcp
    assert "mode=stt" not in rest.replace("upload:<sha256> it returns with mode=stt", "")
    assert "mode=stt" not in mcp.replace("--mode stt", "") and "do not retry" in mcp
    assert ("audio", "skipped") in [(a.stage, a.outcome) for a in caught.value.attempts]


def test_stt_mode_without_rungs_is_no_provider(httpx_mock: HTTPXMock, runtime: Runtime) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, VIDEO, mode="stt"))
    assert caught.value.code is ErrorCode.NO_PROVIDER
    assert caught.value.hint


def test_video_mode_without_a_visual_rung_is_unsupported_input(
    httpx_mock: HTTPXMock, runtime: Runtime
) -> None:
    """The portable runtime reads no picture (tests/test_visual.py covers the local rung)."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, VIDEO, mode="video"))
    assert caught.value.code is ErrorCode.UNSUPPORTED_INPUT
    assert "local runtime" in (caught.value.hint_for("rest") or "")


@pytest.mark.parametrize(
    ("source", "kwargs", "code"),
    [
        ("GJLlxj_dtq8", {"mode": "sometimes"}, ErrorCode.BAD_REQUEST),
        (
            "https://www.youtube.com/playlist?list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG",
            {},
            ErrorCode.BAD_REQUEST,
        ),
        ("https://vimeo.com/123", {}, ErrorCode.NO_PROVIDER),
        ("./talk.mp4", {}, ErrorCode.NO_PROVIDER),
        ("javascript:alert(1)", {}, ErrorCode.UNSUPPORTED_INPUT),
        ("", {}, ErrorCode.BAD_REQUEST),
    ],
)
def test_bad_requests_fail_before_any_upstream_call(
    httpx_mock: HTTPXMock, runtime: Runtime, source: str, kwargs: dict, code: ErrorCode
) -> None:
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, source, **kwargs))
    assert caught.value.code is code
    assert caught.value.hint
    assert httpx_mock.get_requests() == []


@pytest.mark.parametrize(
    "source", ["/etc/passwd", "file:///etc/passwd", "http://127.0.0.1:8787/x", "http://[::1]/"]
)
def test_public_mode_refuses_before_any_provider(httpx_mock: HTTPXMock, source: str) -> None:
    runtime = build_runtime(load_settings({"VID2CONTEXT_PUBLIC": "1"}), http=httpx.AsyncClient())
    try:
        with pytest.raises(VidError) as caught:
            asyncio.run(get_context(runtime, source))
        assert caught.value.code is ErrorCode.UNSUPPORTED_INPUT
        assert caught.value.attempts == []
        assert httpx_mock.get_requests() == []
    finally:
        asyncio.run(runtime.aclose())


def test_an_expired_call_times_out(httpx_mock: HTTPXMock, runtime: Runtime) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    ctx = Ctx(timeout=0)
    with pytest.raises(VidError) as caught:
        asyncio.run(get_context(runtime, VIDEO, ctx=ctx))
    assert caught.value.code is ErrorCode.TIMEOUT
    assert caught.value.hint


def test_items_of_a_single_video_is_itself(runtime: Runtime) -> None:
    items = asyncio.run(list_items(runtime, "https://youtu.be/GJLlxj_dtq8"))
    assert [i.id for i in items] == ["youtube:GJLlxj_dtq8"]


@pytest.mark.parametrize("limit", [0, -1, 501])
def test_items_limit_is_checked(runtime: Runtime, limit: int) -> None:
    with pytest.raises(VidError) as caught:
        asyncio.run(list_items(runtime, "GJLlxj_dtq8", limit=limit))
    assert caught.value.code is ErrorCode.BAD_REQUEST
