"""youtube-transcript-api as a captions rung, answered from the recorded YouTube responses.

Only the network is replaced: the provider builds its own ``requests.Session`` and mounts the
transport adapter it is given (as httpx's ``MockTransport`` is given to the InnerTube rung). The
adapter below answers through ``youtube_replay.answer``, the same recorded YouTube the InnerTube
tests and the replay server see; a scenario can override single paths.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import requests
from pytest_httpx import HTTPXMock
from requests.adapters import BaseAdapter

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.inputs import parse_input
from vid2context.pipeline import get_context
from vid2context.providers.base import SourceProvider
from vid2context.providers.transcript_api import PRODUCER, TranscriptApiProvider
from vid2context.providers.youtube import YouTubeProvider
from vid2context.runtime import Runtime
from vid2context.settings import load_settings
from vid2context.storage.memory import MemoryStorage

from .hint_steps import problems, surfaces
from .youtube_replay import YTA, answer, httpx_callback

Reply = tuple[int, dict[str, str], bytes]
Override = Callable[[requests.PreparedRequest], Reply | None]


class ReplayAdapter(BaseAdapter):
    """A ``requests`` transport that answers like YouTube from the recorded fixtures."""

    def __init__(self, override: Override | None = None) -> None:
        super().__init__()
        self.override = override
        self.seen: list[str] = []

    def send(self, request: requests.PreparedRequest, **kwargs: object) -> requests.Response:
        self.seen.append(f"{request.method} {request.url}")
        assert kwargs.get("timeout"), "every request must carry a timeout"
        reply = self.override(request) if self.override else None
        if reply is None:
            body = request.body.encode() if isinstance(request.body, str) else (request.body or b"")
            reply = answer(request.method or "GET", request.path_url, body)
        status, headers, content = reply
        response = requests.Response()
        response.status_code = status
        response.headers.update(headers)
        response._content = content
        response.url = request.url or ""
        response.request = request
        response.encoding = "utf-8"
        return response

    def close(self) -> None:
        pass


def _ref(video_id: str = "GJLlxj_dtq8"):
    return parse_input(video_id)


def _provider(override: Override | None = None, **kw: object) -> tuple[TranscriptApiProvider, ReplayAdapter]:
    adapter = ReplayAdapter(override)
    return TranscriptApiProvider(adapter=adapter, **kw), adapter  # type: ignore[arg-type]


def _player(name: str) -> Override:
    def serve(request: requests.PreparedRequest) -> Reply | None:
        if request.method == "POST" and urlsplit(request.url or "").path == "/youtubei/v1/player":
            return 200, {"Content-Type": "application/json"}, (YTA / name).read_bytes()
        return None

    return serve


def _captions(video_id: str = "GJLlxj_dtq8", **kw: object):
    provider, adapter = _provider(**kw)  # type: ignore[arg-type]
    return asyncio.run(provider.captions(_ref(video_id), Ctx())), adapter


def test_reads_the_manual_track_of_a_recorded_video() -> None:
    transcript, adapter = _captions()
    assert transcript.origin == "captions-manual"
    assert transcript.language == "en"
    assert transcript.producer == PRODUCER
    assert transcript.timing == "caption"
    assert [s.text for s in transcript.segments][:2] == [
        "Hey, this is just a test",
        "this is not the original transcript",
    ]
    assert transcript.segments[0].start_sec == 0.0
    assert transcript.segments[0].end_sec == pytest.approx(1.54)
    assert all(s.text for s in transcript.segments)  # the recorded file's empty line is dropped
    assert "manual" in (transcript.note or "")
    paths = [urlsplit(line.split(" ", 1)[1]).path for line in adapter.seen]
    assert paths == ["/watch", "/youtubei/v1/player", "/api/timedtext"]


def test_lists_tracks_like_the_innertube_rung() -> None:
    provider, _ = _provider()
    tracks = asyncio.run(provider.caption_tracks(_ref(), Ctx()))
    assert [(t.language, t.kind) for t in tracks] == [
        ("zh", "manual"), ("cs", "manual"), ("en", "manual"), ("de", "manual"), ("hi", "manual"),
        ("ja", "manual"), ("ko", "manual"), ("es", "manual"), ("en", "auto"),
    ]  # fmt: skip
    assert all(t.translatable for t in tracks)


def test_the_requested_language_is_read() -> None:
    provider, _ = _provider()
    transcript = asyncio.run(provider.captions(_ref(), Ctx(), lang="de"))
    assert (transcript.language, transcript.origin) == ("de", "captions-manual")


def test_a_language_without_a_track_is_a_youtube_translation() -> None:
    provider, adapter = _provider()
    transcript = asyncio.run(provider.captions(_ref(), Ctx(), lang="fr"))
    assert transcript.origin == "captions-translated"
    assert transcript.language == "fr"
    assert "translated to fr" in (transcript.note or "")
    timedtext = [line for line in adapter.seen if "/api/timedtext" in line]
    assert parse_qs(urlsplit(timedtext[-1].split(" ", 1)[1]).query)["tlang"] == ["fr"]


def test_requests_go_to_the_configured_origin() -> None:
    provider, adapter = _provider(origin="http://127.0.0.1:9")
    asyncio.run(provider.captions(_ref(), Ctx()))
    assert adapter.seen and all(
        line.split(" ", 1)[1].startswith("http://127.0.0.1:9/") for line in adapter.seen
    )


def test_the_eu_consent_page_is_answered() -> None:
    calls = {"watch": 0}

    def consent_first(request: requests.PreparedRequest) -> Reply | None:
        if urlsplit(request.url or "").path == "/watch":
            calls["watch"] += 1
            if calls["watch"] == 1:
                return (
                    200,
                    {"Content-Type": "text/html"},
                    (YTA / "youtube_consent_page.html.static").read_bytes(),
                )
            assert "CONSENT=YES+" in (request.headers.get("Cookie") or "")
        return None

    transcript, _ = _captions(override=consent_first)
    assert transcript.segments
    assert calls["watch"] == 2


@pytest.mark.parametrize(
    ("override", "code"),
    [
        (_player("youtube_transcripts_disabled.innertube.json.static"), ErrorCode.NO_TRANSCRIPT),
        (_player("youtube_transcripts_disabled2.innertube.json.static"), ErrorCode.NO_TRANSCRIPT),
        (_player("youtube_age_restricted.innertube.json.static"), ErrorCode.UNAVAILABLE),
        (_player("youtube_request_blocked.innertube.json.static"), ErrorCode.BLOCKED),
        (_player("youtube_unplayable.innertube.json.static"), ErrorCode.UNAVAILABLE),
        (_player("youtube_video_unavailable.innertube.json.static"), ErrorCode.NOT_FOUND),
        (_player("youtube_po_token_required.innertube.json.static"), ErrorCode.BLOCKED),
        # HTTP 429 and the captcha page are the library's IpBlocked: rate-limited, as InnerTube says.
        (
            lambda r: (
                (429, {}, (YTA / "youtube_too_many_requests.html.static").read_bytes())
                if "/watch" in (r.url or "")
                else None
            ),
            ErrorCode.RATE_LIMITED,
        ),
        (
            lambda r: (
                (200, {}, b'<html><div class="g-recaptcha"></div></html>')
                if "/watch" in (r.url or "")
                else None
            ),
            ErrorCode.RATE_LIMITED,
        ),
        (
            lambda r: (
                (200, {}, (YTA / "youtube_consent_page_invalid.html.static").read_bytes())
                if "/watch" in (r.url or "")
                else None
            ),
            ErrorCode.UPSTREAM,
        ),
        (lambda r: (500, {}, b"oops") if "/api/timedtext" in (r.url or "") else None, ErrorCode.UPSTREAM),
        (
            lambda r: (200, {}, b"<transcript><text start=") if "/api/timedtext" in (r.url or "") else None,
            ErrorCode.UPSTREAM,
        ),
        (lambda r: (200, {}, b"not json") if "/youtubei/" in (r.url or "") else None, ErrorCode.UPSTREAM),
    ],
)
def test_library_errors_become_our_codes(override: Override, code: ErrorCode) -> None:
    provider, _ = _provider(override)
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.captions(_ref(), Ctx()))
    assert caught.value.code is code, caught.value.message
    for surface, facts in surfaces().items():  # a step that exists there, and nothing that does not
        assert problems(caught.value.hint_for(surface), facts) == [], caught.value.hint_for(surface)
    assert "locally" not in " ".join(caught.value.hints.values())  # this rung runs on the local runtime
    assert "github.com/jdepoix" not in caught.value.message  # our words, not the library's essay


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (requests.ConnectTimeout("slow"), ErrorCode.TIMEOUT),
        (requests.ConnectionError("down"), ErrorCode.UPSTREAM),
    ],
)
def test_transport_failures(exc: Exception, code: ErrorCode) -> None:
    def fail(request: requests.PreparedRequest) -> Reply | None:
        raise exc

    provider, _ = _provider(fail)
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.captions(_ref(), Ctx()))
    assert caught.value.code is code


def test_an_aborted_call_stops_at_the_next_request() -> None:
    ctx = Ctx()

    def abort_after_watch(request: requests.PreparedRequest) -> Reply | None:
        if "/watch" in (request.url or ""):
            ctx.abort()
        return None

    provider, adapter = _provider(abort_after_watch)
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.captions(_ref(), ctx))
    assert caught.value.code is ErrorCode.CANCELED
    assert len(adapter.seen) == 1  # the player request was never sent


def test_an_expired_call_makes_no_request() -> None:
    provider, adapter = _provider()
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.captions(_ref(), Ctx(timeout=0)))
    assert caught.value.code is ErrorCode.TIMEOUT
    assert adapter.seen == []


def test_captions_only_videos_only() -> None:
    provider, adapter = _provider()
    assert isinstance(provider, SourceProvider)
    assert provider.accepts(_ref())
    assert not provider.accepts(parse_input("https://www.youtube.com/playlist?list=PL0123456789"))
    assert not provider.accepts(parse_input("https://vimeo.com/123"))
    assert not hasattr(provider, "audio")  # it cannot fetch sound: the speech-to-text ladder skips it
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.metadata(_ref(), Ctx()))
    assert caught.value.code is ErrorCode.NO_PROVIDER
    with pytest.raises(VidError) as caught:
        asyncio.run(provider.comments(_ref(), Ctx(), limit=5))
    assert caught.value.code is ErrorCode.NO_PROVIDER
    assert adapter.seen == []


def test_the_ladder_falls_through_from_innertube_to_the_library(httpx_mock: HTTPXMock) -> None:
    """InnerTube reads the metadata but its caption download fails; the library's rung answers."""

    def innertube(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/timedtext":
            return httpx.Response(503, text="busy")
        return httpx_callback(request)

    httpx_mock.add_callback(innertube, is_reusable=True)

    async def scenario():
        client = httpx.AsyncClient()
        provider, _ = _provider()
        runtime = Runtime(
            settings=load_settings({}),
            storage=MemoryStorage(),
            http=client,
            sources=[YouTubeProvider(client), provider],
        )
        try:
            return await get_context(runtime, "GJLlxj_dtq8", mode="captions")
        finally:
            await runtime.aclose()

    context = asyncio.run(scenario())
    assert context.metadata.title.startswith("Surface Go Review")
    assert context.transcript is not None and context.transcript.producer == PRODUCER
    assert [(a.id, a.stage, a.outcome, a.reason) for a in context.attempts] == [
        ("youtube", "metadata", "ok", None),
        ("youtube", "captions", "error", "upstream"),
        ("transcript-api", "captions", "ok", None),
        ("memory", "save", "ok", None),
    ]


def test_a_rung_without_metadata_does_not_hide_the_real_error(httpx_mock: HTTPXMock) -> None:
    """InnerTube is blocked; the library's ``no-provider`` for metadata leaves the answer ``blocked``."""
    httpx_mock.add_callback(httpx_callback, is_reusable=True)

    async def scenario():
        client = httpx.AsyncClient()
        provider, _ = _provider()
        runtime = Runtime(
            settings=load_settings({}),
            storage=MemoryStorage(),
            http=client,
            sources=[YouTubeProvider(client), provider],
        )
        try:
            return await get_context(runtime, "botCheck001")
        finally:
            await runtime.aclose()

    with pytest.raises(VidError) as caught:
        asyncio.run(scenario())
    assert caught.value.code is ErrorCode.BLOCKED
    assert [(a.id, a.reason) for a in caught.value.attempts] == [
        ("youtube", "blocked"),
        ("transcript-api", "no-provider"),
    ]


def test_the_caption_file_is_read_by_our_parser_not_the_librarys() -> None:
    """The library removes every tag after decoding; the file it fetched is read verbatim instead."""
    doc = (
        b'<?xml version="1.0" encoding="utf-8" ?><transcript>'
        b'<text start="0" dur="1">performance &amp;amp; &amp;lt;price&amp;gt;. &lt;i&gt;ok&lt;/i&gt;</text>'
        b"</transcript>"
    )

    def serve(request: requests.PreparedRequest) -> Reply | None:
        return (200, {}, doc) if urlsplit(request.url or "").path == "/api/timedtext" else None

    transcript, _ = _captions(override=serve)
    assert [s.text for s in transcript.segments] == ["performance & <price>. ok"]


def test_a_caption_file_fetched_elsewhere_falls_back_to_the_librarys_text() -> None:
    """Should a release fetch the track from another path, the rung still answers (its text, tags out)."""
    player = (
        (YTA / "youtube.innertube.json.static").read_bytes().replace(b"/api/timedtext?", b"/api/timedtext2?")
    )

    def serve(request: requests.PreparedRequest) -> Reply | None:
        path = urlsplit(request.url or "").path
        if path == "/youtubei/v1/player":
            return 200, {"Content-Type": "application/json"}, player
        if path == "/api/timedtext2":
            return 200, {}, (YTA / "transcript.xml.static").read_bytes()
        return None

    transcript, adapter = _captions(override=serve)
    assert [s.text for s in transcript.segments][:2] == [
        "Hey, this is just a test",
        "this is not the original transcript",
    ]
    assert any("/api/timedtext2?" in line for line in adapter.seen)
