"""The Worker's pure-Python cutter (``chunking_portable``) against ffmpeg's stream-copy segmenter.

On the Worker every CPU-millisecond of a request counts against its limit, so the figure that
matters is what cutting long audio costs there. The audio is talk.wav (espeak-ng speech, from
``tests/fixtures/media``) looped to ``BENCH_CUT_SECONDS`` (default 3600) and encoded to MP3 at 32
and 64 kbit/s (16 kHz mono) and to Ogg Opus at 32 kbit/s, and, for WAV, ten minutes of 16 kHz
mono PCM (19 MB). Each is cut
into the pieces a 16 MB rung takes (Workers AI), each at most 10 minutes, by:

- ``python``: ``PortablePrep.chunks`` read to its end, every piece's bytes made (CPU time of this
  process, ``time.process_time``);
- ``ffmpeg``: ``ffmpeg -f segment -segment_time 600 -c copy`` on the same file (CPU time of the
  child, user + system), the reference: the cheapest way to cut it with ffmpeg, nothing re-encoded.

Figures per file: size, pieces, CPU seconds of each (median of ``BENCH_CUT_ROUNDS``, default 3)
and ``ratio`` = python / ffmpeg. CPython's figures; Pyodide, which runs the Worker's Python, is
not measured here.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vid2context.chunking_portable import PortablePrep
from vid2context.ctx import Ctx
from vid2context.providers.speech import AudioInput

TALK = ROOT / "tests" / "fixtures" / "media" / "talk.wav"
CAP = 16 * 1024 * 1024


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def _make(folder: Path, seconds: int) -> dict[str, Path]:
    loops = str(seconds // 24)
    files = {}
    for rate in ("32k", "64k"):
        path = folder / f"talk-{rate}.mp3"
        _ffmpeg("-stream_loop", loops, "-i", str(TALK), "-t", str(seconds), "-ac", "1", "-ar", "16000",
                "-c:a", "libmp3lame", "-b:a", rate, str(path))  # fmt: skip
        files[f"mp3 {rate} {seconds}s"] = path
    opus = folder / "talk.opus.ogg"
    _ffmpeg("-stream_loop", loops, "-i", str(TALK), "-t", str(seconds), "-ac", "1", "-ar", "16000",
            "-c:a", "libopus", "-b:a", "32k", str(opus))  # fmt: skip
    files[f"ogg opus 32k {seconds}s"] = opus
    wav = folder / "talk.wav"
    _ffmpeg("-stream_loop", "25", "-i", str(TALK), "-t", "600", "-ac", "1", "-ar", "16000", str(wav))
    files["wav 600s"] = wav
    return files


async def _python(data: bytes, name: str) -> tuple[float, int]:
    started = time.process_time()
    prep = PortablePrep()
    count = 0
    audio = AudioInput.from_bytes(data, filename=name)
    async with prep.chunks(audio, Ctx(timeout=600), max_bytes=CAP, max_sec=600.0) as planned:
        async for chunk in planned:
            assert chunk.audio.data is not None and len(chunk.audio.data) <= CAP
            count += 1
    return time.process_time() - started, count


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ffmpeg_segments(path: Path, folder: Path) -> float:
    before = _children_cpu()
    out = folder / f"seg-%03d{path.suffix}"
    _ffmpeg("-i", str(path), "-f", "segment", "-segment_time", "600", "-c", "copy", str(out))
    return _children_cpu() - before


def run() -> dict[str, object]:
    seconds = int(os.environ.get("BENCH_CUT_SECONDS", "3600"))
    rounds = int(os.environ.get("BENCH_CUT_ROUNDS", "3"))
    figures: dict[str, object] = {"load_average_1m_before": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, path in _make(folder, seconds).items():
            data = path.read_bytes()
            python, ffmpeg, pieces = [], [], 0
            for _ in range(rounds):
                spent, pieces = asyncio.run(_python(data, path.name))
                python.append(spent)
                ffmpeg.append(_ffmpeg_segments(path, folder))
            py, ff = statistics.median(python), statistics.median(ffmpeg)
            figures[label] = {
                "mb": round(len(data) / 1_048_576, 1),
                "pieces": pieces,
                "python_cpu_s": round(py, 3),
                "ffmpeg_copy_cpu_s": round(ff, 3),
                "ratio": round(py / ff, 2) if ff else None,
            }
    figures["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    return figures
