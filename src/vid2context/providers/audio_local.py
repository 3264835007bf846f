"""Long audio cut into pieces a hosted rung accepts, with ffmpeg (local only).

``FfmpegPrep`` is the local runtime's ``chunking.AudioPrep``:

1. One ffmpeg pass decodes the input (any container ffmpeg reads; the first audio stream, video
   ignored) to raw 16 kHz mono PCM in a temporary folder, and runs ``silencedetect`` over it in the
   same pass. The PCM's size gives the exact length (32,000 bytes a second).
2. ``plan_cuts`` chooses the pieces: at most ``max_sec`` each (and what ``max_bytes`` holds at
   32 kbit/s), each cut at the middle of the longest silence in the last stretch before the target;
   with no silence there, a hard cut, and the next piece starts ``OVERLAP_SEC`` earlier (the merge
   deduplicates the overlap, see ``chunking``).
3. ``load`` encodes one piece to 32 kbit/s mono MP3 (about 14 MB an hour, accepted by every
   Whisper service) only when it is about to be sent, so encoding overlaps with the requests for
   other pieces, and reads it. Seeking in raw PCM is exact to the sample, so piece offsets are exact.

The temporary folder is removed when the ``async with`` ends. Every ffmpeg run has the call's
deadline and is killed (its whole process group) on timeout or cancellation.

In public mode the input is a caller's upload or a download, and media containers can name other
files and URLs (an HLS playlist, a concat list, a DASH manifest), which ffmpeg would open
directly: around the filtering proxy, and on this machine's disk. So the decode opens the input
as a ``file:`` only (``-protocol_whitelist file``) with the demuxers of self-contained media
only (``SAFE_DEMUXERS``): a playlist is refused as media ffmpeg cannot read.

Failures::

    ffmpeg not installed ...................... no-provider (install hint)
    0 bytes, not media ffmpeg can read ......... bad-request
    media without an audio stream, 0 s audio ... no-transcript
    a path that is not a readable file ......... not-found
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from ..chunking import AudioChunk
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from .process import Completed, run_program
from .speech import AudioInput

__all__ = ["BITRATE", "OVERLAP_SEC", "SAFE_DEMUXERS", "FfmpegPrep", "decode", "plan_cuts", "run_ffmpeg"]

SAMPLE_RATE = 16_000
PCM_BYTES_PER_SEC = SAMPLE_RATE * 2
BITRATE = 32_000
"""MP3 bits a second for a piece: mono speech at 16 kHz loses nothing Whisper hears."""
MP3_BYTES_PER_SEC = BITRATE // 8
OVERLAP_SEC = 3.0
"""How much a piece after a hard cut repeats of the previous one."""
SILENCE_NOISE = "-35dB"
SILENCE_MIN_SEC = 0.35
FFMPEG_TIMEOUT_S = 3600.0
"""One ffmpeg run's own limit; the call's deadline usually ends it first."""
SAFE_DEMUXERS = (
    "mov,matroska,webm,mp3,wav,w64,flac,ogg,aac,avi,mpegts,mpeg,flv,asf,amr,aiff,caf,wv,ape,au,ac3,eac3,"
    "dts,truehd,tta,mpc,mpc8,nut"
)
"""The containers public mode decodes: audio and video that carry their own samples, none that
name other files or URLs (hls, dash, concat, sdp, image sequences...). ffmpeg's and PyAV's
``format_whitelist``."""

_SILENCE_START = re.compile(r"lavfi\.silence_start=(-?[0-9.]+)")
_SILENCE_END = re.compile(r"lavfi\.silence_end=(-?[0-9.]+)")
_NO_AUDIO = ("matches no streams", "does not contain any stream", "Output file #0 does not contain")


def plan_cuts(
    duration: float,
    silences: list[tuple[float, float]],
    max_sec: float,
    *,
    overlap: float = OVERLAP_SEC,
    window: float | None = None,
) -> list[tuple[float, float, float]]:
    """(start, end, overlap with the previous piece) for each piece of ``duration`` seconds."""
    max_sec = max(1.0, max_sec)
    overlap = min(overlap, max_sec / 4)
    window = min(max_sec * 0.25, 60.0) if window is None else window
    pieces: list[tuple[float, float, float]] = []
    start, carried = 0.0, 0.0
    while duration - start > max_sec:
        target = start + max_sec
        low = max(start + max_sec / 2, target - window)
        inside = [(b - a, (a + b) / 2) for a, b in silences if low <= (a + b) / 2 <= target]
        if inside:
            cut = max(inside)[1]
            pieces.append((round(start, 3), round(cut, 3), carried))
            start, carried = cut, 0.0
        else:
            pieces.append((round(start, 3), round(target, 3), carried))
            start, carried = target - overlap, overlap
    pieces.append((round(start, 3), round(duration, 3), carried))
    return pieces


async def run_ffmpeg(args: list[str], ctx: Ctx, *, what: str, timeout: float = FFMPEG_TIMEOUT_S) -> Completed:
    """``ffmpeg args`` through ``process.run_program``: stopped with its process group on timeout,
    cancellation or the call's deadline."""
    return await run_program(
        ["ffmpeg", "-nostdin", "-hide_banner", "-nostats", *args],
        ctx,
        timeout=timeout,
        what="ffmpeg",
        missing_hint=f"Install ffmpeg (apt-get install ffmpeg, brew install ffmpeg) to prepare {what} for "
        "speech-to-text.",
    )


def _decode_error(stderr: str, what: str) -> VidError:
    if any(marker in stderr for marker in _NO_AUDIO):
        return VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{what} has no audio track, so there is nothing to transcribe.",
            hint="Tell the user the file has no sound to transcribe; do not retry.",
        )
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{what} is not audio or video that ffmpeg can read.",
        hint="Send a media file (mp3, m4a, wav, webm, mp4, ...).",
    )


async def decode(
    source: str, pcm: str, ctx: Ctx, *, what: str, public: bool = False
) -> tuple[float, list[tuple[float, float]]]:
    """Decode ``source`` to raw 16 kHz mono PCM at ``pcm``: (length in seconds, silences).

    ``silencedetect`` marks silences in the frames' metadata and ``ametadata`` writes them to a
    file beside the PCM (not stderr, whose tail is all a run keeps). ``public``: the input may
    only be a self-contained media file (see the module docstring).
    """
    marks = os.path.join(os.path.dirname(pcm), "silences.txt")
    guard = ["-protocol_whitelist", "file", "-format_whitelist", SAFE_DEMUXERS] if public else []
    done = await run_ffmpeg(
        [
            "-loglevel",
            "error",
            *guard,
            "-i",
            f"file:{source}" if public else source,
            "-map",
            "0:a:0",
            "-vn",
            "-sn",
            "-dn",
            "-ac",
            "1",
            "-ar",
            str(SAMPLE_RATE),
            "-af",
            f"silencedetect=noise={SILENCE_NOISE}:d={SILENCE_MIN_SEC},ametadata=mode=print:file={marks}",
            "-f",
            "s16le",
            "-acodec",
            "pcm_s16le",
            "-y",
            pcm,
        ],
        ctx,
        what=what,
    )
    if done.returncode != 0:
        raise _decode_error(done.stderr, what)
    size, text = await asyncio.to_thread(_read_results, pcm, marks)
    duration = size / PCM_BYTES_PER_SEC
    if duration <= 0.0:
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{what} has no audio (0 seconds).",
            hint="Tell the user the file has no sound to transcribe; do not retry.",
        )
    starts = [float(m) for m in _SILENCE_START.findall(text)]
    ends = [float(m) for m in _SILENCE_END.findall(text)]
    silences = [(max(0.0, a), ends[i] if i < len(ends) else duration) for i, a in enumerate(starts)]
    return duration, silences


def _read_results(pcm: str, marks: str) -> tuple[int, str]:
    size = os.path.getsize(pcm) if os.path.exists(pcm) else 0
    text = Path(marks).read_text(encoding="utf-8", errors="replace") if os.path.exists(marks) else ""
    return size, text


class FfmpegPrep:
    """``AudioPrep`` with ffmpeg: exact, silence-aware pieces of any media file or bytes
    (``public``: self-contained media only)."""

    def __init__(self, *, public: bool = False) -> None:
        self._public = public

    @contextlib.asynccontextmanager
    async def chunks(
        self, audio: AudioInput, ctx: Ctx, *, max_bytes: int, max_sec: float
    ) -> AsyncIterator[list[AudioChunk]]:
        what = audio.describe()
        if audio.data is not None and not audio.data:
            raise VidError(ErrorCode.BAD_REQUEST, f"{what} is empty (0 bytes).", hint="Send audio or video.")
        folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="vid2context-stt-")
        try:
            source = await self._source(audio, folder, what)
            pcm = os.path.join(folder, "audio.pcm")
            ctx.progress("stt", None, f"decoding {what}")
            duration, silences = await decode(source, pcm, ctx, what=what, public=self._public)
            # What fits in max_bytes at the pieces' bitrate, with room for the MP3 frames' overhead.
            fits = max(1.0, max_bytes * 0.95 / MP3_BYTES_PER_SEC)
            cuts = plan_cuts(duration, silences, min(max_sec, fits))
            yield [
                AudioChunk(
                    index=index,
                    start_sec=start,
                    end_sec=end,
                    overlap_sec=overlap,
                    audio=AudioInput.from_path(
                        os.path.join(folder, f"piece-{index:04d}.mp3"),
                        mime="audio/mpeg",
                        duration_sec=end - start,
                    ),
                )
                for index, (start, end, overlap) in enumerate(cuts)
            ]
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)

    async def _source(self, audio: AudioInput, folder: str, what: str) -> str:
        if audio.data is not None:
            target = os.path.join(folder, "input")
            await asyncio.to_thread(Path(target).write_bytes, audio.data)
            return target
        path = audio.path or ""
        readable = await asyncio.to_thread(lambda: os.path.isfile(path) and os.access(path, os.R_OK))
        if not readable:
            raise VidError(ErrorCode.NOT_FOUND, f"{what} is not a readable file.", hint="Check the path.")
        if await asyncio.to_thread(os.path.getsize, path) == 0:
            raise VidError(ErrorCode.BAD_REQUEST, f"{what} is empty (0 bytes).", hint="Send audio or video.")
        return path

    async def load(self, chunk: AudioChunk, ctx: Ctx) -> AudioInput:
        target = chunk.audio.path or ""
        pcm = os.path.join(os.path.dirname(target), "audio.pcm")
        length = (chunk.end_sec or 0.0) - chunk.start_sec
        done = await run_ffmpeg(
            [
                "-loglevel",
                "error",
                "-f",
                "s16le",
                "-ar",
                str(SAMPLE_RATE),
                "-ac",
                "1",
                "-ss",
                f"{chunk.start_sec:.3f}",
                "-t",
                f"{length:.3f}",
                "-i",
                pcm,
                "-c:a",
                "libmp3lame",
                "-b:a",
                str(BITRATE),
                "-compression_level",
                "7",
                "-y",
                target,
            ],
            ctx,
            what=f"piece {chunk.index + 1}",
        )
        if done.returncode != 0:
            raise VidError(
                ErrorCode.INTERNAL,
                "Could not encode an audio piece.",
                hint="Tell the user an audio piece could not be encoded (the server's log says why); do not "
                "retry more than once.",
            )
        data = await asyncio.to_thread(Path(target).read_bytes)
        await asyncio.to_thread(os.remove, target)
        return AudioInput(
            kind="bytes",
            data=data,
            filename=f"piece-{chunk.index:04d}.mp3",
            mime="audio/mpeg",
            duration_sec=length,
        )
