"""WAV (RIFF) audio cut on sample frames without decoding, in pure Python.

The Worker has no ffmpeg, but uncompressed WAV needs none to be cut: its ``data`` chunk is a run
of equal-sized sample frames (``block_align`` bytes, one sample per channel), so any frame
boundary is a valid cut and the time of frame ``n`` is exactly ``n / sample_rate``. Each piece is
a WAV of its own: the original ``fmt `` chunk copied as it is (extensible formats keep their
channel mask), then a ``data`` chunk of the piece's frames.

Only formats whose frames are fixed-size samples are cut (PCM, IEEE float, A-law, mu-law, and
their extensible forms); compressed WAV (ADPCM, MP3-in-WAV) is refused by ``read_wav`` as not
cuttable. A ``data`` chunk that claims more bytes than the file holds (a recording cut short, or
a streamed header with size 0 or ``0xFFFFFFFF``) is read up to the file's end, as decoders do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["WavError", "WavLayout", "is_wav", "read_wav", "wav_piece"]

_CUTTABLE = frozenset({1, 3, 6, 7})
"""PCM, IEEE float, A-law, mu-law: one fixed-size sample per channel per frame."""
_EXTENSIBLE = 0xFFFE


class WavError(ValueError):
    """The bytes say RIFF/WAVE but cannot be read as cuttable WAV; the message says why."""


@dataclass(frozen=True, slots=True)
class WavLayout:
    """Where a WAV's sample frames are, and how long each is."""

    fmt_chunk: bytes
    """The ``fmt `` chunk, id and size included, copied into every piece."""
    data_start: int
    frames: int
    block_align: int
    sample_rate: int

    @property
    def duration_sec(self) -> float:
        return self.frames / self.sample_rate

    @property
    def header_bytes(self) -> int:
        """A piece's bytes besides its frames: RIFF header, ``fmt `` chunk, ``data`` header."""
        return 12 + len(self.fmt_chunk) + 8


def is_wav(data: bytes) -> bool:
    return len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WAVE"


def read_wav(data: bytes) -> WavLayout:
    """The layout of a RIFF/WAVE file; raises ``WavError`` when it has no readable ``fmt `` and
    ``data`` chunks or its samples are not fixed-size frames."""
    position = 12
    fmt: bytes | None = None
    fields: tuple[int, ...] = ()
    while position + 8 <= len(data):
        chunk_id = data[position : position + 4]
        (size,) = struct.unpack_from("<I", data, position + 4)
        body = position + 8
        if chunk_id == b"fmt ":
            if size < 16 or body + size > len(data):
                raise WavError("its fmt chunk is cut short")
            fmt = data[position : body + size + (size & 1)]
            fields = struct.unpack_from("<HHIIHH", data, body)
            if fields[0] == _EXTENSIBLE:
                if size < 40:
                    raise WavError("its extensible fmt chunk is cut short")
                (sub_format,) = struct.unpack_from("<H", data, body + 24)
                fields = (sub_format, *fields[1:])
        elif chunk_id == b"data":
            if fmt is None:
                raise WavError("its data chunk comes before any fmt chunk")
            return _layout(data, fmt, fields, body, size)
        position = body + size + (size & 1)  # chunks are padded to an even length
    if position < len(data):
        raise WavError("it is cut short inside a chunk header")
    raise WavError("it has no fmt chunk" if fmt is None else "it has no data chunk")


def _layout(data: bytes, fmt: bytes, fields: tuple[int, ...], body: int, size: int) -> WavLayout:
    tag, channels, rate, _, block_align, bits = fields
    if tag not in _CUTTABLE:
        raise WavError(f"its samples are compressed (format 0x{tag:04x}), not plain PCM frames")
    if channels < 1 or rate < 1 or block_align < 1 or bits < 1:
        raise WavError("its fmt chunk names no channels, rate or frame size")
    available = len(data) - body
    if size in (0, 0xFFFFFFFF) or size > available:
        size = available
    frames = size // block_align
    if frames == 0:
        raise WavError("its data chunk holds no sample frames")
    return WavLayout(fmt_chunk=fmt, data_start=body, frames=frames, block_align=block_align, sample_rate=rate)


def wav_piece(data: bytes, layout: WavLayout, first: int, end: int) -> bytes:
    """Frames ``[first, end)`` as a WAV file of their own."""
    frames = data[
        layout.data_start + first * layout.block_align : layout.data_start + end * layout.block_align
    ]
    riff_size = 4 + len(layout.fmt_chunk) + 8 + len(frames) + (len(frames) & 1)
    pad = b"\x00" if len(frames) & 1 else b""
    return b"".join(
        (
            b"RIFF",
            struct.pack("<I", riff_size),
            b"WAVE",
            layout.fmt_chunk,
            b"data",
            struct.pack("<I", len(frames)),
            frames,
            pad,
        )
    )
