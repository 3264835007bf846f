"""The on-screen layer (``mode=video``): slides drawn with ffmpeg come back, at their times.

Real parts only: ffmpeg draws the decks (``tests/slides.py``) and picks the frames, Tesseract reads
them, the app answers over REST and MCP through the SDK's client. OCR is checked for the words each
slide shows, never for its confidences.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata, VisualItem
from vid2context.providers.localfile import LocalFileProvider
from vid2context.runtime import Runtime, build_local_runtime, build_runtime
from vid2context.search.engine import SearchRequest, search
from vid2context.settings import load_settings
from vid2context.visual.frames import FramePlan
from vid2context.visual.local_ocr import LocalOcr
from vid2context.visual.merge import FrameText, merge_frames

from .fake_llm import FakeLlm, images_of
from .fake_llm import Request as FakeRequest
from .runtimes import ON_EVERY_RUNTIME, Runtimes, serve
from .slides import SLIDES, draw_deck, slide_words

pytestmark = pytest.mark.anyio

API = "/api/v1"
SECONDS = 4


def _words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"\w+", text)}


@pytest.fixture(scope="module")
def decks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of every video these tests read, drawn once."""
    folder = tmp_path_factory.mktemp("decks")
    draw_deck(folder / "deck.mp4", seconds=SECONDS)
    draw_deck(folder / "uhd.mp4", SLIDES[:2], seconds=2, size="3840x2160")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=640x360:d=3:r=10",
         "-vf", "boxblur=20:5", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-an", str(folder / "blur.mp4")],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
         "-c:a", "libmp3lame", str(folder / "tone.mp3")],
        check=True, capture_output=True,
    )  # fmt: skip
    return folder


async def _local(decks: Path, tmp_path: Path, **env: str) -> Runtime:
    return build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path / "home"),
            "VID2CONTEXT_FILE_ROOTS": str(decks),
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_RATE_LIMIT": "0",
            **env,
        }
    )


@pytest.fixture
async def runtime(decks: Path, tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = await _local(decks, tmp_path)
    try:
        yield rt
    finally:
        await rt.aclose()


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(create_app(runtime)) as http:
        yield http


def _assert_slides(visual: list[dict[str, Any]], slides: tuple[tuple[str, str], ...], seconds: int) -> None:
    """One stretch per slide, starting within a second of the slide's start, ending at the next
    one's, with (nearly) every word the slide shows and none of another slide's."""
    assert len(visual) == len(slides), visual
    for i, (item, slide) in enumerate(zip(visual, slides, strict=True)):
        assert item["kind"] == "on_screen_text"
        assert i * seconds <= item["startSec"] < i * seconds + 1, item
        assert item["endSec"] == pytest.approx((i + 1) * seconds, abs=1), item
        wanted, got = slide_words(slide), _words(item["text"])
        assert len(wanted & got) >= 0.8 * len(wanted), (slide, item["text"])
        others = set().union(*(slide_words(s) for s in slides if s != slide)) - wanted
        assert not got & others, item["text"]


async def test_the_words_of_each_slide_come_back_at_their_times(
    client: httpx.AsyncClient, decks: Path
) -> None:
    reply = await client.get(f"{API}/context", params={"url": str(decks / "deck.mp4"), "mode": "video"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    _assert_slides(body["visual"], SLIDES, SECONDS)
    assert set(body["visual"][0]) == {"startSec", "endSec", "kind", "text"}
    assert body["visualNote"] is None
    assert body["transcript"] is None  # a silent deck: the picture is the answer
    steps = [(a["id"], a["stage"], a["outcome"]) for a in body["attempts"]]
    assert ("visual/tesseract", "ocr", "ok") in steps
    assert ("localfile", "captions", "error") in steps  # why there is no transcript
    again = (
        await client.get(f"{API}/context", params={"url": str(decks / "deck.mp4"), "mode": "video"})
    ).json()
    assert [a["stage"] for a in again["attempts"]] == ["cache"]
    assert again["visual"] == body["visual"]


async def test_repeated_text_across_frames_is_one_stretch(decks: Path, tmp_path: Path) -> None:
    """A frame every second reads each slide four times: still one stretch per slide."""
    rt = await _local(decks, tmp_path, VID2CONTEXT_FRAME_INTERVAL_S="1", VID2CONTEXT_FRAME_SCENE_PCT="0")
    try:
        async with serve(create_app(rt)) as http:
            body = (
                await http.get(f"{API}/context", params={"url": str(decks / "deck.mp4"), "mode": "video"})
            ).json()
    finally:
        await rt.aclose()
    _assert_slides(body["visual"], SLIDES, SECONDS)


async def test_text_and_markdown_show_an_on_screen_section(client: httpx.AsyncClient, decks: Path) -> None:
    url = str(decks / "deck.mp4")
    text = (
        await client.get(f"{API}/transcript", params={"url": url, "mode": "video", "format": "text"})
    ).text
    lines = text.splitlines()
    assert "On screen" in lines
    shown = lines[lines.index("On screen") + 1 :]
    assert [line[:6] for line in shown] == ["[0:00]", "[0:04]", "[0:08]", "[0:12]", "[0:16]", "[0:20]"]
    assert "kickstand" in _words(shown[1]) and "questions" in _words(shown[5])
    markdown = (
        await client.get(f"{API}/transcript", params={"url": url, "mode": "video", "format": "markdown"})
    ).text
    assert "## On screen" in markdown
    assert re.search(r"^- \[0:12\].*Latency", markdown, re.M), markdown


async def test_a_4k_frame_is_read(client: httpx.AsyncClient, decks: Path) -> None:
    """3840x2160 frames are scaled to 1920 wide before OCR, and still read."""
    reply = await client.get(f"{API}/context", params={"url": str(decks / "uhd.mp4"), "mode": "video"})
    assert reply.status_code == 200, reply.text
    _assert_slides(reply.json()["visual"], SLIDES[:2], 2)


async def test_a_file_without_a_video_track_is_unsupported_input(
    client: httpx.AsyncClient, decks: Path
) -> None:
    reply = await client.get(f"{API}/context", params={"url": str(decks / "tone.mp3"), "mode": "video"})
    assert reply.status_code == 400
    body = reply.json()["error"]
    assert body["code"] == "unsupported-input"
    assert "no video track" in body["message"] and "mode=auto" in body["hint"]


async def test_a_picture_that_cannot_be_read_says_so(client: httpx.AsyncClient, decks: Path) -> None:
    url = str(decks / "blur.mp4")
    body = (await client.get(f"{API}/context", params={"url": url, "mode": "video"})).json()
    assert body["visual"] == []
    assert "No text could be read" in body["visualNote"]
    text = (
        await client.get(f"{API}/transcript", params={"url": url, "mode": "video", "format": "text"})
    ).text
    assert "On screen\nNote: No text could be read" in text
    markdown = (
        await client.get(f"{API}/transcript", params={"url": url, "mode": "video", "format": "markdown"})
    ).text
    assert "## On screen\n\n_No text could be read" in markdown


async def test_an_upload_is_read_too(client: httpx.AsyncClient, decks: Path) -> None:
    data = (decks / "deck.mp4").read_bytes()
    made = await client.post(f"{API}/uploads", files={"file": ("deck.mp4", data, "video/mp4")})
    assert made.status_code == 201, made.text
    assert made.json()["input"] == f"upload:{hashlib.sha256(data).hexdigest()}"
    body = (await client.get(f"{API}/context", params={"url": made.json()["input"], "mode": "video"})).json()
    _assert_slides(body["visual"], SLIDES, SECONDS)


async def test_without_tesseract_the_answer_says_what_to_install(decks: Path, tmp_path: Path) -> None:
    rt = await _local(decks, tmp_path)
    try:
        files = next(p for p in rt.sources if isinstance(p, LocalFileProvider))
        rt.visual = [LocalOcr(files=files, uploads=None, plan=FramePlan(), tesseract="no-such-tesseract")]
        async with serve(create_app(rt)) as http:
            reply = await http.get(f"{API}/context", params={"url": str(decks / "deck.mp4"), "mode": "video"})
    finally:
        await rt.aclose()
    assert reply.status_code == 503
    body = reply.json()
    assert body["error"]["code"] == "no-provider" and "tesseract-ocr" in body["error"]["hint"]
    skipped = {"id": "visual/tesseract", "stage": "ocr", "outcome": "skipped"}
    assert skipped.items() <= body["attempts"][-1].items()


async def test_where_nothing_reads_the_picture_mode_video_is_unsupported_input() -> None:
    """The portable runtime (what the Worker has): no ffmpeg, no OCR, so no rung at all."""
    rt = build_runtime(load_settings({"VID2CONTEXT_ACCESS_LOG": "0"}))
    assert rt.visual == []
    try:
        async with serve(create_app(rt)) as http:
            reply = await http.get(f"{API}/context", params={"url": "upload:" + "a" * 64, "mode": "video"})
        async with Client(create_mcp(rt)) as mcp:  # refused before anything is fetched
            result = await mcp.call_tool("get_transcript", {"url": "dQw4w9WgXcQ", "mode": "video"})
    finally:
        await rt.aclose()
    assert reply.status_code == 400
    rest = reply.json()["error"]
    assert rest["code"] == "unsupported-input" and "local runtime" in rest["hint"]
    assert result.is_error
    error = json.loads(result.content[0].text)
    assert error["error"] == "unsupported-input" and "do not retry" in error["hint"]


async def test_mcp_get_transcript_in_video_mode(runtime: Runtime, decks: Path) -> None:
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("get_transcript", {"url": str(decks / "deck.mp4"), "mode": "video"})
    text = "\n".join(block.text for block in result.content)
    assert not result.is_error, text
    assert "On screen" in text and "kickstand" in _words(text) and "[0:20]" in text


def test_merging_keeps_the_fullest_reading_and_splits_on_blank_frames() -> None:
    frames = [
        FrameText(0.0, "Agenda\nFirst point"),
        FrameText(2.0, "Agenda\nFirst point\nSecond point"),  # a build slide gains a bullet
        FrameText(4.0, "Agenda  \n  First point\n~~"),  # the same slide read again, noise dropped
        FrameText(6.0, ""),  # a blank frame ends it
        FrameText(8.0, "Summary slide"),
        FrameText(10.0, "Agenda\nFirst point"),  # shown again later: a new stretch
    ]
    items = merge_frames(frames, end_sec=12.0)
    assert [(i.start_sec, i.end_sec, i.text) for i in items] == [
        (0.0, 6.0, "Agenda\nFirst point\nSecond point"),
        (8.0, 10.0, "Summary slide"),
        (10.0, 12.0, "Agenda\nFirst point"),
    ]
    assert merge_frames([], end_sec=5.0) == []


async def test_on_screen_text_is_searchable(runtime: Runtime, client: httpx.AsyncClient, decks: Path) -> None:
    """A deck read with mode=video is found by a word only its slide shows, as an on_screen hit."""
    url = str(decks / "deck.mp4")
    assert (await client.get(f"{API}/context", params={"url": url, "mode": "video"})).status_code == 200
    body = (await client.get(f"{API}/search", params={"q": "kickstand", "mode": "keyword"})).json()
    assert body["hits"], body
    top = body["hits"][0]
    assert top["kind"] == "on_screen" and 4 <= top["startSec"] < 5
    assert "**Kickstand**" in top["snippet"]
    async with Client(create_mcp(runtime)) as mcp:
        found = await mcp.call_tool("search_transcript", {"query": "kickstand", "mode": "keyword"})
    text = "\n".join(block.text for block in found.content)
    assert not found.is_error, text
    assert re.search(r"\[0:04-0:08\].*keyword · on screen", text), text


def _talk_with_slides() -> VideoContext:
    native = "SlidesTalk1"
    return VideoContext(
        id=f"youtube:{native}",
        metadata=VideoMetadata(id=native, platform="youtube", title="Slides talk", duration_sec=20.0),
        transcript=Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="test",
            segments=[
                Segment(start_sec=0.0, end_sec=5.0, text="welcome everyone to the review"),
                Segment(start_sec=5.0, end_sec=10.0, text="the battery matters more than mileage"),
            ],
        ),
        visual=[
            VisualItem(start_sec=2.0, end_sec=9.0, kind="on_screen_text", text="Kickstand tilts\nbackwards"),
        ],
    )


@ON_EVERY_RUNTIME
async def test_every_store_finds_on_screen_text_as_its_own_kind(runtimes: Runtimes) -> None:
    """SQLite, memory and D1 index the stretches beside the segments, and tell them apart."""
    runtime = await runtimes.build({"VID2CONTEXT_EMBED_ON_SAVE": "0"})
    await runtime.storage.put_context(_talk_with_slides())
    shown = await search(runtime, SearchRequest(query="kickstand", mode="keyword"))
    spoken = await search(runtime, SearchRequest(query="battery", mode="keyword"))
    assert [(h.kind, h.start_sec, h.text) for h in shown.hits] == [
        ("on_screen", 2.0, "Kickstand tilts / backwards")
    ]
    assert [(h.kind, h.start_sec) for h in spoken.hits] == [("transcript", 5.0)]


async def test_models_lists_the_ocr_rung(client: httpx.AsyncClient) -> None:
    listed = (await client.get(f"{API}/models", params={"kind": "visual"})).json()["models"]
    assert [(m["id"], m["tier"], m["enabled"], m["requires"]) for m in listed] == [
        ("visual/tesseract", "local", True, [])
    ]
    assert "lang:eng" in listed[0]["capabilities"]


def _describes(request: FakeRequest) -> str:
    images = images_of(request)
    assert len(images) == 1 and images[0].startswith(b"\x89PNG"), "one PNG frame per request"
    return "A blurred test pattern of coloured bars."


async def test_a_vision_model_describes_what_ocr_cannot_read(decks: Path, tmp_path: Path) -> None:
    with FakeLlm(key="vk", reply=_describes, models={"vision-1"}) as fake:
        env = {"VID2CONTEXT_VISION_URL": fake.url + "/v1", "VID2CONTEXT_VISION_KEY": "vk"}
        rt = await _local(decks, tmp_path, VID2CONTEXT_VISION_MODEL="vision-1", **env)
        try:
            async with serve(create_app(rt)) as http:
                blur = (
                    await http.get(f"{API}/context", params={"url": str(decks / "blur.mp4"), "mode": "video"})
                ).json()
                asked = len(fake.requests)
                deck = (
                    await http.get(f"{API}/context", params={"url": str(decks / "deck.mp4"), "mode": "video"})
                ).json()
        finally:
            await rt.aclose()
    assert blur["visual"] == [
        {"startSec": 0.0, "endSec": 3.0, "kind": "scene", "text": "A blurred test pattern of coloured bars."}
    ]
    assert blur["visualNote"] is None
    assert ("visual/openai-compatible/vision-1", "vision", "ok") in [
        (a["id"], a["stage"], a["outcome"]) for a in blur["attempts"]
    ]
    assert asked == 1 and len(fake.requests) == 1  # every slide of the deck had text: no more calls
    assert {item["kind"] for item in deck["visual"]} == {"on_screen_text"}


async def test_a_refused_vision_key_leaves_the_ocr_and_says_so(decks: Path, tmp_path: Path) -> None:
    with FakeLlm(key="right", reply=_describes) as fake:
        env = {"VID2CONTEXT_VISION_URL": fake.url + "/v1", "VID2CONTEXT_VISION_KEY": "wrong"}
        rt = await _local(decks, tmp_path, **env)
        try:
            async with serve(create_app(rt)) as http:
                reply = await http.get(
                    f"{API}/context", params={"url": str(decks / "blur.mp4"), "mode": "video"}
                )
        finally:
            await rt.aclose()
    assert reply.status_code == 200
    body = reply.json()
    assert body["visual"] == []
    assert (
        "No text could be read" in body["visualNote"]
        and "Scenes were not described (auth:" in body["visualNote"]
    )
    assert ("vision", "error", "auth") in [
        (a["stage"], a["outcome"], a.get("reason")) for a in body["attempts"]
    ]


@pytest.fixture
def web_decks(decks: Path) -> Iterator[str]:
    """The decks served over HTTP on 127.0.0.1, as a page yt-dlp's generic extractor downloads."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(decks))
    handler.log_message = lambda *args: None  # type: ignore[assignment]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_web_video_is_downloaded_by_yt_dlp_and_read(
    client: httpx.AsyncClient, web_decks: str
) -> None:
    reply = await client.get(f"{API}/context", params={"url": f"{web_decks}/deck.mp4", "mode": "video"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    _assert_slides(body["visual"], SLIDES, SECONDS)
    assert ("visual/tesseract", "ocr", "ok") in [
        (a["id"], a["stage"], a["outcome"]) for a in body["attempts"]
    ]
