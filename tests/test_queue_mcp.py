"""MCP long runs on the Worker's queue: real Queues and D1 from Miniflare, isolates that die.

``worker/entry.py`` runs under CPython with the ``workers`` stand-in, as in ``test_queue_jobs``:
a ``tools/call`` on ``/mcp`` that answers ``processing`` (``VID2CONTEXT_MCP_WAIT_S=0``) becomes a
row of ``mcp_runs`` and a message on ``JOBS``; the consumer (``queue_bridge.Bridge``) is another
isolate, which runs the tool again and writes its reply; a third isolate reads it with
``get_job``. Killing a bridge is an isolate dying after the work and before the ack.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from vid2context.mcp.queued import run_of

from .miniflare_harness import MiniflareHarness, apply_migrations
from .queue_bridge import Bridge
from .test_mcp_http import MCP_HEADERS
from .test_queue_jobs import DyingBridge, QueueEnv, _entrypoint, _served, replay  # noqa: F401 (a fixture)
from .test_worker_entry import Isolate, workers
from .youtube_replay import PLAYLIST_ID, TOO_MANY_REQUESTS_ID, ReplayServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VIDEO = "GJLlxj_dtq8"
TOKENS = ("t0k3n-" + "a" * 12, "t0k3n-" + "b" * 12)
BOUND_S = 120.0
"""Only a bound on how long a broken test hangs; nothing is asserted about time."""


@pytest.fixture
async def env(miniflare: MiniflareHarness, replay: ReplayServer) -> AsyncIterator[QueueEnv]:  # noqa: F811
    miniflare.reset()
    miniflare.set_consumer(None)  # nothing consumes until a test says so
    bindings = miniflare.new_env(queue=True)
    await apply_migrations(bindings.DB)
    workers.pending.clear()
    yield QueueEnv(
        bindings,
        VID2CONTEXT_PUBLIC="1",
        VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin,
        VID2CONTEXT_RATE_LIMIT="0",
        VID2CONTEXT_MCP_RATE_LIMIT="0",
        VID2CONTEXT_MCP_TOKENS=",".join(TOKENS),
        VID2CONTEXT_MCP_WAIT_S="0",
    )
    miniflare.set_consumer(None)
    await bindings.aclose()


async def _call(
    isolate: Isolate, name: str, arguments: dict[str, Any], token: str = TOKENS[0]
) -> dict[str, Any]:
    """``tools/call`` on the isolate's ``/mcp``: the result (``structuredContent`` when there is one)."""
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = {**MCP_HEADERS, "mcp-protocol-version": "2025-11-25", "authorization": f"Bearer {token}"}
    response = await isolate.fetch("/mcp", method="POST", headers=headers, body=json.dumps(message).encode())
    assert response.status == 200, response.text()
    result = json.loads(response.body)["result"]
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    blocks = [block["text"] for block in result["content"]]  # JSON, between fences when it holds video text
    return {
        "isError": bool(result.get("isError")),
        **json.loads(blocks[1] if len(blocks) == 3 else blocks[0]),
    }


async def _finished(isolate: Isolate, job_id: str) -> dict[str, Any]:
    async with asyncio.timeout(BOUND_S):
        while (answer := await _call(isolate, "get_job", {"job_id": job_id})).get("status") == "processing":
            await asyncio.sleep(0.2)
    return answer


async def _rows(env: QueueEnv) -> list[dict[str, Any]]:
    return (await env.DB.prepare("SELECT * FROM mcp_runs").all()).to_py()["results"]


async def _close(bridge: Bridge, *isolates: Isolate) -> None:
    for isolate in isolates:
        await isolate.aclose()
    await bridge.kill()


def _deliveries(bridges: list[Bridge], job_id: str) -> list[tuple[str, int, Any]]:
    return [
        (batch.queue, message.attempts, message.decision)
        for bridge in bridges
        for batch in bridge.batches
        for message in batch.messages
        if run_of(message.body) == job_id
    ]


async def test_a_long_call_is_run_by_the_consumer_and_read_from_any_isolate(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    first, other = Isolate(env), Isolate(env)
    # The same call on two isolates at once: one run (the second insert finds the first going).
    started, twin = await asyncio.gather(
        _call(first, "get_outline", {"url": VIDEO}), _call(other, "get_outline", {"url": VIDEO})
    )
    assert started["status"] == "processing" and started["stage"] == "queued", started
    job_id = started["job_id"]
    assert twin["job_id"] == job_id
    (row,) = await _rows(env)
    assert (row["id"], row["tool"], row["status"]) == (job_id, "get_outline", "queued")
    assert json.loads(row["arguments"]) == {"url": VIDEO}
    assert len(row["caller"]) == 32 and all(token not in json.dumps(row) for token in TOKENS)
    assert (await _call(other, "get_outline", {"url": VIDEO}))["job_id"] == job_id  # attached again

    consumer, bridge = await _served(miniflare, env)
    reader = Isolate(env)
    done = await _finished(reader, job_id)
    assert done["title"].startswith("Surface Go Review"), done
    assert done["chapters"][0]["url"].endswith("&t=39s")
    assert _deliveries([bridge], job_id) == [
        ("vid2context-jobs", 1, {"id": bridge.batches[0].messages[0].id, "ack": True})
    ]

    refused = await _call(reader, "get_job", {"job_id": job_id}, token=TOKENS[1])
    assert refused["isError"] and refused["error"] == "bad-request", refused  # someone else's run
    again = await _call(reader, "get_outline", {"url": VIDEO})  # the finished run answers again
    assert again == done
    assert [r["status"] for r in await _rows(env)] == ["done"]
    await _close(bridge, first, other, consumer, reader)


async def test_a_call_the_consumer_finishes_within_the_wait_answers_with_its_reply(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    env.VID2CONTEXT_MCP_WAIT_S = "120"  # the call polls its row until the consumer has written the reply
    isolate = Isolate(env)
    consumer, bridge = await _served(miniflare, env)
    answer = await _call(isolate, "get_metadata", {"url": VIDEO})
    assert answer.get("title", "").startswith("Surface Go Review"), answer
    assert [r["status"] for r in await _rows(env)] == ["done"]  # it did go through the queue
    assert len(_deliveries([bridge], (await _rows(env))[0]["id"])) == 1
    await _close(bridge, consumer, isolate)


async def test_a_collection_made_by_a_queued_call_is_made_once(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    """The consumer makes the whole call again: it follows the sources of the collection the call
    made, and makes no second one (``runs.replaying``)."""
    isolate = Isolate(env)
    playlist = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
    started = await _call(isolate, "create_collection", {"name": "Followed", "sources": [playlist]})
    assert started["status"] == "processing", started
    consumer, bridge = await _served(miniflare, env)
    done = await _finished(isolate, started["job_id"])
    assert not done.get("isError"), done
    assert done["collection"]["name"] == "Followed" and done["collection"]["videoCount"] == 12, done
    assert len(done["summary"]["added"]) == 12 and done["summary"]["failed"] == []
    listed = json.loads((await isolate.fetch("/api/v1/collections")).body)
    assert [c["name"] for c in listed["collections"]] == ["Followed"]
    await _close(bridge, isolate, consumer)


async def test_a_consumer_that_dies_after_the_work_leaves_the_reply_to_read(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    first = Isolate(env)
    dying = await DyingBridge(_entrypoint(Isolate(env)), die_at=1).start()
    miniflare.set_consumer(dying.url)
    started = await _call(first, "get_metadata", {"url": VIDEO})
    assert started["status"] == "processing", started
    async with asyncio.timeout(BOUND_S):
        await dying.dead.wait()
    await dying.kill()
    rescuer = await Bridge(_entrypoint(Isolate(env))).start()
    miniflare.set_consumer(rescuer.url)
    async with asyncio.timeout(BOUND_S):  # the unacked message comes again, to the new isolate
        while not [d for d in _deliveries([rescuer], started["job_id"]) if d[2] is not None]:
            await asyncio.sleep(0.2)  # (answered: its decision is set once queue() has run)
    ((queue, attempts, decision),) = _deliveries([rescuer], started["job_id"])
    assert attempts == 2 and decision["ack"] is True  # the run had ended: acked, not run again
    reader = Isolate(env)
    done = await _finished(reader, started["job_id"])
    assert not done.get("isError") and done.get("title", "").startswith("Surface Go Review"), done
    await _close(rescuer, first, reader)


async def test_a_call_that_keeps_failing_is_retried_then_ends_with_its_real_error(
    miniflare: MiniflareHarness, env: QueueEnv
) -> None:
    env.VID2CONTEXT_JOB_RETRY_S = "0"  # retry at once: the queue's own delay is not under test
    isolate = Isolate(env)
    consumer, bridge = await _served(miniflare, env)
    started = await _call(isolate, "get_metadata", {"url": TOO_MANY_REQUESTS_ID})
    assert started["status"] == "processing", started
    done = await _finished(isolate, started["job_id"])
    assert done["isError"] and done["error"] == "rate-limited", done  # the cause, not "internal"
    tries = _deliveries([bridge], started["job_id"])
    main = [(attempts, decision["ack"]) for queue, attempts, decision in tries if queue == "vid2context-jobs"]
    assert main == [(1, False), (2, False), (3, False), (4, False)]  # max_retries 3, then the dead letters
    assert [(q, d["ack"]) for q, _, d in tries if q == "vid2context-jobs-dlq"] == [
        ("vid2context-jobs-dlq", True)
    ]
    (row,) = await _rows(env)
    assert row["status"] == "failed"
    restarted = await _call(isolate, "get_metadata", {"url": TOO_MANY_REQUESTS_ID})
    assert restarted["job_id"] != started["job_id"]  # a failed run is not reused: the call starts afresh
    await _close(bridge, isolate, consumer)


@pytest.mark.parametrize(
    "body",
    ["", "null", "{}", '{"run": 5}', '{"run": "job_x"}', '{"run": "job_abcdefgh1", "unit": "plan"}',
     '{"job": "job_abcdefgh1", "unit": "plan"}', b"\xff\xfe"],
)  # fmt: skip
def test_a_body_that_is_not_a_run_is_not_claimed(body: str | bytes) -> None:
    assert run_of(body) is None


def test_a_run_is_read_from_text_or_objects() -> None:
    assert run_of('{"run": "job_abcdefgh1"}') == "job_abcdefgh1"
    assert run_of({"run": "job_abcdefgh1"}) == "job_abcdefgh1"
