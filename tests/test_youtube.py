"""The YouTube provider against recorded YouTube answers, served by pytest-httpx.

Every file in ``tests/fixtures/youtube/yta`` is replayed here (see ``test_every_yta_fixture_is_used``),
and the pytube watch data (``yt-video-*.json.gz``: ``watch_html`` as the watch page, ``vid_info``
as the player answer) checks the metadata mapping. Two things are not recorded and are built in
the tests from their documented shapes, as each test says: json3 caption files, and ``browse``
continuation answers (``onResponseReceivedActions[].appendContinuationItemsAction
.continuationItems`` with video renderers and a ``continuationItemRenderer``).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from pytest_httpx import HTTPXMock

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import VideoRef
from vid2context.providers.base import SourceProvider
from vid2context.providers.youtube import ANDROID_CLIENT, YouTubeProvider
from vid2context.refusals import Where

from .hint_steps import problems, surfaces

pytestmark = pytest.mark.anyio

ORIGIN = "https://www.youtube.com"
API_KEY = "AIzaSyAO_FJ2SlqU8Q4STEHLGCilw_Y9_11qcW8"  # the key in every recorded page
WATCH = re.compile(r"https://www\.youtube\.com/watch\?v=[\w-]{11}$")
PLAYER = f"{ORIGIN}/youtubei/v1/player?key={API_KEY}"
BROWSE = f"{ORIGIN}/youtubei/v1/browse?key={API_KEY}"
TIMEDTEXT = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*")
JSON3 = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*fmt=json3.*")
SRV3 = re.compile(r"https://www\.youtube\.com/api/timedtext\?.*fmt=srv3.*")
CONSENT_COOKIE = "CONSENT=YES+cb.20210328-17-p0.de+FX+119"
FIRST_LINES = ["Hey, this is just a test", "this is not the original transcript"]

Load = Callable[[str], bytes]


@pytest.fixture
def yta(fixtures: Path) -> Load:
    """Bytes of a recorded youtube-transcript-api asset."""
    return lambda name: (fixtures / "youtube" / "yta" / name).read_bytes()


@pytest.fixture
def pytube(fixtures: Path) -> Callable[[str], Any]:
    """A pytube recording: ``yt-video-<id>-html.json.gz`` as a dict, other ``.gz`` pages as text."""

    def load(name: str) -> Any:
        data = gzip.decompress((fixtures / "youtube" / "pytube" / name).read_bytes())
        return json.loads(data) if name.endswith(".json.gz") else data.decode("utf-8")

    return load


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient() as http:
        yield http


@pytest.fixture
def provider(client: httpx.AsyncClient) -> YouTubeProvider:
    return YouTubeProvider(client)


def video(video_id: str) -> VideoRef:
    return VideoRef(id=f"youtube:{video_id}", platform="youtube", kind="video", native_id=video_id)


def json3_doc(*lines: tuple[int, int, str]) -> bytes:
    """A json3 caption file in the documented shape (none is recorded)."""
    events: list[dict[str, Any]] = [{"tStartMs": 0, "dDurationMs": 9000, "id": 1, "wpWinPosId": 1}]
    for start, duration, text in lines:
        events.append({"tStartMs": start, "dDurationMs": duration, "wWinId": 1, "segs": [{"utf8": text}]})
        events.append(
            {
                "tStartMs": start + duration,
                "dDurationMs": 10,
                "wWinId": 1,
                "aAppend": 1,
                "segs": [{"utf8": "\n"}],
            }
        )
    return json.dumps({"wireMagic": "pb3", "events": events}).encode()


def paths(mock: HTTPXMock) -> list[str]:
    return [f"{r.method} {urlsplit(str(r.url)).path}" for r in mock.get_requests()]


def query(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(urlsplit(str(request.url)).query)


def serve(mock: HTTPXMock, yta: Load, player: str, page: str = "youtube.html.static") -> None:
    mock.add_response(method="GET", url=WATCH, content=yta(page))
    mock.add_response(
        method="POST", url=PLAYER, content=yta(player), headers={"Content-Type": "application/json"}
    )


async def fails(work: Any, code: ErrorCode, *in_message: str) -> VidError:
    with pytest.raises(VidError) as caught:
        await work
    error = caught.value
    assert error.code is code, (error.code, error.message)
    assert error.hint, "every error names the next step"
    for surface, facts in surfaces().items():  # a step that exists there, and nothing that does not
        assert problems(error.hint_for(surface), facts) == [], (surface, error.hint_for(surface))
    for text in in_message:
        assert text in error.message
    return error


# --- the protocol and the happy path -------------------------------------------------------------


def test_fixture_folder_is_found(fixtures: Path) -> None:
    assert fixtures == Path(__file__).resolve().parent / "fixtures"
    assert (fixtures / "youtube" / "yta" / "youtube.html.static").is_file()


def test_every_yta_fixture_is_used(fixtures: Path) -> None:
    source = Path(__file__).read_text()
    for path in (fixtures / "youtube" / "yta").iterdir():
        assert f'"{path.name}"' in source, f"{path.name} is not replayed"


async def test_protocol_and_accepts(provider: YouTubeProvider) -> None:
    assert isinstance(provider, SourceProvider)
    assert (provider.id, provider.name) == ("youtube", "YouTube")
    assert provider.accepts(video("GJLlxj_dtq8"))
    assert not provider.accepts(
        VideoRef(id="web:x", platform="web", kind="video", native_id="https://x.org/v")
    )


async def test_metadata_and_captions_share_one_round_trip(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    # json3 is asked for first; a server that answers the XML anyway is read as XML, with no second request.
    httpx_mock.add_response(method="GET", url=JSON3, content=yta("transcript.xml.static"))
    ctx = Ctx()
    meta = await provider.metadata(video("GJLlxj_dtq8"), ctx)
    transcript = await provider.captions(video("GJLlxj_dtq8"), ctx)
    tracks = await provider.caption_tracks(video("GJLlxj_dtq8"), ctx)

    assert paths(httpx_mock) == ["GET /watch", "POST /youtubei/v1/player", "GET /api/timedtext"]
    watch, player, timedtext = httpx_mock.get_requests()
    assert watch.headers["Accept-Language"] == "en-US"
    assert json.loads(player.content) == {"context": {"client": ANDROID_CLIENT}, "videoId": "GJLlxj_dtq8"}
    assert query(timedtext)["fmt"] == ["json3"] and query(timedtext)["lang"] == ["en"]
    assert "kind" not in query(timedtext)  # the manual English track, not the automatic one

    assert meta.id == "youtube:GJLlxj_dtq8" and meta.platform == "youtube"
    assert meta.title == "Surface Go Review - It\u2019s Awesome"
    assert meta.url == "https://www.youtube.com/watch?v=GJLlxj_dtq8"
    assert (meta.channel, meta.channel_id) == ("Dave2D", "UCVYamHliCI9rw1tHR1xbkfw")
    assert meta.duration_sec == 316
    assert meta.published_at == "2018-08-02"  # from the watch page's microformat
    assert meta.description and meta.description.startswith("Dave2D review of the Microsoft Surface Go.")
    assert meta.tags[:3] == ["Dave2D", "Review", "Surface Go"]
    assert meta.view_count == 1856109
    assert meta.language == "en"
    assert meta.is_live is False
    assert meta.thumbnails[0].url == "https://i.ytimg.com/vi/GJLlxj_dtq8/default.jpg"
    assert meta.thumbnails[0].width == 120
    assert any("maxresdefault" in t.url for t in meta.thumbnails)
    assert [c.title for c in meta.chapters][:2] == ["Build Quality", "Screen"]
    assert meta.chapters[-1].end_sec == 316

    assert [s.text for s in transcript.segments] == [
        *FIRST_LINES,
        "just something shorter, I made up for testing",
    ]
    assert transcript.origin == "captions-manual" and transcript.language == "en"
    assert (transcript.timing, transcript.producer) == ("caption", "youtube/innertube")
    assert transcript.note and "over the auto-generated" in transcript.note

    assert len(tracks) == 9
    assert (tracks[3].language, tracks[3].kind, tracks[3].name) == ("en", "auto", "English (auto-generated)")
    assert all(t.translatable for t in tracks)


async def test_concurrent_calls_in_one_ctx_share_the_round_trip(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    ctx = Ctx()
    await asyncio.gather(*(provider.metadata(video("GJLlxj_dtq8"), ctx) for _ in range(5)))
    assert paths(httpx_mock) == ["GET /watch", "POST /youtubei/v1/player"]


async def test_json3_is_used_when_it_parses(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(
        method="GET", url=JSON3, content=json3_doc((0, 1500, "from json3"), (1500, 2000, "second"))
    )
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx())
    assert [(s.start_sec, s.end_sec, s.text) for s in transcript.segments] == [
        (0.0, 1.5, "from json3"),
        (1.5, 3.5, "second"),
    ]


@pytest.mark.parametrize(
    "json3_answer",
    [{"status_code": 404}, {"content": b""}, {"content": b"{broken"}, {"content": b'{"events": []}'}],
    ids=["http-404", "empty", "broken", "no-events"],
)
async def test_unusable_json3_falls_back_to_srv3(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider, json3_answer: dict[str, Any]
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, **json3_answer)
    httpx_mock.add_response(method="GET", url=SRV3, content=yta("transcript.xml.static"))
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx())
    assert [s.text for s in transcript.segments][:2] == FIRST_LINES
    assert [query(r)["fmt"] for r in httpx_mock.get_requests()[2:]] == [["json3"], ["srv3"]]


async def test_empty_caption_files_are_upstream(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=b"")
    httpx_mock.add_response(method="GET", url=SRV3, content=b"")
    await fails(provider.captions(video("GJLlxj_dtq8"), Ctx()), ErrorCode.UPSTREAM, "GJLlxj_dtq8")


async def test_hostile_caption_file_is_upstream(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    hostile = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]>'
        b'<transcript><text start="0">&a;</text></transcript>'
    )
    httpx_mock.add_response(method="GET", url=TIMEDTEXT, content=hostile, is_reusable=True)
    await fails(provider.captions(video("GJLlxj_dtq8"), Ctx()), ErrorCode.UPSTREAM, "GJLlxj_dtq8", "DOCTYPE")


async def test_cues_without_text_are_no_transcript(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    empty = b'<transcript><text start="0" dur="1"> </text></transcript>'
    httpx_mock.add_response(method="GET", url=TIMEDTEXT, content=empty, is_reusable=True)
    error = await fails(
        provider.captions(video("GJLlxj_dtq8"), Ctx()), ErrorCode.NO_TRANSCRIPT, "GJLlxj_dtq8"
    )
    assert "stt" in (error.hint or "")


async def test_altered_user_agent_answer_reads_the_same(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube_altered_user_agent.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=yta("transcript.xml.static"))
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx())
    assert [s.text for s in transcript.segments][:2] == FIRST_LINES


# --- consent, rate limits, HTTP and transport failures --------------------------------------------


async def test_consent_page_is_answered_with_a_cookie(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, content=yta("youtube_consent_page.html.static"))
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=yta("transcript.xml.static"))
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx())
    assert [s.text for s in transcript.segments][:2] == FIRST_LINES
    requests = httpx_mock.get_requests()
    assert paths(httpx_mock) == ["GET /watch", "GET /watch", "POST /youtubei/v1/player", "GET /api/timedtext"]
    assert "Cookie" not in requests[0].headers
    assert all(r.headers["Cookie"] == CONSENT_COOKIE for r in requests[1:])


async def test_consent_page_twice_is_upstream(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(
        method="GET", url=WATCH, content=yta("youtube_consent_page.html.static"), is_reusable=True
    )
    error = await fails(
        provider.metadata(video("F1xioXWb8CY"), Ctx()), ErrorCode.UPSTREAM, "F1xioXWb8CY", "consent"
    )
    assert "VID2CONTEXT_PROXY" in (error.hint or "")
    assert paths(httpx_mock) == ["GET /watch", "GET /watch"]


async def test_invalid_consent_page_is_upstream(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, content=yta("youtube_consent_page_invalid.html.static"))
    await fails(provider.metadata(video("F1xioXWb8CY"), Ctx()), ErrorCode.UPSTREAM, "F1xioXWb8CY", "consent")
    assert paths(httpx_mock) == ["GET /watch"]


@pytest.mark.parametrize(("header", "expected"), [("120", 120), (None, None), ("soon", None)])
async def test_too_many_requests(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider, header: str | None, expected: int | None
) -> None:
    headers = {"Retry-After": header} if header else {}
    httpx_mock.add_response(
        method="GET",
        url=WATCH,
        status_code=429,
        headers=headers,
        content=yta("youtube_too_many_requests.html.static"),
    )
    error = await fails(provider.metadata(video("abcdefghijk"), Ctx()), ErrorCode.RATE_LIMITED, "abcdefghijk")
    assert error.retry_after == expected


async def test_retry_after_as_a_date(httpx_mock: HTTPXMock, provider: YouTubeProvider) -> None:
    httpx_mock.add_response(
        method="GET", url=WATCH, status_code=429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}
    )
    error = await fails(provider.metadata(video("abcdefghijk"), Ctx()), ErrorCode.RATE_LIMITED)
    assert error.retry_after == 0  # a date in the past: retry now


async def test_captcha_page_with_200_is_rate_limited(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, content=yta("youtube_too_many_requests.html.static"))
    error = await fails(provider.metadata(video("abcdefghijk"), Ctx()), ErrorCode.RATE_LIMITED, "abcdefghijk")
    assert error.retry_after is None
    assert "VID2CONTEXT_PROXY" in (error.hint or "")


async def test_timedtext_429_is_rate_limited(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, status_code=429, headers={"Retry-After": "30"})
    error = await fails(provider.captions(video("GJLlxj_dtq8"), Ctx()), ErrorCode.RATE_LIMITED, "GJLlxj_dtq8")
    assert error.retry_after == 30


async def test_watch_page_http_error_is_upstream(httpx_mock: HTTPXMock, provider: YouTubeProvider) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, status_code=503)
    await fails(provider.metadata(video("abcdefghijk"), Ctx()), ErrorCode.UPSTREAM, "503", "abcdefghijk")


async def test_page_without_innertube_key_is_upstream(
    httpx_mock: HTTPXMock, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, text="<html>something else</html>")
    await fails(provider.metadata(video("abcdefghijk"), Ctx()), ErrorCode.UPSTREAM, "abcdefghijk")


async def test_player_error_without_usable_page_is_upstream(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    # The recorded page is about GJLlxj_dtq8, so it cannot stand in for another video.
    httpx_mock.add_response(method="GET", url=WATCH, content=yta("youtube.html.static"))
    httpx_mock.add_response(method="POST", url=PLAYER, status_code=500)
    await fails(provider.metadata(video("F1xioXWb8CY"), Ctx()), ErrorCode.UPSTREAM, "500", "F1xioXWb8CY")


@pytest.mark.parametrize("player_answer", [{"status_code": 400}, {"content": b"<html>not json</html>"}])
async def test_watch_page_fallback(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider, player_answer: dict[str, Any]
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, content=yta("youtube.html.static"))
    httpx_mock.add_response(method="POST", url=PLAYER, **player_answer)
    ctx = Ctx()
    meta = await provider.metadata(video("GJLlxj_dtq8"), ctx)
    assert meta.title.startswith("Surface Go Review") and meta.published_at == "2018-08-02"
    assert len(await provider.caption_tracks(video("GJLlxj_dtq8"), ctx)) == 9
    # The page's WEB-client caption URLs all demand a PO token: said so, nothing downloaded.
    await fails(provider.captions(video("GJLlxj_dtq8"), ctx), ErrorCode.BLOCKED, "PO token")
    assert paths(httpx_mock) == ["GET /watch", "POST /youtubei/v1/player"]


@pytest.mark.parametrize(
    ("exception", "code"),
    [
        (httpx.ConnectTimeout("slow"), ErrorCode.TIMEOUT),
        (httpx.ReadTimeout("slow"), ErrorCode.TIMEOUT),
        (httpx.ConnectError("refused"), ErrorCode.UPSTREAM),
        (httpx.RemoteProtocolError("bad"), ErrorCode.UPSTREAM),
        (httpx.ProxyError("proxy"), ErrorCode.UPSTREAM),
    ],
)
async def test_transport_errors(
    httpx_mock: HTTPXMock, provider: YouTubeProvider, exception: Exception, code: ErrorCode
) -> None:
    httpx_mock.add_exception(exception, method="GET", url=WATCH)
    error = await fails(provider.metadata(video("abcdefghijk"), Ctx()), code, "abcdefghijk")
    assert error.__cause__ is exception


async def test_errors_are_memoised_per_call(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(method="GET", url=WATCH, status_code=503)
    ctx = Ctx()
    first = await fails(provider.metadata(video("abcdefghijk"), ctx), ErrorCode.UPSTREAM)
    second = await fails(provider.captions(video("abcdefghijk"), ctx), ErrorCode.UPSTREAM)
    assert first is not second and first.message == second.message
    assert len(httpx_mock.get_requests()) == 1


async def test_aborted_and_expired_calls_make_no_request(
    httpx_mock: HTTPXMock, provider: YouTubeProvider
) -> None:
    ctx = Ctx()
    ctx.abort()
    await fails(provider.metadata(video("abcdefghijk"), ctx), ErrorCode.CANCELED)
    await fails(provider.metadata(video("abcdefghijk"), Ctx(timeout=0)), ErrorCode.TIMEOUT)
    assert httpx_mock.get_requests() == []


async def test_origin_receives_every_request(
    httpx_mock: HTTPXMock, yta: Load, client: httpx.AsyncClient
) -> None:
    origin = "http://127.0.0.1:8765"
    provider = YouTubeProvider(client, origin=origin + "/")
    httpx_mock.add_response(
        method="GET", url=f"{origin}/watch?v=GJLlxj_dtq8", content=yta("youtube.html.static")
    )
    httpx_mock.add_response(
        method="POST",
        url=f"{origin}/youtubei/v1/player?key={API_KEY}",
        content=yta("youtube.innertube.json.static"),
    )
    httpx_mock.add_response(
        method="GET",
        url=re.compile(re.escape(origin) + r"/api/timedtext\?.*"),
        content=yta("transcript.xml.static"),
    )
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx(timeout=30))
    assert transcript.segments
    assert all(str(r.url).startswith(origin + "/") for r in httpx_mock.get_requests())


# --- playability, one recorded state at a time ----------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "video_id", "code", "words"),
    [
        (
            "youtube_age_restricted.innertube.json.static",
            "Njp5uhTorCo",
            ErrorCode.UNAVAILABLE,
            "age-restricted",
        ),
        ("youtube_request_blocked.innertube.json.static", "Njp5uhTorCo", ErrorCode.BLOCKED, "not a bot"),
        ("youtube_unplayable.innertube.json.static", "Njp5uhTorCo", ErrorCode.UNAVAILABLE, "Custom Reason"),
        (
            "youtube_video_unavailable.innertube.json.static",
            "abcdefghijk",
            ErrorCode.NOT_FOUND,
            "unavailable",
        ),
        (
            "youtube_transcripts_disabled.innertube.json.static",
            "dsMFmonKDD4",
            ErrorCode.NO_TRANSCRIPT,
            "no captions",
        ),
        (
            "youtube_transcripts_disabled2.innertube.json.static",
            "Fjg5lYqvzUs",
            ErrorCode.NO_TRANSCRIPT,
            "no captions",
        ),
        ("youtube_po_token_required.innertube.json.static", "GJLlxj_dtq8", ErrorCode.BLOCKED, "PO token"),
    ],
)
@pytest.mark.parametrize("edge", [False, True], ids=["local", "worker"])
async def test_playability_states(
    httpx_mock: HTTPXMock,
    yta: Load,
    client: httpx.AsyncClient,
    fixture: str,
    video_id: str,
    code: ErrorCode,
    words: str,
    edge: bool,
) -> None:
    """Each state's code and message, and its way out where the server runs: the local runtime's
    hints name cookies and a proxy and never "run locally"; the Worker's name the local runtime and
    never a proxy or cookies it cannot use."""
    serve(httpx_mock, yta, fixture)
    provider = YouTubeProvider(client, where=Where(edge=edge, files=not edge))
    error = await fails(provider.captions(video(video_id), Ctx()), code, video_id, words)
    assert "GET /api/timedtext" not in paths(httpx_mock)  # decided before any caption download
    hints = " ".join(error.hints.values())
    assert "locally" not in hints and "run vid2context" not in hints.lower()
    if edge:
        assert "local runtime" in hints or code is ErrorCode.NOT_FOUND, hints
        assert "VID2CONTEXT_PROXY" not in hints or "local runtime" in hints
    if code is ErrorCode.BLOCKED and words == "not a bot":
        assert "do not retry" in hints
        if not edge:
            assert "VID2CONTEXT_PROXY" in hints and "VID2CONTEXT_YTDLP_COOKIES" in hints
    if words == "age-restricted":
        assert "VID2CONTEXT_YTDLP_COOKIES" in hints
        assert "get_metadata" in error.hint_for("mcp") and "GET /api/v1/metadata" in error.hint_for("rest")
    if code is ErrorCode.NO_TRANSCRIPT:
        assert ("mode=stt" in hints) is True
        assert (error.hint_for("mcp") == "Use mode=stt to transcribe the audio instead.") is not edge
    if words == "PO token":
        assert "yt-dlp" in hints and ("mode=stt" in hints) is True
    if words == "Custom Reason":
        assert "Sub Reason 1" in error.message and "Sub Reason 2" in error.message


@pytest.mark.parametrize(
    ("fixture", "video_id", "code"),
    [
        ("youtube_request_blocked.innertube.json.static", "Njp5uhTorCo", ErrorCode.BLOCKED),
        ("youtube_unplayable.innertube.json.static", "Njp5uhTorCo", ErrorCode.UNAVAILABLE),
        ("youtube_video_unavailable.innertube.json.static", "abcdefghijk", ErrorCode.NOT_FOUND),
    ],
)
async def test_metadata_fails_when_youtube_describes_nothing(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider, fixture: str, video_id: str, code: ErrorCode
) -> None:
    serve(httpx_mock, yta, fixture)
    ctx = Ctx()
    await fails(provider.metadata(video(video_id), ctx), code, video_id)
    await fails(provider.caption_tracks(video(video_id), ctx), code, video_id)
    assert len(httpx_mock.get_requests()) == 2


async def test_age_restricted_video_still_has_metadata(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube_age_restricted.innertube.json.static")
    meta = await provider.metadata(video("Njp5uhTorCo"), Ctx())
    assert meta.title.startswith("Laura Branigan - Self Control")
    assert meta.chapters == [] or all(c.start_sec >= 0 for c in meta.chapters)
    assert meta.published_at is None  # the recorded page is another video's: its microformat is not used


async def test_no_captions_means_no_tracks(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube_transcripts_disabled.innertube.json.static")
    assert await provider.caption_tracks(video("dsMFmonKDD4"), Ctx()) == []


# --- choosing a language -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "origin", "language", "tlang", "note"),
    [
        (None, "captions-manual", "en", None, "over the auto-generated"),
        ("en", "captions-manual", "en", None, "requested en"),
        ("en-GB", "captions-manual", "en", None, "requested en-GB"),
        ("nl", "captions-translated", "nl", "nl", "translated to nl"),
        ("de", "captions-translated", "de", "de", "translated to de"),
        ("sw", "captions-manual", "en", None, "requested sw not available"),
    ],
)
async def test_language_choice_ww1(
    httpx_mock: HTTPXMock,
    yta: Load,
    provider: YouTubeProvider,
    lang: str | None,
    origin: str,
    language: str,
    tlang: str | None,
    note: str,
) -> None:
    serve(httpx_mock, yta, "youtube_ww1_nl_en.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=json3_doc((0, 1000, "words")))
    transcript = await provider.captions(video("F1xioXWb8CY"), Ctx(), lang=lang)
    assert (transcript.origin, transcript.language) == (origin, language)
    assert transcript.note and note in transcript.note
    caption_query = query(httpx_mock.get_requests()[-1])
    assert caption_query.get("tlang") == ([tlang] if tlang else None)
    assert caption_query["lang"] == ["en"] and "kind" not in caption_query  # always the manual English source


async def test_language_choice_prefers_a_real_track(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=json3_doc((0, 1000, "Hallo")))
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx(), lang="DE")
    assert (transcript.origin, transcript.language) == ("captions-manual", "de")
    assert "tlang" not in query(httpx_mock.get_requests()[-1])


async def test_translation_by_primary_subtag(
    httpx_mock: HTTPXMock, yta: Load, provider: YouTubeProvider
) -> None:
    serve(httpx_mock, yta, "youtube.innertube.json.static")
    httpx_mock.add_response(method="GET", url=JSON3, content=json3_doc((0, 1000, "Ola")))
    transcript = await provider.captions(video("GJLlxj_dtq8"), Ctx(), lang="pt-BR")
    assert (transcript.origin, transcript.language) == ("captions-translated", "pt")
    assert query(httpx_mock.get_requests()[-1])["tlang"] == ["pt"]


# --- metadata from the pytube recordings ----------------------------------------------------------


def serve_pytube(mock: HTTPXMock, recording: dict[str, Any]) -> None:
    mock.add_response(method="GET", url=WATCH, text=recording["watch_html"])
    mock.add_response(method="POST", url=PLAYER, json=recording["vid_info"])


async def test_pytube_regular_video(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-2lAe1cqCOXo-html.json.gz"))
    ctx = Ctx()
    meta = await provider.metadata(video("2lAe1cqCOXo"), ctx)
    assert meta.title == "YouTube Rewind 2019: For the Record | #YouTubeRewind"
    assert (meta.channel, meta.channel_id) == ("YouTube", "UCBR8-60-B28hp2BmDPdntcQ")
    assert (meta.duration_sec, meta.published_at, meta.view_count) == (337, "2019-12-05", 115965063)
    assert meta.is_live is False and "Rewind" in meta.tags
    tracks = await provider.caption_tracks(video("2lAe1cqCOXo"), ctx)
    assert len(tracks) > 10 and tracks[0].language == "ar"


async def test_pytube_live_stream(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-5YceQ8YqYMc-html.json.gz"))
    ctx = Ctx()
    meta = await provider.metadata(video("5YceQ8YqYMc"), ctx)
    assert meta.title == "Vatican Media Live" and meta.is_live is True
    assert meta.published_at == "2019-10-31"
    await fails(
        provider.captions(video("5YceQ8YqYMc"), ctx),
        ErrorCode.UNAVAILABLE,
        "live stream recording is not available",
    )


async def test_pytube_age_restricted(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-irauhITDrsE-html.json.gz"))
    ctx = Ctx()
    meta = await provider.metadata(video("irauhITDrsE"), ctx)
    assert meta.title == "THE MOST AGE RESTRICTED VIDEO EVER" and meta.published_at == "2016-12-29"
    error = await fails(provider.captions(video("irauhITDrsE"), ctx), ErrorCode.UNAVAILABLE, "age-restricted")
    assert "cookies" in (error.hint or "")


async def test_pytube_private_video(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-m8uHb5jIGN8-html.json.gz"))
    await fails(
        provider.metadata(video("m8uHb5jIGN8"), Ctx()), ErrorCode.UNAVAILABLE, "private", "m8uHb5jIGN8"
    )


async def test_pytube_captions_demo(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-QRS8MkLhQmM-html.json.gz"))
    httpx_mock.add_response(method="GET", url=JSON3, content=json3_doc((0, 2000, "Ondertitels")))
    ctx = Ctx()
    meta = await provider.metadata(video("QRS8MkLhQmM"), ctx)
    assert (meta.title, meta.duration_sec, meta.published_at) == (
        "YouTube Captions and Subtitles",
        97,
        "2008-09-22",
    )
    languages = {t.language for t in await provider.caption_tracks(video("QRS8MkLhQmM"), ctx)}
    assert {"en", "nl", "fr", "de"} <= languages
    transcript = await provider.captions(video("QRS8MkLhQmM"), ctx, lang="nl")
    assert (transcript.origin, transcript.language) == ("captions-manual", "nl")
    assert transcript.segments[0].text == "Ondertitels"
    assert query(httpx_mock.get_requests()[-1])["lang"] == ["nl"]


async def test_pytube_without_captions(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    serve_pytube(httpx_mock, pytube("yt-video-WXxV9g7lsFE-html.json.gz"))
    ctx = Ctx()
    meta = await provider.metadata(video("WXxV9g7lsFE"), ctx)
    assert meta.channel == "iyazlive" and meta.language is None
    assert await provider.caption_tracks(video("WXxV9g7lsFE"), ctx) == []
    await fails(provider.captions(video("WXxV9g7lsFE"), ctx), ErrorCode.NO_TRANSCRIPT, "WXxV9g7lsFE")


# --- playlists and channels ----------------------------------------------------------------------


def continuation(items: list[dict[str, Any]], token: str | None) -> dict[str, Any]:
    """A ``browse`` continuation answer in the documented shape (none is recorded)."""
    if token:
        items = [
            *items,
            {"continuationItemRenderer": {"continuationEndpoint": {"continuationCommand": {"token": token}}}},
        ]
    return {"onResponseReceivedActions": [{"appendContinuationItemsAction": {"continuationItems": items}}]}


def fake_ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{n:06d}"[:11].ljust(11, "x") for n in range(count)]


def playlist_ref(list_id: str) -> VideoRef:
    return VideoRef(id=f"youtube:playlist:{list_id}", platform="youtube", kind="playlist", native_id=list_id)


async def test_playlist_page(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    list_id = "PLzMcBGfZo4-mP7qA9cagf68V06sko5otr"
    httpx_mock.add_response(
        method="GET", url=f"{ORIGIN}/playlist?list={list_id}", text=pytube("playlist.html.gz")
    )
    items = await provider.items(playlist_ref(list_id), Ctx(), limit=500)
    assert len(items) == 12 and len({i.id for i in items}) == 12
    first = items[0]
    assert (first.id, first.platform, first.kind, first.native_id) == (
        "youtube:ujTCoH21GlA",
        "youtube",
        "video",
        "ujTCoH21GlA",
    )
    assert first.url == "https://www.youtube.com/watch?v=ujTCoH21GlA"


async def test_playlist_with_submenu(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(
        method="GET", url=re.compile(r".*/playlist\?list=PLsub.*"), text=pytube("playlist_submenu.html.gz")
    )
    assert len(await provider.items(playlist_ref("PLsubmenu01"), Ctx(), limit=5)) == 5


async def test_long_playlist_follows_continuations_up_to_the_limit(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    """The page holds 100 videos and a continuation; the continuation answer is synthetic."""
    list_id = "PLS1QulWo1RIaJECMeUT4LFwJ-ghgoSH6n"
    httpx_mock.add_response(
        method="GET", url=f"{ORIGIN}/playlist?list={list_id}", text=pytube("playlist_long.html.gz")
    )
    more = [{"playlistVideoRenderer": {"videoId": v, "isPlayable": True}} for v in fake_ids("cont", 30)]
    more.append({"playlistVideoRenderer": {"videoId": "deletedxxxx", "isPlayable": False}})
    httpx_mock.add_response(method="POST", url=BROWSE, json=continuation(more, "NEXT-PAGE-TOKEN"))
    items = await provider.items(playlist_ref(list_id), Ctx(), limit=120)
    assert len(items) == 120 and items[100].native_id == fake_ids("cont", 1)[0]
    browse = httpx_mock.get_requests()[-1]
    body = json.loads(browse.content)
    assert body["continuation"].startswith("4qmFsgJhEiRWTFBMUzFRdWxXbzFSSWFKRUNNZVVUNExGd0otZ2hnb1NINm4")
    assert body["context"]["client"]["clientName"] == "WEB"
    assert paths(httpx_mock) == ["GET /playlist", "POST /youtubei/v1/browse"]  # 120 reached: no third page


async def test_playlist_continuations_end(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    httpx_mock.add_response(
        method="GET", url=re.compile(r".*/playlist\?.*"), text=pytube("playlist_long.html.gz")
    )
    first = [{"playlistVideoRenderer": {"videoId": v}} for v in fake_ids("pageA", 10)]
    httpx_mock.add_response(method="POST", url=BROWSE, json=continuation(first, "T2"))
    httpx_mock.add_response(method="POST", url=BROWSE, json=continuation([], None))
    items = await provider.items(playlist_ref("PLS1QulWo1RIaJECMeUT4LFwJ-ghgoSH6n"), Ctx())
    assert len(items) == 110
    assert json.loads(httpx_mock.get_requests()[-1].content)["continuation"] == "T2"


async def test_small_limit_needs_no_continuation(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], client: httpx.AsyncClient
) -> None:
    provider = YouTubeProvider(client, max_items=50)
    httpx_mock.add_response(
        method="GET", url=re.compile(r".*/playlist\?.*"), text=pytube("playlist_long.html.gz")
    )
    assert (
        len(await provider.items(playlist_ref("PLS1QulWo1RIaJECMeUT4LFwJ-ghgoSH6n"), Ctx())) == 50
    )  # max_items
    assert paths(httpx_mock) == ["GET /playlist"]


async def test_channel_videos_tab(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider
) -> None:
    """The recorded tab has 30 ``gridVideoRenderer``s; the continuation answer (synthetic) uses the
    current ``richItemRenderer``/``videoRenderer`` and ``lockupViewModel`` shapes."""
    channel = "UCs6nmQViDpUw0nuIx9c_WvA"
    httpx_mock.add_response(
        method="GET", url=f"{ORIGIN}/channel/{channel}/videos", text=pytube("channel-videos.html.gz")
    )
    rich = [{"richItemRenderer": {"content": {"videoRenderer": {"videoId": v}}}} for v in fake_ids("rich", 3)]
    lockups = [
        {"lockupViewModel": {"contentId": "lockup00001", "contentType": "LOCKUP_CONTENT_TYPE_VIDEO"}},
        {"lockupViewModel": {"contentId": "PLnotavideo", "contentType": "LOCKUP_CONTENT_TYPE_PLAYLIST"}},
        {"richItemRenderer": {"content": {"videoRenderer": {"videoId": "t_xLpJo_35k"}}}},  # already listed
    ]
    httpx_mock.add_response(method="POST", url=BROWSE, json=continuation(rich + lockups, "MORE"))
    ref = VideoRef(id=f"youtube:channel:{channel}", platform="youtube", kind="channel", native_id=channel)
    items = await provider.items(ref, Ctx(), limit=34)
    ids = [i.native_id for i in items]
    assert len(ids) == 34 and ids[0] == "t_xLpJo_35k"
    assert ids[30:] == [*fake_ids("rich", 3), "lockup00001"]


@pytest.mark.parametrize(
    ("native", "path"),
    [
        ("@ProgrammingKnowledge", "/@ProgrammingKnowledge/videos"),
        ("ProgrammingKnowledge", "/@ProgrammingKnowledge/videos"),  # a bare name is a handle
        ("c/Name", "/c/Name/videos"),
        ("user/someone", "/user/someone/videos"),
    ],
)
async def test_channel_paths(
    httpx_mock: HTTPXMock, pytube: Callable[[str], Any], provider: YouTubeProvider, native: str, path: str
) -> None:
    httpx_mock.add_response(method="GET", url=f"{ORIGIN}{path}", text=pytube("channel-videos.html.gz"))
    ref = VideoRef(id=f"youtube:channel:{native}", platform="youtube", kind="channel", native_id=native)
    assert len(await provider.items(ref, Ctx(), limit=3)) == 3


async def test_missing_playlist_is_not_found(httpx_mock: HTTPXMock, provider: YouTubeProvider) -> None:
    page = (
        '<script>var ytInitialData = {"alerts": [{"alertRenderer": {"type": "ERROR", '
        '"text": {"runs": [{"text": "The playlist does not exist."}]}}}]};</script>'
    )
    httpx_mock.add_response(method="GET", url=re.compile(r".*/playlist\?.*"), text=page)
    await fails(
        provider.items(playlist_ref("PLdoesnotexist"), Ctx(), limit=10), ErrorCode.NOT_FOUND, "does not exist"
    )


async def test_unreadable_listing_is_upstream(httpx_mock: HTTPXMock, provider: YouTubeProvider) -> None:
    httpx_mock.add_response(method="GET", url=re.compile(r".*/playlist\?.*"), text="<html>no data</html>")
    await fails(
        provider.items(playlist_ref("PLxxxxxxxxx"), Ctx(), limit=10), ErrorCode.UPSTREAM, "PLxxxxxxxxx"
    )


async def test_a_video_expands_to_itself(httpx_mock: HTTPXMock, provider: YouTubeProvider) -> None:
    items = await provider.items(video("GJLlxj_dtq8"), Ctx(), limit=10)
    assert [(i.id, i.url) for i in items] == [
        ("youtube:GJLlxj_dtq8", "https://www.youtube.com/watch?v=GJLlxj_dtq8")
    ]
    assert httpx_mock.get_requests() == []


# --- refusals -------------------------------------------------------------------------------------


async def test_comments_need_ytdlp(provider: YouTubeProvider) -> None:
    error = await fails(provider.comments(video("GJLlxj_dtq8"), Ctx(), limit=5), ErrorCode.NO_PROVIDER)
    assert "yt-dlp" in (error.hint or "") and "do not retry" in (error.hint or "")


@pytest.mark.parametrize(
    "ref",
    [
        video("short"),
        video("GJLlxj_dtq8\n"),
        video("../../etc/pa"),
        playlist_ref("PL/../x"),
        VideoRef(id="youtube:channel:x", platform="youtube", kind="channel", native_id="@a b"),
    ],
)
async def test_bad_references_make_no_request(
    httpx_mock: HTTPXMock, provider: YouTubeProvider, ref: VideoRef
) -> None:
    work = provider.items(ref, Ctx(), limit=5) if ref.kind != "video" else provider.metadata(ref, Ctx())
    await fails(work, ErrorCode.BAD_REQUEST)
    assert httpx_mock.get_requests() == []


async def test_metadata_of_a_playlist_is_bad_request(provider: YouTubeProvider) -> None:
    await fails(provider.metadata(playlist_ref("PLxxxxxxxxx"), Ctx()), ErrorCode.BAD_REQUEST)
