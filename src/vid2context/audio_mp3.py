"""MP3 (MPEG audio) cut on frame boundaries without decoding, in pure Python.

An MPEG audio stream is a run of frames, each a 4-byte header (11 sync bits, version, layer,
bitrate, sample rate, padding) and its data, so frames can be found and counted without decoding
anything: frame ``n`` starts at ``n * samples_per_frame / sample_rate`` seconds, and a run of
frames is itself a playable stream. ``read_mp3`` skips a leading ID3v2 tag, finds the first frame
by sync, and takes it only when it starts a *chain* of ``CHAIN`` frames with the same version,
layer and sample rate, each starting where the one before ends (or the chain reaches the end of
the data): a stray ``0xFFE`` in cover art, junk before the audio or a tag is almost never followed
by three more headers at exactly the right places. Where the chain breaks in the middle (garbage,
a tag, a splice), the next validated chain is searched for the same way; the bytes in between are
not audio and count for no time. A first frame carrying a Xing, Info or VBRI header holds no
sound (decoders skip it), so it is left out of every piece and of the count.

Layer III frames borrow from earlier frames' data (the bit reservoir: ``main_data_begin`` points
up to 511 bytes back), so a piece that starts mid-reservoir cannot decode its first frame or
two: a few tens of milliseconds of its start are silent or garbled. The cutter starts every piece
after the first a little before the previous one ends (``chunking_portable.OVERLAP_SEC``), so
nothing is lost: the earlier piece heard that moment whole, and ``chunking.merge`` removes what
both heard. Free-format streams (bitrate index 0) have no frame length in their header and are
not read.

Times are the stream's own, as ffprobe gives each packet's: frame ``n`` at ``n`` frames. An
encoder's delay (LAME writes about 1,105 samples of it into the Info frame, some 25-70 ms, which a
player trims from the start) is not subtracted: the pieces carry no Info frame, so the service
that hears them does not trim it either, and their times agree with the packets'.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

__all__ = ["CHAIN", "Mp3Error", "Mp3Layout", "has_id3", "read_mp3"]

CHAIN = 4
"""Frames in a row, each where the last one ends, that a sync must start to be taken."""

_BITRATES = {
    (1, 1): (0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (1, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (1, 3): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (2, 1): (0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (2, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (2, 3): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
"""kbit/s by (MPEG-1 or 2/2.5, layer) and bitrate index."""
_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}
"""Sample rates by the header's version bits (3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5; 1 is reserved)."""


class Mp3Error(ValueError):
    """The bytes cannot be read as MPEG audio frames; the message says why."""


@dataclass(frozen=True, slots=True)
class _Header:
    key: tuple[int, int, int]
    """(version bits, layer, sample rate): what every frame of one stream shares."""
    length: int
    samples: int
    sample_rate: int


@dataclass(frozen=True, slots=True)
class Mp3Layout:
    """The audio frames of an MP3: where each starts (and, past the last, where the last ends)."""

    bounds: array
    """Where each frame starts: frame ``i`` is ``data[bounds[i] : bounds[i] + lengths[i]]``."""
    lengths: array
    samples_per_frame: int
    sample_rate: int

    @property
    def frames(self) -> int:
        return len(self.bounds)

    @property
    def frame_sec(self) -> float:
        return self.samples_per_frame / self.sample_rate

    @property
    def duration_sec(self) -> float:
        return self.frames * self.frame_sec

    def piece(self, data: bytes, first: int, end: int) -> bytes:
        """Frames ``[first, end)`` as one stream: joined, skipping whatever lay between them."""
        runs: list[bytes] = []
        run_start = self.bounds[first]
        run_end = run_start
        for index in range(first, end):
            start = self.bounds[index]
            if start != run_end:
                runs.append(data[run_start:run_end])
                run_start = start
            run_end = start + self.lengths[index]
        runs.append(data[run_start:run_end])
        return b"".join(runs)


def _header(data: bytes, at: int) -> _Header | None:
    """The frame header at ``at``, or ``None`` when those four bytes are not a valid one."""
    if at + 4 > len(data) or data[at] != 0xFF or data[at + 1] & 0xE0 != 0xE0:
        return None
    b1, b2 = data[at + 1], data[at + 2]
    version = (b1 >> 3) & 3
    layer = 4 - ((b1 >> 1) & 3)  # bits 01 -> layer III, 10 -> II, 11 -> I; 00 is reserved (4)
    bitrate_index, rate_index, padding = b2 >> 4, (b2 >> 2) & 3, (b2 >> 1) & 1
    if version == 1 or layer == 4 or bitrate_index in (0, 15) or rate_index == 3:
        return None
    mpeg1 = version == 3
    bitrate = _BITRATES[(1 if mpeg1 else 2, layer)][bitrate_index] * 1000
    rate = _RATES[version][rate_index]
    if layer == 1:
        length, samples = (12 * bitrate // rate + padding) * 4, 384
    elif layer == 2 or mpeg1:
        length, samples = 144 * bitrate // rate + padding, 1152
    else:
        length, samples = 72 * bitrate // rate + padding, 576
    return _Header(key=(version, layer, rate), length=length, samples=samples, sample_rate=rate)


def _chained(data: bytes, at: int, key: tuple[int, int, int] | None) -> _Header | None:
    """The header at ``at`` when ``CHAIN`` frames of one stream (``key``, when given) follow each
    other from there, or the data ends exactly after fewer."""
    first = _header(data, at)
    if first is None or (key is not None and first.key != key):
        return None
    position = at
    for _ in range(CHAIN):
        header = _header(data, position)
        if header is None or header.key != first.key:
            return None
        position += header.length
        if position >= len(data):
            return first if position == len(data) else None
    return first


def _sync(data: bytes, start: int, key: tuple[int, int, int] | None) -> int | None:
    """The first position from ``start`` where a validated chain begins."""
    at = data.find(b"\xff", start)
    while at != -1:
        if _chained(data, at, key) is not None:
            return at
        at = data.find(b"\xff", at + 1)
    return None


def has_id3(data: bytes) -> bool:
    return data[:3] == b"ID3" and len(data) >= 10


def _after_id3(data: bytes) -> int:
    """Where the audio starts after a leading ID3v2 tag (its size is four 7-bit bytes)."""
    if not has_id3(data):
        return 0
    size = (data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F)
    footer = 10 if data[5] & 0x10 else 0
    return min(len(data), 10 + size + footer)


def _is_info_frame(data: bytes, at: int, header: _Header) -> bool:
    """A Xing/Info (after the side information) or VBRI (at 36) header: a frame with no sound."""
    version, layer, _ = header.key
    if layer != 3:
        return False
    mono = (data[at + 3] >> 6) == 3
    side = (17 if mono else 32) if version == 3 else (9 if mono else 17)
    crc = 0 if data[at + 1] & 1 else 2
    tag = data[at + 4 + crc + side : at + 8 + crc + side]
    return tag in (b"Xing", b"Info") or data[at + 36 : at + 40] == b"VBRI"


def read_mp3(data: bytes) -> Mp3Layout:
    """Every audio frame of an MPEG audio stream; raises ``Mp3Error`` when none is found."""
    position = _sync(data, _after_id3(data), None)
    if position is None:
        raise Mp3Error("no run of MPEG audio frames was found in it")
    first = _header(data, position)
    assert first is not None
    key = first.key
    if _is_info_frame(data, position, first):
        position += first.length
    bounds, lengths = array("q"), array("l")
    while position < len(data):
        header = _header(data, position)
        if header is not None and header.key == key:
            if position + header.length > len(data):
                break  # the last frame is cut short: its sound cannot be decoded whole
            bounds.append(position)
            lengths.append(header.length)
            position += header.length
            continue
        found = _sync(data, position + 1, key)  # lost sync: garbage, a tag, a splice
        if found is None:
            break
        position = found
    if not bounds:
        raise Mp3Error("it holds no whole MPEG audio frame")
    return Mp3Layout(
        bounds=bounds, lengths=lengths, samples_per_frame=first.samples, sample_rate=first.sample_rate
    )
