"""Live streams: ``GET /api/v1/live`` and ``watch_live`` on a real HLS stream on loopback.

ffmpeg writes the stream in real time (``-re``) from tone words the fake Whisper hears exactly
(``live_stream.py``), a real ffmpeg reads it, the pieces go through the real speech-to-text
ladder, and the events come back through the real app (``sse.SseClient``) or a real MCP client.
Nothing is timed: the tests wait on events, with hang guards. After each watch the process list
(``/proc``) must hold no ffmpeg reading the stream, and the temporary folder must be empty.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.live import read_manifest
from vid2context.live.core import _fresh
from vid2context.live.ffmpeg_live import FfmpegLive
from vid2context.mcp import create_mcp
from vid2context.models import Segment
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.providers.ytdlp import YtDlpProvider
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .fake_whisper import FakeWhisper, Word
from .live_stream import HANG_GUARD_S, LiveHls, readers_of, tone_words
from .runtimes import serve
from .sse import SseClient, parse
from .test_stt_ladder import openai_env

pytestmark = pytest.mark.anyio

API = "/api/v1/live"
HLS_MIME = "application/x-mpegURL"


@pytest.fixture(scope="module")
def tones(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Word]]:
    path = tmp_path_factory.mktemp("live") / "tones.wav"
    return path, tone_words(path, 4)  # 4 s of silence, then 12 s of words: two pieces


@pytest.fixture
def fake() -> Iterator[FakeWhisper]:
    with FakeWhisper(key=None) as server:
        yield server


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
async def runtime(fake: FakeWhisper) -> AsyncIterator[Runtime]:
    """The portable runtime with the local runtime's two ffmpeg parts, as ``build_local_runtime``
    adds them; a short start limit, for the stream that never starts."""
    built = build_runtime(load_settings(openai_env(fake)), http=httpx.AsyncClient())
    built.stt_plan.prep = FfmpegPrep()
    pages = YtDlpProvider(platforms=("web",))  # live pages, as build_local_runtime gives it
    built.live = FfmpegLive(built.http, pages=pages, start_timeout_s=1.0, poll_s=0.2)
    yield built
    await built.aclose()


@pytest.fixture(scope="module")
def long_tones(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("live") / "long.wav"
    tone_words(path, 20)  # a minute: still going when the client leaves after the first segment
    return path


def playing(folder: Path, wav: Path) -> Iterator[LiveHls]:
    folder.mkdir()
    with LiveHls(folder, wav) as live:
        live.wait_started()
        yield live


@pytest.fixture
def stream(tmp_path: Path, tones: tuple[Path, list[Word]]) -> Iterator[LiveHls]:
    yield from playing(tmp_path / "hls", tones[0])


@pytest.fixture
def long_stream(tmp_path: Path, long_tones: Path) -> Iterator[LiveHls]:
    yield from playing(tmp_path / "hls", long_tones)


def spoken(words: list[Word]) -> list[str]:
    return [w.text for w in words]


def heard(segments: list[dict[str, Any]]) -> list[str]:
    return [w.strip(".,") for s in segments for w in s["text"].split()]


async def gone(url: str, folder: Path) -> None:
    """Waits (with a hang guard) until nothing reads ``url`` and ``folder`` is empty: the stream
    ends before its cleanup task has finished stopping ffmpeg's process group."""
    async with asyncio.timeout(HANG_GUARD_S):
        while readers_of(url) or os.listdir(folder):
            await asyncio.sleep(0.05)


def assert_absolute(segments: list[dict[str, Any]], words: list[Word]) -> None:
    """Segment starts keep the spacing of the words they begin with, across pieces: times are the
    stream's, not the piece's (the watch joined at an unknown offset, so differences are checked)."""
    by_text = {w.text: w for w in words}
    firsts = [by_text[s["text"].split()[0].strip(".,")] for s in segments]
    offset = segments[0]["startSec"] - firsts[0].start
    for segment, word in zip(segments, firsts, strict=True):
        assert abs(segment["startSec"] - word.start - offset) <= 0.3, (segment, word)


async def test_the_words_come_back_as_segments_then_done_and_no_ffmpeg_is_left(
    runtime: Runtime, stream: LiveHls, tones: tuple[Path, list[Word]], temporary: Path
) -> None:
    app = create_app(runtime)
    async with (
        asyncio.timeout(HANG_GUARD_S),
        SseClient(app, f"{API}?url={quote(stream.url)}&maxMinutes=2") as sse,
    ):
        assert sse.status == 200 and sse.response_headers["content-type"].startswith("text/event-stream")
        blocks = [parse(b) for b in await sse.rest() if not b.startswith(":")]
    names = [b["event"] for b in blocks]
    assert names[0] == "status" and blocks[0]["data"]["state"] == "live"
    assert names[-1] == "done" and "error" not in names
    segments = [b["data"] for b in blocks if b["event"] == "segment"]
    assert heard(segments) == spoken(tones[1])  # every word once, in order
    assert_absolute(segments, tones[1])
    done = blocks[-1]["data"]
    assert done["reason"] == "ended" and done["segments"] == len(segments)
    assert [line.split("] ", 1)[1] for line in done["text"].splitlines()] == [s["text"] for s in segments]
    assert sum(1 for b in blocks if b["event"] == "status" and b["data"]["state"] == "heard") >= 2
    assert readers_of(stream.url) == []  # ffmpeg ended with the stream
    assert os.listdir(temporary) == []


async def test_a_client_that_goes_away_stops_ffmpeg_and_its_files(
    runtime: Runtime, long_stream: LiveHls, temporary: Path
) -> None:
    stream = long_stream
    app = create_app(runtime)
    async with asyncio.timeout(HANG_GUARD_S):
        async with SseClient(app, f"{API}?url={quote(stream.url)}") as sse:
            while (block := await sse.block()) is not None and "event: segment" not in block:
                pass
            assert block is not None  # a segment came while the stream goes on
            assert readers_of(stream.url)  # ffmpeg is reading it
        await gone(stream.url, temporary)
    assert stream.writer is not None and stream.writer.poll() is None  # the stream itself goes on


async def test_the_reading_stops_after_its_length_while_the_stream_goes_on(
    runtime: Runtime, long_stream: LiveHls, temporary: Path
) -> None:
    """What ``maxMinutes`` sets (``length_sec``, ffmpeg's ``-t``), at 8 s instead of a minute."""
    live = runtime.live
    assert isinstance(live, FfmpegLive)
    ctx = Ctx(timeout=HANG_GUARD_S)
    media = await live.probe(long_stream.url, ctx)
    async with (
        asyncio.timeout(HANG_GUARD_S),
        live.pieces(media, ctx, length_sec=8.0, piece_sec=5.0) as pieces,
    ):
        ends = [piece.end_sec async for piece in pieces]
    assert ends[-1] == pytest.approx(8.0, abs=0.05) and len(ends) >= 2
    assert readers_of(long_stream.url) == [] and os.listdir(temporary) == []
    assert long_stream.writer is not None and long_stream.writer.poll() is None  # still playing


async def test_watch_live_sends_the_rolling_transcript_and_then_the_text(
    runtime: Runtime, tmp_path: Path, tones: tuple[Path, list[Word]], temporary: Path
) -> None:
    """Given a page that shows the stream: yt-dlp finds its playlist, then the same watch. The
    stream begins once yt-dlp has read the page (the probe waits for its first segment), so no
    word is missed however long yt-dlp takes to start."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    folder = tmp_path / "hls"
    folder.mkdir()
    (folder / "live.m3u8").write_text("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n")
    (folder / "watch.html").write_text(
        f'<html><body><video controls><source src="live.m3u8" type="{HLS_MIME}"></video></body></html>'
    )
    assert isinstance(runtime.live, FfmpegLive)
    runtime.live.start_timeout_s = HANG_GUARD_S
    with LiveHls(folder, tones[0], start=False) as stream:
        page = stream.url.replace("live.m3u8", "watch.html")
        async with asyncio.timeout(HANG_GUARD_S), Client(create_mcp(runtime)) as client:
            call = asyncio.ensure_future(
                client.call_tool("watch_live", {"url": page, "maxMinutes": 1}, progress_callback=progress)
            )
            while not readers_of(page) and not call.done():  # yt-dlp reads the page...
                await asyncio.sleep(0.02)
            while readers_of(page):  # ...and has found the playlist
                await asyncio.sleep(0.02)
            stream.play()
            result = await call
        assert not result.is_error, result.content[0].text
        text = result.content[0].text
        lines = [m or "" for _, _, m in seen]
        rolled = [w.strip(".,") for line in lines for w in line.split("] ", 1)[1].split()]
        assert rolled == spoken(tones[1])
        assert all(total == 60.0 for _, total, _ in seen)
        assert [value for value, _, _ in seen] == sorted(value for value, _, _ in seen)
        assert "stopped because the stream ended" in text.splitlines()[0]
        assert all(line in text for line in lines)  # the final text holds every line sent as progress
        assert "BEGIN UNTRUSTED VIDEO TEXT" in text
        await gone(stream.url, temporary)


# --- bad input --------------------------------------------------------------------------------------


def static(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)


VOD = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\nlive0.ts\n#EXT-X-ENDLIST\n"
EMPTY_LIVE = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"


@pytest.fixture
def site(tmp_path: Path, tones: tuple[Path, list[Word]]) -> Iterator[LiveHls]:
    """A server of static files (no writer): a finished playlist, one that never starts, a page."""
    folder = tmp_path / "site"
    folder.mkdir()
    static(folder, "vod.m3u8", VOD)
    static(folder, "empty.m3u8", EMPTY_LIVE)
    static(folder, "page.html", "<html><body>not a stream</body></html>")
    (folder / "big.ts").write_bytes(b"\x47" * (3 * 1024 * 1024))  # media, not a manifest: read no further
    with LiveHls(folder, tones[0], start=False) as server:
        yield server


def at(server: LiveHls, name: str) -> str:
    return server.url.replace("live.m3u8", name)


def assert_error(response: httpx.Response, status: int, code: str, *hint_words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    assert body["error"].get("hint"), body
    assert "Traceback" not in response.text
    for word in hint_words:
        assert word in body["error"]["hint"], body


@pytest.mark.parametrize(
    ("minutes", "status", "code"),
    [
        ("0", 400, "bad-request"),
        ("10000", 400, "bad-request"),
        ("x", 400, "bad-request"),
        ("-1", 400, "bad-request"),
    ],
)
async def test_max_minutes_out_of_bounds(
    runtime: Runtime, site: LiveHls, minutes: str, status: int, code: str
) -> None:
    async with serve(create_app(runtime)) as http:
        response = await http.get(API, params={"url": at(site, "vod.m3u8"), "maxMinutes": minutes})
    assert_error(response, status, code, "240")


async def test_requests_that_are_not_a_live_stream(runtime: Runtime, site: LiveHls, temporary: Path) -> None:
    async with serve(create_app(runtime)) as http:
        vod = await http.get(API, params={"url": at(site, "vod.m3u8")})
        never = await http.get(API, params={"url": at(site, "empty.m3u8")})
        page = await http.get(API, params={"url": at(site, "page.html")})
        big = await http.get(API, params={"url": at(site, "big.ts")})
        missing = await http.get(API, params={"url": at(site, "nothing.m3u8")})
        youtube = await http.get(API, params={"url": "https://www.youtube.com/watch?v=GJLlxj_dtq8"})
        no_url = await http.get(API)
    assert_error(vod, 400, "unsupported-input", "/api/v1/transcript")
    assert_error(never, 504, "timeout")
    assert_error(page, 400, "unsupported-input", ".m3u8")  # yt-dlp found no stream on it
    assert_error(big, 400, "unsupported-input", ".m3u8")  # a media file: a video, not live
    assert_error(missing, 404, "not-found")
    assert_error(youtube, 400, "unsupported-input")
    assert_error(no_url, 400, "bad-request")
    assert os.listdir(temporary) == []  # nothing was started


async def test_the_portable_runtime_says_live_needs_the_local_one(fake: FakeWhisper, site: LiveHls) -> None:
    runtime = build_runtime(load_settings(openai_env(fake)), http=httpx.AsyncClient())  # the Worker's core
    try:
        async with serve(create_app(runtime)) as http:
            response = await http.get(API, params={"url": at(site, "empty.m3u8")})
        assert_error(response, 400, "unsupported-input", "local runtime")
        async with Client(create_mcp(runtime)) as client:
            result = await client.call_tool("watch_live", {"url": at(site, "empty.m3u8")})
        assert result.is_error and '"unsupported-input"' in result.content[0].text
        assert "vid2context mcp" in result.content[0].text
    finally:
        await runtime.aclose()


async def test_public_mode_refuses_a_loopback_stream(fake: FakeWhisper, site: LiveHls) -> None:
    runtime = build_runtime(
        load_settings({**openai_env(fake), "VID2CONTEXT_PUBLIC": "1"}), http=httpx.AsyncClient()
    )
    runtime.live = FfmpegLive(runtime.http)
    try:
        async with serve(create_app(runtime)) as http:
            response = await http.get(API, params={"url": at(site, "empty.m3u8")})
        assert_error(response, 400, "unsupported-input")
    finally:
        await runtime.aclose()


async def test_watch_live_bad_input(runtime: Runtime, site: LiveHls) -> None:
    async with Client(create_mcp(runtime)) as client:
        zero = await client.call_tool("watch_live", {"url": at(site, "vod.m3u8"), "maxMinutes": 0})
        huge = await client.call_tool("watch_live", {"url": at(site, "vod.m3u8"), "maxMinutes": 10_000})
        vod = await client.call_tool("watch_live", {"url": at(site, "vod.m3u8")})
    for result in (zero, huge):
        assert (
            result.is_error and '"bad-request"' in result.content[0].text and "240" in result.content[0].text
        )
    assert (
        vod.is_error
        and '"unsupported-input"' in vod.content[0].text
        and "get_transcript" in vod.content[0].text
    )
    assert "/api/v1" not in vod.content[0].text


# --- manifests ----------------------------------------------------------------------------------------


def test_manifests_live_or_not() -> None:
    base = "https://cdn.example/a/master.m3u8"
    master = read_manifest("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow/index.m3u8\n", base)
    assert master.kind == "hls-master" and master.variant == "https://cdn.example/a/low/index.m3u8"
    assert read_manifest(VOD, base).live is False
    assert read_manifest("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:1,\na.ts\n", base).live is False
    live = read_manifest("#EXTM3U\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n", base)
    assert live.live is True and live.segments == 2
    assert read_manifest(EMPTY_LIVE, base).segments == 0
    assert read_manifest('<?xml version="1.0"?><MPD type="dynamic" x="1">', base).live is True
    assert read_manifest('<MPD xmlns="urn:mpeg:dash" type="static">', base).live is False
    assert read_manifest("<html></html>", base).kind == "other"


def test_a_segment_both_overlapping_pieces_heard_goes_out_once_and_times_go_forward() -> None:
    """After a hard cut (no pause in the cut window) the next piece starts 2.5 s back, and real
    speech cut inside a sentence is heard by both pieces: what tiny.en gave for the espeak talk
    (``test_live_speech.py``), the first piece ending "...today is sunny and" at 10.16 s, the next
    beginning "today is sunny and warm, ..." at 7.5 s."""
    piece = [
        Segment(start_sec=0.0, end_sec=1.5, text="The weather"),  # wholly heard already: dropped
        Segment(start_sec=0.0, end_sec=8.66, text="today is sunny and warm, please remember."),
        Segment(start_sec=9.0, end_sec=12.0, text="Machine learning."),
    ]
    fresh = _fresh(piece, 7.5, 10.16, "The weather today is sunny and")
    assert [(s.start_sec, s.end_sec, s.text) for s in fresh] == [
        (10.16, 16.16, "warm, please remember."),
        (16.5, 19.5, "Machine learning."),
    ]
    heard_differently = _fresh(piece[1:2], 7.5, 10.16, "The weather today is sunday and")
    assert heard_differently[0].start_sec == 10.16  # no words repeat exactly: all kept, still in order
    assert heard_differently[0].text == "today is sunny and warm, please remember."
    assert _fresh([Segment(start_sec=2.0, end_sec=3.0, text="sunny and")], 7.5, 10.16, "is sunny and") == []
