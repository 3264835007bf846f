"""open_transcript_viewer and its MCP Apps page, through the SDK's real client.

The tool's result (structuredContent for the page, get_transcript's first page as text), its
``_meta.ui.resourceUri``, the ``ui://`` resource it names (listed, readable, self-contained) and
the extension the server advertises. The page itself runs in Chromium: ``test_viewer_browser.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from vid2context.mcp import create_mcp
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import Runtime
from vid2context.ui import VIEWER_URI, viewer_html
from vid2context.ui.assets import ASSETS

from .runtimes import ON_WORKER_TOO, Runtimes
from .test_mcp_tools import LONG, PLAIN, VIDEO, long_context
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "src" / "vid2context" / "ui"
MIME = "text/html;profile=mcp-app"
HOSTILE = "Fix </script><script>window.pwned=1</script><img src=x onerror=window.pwned=1> & more"
HOSTILE_ID = "Hostile0001"


def watch(native: str) -> str:
    return f"https://www.youtube.com/watch?v={native}"


def hostile_context() -> VideoContext:
    """A video whose title and captions are HTML and script: the page must show them as text."""
    segments = [
        Segment(start_sec=0.0, end_sec=4.0, text="<b>bold</b> <script>window.pwned=2</script> words"),
        Segment(start_sec=4.0, end_sec=8.0, text='"><img src=x onerror="window.pwned=3"> the dealer'),
        Segment(
            start_sec=8.0, end_sec=12.0, text="javascript:alert(1) and the dealer again", speaker="<i>Ana</i>"
        ),
    ]
    return VideoContext(
        id=f"youtube:{HOSTILE_ID}",
        metadata=VideoMetadata(
            id=HOSTILE_ID,
            platform="youtube",
            title=HOSTILE,
            url=watch(HOSTILE_ID),
            channel="<em>Channel</em>",
            duration_sec=12.0,
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    rt = await runtimes.build()
    await rt.storage.put_context(long_context())
    await rt.storage.put_context(long_context(PLAIN, minutes=40, chapters=False, seed=3))
    await rt.storage.put_context(hostile_context())
    return rt


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client]:
    async with Client(create_mcp(runtime)) as connected:
        yield connected


def _unfenced(text: str) -> str:
    return re.sub(r"\[[0-9a-f]{12}\]", "[id]", text)


async def test_the_tool_points_at_the_page_and_declares_its_output(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    tool = listed["open_transcript_viewer"]
    assert tool.meta == {"ui": {"resourceUri": VIEWER_URI}}
    assert set(tool.input_schema["properties"]) == {"url"}
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert tool.output_schema is not None
    shapes = [set(shape.get("properties", {})) for shape in tool.output_schema["anyOf"]]
    assert any({"metadata", "chapters", "segments"} <= fields for fields in shapes)
    assert "token" in (tool.description or "")


async def test_the_server_advertises_mcp_apps_and_serves_the_page(client: Client) -> None:
    extensions = client.server_capabilities.extensions if client.server_capabilities else None
    assert extensions is not None and "io.modelcontextprotocol/ui" in extensions
    listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
    assert listed[VIEWER_URI].mime_type == MIME
    assert f"vid2context://video/youtube%3A{LONG}" in listed  # the library is still listed after it
    read = await client.read_resource(VIEWER_URI)
    (content,) = read.contents
    assert content.mime_type == MIME
    page = content.text
    assert page == viewer_html()
    assert page.startswith("<!doctype html>") and "<style>" in page and '<script type="module">' in page
    # self-contained: nothing for the host to fetch, no import left
    assert not re.search(r"""\b(src|href)=["'](?!#)""", page.split("<script", 1)[0])
    assert 'href="transcript.css"' not in page and 'from "./transcript.js"' not in page
    assert "renderTranscript" in page and "ui/notifications/tool-result" in page


async def test_the_result_holds_the_whole_transcript_and_its_text_is_get_transcripts_first_page(
    client: Client, runtime: Runtime
) -> None:
    result = await client.call_tool("open_transcript_viewer", {"url": watch(LONG)})
    assert not result.is_error
    view = result.structured_content
    assert view is not None
    context = long_context()
    assert view["id"] == context.id
    assert view["metadata"]["title"] == context.metadata.title
    assert view["metadata"]["channel"] == "Test Channel"
    assert [c["startSec"] for c in view["chapters"]] == [c.start_sec for c in context.metadata.chapters]
    assert view["sections"] == "chapters"
    assert len(view["segments"]) == len(context.transcript.segments)
    assert view["segments"][5]["text"] == context.transcript.segments[5].text
    assert view["link"] == f"https://www.youtube.com/watch?v={LONG}&t=<seconds>s"
    assert view["origin"] == "captions-manual" and view["language"] == "en"
    page = await client.call_tool("get_transcript", {"url": watch(LONG)})
    (text,) = [block.text for block in result.content]
    assert _unfenced(text) == _unfenced(page.content[0].text)
    assert "[Partial transcript:" in text and "next page: get_transcript" in text  # two hours: pages


@ON_WORKER_TOO
async def test_a_video_fetched_on_either_runtime_opens_in_the_viewer(client: Client) -> None:
    result = await client.call_tool("open_transcript_viewer", {"url": f"https://youtu.be/{VIDEO}"})
    assert not result.is_error, result.content[0].text
    view = result.structured_content
    assert view["id"] == f"youtube:{VIDEO}" and view["segments"]
    assert all(segment["text"] for segment in view["segments"][:5])
    assert view["link"] == f"https://www.youtube.com/watch?v={VIDEO}&t=<seconds>s"
    assert (await client.read_resource(VIEWER_URI)).contents[0].text == viewer_html()


async def test_a_video_without_chapters_gets_time_sections_to_jump_through(client: Client) -> None:
    result = await client.call_tool("open_transcript_viewer", {"url": watch(PLAIN)})
    view = result.structured_content
    assert view["sections"] == "time" and len(view["chapters"]) >= 7
    starts = [c["startSec"] for c in view["chapters"]]
    assert starts == sorted(starts) and starts[0] == 0


async def test_hostile_text_is_kept_as_data_and_fenced_in_the_text(client: Client) -> None:
    result = await client.call_tool("open_transcript_viewer", {"url": watch(HOSTILE_ID)})
    view = result.structured_content
    assert view["metadata"]["title"] == HOSTILE  # the page escapes it; the data stays exact
    text = result.content[0].text
    assert text.startswith("=== BEGIN UNTRUSTED VIDEO TEXT [")


@pytest.mark.parametrize("url", ["", "not a video", "https://www.youtube.com/playlist?list=PL123"])
async def test_bad_input_is_a_contract_error_with_a_hint(client: Client, url: str) -> None:
    result = await client.call_tool("open_transcript_viewer", {"url": url})
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert set(body) == {"error", "message", "hint", "attempts"}
    assert body["error"] in {"bad-request", "unsupported-input"}, body
    assert body["hint"]
    missing = await client.call_tool("open_transcript_viewer", {})
    assert missing.is_error and json.loads(missing.content[0].text)["error"] == "bad-request"


def test_the_assets_module_is_a_fresh_build_of_the_files() -> None:
    spec = importlib.util.spec_from_file_location("build_ui", ROOT / "scripts" / "build_ui.py")
    assert spec is not None and spec.loader is not None
    build_ui = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_ui)
    for module in build_ui.MODULES:  # assets.py, and the web app's app_assets.py
        assert (UI / module).read_text(encoding="utf-8") == build_ui.render(UI, module), "run make site"
    assert {name: (UI / name).read_text(encoding="utf-8") for name in build_ui.files_of()} == ASSETS


def test_inlining_refuses_files_that_would_close_their_own_tag() -> None:
    broken = {**ASSETS, "transcript.js": ASSETS["transcript.js"] + "\n// </script>\n"}
    with pytest.raises(ValueError, match="closes its own tag"):
        viewer_html(tuple(broken.items()))
    renamed = {**ASSETS, "viewer.html": ASSETS["viewer.html"].replace("viewer.js", "app.js")}
    with pytest.raises(ValueError, match="exactly once"):
        viewer_html(tuple(renamed.items()))
