"""Packs that keep their budget and the right parts, on both surfaces (issue #12 item 5).

Three talks are saved in the runtime's library (``tests/talks.py``): a bike review and a
sourdough video of eight chapters each, the parts a comparison needs in the middle (the kickstand,
chapter 4; the baking, chapter 5), and a talk without chapters (read by time sections). The MCP
tool is called through the SDK's in-process client and REST through the real app; nothing of ours
is patched, and ``httpx_mock`` answers nothing, so no upstream request is made.

What is checked is what an agent relies on: the whole result (MCP: fences and closing line
included; REST: the body) is never over ``maxTokens``; the minimum a too-small budget names really
is the minimum; the query brings in the matching chapter of each video; every call an outline
names reads the part it says; and "Not included" says exactly what is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.formats.pack import MAX_QUERY_CHARS
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.models import VideoContext
from vid2context.outline import get_section
from vid2context.runtime import Runtime
from vid2context.tokens import estimate_tokens

from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .talks import BIKE, BIKE_TOPICS, BREAD, bike_review, sourdough, topic_talk

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

PLAIN = "NoChapters1"
URLS = [BIKE, BREAD, PLAIN]
FAILS = "ftp://nope.example/x"  # refused before anything is fetched
MINIMUM = re.compile(r"Give maxTokens of at least (\d+) ")
ENTRY = re.compile(r"^  - (\d+) · (?:(\d+:\d\d) )?(.*) · (\d+) tokens(?: · match)?( · below)?$", re.MULTILINE)
CALL = re.compile(
    r"^- Outline: .*; read (?:chapter|section) N \(for the tokens beside it\): (.*)$", re.MULTILINE
)


@dataclass
class Surfaces:
    mcp: Client
    http: httpx.AsyncClient

    async def mcp_pack(self, **args: Any) -> tuple[bool, str]:
        result = await self.mcp.call_tool("export_context_pack", args)
        return bool(result.is_error), "\n".join(block.text for block in result.content)

    async def rest_pack(self, urls: list[str], **params: Any) -> httpx.Response:
        query = [("url", url) for url in urls] + [(name, str(value)) for name, value in params.items()]
        return await self.http.get("/api/v1/pack", params=query)

    async def mcp_minimum(self, **args: Any) -> int:
        is_error, text = await self.mcp_pack(**args, maxTokens=1)
        assert is_error, text
        body = json.loads(text)
        assert body["error"] == "bad-request" and "maxTokens=1 is too small" in body["message"]
        return int(MINIMUM.search(body["hint"]).group(1))

    async def rest_minimum(self, urls: list[str], **params: Any) -> int:
        response = await self.rest_pack(urls, maxTokens=1, **params)
        assert response.status_code == 400, response.text
        return int(MINIMUM.search(response.json()["error"]["hint"]).group(1))


def talks() -> list[VideoContext]:
    """The videos of ``URLS``, in order."""
    return [
        bike_review(),
        sourdough(),
        topic_talk(PLAIN, "A review, no chapters", BIKE_TOPICS, chapters=False),
    ]


async def _runtime(runtimes: Runtimes) -> Runtime:
    rt = await runtimes.build()
    for context in talks():
        await rt.storage.put_context(context)
    return rt


@pytest.fixture
async def surfaces(runtimes: Runtimes, httpx_mock: Any) -> AsyncIterator[Surfaces]:
    rt = await _runtime(runtimes)
    async with Client(create_mcp(rt)) as mcp, serve(create_app(rt, owns_runtime=False)) as http:
        yield Surfaces(mcp, http)


def _videos(pack: str) -> list[str]:
    return re.findall(r"^## \d+\. .*?(?=^## |\Z)", pack, re.MULTILINE | re.DOTALL)


def _below(video: str) -> list[int]:
    return [int(m[1]) for m in ENTRY.finditer(video) if m[5]]


# --- the budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [None, "kickstand crust"])
async def test_a_pack_is_never_over_its_budget_on_either_surface(
    surfaces: Surfaces, query: str | None
) -> None:
    extra = {"query": query} if query else {}
    _, whole_mcp = await surfaces.mcp_pack(urls=URLS)
    (whole,) = unfence(whole_mcp)
    top = estimate_tokens(whole_mcp) + 40
    low = await surfaces.mcp_minimum(urls=URLS, **extra)
    for budget in [*range(low, top, (top - low) // 24), top]:
        is_error, text = await surfaces.mcp_pack(urls=URLS, maxTokens=budget, **extra)
        assert not is_error, (budget, text)
        assert estimate_tokens(text) <= budget, (budget, estimate_tokens(text))
        (pack,) = unfence(text)
        if estimate_tokens(whole_mcp) <= budget:
            assert pack == whole and "chose from" not in text
        else:
            assert "[Truncated" not in pack and f"maxTokens={budget} chose from a pack of about" in text
    low = await surfaces.rest_minimum(URLS, **extra)
    top = estimate_tokens(whole) + 40
    for budget in [*range(low, top, (top - low) // 24), top]:
        response = await surfaces.rest_pack(URLS, maxTokens=budget, **extra)
        assert response.status_code == 200, (budget, response.text)
        assert estimate_tokens(response.text) <= budget, (budget, estimate_tokens(response.text))
        again = await surfaces.rest_pack(URLS, maxTokens=budget, **extra)
        assert again.text == response.text  # deterministic
        if budget >= estimate_tokens(whole):
            assert response.text == whole


@ON_WORKER_TOO
async def test_the_minimum_is_the_minimum_on_both_surfaces(surfaces: Surfaces) -> None:
    minimum = await surfaces.mcp_minimum(urls=URLS)
    is_error, text = await surfaces.mcp_pack(urls=URLS, maxTokens=minimum)
    assert not is_error and estimate_tokens(text) <= minimum
    for budget in (minimum - 1, 20):
        is_error, text = await surfaces.mcp_pack(urls=URLS, maxTokens=budget)
        body = json.loads(text)
        assert is_error and body["error"] == "bad-request", text
        assert (
            f"at least {minimum} " in body["hint"] and f"maxTokens={budget} is too small" in body["message"]
        )
    rest = await surfaces.rest_minimum(URLS)
    assert rest < minimum  # the MCP result also holds its fences and closing line
    assert (await surfaces.rest_pack(URLS, maxTokens=rest)).status_code == 200
    for budget in (rest - 1, 20):
        refused = await surfaces.rest_pack(URLS, maxTokens=budget)
        assert refused.status_code == 400 and f"at least {rest} " in refused.json()["error"]["hint"]
    posted = await surfaces.http.post("/api/v1/pack", json={"inputs": URLS, "maxTokens": rest - 1})
    assert posted.status_code == 400 and f"at least {rest} " in posted.json()["error"]["hint"]


# --- the right parts ------------------------------------------------------------------------------


async def test_the_query_brings_the_matching_chapter_of_each_video(surfaces: Surfaces) -> None:
    urls = [BIKE, BREAD]
    budget = await surfaces.mcp_minimum(urls=urls, query="kickstand baking") + 700
    is_error, text = await surfaces.mcp_pack(urls=urls, maxTokens=budget, query="kickstand baking")
    assert not is_error and estimate_tokens(text) <= budget
    response = await surfaces.rest_pack(urls, maxTokens=budget, query="kickstand baking")
    assert response.status_code == 200 and estimate_tokens(response.text) <= budget
    posted = await surfaces.http.post(
        "/api/v1/pack", json={"inputs": urls, "maxTokens": budget, "query": "kickstand baking"}
    )
    assert posted.text == response.text
    for pack in (unfence(text)[0], response.text):
        bike, bread = _videos(pack)
        assert 4 in _below(bike) and 5 in _below(bread)
        assert "### The kickstand (chapter 4)\n" in bike and "### Baking (chapter 5)\n" in bread
        assert re.search(r"\n  - 4 · 4:50 The kickstand · \d+ tokens · match · below\n", bike)
    _, spread = await surfaces.mcp_pack(urls=urls, maxTokens=budget)
    assert 4 not in _below(_videos(unfence(spread)[0])[0])  # without the query: spread from the ends


async def test_every_call_an_outline_names_reads_the_part_it_says(surfaces: Surfaces) -> None:
    """Each outline entry's call returns that part's words, and costs what the entry says."""
    budget = await surfaces.mcp_minimum(urls=URLS) + 400
    _, text = await surfaces.mcp_pack(urls=URLS, maxTokens=budget)
    rest = (await surfaces.rest_pack(URLS, maxTokens=budget)).text
    checked = 0
    for context, mcp_video, rest_video in zip(talks(), _videos(unfence(text)[0]), _videos(rest), strict=True):
        mcp_call = CALL.search(mcp_video).group(1)
        rest_call = CALL.search(rest_video).group(1)
        tool, _, arguments = mcp_call.partition(" ")
        assert tool == "get_section" and rest_call.startswith("GET /api/v1/section?url=youtube:")
        rest_entries = {int(m[1]): int(m[4]) for m in ENTRY.finditer(rest_video)}
        for entry in ENTRY.finditer(mcp_video):
            index, tokens = int(entry[1]), int(entry[4])
            words = [
                " ".join(s.text.split())
                for s in get_section(context, chapter=index).context.transcript.segments
            ]
            others = [
                " ".join(s.text.split())
                for i in range(len(rest_entries))
                if i != index
                for s in get_section(context, chapter=i).context.transcript.segments
            ]
            args = json.loads(arguments.replace("N}", f"{index}}}"))
            section = await surfaces.mcp.call_tool(tool, args)
            assert not section.is_error
            read = "\n".join(block.text for block in section.content)
            assert estimate_tokens(read) == tokens, (args, estimate_tokens(read), tokens)
            path = rest_call.removeprefix("GET ").replace("chapter=N", f"chapter={index}")
            got = await surfaces.http.get(path)
            assert got.status_code == 200 and estimate_tokens(got.text) == rest_entries[index], path
            for body in (read, got.text):
                flat = " ".join(body.split())
                assert all(w in flat for w in words) and not any(w in flat for w in others if w not in words)
            checked += 1
    assert checked == 8 + 8 + 2  # every chapter, and both time sections of the talk without chapters


# --- what is left out -----------------------------------------------------------------------------


async def test_not_included_lists_every_input_left_out_and_why(surfaces: Surfaces) -> None:
    args: dict[str, Any] = {"urls": [BIKE, FAILS, BREAD, PLAIN], "limit": 2}
    _, whole = await surfaces.mcp_pack(**args)
    assert "- NoChapters1: left out: beyond limit=2\n" in unfence(whole)[0]
    minimum = await surfaces.mcp_minimum(**args)
    for budget in range(minimum, minimum + 1500, 60):
        is_error, text = await surfaces.mcp_pack(**args, maxTokens=budget)
        assert not is_error and estimate_tokens(text) <= budget
        (pack,) = unfence(text)
        closing = text.splitlines()[-1]
        assert pack.startswith("# Context pack: 2 videos, 2 not included\n")
        listed = pack.split("## Not included\n", 1)[1].splitlines()
        assert listed[:2] == [
            f"- {FAILS}: unsupported-input: " + listed[0].split(": unsupported-input: ", 1)[1],
            f"- {PLAIN}: left out: beyond limit=2",
        ]
        empty = [n for n, video in enumerate(_videos(pack), start=1) if not _below(video)]
        assert listed[2:] == [
            f"- Video {n}'s transcript: none of its chapters fit what the budget left (its outline names the "
            "call for each)."
            for n in empty
        ]
        # What the closing line claims is so.
        assert "1 not included (listed in the pack under Not included)." in closing
        assert "1 more video was left out by limit=2 (listed under Not included)." in closing
    rest_min = await surfaces.rest_minimum([BIKE, FAILS, BREAD])
    body = (await surfaces.rest_pack([BIKE, FAILS, BREAD], maxTokens=rest_min)).text
    assert f"## Not included\n- {FAILS}: unsupported-input: " in body


# --- the arguments --------------------------------------------------------------------------------


async def test_max_tokens_and_query_say_what_they_do(surfaces: Surfaces) -> None:
    tools = {tool.name: tool for tool in (await surfaces.mcp.list_tools()).tools}
    properties = tools["export_context_pack"].input_schema["properties"]
    budget = properties["maxTokens"]["description"]
    assert "selects" in budget and "never pages" in budget and "bad-request with the minimum" in budget
    assert "cut" not in budget.replace("never a cut", "")
    assert "maxTokens" in properties["query"]["description"]
    assert MAX_QUERY_CHARS in [option.get("maxLength") for option in properties["query"].get("anyOf", [])] + [
        properties["query"].get("maxLength")
    ]
    openapi = (await surfaces.http.get("/api/v1/openapi.json")).json()
    names = {p["name"] for p in openapi["paths"]["/api/v1/pack"]["get"]["parameters"]}
    assert {"query", "maxTokens"} <= names


async def test_a_bad_query_is_refused_before_anything_is_read(surfaces: Surfaces, httpx_mock: Any) -> None:
    long = "kickstand " * (MAX_QUERY_CHARS // 10 + 1)
    is_error, text = await surfaces.mcp_pack(urls=["dQw4w9WgXcQ"], maxTokens=5000, query=long)
    assert is_error and json.loads(text)["error"] == "bad-request"
    for response in (
        await surfaces.rest_pack(["dQw4w9WgXcQ"], maxTokens=5000, query=long),
        await surfaces.http.post("/api/v1/pack", json={"inputs": ["dQw4w9WgXcQ"], "query": 7}),
        await surfaces.http.post("/api/v1/pack", json={"inputs": ["dQw4w9WgXcQ"], "query": long}),
    ):
        assert response.status_code == 400 and response.json()["error"]["hint"], response.text
    assert httpx_mock.get_requests() == []
