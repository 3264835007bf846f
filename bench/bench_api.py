"""``GET /api/v1/transcript`` for a stored video through the real server on loopback.

Starts ``vid2context serve`` (granian) on a free port with a fresh SQLite home, reads one video once
(YouTube answered by the local replay server of the tests, so nothing leaves the machine), then
loads the transcript route with an async httpx client at concurrency 1, 16 and 64. Figures:
requests per second, p50/p99 latency, and the server's resident memory (the whole process tree)
before and after ``BENCH_API_REQUESTS`` requests in all (default 50,000), to show it does not grow.

The load generator is Python too and shares the two cores with the server, so the figures are a
floor for the server's own capacity.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.youtube_replay import ReplayServer  # noqa: E402 - the tests' replay server

VIDEO = "GJLlxj_dtq8"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (granian forks its worker)."""
    total = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            stack.extend(int(child) for child in task.read_text().split())
    return total


async def _load(base: str, concurrency: int, requests: int) -> dict[str, float]:
    url = f"{base}/api/v1/transcript"
    latencies: list[float] = []
    remaining = requests
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                response = await client.get(url, params={"url": VIDEO})
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"status {response.status_code}: {response.text[:200]}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2),
    }


def server_env(home: str, youtube_origin: str, **settings: str) -> dict[str, str]:
    """The environment of a benchmarked ``vid2context serve``: none of this shell's settings, the
    library in ``home``, YouTube at ``youtube_origin``, the access log off, then ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(VID2CONTEXT_HOME=home, VID2CONTEXT_YOUTUBE_ORIGIN=youtube_origin, VID2CONTEXT_ACCESS_LOG="0")
    env.update(settings)
    return env


def run() -> dict[str, object]:
    total = int(os.environ.get("BENCH_API_REQUESTS", "50000"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as home, ReplayServer() as replay:
        env = server_env(home, replay.origin, VID2CONTEXT_RATE_LIMIT="0")
        server = subprocess.Popen(
            [sys.executable, "-m", "vid2context", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            first = httpx.get(f"{base}/api/v1/transcript", params={"url": VIDEO}, timeout=60)
            first.raise_for_status()
            body_bytes = len(first.content)
            rss_before = _tree_rss_kb(server.pid)
            runs = []
            shares = {1: max(1, total // 10), 16: total * 45 // 100}
            shares[64] = max(1, total - shares[1] - shares[16])
            for concurrency, count in shares.items():
                runs.append(asyncio.run(_load(base, concurrency, count)))
            rss_after = _tree_rss_kb(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "route": "GET /api/v1/transcript (text, stored video)",
        "body_bytes": body_bytes,
        "runs": runs,
        "total_requests": sum(r["requests"] for r in runs),
        "server_rss_mb_before": round(rss_before / 1024, 1),
        "server_rss_mb_after": round(rss_after / 1024, 1),
    }
