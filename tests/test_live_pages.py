"""Live pages: ``GET /api/v1/live`` and ``watch_live`` given a page, whose stream yt-dlp finds.

The real yt-dlp (its generic extractor) reads pages served on loopback (an HTML5 ``<video>`` whose
source is an HLS playlist); the probe then checks the playlist it found as if it had been given.
The whole watch through a page runs in ``test_live.py`` (``watch_live``); here only what is
decided before the first event, so no ffmpeg starts. ``live_manifest`` reads yt-dlp's ``-J``
answer: the shapes below are those yt-dlp documents for a YouTube live (muxed HLS formats), a
DASH live, a scheduled stream and a replay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.live import prepare_live
from vid2context.live.ffmpeg_live import FfmpegLive
from vid2context.live.pages import live_manifest
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.providers.ytdlp import YtDlpProvider
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .fake_whisper import FakeWhisper
from .live_stream import LiveHls
from .runtimes import serve
from .test_stt_ladder import openai_env

pytestmark = pytest.mark.anyio

API = "/api/v1/live"
ON_AIR = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\nlive0.ts\n"
FINISHED = ON_AIR + "#EXT-X-ENDLIST\n"


def _page(source: str) -> str:
    return f'<html><body><video controls><source src="{source}" type="application/x-mpegURL"></video></body></html>'


@pytest.fixture
def site(tmp_path: Path) -> Iterator[LiveHls]:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "onair.m3u8").write_text(ON_AIR)
    (folder / "replay.m3u8").write_text(FINISHED)
    (folder / "watch.html").write_text(_page("onair.m3u8"))
    (folder / "replay.html").write_text(_page("replay.m3u8"))
    with LiveHls(folder, tmp_path / "unused.wav", start=False) as server:
        yield server


def at(site: LiveHls, name: str) -> str:
    return site.url.replace("live.m3u8", name)


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    with FakeWhisper(key=None) as fake:
        built = build_runtime(load_settings(openai_env(fake)), http=httpx.AsyncClient())
        built.stt_plan.prep = FfmpegPrep()
        built.live = FfmpegLive(built.http, pages=YtDlpProvider(platforms=("web",)), start_timeout_s=1.0)
        yield built
        await built.aclose()


async def test_a_page_leads_to_its_stream_and_a_replay_to_the_transcript(
    runtime: Runtime, site: LiveHls
) -> None:
    watch = await prepare_live(runtime, at(site, "watch.html"), 1, Ctx(timeout=120))
    assert watch.media == at(site, "onair.m3u8")
    async with serve(create_app(runtime)) as http:
        replay = await http.get(API, params={"url": at(site, "replay.html")})
    assert replay.status_code == 400, replay.text
    error = replay.json()["error"]
    assert error["code"] == "unsupported-input" and "/api/v1/transcript" in error["hint"], error


def _youtube_live(**changes: Any) -> dict[str, Any]:
    master = "https://manifest.googlevideo.com/api/manifest/hls_variant/id/abc/file/index.m3u8"
    formats = [
        {"format_id": "sb0", "protocol": "mhtml", "url": "https://i.ytimg.com/sb/0", "acodec": "none"},
        *(
            {
                "format_id": str(itag), "protocol": "m3u8_native", "tbr": tbr, "acodec": "mp4a.40.2",
                "url": f"https://manifest.googlevideo.com/api/manifest/hls_playlist/itag/{itag}/index.m3u8",
                "manifest_url": master,
            }
            for itag, tbr in ((94, 1200.5), (91, 290.2), (93, 740.0))
        ),
    ]  # fmt: skip
    return {"id": "jfKfPfyJRdk", "title": "lofi radio", "is_live": True, "live_status": "is_live",
            "formats": formats, **changes}  # fmt: skip


def test_live_manifest_reads_yt_dlp_answers() -> None:
    assert live_manifest(_youtube_live()).endswith("/itag/91/index.m3u8")  # the least data, with sound
    dash = {
        "is_live": True,
        "formats": [
            {"protocol": "http_dash_segments", "url": "https://cdn.example/a.mp4", "acodec": "opus",
             "tbr": 64, "manifest_url": "https://cdn.example/live.mpd"},
        ],
    }  # fmt: skip
    assert live_manifest(dash) == "https://cdn.example/live.mpd"
    unknown = {"formats": [{"protocol": "m3u8_native", "url": "https://cdn.example/x.m3u8"}]}
    assert live_manifest(unknown) == "https://cdn.example/x.m3u8"  # the probe decides
    cases = [
        (_youtube_live(is_live=False, live_status="was_live"), ErrorCode.UNSUPPORTED_INPUT, "transcript"),
        (_youtube_live(is_live=False, live_status="is_upcoming"), ErrorCode.TIMEOUT, "not started"),
        ({"title": "a talk", "url": "https://cdn.example/talk.mp4", "protocol": "https"},
         ErrorCode.UNSUPPORTED_INPUT, "transcript"),
        ({"title": "nothing", "formats": []}, ErrorCode.UNSUPPORTED_INPUT, ".m3u8"),
    ]  # fmt: skip
    for info, code, words in cases:
        with pytest.raises(VidError) as caught:
            live_manifest(info)
        assert caught.value.code is code, info
        assert words in (caught.value.message + str(caught.value.hints)), caught.value
