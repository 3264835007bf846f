"""Durable jobs and watch lists on the Worker: real Queues and Cron events from Miniflare.

The Worker's entry (``worker/entry.py``) runs under CPython with the ``workers`` stand-in, real
D1, KV, R2 and Queues from Miniflare (``JOBS``, its consumer with retries and a dead-letter
queue), and YouTube replayed. Miniflare's consumer forwards each batch to an isolate's
``queue()`` through ``queue_bridge.Bridge``; killing a bridge is an isolate dying, and a fresh
entry module is another isolate that must finish the work from the queue and D1 alone.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from vid2context.jobs_queued import backoff, message_of

from .cloudflare_bindings import CloudflareEnv
from .miniflare_harness import MiniflareHarness, apply_migrations
from .queue_bridge import Bridge
from .test_worker_entry import Isolate, WorkerEnv, workers
from .youtube_replay import LONG_PLAYLIST_ID, TOO_MANY_REQUESTS_ID, ReplayServer, list_page

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT_S = 120.0
"""Only a bound on how long a broken test hangs; nothing is asserted about time."""


class QueueEnv(WorkerEnv):
    def __init__(self, bindings: CloudflareEnv, **variables: str) -> None:
        super().__init__(bindings, **variables)
        self.JOBS = bindings.JOBS


class DyingBridge(Bridge):
    """A consumer whose isolate dies at its ``die_at``-th batch: the work of that batch is done,
    but no answer (no ack) reaches the queue, and nothing after it is served."""

    def __init__(self, entrypoint: Any, die_at: int) -> None:
        super().__init__(entrypoint)
        self.die_at = die_at
        self.dead = asyncio.Event()

    async def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        answer = await super()._answer(path, body)
        if path == "/queue" and len(self.batches) >= self.die_at:
            self.dead.set()
            await asyncio.sleep(3600)  # killed here, before the answer is written
        return answer


@pytest.fixture(scope="module")
def replay() -> AsyncIterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.fixture
async def env(miniflare: MiniflareHarness, replay: ReplayServer) -> AsyncIterator[QueueEnv]:
    miniflare.reset()
    bindings = miniflare.new_env(queue=True)
    await apply_migrations(bindings.DB)
    workers.pending.clear()
    yield QueueEnv(
        bindings, VID2CONTEXT_PUBLIC="1", VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin, VID2CONTEXT_RATE_LIMIT="0"
    )
    miniflare.set_consumer(None)
    await bindings.aclose()


def _entrypoint(isolate: Isolate) -> Any:
    return isolate.module.Default(ctx=object(), env=isolate.env)


async def _served(miniflare: MiniflareHarness, env: QueueEnv) -> tuple[Isolate, Bridge]:
    """A fresh isolate, and the queue's batches and cron events going to it."""
    isolate = Isolate(env)
    bridge = await Bridge(_entrypoint(isolate)).start()
    miniflare.set_consumer(bridge.url)
    return isolate, bridge


async def _json(isolate: Isolate, path: str, body: Any = None, method: str = "GET") -> Any:
    data = None if body is None else json.dumps(body).encode()
    response = await isolate.fetch(
        path,
        method=method if body is None else "POST",
        headers={"content-type": "application/json"},
        body=data,
    )
    assert response.status < 300, response.text()
    return json.loads(response.body)


async def _until_final(isolate: Isolate, job_id: str) -> dict[str, Any]:
    async with asyncio.timeout(WAIT_S):
        while True:
            job = await _json(isolate, f"/api/v1/jobs/{job_id}")
            if job["status"] in ("succeeded", "failed", "canceled"):
                return job
            await asyncio.sleep(0.2)


def _listed(count: int) -> list[str]:
    import re

    page = list_page("playlist_long.html.gz").decode("utf-8", errors="replace")
    ids = list(dict.fromkeys(re.findall(r'"videoId":"([A-Za-z0-9_-]{11})"', page)))
    assert len(ids) >= count, LONG_PLAYLIST_ID
    return ids[:count]


async def test_an_ingest_of_20_videos_survives_an_isolate_dying_halfway(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    first = Isolate(env)
    dying = await DyingBridge(_entrypoint(first), die_at=3).start()  # plan, a batch of units, then death
    miniflare.set_consumer(dying.url)
    collection = await _json(first, "/api/v1/collections", {"name": "twenty"})
    videos = _listed(20)
    inputs = [f"https://www.youtube.com/watch?v={vid}" for vid in videos]
    job = await _json(
        first,
        "/api/v1/jobs",
        {"kind": "ingest", "input": {"collectionId": collection["id"], "inputs": inputs}},
    )
    async with asyncio.timeout(WAIT_S):
        await dying.dead.wait()
    await dying.kill()
    halfway = await _json(first, f"/api/v1/jobs/{job['id']}")
    assert halfway["status"] == "running"
    assert 0 < halfway["progress"]["done"] < 20, halfway  # some videos read, not all

    second = Isolate(env)  # a fresh isolate: nothing of the first one's memory
    rescuer = await Bridge(_entrypoint(second)).start()
    miniflare.set_consumer(rescuer.url)
    done = await _until_final(second, job["id"])
    assert done["status"] == "succeeded", done
    summary = done["result"]["summary"]
    assert sorted(v["id"] for v in summary["added"]) == sorted(f"youtube:{vid}" for vid in videos), summary[
        "failed"
    ]
    assert summary["failed"] == [] and summary["remaining"] == 0
    assert done["result"]["collection"]["videoCount"] == 20
    assert rescuer.batches, "the second isolate finished the work"
    # The batch the first isolate did but never acked came again: those units were skipped, so
    # each video has exactly one item event in the replay, from whichever isolate.
    stream = await second.fetch(f"/api/v1/jobs/{job['id']}/events")
    items = [line for line in stream.text().splitlines() if line.startswith("event: item")]
    assert len(items) == 20
    for isolate in (first, second):
        await isolate.aclose()
    await rescuer.kill()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _consumer_warnings() -> Iterator[list[str]]:
    """The queue consumer's warnings, read from its own logger rather than through the root one
    (``caplog``). Clean clones once caught none: the MCP list build, run in-process by
    ``test_mcp_lean``, left ``logging.disable(WARNING)`` behind on the worker both files shared.
    The build restores it now and ``conftest`` fails any test that leaves it (nothing is forced)."""
    logger = logging.getLogger("vid2context.jobs")
    handler = _Lines()
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)


async def test_messages_that_are_not_ours_are_acked_once_and_logged(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    with _consumer_warnings() as warnings:
        await _messages_that_are_not_ours(miniflare, env, warnings)


async def _messages_that_are_not_ours(
    miniflare: MiniflareHarness, env: QueueEnv, warnings: list[str]
) -> None:
    isolate, bridge = await _served(miniflare, env)
    bad = ["not json {", json.dumps({"job": "job_neverexisted123", "unit": "plan"}), json.dumps([1, 2]),
           json.dumps({"job": "job_neverexisted123", "unit": "u:../../etc"})]  # fmt: skip
    for body in bad:
        await env.JOBS.send(body)
    # A real job after them: once it is done, the queue has delivered what came before.
    job = await _json(isolate, "/api/v1/jobs", {"kind": "context", "input": "GJLlxj_dtq8"})
    assert (await _until_final(isolate, job["id"]))["status"] == "succeeded"
    async with asyncio.timeout(WAIT_S):
        while sum(1 for b in bridge.batches for m in b.messages if m.body in bad) < len(bad):
            await asyncio.sleep(0.2)
    delivered = [m for b in bridge.batches for m in b.messages if m.body in bad]
    assert sorted(m.body for m in delivered) == sorted(bad)  # each once: acked, not retried
    assert all(m.decision == {"id": m.id, "ack": True} and m.attempts == 1 for m in delivered)
    logged = "\n".join(warnings)
    assert "not a job unit" in logged and "unknown job" in logged, logged
    await isolate.aclose()
    await bridge.kill()


async def test_a_due_watch_list_refreshes_once_when_two_cron_events_overlap(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    isolate, bridge = await _served(miniflare, env)
    playlist = f"https://www.youtube.com/playlist?list={LONG_PLAYLIST_ID}"
    collection = await _json(
        isolate,
        "/api/v1/collections",
        {"name": "watched", "sources": [playlist], "watch": {"every": "daily"}},
    )
    # Due: its last check (its creation) was long ago. Daily, so the refresh (minutes on a loaded
    # machine) cannot make it due again before the last cron event below.
    await (
        env.DB.prepare("UPDATE collections SET created_at = '2026-01-01T00:00:00Z' WHERE id = ?")
        .bind(collection["id"])
        .run()
    )
    outcomes = await miniflare.scheduled("*/5 * * * *", count=2)
    assert outcomes == ["ok", "ok"]
    assert bridge.scheduled_runs == 2
    rows = (await env.DB.prepare("SELECT id, status FROM queued_jobs WHERE kind = 'refresh'").all()).to_py()
    assert len(rows["results"]) == 1, rows  # one refresh for the due list, not two
    done = await _until_final(isolate, rows["results"][0]["id"])
    assert done["status"] == "succeeded", done
    added = done["result"]["summary"]["added"]
    assert added and all(v["id"].startswith("youtube:") for v in added)  # what the refresh added
    view = await _json(isolate, f"/api/v1/collections/{collection['id']}")
    assert view["checkedAt"] and view["watch"]["state"]["nextDueAt"] > view["checkedAt"][:19]
    # Not due any more: the next cron event queues nothing.
    assert await miniflare.scheduled("*/5 * * * *", count=1) == ["ok"]
    rows = (await env.DB.prepare("SELECT id FROM queued_jobs WHERE kind = 'refresh'").all()).to_py()
    assert len(rows["results"]) == 1
    await isolate.aclose()
    await bridge.kill()


async def test_a_video_that_keeps_failing_is_retried_then_dead_lettered_and_recorded(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    env.VID2CONTEXT_JOB_RETRY_S = "0"  # retry at once: the queue's own delay is not under test
    isolate, bridge = await _served(miniflare, env)
    collection = await _json(isolate, "/api/v1/collections", {"name": "rate-limited"})
    inputs = [
        "https://www.youtube.com/watch?v=GJLlxj_dtq8",
        f"https://www.youtube.com/watch?v={TOO_MANY_REQUESTS_ID}",
    ]
    job = await _json(
        isolate,
        "/api/v1/jobs",
        {"kind": "ingest", "input": {"collectionId": collection["id"], "inputs": inputs}},
    )
    done = await _until_final(isolate, job["id"])
    assert done["status"] == "succeeded", done
    summary = done["result"]["summary"]
    assert [v["id"] for v in summary["added"]] == ["youtube:GJLlxj_dtq8"]
    assert [(f["input"], f["code"]) for f in summary["failed"]] == [
        (inputs[1], "rate-limited")
    ]  # the real cause
    tries = [
        (b.queue, m.attempts, m.decision)
        for b in bridge.batches
        for m in b.messages
        if json.loads(m.body).get("unit") == "u:0001"
    ]
    main = [t for t in tries if t[0] == "vid2context-jobs"]
    assert [attempts for _, attempts, _ in main] == [1, 2, 3, 4]  # max_retries 3, then the dead-letter queue
    assert all(decision["ack"] is False for _, _, decision in main)
    assert [(q, d["ack"]) for q, _, d in tries if q == "vid2context-jobs-dlq"] == [
        ("vid2context-jobs-dlq", True)
    ]
    await isolate.aclose()
    await bridge.kill()


async def test_a_canceled_job_stays_canceled_and_its_messages_are_dropped(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    isolate = Isolate(env)
    miniflare.set_consumer(None)  # nothing consumes yet: the job is still queued
    job = await _json(isolate, "/api/v1/jobs", {"kind": "context", "input": "GJLlxj_dtq8"})
    canceled = await isolate.fetch(f"/api/v1/jobs/{job['id']}", method="DELETE")
    assert canceled.status == 202 and json.loads(canceled.body)["status"] == "canceled"
    bridge = await Bridge(_entrypoint(isolate)).start()
    miniflare.set_consumer(bridge.url)

    def ours() -> list[Any]:  # this job's messages (a batch can also hold a message still being decided)
        return [m for b in bridge.batches for m in b.messages if job["id"] in json.dumps(m.body)]

    async with asyncio.timeout(WAIT_S):
        while not ours() or any(m.decision is None for m in ours()):
            await asyncio.sleep(0.2)
    assert all(m.decision["ack"] for m in ours())
    other = Isolate(env)  # another isolate reads the same state, and replays its last event
    found = await _json(other, f"/api/v1/jobs/{job['id']}")
    assert found["status"] == "canceled" and found["error"]["code"] == "canceled"
    stream = (await other.fetch(f"/api/v1/jobs/{job['id']}/events")).text()
    assert "event: error" in stream and '"canceled"' in stream
    assert (await other.fetch("/api/v1/jobs/job_neverexisted123")).status == 404
    for one in (isolate, other):
        await one.aclose()
    await bridge.kill()


@pytest.mark.parametrize(
    "body",
    ["", "null", "[]", "{}", '{"job": 5, "unit": "plan"}', '{"job": "job_x", "unit": "plan"}',
     '{"job": "job_abcdefgh1", "unit": "u:1e9"}', '{"job": "job_abcdefgh1", "unit": "u:' + "9" * 40 + '"}',
     '{"job": "job_abcdefgh1", "unit": "drop table"}', b"\xff\xfe"],
)  # fmt: skip
def test_a_body_that_is_not_a_unit_of_ours_is_recognised(body: str | bytes) -> None:
    assert message_of(body) is None


def test_units_are_read_from_text_or_objects() -> None:
    assert message_of('{"job": "job_abcdefgh1", "unit": "u:0007"}') == ("job_abcdefgh1", "u:0007")
    assert message_of({"job": "job_abcdefgh1", "unit": "finish"}) == ("job_abcdefgh1", "finish")


def test_backoff_doubles_honours_retry_after_and_stops_at_its_cap() -> None:
    assert [backoff(n, 10) for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert backoff(30, 10) == 900 and backoff(1, 10, retry_after=120) == 120
    assert backoff(1, 10, retry_after=10_000) == 900  # a Retry-After beyond the cap waits the cap
    assert backoff(5, 0, retry_after=120) == 0 and backoff(3, -5) == 0


async def test_the_cron_event_forgets_jobs_that_ended_a_day_ago(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    isolate, bridge = await _served(miniflare, env)
    old = await _json(isolate, "/api/v1/jobs", {"kind": "context", "input": "GJLlxj_dtq8"})
    assert (await _until_final(isolate, old["id"]))["status"] == "succeeded"
    fresh = await _json(isolate, "/api/v1/jobs", {"kind": "context", "input": "GJLlxj_dtq8"})
    assert (await _until_final(isolate, fresh["id"]))["status"] == "succeeded"
    await (
        env.DB.prepare("UPDATE queued_jobs SET updated_at = '2026-01-01T00:00:00.000Z' WHERE id = ?")
        .bind(old["id"])
        .run()
    )
    assert await miniflare.scheduled("*/15 * * * *") == ["ok"]
    assert (await isolate.fetch(f"/api/v1/jobs/{old['id']}")).status == 404
    assert (await isolate.fetch(f"/api/v1/jobs/{fresh['id']}")).status == 200
    left = (
        await env.DB.prepare("SELECT COUNT(*) AS n FROM job_events WHERE job_id = ?").bind(old["id"]).first()
    ).n
    assert left == 0
    await isolate.aclose()
    await bridge.kill()
