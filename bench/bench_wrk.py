"""Cached ``GET /api/v1/transcript?format=srt`` over sockets: ``vid2context serve`` against a bare
granian route, both loaded by ``wrk -t2 -c64`` (the issue's figures were taken this way).

Needs ``wrk`` on the PATH (Debian: ``apt-get install wrk``); without it the benchmark reports
that and measures nothing, so ``make bench`` and CI never depend on it. Ours is ``vid2context
serve --workers BENCH_WRK_WORKERS`` (default 2) with the settings it starts with, but for a rate
limit too high to refuse any request (its layer still runs) and the access log off (its lines
would go to a pipe nobody reads); the bare side is one Litestar route answering the same SRT
bytes under granian with as many workers. The video is read once first (YouTube answered by the
tests' replay server), then its saved transcript is lengthened in the library's file (its lines
repeated, ``BENCH_WRK_CUES`` of them, default 62) to the issue's 4.3 kB of SRT: the replayed
videos alone render to 205 bytes. The sides alternate ``BENCH_WRK_ROUNDS`` times for ``BENCH_WRK_SECONDS``
each (with ``BENCH_WRK_BASE`` set to a git revision, a third side: that revision's ``serve``,
from ``git archive``, on a library of its own, for a before/after in one run); figures are wrk's own (requests/s, latency percentiles), with the load average before
and after. Reported: each run, each side's medians, the ratio of the median requests/s and the
ratio within each round (the machine is shared, so a round's two sides met the same load), and
the resident memory of ours (its workers together) after the warm-up and after the last run,
which served tens of thousands of requests more (flat is the aim).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.youtube_replay import ReplayServer  # noqa: E402 - the tests' replay server

from bench.bench_api import _free_port, server_env  # noqa: E402

PATH = "/api/v1/transcript?url=GJLlxj_dtq8&format=srt"
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    ready_by = time.monotonic() + 120  # polling for readiness, not timing anything
    while True:
        try:
            if httpx.get(url, timeout=10).status_code < 500:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > ready_by:
            raise RuntimeError(f"the server at {url} did not start")
        time.sleep(0.2)


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return round(float(number) * _UNITS[unit], 3)


def _wrk(url: str, seconds: int) -> dict[str, float]:
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    figures = {"requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for percent in ("50", "90", "99"):
        figures[f"p{percent}_ms"] = _ms(re.search(rf"\s{percent}%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    figures["non_2xx"] = int(errors.group(1)) if errors else 0
    return figures


def _rss_kib(pid: int) -> int:
    """Resident KiB of ``pid``'s children (granian's workers; the process itself when it has none)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = children.read_text().split() if children.exists() else []
    total = 0
    for one in pids or [str(pid)]:
        status = Path(f"/proc/{one}/status")
        if status.exists():
            found = re.search(r"VmRSS:\s+(\d+)", status.read_text())
            total += int(found.group(1)) if found else 0
    return total


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: round(statistics.median(run[name] for run in runs), 3) for name in runs[0]}


BARE = """
import os
from litestar import Litestar, get
from litestar.response import Response
BODY = bytes.fromhex(os.environ["BARE_BODY"])
TYPE = os.environ["BARE_TYPE"]
@get("/api/v1/transcript", media_type=TYPE)
async def bare() -> Response[bytes]:
    return Response(BODY, media_type=TYPE)
app = Litestar([bare], logging_config=None, openapi_config=None)
"""


def _base_src(base: str, into: Path) -> str:
    """``base``'s ``src`` folder: a folder given as it is, else a git revision whose ``src`` and
    ``migrations`` are archived into ``into``."""
    if Path(base, "vid2context").is_dir():
        return base
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", base, "src", "migrations"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return str(into / "src")


def _lengthen(home: str | Path, cues: int) -> None:
    """The saved video of ``PATH`` with its lines repeated to ``cues`` (``bench_cached._long``),
    written through the library's own storage while the server runs (its cache sees the commit)."""
    import asyncio

    from bench.bench_cached import _long
    from vid2context.storage.sqlite import open_local_stores

    async def write() -> None:
        stores = open_local_stores(home)
        try:
            saved = await stores.storage.get_context("youtube:GJLlxj_dtq8")
            await stores.storage.put_context(_long(saved, cues))
        finally:
            await stores.storage.close()

    asyncio.run(write())


def _serve(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "vid2context", "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def run() -> dict[str, object]:
    if shutil.which("wrk") is None:
        return {"skipped": "wrk is not installed (Debian: apt-get install wrk)"}
    workers = int(os.environ.get("BENCH_WRK_WORKERS", "2"))
    rounds = int(os.environ.get("BENCH_WRK_ROUNDS", "2"))
    seconds = int(os.environ.get("BENCH_WRK_SECONDS", "10"))
    cues = int(os.environ.get("BENCH_WRK_CUES", "62"))
    base = os.environ.get("BENCH_WRK_BASE")  # a git revision (or a checkout's src/): a third side
    load_before = os.getloadavg()
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as home, ReplayServer() as replay:
        env = server_env(home, replay.origin, VID2CONTEXT_RATE_LIMIT="100000000")
        urls: dict[str, str] = {}
        try:
            port = _free_port()
            ours = _serve(env, port, workers)
            processes.append(ours)
            urls["ours"] = f"http://127.0.0.1:{port}{PATH}"
            _wait(f"http://127.0.0.1:{port}/api/v1/health", ours)
            httpx.get(urls["ours"], timeout=120).raise_for_status()
            _lengthen(home, cues)
            first = httpx.get(urls["ours"], timeout=120)
            first.raise_for_status()
            base_src = _base_src(base, Path(home, "code")) if base else None
            if base_src:
                base_home = Path(home, "base")
                base_env = server_env(str(base_home), replay.origin, VID2CONTEXT_RATE_LIMIT="100000000")
                base_env["PYTHONPATH"] = base_src
                port = _free_port()
                processes.append(_serve(base_env, port, workers))
                urls["base"] = f"http://127.0.0.1:{port}{PATH}"
                _wait(f"http://127.0.0.1:{port}/api/v1/health", processes[-1])
                httpx.get(urls["base"], timeout=120).raise_for_status()
                _lengthen(base_home, cues)
                if httpx.get(urls["base"], timeout=120).content != first.content:
                    raise RuntimeError("the base answers other bytes")
            Path(home, "bare_app.py").write_text(BARE, encoding="utf-8")
            bare_env = {**env, "BARE_BODY": first.content.hex(), "BARE_TYPE": first.headers["content-type"]}
            port = _free_port()
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "granian", "--interface", "asgi", "--workers", str(workers),
                 "--port", str(port), "--no-access-log", "--working-dir", home, "bare_app:app"],
                env=bare_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ))  # fmt: skip
            urls["bare"] = f"http://127.0.0.1:{port}{PATH}"
            _wait(urls["bare"], processes[-1])
            results: dict[str, list[dict[str, float]]] = {side: [] for side in urls}
            for url in urls.values():
                _wrk(url, 2)  # warm-up (and the kept entry made)
            rss_warm = _rss_kib(ours.pid)
            for _ in range(rounds):
                for side, url in urls.items():
                    results[side].append(_wrk(url, seconds))
            rss_end = _rss_kib(ours.pid)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=60)
    medians = {side: _medians(runs) for side, runs in results.items()}
    return {
        "route": "GET /api/v1/transcript?format=srt (stored video), wrk -t2 -c64, against a bare granian route",
        "workers": workers,
        "seconds_per_run": seconds,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "body_bytes": len(first.content),
        "runs": results,
        "medians": medians,
        "ratio_requests_per_s": round(
            medians["ours"]["requests_per_s"] / medians["bare"]["requests_per_s"], 3
        ),
        "ratio_each_round": [
            round(ours["requests_per_s"] / bare["requests_per_s"], 3)
            for ours, bare in zip(results["ours"], results["bare"], strict=True)
        ],
        "ours_rss_kib": {"after_warm_up": rss_warm, "after_last_run": rss_end},
        **(
            {
                "base": base,
                "ratio_base": round(medians["base"]["requests_per_s"] / medians["bare"]["requests_per_s"], 3),
            }
            if base
            else {}
        ),
    }
