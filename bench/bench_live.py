"""Live latency: from a word spoken on a live HLS stream to its ``segment`` event, median and p95.

A real stream on 127.0.0.1 (``tests/live_stream.py``): ``ffmpeg -re`` writes one-second HLS
segments of tone words in real time, so word ``w`` is spoken at ``started_at + w.end`` (its
end: the word has been said). ``GET /api/v1/live`` runs in the real app (read chunk by chunk
through ``tests/sse.SseClient``), with a real ffmpeg reading the stream, pieces of about 10 s cut
in pauses, and the OpenAI-compatible rung against ``tests/fake_whisper`` (tones engine, answering
after ``BENCH_LIVE_LATENCY`` seconds, default 0.5, as a hosted service would).

Figures: ``latency_s`` (median, p95, max over every word) from the word's end to the arrival of
the segment event holding it; the reference, measured in the same run, is ``floor_s``: how long
after the word its piece's audio ended (a word early in a piece waits for the rest of the piece,
by design), and ``overhead_s`` = latency - floor per word (HLS segmenting, the settle margin,
encoding, the request): what the pipeline adds beyond the piece length. ``cpu_s`` is this
process's CPU time over the run, ``load_avg`` the 1-minute load average at the start and end.

``BENCH_LIVE_SENTENCES`` (default 15, three words each, about 3 s a sentence) sets the length.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_whisper import FakeWhisper, Word
from tests.live_stream import LiveHls, tone_words
from tests.sse import SseClient, parse

from vid2context.api import create_app
from vid2context.live.ffmpeg_live import FfmpegLive
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "p95": round(_p95(values), 3),
        "max": round(max(values), 3),
    }


async def _watch(fake: FakeWhisper, live: LiveHls) -> list[tuple[float, dict[str, Any]]]:
    environ = {"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_STT_KEY": "bench"}
    runtime = build_runtime(load_settings(environ), http=httpx.AsyncClient())
    runtime.stt_plan.prep = FfmpegPrep()
    runtime.live = FfmpegLive(runtime.http)
    events: list[tuple[float, dict[str, Any]]] = []
    try:
        app = create_app(runtime)
        async with SseClient(app, f"/api/v1/live?url={quote(live.url)}&maxMinutes=10") as sse:
            while (block := await sse.block()) is not None:
                if not block.startswith(":"):
                    events.append((time.monotonic(), parse(block)))
    finally:
        await runtime.aclose()
    return events


def _latencies(
    events: list[tuple[float, dict[str, Any]]], words: list[Word], started_at: float
) -> dict[str, Any]:
    by_text = {w.text: w for w in words}
    segments = [(at, e["data"]) for at, e in events if e["event"] == "segment"]
    pieces = [
        e["data"]["heardSec"] for _, e in events if e["event"] == "status" and e["data"]["state"] == "heard"
    ]
    first = by_text[segments[0][1]["text"].split()[0].strip(".,")]
    offset = segments[0][1]["startSec"] - first.start  # stream time of audio time 0
    latency, floor = [], []
    heard = 0
    for at, data in segments:
        for token in data["text"].split():
            word = by_text[token.strip(".,")]
            heard += 1
            latency.append(at - (started_at + word.end))
            piece_end = next((end for end in pieces if end >= word.end + offset - 1e-3), pieces[-1])
            floor.append(piece_end - offset - word.end)
    overhead = [a - b for a, b in zip(latency, floor, strict=True)]
    return {
        "words_spoken": len(words),
        "words_heard": heard,
        "pieces": len(pieces),
        "latency_s": _summary(latency),
        "floor_s": _summary(floor),
        "overhead_s": _summary(overhead),
        "ended": events[-1][1]["event"],
    }


def run() -> dict[str, Any]:
    sentences = int(os.environ.get("BENCH_LIVE_SENTENCES", "15"))
    service = float(os.environ.get("BENCH_LIVE_LATENCY", "0.5"))
    load_before = os.getloadavg()[0]
    cpu = time.process_time()
    with tempfile.TemporaryDirectory(prefix="bench-live-") as folder:
        base = Path(folder)
        wav = base / "tones.wav"
        words = tone_words(wav, sentences)
        (base / "hls").mkdir()
        with FakeWhisper(key=None, latency=service) as fake, LiveHls(base / "hls", wav) as live:
            live.wait_started()
            events = asyncio.run(_watch(fake, live))
            started_at = live.started_at
    figures = _latencies(events, words, started_at)
    figures.update(
        {
            "service_latency_s": service,
            "stream_s": round(words[-1].end + 0.5, 1),
            "cpu_s": round(time.process_time() - cpu, 2),
            "load_avg": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
            "cores": os.cpu_count(),
        }
    )
    return figures
