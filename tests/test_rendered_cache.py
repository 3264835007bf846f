"""The rendered-answer cache of ``GET /api/v1/transcript`` (``api/rendered.py``) and its ETags.

The real app over a real runtime; YouTube is the recorded replay. What must hold: a repeated read
is served from the cache with the same bytes and headers; ``If-None-Match`` with its ETag is
``304`` from the same entry; and no entry outlives the row it came from, whoever changed the row:
this process (a push through the API, a delete), or another process writing the same SQLite file.
On the Worker (Miniflare's D1) the version is the row every write to ``videos`` bumps: a repeat is
served from the isolate's cache (its hit count says so, and D1 is read for the version only), and
a push through another isolate's storage to the same D1 retires the entry.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
import msgspec
import pytest
from pytest_httpx import HTTPXMock

from vid2context.api import create_app
from vid2context.api.rendered import ENTRY_OVERHEAD, Rendered, RenderedCache
from vid2context.models import VideoContext
from vid2context.runtime import Runtime
from vid2context.storage.memory import MemoryStorage
from vid2context.storage.versions import version_reader

from .runtimes import Runtimes, serve
from .youtube_replay import httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO_ID = "youtube:GJLlxj_dtq8"
SRT = {"url": "GJLlxj_dtq8", "format": "srt"}
FIRST_LINE = "Hey, this is just a test"


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


class Served:
    def __init__(self, client: httpx.AsyncClient, runtime: Runtime, cache: RenderedCache | None) -> None:
        self.client = client
        self.runtime = runtime
        self.cache = cache


@pytest.fixture
async def served(youtube: HTTPXMock, runtimes: Runtimes) -> AsyncIterator[Served]:
    async with AsyncExitStack() as opened:
        runtime = await runtimes.build({})
        app = create_app(runtime, owns_runtime=runtimes.kind != "worker")
        client = await opened.enter_async_context(serve(app))
        yield Served(client, runtime, app.state.rendered)


def _changed(context: VideoContext, text: str) -> VideoContext:
    assert context.transcript is not None
    first = msgspec.structs.replace(context.transcript.segments[0], text=text)
    transcript = msgspec.structs.replace(
        context.transcript, segments=[first, *context.transcript.segments[1:]]
    )
    return msgspec.structs.replace(context, transcript=transcript)


@pytest.mark.parametrize("runtime_kind", ["memory", "sqlite", "worker"], indirect=True)
async def test_a_repeated_read_is_served_from_the_cache_with_the_same_bytes(served: Served) -> None:
    first = await served.client.get(f"{API}/transcript", params=SRT)  # read from YouTube, saved
    assert first.status_code == 200, first.text
    second = await served.client.get(f"{API}/transcript", params=SRT)  # from the library: kept
    assert served.cache is not None and served.cache.hits == 0
    third = await served.client.get(f"{API}/transcript", params=SRT)
    assert served.cache.hits == 1
    assert first.content == second.content == third.content
    assert FIRST_LINE in third.text
    for response in (first, second, third):
        assert response.headers["etag"] == f'"{hashlib.sha256(first.content).hexdigest()}"'
        assert response.headers["content-type"] == second.headers["content-type"]
        assert response.headers["content-language"] == "en"
        assert response.headers["x-robots-tag"] == "noindex"
        assert response.headers["x-request-id"]
        assert "x-ratelimit-remaining" in response.headers
    assert int(third.headers["x-ratelimit-remaining"]) == int(second.headers["x-ratelimit-remaining"]) - 1


@pytest.mark.parametrize("runtime_kind", ["memory", "sqlite", "worker"], indirect=True)
async def test_if_none_match_answers_304_from_the_same_tag(served: Served) -> None:
    await served.client.get(f"{API}/transcript", params=SRT)
    fresh = await served.client.get(f"{API}/transcript", params=SRT)
    etag = fresh.headers["etag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = await served.client.get(f"{API}/transcript", params=SRT, headers={"If-None-Match": header})
        assert again.status_code == 304, header
        assert again.content == b""
        assert again.headers["etag"] == etag
    stale = await served.client.get(f"{API}/transcript", params=SRT, headers={"If-None-Match": '"stale"'})
    assert stale.status_code == 200 and stale.content == fresh.content
    assert served.cache is not None
    assert served.cache.hits >= 5  # the 304s came from the kept entry


@pytest.mark.parametrize("runtime_kind", ["memory", "sqlite", "worker"], indirect=True)
async def test_a_key_is_everything_the_answer_depends_on(served: Served) -> None:
    variants = [
        SRT,
        {**SRT, "format": "vtt"},
        {**SRT, "format": "text"},
        {**SRT, "format": "text", "timestamps": "1"},
        {**SRT, "format": "text", "lang": "en"},
    ]
    bodies = []
    for params in variants:
        await served.client.get(f"{API}/transcript", params=params)
        bodies.append((await served.client.get(f"{API}/transcript", params=params)).content)
    assert len(set(bodies)) == len(variants) - 1  # lang=en renders as no lang here, nothing else does
    assert served.cache is not None
    kept = served.cache.hits
    for params, body in zip(variants, bodies, strict=True):
        assert (await served.client.get(f"{API}/transcript", params=params)).content == body
    assert served.cache.hits == kept + len(variants)


@pytest.mark.parametrize("runtime_kind", ["memory", "sqlite", "worker"], indirect=True)
async def test_a_push_or_a_delete_in_this_process_retires_the_entry(served: Served) -> None:
    await served.client.get(f"{API}/transcript", params=SRT)
    kept = await served.client.get(f"{API}/transcript", params=SRT)
    assert FIRST_LINE in kept.text
    stored = await served.runtime.storage.get_context(VIDEO_ID)
    assert stored is not None
    pushed = await served.client.put(
        f"{API}/library/{VIDEO_ID}", content=msgspec.json.encode(_changed(stored, "Pushed words"))
    )
    assert pushed.status_code in (200, 201), pushed.text
    after = await served.client.get(f"{API}/transcript", params=SRT)
    assert "Pushed words" in after.text and FIRST_LINE not in after.text
    assert after.headers["etag"] == f'"{hashlib.sha256(after.content).hexdigest()}"' != kept.headers["etag"]
    stale = await served.client.get(
        f"{API}/transcript", params=SRT, headers={"If-None-Match": kept.headers["etag"]}
    )
    assert stale.status_code == 200 and stale.content == after.content
    assert (await served.client.delete(f"{API}/library/{VIDEO_ID}")).status_code == 204
    again = await served.client.get(f"{API}/transcript", params=SRT)  # read from YouTube again
    assert FIRST_LINE in again.text and "Pushed words" not in again.text


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    import msgspec
    from vid2context.storage.sqlite import SQLiteStorage

    async def main(path, video_id, text):
        storage = SQLiteStorage(path, readers=1)
        context = await storage.get_context(video_id)
        first = msgspec.structs.replace(context.transcript.segments[0], text=text)
        segments = [first, *context.transcript.segments[1:]]
        transcript = msgspec.structs.replace(context.transcript, segments=segments)
        await storage.put_context(msgspec.structs.replace(context, transcript=transcript))
        await storage.close()

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.parametrize("runtime_kind", ["sqlite"], indirect=True)
async def test_a_write_by_another_process_to_the_same_file_retires_the_entry(served: Served) -> None:
    await served.client.get(f"{API}/transcript", params=SRT)
    kept = await served.client.get(f"{API}/transcript", params=SRT)
    assert FIRST_LINE in kept.text
    path = str(served.runtime.storage.database.path)  # type: ignore[attr-defined]
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", WRITER, path, VIDEO_ID, "Written elsewhere"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    after = await served.client.get(f"{API}/transcript", params=SRT)
    assert "Written elsewhere" in after.text and FIRST_LINE not in after.text
    assert after.headers["etag"] != kept.headers["etag"]
    gone = await served.client.get(
        f"{API}/transcript", params=SRT, headers={"If-None-Match": kept.headers["etag"]}
    )
    assert gone.status_code == 200  # the old tag names a body that is no longer the answer


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_a_push_by_another_isolate_retires_the_entry(served: Served) -> None:
    """Another isolate: its own ``CloudflareStorage`` over the same D1 (and R2), as a push or a
    job there would write. This isolate learns of it from the version row alone."""
    from vid2context.storage.cloudflare import CloudflareStorage

    await served.client.get(f"{API}/transcript", params=SRT)
    kept = await served.client.get(f"{API}/transcript", params=SRT)
    assert served.cache is not None and served.cache.size > 0
    storage = served.runtime.storage
    assert isinstance(storage, CloudflareStorage)
    before = await storage.library_version()
    other = CloudflareStorage(storage._d1.db, bucket=storage._bucket)
    stored = await other.get_context(VIDEO_ID)
    assert stored is not None
    await other.put_context(_changed(stored, "Pushed elsewhere"))
    assert (await storage.library_version() or 0) > (before or 0)
    after = await served.client.get(f"{API}/transcript", params=SRT)
    assert "Pushed elsewhere" in after.text and FIRST_LINE not in after.text
    assert after.headers["etag"] != kept.headers["etag"]
    hits = served.cache.hits
    again = await served.client.get(f"{API}/transcript", params=SRT)
    assert served.cache.hits == hits + 1 and again.content == after.content  # the new text is kept


@pytest.mark.parametrize("runtime_kind", ["memory", "worker"], indirect=True)
async def test_an_answer_with_translate_is_never_kept(served: Served) -> None:
    asked = {**SRT, "lang": "de", "translate": "1"}
    first = await served.client.get(f"{API}/transcript", params=asked)
    second = await served.client.get(f"{API}/transcript", params=asked)
    assert first.status_code == second.status_code
    assert served.cache is not None and served.cache.hits == 0 and served.cache.size == 0


def _rendered(size: int) -> Rendered:
    return Rendered.of(b"x" * size, {"Content-Type": "text/plain"})


async def test_the_cache_is_bounded_in_bytes_and_drops_the_least_recently_used() -> None:
    storage = MemoryStorage()
    cache = RenderedCache(version_reader(storage), max_bytes=10 * (1000 + ENTRY_OVERHEAD))
    version = await cache.version()
    for n in range(10):
        cache.put((n,), version, _rendered(1000))
    assert cache.get((0,), version) is not None  # 0 is now the most recently used
    cache.put((10,), version, _rendered(1000))
    assert cache.size <= cache.max_bytes
    assert cache.get((1,), version) is None  # the least recently used went
    assert cache.get((0,), version) is not None and cache.get((10,), version) is not None
    cache.put(("big",), version, _rendered(cache.max_entry))  # over an eighth of the bound: not kept
    assert cache.get(("big",), version) is None
    cache.put((0,), version, _rendered(10))  # replacing an entry counts its new size only
    assert cache.size <= cache.max_bytes


async def test_an_entry_read_at_an_older_version_is_never_served() -> None:
    storage = MemoryStorage()
    cache = RenderedCache(version_reader(storage), max_bytes=1 << 20)
    before = await cache.version()
    await storage.delete_context("youtube:nothing")  # nothing deleted: nothing changed
    assert await cache.version() == before
    cache.put(("k",), before, _rendered(10))
    assert cache.get(("k",), await cache.version()) is not None
    context = msgspec.json.decode(
        b'{"id":"youtube:x","metadata":{"id":"youtube:x","platform":"youtube","title":"t","url":"u"}}',
        type=VideoContext,
    )
    await storage.put_context(context)
    now = await cache.version()
    assert now != before
    assert cache.get(("k",), now) is None
    cache.put(("late",), before, _rendered(10))  # rendered from a read that began before the save
    assert cache.get(("late",), now) is None
    assert cache.get(("k",), None) is None  # no version (a busy file): nothing is served
