"""``include=on_screen``: the picture read beside whatever transcript the mode gives.

A short deck drawn with ffmpeg (``tests/slides.py``) with a sidecar ``.srt``: ``mode=captions``
gives the subtitles, ``include=on_screen`` adds the slides as ``mode=video`` reads them (real
ffmpeg and Tesseract), over REST and MCP through the SDK's client. The runtimes without a rung
that reads the picture (memory, the Worker on Miniflare) refuse it before anything is fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.errors import VidError
from vid2context.includes import parse_include
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime, build_local_runtime

from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .slides import SLIDES, draw_deck, slide_words

pytestmark = pytest.mark.anyio

API = "/api/v1"
SECONDS = 2
SPOKEN = "welcome to the quarterly review"
SRT = f"1\n00:00:00,500 --> 00:00:03,000\n{SPOKEN}\n\n2\n00:00:03,000 --> 00:00:04,000\nnext slide please\n"


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two slides of two seconds with subtitles beside them."""
    folder = tmp_path_factory.mktemp("talk")
    draw_deck(folder / "talk.mp4", SLIDES[:2], seconds=SECONDS)
    (folder / "talk.srt").write_text(SRT)
    return folder / "talk.mp4"


@pytest.fixture
async def runtime(talk: Path, tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path / "home"),
            "VID2CONTEXT_FILE_ROOTS": str(talk.parent),
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_RATE_LIMIT": "0",
            "VID2CONTEXT_EMBED_ON_SAVE": "0",
        }
    )
    try:
        yield rt
    finally:
        await rt.aclose()


def _words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"\w+", text)}


def _stages(body: dict) -> list[tuple[str, str]]:
    return [(a["stage"], a["outcome"]) for a in body["attempts"]]


async def test_include_on_screen_adds_the_slides_to_the_captions(runtime: Runtime, talk: Path) -> None:
    async with serve(create_app(runtime)) as http:
        plain = (await http.get(f"{API}/context", params={"url": str(talk), "mode": "captions"})).json()
        assert plain["visual"] is None and ("ocr", "ok") not in _stages(plain)
        asked = {"url": str(talk), "mode": "captions", "include": "on_screen"}
        reply = await http.get(f"{API}/context", params=asked)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["transcript"]["origin"] == "sidecar"
        assert body["transcript"]["segments"][0]["text"] == SPOKEN
        assert len(body["visual"]) == 2, body["visual"]
        for i, (item, slide) in enumerate(zip(body["visual"], SLIDES[:2], strict=True)):
            assert i * SECONDS <= item["startSec"] < i * SECONDS + 1, item
            assert len(slide_words(slide) & _words(item["text"])) >= 0.8 * len(slide_words(slide))
        assert ("ocr", "ok") in _stages(body) and ("captions", "ok") in _stages(body)
        again = (await http.get(f"{API}/context", params=asked)).json()
        assert _stages(again) == [("cache", "ok")] and again["visual"] == body["visual"]
        text = await http.get(f"{API}/transcript", params={**asked, "format": "text"})
        assert text.status_code == 200, text.text
        assert SPOKEN in text.text and "On screen" in text.text and "kickstand" in _words(text.text)
        without = await http.get(f"{API}/transcript", params={"url": str(talk), "mode": "captions"})
        assert "On screen" in without.text  # the reading is saved: later answers carry it


async def test_a_section_shows_what_was_on_screen_during_it(runtime: Runtime, talk: Path) -> None:
    """/section and get_section read the picture with include, and show only the slides of their
    time range (the second slide starts at 0:02)."""
    first, second = "revenue", "kickstand"  # a word of each slide that nobody says
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        asked = {"url": str(talk), "mode": "captions", "include": "on_screen", "from": "0", "to": "1"}
        reply = await http.get(f"{API}/section", params=asked)
        assert reply.status_code == 200, reply.text
        assert "On screen" in reply.text and first in _words(reply.text) and second not in _words(reply.text)
        bad = await http.get(f"{API}/section", params={**asked, "include": "slides"})
        assert bad.status_code == 400 and "include=on_screen" in bad.json()["error"]["hint"]
    async with Client(create_mcp(runtime)) as mcp:
        later = await mcp.call_tool(
            "get_section", {"url": str(talk), "mode": "captions", "from": "2", "include": ["on_screen"]}
        )
        refused = await mcp.call_tool("get_section", {"url": str(talk), "from": "2", "include": ["x"]})
    text = "\n".join(block.text for block in later.content)
    assert not later.is_error, text
    assert second in _words(text) and first not in _words(text), text
    assert refused.is_error and json.loads(refused.content[0].text)["error"] == "bad-request"


async def test_mcp_get_transcript_takes_include(runtime: Runtime, talk: Path) -> None:
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool(
            "get_transcript", {"url": str(talk), "mode": "captions", "include": ["on_screen"]}
        )
        text = "\n".join(block.text for block in result.content)
        assert not result.is_error, text
        assert SPOKEN in text and "On screen" in text and "[0:02]" in text and "kickstand" in _words(text)
        for bad in (["slides"], ["x" * 5000], ["on_screen"] * 50, ["on_screen", "summary"]):
            refused = await mcp.call_tool("get_transcript", {"url": str(talk), "include": bad})
            assert refused.is_error
            error = json.loads(refused.content[0].text)
            assert error["error"] == "bad-request" and "on_screen" in error["hint"], error
        for typed in ("on_screen", ["on_screen", 7], {"on_screen": True}):  # refused by the schema
            refused = await mcp.call_tool("get_transcript", {"url": str(talk), "include": typed})
            assert refused.is_error and json.loads(refused.content[0].text)["error"] == "bad-request"


@pytest.mark.parametrize(
    "value", ["slides", "on_screen,summary", "x" * 1000, "on_screen,\x00", "ON-SCREEN,bogus"]
)
async def test_rest_refuses_an_unknown_include_before_any_fetch(runtime: Runtime, value: str) -> None:
    async with serve(create_app(runtime)) as http:
        for route in ("context", "transcript"):
            reply = await http.get(f"{API}/{route}", params={"url": "/nowhere/missing.mp4", "include": value})
            assert reply.status_code == 400, reply.text
            error = reply.json()["error"]
            assert error["code"] == "bad-request" and "include=on_screen" in error["hint"]


def test_parse_include_reads_both_spellings() -> None:
    assert parse_include(None) == frozenset() and parse_include("") == frozenset()
    assert parse_include(" On-Screen , ") == {"on_screen"} == parse_include(["on_screen", "on_screen"])
    with pytest.raises(VidError):
        parse_include({"on_screen": True})  # type: ignore[arg-type]


@ON_WORKER_TOO
async def test_where_nothing_reads_the_picture_include_is_unsupported_input(runtimes: Runtimes) -> None:
    runtime = await runtimes.build()
    async with serve(create_app(runtime)) as http:
        reply = await http.get(
            f"{API}/context", params={"url": "dQw4w9WgXcQ", "include": "on_screen", "mode": "captions"}
        )
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["code"] == "unsupported-input" and "without include" in error["hint"]
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("get_transcript", {"url": "dQw4w9WgXcQ", "include": ["on_screen"]})
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert body["error"] == "unsupported-input" and "do not retry" in body["hint"]
