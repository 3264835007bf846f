"""A long upload's ``context`` job on the Worker: one queue message per piece, against one message.

An MP3 of ``BENCH_PIECES_SECONDS`` (default 1,800: half an hour, 32 kbit/s, made by ffmpeg) is
uploaded to one isolate (``worker/entry.py`` over Miniflare's D1, KV, R2 and real ``JOBS`` queue,
its ``queue()`` fed over ``tests/queue_bridge.py``), cut into pieces of
``BENCH_PIECES_CHUNK_SEC`` (default 300 s), and transcribed by the Whisper stand-in, which answers
each request after ``BENCH_PIECES_LATENCY`` seconds (default 1.0, a hosted service's time for a
piece; it hears lengths, not words). Two ways, in alternating rounds (``BENCH_PIECES_ROUNDS``,
default 3), medians:

- ``per_piece``: ``POST /jobs`` as a client sends it: a plan message, one message per piece,
  a finish message (``job_pieces.py``).
- ``one_message``: the same job run whole in one message (the ``all`` unit ``jobs_queued`` still
  runs: what a ``context`` job was before), its pieces sent ``VID2CONTEXT_STT_CONCURRENCY`` (4)
  at a time from there.

Wall time from the job's submission to its end, as ``GET /jobs/:id`` polled every 50 ms sees it,
and this process's CPU time (the isolate, the bridge and the client are all in it; Miniflare and
the stand-in are not; every binding call is a fresh connection to 127.0.0.1). Miniflare waits up to a second to fill a batch (``maxBatchTimeout``) on
each hop, so the queue's wall time carries two more of those than one message does.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.fake_whisper import FakeWhisper  # noqa: E402
from tests.miniflare_harness import apply_migrations, start_harness  # noqa: E402
from tests.queue_bridge import Bridge  # noqa: E402
from tests.test_queue_jobs import QueueEnv  # noqa: E402
from tests.test_queue_pieces import _upload  # noqa: E402
from tests.test_worker_entry import Isolate  # noqa: E402

_HEADERS = {"content-type": "application/json"}


def _mp3(seconds: int, folder: Path) -> bytes:
    path = folder / "long.mp3"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}",
         "-ac", "1", "-ar", "16000", "-c:a", "libmp3lame", "-b:a", "32k", str(path)],
        check=True,
    )  # fmt: skip
    return path.read_bytes()


async def _json(isolate: Isolate, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    response = await isolate.fetch(
        path, method="GET" if body is None else "POST", headers=_HEADERS, body=data
    )
    assert response.status < 300, response.text()
    return json.loads(response.body)


async def _one_message(isolate: Isolate, env: QueueEnv, upload: str) -> str:
    """A ``context`` job run whole in one message, as before ``job_pieces``."""
    runtime = isolate.module._api.state.runtime
    job_id = f"job_bench{time.monotonic_ns()}"
    now = "2026-01-01T00:00:00.000Z"
    await runtime.jobs._ledger.create(
        {"id": job_id, "kind": "context", "input": json.dumps(upload), "options": "{}", "created_at": now}
    )
    await env.JOBS.send(json.dumps({"job": job_id, "unit": "all"}))
    return job_id


async def _round(
    harness: Any, fake: FakeWhisper, data: bytes, chunk_sec: int, *, per_piece: bool
) -> dict[str, Any]:
    harness.reset()
    # A fresh connection per binding call: a reused one that Miniflare closed while idle fails
    # the call (retried by the queue after its backoff, which would be measured, not the code).
    bindings = harness.new_env(queue=True, keepalive=False)
    await apply_migrations(bindings.DB)
    env = QueueEnv(bindings, VID2CONTEXT_PUBLIC="0", VID2CONTEXT_RATE_LIMIT="0", VID2CONTEXT_ACCESS_LOG="0",
                   VID2CONTEXT_STT_URL=f"{fake.url}/v1", VID2CONTEXT_STT_CHUNK_SEC=str(chunk_sec))  # fmt: skip
    isolate = Isolate(env)
    bridge = await Bridge(isolate.module.Default(ctx=object(), env=env)).start()
    harness.set_consumer(bridge.url)
    fake.requests.clear()
    try:
        upload = await _upload(isolate, data, "long.mp3", "audio/mpeg")
        started, started_cpu = time.perf_counter(), time.process_time()
        if per_piece:
            job_id = (await _json(isolate, "/api/v1/jobs", {"kind": "context", "input": upload}))["id"]
        else:
            job_id = await _one_message(isolate, env, upload)
        while (job := await _json(isolate, f"/api/v1/jobs/{job_id}"))["status"] not in (
            "succeeded",
            "failed",
        ):
            await asyncio.sleep(0.05)
        wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        assert job["status"] == "succeeded", job
        note = job["result"]["transcript"]["note"]
        # Not measured: every message answered before the next round (else its ack is lost with
        # this bridge, and the next round's consumer gets the message again).
        while not all(m.decision for b in bridge.batches for m in b.messages):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        mine = [m for b in bridge.batches for m in b.messages if job_id in m.body]
    finally:
        harness.set_consumer(None)
        await bridge.kill()
        await isolate.aclose()
        await bindings.aclose()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "messages": len(mine),
        "requests": len(fake.answered),
        "note": note,
    }


def _median(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall_s": round(statistics.median(r["wall_s"] for r in rounds), 3),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in rounds), 3),
        "messages": rounds[0]["messages"],
        "requests": rounds[0]["requests"],
        "note": rounds[0]["note"],
    }


async def _run() -> dict[str, Any]:
    seconds = int(os.environ.get("BENCH_PIECES_SECONDS", "1800"))
    chunk_sec = int(os.environ.get("BENCH_PIECES_CHUNK_SEC", "300"))
    latency = float(os.environ.get("BENCH_PIECES_LATENCY", "1.0"))
    rounds = int(os.environ.get("BENCH_PIECES_ROUNDS", "3"))
    with tempfile.TemporaryDirectory() as folder:
        data = _mp3(seconds, Path(folder))
    load_before = os.getloadavg()[0]
    harness = start_harness()
    sides: dict[str, list[dict[str, Any]]] = {"per_piece": [], "one_message": []}
    try:
        with FakeWhisper(engine="length", latency=latency) as fake:
            for _ in range(rounds):
                for side in sides:
                    sides[side].append(
                        await _round(harness, fake, data, chunk_sec, per_piece=side == "per_piece")
                    )
    finally:
        harness.stop()
    per_piece, one = _median(sides["per_piece"]), _median(sides["one_message"])
    return {
        "audio_s": seconds,
        "upload_bytes": len(data),
        "piece_s": chunk_sec,
        "service_latency_s": latency,
        "rounds": rounds,
        "per_piece": per_piece,
        "one_message": one,
        "per_piece_vs_one_message_wall": round(per_piece["wall_s"] / one["wall_s"], 2),
        "per_piece_vs_one_message_cpu": round(per_piece["cpu_s"] / one["cpu_s"], 2),
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "miniflare": "4.20260426.0",
    }


def run() -> dict[str, Any]:
    return asyncio.run(_run())
