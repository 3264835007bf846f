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

Steps 1 and 2 are a pipeline, not two phases (``decode_pieces``): while the decode pass runs, the
PCM's growing size and the silences written so far (``ametadata`` with ``direct``, unbuffered)
are read every ``WATCH_S``, and a piece is handed on as soon as its audio is on disk and no
silence still to come could move its cut (``_settled``). So the first pieces are encoded and sent
while the rest of the file is still being decoded, and the pieces are exactly those ``plan_cuts``
chooses from the finished decode (a test checks it). Nothing is held in memory but the silences.

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
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

from ..chunking import AudioChunk
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from .process import Completed, run_program
from .speech import AudioInput

__all__ = [
    "BITRATE",
    "OVERLAP_SEC",
    "SAFE_DEMUXERS",
    "FfmpegPrep",
    "decode",
    "decode_pieces",
    "plan_cuts",
    "run_ffmpeg",
]

SAMPLE_RATE = 16_000
PCM_BYTES_PER_SEC = SAMPLE_RATE * 2
BITRATE = 32_000
"""MP3 bits a second for a piece: mono speech at 16 kHz loses nothing Whisper hears."""
MP3_BYTES_PER_SEC = BITRATE // 8
OVERLAP_SEC = 3.0
"""How much a piece after a hard cut repeats of the previous one."""
SILENCE_NOISE = "-35dB"
SILENCE_MIN_SEC = 0.35
WATCH_S = 0.2
"""How often a running decode pass is looked at for pieces it has finished."""
SETTLE_SEC = 2.0
"""Decoded audio past a cut before it is final: ``silencedetect`` names a silence's start only
``SILENCE_MIN_SEC`` into it, and the PCM is written behind the filter, so 2 s is ample."""
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


Piece = tuple[float, float, float]
"""(start, end, overlap with the previous piece), in seconds."""


def _limits(max_sec: float, overlap: float, window: float | None) -> tuple[float, float, float]:
    max_sec = max(1.0, max_sec)
    return max_sec, min(overlap, max_sec / 4), min(max_sec * 0.25, 60.0) if window is None else window


def _cut(
    start: float,
    carried: float,
    silences: list[tuple[float, float]],
    max_sec: float,
    overlap: float,
    window: float,
) -> tuple[Piece, float, float]:
    """The piece from ``start`` when the audio goes on past ``start + max_sec``, and where the
    next one starts (with its overlap)."""
    target = start + max_sec
    low = max(start + max_sec / 2, target - window)
    inside = [(b - a, (a + b) / 2) for a, b in silences if low <= (a + b) / 2 <= target]
    if inside:
        cut = max(inside)[1]
        return (round(start, 3), round(cut, 3), carried), cut, 0.0
    return (round(start, 3), round(target, 3), carried), target - overlap, overlap


def plan_cuts(
    duration: float,
    silences: list[tuple[float, float]],
    max_sec: float,
    *,
    overlap: float = OVERLAP_SEC,
    window: float | None = None,
) -> list[Piece]:
    """(start, end, overlap with the previous piece) for each piece of ``duration`` seconds."""
    max_sec, overlap, window = _limits(max_sec, overlap, window)
    pieces: list[Piece] = []
    start, carried = 0.0, 0.0
    while duration - start > max_sec:
        piece, start, carried = _cut(start, carried, silences, max_sec, overlap, window)
        pieces.append(piece)
    pieces.append((round(start, 3), round(duration, 3), carried))
    return pieces


def _settled(start: float, max_sec: float, decoded: float, open_start: float | None) -> bool:
    """Whether the cut after ``start`` is final with ``decoded`` seconds decoded so far: the audio
    goes on past the target, and a silence still open cannot end with its middle before it."""
    target = start + max_sec
    if decoded < target + SETTLE_SEC:
        return False
    return open_start is None or open_start > target or decoded > 2 * target - open_start + SETTLE_SEC


def _early_cut(
    start: float, max_sec: float, window: float, closed: list[tuple[float, float]], decoded: float
) -> float | None:
    """The middle of the first pause, fully decoded, whose middle lies in the cut window of the
    piece from ``start`` (the window ``_cut`` looks in); ``None`` while there is none."""
    target = start + max_sec
    low = max(start + max_sec / 2, target - window)
    for a, b in closed:
        middle = (a + b) / 2
        if low <= middle <= target and b <= decoded:
            return middle
    return None


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


def _decode_args(
    source: str,
    pcm: str,
    marks: str,
    public: bool,
    inputs: list[str] | None = None,
    length: float | None = None,
) -> list[str]:
    """``inputs``: the input's own options and ``-i`` when the caller chose them (a live stream,
    read over HTTP); ``length``: stop after that many seconds of audio."""
    if inputs is None:
        guard = ["-protocol_whitelist", "file", "-format_whitelist", SAFE_DEMUXERS] if public else []
        inputs = [*guard, "-i", f"file:{source}" if public else source]
    return [
        "-loglevel",
        "error",
        *inputs,
        *(["-t", f"{length:.3f}"] if length is not None else []),
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
        f"silencedetect=noise={SILENCE_NOISE}:d={SILENCE_MIN_SEC},ametadata=mode=print:direct=1:file={marks}",
        "-f",
        "s16le",
        "-acodec",
        "pcm_s16le",
        "-y",
        pcm,
    ]


class _Marks:
    """The silences ``ametadata`` has written so far, each look reading on from where the last
    one ended (whole lines only), so a long decode is not read again and again."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.starts: list[float] = []
        self.ends: list[float] = []

    def look(self, pcm: str) -> float:
        """Seconds of PCM written, then the marks written so far (they run ahead of the PCM)."""
        size = os.path.getsize(pcm) if os.path.exists(pcm) else 0
        if os.path.exists(self.path):
            with open(self.path, "rb") as marks:
                marks.seek(self.offset)
                new = marks.read()
            new = new[: new.rfind(b"\n") + 1]
            self.offset += len(new)
            text = new.decode("utf-8", "replace")
            self.starts += [max(0.0, float(m)) for m in _SILENCE_START.findall(text)]
            self.ends += [float(m) for m in _SILENCE_END.findall(text)]
        return size / PCM_BYTES_PER_SEC

    @property
    def closed(self) -> list[tuple[float, float]]:
        return list(zip(self.starts, self.ends, strict=False))

    @property
    def open_start(self) -> float | None:
        """The start of a silence not ended yet."""
        return self.starts[len(self.ends)] if len(self.starts) > len(self.ends) else None

    def silences(self, duration: float) -> list[tuple[float, float]]:
        """Every silence, one still open ending at ``duration`` (the end of the audio)."""
        tail = self.open_start
        return self.closed + ([(tail, duration)] if tail is not None else [])


async def decode(
    source: str, pcm: str, ctx: Ctx, *, what: str, public: bool = False
) -> tuple[float, list[tuple[float, float]]]:
    """The whole decode pass at once: (length in seconds, silences), the same ffmpeg pass and
    silence marks ``decode_pieces`` watches as they grow, for a caller that needs the pauses
    themselves (the local Whisper tests check segment edges against them)."""
    marks = os.path.join(os.path.dirname(pcm), "silences.txt")
    done = await run_ffmpeg(_decode_args(source, pcm, marks, public), ctx, what=what)
    if done.returncode != 0:
        raise _decode_error(done.stderr, what)
    seen = _Marks(marks)
    duration = await asyncio.to_thread(seen.look, pcm)
    return duration, seen.silences(duration)


async def decode_pieces(
    source: str,
    pcm: str,
    ctx: Ctx,
    *,
    what: str,
    max_sec: float,
    public: bool = False,
    inputs: list[str] | None = None,
    length: float | None = None,
    timeout: float = FFMPEG_TIMEOUT_S,
    eager: bool = False,
) -> AsyncIterator[Piece]:
    """Decode ``source`` to raw 16 kHz mono PCM at ``pcm``, yielding ``plan_cuts``'s pieces as
    they are settled: each one's audio is in ``pcm`` when it is yielded.

    ``silencedetect`` marks silences in the frames' metadata and ``ametadata`` writes them, as they
    come, to a file beside the PCM (not stderr, whose tail is all a run keeps). ``public``: the
    input may only be a self-contained media file (see the module docstring). ``inputs``,
    ``length``, ``timeout`` and ``eager`` are for a live stream (``live/ffmpeg_live.py``): its input
    options, the most audio to read, the run's own limit, and cuts made at the first pause that
    ends inside the cut window (``_early_cut``) instead of waiting past the target for the longest
    one, since a listener waits for every second of it. Closing the generator early stops the
    decode pass (its process group).
    """
    marks = os.path.join(os.path.dirname(pcm), "silences.txt")
    seen = _Marks(marks)
    limit, overlap, window = _limits(max_sec, OVERLAP_SEC, None)
    args = _decode_args(source, pcm, marks, public, inputs, length)
    running = asyncio.ensure_future(run_ffmpeg(args, ctx, what=what, timeout=timeout))
    start, carried = 0.0, 0.0
    try:
        while not running.done():
            await asyncio.wait({running}, timeout=WATCH_S)
            if running.done():
                break
            decoded = await asyncio.to_thread(seen.look, pcm)
            while True:
                if _settled(start, limit, decoded, seen.open_start):
                    piece, start, carried = _cut(start, carried, seen.closed, limit, overlap, window)
                elif eager and (early := _early_cut(start, limit, window, seen.closed, decoded)) is not None:
                    piece, start, carried = (round(start, 3), round(early, 3), carried), early, 0.0
                else:
                    break
                yield piece
        done = running.result()
    finally:
        if not running.done():
            running.cancel()  # run_program stops ffmpeg's process group before it ends
        # Waited for (and its outcome retrieved) on every way out; an error of its own is only
        # raised on the way through ``running.result()`` above, never over the reason for leaving.
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running
    if done.returncode != 0:
        raise _decode_error(done.stderr, what)
    duration = await asyncio.to_thread(seen.look, pcm)
    if duration <= 0.0:
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{what} has no audio (0 seconds).",
            hint="Tell the user the file has no sound to transcribe; do not retry.",
        )
    silences = seen.silences(duration)
    while duration - start > limit:
        piece, start, carried = _cut(start, carried, silences, limit, overlap, window)
        yield piece
    yield (round(start, 3), round(duration, 3), carried)


class FfmpegPrep:
    """``AudioPrep`` with ffmpeg: exact, silence-aware pieces of any media file or bytes
    (``public``: self-contained media only)."""

    def __init__(self, *, public: bool = False) -> None:
        self._public = public

    @contextlib.asynccontextmanager
    async def chunks(
        self, audio: AudioInput, ctx: Ctx, *, max_bytes: int, max_sec: float
    ) -> AsyncIterator[AsyncIterator[AudioChunk]]:
        what = audio.describe()
        if audio.data is not None and not audio.data:
            raise VidError(ErrorCode.BAD_REQUEST, f"{what} is empty (0 bytes).", hint="Send audio or video.")
        folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="vid2context-stt-")
        pieces: AsyncGenerator[Piece] | None = None
        try:
            source = await self._source(audio, folder, what)
            pcm = os.path.join(folder, "audio.pcm")
            ctx.progress("stt", None, f"decoding {what}")
            # What fits in max_bytes at the pieces' bitrate, with room for the MP3 frames' overhead.
            fits = max(1.0, max_bytes * 0.95 / MP3_BYTES_PER_SEC)
            pieces = decode_pieces(
                source, pcm, ctx, what=what, max_sec=min(max_sec, fits), public=self._public
            )

            async def planned(cuts: AsyncGenerator[Piece]) -> AsyncIterator[AudioChunk]:
                index = 0
                async for start, end, overlap in cuts:
                    yield AudioChunk(
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
                    index += 1

            yield planned(pieces)
        finally:
            if pieces is not None:
                await pieces.aclose()  # a decode pass still running is stopped
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
