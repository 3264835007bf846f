"""MCP long runs on the Worker: through Miniflare's real ``JOBS`` queue, against ``waitUntil`` tasks.

``BENCH_MCP_QUEUE_CALLS`` (default 20) ``get_metadata`` calls of different videos go to one
isolate's ``/mcp`` (``worker/entry.py`` with the ``workers`` stand-in, YouTube replayed from the
recorded answers), each answering ``processing`` at once (``VID2CONTEXT_MCP_WAIT_S=0``); then
``get_job`` is polled for each until every reply is in. Two figures:

- ``queued``: a Worker with ``JOBS``: every call is a row in D1 and a message; the consumer
  (the same isolate, its ``queue()`` fed over ``tests/queue_bridge.py``) runs the tool again and
  writes the reply.
- ``in_isolate``: the same Worker without the queue: every call is a task of the isolate on
  ``waitUntil`` (``mcp/runs.py``), the reference the ratio is read against.

Wall time and this process's CPU time from the first call to the last reply. Every binding call
crosses HTTP to 127.0.0.1 and the consumer is in this process, so these measure the code's
overhead (the D1 rows, the poll, the tool run again), not Cloudflare's network; the queued wall
time follows Miniflare's batching (at most 5 messages a batch, as wrangler.toml's
``max_batch_size``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.miniflare_harness import start_harness  # noqa: E402
from tests.test_queue_jobs import _listed  # noqa: E402
from tests.test_worker_entry import Isolate  # noqa: E402
from tests.youtube_replay import ReplayServer  # noqa: E402

from bench.bench_queue import _clock, _since, ratios, served, worker_env  # noqa: E402

TOKEN = "bench-" + "t0k3n" * 4
_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
    "authorization": f"Bearer {TOKEN}",
}


async def _call(isolate: Isolate, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = await isolate.fetch("/mcp", method="POST", headers=_HEADERS, body=json.dumps(message).encode())
    return json.loads(response.body)["result"]


def _processing(result: dict[str, Any]) -> str | None:
    structured = result.get("structuredContent") or {}
    return structured.get("job_id") if structured.get("status") == "processing" else None


async def _calls(harness: Any, replay: ReplayServer, count: int, *, queued: bool) -> dict[str, Any]:
    bindings, env = await worker_env(
        harness, replay, queued=queued, VID2CONTEXT_MCP_TOKENS=TOKEN, VID2CONTEXT_MCP_RATE_LIMIT="0",
        VID2CONTEXT_MCP_WAIT_S="0",
    )  # fmt: skip
    videos = _listed(count)
    async with served(harness, bindings, env) as (isolate, bridge):
        start = _clock()
        jobs = []
        for video in videos:
            job_id = _processing(await _call(isolate, "get_metadata", {"url": video}))
            assert job_id, "the call did not answer processing"
            jobs.append(job_id)
        titles = []
        for job_id in jobs:
            while _processing(result := await _call(isolate, "get_job", {"job_id": job_id})):
                await asyncio.sleep(0.05)
            assert not result.get("isError"), result
            titles.append(json.loads(result["content"][1]["text"])["title"])
        wall, cpu = _since(start)
        assert len(titles) == count and all(titles)
    messages = sum(len(b.messages) for b in bridge.batches)
    figures = {
        "calls": count,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "calls_per_s": round(count / wall, 2),
    }
    if queued:
        figures.update(messages=messages, batches=len(bridge.batches))
    return figures


async def _run() -> dict[str, Any]:
    count = int(os.environ.get("BENCH_MCP_QUEUE_CALLS", "20"))
    harness = start_harness()
    try:
        with ReplayServer() as replay:
            queued = await _calls(harness, replay, count, queued=True)
            in_isolate = await _calls(harness, replay, count, queued=False)
    finally:
        harness.stop()
    return {"queued": queued, "in_isolate": in_isolate, **ratios(queued, in_isolate)}


def run() -> dict[str, Any]:
    return asyncio.run(_run())
