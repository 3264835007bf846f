"""``build_worker_runtime(env)``: the Cloudflare Worker's runtime, on Miniflare's real D1, KV and R2.

What is the Worker's own: settings from the env's attributes (vars and secrets), the stores on the
bindings, the Workers AI binding in the speech-to-text ladder (disabled, and saying it needs ``AI``,
when there is none), no way to cut audio, ``worker`` in health; and what the Worker's way of
running needs: an app that does not close the isolate's runtime at each lifespan end and whose
overlapping lifespans (concurrent requests) share one (``create_app(owns_runtime=False)``), and
background work handed to ``Runtime.keep_alive`` (``waitUntil`` there). The contract suites run
on this runtime too (``tests/runtimes.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Iterator
from typing import Any

import httpx
import pytest
from mcp.client import Client
from pytest_httpx import HTTPXMock

from vid2context.api import create_app
from vid2context.errors import VidError
from vid2context.mcp import create_mcp
from vid2context.mcp.results import JsonReply
from vid2context.mcp.runs import Run, Runs
from vid2context.providers.whisper_workers_ai import WorkersAIBindingWhisper
from vid2context.runtime import build_worker_runtime
from vid2context.storage.cloudflare import CloudflareKv, CloudflareStorage, R2Blobs

from .cloudflare_bindings import WorkersAi
from .fake_whisper import FakeWhisper
from .miniflare_harness import MiniflareHarness
from .runtimes import Runtimes, asgi_lifespan, serve
from .youtube_replay import httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO = "GJLlxj_dtq8"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
def runtime_kind() -> str:
    """Every test here is about the Worker's runtime."""
    return "worker"


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


@pytest.fixture
def whisper() -> Iterator[FakeWhisper]:
    """A Workers AI endpoint that hears one segment per 5 s of audio (no decoding)."""
    with FakeWhisper(engine="length") as fake:
        yield fake


# --- settings, stores, ladder --------------------------------------------------------------------


async def test_settings_come_from_the_env_attributes_and_nothing_else(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(
        {"VID2CONTEXT_PUBLIC": "1", "VID2CONTEXT_RATE_LIMIT": "7", "GROQ_API_KEY": "gsk-not-a-real-key"}
    )
    settings = runtime.settings
    assert (
        settings.public is True and settings.rate_limit == 7 and settings.groq_api_key == "gsk-not-a-real-key"
    )
    assert settings.max_upload_mb == 100  # not in the env: the default
    groq = next(rung for rung in runtime.stt if rung.provider == "stt-groq")
    assert groq.enabled  # the secret turned the rung on


async def test_json_vars_are_read_as_text_and_objects_are_refused(miniflare: MiniflareHarness) -> None:
    env = miniflare.new_env()  # its own: the attributes set here must not reach other tests
    env.VID2CONTEXT_PUBLIC = True  # wrangler.toml `VID2CONTEXT_PUBLIC = true`
    env.VID2CONTEXT_MAX_UPLOAD_MB = 5  # and `= 5`
    runtime = build_worker_runtime(env)
    assert runtime.settings.public is True and runtime.settings.max_upload_mb == 5
    await runtime.aclose()
    env.GROQ_API_KEY = {"secret": "gsk-leaked"}
    with pytest.raises(VidError) as caught:
        build_worker_runtime(env)
    assert "GROQ_API_KEY" in caught.value.message
    assert "leaked" not in caught.value.message + (caught.value.hint or "")
    await env.aclose()


async def test_the_stores_are_the_bindings_and_health_says_worker(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    assert isinstance(runtime.storage, CloudflareStorage)
    assert isinstance(runtime.kv, CloudflareKv) and isinstance(runtime.blobs, R2Blobs)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        health = (await client.get(f"{API}/health")).json()
    assert health["runtime"] == "worker" and health["storage"] == "cloudflare"
    assert [p["id"] for p in health["providers"] if p["kind"] == "source"] == [
        "youtube",
        "supadata",
        "upload",
    ]


async def test_without_an_ai_binding_its_rung_is_disabled_and_requires_ai(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    with pytest.raises(AttributeError):
        runtimes.env_of(runtime).AI  # noqa: B018  a Worker without the binding has no attribute
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        health = (await client.get(f"{API}/health")).json()
    workers_ai = [p for p in health["providers"] if p["id"] == "stt-workers-ai"]
    assert len(workers_ai) == 1 and workers_ai[0]["enabled"] is False
    (rung,) = workers_ai[0]["rungs"]  # the binding's rung only: the REST rung is not on the Worker
    assert rung["requires"] == ["AI"] and rung["enabled"] is False
    ids = [rung.id for rung in runtime.stt]
    assert len(ids) == len(set(ids))
    assert [rung.tier for rung in runtime.stt] == sorted(
        (rung.tier for rung in runtime.stt), key=["local", "free", "keyless", "paid"].index
    )


async def test_with_an_ai_binding_its_rung_is_enabled_after_groq(
    runtimes: Runtimes, whisper: FakeWhisper
) -> None:
    runtime = await runtimes.build({**QUIET, "GROQ_API_KEY": "gsk-x"}, ai=WorkersAi(whisper.url))
    enabled = [rung for rung in runtime.stt if rung.enabled]
    assert [rung.provider for rung in enabled] == ["stt-groq", "stt-workers-ai"]
    assert isinstance(enabled[1], WorkersAIBindingWhisper)


# --- speech-to-text through the AI binding --------------------------------------------------------


async def _upload(
    client: httpx.AsyncClient, data: bytes, name: str = "talk.mp3", mime: str = "audio/mpeg"
) -> str:
    response = await client.post(f"{API}/uploads", files={"file": (name, data, mime)})
    assert response.status_code == 201, response.text
    return response.json()["input"]


async def test_an_upload_is_transcribed_through_the_ai_binding(
    runtimes: Runtimes, whisper: FakeWhisper
) -> None:
    ai = WorkersAi(whisper.url)
    runtime = await runtimes.build(QUIET, ai=ai)
    audio = b"\x00\x01" * 20_000  # 40 kB: ten seconds to the fake, two segments
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        reference = await _upload(client, audio)
        response = await client.get(f"{API}/context", params={"url": reference})
    assert response.status_code == 200, response.text
    context = response.json()
    assert context["transcript"]["producer"] == "stt/cloudflare/@cf/openai/whisper-large-v3-turbo"
    assert [s["startSec"] for s in context["transcript"]["segments"]] == [0.0, 5.0]
    assert ai.calls == 1 and whisper.answered[0].size == len(audio)
    assert reference == "upload:" + hashlib.sha256(audio).hexdigest()


def _without_ms(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in attempt.items() if k != "ms"} for attempt in attempts]


async def test_an_upload_too_large_for_one_request_is_too_large_with_a_hint(
    runtimes: Runtimes, whisper: FakeWhisper
) -> None:
    """No ffmpeg on the Worker: audio over one request's cap in a container that cannot be cut
    without decoding (M4A; WAV and MP3 are cut, ``test_worker_long_audio.py``) says what to do."""
    ai = WorkersAi(whisper.url)
    runtime = await runtimes.build({**QUIET, "VID2CONTEXT_STT_CHUNK_MB": "1"}, ai=ai)
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        reference = await _upload(client, b"\x07" * (1024 * 1024 + 1), "talk.m4a", "audio/mp4")
        response = await client.get(f"{API}/transcript", params={"url": reference, "mode": "stt"})
        auto = await client.get(f"{API}/transcript", params={"url": reference})
    assert response.status_code == 413, response.text
    body = response.json()
    assert (
        body["error"]["code"] == "too-large"
        and "only WAV, MP3 and Ogg (Opus, Vorbis) can be cut" in body["error"]["message"]
    )
    assert "local runtime" in body["error"]["hint"] and "Traceback" not in response.text
    tried = [
        (a["id"], a.get("reason"))
        for a in body["attempts"]
        if a["stage"] == "stt" and a["outcome"] == "error"
    ]
    assert tried == [("stt/cloudflare/@cf/openai/whisper-large-v3-turbo", "too-large")]
    # The sizes differ visibly (it said "1.0 MB, over the 1.0 MB").
    assert "1,048,577 bytes, over the 1,048,576 bytes" in body["error"]["message"]
    # An upload has no captions by nature: mode=auto answers the same 413, not a 502 all-rungs-failed
    # whose hint says "use mode=stt", and its attempts are mode=stt's with the captions skipped.
    assert auto.status_code == 413, auto.text
    assert auto.json()["error"] == body["error"]
    attempts = _without_ms(auto.json()["attempts"])
    assert attempts[1] == {
        "id": "upload",
        "stage": "captions",
        "outcome": "skipped",
        "reason": "no-transcript",
        "detail": "an upload has no captions",
    }
    assert attempts[:1] + attempts[2:] == _without_ms(body["attempts"])
    assert ai.calls == 0  # refused before anything was sent


# --- the lifespan around every request ------------------------------------------------------------


async def _use_everything(client: httpx.AsyncClient) -> None:
    """Requests that need the store, the KV, the blobs, the http client, the jobs and MCP."""
    assert (await client.get(f"{API}/outline", params={"url": VIDEO})).status_code == 200
    assert f"youtube:{VIDEO}" in [item["id"] for item in (await client.get(f"{API}/library")).json()["items"]]
    await _upload(client, b"some audio bytes")
    job = (await client.post(f"{API}/jobs", json={"kind": "context", "input": "F1xioXWb8CY"})).json()
    assert job["status"] == "queued", job
    initialized = await client.post("/mcp", json=INIT, headers=MCP_HEADERS)
    assert initialized.status_code == 200, initialized.text
    assert initialized.json()["result"]["serverInfo"]["name"] == "vid2context"


async def test_the_runtime_survives_lifespan_after_lifespan_when_the_app_does_not_own_it(
    runtimes: Runtimes, youtube: HTTPXMock
) -> None:
    runtime = await runtimes.build(QUIET)
    app = create_app(runtime, owns_runtime=False)
    for _ in range(2):  # the Worker starts and ends the lifespan around each request
        async with serve(app) as client:
            await _use_everything(client)
    assert not runtime.http.is_closed


async def test_overlapping_lifespans_share_one_and_every_request_is_answered(
    runtimes: Runtimes, youtube: HTTPXMock
) -> None:
    """Concurrent requests in one isolate each run the lifespan, so lifespans overlap and do not end
    in the order they began; each request must still be answered and every lifespan end cleanly."""
    runtime = await runtimes.build(QUIET)
    app = create_app(runtime, owns_runtime=False)
    transport = httpx.ASGITransport(app=app)

    async def one_request(path: str, method: str = "GET", **kwargs: Any) -> int:
        async with asgi_lifespan(app), httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            return (await client.request(method, path, **kwargs)).status_code

    first = asyncio.ensure_future(one_request(f"{API}/outline", params={"url": VIDEO}))  # slower: fetches
    await asyncio.sleep(0)
    quick = await asyncio.gather(
        one_request("/mcp", "POST", json=INIT, headers=MCP_HEADERS), one_request(f"{API}/health")
    )
    assert quick == [200, 200] and await first == 200
    for _ in range(2):  # and after they all ended, a new burst starts cleanly
        assert await asyncio.gather(*(one_request(f"{API}/library") for _ in range(3))) == [200] * 3


async def test_an_app_that_owns_its_runtime_closes_it_with_its_lifespan(
    runtimes: Runtimes, youtube: HTTPXMock
) -> None:
    """The contrast: what the Worker must not do, and what a server process does."""
    runtime = await runtimes.build(QUIET)
    async with serve(create_app(runtime)) as client:
        await _use_everything(client)
    assert runtime.http.is_closed
    with pytest.raises(VidError) as caught:
        await runtime.jobs.submit(runtime, "context", VIDEO)
    assert "shut down" in caught.value.message


# --- background work handed to keep_alive ---------------------------------------------------------


class KeepAlive:
    """What the Worker entry sets: ``waitUntil``, here a list of what it was given."""

    def __init__(self) -> None:
        self.tasks: list[Awaitable[Any]] = []

    def __call__(self, task: Awaitable[Any]) -> None:
        self.tasks.append(task)


async def test_a_job_hands_its_task_to_keep_alive(runtimes: Runtimes, youtube: HTTPXMock) -> None:
    runtime = await runtimes.build(QUIET)
    runtime.keep_alive = kept = KeepAlive()
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        job = (await client.post(f"{API}/jobs", json={"kind": "context", "input": VIDEO})).json()
        (task,) = kept.tasks
        assert isinstance(task, asyncio.Task)
        await task
        done = (await client.get(f"{API}/jobs/{job['id']}")).json()
    assert done["status"] == "succeeded", done


async def test_an_mcp_run_hands_its_task_to_keep_alive_and_outlives_the_lifespan(
    runtimes: Runtimes, httpx_mock: HTTPXMock
) -> None:
    upstream_may_answer = asyncio.Event()
    upstream_asked = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        upstream_asked.set()
        await upstream_may_answer.wait()  # the run is still going when the lifespan ends
        return httpx_callback(request)

    httpx_mock.add_callback(slow, is_reusable=True, is_optional=True)
    runtime = await runtimes.build(QUIET)
    runtime.keep_alive = kept = KeepAlive()
    server = create_mcp(runtime, wait_s=0.02, job_wait_s=10)
    async with Client(server) as connected:
        first = (await connected.call_tool("get_outline", {"url": VIDEO})).structured_content
        assert first["status"] == "processing"
        # On a loaded machine the run may not have reached the fetch within wait_s: wait for it.
        await asyncio.wait_for(upstream_asked.wait(), 30)
        # two tasks held: the MCP run, and the upstream fetch it waits on (runtime.flights)
        assert len(kept.tasks) == 2
        await server.deps.runs.aclose()  # what the /mcp lifespan does when the Worker ends it
        assert not any(task.done() for task in kept.tasks)
        upstream_may_answer.set()
        done = await connected.call_tool("get_job", {"job_id": first["job_id"]})
    assert done.structured_content["title"].startswith("Surface Go Review")


@pytest.mark.parametrize("platform_holds_it", [False, True])
async def test_closing_the_runs_stops_only_what_the_platform_does_not_hold(platform_holds_it: bool) -> None:
    """Locally nothing holds a run but the registry, so closing it cancels what is still going;
    a run given to ``waitUntil`` is the platform's to end."""
    held: list[Awaitable[Any]] = []

    def keep_alive(task: Awaitable[Any]) -> bool:
        held.append(task)
        return platform_holds_it

    runs = Runs(timeout=10, wait_s=0.01, keep_alive=keep_alive)
    seen: list[Run] = []
    may_finish = asyncio.Event()

    async def work(run: Run) -> JsonReply:
        seen.append(run)
        await may_finish.wait()
        return JsonReply({"finished": True})

    answer = await runs.call("tool", {}, "me", work, None)
    assert isinstance(answer, JsonReply) and answer.data.status == "processing"
    (run,) = seen
    assert held == [run.task] and run.kept_alive is platform_holds_it
    await runs.aclose()
    assert run.task is not None and run.task.cancelled() is not platform_holds_it
    if platform_holds_it:
        may_finish.set()
        assert (await run.task).data == {"finished": True}
