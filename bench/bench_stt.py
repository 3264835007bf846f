"""One hour of speech through a hosted Whisper rung: chunking and concurrency against one
sequential pass.

The audio is talk.wav (espeak-ng speech with pauses, from ``tests/fixtures/media``) looped
to an hour and compressed to a 64 kbit/s MP3, like a download. It goes through the real ladder:
the OpenAI-compatible rung over httpx, ``FfmpegPrep`` (decode, silence detection, 10-minute pieces
cut at pauses, each encoded to 32 kbit/s mono MP3) and the chunk runner, against
``tests/fake_whisper`` in a process of its own on 127.0.0.1 (as a remote service would be),
answering every request after a fixed latency (2 s by default) without decoding anything.

Two ways, each with the default plan (``VID2CONTEXT_STT_CONCURRENCY`` 4) and as one sequential
pass (the same pieces, concurrency 1):

- ``pipelined``: as the ladder runs, each piece encoded just before a request slot frees up (two
  encodes at a time), so encoding overlaps the requests;
- ``requests_only``: every piece encoded before the first request, so the transcription phase is
  the requests alone.

Figures: wall seconds in all, split into preparation (the decode pass, plus the encoding for
``requests_only``) and transcription (from the planned pieces to the merged transcript); the
target ceil(pieces / concurrency) x latency and the transcription phase's ratio to it (goal: at
most 1.5); the peak number of requests in flight; peak RSS of this process and of the ffmpeg
children. The encoding is CPU work (about 1.5 CPU-seconds per 10-minute piece), so on a machine
with few cores the pipelined figures are bound by it rather than by the service's latency.

``BENCH_STT_SECONDS`` (default 3600) and ``BENCH_STT_LATENCY`` (default 2.0) change the run.
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec

ROOT = Path(__file__).resolve().parents[1]
MEDIA = ROOT / "tests" / "fixtures" / "media"
sys.path.insert(0, str(ROOT))

from vid2context.ctx import Ctx
from vid2context.pipeline import transcribe
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.providers.speech import AudioInput
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings


def make_audio(folder: Path, seconds: int) -> Path:
    target = folder / "hour.mp3"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-stream_loop", "-1", "-i", str(MEDIA / "talk.wav"),
         "-t", str(seconds), "-ac", "1", "-b:a", "64k", "-y", str(target)],
        check=True,
    )  # fmt: skip
    return target


class Timed(FfmpegPrep):
    """``FfmpegPrep`` that notes when the pieces are planned (the decode pass is over); with
    ``premade`` it also encodes every piece before the first request, so the transcription phase
    is requests only."""

    def __init__(self, *, premade: bool = False) -> None:
        super().__init__()
        self.premade = premade
        self.ready_at = 0.0

    def chunks(self, audio, ctx, *, max_bytes, max_sec):  # type: ignore[no-untyped-def]
        inner = super().chunks(audio, ctx, max_bytes=max_bytes, max_sec=max_sec)
        prep = self

        class Wrapper:
            async def __aenter__(self):  # type: ignore[no-untyped-def]
                chunks = await inner.__aenter__()
                if prep.premade:
                    gate = asyncio.Semaphore(os.cpu_count() or 2)

                    async def make(chunk):  # type: ignore[no-untyped-def]
                        async with gate:
                            return msgspec.structs.replace(
                                chunk, audio=await FfmpegPrep.load(prep, chunk, ctx)
                            )

                    chunks = list(await asyncio.gather(*(make(c) for c in chunks)))
                prep.ready_at = time.perf_counter()
                return chunks

            async def __aexit__(self, *exc):  # type: ignore[no-untyped-def]
                return await inner.__aexit__(*exc)

        return Wrapper()

    async def load(self, chunk, ctx):  # type: ignore[no-untyped-def]
        if chunk.audio.data is not None:
            return chunk.audio
        return await super().load(chunk, ctx)


class Fake:
    """The fake Whisper service in a process of its own, as a remote service would be."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_whisper", str(latency), "length"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def stats(self, path: str = "/stats") -> dict:
        return httpx.get(self.url + path).json()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


async def one_run(audio: Path, fake: Fake, concurrency: int, *, premade: bool) -> dict[str, float | int]:
    settings = load_settings(
        {"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_STT_CONCURRENCY": str(concurrency)}
    )
    runtime = build_runtime(settings, http=httpx.AsyncClient())
    prep = Timed(premade=premade)
    runtime.stt_plan.prep = prep
    fake.stats("/reset")
    started = time.perf_counter()
    try:
        transcript = await transcribe(runtime, AudioInput.from_path(str(audio)), ctx=Ctx(timeout=3600))
    finally:
        await runtime.aclose()
    ended = time.perf_counter()
    stats = fake.stats()
    pieces = stats["answered"]
    target = math.ceil(pieces / concurrency) * fake.latency
    transcription = ended - prep.ready_at
    return {
        "concurrency": concurrency,
        "pieces": pieces,
        "segments": len(transcript.segments),
        "covered_sec": round(transcript.segments[-1].end_sec, 1),
        "wall_s": round(ended - started, 2),
        "prepare_s": round(prep.ready_at - started, 2),
        "transcribe_s": round(transcription, 2),
        "target_s": target,
        "transcribe_vs_target": round(transcription / target, 2),
        "peak_requests_in_flight": stats["peak_in_flight"],
        "largest_piece_bytes": max(stats["sizes"]),
    }


def compare(audio: Path, fake: Fake, *, premade: bool) -> dict[str, object]:
    concurrent = asyncio.run(one_run(audio, fake, 4, premade=premade))
    sequential = asyncio.run(one_run(audio, fake, 1, premade=premade))
    return {
        "concurrent": concurrent,
        "sequential": sequential,
        "speedup_wall": round(sequential["wall_s"] / concurrent["wall_s"], 2),
        "speedup_transcribe": round(sequential["transcribe_s"] / concurrent["transcribe_s"], 2),
    }


def run() -> dict[str, object]:
    seconds = int(os.environ.get("BENCH_STT_SECONDS", "3600"))
    latency = float(os.environ.get("BENCH_STT_LATENCY", "2.0"))
    with tempfile.TemporaryDirectory() as folder:
        audio = make_audio(Path(folder), seconds)
        size = audio.stat().st_size
        fake = Fake(latency)
        try:
            # As the ladder runs: each piece encoded when a request slot is near.
            pipelined = compare(audio, fake, premade=False)
            # Every piece encoded first: the transcription phase is the requests alone.
            requests_only = compare(audio, fake, premade=True)
        finally:
            fake.close()
    return {
        "audio_sec": seconds,
        "audio_bytes": size,
        "latency_s": latency,
        "cpus": os.cpu_count(),
        "pipelined": pipelined,
        "requests_only": requests_only,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_child_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
