"""Push throughput: videos a second from a laptop runtime to a local server (``vid2context push``).

Starts ``vid2context serve`` on a free port with a fresh SQLite home (embedding on save off, so
the figure is the push path itself: the checks, the save and the keyword index), and a laptop
runtime with its own home whose YouTube is the tests' replay server, so nothing leaves the machine.
Figures, each in videos a second (wall) and the laptop's CPU seconds a video:

- ``push_cold``: the 12-video recorded playlist and one video, each read on the laptop (watch page,
  player, captions from the replay) and put on the server: what a first ``vid2context push`` does;
- ``push_again``: the same push run again, every video skipped after one cheap ``If-None-Match: *``;
- ``put_long``: ``PUT`` alone of three-hour transcripts (about 2,700 segments, 300 kB each) from the
  laptop's library, the upload without any reading;
- ``get_long`` (the reference, same run, same server): ``GET /api/v1/library/{id}`` of those
  transcripts; ``put_over_get`` is the ratio of their rates.

Speech-to-text is not measured here (``bench_stt.py`` is): a video that needs it is read at
that rate, whatever the push costs on top.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.talks import three_hour_talk  # noqa: E402 - the tests' made-up talks
from tests.youtube_replay import PLAYLIST_ID, ReplayServer  # noqa: E402 - the tests' replay server

from vid2context.remote import RemoteServer, push  # noqa: E402
from vid2context.runtime import build_local_runtime  # noqa: E402

INPUTS = [
    "https://www.youtube.com/watch?v=GJLlxj_dtq8",
    f"https://www.youtube.com/playlist?list={PLAYLIST_ID}",
]
LONG = int(os.environ.get("BENCH_PUSH_LONG", "20"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rate(count: int, wall: float, cpu: float) -> dict[str, float]:
    return {
        "videos": count,
        "videos_per_s": round(count / wall, 2),
        "wall_s": round(wall, 3),
        "laptop_cpu_ms_per_video": round(cpu * 1000 / count, 2),
    }


async def _timed(work) -> tuple[object, float, float]:  # type: ignore[no-untyped-def]
    started, started_cpu = time.perf_counter(), time.process_time()
    result = await work()
    return result, time.perf_counter() - started, time.process_time() - started_cpu


async def _bench(url: str, laptop_home: Path, youtube: str) -> dict[str, object]:
    runtime = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(laptop_home),
            "VID2CONTEXT_YOUTUBE_ORIGIN": youtube,
            "VID2CONTEXT_EMBED_ON_SAVE": "0",
        }
    )
    figures: dict[str, object] = {}
    try:
        async with httpx.AsyncClient(timeout=120) as client:
            remote = RemoteServer(url, None, client)
            report, wall, cpu = await _timed(lambda: push(runtime, remote, INPUTS))
            moved = sum(item.outcome == "ok" for item in report.items)  # type: ignore[attr-defined]
            if moved == 0 or report.failed:  # type: ignore[attr-defined]
                raise RuntimeError(f"the push failed: {report}")
            figures["push_cold"] = _rate(len(report.items), wall, cpu)  # type: ignore[attr-defined]
            report, wall, cpu = await _timed(lambda: push(runtime, remote, INPUTS))
            assert all(item.outcome == "skipped" for item in report.items)  # type: ignore[attr-defined]
            figures["push_again"] = _rate(len(report.items), wall, cpu)  # type: ignore[attr-defined]

            talks = [three_hour_talk(f"long{i:07d}") for i in range(LONG)]
            figures["long_transcript"] = {
                "segments": len(talks[0].transcript.segments),  # type: ignore[union-attr]
                "bytes": len(__import__("msgspec").json.encode(talks[0])),
            }

            async def put_all() -> None:
                for talk in talks:
                    await remote.put_video(talk)

            async def get_all() -> None:
                for talk in talks:
                    await remote.get_video_bytes(talk.id)

            await put_all()  # warm: the same rows replaced below, as a re-push with --refresh does
            _, wall, cpu = await _timed(put_all)
            figures["put_long"] = _rate(LONG, wall, cpu)
            _, wall, cpu = await _timed(get_all)
            figures["get_long"] = _rate(LONG, wall, cpu)
            figures["put_over_get"] = round(
                figures["put_long"]["videos_per_s"] / figures["get_long"]["videos_per_s"], 3
            )  # type: ignore[index]
    finally:
        await runtime.aclose()
    return figures


def run() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp, ReplayServer() as youtube:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
        env.update(
            {
                "VID2CONTEXT_HOME": str(Path(tmp) / "server"),
                "VID2CONTEXT_YOUTUBE_ORIGIN": youtube.origin,
                "VID2CONTEXT_ACCESS_LOG": "0",
                "VID2CONTEXT_RATE_LIMIT": "0",
                "VID2CONTEXT_EMBED_ON_SAVE": "0",
                "HF_HUB_OFFLINE": "1",
            }
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "vid2context", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            ready_by = time.monotonic() + 90
            while time.monotonic() < ready_by:
                try:
                    if httpx.get(url + "/api/v1/health", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            return asyncio.run(_bench(url, Path(tmp) / "laptop", youtube.origin))
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
