"""Webhooks on the Worker's queue: each delivery attempt a real Cloudflare Queues message.

The Worker's entry runs under CPython with Miniflare's D1, KV, R2 and ``JOBS`` queue
(``test_queue_jobs.py`` has the setup): a refresh runs as queued units, its end emits
``job.succeeded`` and ``collection.refreshed``, and each goes out as a queue message that the
consumer turns into one attempt; a failed attempt sends the next as a new message (its delay is
the retry unit, 0 here, so nothing waits on a clock).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from .miniflare_harness import MiniflareHarness
from .test_queue_jobs import WAIT_S, QueueEnv, _json, _served, _until_final, env, replay  # noqa: F401
from .webhook_receiver import Receiver
from .youtube_replay import PLAYLIST_ID

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def hook_env(request: pytest.FixtureRequest) -> QueueEnv:
    """The queue's Worker outside public mode (the receiver is on 127.0.0.1), retrying at once."""
    queued: QueueEnv = request.getfixturevalue("env")
    queued.VID2CONTEXT_PUBLIC = "0"  # type: ignore[attr-defined]
    queued.VID2CONTEXT_WEBHOOK_RETRY_S = "0"  # type: ignore[attr-defined]
    return queued


async def test_a_queued_refresh_is_announced_and_failed_attempts_are_new_messages(
    miniflare: MiniflareHarness, hook_env: QueueEnv
) -> None:
    isolate, bridge = await _served(miniflare, hook_env)
    async with Receiver(statuses=(500, 500, 200)) as receiver:
        hook = await _json(
            isolate,
            "/api/v1/webhooks",
            {"url": receiver.url, "events": ["job.succeeded", "collection.refreshed"]},
        )
        receiver.secret = hook["secret"]
        playlist = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
        collection = await _json(isolate, "/api/v1/collections", {"name": "talks", "sources": [playlist]})
        job = await _json(isolate, f"/api/v1/collections/{collection['id']}/refresh", {"limit": 2})
        assert (await _until_final(isolate, job["id"]))["status"] == "succeeded"

        got = await receiver.wait_for(4, timeout=WAIT_S)  # two deliveries, two failed attempts among them
        assert all(d.verified for d in got)
        events = {json.loads(d.body)["event"] for d in got}
        assert events == {"job.succeeded", "collection.refreshed"}
        assert len({d.headers["x-vid2context-delivery"] for d in got}) == 2
        refreshed = next(
            json.loads(d.body)["data"] for d in got if json.loads(d.body)["event"] == "collection.refreshed"
        )
        assert refreshed["jobId"] == job["id"] and refreshed["addedCount"] == 2

        async with asyncio.timeout(WAIT_S):
            while True:
                (state,) = (await _json(isolate, "/api/v1/webhooks"))["webhooks"]
                if state["failures"] == 0 and state.get("lastStatus") == 200:
                    break
                await asyncio.sleep(0.1)
        attempts = [
            json.loads(m.body)["attempt"]
            for b in bridge.batches
            for m in b.messages
            if isinstance(m.body, str) and "webhookDelivery" in m.body
        ]
        assert sorted(attempts) == [1, 1, 2, 3] or sorted(attempts) == [1, 1, 2, 2]
        delivered = [
            m
            for b in bridge.batches
            for m in b.messages
            if isinstance(m.body, str) and "webhookDelivery" in m.body
        ]
        assert all(m.decision == {"id": m.id, "ack": True} for m in delivered)  # retries are new messages
    await isolate.aclose()
    await bridge.kill()
