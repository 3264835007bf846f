"""MCP: tool calls per second, and what an agent reads to answer a question about a 2-hour video.

A two-hour talk (a segment every ~4 s, ~150 words a minute, a chapter every ten minutes) is saved
to a fresh SQLite library first, so every call is answered from the library, as it is once a video
has been read. Figures:

- ``get_outline`` calls per second, one after another as an agent makes them, through the SDK's
  own clients: over stdio (``vid2context mcp`` as a subprocess) and over Streamable HTTP
  (``vid2context serve``, granian, on loopback), in protocol 2026-07-28 and 2025-11-25. ``repeat``
  asks the same question each time (a finished run answers again for 15 minutes); ``fresh`` varies
  the URL so every call reads the video from the library and builds its outline. The SDK client
  checks every structured result against the tool's outputSchema (about 5 ms for this outline);
- the same over raw JSON-RPC POSTs (no client-side checks), one at a time and 16 at once: what
  the server itself sustains;
- bytes and estimated tokens of the answers an agent reads to answer a question about that
  video: the outline plus one chapter (``get_section``), against the whole transcript
  (``get_transcript``), in text format.

``BENCH_MCP_CALLS`` sets the calls per transport (default 300).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import httpx
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from vid2context.models import Chapter, Segment, Transcript, VideoContext, VideoMetadata
from vid2context.storage.sqlite import open_local_stores
from vid2context.tokens import estimate_tokens

NATIVE = "TwoHourTalk"
CALLS = int(os.environ.get("BENCH_MCP_CALLS", "300"))
FRESH = max(1, CALLS // 3)
_SPEECH = (
    "the battery engine model year price problem warranty owner review test drive mileage dealer service "
    "transmission recall cost repair fuel economy hybrid system inverter brake noise cabin seat screen update "
    "and so we then but really actually pretty much that this which what when you I it is was are"
)


def two_hour_talk(seed: int = 11) -> VideoContext:
    rng = random.Random(seed)
    vocabulary = _SPEECH.split()
    segments, t = [], 0.0
    while t < 7200:
        length = rng.uniform(3, 5)
        words = " ".join(rng.choice(vocabulary) for _ in range(round(length * 2.5)))
        text = words.capitalize() + ("." if rng.random() < 0.4 else "")
        segments.append(Segment(start_sec=round(t, 2), end_sec=round(t + length, 2), text=text))
        t += length
    return VideoContext(
        id=f"youtube:{NATIVE}",
        metadata=VideoMetadata(
            id=NATIVE,
            platform="youtube",
            title="Two hours on buying a used hybrid",
            url=f"https://www.youtube.com/watch?v={NATIVE}",
            channel="Bench Channel",
            duration_sec=7200,
            chapters=[Chapter(title=f"Chapter {i + 1}", start_sec=i * 600.0) for i in range(12)],
        ),
        transcript=Transcript(
            language="en", origin="captions-manual", timing="caption", producer="bench", segments=segments
        ),
        fetched_at="2026-11-01T00:00:00Z",
    )


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(
        VID2CONTEXT_HOME=str(home),
        VID2CONTEXT_ACCESS_LOG="0",
        VID2CONTEXT_MCP_RATE_LIMIT="0",
        VID2CONTEXT_YOUTUBE_ORIGIN="http://127.0.0.1:9",
    )  # nothing is fetched: all from the library
    return env


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def _rate(client: Client) -> dict[str, Any]:
    for _ in range(10):  # warm up
        await client.call_tool("get_outline", {"url": NATIVE})
    figures: dict[str, Any] = {}
    for kind, count in (("repeat", CALLS), ("fresh", FRESH)):
        started = time.perf_counter()
        for i in range(count):
            url = (
                NATIVE
                if kind == "repeat"
                else f"https://www.youtube.com/watch?v={NATIVE}&n={time.time_ns()}{i}"
            )
            result = await client.call_tool("get_outline", {"url": url})
            assert not result.is_error, _text(result)
        seconds = time.perf_counter() - started
        figures[kind] = {
            "calls_per_s": round(count / seconds, 1),
            "ms_per_call": round(seconds / count * 1000, 2),
        }
    return figures


async def _raw(origin: str, concurrency: int) -> dict[str, float]:
    """tools/call as plain JSON-RPC POSTs (2025-11-25, stateless), ``concurrency`` at a time."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_outline", "arguments": {"url": NATIVE}},
    }
    async with httpx.AsyncClient(base_url=origin, headers=headers, timeout=60) as http:
        for _ in range(10):
            (await http.post("/mcp", json=body)).raise_for_status()
        total = CALLS * 2
        left = iter(range(total))

        async def worker() -> None:
            for _ in left:
                response = await http.post("/mcp", json=body)
                assert response.status_code == 200 and "error" not in response.json()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return {
        "calls_per_s": round(total / seconds, 1),
        "ms_per_call": round(seconds / total * 1000 * concurrency, 2),
    }


async def _stdio(home: Path, mode: str, errors: TextIO) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vid2context", "mcp"], env=_env(home))
    async with Client(stdio_client(params, errlog=errors), mode=mode) as client:
        return await _rate(client)


async def _http(origin: str, mode: str) -> dict[str, Any]:
    async with Client(
        streamable_http_client(origin + "/mcp", http_client=httpx2.AsyncClient(timeout=60)), mode=mode
    ) as client:
        return await _rate(client)


async def _reading(home: Path, errors: TextIO) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vid2context", "mcp"], env=_env(home))
    async with Client(stdio_client(params, errlog=errors)) as client:
        outline = _text(await client.call_tool("get_outline", {"url": NATIVE}))
        section = _text(await client.call_tool("get_section", {"url": NATIVE, "chapter": 7}))
        whole = _text(await client.call_tool("get_transcript", {"url": NATIVE}))
    targeted = outline + section

    def size(text: str) -> dict[str, int]:
        return {"bytes": len(text.encode()), "tokens": estimate_tokens(text)}

    return {
        "video": "2 hours, 12 chapters",
        "outline": size(outline),
        "one_section": size(section),
        "outline_plus_section": size(targeted),
        "whole_transcript": size(whole),
        "saving": f"{estimate_tokens(whole) / estimate_tokens(targeted):.1f}x fewer tokens",
    }


def _serve(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "vid2context", "serve", "--port", str(port)],
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    origin = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(origin + "/api/v1/health", timeout=1).status_code == 200:
                return process, origin
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not start")


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as errors:
        home = Path(tmp)

        async def save() -> None:
            stores = open_local_stores(home)
            await stores.storage.put_context(two_hour_talk())
            await stores.storage.close()

        asyncio.run(save())
        figures: dict[str, Any] = {"calls": CALLS}
        figures["stdio_2026-07-28"] = asyncio.run(_stdio(home, "auto", errors))
        figures["stdio_2025-11-25"] = asyncio.run(_stdio(home, "legacy", errors))
        process, origin = _serve(home)
        try:
            figures["http_2026-07-28"] = asyncio.run(_http(origin, "auto"))
            figures["http_2025-11-25"] = asyncio.run(_http(origin, "legacy"))
            figures["http_raw_jsonrpc_1_at_a_time"] = asyncio.run(_raw(origin, 1))
            figures["http_raw_jsonrpc_16_at_once"] = asyncio.run(_raw(origin, 16))
        finally:
            process.terminate()
            process.wait(timeout=30)
        figures["reading"] = asyncio.run(_reading(home, errors))
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
