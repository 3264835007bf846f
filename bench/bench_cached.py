"""A cached ``GET /api/v1/transcript?format=srt`` against a bare Litestar route, in one process.

Both apps are called in-process through httpx's ASGI transport, so the figures are the server's
own work per request (no sockets, no granian): ours is ``create_app`` over the local runtime with
the settings ``vid2context serve`` starts with, but for a rate limit too high to refuse any
of these requests (so the limiter's layer still runs for every one) and the access log's lines
sent to /dev/null, the bare route a one-handler Litestar app answering the same SRT bytes;
``without_front`` is ours with ``front=False`` (every read through Litestar's router and
handler rather than ``api/cached_reads.py``), and ``front_answered`` counts the front's answers. The video is
read once first (YouTube answered by the tests' replay server), so every timed request is a
stored read. The sides alternate in ``BENCH_CACHED_ROUNDS`` rounds of ``BENCH_CACHED_REQUESTS``
requests each; the ratio (bare time over ours, 1 = the framework's own speed) is of the medians.

Then the Worker (``worker``; ``BENCH_CACHED_WORKER_REQUESTS`` a round, default 40; 0 skips it):
the same read through ``create_app`` over ``build_worker_runtime`` on Miniflare's D1, KV and R2
(``tests/miniflare_harness.py``), with the isolate's rendered-answer cache (the library version
row read once a request) and without it (``VID2CONTEXT_RESPONSE_CACHE_MB=0``: the saved video read
and rendered each time), alternating in ``BENCH_CACHED_ROUNDS`` rounds, on the replayed video saved
again with its lines repeated to ``BENCH_CACHED_WORKER_CUES`` (default 2,500, about an hour); each binding call is an
HTTP round trip to 127.0.0.1 (``binding_round_trip_ms`` of ``bench_worker``), which a deployed
Worker does not pay, so the CPU figures matter more than the wall ones. The cache's hit count
is reported, so the figures are known to be hits.

Then memory (``BENCH_CACHED_MEMORY_REQUESTS``, default 50,000; 0 skips it): that many more reads
of ours, a mix of formats, half with the ``If-None-Match`` of the answer (``304``), each with a
request id of its own, under ``tracemalloc``. Reported: the process's RSS and the traced Python
memory after the first tenth (everything warm) and at the end; flat means the end is not above
the start by more than noise, whatever the number of requests.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from litestar import Litestar, get
from litestar.response import Response

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.youtube_replay import ReplayServer  # noqa: E402 - the tests' replay server

VIDEO = "GJLlxj_dtq8"
PARAMS = {"url": VIDEO, "format": "srt"}


def _bare_app(body: bytes, media_type: str) -> Litestar:
    @get("/bare", media_type=media_type)
    async def bare() -> Response[bytes]:
        return Response(body, media_type=media_type)

    return Litestar([bare], logging_config=None, openapi_config=None)


async def _round(call: Callable[[], Awaitable[None]], count: int) -> tuple[list[float], float]:
    latencies = []
    started_cpu = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        await call()
        latencies.append((time.perf_counter() - started) * 1e6)
    return latencies, (time.process_time() - started_cpu) * 1e6 / count


def _reader(client: httpx.AsyncClient) -> Callable[[], Awaitable[None]]:
    """One cached read through ``client``; anything but ``200`` stops the benchmark."""

    async def call() -> None:
        response = await client.get("/api/v1/transcript", params=PARAMS)
        if response.status_code != 200:
            raise RuntimeError(f"status {response.status_code}: {response.text[:200]}")

    return call


async def _alternate(
    sides: dict[str, Callable[[], Awaitable[None]]], rounds: int, count: int, warm: int
) -> dict[str, dict[str, float]]:
    """Each side warmed up with ``warm`` calls, then ``rounds`` rounds of ``count`` calls a side,
    alternating: each side's latency and CPU medians (``_summary``)."""
    latencies: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    for call in sides.values():
        await _round(call, warm)
    for _ in range(rounds):
        for name, call in sides.items():
            got, per_request_cpu = await _round(call, count)
            latencies[name].extend(got)
            cpu[name].append(per_request_cpu)
    return {name: _summary(latencies[name], cpu[name]) for name in sides}


def _summary(latencies: list[float], cpu: list[float]) -> dict[str, float]:
    latencies.sort()
    return {
        "p50_us": round(statistics.median(latencies), 1),
        "p99_us": round(latencies[int(len(latencies) * 0.99) - 1], 1),
        "cpu_median_us": round(statistics.median(cpu), 1),
    }


async def _measure(rounds: int, count: int) -> dict[str, object]:
    from vid2context.api import create_app
    from vid2context.runtime import build_local_runtime

    app = create_app(build_local_runtime())
    # The same app without the front (api/cached_reads.py): every read through Litestar's
    # router and handler, on a runtime of its own over the same library file.
    litestar_app = create_app(build_local_runtime(), front=False)
    ours_transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    litestar_transport = httpx.ASGITransport(app=litestar_app, client=("127.0.0.1", 5000))
    async with (
        app.lifespan(),
        litestar_app.lifespan(),
        httpx.AsyncClient(transport=ours_transport, base_url="http://bench") as ours,
        httpx.AsyncClient(transport=litestar_transport, base_url="http://bench") as through_litestar,
    ):
        first = await ours.get("/api/v1/transcript", params=PARAMS, timeout=60)
        first.raise_for_status()
        bare_app = _bare_app(first.content, first.headers["content-type"])
        bare_transport = httpx.ASGITransport(app=bare_app)
        async with httpx.AsyncClient(transport=bare_transport, base_url="http://bench") as bare:

            async def call_bare() -> None:
                (await bare.get("/bare")).raise_for_status()

            sides = {"ours": _reader(ours), "without_front": _reader(through_litestar), "bare": call_bare}
            figures = await _alternate(sides, rounds, count, min(count, 200))
        answered = app.state.cached_reads.answered
        memory = await _memory(ours, int(os.environ.get("BENCH_CACHED_MEMORY_REQUESTS", "50000")))
    return {
        "memory": memory,
        "body_bytes": len(first.content),
        "front_answered": answered,
        **figures,
        "ratio_p50": round(figures["bare"]["p50_us"] / figures["ours"]["p50_us"], 3),
        "ratio_cpu": round(figures["bare"]["cpu_median_us"] / figures["ours"]["cpu_median_us"], 3),
        "ratio_cpu_without_front": round(
            figures["bare"]["cpu_median_us"] / figures["without_front"]["cpu_median_us"], 3
        ),
    }


def _long(context: Any, cues: int) -> Any:
    """``context`` with its transcript's lines repeated to ``cues`` lines, one every 1.5 s: a
    long video's saved copy, so that reading and rendering it costs what it costs in use."""
    import msgspec

    lines = context.transcript.segments
    segments = [
        msgspec.structs.replace(lines[n % len(lines)], start_sec=n * 1.5, end_sec=n * 1.5 + 1.4)
        for n in range(cues)
    ]
    return msgspec.structs.replace(
        context, transcript=msgspec.structs.replace(context.transcript, segments=segments)
    )


async def _worker(rounds: int, count: int, youtube: str, cues: int) -> dict[str, object] | None:
    """Cached reads on the Worker's runtime, with and without the cache (module docstring)."""
    if count <= 0:
        return None
    from tests.miniflare_harness import apply_migrations, start_harness

    from vid2context.api import create_app
    from vid2context.runtime import build_worker_runtime

    harness = start_harness()
    try:
        harness.reset()
        settings = {"VID2CONTEXT_YOUTUBE_ORIGIN": youtube, "VID2CONTEXT_RATE_LIMIT": "100000000"}
        envs = {
            "cached": harness.new_env(vars=settings),
            "uncached": harness.new_env(vars={**settings, "VID2CONTEXT_RESPONSE_CACHE_MB": "0"}),
        }
        await apply_migrations(envs["cached"].DB)
        apps = {side: create_app(build_worker_runtime(env)) for side, env in envs.items()}
        clients = {
            side: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
            for side, app in apps.items()
        }
        async with apps["cached"].lifespan(), apps["uncached"].lifespan():
            (await clients["cached"].get("/api/v1/transcript", params=PARAMS, timeout=60)).raise_for_status()
            storage = apps["cached"].state.runtime.storage
            await storage.put_context(_long(await storage.get_context("youtube:" + VIDEO), cues))
            sides = {side: _reader(client) for side, client in clients.items()}
            figures = await _alternate(sides, rounds, count, min(count, 10))
            cache = apps["cached"].state.rendered
            body_bytes = len((await clients["uncached"].get("/api/v1/transcript", params=PARAMS)).content)
            hits = cache.hits if cache is not None else 0
        for client in clients.values():
            await client.aclose()
        for env in envs.values():
            await env.aclose()
    finally:
        harness.stop()
    return {
        **figures,
        "cache_hits": hits,
        "cues": cues,
        "body_bytes": body_bytes,
        "requests_a_side": rounds * count,
        "speedup_p50": round(figures["uncached"]["p50_us"] / figures["cached"]["p50_us"], 2),
        "speedup_cpu": round(figures["uncached"]["cpu_median_us"] / figures["cached"]["cpu_median_us"], 2),
        "note": "Miniflare's bindings over HTTP on 127.0.0.1; CPython, not Pyodide",
    }


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _memory(ours: httpx.AsyncClient, count: int) -> dict[str, object] | None:
    """RSS and traced memory over ``count`` more cached reads (module docstring)."""
    if count <= 0:
        return None
    variants = [{**PARAMS, "format": name} for name in ("srt", "vtt", "text", "json")]
    tags = {}
    for params in variants:
        response = await ours.get("/api/v1/transcript", params=params)
        response.raise_for_status()
        tags[params["format"]] = response.headers["etag"]
    tracemalloc.start()
    start: dict[str, int] = {}
    statuses: dict[int, int] = {}
    for n in range(count):
        params = variants[n % len(variants)]
        headers = {"X-Request-Id": f"mem-{n}"}
        if n % 2:
            headers["If-None-Match"] = tags[params["format"]]
        response = await ours.get("/api/v1/transcript", params=params, headers=headers)
        # A server's loop turns between requests (they arrive as I/O); in process nothing would
        # suspend, and the loop would never drop the timers that were cancelled (Limits' timeout).
        await asyncio.sleep(0)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if n + 1 == count // 10:
            gc.collect()  # what is garbage but not yet collected is not what the server holds
            start = {"rss_kib": _rss_kib(), "traced_bytes": tracemalloc.get_traced_memory()[0]}
    gc.collect()
    traced, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "requests": count,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "after_first_tenth": start,
        "at_end": {"rss_kib": _rss_kib(), "traced_bytes": traced, "traced_peak_bytes": peak},
    }


def run() -> dict[str, object]:
    rounds = int(os.environ.get("BENCH_CACHED_ROUNDS", "7"))
    count = int(os.environ.get("BENCH_CACHED_REQUESTS", "500"))
    saved = {k: v for k, v in os.environ.items() if k.startswith("VID2CONTEXT_")}
    with tempfile.TemporaryDirectory() as home, ReplayServer() as replay, open(os.devnull, "w") as devnull:
        for key in saved:
            del os.environ[key]
        os.environ.update(
            VID2CONTEXT_HOME=home,
            VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin,
            VID2CONTEXT_RATE_LIMIT="100000000",
        )
        stderr, sys.stderr = sys.stderr, devnull  # the access log's lines
        try:
            figures = asyncio.run(_measure(rounds, count))
            worker_count = int(os.environ.get("BENCH_CACHED_WORKER_REQUESTS", "40"))
            cues = int(os.environ.get("BENCH_CACHED_WORKER_CUES", "2500"))
            figures["worker"] = asyncio.run(_worker(rounds, worker_count, replay.origin, cues))
        finally:
            sys.stderr = stderr
            for key in [k for k in os.environ if k.startswith("VID2CONTEXT_")]:
                del os.environ[key]
            os.environ.update(saved)
    return {
        "route": "GET /api/v1/transcript?format=srt (stored video), in-process, against a bare route",
        "rounds": rounds,
        "requests_per_round": count,
        **figures,
    }
