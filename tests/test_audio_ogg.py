"""Long Ogg (Opus, Vorbis) cut on page boundaries without ffmpeg (``audio_ogg``, ``chunking_portable``).

The media are made here with real ffmpeg from the speech fixture (``talk.wav`` looped to about
two and a half minutes), and every piece is checked with real ffmpeg: it decodes, it is as long
as its granules say, and it sounds where its offset says (its samples line up with the whole's,
found by correlation). Mutated files raise only our own codes.
"""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vid2context.audio_ogg import OggError, UnsupportedOgg, ogg_crc, read_ogg
from vid2context.chunking import AudioChunk
from vid2context.chunking_portable import OVERLAP_SEC, PortablePrep, cutting
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.providers.speech import AudioInput

pytestmark = pytest.mark.anyio

TALK = Path(__file__).parent / "fixtures" / "media" / "talk.wav"
RATE = 16_000


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def decoded(data: bytes) -> np.ndarray:
    done = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", str(RATE), "pipe:1"],
        input=data, capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return np.frombuffer(done.stdout, dtype="<i2").astype(np.float64)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("ogg")
    wav = folder / "long.wav"
    ffmpeg("-stream_loop", "5", "-i", str(TALK), "-ac", "1", "-ar", str(RATE), str(wav))
    made = {}
    for name, args in {
        "opus": ["-c:a", "libopus", "-b:a", "24k"],
        "vorbis": ["-c:a", "libvorbis", "-q:a", "1"],
        "flac": ["-c:a", "flac"],
    }.items():
        ffmpeg("-i", str(wav), *args, "-f", "ogg", str(folder / f"{name}.ogg"))
        made[name] = (folder / f"{name}.ogg").read_bytes()
    return made


async def pieces(audio: AudioInput, *, max_bytes: int, max_sec: float = 600.0) -> list[AudioChunk]:
    prep = PortablePrep()
    async with prep.chunks(audio, Ctx(timeout=30), max_bytes=max_bytes, max_sec=max_sec) as planned:
        return [chunk async for chunk in planned]


def _lag(whole: np.ndarray, piece: np.ndarray, at: float) -> float:
    """Where ``piece`` sounds in ``whole``, minus ``at``, in seconds (its second 0.2-1.2 against
    the whole within 60 ms of where ``at`` puts it, by normalised correlation, through the FFT)."""
    window = piece[int(0.2 * RATE) : int(1.2 * RATE)]
    reach = int(0.06 * RATE)
    start = int(round((at + 0.2) * RATE)) - reach
    region = whole[max(0, start) : start + len(window) + 2 * reach]
    size = len(region) + len(window)
    dots = np.fft.irfft(np.fft.rfft(region, size) * np.conj(np.fft.rfft(window, size)), size)
    dots = dots[: len(region) - len(window) + 1]
    sums = np.concatenate(([0.0], np.cumsum(region**2)))
    energy = sums[len(window) :] - sums[: len(region) - len(window) + 1]
    scores = dots / (np.sqrt(energy) * np.linalg.norm(window) + 1e-9)
    best = int(np.argmax(scores))
    assert scores[best] > 0.8, scores[best]  # it is the same audio
    return (best + max(0, start) - start - reach) / RATE


@pytest.mark.parametrize(("codec", "slack"), [("opus", 0.002), ("vorbis", 0.07)])
async def test_a_long_ogg_is_cut_into_playable_pieces_heard_where_their_offsets_say(
    media: dict[str, bytes], codec: str, slack: float
) -> None:
    data = media[codec]
    layout = read_ogg(data)
    assert layout.codec == codec.capitalize() and layout.header_pages >= 2
    chunks = await pieces(AudioInput.from_bytes(data, filename=f"long.{codec}.ogg"), max_bytes=len(data) // 4)
    assert len(chunks) >= 4
    whole = decoded(data)
    for chunk in chunks:
        assert chunk.audio.data is not None and len(chunk.audio.data) <= len(data) // 4
        assert chunk.audio.mime == "audio/ogg" and chunk.audio.filename.endswith(".ogg")
        heard = decoded(chunk.audio.data)
        assert len(heard) / RATE == pytest.approx(chunk.end_sec - chunk.start_sec, abs=0.05)  # type: ignore[operator]
        assert 0 <= _lag(whole, heard, chunk.start_sec) <= slack  # Vorbis primes on its first packet
        assert 0 < chunk.overlap_sec <= OVERLAP_SEC or chunk.index == 0
        again = read_ogg(chunk.audio.data)  # a valid Ogg stream: every CRC, sequence, one serial
        assert again.codec == layout.codec and again.granules[0] > 0
    assert chunks[0].start_sec == 0 and chunks[-1].end_sec == pytest.approx(layout.duration_sec)


async def test_an_ogg_is_also_cut_to_the_longest_a_piece_may_last(media: dict[str, bytes]) -> None:
    chunks = await pieces(
        AudioInput.from_bytes(media["opus"], filename="long.ogg"), max_bytes=10**9, max_sec=30
    )
    assert len(chunks) == 6 and all(c.end_sec - c.start_sec <= 30 for c in chunks)  # type: ignore[operator]


async def test_ogg_flac_over_the_cap_is_too_large_and_fits_whole(media: dict[str, bytes]) -> None:
    data = media["flac"]
    with pytest.raises(UnsupportedOgg):
        read_ogg(data)
    with pytest.raises(VidError) as caught:
        await pieces(AudioInput.from_bytes(data, filename="talk.ogg"), max_bytes=len(data) - 1)
    assert caught.value.code is ErrorCode.TOO_LARGE and "Ogg FLAC cannot be cut here" in caught.value.message
    [whole] = await pieces(AudioInput.from_bytes(data, filename="talk.ogg"), max_bytes=len(data))
    assert whole.audio.data == data


def test_the_crc_is_oggs() -> None:
    page = bytearray(b"OggS" + bytes(23))  # an empty page with its CRC field zeroed
    # Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial 0, no final XOR (RFC 3533).
    expected = 0
    for byte in page:
        expected ^= byte << 24
        for _ in range(8):
            expected = ((expected << 1) ^ 0x04C11DB7 if expected & 0x80000000 else expected << 1) & 0xFFFFFFFF
    assert ogg_crc(bytes(page)) == expected


def _mutated(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    choice = rng.randrange(5)
    if choice == 0:  # flipped bytes
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif choice == 1:  # cut short
        del out[rng.randrange(len(out)) :]
    elif choice == 2:  # a page header's fields
        at = data.find(b"OggS", rng.randrange(len(data)))
        if at >= 0:
            struct.pack_into("<q", out, at + 6, rng.choice([-1, 0, 2**62, rng.randrange(2**40)]))
    elif choice == 3:  # a chunk repeated or dropped
        a, b = sorted(rng.randrange(len(out)) for _ in range(2))
        out[a:b] = out[a:b] * rng.randint(0, 2)
    else:  # junk in front
        out[:0] = rng.randbytes(rng.randint(1, 500))
    return bytes(out)


@pytest.mark.parametrize("codec", ["opus", "vorbis"])
async def test_mutated_ogg_raises_only_our_codes(media: dict[str, bytes], codec: str) -> None:
    rng = random.Random(15)
    data = media[codec]
    for _ in range(300):
        broken = _mutated(data, rng)
        try:
            read_ogg(broken)
        except OggError:
            pass
        audio = AudioInput.from_bytes(broken, filename="talk.ogg", mime="audio/ogg")
        try:
            cut = cutting(audio, broken, max_bytes=max(1, len(data) // 3), max_sec=600)
        except VidError as error:
            assert error.code in (ErrorCode.BAD_REQUEST, ErrorCode.TOO_LARGE), error
            continue
        if cut is not None:
            for index in range(len(cut.cuts)):
                assert cut.chunk(audio, index).audio.data
