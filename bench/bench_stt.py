"""One hour of speech through a hosted Whisper rung: the pipelined decode, encode and requests
against the ideal ``ceil(pieces / concurrency) x latency``.

The audio is talk.wav (espeak-ng speech with pauses, from ``tests/fixtures/media``) looped
to an hour and compressed to a 64 kbit/s MP3, like a download. It goes through the real ladder:
the OpenAI-compatible rung over httpx, ``FfmpegPrep`` (one decode pass with silence detection,
10-minute pieces cut at pauses and handed on while the decode pass still runs, each encoded to
32 kbit/s mono MP3 just before its request) and the chunk runner, against ``tests/fake_whisper``
in a process of its own on 127.0.0.1 (as a remote service would be), answering every request
after a fixed latency (2 s by default) without decoding anything.

Runs, alternating: the decode pass alone (``decode_pieces`` read to its end, nothing encoded or
sent), then the whole transcription with the default plan (``VID2CONTEXT_STT_CONCURRENCY`` 4),
and as one sequential pass (concurrency 1), ``BENCH_STT_ROUNDS`` times (default 1); figures are
medians.

Figures per plan: ``wall_s`` in all; ``first_piece_s`` when the first piece was handed on;
``decode_end_s`` when the decode pass ended; ``transcribe_s``, from the end of the decode pass to
the merged transcript (what the old two-phase design called the transcription phase), and
``beyond_decode_s``, the wall time minus the decode pass alone; each against the target
ceil(pieces / concurrency) x latency (goal: at most 1.5); the peak number of requests in flight;
this process's RSS when the run starts and at its peak during the run (sampled every 50 ms: flat
means no whole-file buffers), and the ffmpeg children's peak RSS. The encoding is CPU work
(about 1.5 CPU-seconds per 10-minute piece), so on a machine with few cores shared with others
the figures move with the load.

``BENCH_STT_SECONDS`` (default 3600) and ``BENCH_STT_LATENCY`` (default 2.0) change the run.
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MEDIA = ROOT / "tests" / "fixtures" / "media"
sys.path.insert(0, str(ROOT))

from vid2context.ctx import Ctx
from vid2context.pipeline import transcribe
from vid2context.providers.audio_local import FfmpegPrep, decode_pieces
from vid2context.providers.speech import AudioInput
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

PAGE = os.sysconf("SC_PAGE_SIZE")


def make_audio(folder: Path, seconds: int) -> Path:
    target = folder / "hour.mp3"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-stream_loop", "-1", "-i", str(MEDIA / "talk.wav"),
         "-t", str(seconds), "-ac", "1", "-b:a", "64k", "-y", str(target)],
        check=True,
    )  # fmt: skip
    return target


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE / 1_048_576


class RssPeak:
    """This process's resident set, sampled every 50 ms in a thread while a run goes on."""

    def __init__(self) -> None:
        self.start = self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


class Timed(FfmpegPrep):
    """``FfmpegPrep`` that notes when the first piece is handed on and when the plan ends (the
    decode pass is over)."""

    def __init__(self) -> None:
        super().__init__()
        self.first_at = 0.0
        self.ended_at = 0.0

    def chunks(self, audio, ctx, *, max_bytes, max_sec):  # type: ignore[no-untyped-def]
        inner = super().chunks(audio, ctx, max_bytes=max_bytes, max_sec=max_sec)
        prep = self

        async def noted(planned):  # type: ignore[no-untyped-def]
            async for chunk in planned:
                if not prep.first_at:
                    prep.first_at = time.perf_counter()
                yield chunk
            prep.ended_at = time.perf_counter()

        class Wrapper:
            async def __aenter__(self):  # type: ignore[no-untyped-def]
                return noted(await inner.__aenter__())

            async def __aexit__(self, *exc):  # type: ignore[no-untyped-def]
                return await inner.__aexit__(*exc)

        return Wrapper()


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


async def decode_alone(audio: Path) -> float:
    """Seconds for the decode pass by itself, its pieces planned and nothing else done."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        pieces = decode_pieces(str(audio), os.path.join(folder, "audio.pcm"), Ctx(timeout=3600), what="bench",
                               max_sec=600.0)  # fmt: skip
        async for _ in pieces:
            pass
        return time.perf_counter() - started


async def one_run(audio: Path, fake: Fake, concurrency: int, decode_s: float) -> dict[str, float | int]:
    settings = load_settings(
        {"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_STT_CONCURRENCY": str(concurrency)}
    )
    runtime = build_runtime(settings, http=httpx.AsyncClient())
    prep = Timed()
    runtime.stt_plan.prep = prep
    fake.stats("/reset")
    rss = RssPeak()
    started = time.perf_counter()
    try:
        transcript = await transcribe(runtime, AudioInput.from_path(str(audio)), ctx=Ctx(timeout=3600))
    finally:
        await runtime.aclose()
        rss.close()
    ended = time.perf_counter()
    stats = fake.stats()
    pieces = stats["answered"]
    target = math.ceil(pieces / concurrency) * fake.latency
    transcription = ended - prep.ended_at
    beyond = ended - started - decode_s
    return {
        "concurrency": concurrency,
        "pieces": pieces,
        "segments": len(transcript.segments),
        "covered_sec": round(transcript.segments[-1].end_sec, 1),
        "wall_s": round(ended - started, 2),
        "decode_alone_s": round(decode_s, 2),
        "first_piece_s": round(prep.first_at - started, 2),
        "decode_end_s": round(prep.ended_at - started, 2),
        "transcribe_s": round(transcription, 2),
        "beyond_decode_s": round(beyond, 2),
        "target_s": target,
        "transcribe_vs_target": round(transcription / target, 2),
        "beyond_decode_vs_target": round(beyond / target, 2),
        "peak_requests_in_flight": stats["peak_in_flight"],
        "largest_piece_bytes": max(stats["sizes"]),
        "rss_start_mb": round(rss.start, 1),
        "rss_peak_mb": round(rss.peak, 1),
    }


def medians(runs: list[dict[str, float | int]]) -> dict[str, float | int]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def run() -> dict[str, object]:
    seconds = int(os.environ.get("BENCH_STT_SECONDS", "3600"))
    latency = float(os.environ.get("BENCH_STT_LATENCY", "2.0"))
    rounds = int(os.environ.get("BENCH_STT_ROUNDS", "1"))
    concurrent: list[dict[str, float | int]] = []
    sequential: list[dict[str, float | int]] = []
    with tempfile.TemporaryDirectory() as folder:
        audio = make_audio(Path(folder), seconds)
        size = audio.stat().st_size
        fake = Fake(latency)
        try:
            for _ in range(rounds):
                concurrent.append(asyncio.run(one_run(audio, fake, 4, asyncio.run(decode_alone(audio)))))
                sequential.append(asyncio.run(one_run(audio, fake, 1, asyncio.run(decode_alone(audio)))))
        finally:
            fake.close()
    four, one = medians(concurrent), medians(sequential)
    return {
        "audio_sec": seconds,
        "audio_bytes": size,
        "latency_s": latency,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "concurrent": four,
        "sequential": one,
        "speedup_wall": round(one["wall_s"] / four["wall_s"], 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_child_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
