"""MCP features through the SDK's client: choosing a caption track by elicitation, completions for
prompt arguments and resource templates, and ``logging/setLevel`` with log messages for long
work. YouTube is answered from the recorded fixtures (``youtube_replay.py``): ``GJLlxj_dtq8`` offers
tracks in many languages, ``F1xioXWb8CY`` English only (manual and automatic).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client import Client
from mcp_types import (
    CompletionArgument,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
)

from vid2context import library
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime

from .runtimes import Runtimes
from .talks import bike_review, sourdough
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

TWO_TRACKS = "GJLlxj_dtq8"
ONE_TRACK = "F1xioXWb8CY"


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    built = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0"})
    for talk in (bike_review(), sourdough()):
        await built.storage.put_context(talk)
    return built


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_the_user_picks_the_track_and_gets_its_transcript(runtime: Runtime) -> None:
    asked: list[Any] = []

    async def pick_english(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"language": "en"})

    async with Client(create_mcp(runtime), mode="legacy", elicitation_callback=pick_english) as client:
        result = await client.call_tool("choose_caption_track", {"url": TWO_TRACKS})
    assert not result.is_error, _text(result)
    [params] = asked
    choice = params.requested_schema["properties"]["language"]
    assert {"en", "de", "cs"} <= set(choice["enum"]) and len(choice["enum"]) == len(set(choice["enum"]))
    text = _text(result)
    assert "Transcript: manual captions, en" in text and "[End of transcript:" in text  # the chosen track


async def test_a_declined_choice_answers_the_list(runtime: Runtime) -> None:
    async def decline(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async with Client(create_mcp(runtime), mode="legacy", elicitation_callback=decline) as client:
        result = await client.call_tool("choose_caption_track", {"url": TWO_TRACKS})
    body = json.loads(result.content[0].text)
    assert body["asked"] is True and {t["language"] for t in body["tracks"]} >= {"de", "en"}
    assert "get_transcript" in body["next"]


async def test_without_elicitation_the_list_comes_back(runtime: Runtime) -> None:
    async with Client(create_mcp(runtime), mode="legacy") as client:
        result = await client.call_tool("choose_caption_track", {"url": TWO_TRACKS})
        body = json.loads(result.content[0].text)
        assert body["asked"] is False and len({t["language"] for t in body["tracks"]}) >= 2
        single = await client.call_tool("choose_caption_track", {"url": ONE_TRACK})
        assert not single.is_error and "[0:" in _text(single)  # one language: nothing to ask
        bad = await client.call_tool("choose_caption_track", {"url": "not a video at all \x00"})
        assert bad.is_error and json.loads(bad.content[0].text)["hint"]


async def test_completions_offer_collections_and_saved_videos(runtime: Runtime) -> None:
    made = await library.create_collection(runtime, "Bread and bikes")
    async with Client(create_mcp(runtime), mode="legacy") as client:
        digest = PromptReference(type="ref/prompt", name="digest")
        offered = await client.complete(digest, {"name": "collection", "value": "bre"})
        assert made.id in offered.completion.values and "Bread and bikes" in offered.completion.values
        nothing = await client.complete(digest, {"name": "collection", "value": "zzz"})
        assert nothing.completion.values == []
        videos = await client.complete(digest, {"name": "urls", "value": "youtube:Bike"})
        assert videos.completion.values == [bike_review().id]
        template = ResourceTemplateReference(type="ref/resource", uri="vid2context://video/{id}")
        by_id = await client.complete(template, {"name": "id", "value": ""})
        assert set(by_id.completion.values) == {bike_review().id, sourdough().id}
        hostile = await client.complete(digest, {"name": "collection", "value": "x" * 100_000})
        assert hostile.completion.values == []


async def test_set_level_turns_on_log_messages_for_long_work(runtime: Runtime) -> None:
    logs: list[LoggingMessageNotificationParams] = []

    async def collect(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with Client(create_mcp(runtime), mode="legacy", logging_callback=collect) as client:
        await client.call_tool("get_video_context", {"url": bike_review().id})
        quiet = len(logs)
        await client.set_logging_level("info")
        await client.call_tool("export_context_pack", {"urls": [bike_review().id, sourdough().id]})
    assert quiet == 0  # nothing below warning before the client asked
    assert logs and all(entry.level == "info" and entry.logger == "vid2context" for entry in logs)


def test_completion_argument_shape_is_the_sdks() -> None:
    assert CompletionArgument(name="collection", value="b").name == "collection"
