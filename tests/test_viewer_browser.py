"""The transcript viewer page in headless Chromium (Debian's, driven by Playwright), as a host runs it.

The page is the ``ui://`` resource as the SDK client reads it, the result the one the tool
answers through the SDK client. ``HOST`` is a tiny MCP Apps host: it loads the page into a
sandboxed iframe, answers ``ui/initialize``, then sends the tool result in
``ui/notifications/tool-result`` (the protocol's own hook; the page has no test mode) and
records the ``ui/open-link`` requests. Screenshots at 1280 and 390 px wide go to
``tests/artifacts/`` (gitignored), for a person to look at; the assertions are on the DOM.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from playwright.async_api import Browser, Frame, Page, async_playwright

from vid2context.mcp import create_mcp
from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.runtime import Runtime
from vid2context.ui import VIEWER_URI

from .runtimes import Runtimes
from .test_mcp_tools import LONG, long_context
from .test_viewer import HOSTILE, HOSTILE_ID, hostile_context, watch

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BIG_ID = "BigVideo001"

HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>test host</title></head>
<body style="margin:0">
<iframe id="app" title="Transcript viewer" sandbox="allow-scripts"
        style="border:0;display:block;width:100vw;height:100vh"></iframe>
<script>
  window.methods = []; window.opened = [];
  const frame = document.getElementById("app");
  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow) return;
    const m = event.data;
    window.methods.push(m.method);
    const reply = (result) => frame.contentWindow.postMessage({jsonrpc: "2.0", id: m.id, result}, "*");
    if (m.method === "ui/initialize") {
      reply({protocolVersion: m.params.protocolVersion, hostInfo: {name: "test-host", version: "1"},
             hostCapabilities: {openLinks: {}},
             hostContext: {theme: "light", styles: {variables: {"--color-text-info": "rgb(1, 2, 3)"}}}});
    } else if (m.method === "ui/notifications/initialized") {
      frame.contentWindow.postMessage(
        {jsonrpc: "2.0", method: "ui/notifications/tool-result", params: window.toolResult}, "*");
    } else if (m.method === "ui/open-link") {
      window.opened.push(m.params.url); reply({});
    }
  });
  window.load = (html, result) => { window.toolResult = result; frame.srcdoc = html; };
</script>
</body></html>"""


def big_context(count: int = 10_000) -> VideoContext:
    segments = [
        Segment(
            start_sec=i * 2.0,
            end_sec=i * 2.0 + 2,
            text=f"line {i} about the {'engine' if i % 7 else 'dealer'}",
        )
        for i in range(count)
    ]
    chapters = [Chapter(title=f"Hour part {i}", start_sec=i * 2000.0) for i in range(count * 2 // 2000)]
    return VideoContext(
        id=f"youtube:{BIG_ID}",
        metadata=VideoMetadata(
            id=BIG_ID,
            platform="youtube",
            title="Ten thousand lines",
            url=watch(BIG_ID),
            duration_sec=count * 2.0,
            chapters=chapters,
        ),
        transcript=Transcript(
            language="en", origin="asr", timing="caption", producer="test", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


@pytest.fixture
async def client(runtimes: Runtimes) -> AsyncIterator[Client]:
    rt: Runtime = await runtimes.build()
    for context in (long_context(), hostile_context(), big_context()):
        await rt.storage.put_context(context)
    async with Client(create_mcp(rt)) as connected:
        yield connected


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


async def open_viewer(
    browser: Browser, client: Client, url: str, width: int = 1280
) -> tuple[Page, Frame, Any]:
    """The host page with the viewer showing the tool's result for ``url``; the result too."""
    page_text = (await client.read_resource(VIEWER_URI)).contents[0].text
    result = await client.call_tool("open_transcript_viewer", {"url": url})
    assert not result.is_error
    wire = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    page = await browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.set_content(HOST)
    await page.evaluate("([html, result]) => window.load(html, result)", [page_text, wire])
    frame = page.frame_locator("#app")
    await frame.locator(".v2c-transcript").wait_for()
    (inner,) = [f for f in page.frames if f != page.main_frame]
    assert errors == []
    return page, inner, wire


async def test_chapters_search_and_stamps_work_and_are_screenshotted(
    browser: Browser, client: Client
) -> None:
    page, frame, wire = await open_viewer(browser, client, watch(LONG))
    view = wire["structuredContent"]
    assert await page.evaluate("window.methods.slice(0, 2)") == [
        "ui/initialize",
        "ui/notifications/initialized",
    ]
    assert await frame.locator("h1").text_content() == view["metadata"]["title"]
    assert await frame.locator(".v2c-segments > li").count() == len(view["segments"])

    # the host's theme variables reach the page
    assert (
        await frame.locator(".v2c-segments a.v2c-stamp").first.evaluate("a => getComputedStyle(a).color")
        == "rgb(1, 2, 3)"
    )

    # every stamp links to the video at its own second
    stamps = frame.locator(".v2c-segments > li a.v2c-stamp")
    for index in (0, 1, 500):
        start = view["segments"][index]["startSec"]
        href = await stamps.nth(index).get_attribute("href")
        assert href == f"https://www.youtube.com/watch?v={LONG}&t={int(start)}s"
        assert await stamps.nth(index).get_attribute("rel") == "noopener noreferrer"

    # a chapter jumps to its first segment and says it is the current one
    chapter = view["chapters"][3]
    button = frame.get_by_role("button", name=re.compile(re.escape(chapter["title"])))
    await button.click()
    assert await button.get_attribute("aria-current") == "true"
    focused = await frame.evaluate("document.activeElement.dataset.start")
    first = next(s for s in view["segments"] if s["startSec"] >= chapter["startSec"])
    assert float(focused) == first["startSec"]

    # search marks every match, lists them with their times, and says how many
    box = frame.get_by_label("Search the transcript")
    await box.fill("Dealer")
    wanted = sum(len(re.findall("dealer", s["text"], re.IGNORECASE)) for s in view["segments"])
    marks = frame.locator(".v2c-segments mark")
    assert wanted > 0 and await marks.count() == wanted
    assert {text.lower() for text in await marks.all_text_contents()} == {"dealer"}
    holding = [s for s in view["segments"] if "dealer" in s["text"].lower()]
    listed = frame.locator(".v2c-matches button")
    assert await listed.count() == min(len(holding), 200)
    assert (await listed.first.text_content()).startswith(f"[{_stamp(holding[0]['startSec'])}]")
    assert re.match(
        rf"{wanted} matches in {len(holding)} segments", await frame.locator("[role=status]").text_content()
    )
    await listed.nth(2).click()
    assert float(await frame.evaluate("document.activeElement.dataset.start")) == holding[2]["startSec"]

    # clearing the search removes the marks and the list
    await box.fill("")
    assert await marks.count() == 0 and await frame.locator(".v2c-matches").is_hidden()

    # a stamp opens through the host (ui/open-link), not by navigating the iframe
    await stamps.nth(1).click()
    start = int(view["segments"][1]["startSec"])
    assert await page.evaluate("window.opened") == [f"https://www.youtube.com/watch?v={LONG}&t={start}s"]

    await box.fill("dealer")
    await frame.evaluate("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "viewer-1280.png"))
    await page.set_viewport_size({"width": 390, "height": 844})
    await frame.evaluate("window.scrollTo(0, 0)")
    assert await frame.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    grid = await frame.evaluate("getComputedStyle(document.querySelector('.v2c-body')).gridTemplateColumns")
    assert len(grid.split()) == 1  # one column on a phone
    await page.screenshot(path=str(ARTIFACTS / "viewer-390.png"))
    assert (ARTIFACTS / "viewer-1280.png").stat().st_size > 0 and (
        ARTIFACTS / "viewer-390.png"
    ).stat().st_size > 0
    await page.close()


async def test_hostile_title_and_captions_show_as_text(browser: Browser, client: Client) -> None:
    page, frame, wire = await open_viewer(browser, client, watch(HOSTILE_ID))
    assert await frame.locator("h1").text_content() == HOSTILE
    texts = await frame.locator(".v2c-text").all_text_contents()
    assert texts == [s["text"] for s in wire["structuredContent"]["segments"]]
    assert await frame.locator(".v2c-speaker").text_content() == "<i>Ana</i>: "
    assert await frame.evaluate("window.pwned === undefined")
    for tag in ("img", "b", "i", "em"):
        assert await frame.locator(f"article {tag}").count() == 0, tag
    assert await frame.locator("article script").count() == 0
    await frame.get_by_label("Search the transcript").fill("<img")
    assert await frame.locator(".v2c-segments mark").all_text_contents() == ["<img"]
    await page.close()


async def test_ten_thousand_segments_render_and_search(browser: Browser, client: Client) -> None:
    page, frame, wire = await open_viewer(browser, client, watch(BIG_ID))
    assert len(wire["structuredContent"]["segments"]) == 10_000
    assert await frame.locator(".v2c-segments > li").count() == 10_000
    assert await frame.locator(".v2c-segments > li").last.locator(".v2c-text").text_content() == (
        "line 9999 about the engine"
    )
    await frame.get_by_label("Search the transcript").fill("dealer")
    holding = sum(1 for i in range(10_000) if i % 7 == 0)
    assert await frame.locator(".v2c-segments mark").count() == holding
    assert await frame.locator(".v2c-matches button").count() == 200
    status = await frame.locator("[role=status]").text_content()
    assert status == f"{holding} matches in {holding} segments; the first 200 are listed"
    await frame.get_by_role("button", name=re.compile("Hour part 9")).focus()  # by keyboard: Enter
    await page.keyboard.press("Enter")
    assert float(await frame.evaluate("document.activeElement.dataset.start")) == 18_000.0
    await page.close()


def _stamp(seconds: float) -> str:
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
