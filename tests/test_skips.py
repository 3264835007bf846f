"""SponsorBlock skip segments (``integrations/``, ``GET /skips``, ``skip=`` on ``/transcript``,
MCP ``get_skip_segments``) and caption languages (``GET /caption-languages``,
``list_caption_languages``), on the memory runtime and on the Worker's (KV on Miniflare); the
cache and the stored transcript on the local SQLite stores too.

Upstreams are stand-ins: YouTube is the recorded replay over real HTTP, SponsorBlock the stand-in
in ``fake_sponsorblock.py`` that answers as its API docs show (hash-prefix lookups, 404 for none,
400 for bad parameters, 429 with Retry-After). What SponsorBlock is sent is checked too: the first
four hex digits of the id's SHA-256, never the id.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.integrations.skips import DEFAULT_CATEGORIES
from vid2context.integrations.sponsorblock import ATTRIBUTION, CATEGORIES, KV_PREFIX, fetch_segments
from vid2context.mcp import create_mcp
from vid2context.mcp.results import json_text
from vid2context.mcp.tools.transcripts import STATED_COSTS
from vid2context.storage.memory import MemoryKv
from vid2context.tokens import estimate_tokens

from .fake_sponsorblock import FakeSponsorBlock
from .runtimes import ON_EVERY_RUNTIME, ON_WORKER_TOO, Runtimes, serve
from .youtube_replay import PLAYLIST_ID, ReplayServer

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO_ID = "GJLlxj_dtq8"
VIDEO = f"https://www.youtube.com/watch?v={VIDEO_ID}"
BARE = "F1xioXWb8CY"  # has captions, SponsorBlock has no segments for it
SPONSORED_LINE = "this is not the original transcript"
OTHER_LINES = ("Hey, this is just a test", "just something shorter, I made up for testing")


@pytest.fixture
def sponsorblock() -> Iterator[FakeSponsorBlock]:
    with FakeSponsorBlock() as server:
        yield server


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _settings(replay: ReplayServer, sponsorblock: FakeSponsorBlock, **more: str) -> dict[str, str]:
    return {
        "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin,
        "VID2CONTEXT_SPONSORBLOCK_ORIGIN": sponsorblock.origin,
        "VID2CONTEXT_RATE_LIMIT": "0",
        **more,
    }


def _error(response: Any, code: ErrorCode, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code.value and body["error"]["hint"], body
    assert "Traceback" not in response.text
    return body


# --- GET /skips -------------------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_skips_answer_the_video_asked_about_by_hash_prefix_and_cache_it(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get(f"{API}/skips", params={"url": VIDEO})
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-data-attribution"] == ATTRIBUTION
        body = answer.json()
        assert body["source"] == "sponsorblock" and body["attribution"] == ATTRIBUTION
        assert body["categories"] == list(DEFAULT_CATEGORIES)
        assert [(s["category"], s["startSec"], s["endSec"]) for s in body["segments"]] == [
            ("sponsor", 1.5, 5.8),
            ("interaction", 100.0, 104.5),
            ("selfpromo", 102.0, 110.0),
        ]
        first = body["segments"][0]
        assert first["start"] == "0:01" and first["end"] == "0:05" and first["votes"] == 12
        assert first["locked"] is True and first["actionType"] == "skip"
        assert first["url"] == f"https://www.youtube.com/watch?v={VIDEO_ID}&t=1s"
        assert body["coveredSec"] == pytest.approx(4.3 + 10.0)  # 100-110 counted once
        assert "transcriptShare" not in body  # the REST route does not read the transcript

        # SponsorBlock learns four hex digits of the hash, and the prefix's other video stays out.
        ((path, query),) = sponsorblock.requests
        assert path == "/api/skipSegments/" + hashlib.sha256(VIDEO_ID.encode()).hexdigest()[:4]
        assert VIDEO_ID not in json.dumps(sponsorblock.requests)
        assert json.loads(query["categories"]) == list(CATEGORIES)
        assert all(s["uuid"] != "9" * 64 + "7" for s in body["segments"])

        # The whole answer is in the runtime's KV for an hour: other categories need no new request.
        assert await runtime.kv.get(KV_PREFIX + VIDEO_ID) is not None
        chapters = await client.get(
            f"{API}/skips", params={"url": VIDEO_ID, "categories": "chapter,poi_highlight"}
        )
        assert chapters.status_code == 200, chapters.text
        found = chapters.json()
        assert [(s["category"], s.get("description")) for s in found["segments"]] == [
            ("chapter", "Unboxing"),
            ("poi_highlight", None),
        ]
        assert found["coveredSec"] == 0  # a chapter and a highlight are the video's own content
        assert len(sponsorblock.requests) == 1


@ON_WORKER_TOO
async def test_a_404_is_no_segments_and_is_cached_too(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        for _ in range(2):
            answer = await client.get(f"{API}/skips", params={"url": BARE, "categories": "sponsor"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["segments"] == [] and answer.json()["coveredSec"] == 0
            assert answer.headers["x-data-attribution"] == ATTRIBUTION
    assert len(sponsorblock.requests) == 1


@pytest.mark.parametrize(
    ("params", "code", "word"),
    [
        ({}, ErrorCode.BAD_REQUEST, "url"),
        ({"url": "  "}, ErrorCode.BAD_REQUEST, "url"),
        ({"url": VIDEO, "categories": "sponsor,ads"}, ErrorCode.BAD_REQUEST, "selfpromo"),
        ({"url": VIDEO, "categories": "SPONSOR;DROP TABLE"}, ErrorCode.BAD_REQUEST, "music_offtopic"),
        ({"url": VIDEO, "categories": "<script>\x00"}, ErrorCode.BAD_REQUEST, "categories"),
        ({"url": VIDEO, "categories": "sponsor," * 500}, ErrorCode.BAD_REQUEST, "categories"),
        (
            {"url": f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"},
            ErrorCode.BAD_REQUEST,
            "list_items",
        ),
        ({"url": "https://vimeo.com/76979871"}, ErrorCode.UNSUPPORTED_INPUT, "YouTube"),
        ({"url": "x" * 5000}, ErrorCode.BAD_REQUEST, "URL"),
    ],
)
async def test_bad_skips_input_is_refused_before_any_request(
    runtimes: Runtimes,
    replay: ReplayServer,
    sponsorblock: FakeSponsorBlock,
    params: dict[str, str],
    code: ErrorCode,
    word: str | None,
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = _error(await client.get(f"{API}/skips", params=params), code, 400)
    if word == "list_items":  # a REST client is told the route, not the tool
        assert "GET /api/v1/items" in body["error"]["hint"]
    elif word:
        assert word in body["error"]["hint"] or word in body["error"]["message"]
    if code is ErrorCode.BAD_REQUEST and "categories" in params:
        assert all(name in body["error"]["hint"] for name in CATEGORIES)
    assert sponsorblock.requests == [] and replay.requests == []


@ON_WORKER_TOO
async def test_sponsorblock_failures_are_our_codes_and_never_cached(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:

        async def ask() -> Any:
            return await client.get(f"{API}/skips", params={"url": VIDEO})

        sponsorblock.fail_next = [(429, {"Retry-After": "42"})]
        limited = await ask()
        _error(limited, ErrorCode.RATE_LIMITED, 429)
        assert limited.headers["retry-after"] == "42"
        for status in (400, 500, 503, 200):  # 200: an HTML page where the JSON should be
            sponsorblock.fail_next = [(status, {})]
            body = _error(await ask(), ErrorCode.UPSTREAM, 502)
            assert "SponsorBlock" in body["error"]["message"]
        assert await runtime.kv.get(KV_PREFIX + VIDEO_ID) is None
        assert (await ask()).status_code == 200
        sponsorblock.limit = len(sponsorblock.requests)  # the documented rate limit, Retry-After 17
        assert (await ask()).status_code == 200  # cached: SponsorBlock is not asked again
        fresh = await client.get(f"{API}/skips", params={"url": BARE})
        _error(fresh, ErrorCode.RATE_LIMITED, 429)
        assert fresh.headers["retry-after"] == "17"


async def test_an_unreachable_sponsorblock_is_upstream_naming_the_setting(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    settings = _settings(replay, sponsorblock, VID2CONTEXT_SPONSORBLOCK_ORIGIN="http://127.0.0.1:9")
    runtime = await runtimes.build(settings)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = _error(await client.get(f"{API}/skips", params={"url": VIDEO}), ErrorCode.UPSTREAM, 502)
    assert "VID2CONTEXT_SPONSORBLOCK_ORIGIN" in body["error"]["hint"]


# --- skip= on /transcript ---------------------------------------------------------------------


@ON_EVERY_RUNTIME
async def test_skip_removes_segments_from_a_copy_and_the_stored_transcript_stays_whole(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        for skip in ("sponsor,selfpromo", "1", "SPONSOR"):
            cut = await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": skip})
            assert cut.status_code == 200, cut.text
            assert cut.headers["x-data-attribution"] == ATTRIBUTION
            assert SPONSORED_LINE not in cut.text and all(line in cut.text for line in OTHER_LINES)
        as_json = await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": "1", "format": "json"})
        transcript = as_json.json()["transcript"]
        assert [s["text"] for s in transcript["segments"]] == list(OTHER_LINES)
        assert "SponsorBlock" in transcript["note"] and "0:01-0:05" in transcript["note"]

        kept = await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": "outro"})
        assert kept.status_code == 200 and SPONSORED_LINE in kept.text  # the outro is past the words
        assert kept.headers["x-data-attribution"] == ATTRIBUTION
        whole = await client.get(f"{API}/transcript", params={"url": VIDEO})
        assert SPONSORED_LINE in whole.text and "x-data-attribution" not in whole.headers
        saved = (await client.get(f"{API}/library/youtube%3A{VIDEO_ID}")).json()
        assert len(saved["transcript"]["segments"]) == 3
    assert len(sponsorblock.requests) == 1  # one lookup, from KV after that


@pytest.mark.parametrize(
    ("skip", "url", "code"),
    [
        ("ads", VIDEO, ErrorCode.BAD_REQUEST),
        ("sponsor,,nope", VIDEO, ErrorCode.BAD_REQUEST),
        ("sponsor" * 100, VIDEO, ErrorCode.BAD_REQUEST),
        ("1", "https://vimeo.com/76979871", ErrorCode.UNSUPPORTED_INPUT),
    ],
)
async def test_a_bad_skip_is_refused_before_any_request(
    runtimes: Runtimes,
    replay: ReplayServer,
    sponsorblock: FakeSponsorBlock,
    skip: str,
    url: str,
    code: ErrorCode,
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        body = _error(await client.get(f"{API}/transcript", params={"url": url, "skip": skip}), code, 400)
    if code is ErrorCode.BAD_REQUEST:
        assert body["error"]["hint"].startswith("Give skip as any of")
    assert sponsorblock.requests == [] and replay.requests == []


async def test_skip_when_sponsorblock_limits_us_is_rate_limited_not_a_whole_transcript(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    sponsorblock.limit = 0
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": "1"})
    _error(answer, ErrorCode.RATE_LIMITED, 429)
    assert answer.headers["retry-after"] == "17"


# --- MCP get_skip_segments --------------------------------------------------------------------


def _json(result: Any) -> Any:
    blocks = [block.text for block in result.content]
    assert not result.is_error, blocks
    assert len(blocks) == 3 and blocks[0].startswith("=== BEGIN UNTRUSTED VIDEO TEXT [")
    return json.loads(blocks[1])


@ON_WORKER_TOO
async def test_get_skip_segments_says_the_transcript_share_of_each(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with Client(create_mcp(runtime)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        tool = listed["get_skip_segments"]
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is True
        assert set(tool.input_schema["properties"]) == {"url", "categories"}
        result = await client.call_tool(
            "get_skip_segments", {"url": VIDEO, "categories": ["sponsor", "outro"]}
        )
        body = _json(result)
        assert result.structured_content == body
        assert body["attribution"] == ATTRIBUTION and body["source"] == "sponsorblock"
        tokens = [estimate_tokens(line) for line in (OTHER_LINES[0], SPONSORED_LINE, OTHER_LINES[1])]
        sponsor, outro = body["segments"]
        assert sponsor["category"] == "sponsor" and outro["category"] == "outro"
        assert sponsor["transcriptShare"] == pytest.approx(tokens[1] / sum(tokens), abs=1e-4)
        assert outro["transcriptShare"] == 0  # past the last word
        assert body["transcriptShare"] == sponsor["transcriptShare"]
        assert body["transcriptTokens"] == sum(tokens)
        assert body["coveredSec"] == pytest.approx(4.3 + 16.0)

        bad = await client.call_tool("get_skip_segments", {"url": VIDEO, "categories": ["ads"]})
        assert bad.is_error
        error = json.loads(bad.content[0].text)
        assert error["error"] == "bad-request" and "Give categories as any of" in error["hint"]
        listing = await client.call_tool(
            "get_skip_segments", {"url": f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"}
        )
        assert json.loads(listing.content[0].text)["error"] == "bad-request"
        assert "list_items" in json.loads(listing.content[0].text)["hint"]
        other = await client.call_tool("get_skip_segments", {"url": "https://vimeo.com/76979871"})
        assert json.loads(other.content[0].text)["error"] == "unsupported-input"
    assert len(sponsorblock.requests) == 1


# --- caption languages ------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_caption_languages_over_rest_and_mcp_are_one_answer(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get(f"{API}/caption-languages", params={"url": VIDEO})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert {"language": "en", "name": "English", "kind": "manual", "translatable": True} in body["tracks"]
        assert {
            "language": "en",
            "name": "English (auto-generated)",
            "kind": "auto",
            "translatable": True,
        } in body["tracks"]
        assert len(body["tracks"]) == 9 and len(body["translationTargets"]) == 18
        assert body["translationTargets"][0] == {"language": "ar", "name": "Arabic"}
        assert {"language": "zh-Hant", "name": "Chinese (Traditional)"} in body["translationTargets"]

        for params, code in (
            ({}, ErrorCode.BAD_REQUEST),
            ({"url": f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"}, ErrorCode.BAD_REQUEST),
            ({"url": "\x00" * 10}, ErrorCode.BAD_REQUEST),
            ({"url": "y" * 5000}, ErrorCode.BAD_REQUEST),
        ):
            _error(await client.get(f"{API}/caption-languages", params=params), code, 400)
        missing = await client.get(f"{API}/caption-languages", params={"url": "unavailable"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not-found", missing.text
        elsewhere = await client.get(f"{API}/caption-languages", params={"url": "https://vimeo.com/76979871"})
        _error(elsewhere, ErrorCode.NO_PROVIDER, 503)  # no yt-dlp on these runtimes
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("list_caption_languages", {"url": VIDEO})
        assert json.loads(result.content[0].text) == body  # one core, one answer


async def test_what_get_skip_segments_costs_is_what_it_says(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with Client(create_mcp(runtime)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        stated = re.search(
            r"about (\d+) tokens per segment plus (\d+)", tools["get_skip_segments"].description
        )
        assert stated, tools["get_skip_segments"].description
        per_segment, base = int(stated[1]), int(stated[2])
        for categories in (["outro"], list(CATEGORIES)):
            result = await client.call_tool("get_skip_segments", {"url": VIDEO, "categories": categories})
            count = len(result.structured_content["segments"])
            tokens = estimate_tokens("\n".join(block.text for block in result.content))
            expected = base + per_segment * count
            assert abs(tokens - expected) <= 0.25 * expected, (count, tokens, expected)


async def test_what_a_translation_target_costs_is_what_list_caption_languages_says(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock))
    async with Client(create_mcp(runtime)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        stated = re.search(r"about (\d+) per translation target", tools["list_caption_languages"].description)
        assert stated and int(stated[1]) == STATED_COSTS["per_target"]
        result = await client.call_tool("list_caption_languages", {"url": VIDEO})
    body = json.loads(result.content[0].text)
    without = estimate_tokens(json_text({**body, "translationTargets": []}))
    per_target = (estimate_tokens(result.content[0].text) - without) / len(body["translationTargets"])
    assert abs(per_target - STATED_COSTS["per_target"]) <= 0.25 * STATED_COSTS["per_target"], per_target


# --- the SponsorBlock client itself -----------------------------------------------------------


async def test_an_oversized_answer_is_upstream_and_a_stale_cache_entry_is_asked_again(
    sponsorblock: FakeSponsorBlock,
) -> None:
    kv = MemoryKv()
    async with httpx.AsyncClient() as http:
        with pytest.raises(VidError) as caught:
            await fetch_segments(http, kv, sponsorblock.origin, VIDEO_ID, Ctx(), max_body=200)
        assert caught.value.code is ErrorCode.UPSTREAM and "200 bytes" in caught.value.message
        assert await kv.get(KV_PREFIX + VIDEO_ID) is None
        await kv.put(KV_PREFIX + VIDEO_ID, "{not json", ttl=60)  # another version's entry, or a torn one
        found = await fetch_segments(http, kv, sponsorblock.origin, VIDEO_ID, Ctx())
        assert len(found) == 6 and len(sponsorblock.requests) == 2
        assert await fetch_segments(http, kv, sponsorblock.origin, VIDEO_ID, Ctx()) == found
        assert len(sponsorblock.requests) == 2


async def test_reversed_or_negative_ranges_from_upstream_are_dropped() -> None:
    odd = {
        VIDEO_ID: [
            {"category": "sponsor", "actionType": "skip", "segment": [9.0, 3.0], "UUID": "r"},
            {"category": "sponsor", "actionType": "skip", "segment": [-4.0, 2.0], "UUID": "n"},
            {"category": "sponsor", "actionType": "skip", "segment": [3, 4], "UUID": "ok"},
        ]
    }
    with FakeSponsorBlock(odd) as server:
        async with httpx.AsyncClient() as http:
            found = await fetch_segments(http, MemoryKv(), server.origin, VIDEO_ID, Ctx())
    assert [(s.uuid, s.segment) for s in found] == [("ok", (3.0, 4.0))]


@pytest.mark.parametrize("route", ["skips", "caption-languages", "transcript"])
async def test_public_mode_refuses_a_local_path_before_any_request(
    runtimes: Runtimes, replay: ReplayServer, sponsorblock: FakeSponsorBlock, route: str
) -> None:
    runtime = await runtimes.build(_settings(replay, sponsorblock, VID2CONTEXT_PUBLIC="1"))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        answer = await client.get(f"{API}/{route}", params={"url": "/etc/passwd", "skip": "1"})
    _error(answer, ErrorCode.UNSUPPORTED_INPUT, 400)
    assert "passwd" not in answer.json()["error"]["hint"]
    assert sponsorblock.requests == [] and replay.requests == []
