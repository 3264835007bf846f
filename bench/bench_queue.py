"""Job queue throughput on Miniflare's real Queues: messages/s and units (videos) per second end to end.

Three figures, from the Miniflare harness (``tests/miniflare``: real Queues with the consumer
forwarding each batch over loopback to Python, ``tests/queue_bridge.py``):

- ``messages``: the floor of the transport. ``BENCH_QUEUE_MESSAGES`` (default 500) bodies sent
  with ``sendBatch``, each acked by a consumer that does nothing else; messages/s from the first
  send to the last ack.
- ``ingest_queued``: an ``ingest`` job of ``BENCH_QUEUE_VIDEOS`` (default 40) videos through the
  Worker's entry (``worker/entry.py`` with the ``workers`` stand-in) with the ``JOBS`` queue:
  planned, one message per video, finished; YouTube replayed from the recorded answers. Units/s
  (videos read and saved) and messages/s, from the POST to ``succeeded``.
- ``ingest_in_isolate``: the same job on a Worker without the queue (the in-process queue on
  ``waitUntil``), the reference the ratio is read against.

Every binding call crosses HTTP to 127.0.0.1 and the consumer is in this process, so these are
figures for the code's overhead, not for Cloudflare's network; CPU time of this process is given
beside wall time. The queued ingest's wall time is mostly the queue's own pacing: Miniflare hands
the consumer one batch (at most 5 messages here, as wrangler.toml's ``max_batch_size``) at a time,
so its units/s follow the batch size; the CPU ratio is the overhead of the ledger's D1 writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.miniflare_harness import apply_migrations, start_harness  # noqa: E402
from tests.queue_bridge import Bridge  # noqa: E402
from tests.test_queue_jobs import QueueEnv, _listed  # noqa: E402
from tests.test_worker_entry import Isolate, WorkerEnv  # noqa: E402
from tests.youtube_replay import ReplayServer  # noqa: E402


class _Acker:
    """A consumer that acks everything and counts it."""

    def __init__(self, expected: int) -> None:
        self.seen = 0
        self.done = asyncio.Event()
        self.expected = expected
        self.env = self.ctx = None

    async def queue(self, batch: Any, env: Any, ctx: Any) -> None:
        for message in batch.messages:
            message.ack()
        self.seen += len(batch.messages)
        if self.seen >= self.expected:
            self.done.set()


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


async def _messages(harness: Any, count: int) -> dict[str, Any]:
    harness.reset()
    env = harness.new_env(queue=True)
    acker = _Acker(count)
    bridge = await Bridge(acker).start()
    harness.set_consumer(bridge.url)
    try:
        start = _clock()
        bodies = [{"body": json.dumps({"n": n})} for n in range(count)]
        for first in range(0, count, 100):
            await env.JOBS.sendBatch(bodies[first : first + 100])
        await asyncio.wait_for(acker.done.wait(), 600)
        wall, cpu = _since(start)
    finally:
        harness.set_consumer(None)
        await bridge.kill()
        await env.aclose()
    return {"messages": count, "batches": len(bridge.batches), "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "messages_per_s": round(count / wall, 1)}  # fmt: skip


async def worker_env(
    harness: Any, replay: ReplayServer, *, queued: bool, **variables: str
) -> tuple[Any, Any]:
    """A fresh deployment's bindings (with ``JOBS`` when ``queued``) and the Worker's ``env`` over
    them, YouTube replayed; ``variables`` are more vars."""
    harness.reset()
    bindings = harness.new_env(queue=queued)
    await apply_migrations(bindings.DB)
    variables = {"VID2CONTEXT_PUBLIC": "1", "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin,
                 "VID2CONTEXT_ACCESS_LOG": "0", **variables}  # fmt: skip
    return bindings, QueueEnv(bindings, **variables) if queued else WorkerEnv(bindings, **variables)


@asynccontextmanager
async def served(harness: Any, bindings: Any, env: Any) -> AsyncIterator[tuple[Isolate, Bridge]]:
    """An isolate over ``env`` that also consumes the queue; all of it closed afterwards."""
    isolate = Isolate(env)
    bridge = await Bridge(isolate.module.Default(ctx=object(), env=env)).start()
    harness.set_consumer(bridge.url)
    try:
        yield isolate, bridge
    finally:
        harness.set_consumer(None)
        await bridge.kill()
        await isolate.aclose()
        await bindings.aclose()


async def _ingest(harness: Any, replay: ReplayServer, videos: int, *, queued: bool) -> dict[str, Any]:
    bindings, env = await worker_env(harness, replay, queued=queued)
    async with served(harness, bindings, env) as (isolate, bridge):
        made = await isolate.fetch("/api/v1/collections", method="POST", body=json.dumps({"name": "bench"}).encode(),
                                   headers={"content-type": "application/json"})  # fmt: skip
        collection = json.loads(made.body)["id"]
        inputs = [f"https://www.youtube.com/watch?v={vid}" for vid in _listed(videos)]
        body = {"kind": "ingest", "input": {"collectionId": collection, "inputs": inputs}}
        start = _clock()
        answer = await isolate.fetch("/api/v1/jobs", method="POST", body=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})  # fmt: skip
        job_id = json.loads(answer.body)["id"]
        while True:
            job = json.loads((await isolate.fetch(f"/api/v1/jobs/{job_id}")).body)
            if job["status"] in ("succeeded", "failed", "canceled"):
                break
            await asyncio.sleep(0.05)
        wall, cpu = _since(start)
        assert job["status"] == "succeeded" and len(job["result"]["summary"]["added"]) == videos, job
    messages = sum(len(b.messages) for b in bridge.batches)
    figures = {"videos": videos, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
               "units_per_s": round(videos / wall, 2)}  # fmt: skip
    if queued:
        figures.update(
            messages=messages, batches=len(bridge.batches), messages_per_s=round(messages / wall, 1)
        )
    return figures


async def _run() -> dict[str, Any]:
    count = int(os.environ.get("BENCH_QUEUE_MESSAGES", "500"))
    videos = int(os.environ.get("BENCH_QUEUE_VIDEOS", "40"))
    harness = start_harness()
    try:
        with ReplayServer() as replay:
            messages = await _messages(harness, count)
            queued = await _ingest(harness, replay, videos, queued=True)
            in_isolate = await _ingest(harness, replay, videos, queued=False)
    finally:
        harness.stop()
    return {
        "messages": messages,
        "ingest_queued": queued,
        "ingest_in_isolate": in_isolate,
        **ratios(queued, in_isolate),
        "batch": {"max_batch_size": 5, "max_batch_timeout_s": 1},
    }


def ratios(queued: dict[str, Any], in_isolate: dict[str, Any]) -> dict[str, Any]:
    """The queued figures against the reference, wall and CPU, and the Miniflare they ran on."""
    return {
        "queued_vs_in_isolate_wall": round(queued["wall_s"] / in_isolate["wall_s"], 2),
        "queued_vs_in_isolate_cpu": round(queued["cpu_s"] / in_isolate["cpu_s"], 2),
        "miniflare": "4.20260426.0",
    }


def run() -> dict[str, Any]:
    return asyncio.run(_run())
