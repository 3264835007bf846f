"""The portable ``chunking.AudioPrep``: long WAV, MP3 and Ogg cut in pure Python, where no ffmpeg is.

On the Worker (and anywhere ffmpeg is missing) audio cannot be decoded, but the containers most
speech arrives in can be cut without decoding: WAV on sample frames (``audio_wav``), MP3 on frame
boundaries (``audio_mp3``), Ogg Opus and Vorbis on page boundaries (``audio_ogg``). ``PortablePrep`` cuts them into pieces of at most ``max_bytes``
and ``max_sec`` each, so ``chunking.transcribe_audio`` sends them concurrently and merges them
as it does the local runtime's ffmpeg pieces. Offsets come from the container itself (frames
over the sample rate, Ogg granule positions), so every segment lands at its absolute time.

Cuts are hard (there is no decoded audio to find silences in): every piece after the first starts
``OVERLAP_SEC`` before the previous one ends, so a word cut in two is heard whole by one of them,
and ``chunking.merge`` removes what both heard. The overlap also covers an MP3 piece's first
frames, which cannot be decoded when they borrow from the bit reservoir of frames left behind.

Audio that fits both limits is sent whole, as it is, whatever its container. Audio over
``max_bytes`` in another container is refused::

    WAV, MP3 or Ogg Opus/Vorbis over the limits ........ cut into pieces
    over the cap, says WAV, MP3 or Ogg, cannot be read .. bad-request (what is wrong with it)
    Ogg FLAC/Speex/Theora, several Ogg streams ......... too-large (cannot be cut here)
    MP4/M4A, WebM/Matroska, FLAC, anything else ........ too-large (cannot be cut here)
    a file path, 0 bytes ............................... as chunking.PassthroughPrep
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from .audio_mp3 import Mp3Error, Mp3Layout, has_id3, read_mp3
from .audio_ogg import OggError, OggLayout, UnsupportedOgg, is_ogg, read_ogg
from .audio_wav import WavError, WavLayout, is_wav, read_wav, wav_piece
from .chunking import AudioChunk, PassthroughPrep, too_large
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .providers.speech import AudioInput

__all__ = ["OVERLAP_SEC", "Cutting", "Place", "PortablePrep", "cutting", "mp3_cuts", "ogg_cuts", "wav_cuts"]

OVERLAP_SEC = 3.0
"""How much of the previous piece each piece repeats (at most a quarter of a piece), as the
local runtime's hard cuts do (``providers/audio_local.OVERLAP_SEC``)."""

_SNIFF_BYTES = 65536
"""How far into unnamed bytes an MPEG frame chain is looked for before they are called unknown."""

_NOT_CUTTABLE = (
    (b"OggS", 0, "Ogg"),
    (b"fLaC", 0, "FLAC"),
    (b"\x1a\x45\xdf\xa3", 0, "WebM/Matroska"),
    (b"ftyp", 4, "MP4/M4A"),
)


class _NoRoom(ValueError):
    """The cap holds not even one frame (or sample frame) with its piece's header."""


def _named(data: bytes) -> str | None:
    """The container of bytes this module knows cannot be cut here, by its signature."""
    for magic, at, name in _NOT_CUTTABLE:
        if data[at : at + len(magic)] == magic:
            return name
    return None


def _cuts(
    count: int, unit_sec: float, fits: int, max_sec: float, overlap_sec: float
) -> Iterator[tuple[int, int, int]]:
    """(first unit, end unit, units overlapping the previous piece) for fixed-size units."""
    per_piece = max(1, min(fits, int(max_sec / unit_sec)))
    overlap = min(int(overlap_sec / unit_sec), per_piece // 4)
    first, carried = 0, 0
    while True:
        end = min(count, first + per_piece)
        yield first, end, carried
        if end >= count:
            return
        first, carried = end - overlap, overlap


def wav_cuts(
    layout: WavLayout, *, max_bytes: int, max_sec: float, overlap_sec: float = OVERLAP_SEC
) -> list[tuple[int, int, int]]:
    """The pieces of a WAV as (first frame, end frame, frames of overlap)."""
    fits = (max_bytes - layout.header_bytes) // layout.block_align
    if fits < 1:
        raise _NoRoom("max_bytes holds no sample frame")
    return list(_cuts(layout.frames, 1 / layout.sample_rate, fits, max_sec, overlap_sec))


def mp3_cuts(
    layout: Mp3Layout, *, max_bytes: int, max_sec: float, overlap_sec: float = OVERLAP_SEC
) -> list[tuple[int, int, int]]:
    """The pieces of an MP3 as (first frame, end frame, frames of overlap): as many frames as
    ``max_sec`` allows and their bytes fit ``max_bytes``."""
    sizes = [0, *itertools.accumulate(layout.lengths)]
    by_time = max(1, int(max_sec / layout.frame_sec))
    pieces: list[tuple[int, int, int]] = []
    first, carried = 0, 0
    while True:
        by_bytes = bisect.bisect_right(sizes, sizes[first] + max_bytes) - 1  # the last end that fits
        end = min(layout.frames, first + by_time, by_bytes)
        if end <= first:
            raise _NoRoom("max_bytes holds no MPEG frame")
        pieces.append((first, end, carried))
        if end >= layout.frames:
            return pieces
        overlap = min(int(overlap_sec / layout.frame_sec), (end - first) // 4)
        first, carried = end - overlap, overlap


class PortablePrep:
    """``AudioPrep`` without ffmpeg: WAV, MP3 and Ogg cut in memory; other audio whole or refused."""

    def __init__(self) -> None:
        self._whole = PassthroughPrep()

    @asynccontextmanager
    async def chunks(
        self, audio: AudioInput, ctx: Ctx, *, max_bytes: int, max_sec: float
    ) -> AsyncIterator[AsyncIterator[AudioChunk]]:
        # A path or 0 bytes (the passthrough says why), or audio to send whole.
        planned = _plan(audio, audio.data, max_bytes=max_bytes, max_sec=max_sec) if audio.data else None
        if planned is None:
            async with self._whole.chunks(audio, ctx, max_bytes=max_bytes, max_sec=max_sec) as one:
                yield one
            return
        yield planned

    async def load(self, chunk: AudioChunk, ctx: Ctx) -> AudioInput:
        del ctx
        return chunk.audio


@dataclass(frozen=True, slots=True)
class Place:
    """Where one piece sits: its frames, its bytes in the whole file, its times (seconds)."""

    index: int
    first: int
    """The first frame (MP3) or sample frame (WAV) of the piece."""
    end: int
    byte_start: int
    byte_end: int
    """The piece's frames are ``data[byte_start:byte_end]`` of the whole (MP3: minus any junk
    between frames)."""
    start_sec: float
    end_sec: float
    overlap_sec: float


@dataclass(frozen=True, slots=True)
class Cutting:
    """How one audio is cut: the same bytes and limits always give the same cuts, so a piece can
    be planned in one place and made in another (``job_pieces``: one queue message per piece)."""

    container: str
    """``wav`` or ``mp3``."""
    cuts: list[tuple[int, int, int]]
    time_of: Callable[[int], float]
    """When unit (frame, sample frame, page) ``i`` starts, in seconds."""
    duration_sec: float
    make: Callable[[int, int], bytes]
    span: Callable[[int, int], tuple[int, int]]

    def place(self, index: int) -> Place:
        first, end, carried = self.cuts[index]
        byte_start, byte_end = self.span(first, end)
        last = index == len(self.cuts) - 1
        return Place(
            index=index,
            first=first,
            end=end,
            byte_start=byte_start,
            byte_end=byte_end,
            start_sec=round(self.time_of(first), 6),
            end_sec=round(self.duration_sec if last else self.time_of(end), 6),
            overlap_sec=round(self.time_of(first + carried) - self.time_of(first), 6),
        )

    def chunk(self, audio: AudioInput, index: int) -> AudioChunk:
        """Piece ``index``, made now."""
        place = self.place(index)
        stem = audio.filename.rsplit(".", 1)[0] or "audio"
        mime = {"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg"}[self.container]
        return AudioChunk(
            index=index,
            start_sec=place.start_sec,
            end_sec=place.end_sec,
            overlap_sec=place.overlap_sec,
            audio=AudioInput(
                kind="bytes",
                data=self.make(place.first, place.end),
                filename=f"{stem}-{index + 1:03d}.{self.container}",
                mime=mime,
                duration_sec=self.time_of(place.end) - self.time_of(place.first),
            ),
        )


def _plan(
    audio: AudioInput, data: bytes, *, max_bytes: int, max_sec: float
) -> AsyncIterator[AudioChunk] | None:
    cut = cutting(audio, data, max_bytes=max_bytes, max_sec=max_sec)
    return None if cut is None else _pieces(audio, cut)


def cutting(audio: AudioInput, data: bytes, *, max_bytes: int, max_sec: float) -> Cutting | None:
    """The pieces of a cuttable container over the limits; ``None`` when the audio is to be sent
    whole (it fits, or it cannot be cut and fits); raises when it cannot be cut and does not fit."""
    over = len(data) > max_bytes
    if is_ogg(data):
        return _ogg(audio, data, over, max_bytes=max_bytes, max_sec=max_sec)
    try:
        if is_wav(data):
            wav = read_wav(data)
            if not over and wav.duration_sec <= max_sec:
                return None
            cuts = wav_cuts(wav, max_bytes=max_bytes, max_sec=max_sec)
            at, align, rate = wav.data_start, wav.block_align, wav.sample_rate
            return Cutting("wav", cuts, lambda i: i / rate, wav.duration_sec,
                           lambda first, end: wav_piece(data, wav, first, end),
                           lambda first, end: (at + first * align, at + end * align))  # fmt: skip
        if _named(data) is None and (_says_mp3(audio) or has_id3(data) or _starts_mp3(data)):
            mp3 = _read_mp3(audio, data, max_bytes if over else None)
            if mp3 is None:
                return None
            if not over and mp3.duration_sec <= max_sec:
                return None
            cuts = mp3_cuts(mp3, max_bytes=max_bytes, max_sec=max_sec)
            bounds, lengths, frame_sec = mp3.bounds, mp3.lengths, mp3.frame_sec
            return Cutting("mp3", cuts, lambda i: i * frame_sec, mp3.duration_sec,
                           lambda first, end: mp3.piece(data, first, end),
                           lambda first, end: (bounds[first], bounds[end - 1] + lengths[end - 1]))  # fmt: skip
    except WavError as error:
        if not over:
            return None  # sent whole: the service may still read it
        raise _broken(audio, "WAV", str(error)) from None
    except _NoRoom:
        raise too_large(audio, max_bytes, "a single frame of it does not fit") from None
    if over:
        kind = _named(data)
        reason = (
            f"{kind} cannot be cut here" if kind else "only WAV, MP3 and Ogg (Opus, Vorbis) can be cut here"
        )
        raise too_large(audio, max_bytes, reason)
    return None


def _ogg(audio: AudioInput, data: bytes, over: bool, *, max_bytes: int, max_sec: float) -> Cutting | None:
    try:
        ogg = read_ogg(data)
    except UnsupportedOgg as error:
        if over:
            raise too_large(audio, max_bytes, f"{error} cannot be cut here") from None
        return None
    except OggError as error:
        if not over:
            return None  # sent whole: the service may still read it
        raise _broken(audio, "Ogg", str(error)) from None
    if not over and ogg.duration_sec <= max_sec:
        return None
    try:
        cuts = ogg_cuts(ogg, max_bytes=max_bytes, max_sec=max_sec)
    except _NoRoom:
        raise too_large(audio, max_bytes, "a single page of it does not fit") from None
    starts, ends = ogg.starts, ogg.ends
    return Cutting("ogg", cuts, ogg.time_of, ogg.duration_sec,
                   lambda first, end: ogg.piece(data, first, end),
                   lambda first, end: (starts[first], ends[end - 1]))  # fmt: skip


def ogg_cuts(
    layout: OggLayout, *, max_bytes: int, max_sec: float, overlap_sec: float = OVERLAP_SEC
) -> list[tuple[int, int, int]]:
    """The pieces of an Ogg stream as (first page, end page, pages of overlap): as many pages as
    ``max_sec`` allows and their bytes, after the header pages, fit ``max_bytes``; no piece
    starts on a page that continues a packet."""
    room = max_bytes - len(layout.headers)
    pages, time_of = layout.pages, layout.time_of
    pieces: list[tuple[int, int, int]] = []
    first, carried = 0, 0
    while True:
        begin, start = layout.starts[first], time_of(first)
        end = first + 1
        while end < pages and layout.ends[end] - begin <= room and time_of(end + 1) - start <= max_sec:
            end += 1
        while end < pages and layout.continued[end] and end > first + 1:
            end -= 1  # the next piece cannot start inside a packet
        if layout.ends[end - 1] - begin > room or (end < pages and layout.continued[end]):
            raise _NoRoom("max_bytes holds no run of whole Ogg packets")
        pieces.append((first, end, carried))
        if end >= pages:
            return pieces
        target = time_of(end) - min(overlap_sec, (time_of(end) - start) / 4)
        again = end
        while again - 1 > first and time_of(again - 1) >= target:
            again -= 1
        while again < end and layout.continued[again]:
            again += 1
        first, carried = again, end - again


def _read_mp3(audio: AudioInput, data: bytes, cap: int | None) -> Mp3Layout | None:
    """The frames; or, when they cannot be read, ``None`` (it fits: sent whole) or the error it
    deserves over the cap ``cap``: ``bad-request`` when its name or type says MP3, else
    ``too-large`` (only a guess said MP3)."""
    try:
        return read_mp3(data)
    except Mp3Error as error:
        if _says_mp3(audio) and cap is not None:
            raise _broken(audio, "MP3", str(error)) from None
        if cap is not None:
            raise too_large(audio, cap, "only WAV, MP3 and Ogg (Opus, Vorbis) can be cut here") from None
        return None


def _says_mp3(audio: AudioInput) -> bool:
    return audio.filename.lower().endswith(".mp3") or audio.mime.lower() in ("audio/mpeg", "audio/mp3")


def _starts_mp3(data: bytes) -> bool:
    """Unnamed bytes whose first 64 KiB hold a validated chain of MPEG frames."""
    try:
        read_mp3(data[:_SNIFF_BYTES])
    except Mp3Error:
        return False
    return True


def _broken(audio: AudioInput, kind: str, reason: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{audio.describe()} is {'an' if kind in ('MP3', 'Ogg') else 'a'} {kind} file that cannot be read: {reason}.",
        hint=f"Send a whole, playable {kind} file (export it again), or tell the user the local runtime "
        "reads damaged media with ffmpeg (`vid2context get FILE`).",
    )


async def _pieces(audio: AudioInput, cut: Cutting) -> AsyncIterator[AudioChunk]:
    """Each piece's bytes made only as it is taken, so at most the window's pieces are in memory
    beside the whole."""
    for index in range(len(cut.cuts)):
        yield cut.chunk(audio, index)
