"""A language the video has no track in: the best track, saying so, with the languages there are.

The recorded video (``GJLlxj_dtq8``) has caption tracks in zh, cs, en (manual and automatic), de,
hi, ja, ko and es, and YouTube translates into eighteen more; ``xx`` is neither. Every surface says
what it answered instead: the header's ``Track`` line (MCP text, REST text and Markdown), the
structured fields (``requestedLanguage``, ``availableLanguages``) of the transcript and the
outline, and REST's ``Content-Language``. A saved transcript answers a later call as that call
asked: without a language it is not said to be a stand-in for ``xx``.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.runtime import Runtime

from .runtimes import Runtimes
from .test_mcp_tools import json_block, text_of
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

VIDEO = "GJLlxj_dtq8"
TRACKS = ["zh", "cs", "en", "de", "hi", "ja", "ko", "es"]
SAID = "requested xx not available, so the best track instead"


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"})


def _rest(runtime: Runtime) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t")


def _fetches(httpx_mock: Any) -> int:
    return sum(1 for request in httpx_mock.get_requests() if request.url.path == "/watch")


async def test_mcp_answers_the_best_track_and_says_which_languages_there_are(runtime: Runtime) -> None:
    async with Client(create_mcp(runtime)) as client:
        page = "\n".join(
            unfence(text_of(await client.call_tool("get_transcript", {"url": VIDEO, "language": "xx"})))
        )
        outline = json_block(await client.call_tool("get_outline", {"url": VIDEO, "language": "xx"}))
    track = next(line for line in page.splitlines() if line.startswith("- Track: "))
    assert SAID in track and "tracks: " + ", ".join(TRACKS) in track, track
    assert "translat" not in track  # no translation of ours exists: nothing offers one
    assert "- Transcript: manual captions, en," in page
    info = outline["transcript"]
    assert (info["language"], info["requestedLanguage"], info["availableLanguages"]) == ("en", "xx", TRACKS)


async def test_rest_answers_the_best_track_with_fields_a_header_and_content_language(
    runtime: Runtime,
) -> None:
    async with _rest(runtime) as client:
        context = (await client.get("/api/v1/context", params={"url": VIDEO, "lang": "xx"})).json()
        text = await client.get("/api/v1/transcript", params={"url": VIDEO, "lang": "xx"})
        subtitles = await client.get(
            "/api/v1/transcript", params={"url": VIDEO, "lang": "xx", "format": "srt"}
        )
        section = await client.get("/api/v1/section", params={"url": VIDEO, "lang": "xx", "chapter": "0"})
    transcript = context["transcript"]
    assert (transcript["language"], transcript["requestedLanguage"]) == ("en", "xx")
    assert transcript["availableLanguages"] == TRACKS and SAID in transcript["note"]
    assert text.headers["content-language"] == "en" and f"- Track: {SAID}" in text.text
    assert subtitles.headers["content-language"] == "en"  # no header in the body: the HTTP one says it
    assert section.status_code == 200 and section.headers["content-language"] == "en"


async def test_a_track_that_exists_is_no_stand_in(runtime: Runtime) -> None:
    async with _rest(runtime) as client:
        context = (await client.get("/api/v1/context", params={"url": VIDEO, "lang": "de"})).json()
    transcript = context["transcript"]
    assert (transcript["language"], transcript["requestedLanguage"]) == ("de", None)
    assert transcript["availableLanguages"] == TRACKS and "not available" not in transcript["note"]


async def test_the_saved_stand_in_answers_each_later_call_as_it_asked(
    runtime: Runtime, httpx_mock: Any
) -> None:
    """The library keeps the best track once; asking for xx again answers from it without a fetch,
    and a call that asks for no language (or for en) is not told about xx."""
    async with _rest(runtime) as client:
        first = (await client.get("/api/v1/context", params={"url": VIDEO, "lang": "xx"})).json()
        fetched = _fetches(httpx_mock)
        again = (await client.get("/api/v1/context", params={"url": VIDEO, "lang": "XX"})).json()
        plain = (await client.get("/api/v1/context", params={"url": VIDEO})).json()
        english = (await client.get("/api/v1/context", params={"url": VIDEO, "lang": "en"})).json()
    assert _fetches(httpx_mock) == fetched == 1  # the three later calls read the library
    assert again["transcript"]["requestedLanguage"] == "xx" and again["attempts"][0]["stage"] == "cache"
    for later in (plain, english):
        transcript = later["transcript"]
        assert transcript["requestedLanguage"] is None and "xx" not in (transcript["note"] or "")
        assert transcript["availableLanguages"] == TRACKS
        assert (
            transcript["note"] == first["transcript"]["note"].replace(f"{SAID}: ", "").split("; tracks:")[0]
        )
