"""Jobs: the queue's semantics on its own, then the HTTP routes and the SSE stream.

A scripted kind (``script``) lets each test decide, step by step, what a running job reports and
when it ends, so ordering is asserted by waiting on the events themselves, never by sleeping.
The built-in kinds run on real parts (runtime, storage, the YouTube provider) with YouTube
answered from the recorded fixtures. SSE is read through the real app's ASGI callable, chunk by
chunk as the app sends it (``SseClient``), so live events and heartbeats are seen as they happen.
"""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from pytest_httpx import HTTPXMock

from vid2context import library
from vid2context.api import create_app
from vid2context.errors import ErrorCode, VidError
from vid2context.job_kinds import BUILTIN_KINDS
from vid2context.jobs import Job, JobKind, JobQueue, JobRun
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.storage.memory import MemoryKv

from .sse import SseClient, parse
from .youtube_replay import PLAYLIST_ID, httpx_callback

pytestmark = pytest.mark.anyio

API = "/api/v1"
VIDEO = "https://www.youtube.com/watch?v=GJLlxj_dtq8"
VIDEO_ID = "youtube:GJLlxj_dtq8"
OTHER = "F1xioXWb8CY"
BLOCKED = "botCheck001"
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"  # 12 videos
TINY_HEARTBEAT = 0.02


# --- a kind the test drives -------------------------------------------------------------------


class Script:
    """Each ``script`` job takes its steps from a queue of its own (by input name): ``("item", {...})``,
    ``("progress", (done, total))``, ``("finish", result)``, ``("fail", error)`` or ``("crash", None)``.
    ``started`` names the jobs that have begun running, in order."""

    def __init__(self) -> None:
        self.steps: dict[str, asyncio.Queue[tuple[str, Any]]] = {}
        self.started: list[str] = []
        self.started_changed = asyncio.Event()

    def queue(self, name: str) -> asyncio.Queue[tuple[str, Any]]:
        return self.steps.setdefault(name, asyncio.Queue())

    def push(self, name: str, *steps: tuple[str, Any]) -> None:
        for step in steps:
            self.queue(name).put_nowait(step)

    async def wait_started(self, count: int) -> None:
        while len(self.started) < count:
            changed = self.started_changed
            await changed.wait()

    async def check(
        self, runtime: Runtime, value: Any, options: dict[str, Any]
    ) -> tuple[Any, dict[str, Any]]:
        if not isinstance(value, str):
            raise VidError(ErrorCode.BAD_REQUEST, "script input is a name", hint="give a string")
        return value, options

    async def run(self, run: JobRun) -> Any:
        self.started.append(run.input)
        changed, self.started_changed = self.started_changed, asyncio.Event()
        changed.set()
        steps = self.queue(run.input)
        while True:
            what, value = await steps.get()
            if what == "item":
                await run.item(value)
            elif what == "progress":
                await run.progress(*value)
            elif what == "finish":
                return value
            elif what == "fail":
                raise value
            elif what == "crash":
                raise RuntimeError("secret internal detail /etc/passwd")

    def kind(self) -> JobKind:
        return JobKind(self.check, self.run, "a scripted job for tests")


@pytest.fixture
def youtube(httpx_mock: HTTPXMock) -> HTTPXMock:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    return httpx_mock


@pytest.fixture
def script() -> Script:
    return Script()


def make_runtime(script: Script, *, max_running: int = 4, heartbeat: float = 15.0, **environ: str) -> Runtime:
    runtime = build_runtime(
        load_settings({"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0", **environ}),
        http=httpx.AsyncClient(),
    )
    runtime.jobs = JobQueue(
        kinds={**BUILTIN_KINDS, "script": script.kind()}, max_running=max_running, heartbeat_s=heartbeat
    )
    return runtime


@pytest.fixture
async def runtime(youtube: HTTPXMock, script: Script) -> AsyncIterator[Runtime]:
    rt = make_runtime(script)
    yield rt
    await rt.aclose()


async def collect(events: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in events]


def names(events: list[Any]) -> list[str | None]:
    return [None if e is None else e.event for e in events]


# --- the queue --------------------------------------------------------------------------------


async def test_a_job_runs_and_its_state_reaches_the_kv(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    assert job.status == "queued" and job.kind == "script" and job.id.startswith("job_")
    assert job.created_at.endswith("Z") and job.updated_at == job.created_at
    stored = msgspec.json.decode(await runtime.kv.get(f"jobs:{job.id}"), type=Job)
    assert stored.id == job.id and stored.status == "queued"
    script.push(
        "a", ("progress", (1, 2, "half")), ("item", {"id": "x", "outcome": "ok"}), ("finish", {"n": 1})
    )
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "succeeded" and done.result == {"n": 1} and done.error is None
    assert msgspec.to_builtins(done.progress) == {"done": 1, "total": 2, "message": "half"}
    stored = msgspec.json.decode(await runtime.kv.get(f"jobs:{job.id}"), type=Job)
    assert stored == done
    # The wire shape is the contract's Job: optional fields absent until they have a value.
    assert set(msgspec.to_builtins(job)) == {"id", "kind", "status", "createdAt", "updatedAt"}
    assert set(msgspec.to_builtins(done)) == {
        "id",
        "kind",
        "status",
        "progress",
        "result",
        "createdAt",
        "updatedAt",
    }


async def test_events_are_numbered_from_one(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", ("item", {"id": "v1", "outcome": "ok"}), ("progress", (1, 1)), ("finish", "r"))
    await runtime.jobs.wait(runtime, job.id)
    events = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=0))
    assert [(e.id, e.event) for e in events] == [(1, "item"), (2, "progress"), (3, "done")]
    assert events[-1].data == {"result": "r"}


@pytest.mark.parametrize("kind", ["nope", "", "CONTEXT", " context"])
async def test_unknown_kind_is_bad_request_listing_the_kinds(runtime: Runtime, kind: str) -> None:
    with pytest.raises(VidError) as caught:
        await runtime.jobs.submit(runtime, kind, "x")
    assert caught.value.code is ErrorCode.BAD_REQUEST
    for known in ("context", "items", "bundle", "ingest", "refresh"):
        assert known in caught.value.hint


async def test_a_failing_job_is_failed_with_the_error_body(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", ("fail", VidError(ErrorCode.BLOCKED, "blocked here", hint="use a proxy")))
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "failed" and done.result is None
    assert msgspec.to_builtins(done.error) == {
        "code": "blocked",
        "message": "blocked here",
        "hint": "use a proxy",
    }
    events = await collect(await runtime.jobs.events(runtime, job.id))
    assert names(events) == ["error"] and events[0].data == msgspec.to_builtins(done.error)


async def test_a_crashing_job_is_internal_and_leaks_nothing(
    runtime: Runtime, script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", ("crash", None))
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "failed" and done.error is not None and done.error.code == "internal"
    assert "passwd" not in json.dumps(msgspec.to_builtins(done))
    assert "secret internal detail" in caplog.text  # logged for the operator, not shown


async def test_running_jobs_are_bounded_and_the_rest_wait_in_order(
    youtube: HTTPXMock, script: Script
) -> None:
    runtime = make_runtime(script, max_running=2)
    try:
        jobs = [await runtime.jobs.submit(runtime, "script", name) for name in "abcd"]
        await script.wait_started(2)
        assert script.started == ["a", "b"]
        states = [(await runtime.jobs.get(runtime, job.id)).status for job in jobs]
        assert states == ["running", "running", "queued", "queued"]
        script.push("a", ("finish", 1))
        await runtime.jobs.wait(runtime, jobs[0].id)
        await script.wait_started(3)
        assert script.started == ["a", "b", "c"]
        assert (await runtime.jobs.get(runtime, jobs[3].id)).status == "queued"
        for name in "bcd":
            script.push(name, ("finish", name))
        finished = [await runtime.jobs.wait(runtime, job.id) for job in jobs]
        assert [job.status for job in finished] == ["succeeded"] * 4
        assert [job.result for job in finished] == [1, "b", "c", "d"]
    finally:
        await runtime.aclose()


async def test_cancel_a_running_job(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", ("item", {"id": "v1", "outcome": "ok"}))
    await script.wait_started(1)
    canceled = await runtime.jobs.cancel(runtime, job.id)
    assert canceled.status == "canceled"
    assert canceled.error is not None and canceled.error.code == "canceled" and canceled.error.message
    events = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=0))
    assert names(events)[-1] == "error"
    assert events[-1].data == msgspec.to_builtins(canceled.error)
    stored = msgspec.json.decode(await runtime.kv.get(f"jobs:{job.id}"), type=Job)
    assert stored.status == "canceled" and stored.error == canceled.error
    # Canceling again, or a finished job, changes nothing.
    assert await runtime.jobs.cancel(runtime, job.id) == canceled


async def test_cancel_a_queued_job_and_one_that_never_started(youtube: HTTPXMock, script: Script) -> None:
    runtime = make_runtime(script, max_running=1)
    try:
        first = await runtime.jobs.submit(runtime, "script", "a")
        waiting = await runtime.jobs.submit(runtime, "script", "b")
        await script.wait_started(1)
        canceled = await runtime.jobs.cancel(runtime, waiting.id)
        assert canceled.status == "canceled" and canceled.error.code == "canceled"
        # Submitted and canceled before its task ever ran.
        unstarted = await runtime.jobs.submit(runtime, "script", "c")
        assert (await runtime.jobs.cancel(runtime, unstarted.id)).status == "canceled"
        script.push("a", ("finish", "ok"))
        assert (await runtime.jobs.wait(runtime, first.id)).status == "succeeded"
        assert script.started == ["a"]  # the canceled ones never ran
    finally:
        await runtime.aclose()


async def test_cancel_a_finished_job_returns_it_unchanged(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", ("finish", 5))
    done = await runtime.jobs.wait(runtime, job.id)
    assert await runtime.jobs.cancel(runtime, job.id) == done


async def test_fresh_subscriber_gets_items_then_latest_progress_then_live(
    runtime: Runtime, script: Script
) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push(
        "a",
        ("progress", (0, 3)),
        ("item", {"id": "v1", "outcome": "ok"}),
        ("progress", (1, 3)),
        ("item", {"id": "v2", "outcome": "error"}),
        ("progress", (2, 3)),
    )
    # Wait until the job has reported all five, by following it from the start.
    follow = await runtime.jobs.events(runtime, job.id, last_event_id=0)
    seen = [await anext(follow) for _ in range(5)]
    assert [e.id for e in seen] == [1, 2, 3, 4, 5]
    fresh = await runtime.jobs.events(runtime, job.id)
    replay = [await anext(fresh) for _ in range(3)]
    assert [(e.id, e.event) for e in replay] == [(2, "item"), (4, "item"), (5, "progress")]
    assert replay[-1].data == {"done": 2, "total": 3}
    script.push("a", ("item", {"id": "v3", "outcome": "skipped"}), ("finish", "all"))
    live = await collect(fresh)
    assert [(e.id, e.event) for e in live] == [(6, "item"), (7, "done")]
    rest = await collect(follow)
    assert [e.id for e in rest] == [6, 7]


async def test_last_event_id_replays_only_later_events(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    script.push("a", *[("item", {"id": f"v{i}", "outcome": "ok"}) for i in range(4)], ("finish", None))
    await runtime.jobs.wait(runtime, job.id)
    after_two = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=2))
    assert [e.id for e in after_two] == [3, 4, 5]
    # At (or past) the end of a finished job: nothing, and the stream ends at once.
    assert await collect(await runtime.jobs.events(runtime, job.id, last_event_id=5)) == []
    assert await collect(await runtime.jobs.events(runtime, job.id, last_event_id=99)) == []
    # A finished job replays its items and the final event.
    assert names(await collect(await runtime.jobs.events(runtime, job.id))) == ["item"] * 4 + ["done"]


async def test_heartbeats_while_the_job_is_silent(youtube: HTTPXMock, script: Script) -> None:
    runtime = make_runtime(script, heartbeat=TINY_HEARTBEAT)
    try:
        job = await runtime.jobs.submit(runtime, "script", "a")
        events = await runtime.jobs.events(runtime, job.id)
        assert await anext(events) is None
        assert await anext(events) is None
        script.push("a", ("finish", 1))
        tail = await collect(events)
        assert [e.event for e in tail if e is not None] == ["done"]
    finally:
        await runtime.aclose()


async def test_another_process_reads_the_job_from_the_kv(runtime: Runtime, script: Script) -> None:
    job = await runtime.jobs.submit(runtime, "script", "a")
    elsewhere = JobQueue(poll_s=TINY_HEARTBEAT)  # another process: same KV, its own memory
    seen = await elsewhere.get(runtime, job.id)
    assert seen.id == job.id and seen.status in ("queued", "running")
    with pytest.raises(VidError) as caught:
        await elsewhere.cancel(runtime, job.id)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    stream = await elsewhere.events(runtime, job.id)
    script.push("a", ("progress", (1, 1)), ("finish", {"ok": True}))
    await runtime.jobs.wait(runtime, job.id)
    events = [e for e in await collect(stream) if e is not None]
    assert events[-1].event == "done" and events[-1].data == {"result": {"ok": True}}
    assert (await elsewhere.get(runtime, job.id)).status == "succeeded"
    assert (await elsewhere.cancel(runtime, job.id)).status == "succeeded"


@pytest.mark.parametrize(
    "job_id", ["job_unknownunknown", "nope", "", "job_../../etc/passwd", "job_" + "a" * 10_000]
)
async def test_unknown_jobs_are_not_found(runtime: Runtime, job_id: str) -> None:
    for call in (runtime.jobs.get, runtime.jobs.cancel, runtime.jobs.events):
        with pytest.raises(VidError) as caught:
            await call(runtime, job_id)
        assert caught.value.code is ErrorCode.NOT_FOUND and caught.value.hint
        assert len(caught.value.message) < 200


async def test_shutdown_cancels_unfinished_jobs(youtube: HTTPXMock, script: Script) -> None:
    runtime = make_runtime(script, max_running=1)
    running = await runtime.jobs.submit(runtime, "script", "a")
    waiting = await runtime.jobs.submit(runtime, "script", "b")
    await script.wait_started(1)
    await runtime.aclose()
    for job in (running, waiting):
        stopped = await runtime.jobs.get(runtime, job.id)
        assert stopped.status == "canceled" and "stopped" in stopped.error.message
    with pytest.raises(VidError):
        await runtime.jobs.submit(runtime, "script", "c")


async def test_kv_failures_never_fail_a_job(youtube: HTTPXMock, script: Script) -> None:
    class BrokenKv(MemoryKv):
        async def put(self, key: str, value: str, *, ttl: int | None = None) -> None:
            raise OSError("disk full")

    runtime = make_runtime(script)
    runtime.kv = BrokenKv()
    try:
        job = await runtime.jobs.submit(runtime, "script", "a")
        script.push("a", ("finish", 1))
        assert (await runtime.jobs.wait(runtime, job.id)).status == "succeeded"
    finally:
        await runtime.aclose()


# --- the built-in kinds, on the recorded YouTube ---------------------------------------------


async def test_context_kind(runtime: Runtime) -> None:
    job = await runtime.jobs.submit(runtime, "context", VIDEO, {"mode": "captions", "lang": "en"})
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "succeeded", done.error
    assert done.result["id"] == VIDEO_ID and done.result["transcript"]["segments"]
    events = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=0))
    assert names(events) == ["progress", "item", "progress", "done"]
    assert events[1].data["id"] == VIDEO_ID and events[1].data["outcome"] == "ok" and events[1].data["title"]
    assert await library.get_video(runtime, VIDEO_ID)  # saved like any other read


async def test_context_kind_failure_is_the_video_error(runtime: Runtime) -> None:
    done = await runtime.jobs.wait(runtime, (await runtime.jobs.submit(runtime, "context", BLOCKED)).id)
    assert done.status == "failed" and done.error.code == "blocked" and done.error.hint


async def test_items_kind_reads_each_video(runtime: Runtime) -> None:
    job = await runtime.jobs.submit(runtime, "items", PLAYLIST, {"limit": 3, "concurrency": 2})
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "succeeded", done.error
    assert len(done.result["items"]) == 3 and done.result["failed"] == []
    events = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=0))
    assert names(events).count("item") == 3 and names(events)[-1] == "done"
    assert msgspec.to_builtins(done.progress)["done"] == 3


async def test_bundle_kind_keeps_the_zip_in_the_blob_store(runtime: Runtime) -> None:
    job = await runtime.jobs.submit(
        runtime, "bundle", [VIDEO, OTHER, BLOCKED], {"formats": ["srt", "markdown"]}
    )
    done = await runtime.jobs.wait(runtime, job.id)
    assert done.status == "succeeded", done.error
    result = done.result
    assert set(result) == {"blobKey", "filename", "bytes"} and result["filename"].endswith(".zip")
    blob = await runtime.blobs.get_blob(result["blobKey"])
    assert blob is not None and blob.content_type == "application/zip" and len(blob.data) == result["bytes"]
    archive = zipfile.ZipFile(io.BytesIO(blob.data))
    manifest = json.loads(next(archive.read(n) for n in archive.namelist() if n.endswith("manifest.json")))
    assert len(manifest["videos"]) == 2 and manifest["failures"][0]["code"] == "blocked"
    events = await collect(await runtime.jobs.events(runtime, job.id, last_event_id=0))
    assert [e.data["outcome"] for e in events if e.event == "item"].count("error") == 1


async def test_bundle_kind_with_nothing_readable_fails_with_that_error(runtime: Runtime) -> None:
    done = await runtime.jobs.wait(runtime, (await runtime.jobs.submit(runtime, "bundle", BLOCKED)).id)
    assert done.status == "failed" and done.error.code == "blocked"


async def test_ingest_and_refresh_kinds(runtime: Runtime) -> None:
    collection = await library.create_collection(runtime, "talks", sources=[PLAYLIST])
    ingest = await runtime.jobs.submit(
        runtime, "ingest", {"collectionId": collection.id, "inputs": [VIDEO, BLOCKED]}
    )
    done = await runtime.jobs.wait(runtime, ingest.id)
    assert done.status == "succeeded", done.error
    assert done.result["collection"]["videoCount"] == 1
    assert [a["id"] for a in done.result["summary"]["added"]] == [VIDEO_ID]
    assert done.result["summary"]["failed"][0]["code"] == "blocked"
    items = [
        e
        for e in await collect(await runtime.jobs.events(runtime, ingest.id, last_event_id=0))
        if e.event == "item"
    ]
    assert [(e.data["id"], e.data["outcome"]) for e in items] == [
        (VIDEO_ID, "ok"),
        (f"youtube:{BLOCKED}", "error"),
    ]
    assert items[1].data["error"]["code"] == "blocked"
    refresh = await runtime.jobs.submit(runtime, "refresh", collection.id, {"limit": 2})
    done = await runtime.jobs.wait(runtime, refresh.id)
    assert done.status == "succeeded", done.error
    assert len(done.result["summary"]["added"]) == 2 and done.result["summary"]["remaining"] == 10
    assert done.result["collection"]["checkedAt"]


BAD_SUBMISSIONS: list[tuple[str, Any, Any, ErrorCode]] = [
    ("context", PLAYLIST, None, ErrorCode.BAD_REQUEST),  # a list: use items
    ("context", None, None, ErrorCode.BAD_REQUEST),
    ("context", 42, None, ErrorCode.BAD_REQUEST),
    ("context", ["a"], None, ErrorCode.BAD_REQUEST),
    ("context", "   ", None, ErrorCode.BAD_REQUEST),
    ("context", "GJLlxj_dtq8\x00", None, ErrorCode.BAD_REQUEST),
    ("context", "https://x.example/" + "a" * 10_000, None, ErrorCode.BAD_REQUEST),
    ("context", VIDEO, {"mode": "loud"}, ErrorCode.BAD_REQUEST),
    ("context", VIDEO, {"lang": "english please"}, ErrorCode.BAD_REQUEST),
    ("context", VIDEO, {"refresh": "yes"}, ErrorCode.BAD_REQUEST),
    ("context", VIDEO, {"bogus": 1}, ErrorCode.BAD_REQUEST),
    ("context", VIDEO, ["not", "an", "object"], ErrorCode.BAD_REQUEST),
    ("items", PLAYLIST, {"limit": 0}, ErrorCode.BAD_REQUEST),
    ("items", PLAYLIST, {"limit": 501}, ErrorCode.BAD_REQUEST),
    ("items", PLAYLIST, {"limit": True}, ErrorCode.BAD_REQUEST),
    ("items", PLAYLIST, {"concurrency": 17}, ErrorCode.BAD_REQUEST),
    ("items", PLAYLIST, {"concurrency": "4"}, ErrorCode.BAD_REQUEST),
    ("bundle", [], None, ErrorCode.BAD_REQUEST),
    ("bundle", [VIDEO] * 101, None, ErrorCode.TOO_LARGE),
    ("bundle", [VIDEO, 3], None, ErrorCode.BAD_REQUEST),
    ("bundle", VIDEO, {"formats": ["nope"]}, ErrorCode.BAD_REQUEST),
    ("bundle", VIDEO, {"formats": "srt"}, ErrorCode.BAD_REQUEST),
    ("bundle", VIDEO, {"maxTokens": 0}, ErrorCode.BAD_REQUEST),
    ("bundle", VIDEO, {"comments": True}, ErrorCode.BAD_REQUEST),
    ("ingest", "col_x", None, ErrorCode.BAD_REQUEST),
    ("ingest", {"collectionId": "col_unknown000", "inputs": [VIDEO]}, None, ErrorCode.NOT_FOUND),
    ("ingest", {"collectionId": "col_x", "inputs": [VIDEO], "extra": 1}, None, ErrorCode.BAD_REQUEST),
    ("refresh", "col_unknown000", None, ErrorCode.NOT_FOUND),
    ("refresh", None, None, ErrorCode.BAD_REQUEST),
    ("refresh", "x" * 10_000, None, ErrorCode.BAD_REQUEST),
]


@pytest.mark.parametrize(("kind", "value", "options", "code"), BAD_SUBMISSIONS)
async def test_bad_submissions_are_refused_before_anything_is_queued(
    runtime: Runtime, httpx_mock: HTTPXMock, kind: str, value: Any, options: Any, code: ErrorCode
) -> None:
    with pytest.raises(VidError) as caught:
        await runtime.jobs.submit(runtime, kind, value, options)
    assert caught.value.code is code, caught.value.message
    assert caught.value.hint
    assert runtime.jobs._records == {}
    assert httpx_mock.get_requests() == []


async def test_ingest_checks_inputs_of_a_real_collection(runtime: Runtime) -> None:
    collection = await library.create_collection(runtime, "c")
    for inputs in ([], "GJLlxj_dtq8", [1], [VIDEO] * 5001):
        with pytest.raises(VidError) as caught:
            await runtime.jobs.submit(runtime, "ingest", {"collectionId": collection.id, "inputs": inputs})
        assert caught.value.code is ErrorCode.BAD_REQUEST
    with pytest.raises(VidError):
        await runtime.jobs.submit(
            runtime, "ingest", {"collectionId": collection.id, "inputs": [VIDEO]}, {"limit": 0}
        )


# --- over HTTP ----------------------------------------------------------------------------------


class Api:
    """The real app, called in the test's own event loop (Litestar's test client runs the app in a
    thread of its own, where the test could not wait on the queue)."""

    def __init__(self, app: Litestar, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.fixture
async def api(youtube: HTTPXMock, script: Script) -> AsyncIterator[Api]:
    runtime = make_runtime(script, heartbeat=TINY_HEARTBEAT)
    served = Api(create_app(runtime), runtime)
    yield served
    await served.client.aclose()
    await runtime.aclose()


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "attempts"} and body["error"]["code"] == code, body
    assert "Traceback" not in response.text
    return body


async def test_post_get_and_stream_a_context_job(api: Api) -> None:
    client, runtime = api.client, api.runtime
    response = await client.post(f"{API}/jobs", json={"kind": "context", "input": VIDEO})
    assert response.status_code == 202
    job = response.json()
    assert job["kind"] == "context" and job["status"] == "queued" and set(job) == {
        "id", "kind", "status", "createdAt", "updatedAt"
    }  # fmt: skip
    await runtime.jobs.wait(runtime, job["id"])
    fetched = (await client.get(f"{API}/jobs/{job['id']}")).json()
    assert fetched["status"] == "succeeded" and fetched["result"]["id"] == VIDEO_ID
    stream = await client.get(f"{API}/jobs/{job['id']}/events", headers={"Last-Event-ID": "0"})
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-cache"
    blocks = [parse(b) for b in stream.text.strip().split("\n\n")]
    assert [b["id"] for b in blocks] == ["1", "2", "3", "4"]
    assert [b["event"] for b in blocks] == ["progress", "item", "progress", "done"]
    assert blocks[-1]["data"]["result"]["id"] == VIDEO_ID


async def test_sse_fresh_connection_replays_then_follows_live(api: Api, script: Script) -> None:
    client, runtime = api.client, api.runtime
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    script.push(
        "a",
        ("item", {"id": "v1", "outcome": "ok", "title": "One"}),
        ("progress", (1, 3, "1 of 3")),
        ("item", {"id": "v2", "outcome": "error", "error": {"code": "blocked", "message": "m"}}),
        ("progress", (2, 3, "2 of 3")),
    )
    follow = await runtime.jobs.events(runtime, job["id"], last_event_id=0)
    for _ in range(4):
        await anext(follow)  # the job has reported all four
    async with SseClient(api.app, f"{API}/jobs/{job['id']}/events") as sse:
        assert sse.status == 200 and sse.response_headers["content-type"].startswith("text/event-stream")
        replay = [parse(await sse.block()) for _ in range(3)]
        assert [(b["id"], b["event"]) for b in replay] == [("1", "item"), ("3", "item"), ("4", "progress")]
        assert replay[2]["data"] == {"done": 2, "total": 3, "message": "2 of 3"}
        script.push("a", ("progress", (3, 3)))
        live = parse(await sse.block())
        while "comment" in live:  # heartbeats may come first
            live = parse(await sse.block())
        assert (live["id"], live["event"], live["data"]) == ("5", "progress", {"done": 3, "total": 3})
        script.push("a", ("finish", {"n": 3}))
        rest = [parse(b) for b in await sse.rest() if not b.startswith(":")]
        assert [(b["id"], b["event"]) for b in rest] == [("6", "done")]
        assert rest[0]["data"] == {"result": {"n": 3}}
    await follow.aclose()


async def test_sse_last_event_id_over_http(api: Api, script: Script) -> None:
    client, runtime = api.client, api.runtime
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    script.push("a", *[("item", {"id": f"v{i}", "outcome": "ok"}) for i in range(3)], ("finish", 1))
    await runtime.jobs.wait(runtime, job["id"])
    response = await client.get(f"{API}/jobs/{job['id']}/events", headers={"Last-Event-ID": "2"})
    assert [parse(b)["id"] for b in response.text.strip().split("\n\n")] == ["3", "4"]
    response = await client.get(f"{API}/jobs/{job['id']}/events", headers={"Last-Event-ID": "4"})
    assert response.status_code == 200 and response.text == ""


async def test_sse_heartbeat_comments(api: Api, script: Script) -> None:
    client = api.client
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    async with SseClient(api.app, f"{API}/jobs/{job['id']}/events") as sse:
        assert await sse.block() == ": heartbeat"
        assert await sse.block() == ": heartbeat"
        script.push("a", ("finish", 1))
        rest = await sse.rest()
        assert parse(rest[-1])["event"] == "done"


async def test_delete_cancels_and_the_stream_ends_with_canceled(api: Api, script: Script) -> None:
    client = api.client
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    await script.wait_started(1)
    async with SseClient(api.app, f"{API}/jobs/{job['id']}/events") as sse:
        response = await client.delete(f"{API}/jobs/{job['id']}")
        assert response.status_code == 202
        canceled = response.json()
        assert canceled["status"] == "canceled" and canceled["error"]["code"] == "canceled"
        events = [parse(b) for b in await sse.rest() if not b.startswith(":")]
        assert events[-1]["event"] == "error" and events[-1]["data"] == canceled["error"]
    assert (await client.get(f"{API}/jobs/{job['id']}")).json() == canceled
    again = await client.delete(f"{API}/jobs/{job['id']}")
    assert again.status_code == 202 and again.json() == canceled


async def test_a_client_leaving_the_stream_does_not_stop_the_job(api: Api, script: Script) -> None:
    client, runtime = api.client, api.runtime
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    async with SseClient(api.app, f"{API}/jobs/{job['id']}/events") as sse:
        assert await sse.block() == ": heartbeat"
    script.push("a", ("finish", "kept"))
    assert (await runtime.jobs.wait(runtime, job["id"])).result == "kept"


@pytest.mark.parametrize(
    "path",
    [
        "job_doesnotexist00",
        "nope",
        "job_..%2F..%2Fetc%2Fpasswd",
        "..%2F..%2Fetc%2Fpasswd",
        "job_" + "a" * 10_000,
    ],
)
async def test_unknown_job_routes_are_404_with_a_hint(api: Api, path: str) -> None:
    client = api.client
    for method, suffix in (("GET", ""), ("GET", "/events"), ("DELETE", "")):
        response = await client.request(method, f"{API}/jobs/{path}{suffix}")
        body = assert_error(response, 404, "not-found")
        assert body["error"].get("hint")
        assert "root:" not in response.text


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "9" * 20])
async def test_malformed_last_event_id_is_bad_request(api: Api, script: Script, value: str) -> None:
    client = api.client
    job = (await client.post(f"{API}/jobs", json={"kind": "script", "input": "a"})).json()
    response = await client.get(f"{API}/jobs/{job['id']}/events", headers={"Last-Event-ID": value})
    assert_error(response, 400, "bad-request")


BAD_BODIES: list[tuple[Any, str]] = [
    (None, "missing"),
    (b"not json", "not JSON"),
    (b"[]", "an array"),
    ({"input": VIDEO}, "no kind"),
    ({"kind": "context"}, "no input"),
    ({"kind": 1, "input": VIDEO}, "kind not a string"),
    ({"kind": "context", "input": VIDEO, "extra": True}, "unknown field"),
    ({"kind": "context", "input": VIDEO, "options": []}, "options not an object"),
    ({"kind": "context", "input": VIDEO, "options": {"nope": 1}}, "unknown option"),
    ({"kind": "nope", "input": VIDEO}, "unknown kind"),
    ({"kind": "context", "input": PLAYLIST}, "a list for context"),
    ({"kind": "bundle", "input": [VIDEO] * 101}, "101 inputs"),
]


@pytest.mark.parametrize(("body", "why"), BAD_BODIES, ids=[why for _, why in BAD_BODIES])
async def test_bad_job_bodies(api: Api, body: Any, why: str) -> None:
    client, runtime = api.client, api.runtime
    if body is None:
        response = await client.post(f"{API}/jobs")
    elif isinstance(body, bytes):
        response = await client.post(
            f"{API}/jobs", content=body, headers={"Content-Type": "application/json"}
        )
    else:
        response = await client.post(f"{API}/jobs", json=body)
    expected = ("too-large", 413) if why == "101 inputs" else ("bad-request", 400)
    error = assert_error(response, expected[1], expected[0])["error"]
    assert error.get("hint"), why
    assert runtime.jobs._records == {}
    if why == "unknown kind":
        assert "context" in error["hint"] and "ingest" in error["hint"]


async def test_oversized_job_body_is_413(youtube: HTTPXMock, script: Script) -> None:
    runtime = make_runtime(script, VID2CONTEXT_MAX_BODY_KB="1")
    served = Api(create_app(runtime), runtime)
    response = await served.client.post(f"{API}/jobs", json={"kind": "bundle", "input": [VIDEO] * 100})
    assert_error(response, 413, "too-large")
    await served.client.aclose()
    await runtime.aclose()
