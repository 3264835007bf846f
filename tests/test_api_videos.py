"""Contract tests for the video routes: context, transcript, metadata, formats, items, section,
outline, comments, pack, bundle and models.

The real app over the real runtime (memory storage, single-flight, the YouTube provider); only
YouTube is replaced, by pytest-httpx answering from the recorded responses (``youtube_replay``).
The tests whose answer rests on the runtime (the library behind etags and refresh, the sources and
speech-to-text rungs it has, packs and bundles read from the library, timeouts) run on the
Worker's runtime too (``ON_WORKER_TOO``: D1, KV and R2 on Miniflare, ``tests/runtimes.py``); input
checking and rendering, which no runtime changes, run on memory only.
Each route is checked for its status, headers and body shape on success and on each documented
error, and every malformed input must be refused with ``bad-request`` before any upstream call.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import time
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
import pytest
import srt
from litestar import Request
from pytest_httpx import HTTPXMock

from vid2context import library
from vid2context.api import create_app
from vid2context.api.middleware import request_ctx
from vid2context.bundle import build_bundle, slugify
from vid2context.errors import ErrorCode, VidError
from vid2context.formats import FORMATTERS, RenderOptions, context_header
from vid2context.models import VideoContext
from vid2context.runtime import Runtime
from vid2context.tokens import estimate_tokens

from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .together import Together
from .youtube_replay import LONG_PLAYLIST_ID, PLAYLIST_ID, httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
OTHER = "F1xioXWb8CY"  # also has captions
NO_CAPTIONS = "dsMFmonKDD4"
BLOCKED = "botCheck001"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
LONG_PLAYLIST = f"https://www.youtube.com/playlist?list={LONG_PLAYLIST_ID}"
UPLOAD = "upload:" + "a" * 64
TITLE = "Surface Go Review"
FIRST_LINE = "Hey, this is just a test"

Client = httpx.AsyncClient  # over the app, inside its lifespan (``runtimes.serve``)


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


class App:
    """A client and the runtime behind it, for tests that prepare state through the core."""

    def __init__(self, client: Client, runtime: Runtime) -> None:
        self.client = client
        self.runtime = runtime


MakeApp = Callable[..., Awaitable[App]]


@pytest.fixture
async def make_app(httpx_mock: HTTPXMock, runtimes: Runtimes) -> AsyncIterator[MakeApp]:
    """``await make_app(VID2CONTEXT_X="...")``: the app with those settings on a runtime of the
    test's kind, inside its lifespan, closed afterwards. It is made as its platform makes it: on
    the Worker the app leaves the runtime open (``runtimes`` closes it), elsewhere its lifespan
    closes it.

    Upstream answers are the test's choice: ask for ``youtube`` too for the recorded ones.
    """
    async with AsyncExitStack() as opened:

        async def make(**environ: str) -> App:
            runtime = await runtimes.build(environ)
            app = create_app(runtime, owns_runtime=runtimes.kind != "worker")
            return App(await opened.enter_async_context(serve(app)), runtime)

        yield make


@pytest.fixture
async def client(youtube: HTTPXMock, make_app: MakeApp) -> Client:
    return (await make_app()).client


def upstream(mock: HTTPXMock) -> list[str]:
    return [f"{r.method} {r.url.path}" for r in mock.get_requests()]


def assert_error(response: httpx.Response, code: ErrorCode, status: int | None = None) -> dict[str, Any]:
    """The contract's error body, with the status ``STATUS_BY_CODE`` gives ``code``."""
    assert response.status_code == (status or VidError(code, "").status), response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "attempts"}
    assert body["error"]["code"] == code.value
    assert body["error"]["message"]
    assert isinstance(body["attempts"], list)
    assert "Traceback" not in response.text
    return body


# --- bad input, for every route that takes url ---------------------------------------------------

URL_ROUTES = ["context", "transcript", "metadata", "items", "outline", "comments", "pack", "bundle"]
SECTION = "section?chapter=0&"

BAD_URLS = {
    "missing": None,
    "empty": "",
    "blank": "   ",
    "10 kB": "https://www.youtube.com/watch?v=GJLlxj_dtq8&x=" + "a" * 10_000,
    "NUL": "GJLlxj_dtq8\x00",
    "newline": "GJLlxj_dtq8\nHost: evil",
    "bidi": "GJLlxj_dtq8\u202e",
}


def _with_url(route: str, url: str | None) -> tuple[str, dict[str, str]]:
    path = f"{API}/{route}" if not route.startswith("section") else f"{API}/section"
    params = {"chapter": "0"} if route.startswith("section") else {}
    if url is not None:
        params["url"] = url
    return path, params


@pytest.mark.parametrize("bad", list(BAD_URLS), ids=list(BAD_URLS))
@pytest.mark.parametrize("route", [*URL_ROUTES, SECTION])
async def test_bad_url_is_refused_before_any_upstream_call(
    client: Client, youtube: HTTPXMock, route: str, bad: str
) -> None:
    path, params = _with_url(route, BAD_URLS[bad])
    response = await client.get(path, params=params)
    body = assert_error(response, ErrorCode.BAD_REQUEST)
    assert body["error"].get("hint")
    assert len(response.text) < 2000  # a long input is never echoed back whole
    assert upstream(youtube) == []


@pytest.mark.parametrize("route", ["context", "transcript", "outline", SECTION, "pack", "bundle"])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("mode", "fast"),
        ("mode", "x" * 300),
        ("lang", "english please"),
        ("lang", "en;drop"),
        ("lang", "a" * 36),
        ("lang", "e"),
        ("lang", "en-" + "x" * 40),
    ],
)
async def test_bad_mode_and_lang(
    client: Client, youtube: HTTPXMock, route: str, name: str, value: str
) -> None:
    path, params = _with_url(route, VIDEO)
    response = await client.get(path, params={**params, name: value})
    body = assert_error(response, ErrorCode.BAD_REQUEST)
    assert name in body["error"]["message"] or name in body["error"]["hint"]
    assert upstream(youtube) == []


@pytest.mark.parametrize("lang", ["en", "pt-BR", "zh-Hans", "en_US", "a" * 3 + "-" + "b" * 8 + "-" + "c" * 8])
async def test_language_tags_are_accepted(client: Client, lang: str) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "lang": lang})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("route", ["context", "outline"])
@pytest.mark.parametrize("value", ["maybe", "2", "on "])
async def test_bad_refresh(client: Client, youtube: HTTPXMock, route: str, value: str) -> None:
    response = await client.get(f"{API}/{route}", params={"url": VIDEO, "refresh": value})
    assert_error(response, ErrorCode.BAD_REQUEST)
    assert upstream(youtube) == []


async def test_unknown_route_and_method_answer_the_error_body(client: Client) -> None:
    assert_error(await client.get(f"{API}/nope"), ErrorCode.NOT_FOUND)
    assert_error(await client.delete(f"{API}/context"), ErrorCode.BAD_REQUEST, 405)


# --- /context -----------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_context_is_the_whole_video_context_with_an_etag(client: Client) -> None:
    response = await client.get(f"{API}/context", params={"url": VIDEO})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["etag"] == f'"{hashlib.sha256(response.content).hexdigest()}"'
    context = msgspec.json.decode(response.content, type=VideoContext)
    assert context.id == "youtube:GJLlxj_dtq8"
    assert context.metadata.title.startswith(TITLE)
    assert context.transcript is not None and context.transcript.segments[0].text == FIRST_LINE
    assert [(a.stage, a.outcome) for a in context.attempts] == [
        ("metadata", "ok"),
        ("captions", "ok"),
        ("save", "ok"),
    ]
    body = response.json()
    assert {"id", "metadata", "transcript", "comments", "attempts", "fetchedAt"} <= set(body)
    assert {"startSec", "endSec", "text"} <= set(body["transcript"]["segments"][0])


@ON_WORKER_TOO
async def test_if_none_match_answers_304_without_a_body(client: Client) -> None:
    await client.get(f"{API}/context", params={"url": VIDEO})  # fetched and saved
    saved = await client.get(f"{API}/context", params={"url": VIDEO})  # from the library: stable body
    etag = saved.headers["etag"]
    again = await client.get(f"{API}/context", params={"url": VIDEO}, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    for header in (f'"other", {etag}', f"W/{etag}", "*"):
        listed = await client.get(f"{API}/context", params={"url": VIDEO}, headers={"If-None-Match": header})
        assert listed.status_code == 304, header
    changed = await client.get(f"{API}/context", params={"url": VIDEO}, headers={"If-None-Match": '"stale"'})
    assert changed.status_code == 200
    assert changed.content == saved.content


@ON_WORKER_TOO
async def test_refresh_fetches_again(client: Client, youtube: HTTPXMock) -> None:
    await client.get(f"{API}/context", params={"url": VIDEO})
    before = len(youtube.get_requests())
    await client.get(f"{API}/context", params={"url": VIDEO, "refresh": "0"})
    assert len(youtube.get_requests()) == before
    fresh = await client.get(f"{API}/context", params={"url": VIDEO, "refresh": "1"})
    assert fresh.status_code == 200
    assert len(youtube.get_requests()) > before


@pytest.mark.parametrize(
    ("video", "code"),
    [
        (BLOCKED, ErrorCode.BLOCKED),
        (NO_CAPTIONS, ErrorCode.NO_TRANSCRIPT),
        ("Njp5uhTorCo", ErrorCode.UNAVAILABLE),
        ("unplayable1", ErrorCode.UNAVAILABLE),
        ("unavailable", ErrorCode.NOT_FOUND),
        ("poTokenReq1", ErrorCode.BLOCKED),
        ("tooMany429x", ErrorCode.RATE_LIMITED),
    ],
)
@pytest.mark.parametrize("route", ["context", "transcript", "outline", SECTION])
async def test_each_recorded_failure_has_its_code_status_hint_and_attempts(
    client: Client, route: str, video: str, code: ErrorCode
) -> None:
    path, params = _with_url(route, video)
    response = await client.get(path, params=params)
    body = assert_error(response, code)
    assert body["error"]["hint"]
    assert body["attempts"] and body["attempts"][0]["id"] == "youtube"
    if code is ErrorCode.RATE_LIMITED:
        assert response.headers["retry-after"] == "120"
    else:
        assert "retry-after" not in response.headers


async def test_a_list_is_not_a_video(client: Client) -> None:
    body = assert_error(await client.get(f"{API}/context", params={"url": PLAYLIST}), ErrorCode.BAD_REQUEST)
    assert "items" in body["error"]["hint"]


@ON_WORKER_TOO
async def test_local_files_need_the_local_runtime_and_public_mode_refuses_them(make_app: MakeApp) -> None:
    private = await make_app()
    assert_error(
        await private.client.get(f"{API}/context", params={"url": "./talk.mp4"}), ErrorCode.NO_PROVIDER
    )
    public = await make_app(VID2CONTEXT_PUBLIC="1")
    for url in ("./talk.mp4", "file:///etc/passwd", "http://127.0.0.1/admin", "http://169.254.169.254/"):
        assert_error(
            await public.client.get(f"{API}/context", params={"url": url}), ErrorCode.UNSUPPORTED_INPUT
        )


@ON_WORKER_TOO
async def test_a_request_over_its_time_is_answered_with_timeout(
    make_app: MakeApp, httpx_mock: HTTPXMock
) -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.3)
        return httpx_callback(request)

    httpx_mock.add_callback(slow, is_reusable=True, is_optional=True)
    made = await make_app(VID2CONTEXT_REQUEST_TIMEOUT_MS="50")
    body = assert_error(await made.client.get(f"{API}/context", params={"url": VIDEO}), ErrorCode.TIMEOUT)
    assert body["error"]["hint"]


def _request(headers: dict[str, str] | None = None, state: dict | None = None) -> Request:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    if state is not None:
        scope["state"] = state
    return Request(scope)  # type: ignore[arg-type]


async def test_request_ctx_takes_the_timeout_the_deadline_and_the_request_id(make_app: MakeApp) -> None:
    runtime = (await make_app(VID2CONTEXT_REQUEST_TIMEOUT_MS="60000")).runtime
    before = time.monotonic()
    ctx = request_ctx(_request({"X-Request-Id": "abc-123.x:y"}), runtime)
    after = time.monotonic()
    assert ctx.request_id == "abc-123.x:y"
    assert ctx.deadline is not None and before + 60 <= ctx.deadline <= after + 60
    sooner = time.monotonic() + 5
    watched: list = []
    ctx = request_ctx(
        _request(state={"deadline": sooner, "request_id": "from-middleware", "ctxs": watched}), runtime
    )
    assert ctx.deadline == sooner
    assert ctx.request_id == "from-middleware"
    assert watched == [ctx]  # the timeout middleware aborts it when it answers 504
    later = request_ctx(_request(state={"deadline": time.monotonic() + 3600}), runtime)
    assert later.remaining is not None and later.remaining <= 60
    hostile = request_ctx(_request({"X-Request-Id": "a\r\nb" + "x" * 200}), runtime)
    assert hostile.request_id != "a\r\nb" and "\n" not in hostile.request_id
    unlimited = request_ctx(_request(), (await make_app(VID2CONTEXT_REQUEST_TIMEOUT_MS="0")).runtime)
    assert unlimited.deadline is None


# --- /transcript --------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_transcript_text_has_the_header_as_the_cli_prints_it(client: Client) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    context = msgspec.json.decode(
        (await client.get(f"{API}/context", params={"url": VIDEO})).content, type=VideoContext
    )
    header = context_header(context, links="pattern").rstrip("\n")
    expected = header + "\n\n" + FORMATTERS["text"].render(context, RenderOptions()).rstrip("\n") + "\n"
    assert response.text == expected
    assert response.text.startswith(f"# {TITLE}")
    assert FIRST_LINE in response.text


@pytest.mark.parametrize("value", ["1", "true", "yes", "TRUE", "Yes"])
async def test_timestamps_on(client: Client, value: str) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "timestamps": value})
    assert response.status_code == 200
    body = response.text.split("\n- Chapters:", 1)[1]
    assert f"[0:00] {FIRST_LINE}" in body


@pytest.mark.parametrize("value", ["0", "false", "no", ""])
async def test_timestamps_off(client: Client, value: str) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "timestamps": value})
    assert response.status_code == 200
    assert "[0:00] Hey" not in response.text


@pytest.mark.parametrize("value", ["maybe", "2", "-1", "y", "x" * 500])
async def test_bad_timestamps_value(client: Client, youtube: HTTPXMock, value: str) -> None:
    body = assert_error(
        await client.get(f"{API}/transcript", params={"url": VIDEO, "timestamps": value}),
        ErrorCode.BAD_REQUEST,
    )
    assert "timestamps" in body["error"]["message"]
    assert upstream(youtube) == []


@pytest.mark.parametrize("format_id", list(FORMATTERS))
async def test_every_format_answers_with_its_own_content_type(client: Client, format_id: str) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "format": format_id})
    assert response.status_code == 200
    assert response.headers["content-type"] == FORMATTERS[format_id].mime_type
    assert response.text.endswith("\n")
    if format_id == "srt":
        assert next(iter(srt.parse(response.text))).content == FIRST_LINE
    if format_id == "json":
        assert msgspec.json.decode(response.content, type=VideoContext).id == "youtube:GJLlxj_dtq8"
    if format_id == "vtt":
        assert response.text.startswith("WEBVTT")
    if format_id in ("markdown", "pack"):
        assert TITLE in response.text


@pytest.mark.parametrize("value", ["docx", "TEXT ", "x" * 300, "text,srt"])
async def test_format_names_are_checked(client: Client, youtube: HTTPXMock, value: str) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "format": value})
    if value.strip().lower() in FORMATTERS:
        assert response.status_code == 200
        return
    body = assert_error(response, ErrorCode.BAD_REQUEST)
    assert all(format_id in body["error"]["hint"] for format_id in FORMATTERS)
    assert upstream(youtube) == []


@pytest.mark.parametrize("value", ["ads", "sponsor,nope", "x" * 500])
async def test_skip_names_sponsorblock_categories(client: Client, youtube: HTTPXMock, value: str) -> None:
    """What skip= does is tests/test_skips.py's; here, an unknown category is refused first."""
    body = assert_error(
        await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": value}), ErrorCode.BAD_REQUEST
    )
    assert "selfpromo" in body["error"]["hint"]
    assert upstream(youtube) == []


async def test_skip_off_is_the_whole_transcript(client: Client) -> None:
    response = await client.get(f"{API}/transcript", params={"url": VIDEO, "skip": "0"})
    assert response.status_code == 200
    assert "x-data-attribution" not in response.headers


async def test_translate_takes_the_platform_track_first_and_needs_a_language(
    client: Client, youtube: HTTPXMock
) -> None:
    """The video has a de track: translate=1 answers it as it is, with no language model set up
    (translation itself is tests/test_translate.py's)."""
    found = await client.get(f"{API}/transcript", params={"url": VIDEO, "lang": "de", "translate": "1"})
    assert found.status_code == 200 and found.headers["content-language"] == "de"
    assert "language model" not in found.text
    fetched = len(upstream(youtube))
    body = assert_error(
        await client.get(f"{API}/transcript", params={"url": VIDEO, "translate": "1"}), ErrorCode.BAD_REQUEST
    )
    assert "lang=" in body["error"]["hint"]
    assert_error(
        await client.get(f"{API}/transcript", params={"url": VIDEO, "translate": "please"}),
        ErrorCode.BAD_REQUEST,
    )
    assert len(upstream(youtube)) == fetched  # bad requests cost no upstream call
    assert (await client.get(f"{API}/transcript", params={"url": VIDEO, "translate": "0"})).status_code == 200


@ON_WORKER_TOO
async def test_mode_stt_without_a_speech_to_text_rung(client: Client) -> None:
    body = assert_error(
        await client.get(f"{API}/transcript", params={"url": VIDEO, "mode": "stt"}), ErrorCode.NO_PROVIDER
    )
    assert body["error"]["hint"]


# --- /metadata ----------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_metadata_fetches_no_captions(client: Client, youtube: HTTPXMock) -> None:
    response = await client.get(f"{API}/metadata", params={"url": NO_CAPTIONS})
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == f"youtube:{NO_CAPTIONS}"
    assert {"title", "platform", "url", "channel", "durationSec", "chapters", "thumbnails"} <= set(body)
    assert not any("timedtext" in path for path in upstream(youtube))


@ON_WORKER_TOO
async def test_metadata_errors(client: Client) -> None:
    assert_error(await client.get(f"{API}/metadata", params={"url": "unavailable"}), ErrorCode.NOT_FOUND)
    assert_error(await client.get(f"{API}/metadata", params={"url": BLOCKED}), ErrorCode.BLOCKED)
    assert_error(await client.get(f"{API}/metadata", params={"url": PLAYLIST}), ErrorCode.BAD_REQUEST)


# --- /formats -----------------------------------------------------------------------------------


async def test_formats_lists_every_formatter_in_order(client: Client) -> None:
    response = await client.get(f"{API}/formats")
    assert response.status_code == 200
    formats = response.json()["formats"]
    assert [f["id"] for f in formats] == list(FORMATTERS)
    for entry in formats:
        formatter = FORMATTERS[entry["id"]]
        assert entry["mimeType"] == formatter.mime_type
        assert entry["extension"] == formatter.extension
        assert entry["description"]


# --- /items -------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_items_expands_a_playlist(client: Client) -> None:
    response = await client.get(f"{API}/items", params={"url": PLAYLIST})
    assert response.status_code == 200
    items = response.json()["items"]
    assert len(items) == 12
    assert set(items[0]) >= {"id", "platform", "kind", "nativeId", "url"}
    assert all(item["kind"] == "video" for item in items)
    limited = (await client.get(f"{API}/items", params={"url": PLAYLIST, "limit": "3"})).json()["items"]
    assert limited == items[:3]


async def test_items_of_a_video_is_the_video(client: Client, youtube: HTTPXMock) -> None:
    items = (await client.get(f"{API}/items", params={"url": VIDEO})).json()["items"]
    assert [item["id"] for item in items] == ["youtube:GJLlxj_dtq8"]
    assert upstream(youtube) == []


@pytest.mark.parametrize("limit", ["0", "501", "-1", "abc", "1.5", "1e3", "9" * 40])
async def test_items_limit_bounds(client: Client, youtube: HTTPXMock, limit: str) -> None:
    body = assert_error(
        await client.get(f"{API}/items", params={"url": PLAYLIST, "limit": limit}), ErrorCode.BAD_REQUEST
    )
    assert "500" in body["error"]["hint"]
    assert upstream(youtube) == []


async def test_items_limit_follows_the_setting(youtube: HTTPXMock, make_app: MakeApp) -> None:
    made = await make_app(VID2CONTEXT_MAX_PLAYLIST_ITEMS="5")
    assert_error(
        await made.client.get(f"{API}/items", params={"url": PLAYLIST, "limit": "6"}), ErrorCode.BAD_REQUEST
    )
    items = (await made.client.get(f"{API}/items", params={"url": PLAYLIST})).json()["items"]
    assert len(items) == 5


# --- /outline and /section ----------------------------------------------------------------------


@ON_WORKER_TOO
async def test_outline_lists_chapters_with_tokens(client: Client) -> None:
    response = await client.get(f"{API}/outline", params={"url": VIDEO})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"metadata", "chapters", "totalTokens"}
    assert body["metadata"]["title"].startswith(TITLE)
    assert len(body["chapters"]) == 10
    assert set(body["chapters"][0]) == {"title", "startSec", "endSec", "tokens"}
    assert body["chapters"][0]["title"] == "Build Quality"
    whole = await client.get(f"{API}/transcript", params={"url": VIDEO})
    assert body["totalTokens"] == estimate_tokens(whole.text)  # what /transcript returns, header included
    for index in (0, 9):
        section = await client.get(f"{API}/section", params={"url": VIDEO, "chapter": str(index)})
        assert body["chapters"][index]["tokens"] == estimate_tokens(section.text)


async def test_outline_of_a_video_without_chapters_has_time_sections(client: Client) -> None:
    body = (await client.get(f"{API}/outline", params={"url": OTHER})).json()
    assert body["chapters"], body
    assert body["chapters"][0]["startSec"] == 0
    assert "–" in body["chapters"][0]["title"]  # "0:00–5:00"


@ON_WORKER_TOO
async def test_section_by_chapter_in_text_has_the_section_line(client: Client) -> None:
    response = await client.get(f"{API}/section", params={"url": VIDEO, "chapter": "0"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text.startswith(f"# {TITLE}")
    assert '\nSection "Build Quality": 0:39 to 1:06\n\n' in response.text
    by_title = await client.get(f"{API}/section", params={"url": VIDEO, "chapter": "scr"})
    assert 'Section "Screen": 1:06 to 1:46' in by_title.text


@ON_WORKER_TOO
async def test_section_by_range(client: Client) -> None:
    response = await client.get(
        f"{API}/section", params={"url": VIDEO, "from": "0", "to": "0:05", "timestamps": "1"}
    )
    assert response.status_code == 200
    assert 'Section "0:00–0:05": 0:00 to 0:05\n' in response.text
    assert f"[0:00] {FIRST_LINE}" in response.text
    assert "just something shorter" not in response.text  # starts at 5.7 s, after the range
    only_to = await client.get(f"{API}/section", params={"url": VIDEO, "to": "3"})
    assert only_to.status_code == 200


async def test_section_in_other_formats_has_their_content_type(client: Client) -> None:
    response = await client.get(
        f"{API}/section", params={"url": VIDEO, "from": "0", "to": "5", "format": "srt"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == FORMATTERS["srt"].mime_type
    assert [cue.content for cue in srt.parse(response.text)] == [
        FIRST_LINE,
        "this is not the original transcript",
    ]
    as_json = await client.get(f"{API}/section", params={"url": VIDEO, "chapter": "0", "format": "json"})
    assert as_json.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"from": "", "to": " "},
        {"chapter": "1", "from": "0:10"},
        {"from": "5:00", "to": "1:00"},
        {"from": "abc"},
        {"to": "-5"},
        {"from": "1:99"},
        {"from": "9" * 50},
        {"chapter": "x" * 5000},
        {"chapter": "0", "format": "docx"},
        {"chapter": "0", "timestamps": "sure"},
    ],
)
async def test_section_bad_requests_cost_no_upstream_call(
    client: Client, youtube: HTTPXMock, params: dict
) -> None:
    response = await client.get(f"{API}/section", params={"url": VIDEO, **params})
    body = assert_error(response, ErrorCode.BAD_REQUEST)
    assert body["error"]["hint"]
    assert upstream(youtube) == []


@pytest.mark.parametrize("chapter", ["10", "999999999999", "no such chapter"])
async def test_section_unknown_chapter_is_not_found(client: Client, chapter: str) -> None:
    body = assert_error(
        await client.get(f"{API}/section", params={"url": VIDEO, "chapter": chapter}), ErrorCode.NOT_FOUND
    )
    assert "Build Quality" in body["error"]["hint"] or "0 to 9" in body["error"]["hint"]


async def test_section_past_the_end_is_a_bad_request(client: Client) -> None:
    assert_error(
        await client.get(f"{API}/section", params={"url": VIDEO, "from": "6:00"}), ErrorCode.BAD_REQUEST
    )


# --- /comments ----------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_comments_without_a_provider_is_503_with_a_hint(client: Client) -> None:
    body = assert_error(await client.get(f"{API}/comments", params={"url": VIDEO}), ErrorCode.NO_PROVIDER)
    assert "yt-dlp" in body["error"]["hint"]
    assert [(a["id"], a["stage"], a["outcome"]) for a in body["attempts"]] == [
        ("youtube", "comments", "error")
    ]


@ON_WORKER_TOO
async def test_comments_of_an_upload_are_none(client: Client) -> None:
    response = await client.get(f"{API}/comments", params={"url": UPLOAD})
    assert response.status_code == 200
    assert response.json() == {"comments": []}


async def test_comments_of_a_list_is_a_bad_request(client: Client) -> None:
    assert_error(await client.get(f"{API}/comments", params={"url": PLAYLIST}), ErrorCode.BAD_REQUEST)


@pytest.mark.parametrize("limit", ["0", "1001", "x", "-3"])
async def test_comments_limit_bounds(client: Client, youtube: HTTPXMock, limit: str) -> None:
    body = assert_error(
        await client.get(f"{API}/comments", params={"url": VIDEO, "limit": limit}), ErrorCode.BAD_REQUEST
    )
    assert "1000" in body["error"]["hint"]
    assert upstream(youtube) == []


# --- /pack --------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_pack_lists_what_it_could_not_read(client: Client) -> None:
    response = await client.get(
        f"{API}/pack", params=[("url", VIDEO), ("url", NO_CAPTIONS), ("url", BLOCKED)]
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    text = response.text
    assert text.startswith("# Context pack: 1 video, 2 not included")
    assert FIRST_LINE in text
    not_included = text.split("## Not included", 1)[1]
    assert f"{NO_CAPTIONS}" in not_included and "no-transcript" in not_included
    assert BLOCKED in not_included and "blocked" in not_included


@ON_WORKER_TOO
async def test_pack_of_several_videos_keeps_input_order_and_drops_repeats(client: Client) -> None:
    response = await client.get(
        f"{API}/pack", params=[("url", OTHER), ("url", VIDEO), ("url", "youtu.be/GJLlxj_dtq8")]
    )
    assert response.status_code == 200
    assert response.text.startswith("# Context pack: 2 videos\n")
    assert response.text.index("The Tide Is Turning") < response.text.index(TITLE)


@ON_WORKER_TOO
async def test_pack_with_no_readable_video_answers_the_first_error(client: Client) -> None:
    body = assert_error(
        await client.get(f"{API}/pack", params=[("url", BLOCKED), ("url", NO_CAPTIONS)]), ErrorCode.BLOCKED
    )
    assert body["attempts"]
    limited = await client.get(f"{API}/pack", params={"url": "tooMany429x"})
    assert_error(limited, ErrorCode.RATE_LIMITED)
    assert limited.headers["retry-after"] == "120"
    assert_error(
        await client.get(f"{API}/pack", params={"url": "https://example.com/\x01"}), ErrorCode.BAD_REQUEST
    )


async def test_pack_expands_lists(client: Client) -> None:
    response = await client.get(f"{API}/pack", params={"url": PLAYLIST})
    assert response.status_code == 200
    assert response.text.startswith("# Context pack: 12 videos\n")


async def test_pack_token_budget(client: Client) -> None:
    whole = await client.get(f"{API}/pack", params={"url": VIDEO})
    refused = assert_error(
        await client.get(f"{API}/pack", params={"url": VIDEO, "maxTokens": "120"}), ErrorCode.BAD_REQUEST
    )
    assert "maxTokens=120 is too small" in refused["error"]["message"]
    minimum = int(refused["error"]["hint"].split("at least ")[1].split()[0])
    small = await client.get(f"{API}/pack", params={"url": VIDEO, "maxTokens": str(minimum)})
    assert small.status_code == 200
    assert len(small.text) < len(whole.text)
    assert (len(small.text) + 3) // 4 <= minimum
    assert (
        "read chapter N (for the tokens beside it): GET /api/v1/section?url=youtube:GJLlxj_dtq8&chapter=N"
        in small.text
    )
    assert " · below" not in small.text.split("\n\n", 2)[2]  # the minimum holds no chapter


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "99999999999"])
async def test_pack_bad_budget(client: Client, youtube: HTTPXMock, value: str) -> None:
    body = assert_error(
        await client.get(f"{API}/pack", params={"url": VIDEO, "maxTokens": value}), ErrorCode.BAD_REQUEST
    )
    assert "maxTokens" in body["error"]["message"]
    assert upstream(youtube) == []


async def test_pack_of_more_than_100_videos_is_too_large(client: Client, youtube: HTTPXMock) -> None:
    many = [("url", f"youtube:{i:011d}") for i in range(101)]
    body = assert_error(await client.get(f"{API}/pack", params=many), ErrorCode.TOO_LARGE)
    assert "100" in body["error"]["hint"]
    assert upstream(youtube) == []
    # A list that expands past the cap is refused before any video is read.
    expanded = await client.get(f"{API}/pack", params=[("url", LONG_PLAYLIST), ("url", VIDEO)])
    assert_error(expanded, ErrorCode.TOO_LARGE)
    assert "POST /youtubei/v1/player" not in upstream(youtube)


async def test_pack_reads_four_videos_at_once_and_never_more(
    make_app: MakeApp, httpx_mock: HTTPXMock
) -> None:
    together = Together(4)  # the first watch pages (one a video) wait until four are in flight

    async def held(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/watch":  # the playlist itself, then each video's later requests
            return httpx_callback(request)
        async with together.inside():
            return httpx_callback(request)

    httpx_mock.add_callback(held, is_reusable=True)
    made = await make_app()
    response = await made.client.get(f"{API}/pack", params={"url": PLAYLIST})  # 12 videos
    assert response.status_code == 200
    assert together.peak == 4


async def post_json(client: Client, path: str, body: Any) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return await client.post(path, content=content, headers={"Content-Type": "application/json"})


@ON_WORKER_TOO
async def test_pack_post(client: Client) -> None:
    response = await post_json(
        client, f"{API}/pack", {"inputs": [VIDEO, BLOCKED], "maxTokens": 5000, "mode": "auto", "lang": "en"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.text.startswith("# Context pack: 1 video, 1 not included")


BAD_BODIES = {
    "malformed": b"{bad",
    "truncated": b'{"inputs": ["GJLlxj_dtq8"',
    "not utf-8": b'{"inputs": ["\xff\xfe"]}',
    "empty": b"",
    "null": b"null",
    "array": b'["GJLlxj_dtq8"]',
    "inputs a string": {"inputs": VIDEO},
    "inputs of numbers": {"inputs": [1, 2]},
    "maxTokens a string": {"inputs": [VIDEO], "maxTokens": "100"},
    "maxTokens a bool": {"inputs": [VIDEO], "maxTokens": True},
    "maxTokens zero": {"inputs": [VIDEO], "maxTokens": 0},
    "unknown field": {"inputs": [VIDEO], "urls": [VIDEO]},
    "bad mode": {"inputs": [VIDEO], "mode": "fast"},
    "bad lang": {"inputs": [VIDEO], "lang": "en;x"},
    "no inputs": {},
    "empty inputs": {"inputs": []},
    "collectionId a number": {"collectionId": 7},
    "empty collectionId": {"collectionId": " "},
}


@pytest.mark.parametrize("route", ["pack", "bundle"])
@pytest.mark.parametrize("name", list(BAD_BODIES), ids=list(BAD_BODIES))
async def test_bad_bodies_get_our_error_body(
    client: Client, youtube: HTTPXMock, route: str, name: str
) -> None:
    response = await post_json(client, f"{API}/{route}", BAD_BODIES[name])
    body = assert_error(response, ErrorCode.BAD_REQUEST)
    assert body["error"].get("hint")
    assert "Validation failed" not in response.text
    assert upstream(youtube) == []


@pytest.mark.parametrize("route", ["pack", "bundle"])
async def test_post_of_101_inputs_is_too_large(client: Client, youtube: HTTPXMock, route: str) -> None:
    response = await post_json(
        client, f"{API}/{route}", {"inputs": [f"youtube:{i:011d}" for i in range(101)]}
    )
    assert_error(response, ErrorCode.TOO_LARGE)
    assert upstream(youtube) == []


@ON_WORKER_TOO
async def test_pack_of_a_collection(youtube: HTTPXMock, make_app: MakeApp) -> None:
    made = await make_app()
    collection = await library.create_collection(made.runtime, "Reviews")
    await library.add_to_collection(made.runtime, collection.id, [VIDEO])
    response = await post_json(made.client, f"{API}/pack", {"collectionId": collection.id})
    assert response.status_code == 200, response.text
    assert response.text.startswith("# Context pack: 1 video\n")
    assert TITLE in response.text
    missing = await post_json(made.client, f"{API}/pack", {"collectionId": "col_nope"})
    assert_error(missing, ErrorCode.NOT_FOUND)


# --- /bundle ------------------------------------------------------------------------------------


def _zip(response: httpx.Response) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(response.content))


@ON_WORKER_TOO
async def test_bundle_layout(client: Client) -> None:
    params = [
        ("url", VIDEO),
        ("url", OTHER),
        ("url", BLOCKED),
        ("formats", "text,srt,markdown,pack,text"),
        ("comments", "1"),
    ]
    response = await client.get(f"{API}/bundle", params=params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    disposition = response.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="') and disposition.endswith('.zip"')
    root = disposition.split('"')[1].removesuffix(".zip")
    archive = _zip(response)
    assert archive.testzip() is None
    names = archive.namelist()
    assert all(name.startswith(f"{root}/") for name in names)
    assert names[0] == f"{root}/context.md" and names[-1] == f"{root}/manifest.json"
    manifest = json.loads(archive.read(f"{root}/manifest.json"))
    assert manifest["format"] == "vid2context.bundle" and manifest["root"] == root
    assert manifest["formats"] == ["text", "srt", "markdown", "pack"]
    assert [v["id"] for v in manifest["videos"]] == ["youtube:GJLlxj_dtq8", f"youtube:{OTHER}"]
    first = manifest["videos"][0]
    folder = first["folder"]
    assert folder == "surface-go-review-its-awesome-GJLlxj_dtq8"
    assert first["files"] == [f"{folder}/{folder}.{ext}" for ext in ("txt", "srt", "md", "pack.md")]
    for video in manifest["videos"]:
        for path in video["files"]:
            assert f"{root}/{path}" in names
    text = archive.read(f"{root}/{folder}/{folder}.txt").decode()
    assert text.startswith(FIRST_LINE)  # per-video files are exactly the formatter's output
    assert next(iter(srt.parse(archive.read(f"{root}/{folder}/{folder}.srt").decode()))).content == FIRST_LINE
    pack = archive.read(f"{root}/context.md").decode()
    assert pack.startswith("# Context pack: 2 videos, 1 not included")
    failures = {(f["input"], f["code"], f.get("cause")) for f in manifest["failures"]}
    assert (BLOCKED, "blocked", None) in failures
    assert ("youtube:GJLlxj_dtq8", "no-provider", "comments") in failures  # comments asked for, none here


async def test_bundle_always_has_context_md(client: Client) -> None:
    response = await client.get(f"{API}/bundle", params={"url": VIDEO})
    archive = _zip(response)
    root = response.headers["content-disposition"].split('"')[1].removesuffix(".zip")
    assert sorted(archive.namelist()) == [f"{root}/context.md", f"{root}/manifest.json"]
    assert json.loads(archive.read(f"{root}/manifest.json"))["formats"] == []


@ON_WORKER_TOO
async def test_bundle_post(client: Client) -> None:
    response = await post_json(
        client, f"{API}/bundle", {"inputs": [VIDEO, OTHER], "formats": ["vtt", "json"], "maxTokens": 650}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    root = response.headers["content-disposition"].split('"')[1].removesuffix(".zip")
    assert root.startswith("vid2context-2-videos-")
    names = _zip(response).namelist()
    assert sum(name.endswith(".vtt") for name in names) == 2
    assert sum(name.endswith(".json") and not name.endswith("manifest.json") for name in names) == 2
    context_md = _zip(response).read(f"{root}/context.md").decode()
    assert (len(context_md) + 3) // 4 <= 650 and "Token budget: 650 of about " in context_md


@pytest.mark.parametrize("formats", ["docx", "text,docx", ",".join(["text"] * 100)])
async def test_bundle_bad_formats(client: Client, youtube: HTTPXMock, formats: str) -> None:
    assert_error(
        await client.get(f"{API}/bundle", params={"url": VIDEO, "formats": formats}), ErrorCode.BAD_REQUEST
    )
    body = {"inputs": [VIDEO], "formats": formats.split(",")}
    assert_error(await post_json(client, f"{API}/bundle", body), ErrorCode.BAD_REQUEST)
    assert_error(
        await post_json(client, f"{API}/bundle", {"inputs": [VIDEO], "formats": "text"}),
        ErrorCode.BAD_REQUEST,
    )
    assert upstream(youtube) == []


async def test_bundle_errors(client: Client, youtube: HTTPXMock) -> None:
    assert_error(
        await client.get(f"{API}/bundle", params={"url": VIDEO, "comments": "maybe"}), ErrorCode.BAD_REQUEST
    )
    assert_error(
        await post_json(client, f"{API}/bundle", {"inputs": [VIDEO], "comments": "yes"}),
        ErrorCode.BAD_REQUEST,
    )
    many = [("url", f"youtube:{i:011d}") for i in range(101)]
    assert_error(await client.get(f"{API}/bundle", params=many), ErrorCode.TOO_LARGE)
    assert upstream(youtube) == []
    assert_error(await client.get(f"{API}/bundle", params={"url": BLOCKED}), ErrorCode.BLOCKED)


def test_bundle_names_are_safe_and_distinct() -> None:
    assert slugify("Ça va? Über — «quotes» / ../etc") == "ca-va-uber-quotes-etc"
    assert slugify("日本語") == ""
    meta = {"platform": "youtube", "title": "日本語"}
    first = msgspec.convert(
        {"id": "youtube:abcdefghijk", "metadata": {"id": "youtube:abcdefghijk", **meta}}, VideoContext
    )
    local = msgspec.convert(
        {"id": "local:/home/me/../secret talk.mp4", "metadata": {"id": "x", **meta, "platform": "local"}},
        VideoContext,
    )
    bundle = build_bundle(
        [first, local], formats=["text", "markdown", "pack"], now=datetime(2026, 1, 2, tzinfo=UTC)
    )
    names = zipfile.ZipFile(io.BytesIO(bundle.data)).namelist()
    assert all(".." not in name and not name.startswith("/") and "\\" not in name for name in names)
    assert f"{bundle.root}/abcdefghijk/abcdefghijk.md" in names
    assert f"{bundle.root}/abcdefghijk/abcdefghijk.pack.md" in names
    assert bundle.manifest.created_at == "2026-01-02T00:00:00Z"
    with pytest.raises(VidError) as raised:
        build_bundle([first], formats=["docx"])
    assert raised.value.code is ErrorCode.BAD_REQUEST


# --- /models ------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_models_lists_the_rungs_and_the_default_policy(make_app: MakeApp) -> None:
    client = (await make_app()).client
    response = await client.get(f"{API}/models")
    assert response.status_code == 200
    body = response.json()
    assert body["defaultPolicy"] == "free"
    # Speech-to-text, embedding and language-model rungs: listed with what they need, off without
    # their keys (the MCP client's own model needs none, and is off outside an MCP call).
    assert [m["kind"] for m in body["models"]] == sorted(
        (m["kind"] for m in body["models"]), key=["stt", "embed", "llm"].index
    )
    assert {m["kind"] for m in body["models"]} == {"stt", "embed", "llm"}
    assert all(m["enabled"] is False for m in body["models"])
    assert all(m["requires"] for m in body["models"] if m["id"] != "llm/mcp-sampling/client")
    for kind in ("stt", "STT", "embed", "llm"):
        wanted = kind.lower()
        listed = (await client.get(f"{API}/models", params={"kind": kind})).json()["models"]
        assert listed == [m for m in body["models"] if m["kind"] == wanted] != []
    for kind in ("video", "visual"):
        assert (await client.get(f"{API}/models", params={"kind": kind})).json()["models"] == []
    quality = (await make_app(VID2CONTEXT_POLICY="quality")).client
    assert (await quality.get(f"{API}/models")).json()["defaultPolicy"] == "quality"


@pytest.mark.parametrize("kind", ["gpu", "x" * 500, "llm,stt"])
async def test_models_kind_is_checked(client: Client, kind: str) -> None:
    body = assert_error(await client.get(f"{API}/models", params={"kind": kind}), ErrorCode.BAD_REQUEST)
    assert "llm" in body["error"]["hint"]
