"""Ogg (Opus or Vorbis) cut on page boundaries without decoding, in pure Python.

An Ogg stream is a run of pages, each a 27-byte header (``OggS``, flags, the granule position,
the stream's serial, a sequence number, a CRC-32) with a lacing table and its packets' bytes.
The codec's header packets come first, on pages of their own (the Opus and Vorbis mappings
require the first audio packet to start a new page); every page after them is audio, and its
granule position is the sample count at the end of its last complete packet. So pages can be
taken as they are, and their times read from the granules, without decoding anything.

``read_ogg`` checks every page (the capture pattern, version 0, one serial, sequence numbers one
after the other, the CRC) and reads the codec from the first packet: ``OpusHead`` (48 kHz
granules, its pre-skip) or Vorbis's identification header (its sample rate). A piece is the
header pages as they are, then a run of audio pages that does not start in the middle of a
packet, rewritten: granules shifted so the piece starts at 0 (a decoder then trims nothing it
should not), sequence numbers renumbered after the headers, end of stream set on its last page,
CRCs computed again. Other codecs in Ogg (FLAC, Speex, Theora video) and streams with several
serials (multiplexed or chained) are not cut.

Times: a piece from page ``i`` is heard from the granule of the page before it, over the rate
(a decoder drops Opus's pre-skip from the piece's start again, which puts its first sample at the
original's time of that granule; the first piece at 0). Vorbis's first packet only primes the
decoder, so a Vorbis piece is heard from up to half a long block (64 ms at 16 kHz) later. Like
MP3's bit reservoir, a decoder starting mid-stream needs a packet or so to settle, a few tens of
milliseconds that ``chunking_portable.OVERLAP_SEC`` covers.

The CRC is Ogg's (polynomial 0x04C11DB7, not reflected, no final XOR), computed with ``zlib``'s
reflected CRC-32 over bit-reversed bytes, so a 25 MB file costs a few C passes, not a Python loop.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

__all__ = ["OggError", "OggLayout", "UnsupportedOgg", "is_ogg", "ogg_crc", "read_ogg"]

_HEADER = struct.Struct("<4sBBqIII B")
_REVERSED = bytes(int(f"{byte:08b}"[::-1], 2) for byte in range(256))
_CONTINUED, _FIRST, _LAST = 0x01, 0x02, 0x04


class OggError(ValueError):
    """The bytes say Ogg but cannot be read as one cuttable stream; the message says why."""


class UnsupportedOgg(OggError):
    """A readable Ogg this module does not cut (another codec, several streams); the message
    names it."""


def _reverse32(value: int) -> int:
    return int(f"{value:032b}"[::-1], 2)


def ogg_crc(page: bytes) -> int:
    """Ogg's CRC-32 of ``page`` (its CRC field zeroed by the caller)."""
    raw = zlib.crc32(page.translate(_REVERSED), 0xFFFFFFFF) ^ 0xFFFFFFFF
    return _reverse32(raw)


def is_ogg(data: bytes) -> bool:
    return data[:4] == b"OggS"


@dataclass(frozen=True, slots=True)
class OggLayout:
    """Where an Ogg stream's audio pages are, and when each ends."""

    codec: str
    """``Opus`` or ``Vorbis``."""
    headers: bytes
    """The header pages, copied into every piece as they are."""
    header_pages: int
    starts: list[int]
    ends: list[int]
    granules: list[int]
    """Each audio page's granule (a page where no packet ends: the one before it)."""
    continued: list[bool]
    """The page starts in the middle of a packet (no piece may start there)."""
    rate: int
    base: int
    """Samples before the stream's time 0 (Opus's pre-skip; 0 for Vorbis)."""

    @property
    def pages(self) -> int:
        return len(self.starts)

    def start_granule(self, index: int) -> int:
        """Where page ``index`` starts, as a granule: where the one before it ends (0 for the first)."""
        return self.granules[index - 1] if index > 0 else 0

    def time_of(self, index: int) -> float:
        """The time of a piece's first sample when it starts at page ``index`` (``index ==
        pages``: the end). A decoder drops Opus's pre-skip from every piece again, so a piece
        from page ``i`` is heard from the granule it starts at plus the pre-skip: the original's
        time of that granule."""
        if index >= self.pages:
            return self.duration_sec
        return self.start_granule(index) / self.rate

    @property
    def duration_sec(self) -> float:
        return max(0, (self.granules[-1] if self.granules else 0) - self.base) / self.rate

    def piece(self, data: bytes, first: int, end: int) -> bytes:
        """Audio pages ``[first, end)`` after the headers, as a stream of their own."""
        shift = self.start_granule(first)  # the piece's granules count its own samples from 0
        out = [self.headers]
        for n, index in enumerate(range(first, end)):
            page = bytearray(data[self.starts[index] : self.ends[index]])
            flags = page[5] & ~_LAST
            if index == end - 1:
                flags |= _LAST
            page[5] = flags
            granule = struct.unpack_from("<q", page, 6)[0]
            if granule != -1:
                struct.pack_into("<q", page, 6, granule - shift)
            struct.pack_into("<I", page, 18, self.header_pages + n)
            struct.pack_into("<I", page, 22, 0)
            struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
            out.append(bytes(page))
        return b"".join(out)


def _pages(data: bytes) -> list[tuple[int, int, int, int, list[int]]]:
    """(start, end, flags, granule, lacing) of every page, each checked."""
    found = []
    at, serial, expected = 0, None, 0
    while at < len(data):
        if len(data) - at < _HEADER.size:
            raise OggError(f"it ends inside a page header at byte {at}")
        magic, version, flags, granule, page_serial, sequence, crc, count = _HEADER.unpack_from(data, at)
        if magic != b"OggS" or version != 0:
            raise OggError(f"no Ogg page where one should start, at byte {at}")
        lacing = list(data[at + _HEADER.size : at + _HEADER.size + count])
        end = at + _HEADER.size + count + sum(lacing)
        if len(lacing) < count or end > len(data):
            raise OggError(f"page {len(found)} runs past the end of the file")
        if serial is None:
            serial = page_serial
        elif page_serial != serial:
            raise UnsupportedOgg("Ogg with several streams (multiplexed or chained)")
        if sequence != expected:
            raise OggError(f"page {len(found)} is out of sequence (a page is missing)")
        page = bytearray(data[at:end])
        struct.pack_into("<I", page, 22, 0)
        if ogg_crc(bytes(page)) != crc:
            raise OggError(f"page {len(found)}'s checksum is wrong")
        found.append((at, end, flags, granule, lacing))
        at, expected = end, sequence + 1
    if not found:
        raise OggError("it holds no Ogg page")
    return found


def _codec(first_packet: bytes) -> tuple[str, int, int, int]:
    """(codec, header packets, granule rate, samples before time 0) from the first packet."""
    if first_packet[:8] == b"OpusHead" and len(first_packet) >= 19:
        return "Opus", 2, 48000, struct.unpack_from("<H", first_packet, 10)[0]
    if first_packet[:7] == b"\x01vorbis" and len(first_packet) >= 30:
        rate = struct.unpack_from("<I", first_packet, 12)[0]
        if not rate:
            raise OggError("its Vorbis header gives no sample rate")
        return "Vorbis", 3, rate, 0
    name = {b"\x7fFLAC": "FLAC", b"Speex": "Speex", b"\x80theora": "Theora"}.get(
        first_packet[:7] if first_packet[:1] == b"\x80" else first_packet[:5]
    )
    raise UnsupportedOgg(f"Ogg {name}" if name else "Ogg of a codec other than Opus or Vorbis")


def read_ogg(data: bytes) -> OggLayout:
    """The layout of an Ogg Opus or Vorbis stream; raises ``UnsupportedOgg`` for another codec or
    several streams, ``OggError`` for bytes that cannot be read as a stream of pages."""
    pages = _pages(data)
    packet, packets, codec = bytearray(), 0, None
    needed = 1
    header_pages = 0
    for start, _end, _flags, _granule, lacing in pages:
        body = start + _HEADER.size + len(lacing)
        for value in lacing:
            packet += data[body : body + value]
            body += value
            if value < 255:
                if codec is None:
                    codec = _codec(bytes(packet))
                    needed = codec[1]
                packets += 1
                packet = bytearray()
        header_pages += 1
        if codec is not None and packets >= needed:
            if packets > needed or packet:
                raise OggError("its audio starts on a header page")
            break
    if codec is None or packets < needed:
        raise OggError("it ends before its codec headers do")
    name, _, rate, base = codec
    audio = pages[header_pages:]
    if not audio:
        raise OggError("it holds no audio pages")
    granules, last = [], base
    for _start, _end, _flags, granule, _lacing in audio:
        last = granule if granule != -1 else last
        granules.append(last)
    return OggLayout(
        codec=name,
        headers=data[: pages[header_pages - 1][1]],
        header_pages=header_pages,
        starts=[p[0] for p in audio],
        ends=[p[1] for p in audio],
        granules=granules,
        continued=[bool(p[2] & _CONTINUED) for p in audio],
        rate=rate,
        base=base,
    )
