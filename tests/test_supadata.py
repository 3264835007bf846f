"""The Supadata rung (``providers/supadata.py``) against a stand-in that answers as Supadata documents.

The rung alone: metadata, timed captions, the language preference, the async job flow, every
documented failure mapped onto our codes (a wrong key names SUPADATA_API_KEY and never shows the
key). Then the edge itself: the Worker's runtime, whose YouTube replay answers the bot check,
serves that video's transcript through Supadata; without the key it still answers ``blocked``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import STATUS_BY_CODE, ErrorCode, VidError
from vid2context.inputs import parse_input
from vid2context.providers.supadata import SupadataProvider

from .fake_supadata import KEY, FakeSupadata
from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.anyio

BLOCKED = "botCheck001"


@pytest.fixture
def supadata() -> Iterator[FakeSupadata]:
    with FakeSupadata() as server:
        yield server


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _ref(video_id: str):
    return parse_input(f"https://www.youtube.com/watch?v={video_id}")


async def _provider(server: FakeSupadata, key: str | None = KEY, **options) -> SupadataProvider:
    return SupadataProvider(
        httpx.AsyncClient(), api_key=key, base_url=server.base_url, poll_interval_s=0, **options
    )


async def _error(call) -> VidError:
    with pytest.raises(VidError) as caught:
        await call
    return caught.value


async def test_captions_and_metadata_come_timed_from_supadata(supadata: FakeSupadata) -> None:
    rung = await _provider(supadata)
    ref = _ref(BLOCKED)
    assert rung.accepts(ref)
    transcript = await rung.captions(ref, Ctx())
    assert [s.text for s in transcript.segments] == [
        "the kickstand bends to one hundred sixty five degrees",
        "and the hinge is steel",
        "rated for ten thousand cycles",
    ]
    assert [(s.start_sec, s.end_sec) for s in transcript.segments] == [(0, 4.2), (4.2, 6.5), (6.5, 9.5)]
    assert (transcript.language, transcript.producer, transcript.origin) == (
        "en",
        "supadata/transcript",
        "captions-auto",
    )
    assert transcript.available_languages == ["en", "de"]
    path, query, good_key = supadata.requests[-1]
    assert path == "/v1/transcript" and good_key
    assert query["text"] == "false" and query["mode"] == "native" and BLOCKED in query["url"]
    metadata = await rung.metadata(ref, Ctx())
    assert (metadata.title, metadata.channel, metadata.duration_sec) == (
        "Kickstand teardown",
        "Test Channel",
        600,
    )
    assert metadata.published_at == "2024-05-01" and metadata.id == f"youtube:{BLOCKED}"


async def test_a_language_is_a_preference_and_a_missing_one_is_said(supadata: FakeSupadata) -> None:
    rung = await _provider(supadata)
    german = await rung.captions(_ref(BLOCKED), Ctx(), lang="de")
    assert german.language == "de" and german.requested_language is None
    french = await rung.captions(_ref(BLOCKED), Ctx(), lang="fr")
    assert french.language == "en" and french.requested_language == "fr"
    assert "requested fr not available" in (french.note or "")


async def test_a_long_video_is_a_job_polled_until_it_completes(supadata: FakeSupadata) -> None:
    rung = await _provider(supadata)
    transcript = await rung.captions(_ref("longVideo01"), Ctx())
    assert [s.text for s in transcript.segments] == ["welcome to the lecture", "today we cover hinges"]
    polls = [path for path, _, _ in supadata.requests if path.startswith("/v1/transcript/")]
    assert polls == ["/v1/transcript/job-1"] * 3  # queued, active, completed


async def test_a_failed_job_and_one_that_never_ends(supadata: FakeSupadata) -> None:
    failed = await _error((await _provider(supadata)).captions(_ref("failedJob01"), Ctx()))
    assert failed.code is ErrorCode.UPSTREAM and "internal-error" in failed.message
    slow = await _error((await _provider(supadata, max_polls=2)).captions(_ref("longVideo01"), Ctx()))
    assert slow.code is ErrorCode.TIMEOUT and slow.hints


async def test_documented_failures_map_onto_our_codes(supadata: FakeSupadata) -> None:
    rung = await _provider(supadata)
    none = await _error(rung.captions(_ref("noCaption01"), Ctx()))
    assert none.code is ErrorCode.NO_TRANSCRIPT and "transcript-unavailable" in none.message
    missing = await _error(rung.metadata(_ref("xxxxxxxxxx1"), Ctx()))
    assert missing.code is ErrorCode.NOT_FOUND and STATUS_BY_CODE[missing.code] == 404
    supadata.fail_next = [(429, {"Retry-After": "17"})]
    limited = await _error(rung.captions(_ref(BLOCKED), Ctx()))
    assert limited.code is ErrorCode.RATE_LIMITED and limited.retry_after == 17
    supadata.fail_next = [(402, {})]
    broke = await _error(rung.captions(_ref(BLOCKED), Ctx()))
    assert broke.code is ErrorCode.AUTH and "SUPADATA_API_KEY" in str(broke.hints)
    supadata.fail_next = [(503, {})]
    down = await _error(rung.captions(_ref(BLOCKED), Ctx()))
    assert down.code is ErrorCode.UPSTREAM and "503" in down.message
    supadata.fail_next = [(200, {}), (200, {})]
    garbled = await _error(rung.captions(_ref(BLOCKED), Ctx()))
    assert garbled.code is ErrorCode.UPSTREAM and "Could not read Supadata's transcript" in garbled.message
    garbled = await _error(rung.metadata(_ref(BLOCKED), Ctx()))
    assert garbled.code is ErrorCode.UPSTREAM and "video details" in garbled.message


async def test_a_wrong_key_is_auth_naming_the_variable_never_the_key(supadata: FakeSupadata) -> None:
    wrong = "sd-wrong-secret-999"
    error = await _error((await _provider(supadata, key=wrong)).captions(_ref(BLOCKED), Ctx()))
    assert error.code is ErrorCode.AUTH and STATUS_BY_CODE[error.code] == 502
    assert "SUPADATA_API_KEY" in str(error.hints)
    assert wrong not in error.message + str(error.hints) and KEY not in error.message


async def test_without_a_key_it_accepts_nothing_and_an_unreachable_service_is_upstream() -> None:
    with FakeSupadata() as server:
        base = server.base_url
    off = SupadataProvider(httpx.AsyncClient(), api_key=None, base_url=base)
    assert not off.enabled and not off.accepts(_ref(BLOCKED))
    gone = SupadataProvider(httpx.AsyncClient(), api_key=KEY, base_url=base)
    error = await _error(gone.captions(_ref(BLOCKED), Ctx()))
    assert error.code is ErrorCode.UPSTREAM and "ConnectError" in error.message
    hostile = await _error(gone.captions(parse_input("https://www.youtube.com/playlist?list=PLx"), Ctx()))
    assert hostile.code is ErrorCode.BAD_REQUEST


def _settings(replay: ReplayServer, supadata: FakeSupadata | None, key: str = KEY) -> dict[str, str]:
    environ = {"VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin, "VID2CONTEXT_RATE_LIMIT": "0"}
    if supadata is not None:
        environ |= {"SUPADATA_API_KEY": key, "SUPADATA_BASE_URL": supadata.base_url}
    return environ


@ON_WORKER_TOO
async def test_the_edge_answers_a_bot_checked_video_through_supadata(
    runtimes: Runtimes, replay: ReplayServer, supadata: FakeSupadata
) -> None:
    runtime = await runtimes.build(_settings(replay, supadata))
    assert [p.id for p in runtime.sources][:2] == ["youtube", "supadata"]
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        url = f"https://www.youtube.com/watch?v={BLOCKED}"
        answer = await client.get("/api/v1/context", params={"url": url})
        assert answer.status_code == 200, answer.text
        context = answer.json()
        assert context["metadata"]["title"] == "Kickstand teardown"
        assert context["transcript"]["producer"] == "supadata/transcript"
        tried = [(a["id"], a["stage"], a["outcome"], a.get("reason")) for a in context["attempts"]]
        assert ("youtube", "metadata", "error", "blocked") in tried
        assert ("supadata", "captions", "ok", None) in tried
        text = await client.get("/api/v1/transcript", params={"url": url})
        assert "kickstand bends" in text.text
        health = (await client.get("/api/v1/health")).json()
        entry = next(p for p in health["providers"] if p["id"] == "supadata")
        assert entry["enabled"] is True and entry["requires"] == ["SUPADATA_API_KEY"]
        assert KEY not in str(health)


@ON_WORKER_TOO
async def test_without_the_key_the_edge_says_blocked_and_health_names_the_key(
    runtimes: Runtimes, replay: ReplayServer
) -> None:
    runtime = await runtimes.build(_settings(replay, None))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get("/api/v1/context", params={"url": BLOCKED})
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "blocked"
        health = (await client.get("/api/v1/health")).json()
        entry = next(p for p in health["providers"] if p["id"] == "supadata")
        assert entry["enabled"] is False and entry["requires"] == ["SUPADATA_API_KEY"]


@ON_WORKER_TOO
async def test_a_wrong_key_on_the_edge_is_a_clear_error_without_the_key(
    runtimes: Runtimes, replay: ReplayServer, supadata: FakeSupadata
) -> None:
    wrong = "sd-wrong-secret-999"
    runtime = await runtimes.build(_settings(replay, supadata, key=wrong))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get("/api/v1/context", params={"url": BLOCKED})
        assert answer.status_code == 502, answer.text
        assert "SUPADATA_API_KEY" in answer.text and wrong not in answer.text
