"""The web app on the Worker's runtime: ``build_worker_runtime`` over Miniflare's D1, KV and R2,
served as the Workers adapter runs it (``runtimes.WorkerLikeApp`` under uvicorn), in headless
Chromium. The library is filled the Worker's way, by a push (``PUT /api/v1/library/{id}``), since
the edge cannot read YouTube itself; then a person opens ``/app``, reads the video, jumps to a
chapter and searches it, and a video the edge cannot have says how to relay it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import msgspec
import pytest
from playwright.sync_api import Browser, expect

from .miniflare_harness import MiniflareHarness
from .test_app_browser import browser, console_error  # noqa: F401  (the module's own Chromium)
from .test_mcp_http import _worker_server
from .test_mcp_tools import LONG, long_context
from .test_viewer import watch
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def origin(miniflare: MiniflareHarness) -> Iterator[str]:
    with ReplayServer(blocked=True) as replay:  # YouTube as the edge meets it: the bot check
        settings = {"VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin, "VID2CONTEXT_ACCESS_LOG": "0"}
        for served in _worker_server(settings, miniflare):
            body = msgspec.json.decode(msgspec.json.encode(long_context()))
            pushed = httpx.put(f"{served}/api/v1/library/{quote(body['id'], safe='')}", json=body, timeout=60)
            assert pushed.status_code in (200, 201), pushed.text
            yield served


def test_the_page_reads_a_pushed_video_on_the_worker(browser: Browser, origin: str) -> None:  # noqa: F811
    for name, kind in (
        ("app.js", "text/javascript"),
        ("transcript.js", "text/javascript"),
        ("app.css", "text/css"),
    ):
        served = httpx.get(f"{origin}/app/{name}", timeout=30)
        assert served.status_code == 200 and served.headers["content-type"].startswith(kind), name
    view = httpx.get(f"{origin}/api/v1/view", params={"url": watch(LONG)}, timeout=60).json()
    page = browser.new_page(viewport={"width": 390, "height": 844})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: console_error(message, errors))
    with page.expect_response(lambda response: response.url.endswith("/api/v1/health")) as asked:
        page.goto(f"{origin}/app")  # the Ask module asks the health route whether an LLM rung is on
    providers = asked.value.json()["providers"]
    assert not [p for p in providers if p["kind"] == "llm" and p["enabled"]]  # none is set here
    expect(page.locator("#access")).to_be_hidden()  # an open server asks for no key
    expect(page.locator("#upload input[type=file]")).to_have_count(1)
    expect(page.locator("#upload")).to_be_visible()
    page.get_by_label("Video link or id").fill(watch(LONG))
    page.get_by_label("Video link or id").press("Enter")
    expect(page.locator("h1")).to_have_text(view["metadata"]["title"])
    assert page.locator(".v2c-segments > li").count() == len(view["segments"])
    chapter = view["chapters"][2]
    page.get_by_role("button", name=re.compile(re.escape(chapter["title"]))).click()
    first = next(s for s in view["segments"] if s["startSec"] >= chapter["startSec"])
    assert float(page.evaluate("document.activeElement.dataset.start")) == first["startSec"]
    page.get_by_label("Search in this video").fill("dealer")
    assert page.locator(".v2c-segments mark").count() > 0
    expect(page.locator("#saved")).to_contain_text(view["metadata"]["title"])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    page.get_by_label("Video link or id").fill("jNQXAC9IVRw")  # not pushed: the edge meets the bot check
    page.get_by_label("Video link or id").press("Enter")
    error = httpx.get(f"{origin}/api/v1/view", params={"url": "jNQXAC9IVRw"}, timeout=60).json()["error"]
    expect(page.locator(".app-error-message")).to_have_text(error["message"])
    assert error["code"] == "blocked" and "vid2context push" in error["hint"]
    assert page.locator(".app-error-hint").text_content() == error["hint"]
    assert page.locator(".app-notice code").text_content() == f"vid2context push jNQXAC9IVRw --to {origin}"
    assert page.locator("#ask").is_hidden()  # long after the health answer: Ask stayed hidden
    assert page.locator("#ask textarea").count() == 1  # mounted, and hidden for want of an LLM
    page.close()
    assert errors == []
