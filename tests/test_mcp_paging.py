"""MCP results fit the client (issue #11 item 6): long results page by default.

Claude Code caps a tool result at 25,000 tokens and other clients cut long ones short, so
``get_transcript``, ``get_section`` and ``export_context_pack`` answer at most
``VID2CONTEXT_MCP_MAX_TOKENS`` (20,000 by default) when the call gives no ``maxTokens``. A
three-hour talk (``talks.three_hour_talk``, about 36k tokens) is saved in the runtime's library, so
nothing is fetched; the SDK's in-process client calls the real server (and, at the end, the
Streamable HTTP mount of the real app), and each next page is the call the previous page names.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import srt
import webvtt
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from vid2context.api import create_app
from vid2context.formats import FORMATTERS
from vid2context.formats.blocks import transcript_tokens
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.runtime import Runtime
from vid2context.tokens import estimate_tokens

from .pages import follow, next_call, reassembles, stated_tokens, text_of
from .runtimes import Runtimes, asgi_lifespan, serve
from .talks import THREE_HOURS, three_hour_talk

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

ONE_HOUR = "OneHourTalk"
DEFAULT = 20_000
EVERYTHING = 10_000_000
SINGLE_FORMATS = [f.id for f in FORMATTERS.values() if not f.combines_videos]
_SEGMENTS = re.compile(r"segments (\d+)-(\d+) of (\d+)")


async def _runtime(runtimes: Runtimes, httpx_mock: Any, environ: dict[str, str] | None = None) -> Runtime:
    """A runtime whose library holds the three-hour talk and a one-hour one; ``httpx_mock`` answers
    nothing, so any upstream request would fail the test."""
    rt = await runtimes.build(environ)
    await rt.storage.put_context(three_hour_talk())
    await rt.storage.put_context(three_hour_talk(ONE_HOUR, minutes=60, seed=1))
    return rt


@pytest.fixture
async def client(runtimes: Runtimes, httpx_mock: Any) -> AsyncIterator[Client]:
    async with Client(create_mcp(await _runtime(runtimes, httpx_mock))) as connected:
        yield connected


async def _text(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return text_of(result)


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, text_of(result)
    return json.loads(result.content[0].text)


def _in_order_once(pages: list[str]) -> None:
    """The pages' segment ranges follow each other from the first segment to the last."""
    ranges = [tuple(int(n) for n in _SEGMENTS.search(page.splitlines()[-1]).groups()) for page in pages]
    assert ranges[0][0] == 0
    for (_, end, _), (start, _, _) in zip(ranges, ranges[1:], strict=False):
        assert start == end + 1
    assert ranges[-1][1] == ranges[-1][2] - 1


# --- get_transcript --------------------------------------------------------------------------------


async def test_a_three_hour_transcript_comes_in_pages_of_20000_tokens(client: Client) -> None:
    assert 33_000 < transcript_tokens(three_hour_talk()) < 39_000  # the defect's "about 36k tokens"
    whole = await _text(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": EVERYTHING})
    assert estimate_tokens(whole) > 25_000  # what Claude Code would have refused
    page = await _text(client, "get_transcript", {"url": THREE_HOURS})
    assert DEFAULT - 500 < estimate_tokens(page) <= DEFAULT  # a full page, and no more
    assert stated_tokens(page) == pytest.approx(estimate_tokens(page), abs=1)
    (inside,) = unfence(page)
    assert inside.startswith("# A three-hour talk (ThreeHours1)\n")
    marker = page.splitlines()[-1]
    assert marker.startswith("[Partial transcript: segments 0-")
    assert marker.split("; next page:")[0].endswith(f"about {estimate_tokens(page)} tokens in this result")
    tool, args = next_call(page)
    assert tool == "get_transcript" and args == {"url": THREE_HOURS, "cursor": args["cursor"]}
    assert re.fullmatch(r"seg:\d+", args["cursor"])
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("get_transcript", "get_section"):
        assert "or 20000 tokens when it is left out" in tools[name].description
    assert "The page size is 20000 tokens." in tools["export_context_pack"].description
    assert {"maxTokens", "cursor"} <= set(tools["get_section"].input_schema["properties"])
    assert "cursor" in tools["export_context_pack"].input_schema["properties"]


@pytest.mark.parametrize(
    ("fmt", "extra"), [(fmt, {}) for fmt in SINGLE_FORMATS] + [("text", {"timestamps": False})]
)
async def test_following_each_page_reads_the_whole_transcript_once_in_order(
    client: Client, fmt: str, extra: dict[str, Any]
) -> None:
    args = {"url": THREE_HOURS, **({"format": fmt} if fmt != "text" else {}), **extra}
    whole_text = await _text(client, "get_transcript", {**args, "maxTokens": EVERYTHING})
    (whole,) = unfence(whole_text)
    pages = await follow(client, "get_transcript", args, DEFAULT)
    assert len(pages) >= 2
    _in_order_once(pages)
    contents = [unfence(page)[0] for page in pages]
    if fmt == "json":
        segments = [seg for content in contents for seg in json.loads(content)["transcript"]["segments"]]
        assert segments == json.loads(whole)["transcript"]["segments"]
    else:
        assert reassembles(pages, whole)
    for content in contents:  # every page stands alone
        if fmt == "srt":
            assert list(srt.parse(content))
        elif fmt == "vtt":
            assert webvtt.from_buffer(__import__("io").StringIO(content)).captions
        elif fmt in ("text", "markdown"):
            assert content.startswith("# A three-hour talk")


async def test_zero_turns_default_paging_off(runtimes: Runtimes, httpx_mock: Any) -> None:
    rt = await _runtime(runtimes, httpx_mock, {"VID2CONTEXT_MCP_MAX_TOKENS": "0"})
    async with Client(create_mcp(rt)) as client:
        whole = await _text(client, "get_transcript", {"url": THREE_HOURS})
        assert estimate_tokens(whole) > 30_000
        assert whole.splitlines()[-1].startswith("[End of transcript: segments 0-")
        assert next_call(whole) is None
        stated_tokens(whole)
        section = await _text(client, "get_section", {"url": THREE_HOURS, "from": 0})
        assert estimate_tokens(section) > 30_000 and "[Partial" not in section
        pack = await _text(client, "export_context_pack", {"urls": [THREE_HOURS]})
        assert estimate_tokens(pack) > 30_000 and "[Partial pack" not in pack
        explicit = await follow(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": 8000}, 8000)
        assert len(explicit) >= 5  # maxTokens still pages
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "left out, the whole transcript comes in one result" in tools["get_transcript"].description
        assert (
            "without maxTokens the whole pack comes in one result" in tools["export_context_pack"].description
        )


async def test_a_custom_page_size_is_honoured(runtimes: Runtimes, httpx_mock: Any) -> None:
    rt = await _runtime(runtimes, httpx_mock, {"VID2CONTEXT_MCP_MAX_TOKENS": "6_000"})
    async with Client(create_mcp(rt)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "or 6000 tokens when it is left out" in tools["get_transcript"].description
        (whole,) = unfence(
            await _text(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": EVERYTHING})
        )
        pages = await follow(client, "get_transcript", {"url": THREE_HOURS}, 6000)
        assert len(pages) >= 6
        assert all(estimate_tokens(page) > 5000 for page in pages[:-1])  # filled, not just small
        _in_order_once(pages)
        assert reassembles(pages, whole)
        packed = await follow(client, "export_context_pack", {"urls": [ONE_HOUR]}, 6000)
        assert len(packed) >= 2


async def test_an_explicit_max_tokens_wins_and_keeps_its_bounds(client: Client) -> None:
    bigger = await _text(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": 30_000})
    assert DEFAULT < estimate_tokens(bigger) <= 30_000
    assert next_call(bigger) == (
        "get_transcript",
        {"url": THREE_HOURS, "maxTokens": 30_000, "cursor": next_call(bigger)[1]["cursor"]},
    )
    smaller = await follow(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": 4000}, 4000)
    _in_order_once(smaller)
    for tool, budget in [("get_transcript", 99), ("get_transcript", EVERYTHING + 1), ("get_section", 99)]:
        body = _error(
            await client.call_tool(
                tool,
                {"url": THREE_HOURS, "from": 0, "maxTokens": budget}
                if tool == "get_section"
                else {"url": THREE_HOURS, "maxTokens": budget},
            )
        )
        assert body["error"] == "bad-request" and "100 to 10000000" in body["message"]


# --- get_section ----------------------------------------------------------------------------------


async def test_a_long_section_pages_and_a_short_one_comes_whole(client: Client) -> None:
    args = {"url": THREE_HOURS, "from": "10:00", "to": "2:50:00"}
    (whole,) = unfence(await _text(client, "get_section", {**args, "maxTokens": EVERYTHING}))
    pages = await follow(client, "get_section", args, DEFAULT)
    assert len(pages) == 2
    _in_order_once(pages)
    assert reassembles(pages, whole)
    first, last = pages[0].splitlines()[-1], pages[-1].splitlines()[-1]
    assert re.match(
        r"\[Partial section: segments 0-\d+ of \d+, 9:5\d to ", first
    )  # from the segment at 10:00
    assert last.startswith("[End of section: ") and last.split(";")[0].endswith("to 2:50:00 of 3:00:00")
    for page in pages:  # each page's one-line header says what that page covers, as its marker does
        header = unfence(page)[0].splitlines()[0]
        assert header.startswith("# A three-hour talk (ThreeHours1) · ")
        marker_span = re.search(r", (\d[\d:]*) to (\d[\d:]*) of ", page.splitlines()[-1]).groups()
        assert f" · {marker_span[0]}–{marker_span[1]} of 3:00:00 · manual captions, en · " in header
    chapter = await _text(client, "get_section", {"url": THREE_HOURS, "chapter": 2})
    assert estimate_tokens(chapter) < 5000
    assert (
        chapter.splitlines()[-1]
        == f"[End of section: segments 0-221 of 222, 30:00 to 45:00 of 3:00:00; about {estimate_tokens(chapter)} tokens in this result]"
    )
    assert unfence(chapter)[0].startswith(
        "# A three-hour talk (ThreeHours1) · Part 3, 30:00–45:00 of 3:00:00 · "
    )
    assert (
        _error(await client.call_tool("get_section", {"url": THREE_HOURS, "chapter": 2, "cursor": "seg:x"}))[
            "error"
        ]
        == "bad-request"
    )


# --- export_context_pack --------------------------------------------------------------------------


async def test_a_pack_without_max_tokens_comes_whole_in_pages(runtimes: Runtimes, httpx_mock: Any) -> None:
    urls = [THREE_HOURS, "ftp://nope.example/x", ONE_HOUR]
    unpaged = await _runtime(runtimes, httpx_mock, {"VID2CONTEXT_MCP_MAX_TOKENS": "0"})
    async with Client(create_mcp(unpaged)) as whole_client:
        (whole,) = unfence(await _text(whole_client, "export_context_pack", {"urls": urls}))
    async with Client(create_mcp(await _runtime(runtimes, httpx_mock))) as client:
        pages = await follow(client, "export_context_pack", {"urls": urls}, DEFAULT)
        assert len(pages) == 3
        assert reassembles(pages, whole)
        preamble = "# Context pack: 2 videos, 1 not included\n\nCite as [Video title @ m:ss](link).\n\n"
        contents = [unfence(page)[0] for page in pages]
        assert all(content.startswith(preamble) for content in contents)
        assert contents[0].startswith(preamble + "## Videos\n1. ")  # the index comes first
        assert sum(content.count("## Not included") for content in contents) == 1
        markers = [page.splitlines()[-1] for page in pages]
        assert re.match(
            r"\[Partial pack: blocks 0-\d+ of \d+, from the start up to video 1 at \d:\d\d:\d\d;", markers[0]
        )
        assert re.match(
            r"\[Partial pack: blocks \d+-\d+ of \d+, from video 1 at \d:\d\d:\d\d up to video", markers[1]
        )
        assert markers[2].startswith("[End of pack: ") and " to the end; " in markers[2]
        assert all(f"(the whole pack: about {estimate_tokens(whole)})" in marker for marker in markers)
        for page in pages:
            assert "Packed 2 of 3 inputs" in page
        budget = await _text(client, "export_context_pack", {"urls": urls, "maxTokens": 8000})
        assert " tokens · below\n" in budget and "[Partial pack" not in budget  # a budget chooses
        assert estimate_tokens(budget) <= 8000  # the whole result, fences and closing line included
        rest = f"call export_context_pack {json.dumps({'urls': urls})} and follow its pages."
        assert budget.splitlines()[-1].endswith(rest)  # how to get what the budget cut
        small = await _text(client, "export_context_pack", {"urls": [ONE_HOUR]})
        assert "[Partial pack" not in small and "[End of pack" not in small  # it fits: as it always came


async def test_pack_cursors_are_checked(client: Client) -> None:
    page = await _text(client, "export_context_pack", {"urls": [THREE_HOURS]})
    _, args = next_call(page)
    cursor = args["cursor"]
    fingerprint = cursor.rsplit(":", 1)[1]
    refused = [
        ({"urls": [THREE_HOURS], "cursor": "seg:10"}, "not a pack cursor"),
        ({"urls": [THREE_HOURS], "cursor": "pack:1"}, "not a pack cursor"),
        ({"urls": [THREE_HOURS], "cursor": cursor, "maxTokens": 8000}, "maxTokens"),
        ({"urls": [THREE_HOURS], "cursor": f"pack:99999:{fingerprint}"}, "past the end"),
        ({"urls": [THREE_HOURS, ONE_HOUR], "cursor": cursor}, "changed"),
    ]
    for arguments, why in refused:
        body = _error(await client.call_tool("export_context_pack", arguments))
        assert body["error"] == "bad-request" and why in body["message"] and body["hint"], body


async def test_a_collection_that_changed_refuses_its_old_cursor(client: Client) -> None:
    created = json.loads(text_of(await client.call_tool("create_collection", {"name": "Talks"})))
    collection = created["collection"]["id"]
    await client.call_tool("add_to_collection", {"collection": collection, "urls": [THREE_HOURS]})
    page = await _text(client, "export_context_pack", {"collection": collection})
    tool, args = next_call(page)
    assert tool == "export_context_pack" and args == {"collection": collection, "cursor": args["cursor"]}
    second = await _text(client, tool, args)
    assert unfence(second)[0].startswith("# Context pack: 1 video\n")
    await client.call_tool("add_to_collection", {"collection": collection, "urls": [ONE_HOUR]})
    body = _error(await client.call_tool(tool, args))
    assert body["error"] == "bad-request" and "changed" in body["message"]
    assert body["hint"] == "Start again without a cursor."


# --- other surfaces --------------------------------------------------------------------------------


async def test_rest_is_not_paged(runtimes: Runtimes, httpx_mock: Any, client: Client) -> None:
    rt = await _runtime(runtimes, httpx_mock)
    plain = {"url": THREE_HOURS, "maxTokens": EVERYTHING, "timestamps": False}  # REST's default
    (whole,) = unfence(await _text(client, "get_transcript", plain))
    async with serve(create_app(rt)) as http:
        transcript = await http.get("/api/v1/transcript", params={"url": THREE_HOURS})
        pack = await http.get("/api/v1/pack", params={"url": THREE_HOURS})
    assert transcript.status_code == 200 and transcript.text == whole
    assert estimate_tokens(transcript.text) > 30_000
    assert pack.status_code == 200 and estimate_tokens(pack.text) > 30_000 and "[Partial" not in pack.text


async def test_over_streamable_http(runtimes: Runtimes, httpx_mock: Any) -> None:
    """The app's own /mcp mount, in this process: the same pages over JSON-RPC on HTTP."""
    app = create_app(await _runtime(runtimes, httpx_mock))
    transport = httpx2.ASGITransport(app=app)
    async with asgi_lifespan(app):
        http = httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60)
        async with Client(streamable_http_client("http://127.0.0.1/mcp", http_client=http)) as client:
            (whole,) = unfence(
                await _text(client, "get_transcript", {"url": THREE_HOURS, "maxTokens": EVERYTHING})
            )
            pages = await follow(client, "get_transcript", {"url": THREE_HOURS}, DEFAULT)
    assert len(pages) == 3  # about 42k tokens with its [m:ss] lines
    assert reassembles(pages, whole)
