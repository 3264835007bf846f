"""The web app (``/app``) in headless Chromium against ``vid2context serve``: time from Enter to a
readable transcript for a cached video, and what the page transfers before the transcript.

The server runs as the tests run it (a subprocess, its YouTube the tests' replay server), its
library seeded with a two-hour talk (``tests.test_mcp_tools.long_context``) and a transcript of
10,000 segments, so every read is a stored one. For each video, ``BENCH_APP_ROUNDS`` rounds
(default 7) of: a fresh page, the field filled, Enter, and the time until the last segment is in
the page, measured inside the page (``performance.now()`` at the keydown and when a
``MutationObserver`` sees the list); the reference, measured in the same page, is the bare
``fetch`` of ``GET /api/v1/view`` and its JSON decode, so ``render_ratio`` (Enter to readable over
the bare fetch) is the page's own cost, which the machine's load moves less than either figure.

Transfer: every response up to the moment the page is ready for input (the page, its stylesheets
and modules, the library's and the collections' JSON), headers and bodies as Chromium counted
them (Playwright's ``request.sizes()``), against the target of 100 kB. The load average is
reported beside the figures.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_mcp_http import _local_server  # noqa: E402 - the tests' server and replay
from tests.test_mcp_tools import LONG, long_context  # noqa: E402
from tests.test_viewer_browser import BIG_ID, CHROMIUM, big_context  # noqa: E402
from tests.youtube_replay import ReplayServer  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_APP_ROUNDS", "7"))
TARGET_BYTES = 100_000
READY = """() => { window.__readable = new Promise((done) => {
  const field = document.getElementById('video');
  let started = 0;
  field.addEventListener('keydown', (e) => { if (e.key === 'Enter') started = performance.now(); });
  const seen = new MutationObserver(() => {
    const items = document.querySelectorAll('.v2c-segments > li');
    if (started && items.length && items[items.length - 1].textContent) { seen.disconnect(); done(performance.now() - started); }
  });
  seen.observe(document.getElementById('transcript'), { childList: true, subtree: true });
}); }"""
BARE = """async (input) => {
  const started = performance.now();
  const answer = await fetch('/api/v1/view?url=' + encodeURIComponent(input));
  const view = await answer.json();
  return [performance.now() - started, view.segments.length];
}"""


async def _seed(home: Path) -> None:
    from vid2context.storage.sqlite import open_local_stores

    stores = open_local_stores(home)
    try:
        for context in (long_context(), big_context()):
            await stores.storage.put_context(context)
    finally:
        await stores.storage.close()


def _transfer(page, origin: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    responses = []
    page.on("requestfinished", lambda request: responses.append(request))
    page.goto(origin + "/app", wait_until="networkidle")
    total, by_path = 0, {}
    for request in responses:
        sizes = request.sizes()
        size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        by_path[request.url.removeprefix(origin)] = size
        total += size
    return {
        "bytes": total,
        "requests": len(by_path),
        "under_target": total < TARGET_BYTES,
        "by_path": by_path,
    }


def _rounds(browser, origin: str, video: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    readable, bare, segments = [], [], 0
    for _ in range(ROUNDS):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(origin + "/app", wait_until="networkidle")
        page.evaluate(READY)
        page.fill("#video", video)
        page.press("#video", "Enter")
        readable.append(page.evaluate("window.__readable"))
        took, segments = page.evaluate(BARE, video)
        bare.append(took)
        page.close()
    median_readable, median_bare = statistics.median(readable), statistics.median(bare)
    return {
        "segments": segments,
        "enter_to_readable_ms_median": round(median_readable, 1),
        "enter_to_readable_ms_best": round(min(readable), 1),
        "bare_view_fetch_ms_median": round(median_bare, 1),
        "render_ratio": round(median_readable / median_bare, 2) if median_bare else None,
        "rounds": ROUNDS,
    }


def run() -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _seed(home)).result()
        with ReplayServer() as replay:
            settings = {"VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin, "VID2CONTEXT_ACCESS_LOG": "0"}
            for origin in _local_server(settings, home):
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
                    try:
                        load_before = os.getloadavg()
                        transfer = _transfer(browser.new_page(), origin)
                        talk = _rounds(browser, origin, f"https://www.youtube.com/watch?v={LONG}")
                        big = _rounds(browser, origin, BIG_ID)
                        load_after = os.getloadavg()
                    finally:
                        browser.close()
    return {
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "transfer_before_transcript": transfer,
        "two_hour_talk": talk,
        "ten_thousand_segments": big,
    }
