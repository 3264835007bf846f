"""Long WAV and MP3 cut without ffmpeg (``chunking_portable``, ``audio_wav``, ``audio_mp3``).

The media are made here with real ffmpeg from the speech fixture (``talk.wav`` looped to about
two and a half minutes), and every piece is checked with real ffmpeg and ffprobe: it decodes, it
is as long as its frames say, and its offset is the time ffprobe gives the packet it starts with.
WAV pieces are checked sample for sample against the whole.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vid2context.audio_mp3 import Mp3Error, read_mp3
from vid2context.audio_wav import WavError, read_wav, wav_piece
from vid2context.chunking import AudioChunk
from vid2context.chunking_portable import OVERLAP_SEC, PortablePrep, mp3_cuts, wav_cuts
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.providers.speech import AudioInput

pytestmark = pytest.mark.anyio

TALK = Path(__file__).parent / "fixtures" / "media" / "talk.wav"


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def decoded(data: bytes, rate: int) -> bytes:
    """``data`` decoded by ffmpeg to mono s16le at ``rate``; fails the test when ffmpeg cannot."""
    done = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", str(rate),
         "pipe:1"],
        input=data, capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def packets(path: Path) -> dict[int, float]:
    """ffprobe's packets of ``path``: byte position -> presentation time."""
    done = subprocess.run(
        ["ffprobe", "-v", "error", "-show_packets", "-show_entries", "packet=pts_time,pos", "-of", "json",
         str(path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {int(p["pos"]): float(p["pts_time"]) for p in json.loads(done.stdout)["packets"]}


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """About 147 s of speech: 16 kHz WAV; MP3 at 24 kbit/s (MPEG-2, with ID3v2 and an Info
    frame), and at 32 kbit/s 32 kHz (MPEG-1, with neither)."""
    folder = tmp_path_factory.mktemp("long")
    wav = folder / "long.wav"
    ffmpeg("-stream_loop", "5", "-i", str(TALK), "-ac", "1", "-ar", "16000", str(wav))
    mpeg2 = folder / "long.mp3"
    ffmpeg("-i", str(wav), "-c:a", "libmp3lame", "-b:a", "24k", str(mpeg2))
    mpeg1 = folder / "bare.mp3"
    ffmpeg("-i", str(wav), "-ar", "32000", "-c:a", "libmp3lame", "-b:a", "32k", "-write_xing", "0",
           "-id3v2_version", "0", str(mpeg1))  # fmt: skip
    return {"wav": wav, "mp3": mpeg2, "bare": mpeg1}


async def pieces(audio: AudioInput, *, max_bytes: int, max_sec: float = 600.0) -> list[AudioChunk]:
    prep = PortablePrep()
    async with prep.chunks(audio, Ctx(timeout=30), max_bytes=max_bytes, max_sec=max_sec) as planned:
        return [chunk async for chunk in planned]


# --- WAV -----------------------------------------------------------------------------------------------


async def test_a_long_wav_is_cut_into_valid_wavs_sample_for_sample(media: dict[str, Path]) -> None:
    data = media["wav"].read_bytes()
    whole = decoded(data, 16000)
    chunks = await pieces(AudioInput.from_bytes(data, filename="long.wav"), max_bytes=1_000_000)
    assert len(chunks) == 6  # 4.7 MB in pieces of 31.2 s, each after the first 3 s early
    for chunk in chunks:
        assert chunk.audio.data is not None and len(chunk.audio.data) <= 1_000_000
        assert chunk.audio.mime == "audio/wav" and chunk.audio.filename == f"long-{chunk.index + 1:03d}.wav"
        pcm = decoded(chunk.audio.data, 16000)
        first = round(chunk.start_sec * 16000)
        assert chunk.start_sec * 16000 == first  # offsets are whole sample frames
        assert pcm == whole[first * 2 : first * 2 + len(pcm)]  # the very samples at that offset
        assert chunk.end_sec == pytest.approx((first + len(pcm) // 2) / 16000)
    assert [c.overlap_sec for c in chunks] == [0.0] + [OVERLAP_SEC] * 5
    assert chunks[0].start_sec == 0 and chunks[-1].end_sec == pytest.approx(len(whole) / 2 / 16000)
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start_sec == pytest.approx(before.end_sec - after.overlap_sec)


async def test_a_wav_is_also_cut_to_the_longest_a_piece_may_last(media: dict[str, Path]) -> None:
    data = media["wav"].read_bytes()
    chunks = await pieces(AudioInput.from_bytes(data, filename="long.wav"), max_bytes=len(data), max_sec=40)
    assert len(chunks) == 4 and all(c.end_sec - c.start_sec <= 40 for c in chunks)  # type: ignore[operator]


async def test_audio_that_fits_is_sent_whole_as_it_is(media: dict[str, Path]) -> None:
    data = media["mp3"].read_bytes()
    audio = AudioInput.from_bytes(data, filename="long.mp3")
    [chunk] = await pieces(audio, max_bytes=len(data))
    assert chunk.audio is audio


def test_extensible_and_odd_chunks_are_read(tmp_path: Path) -> None:
    """A stereo 24-bit WAV (WAVE_FORMAT_EXTENSIBLE), with an odd-sized chunk before ``data``."""
    path = tmp_path / "wide.wav"
    ffmpeg("-i", str(TALK), "-ac", "2", "-c:a", "pcm_s24le", "-metadata", "title=odd", str(path))
    data = path.read_bytes()
    layout = read_wav(data)
    assert layout.block_align == 6 and layout.frames * 6 <= len(data)
    cuts = wav_cuts(layout, max_bytes=200_000, max_sec=600)
    rate = layout.sample_rate
    total = sum(len(decoded(wav_piece(data, layout, f, e), rate)) for f, e, _ in cuts)
    overlap = sum(c for _, _, c in cuts)
    assert total // 2 - overlap == len(decoded(data, rate)) // 2


# --- MP3 -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mp3", "bare"])
async def test_mp3_pieces_start_where_ffprobe_says_their_first_frame_plays(
    media: dict[str, Path], name: str
) -> None:
    data = media[name].read_bytes()
    layout = read_mp3(data)
    played = packets(media[name])
    assert len(played) == layout.frames  # every frame found, the Info frame (when there is one) left out
    cuts = mp3_cuts(layout, max_bytes=len(data) // 4, max_sec=600)
    assert len(cuts) >= 4
    whole = len(decoded(data, layout.sample_rate)) // 2
    heard = 0
    for first, end, overlap in cuts:
        assert played[layout.bounds[first]] == pytest.approx(first * layout.frame_sec, abs=1e-6)
        piece = layout.piece(data, first, end)
        assert len(piece) <= len(data) // 4
        samples = len(decoded(piece, layout.sample_rate)) // 2
        assert samples == (end - first) * layout.samples_per_frame
        heard += samples - overlap * layout.samples_per_frame
    # A player trims the encoder's delay and padding (they fit in two frames); the pieces do not.
    assert 0 <= heard - whole <= 2 * layout.samples_per_frame


async def test_a_long_mp3_comes_out_as_playable_mp3_pieces(media: dict[str, Path]) -> None:
    data = media["mp3"].read_bytes()
    chunks = await pieces(AudioInput.from_bytes(data, filename="long.mp3"), max_bytes=100_000)
    assert len(chunks) == 5
    layout = read_mp3(data)
    for chunk in chunks:
        assert chunk.audio.data is not None and len(chunk.audio.data) <= 100_000
        assert chunk.audio.mime == "audio/mpeg" and chunk.audio.filename.endswith(".mp3")
        samples = len(decoded(chunk.audio.data, layout.sample_rate)) // 2
        assert samples / layout.sample_rate == pytest.approx(chunk.end_sec - chunk.start_sec, abs=1e-6)  # type: ignore[operator]
        assert 0 < chunk.overlap_sec <= OVERLAP_SEC or chunk.index == 0
    assert chunks[-1].end_sec == pytest.approx(layout.duration_sec)


def junk(size: int, seed: int) -> bytes:
    """Random bytes thick with frame syncs: ``FF F3``/``FF FB`` and whole valid-looking headers."""
    rng = random.Random(seed)
    out = bytearray(rng.randbytes(size))
    for at in range(0, size - 4, 37):
        out[at : at + 4] = rng.choice([b"\xff\xf3", b"\xff\xfb", b"\xff\xe3"]) + rng.randbytes(2)
    for at in range(11, size - 4, 301):
        out[at : at + 4] = b"\xff\xf3\x38\xc4"  # a real MPEG-2 layer III 24 kbit/s header
    return bytes(out)


async def test_false_syncs_before_and_inside_the_audio_are_not_taken(media: dict[str, Path]) -> None:
    data = media["bare"].read_bytes()
    layout = read_mp3(data)
    middle = layout.bounds[layout.frames // 2]
    dirty = junk(5000, 1) + data[:middle] + junk(3000, 2) + data[middle:] + junk(700, 3)
    found = read_mp3(dirty)
    assert found.frames == layout.frames
    assert list(found.lengths) == list(layout.lengths)
    cuts = mp3_cuts(layout, max_bytes=60_000, max_sec=600)
    assert mp3_cuts(found, max_bytes=60_000, max_sec=600) == cuts
    for first, end, _ in cuts:  # the same bytes: the junk is in no piece
        assert found.piece(dirty, first, end) == layout.piece(data, first, end)


async def test_a_truncated_mp3_loses_only_its_last_frame(media: dict[str, Path]) -> None:
    data = media["mp3"].read_bytes()
    layout = read_mp3(data)
    cut = data[: layout.bounds[-10] + 7]
    found = read_mp3(cut)
    assert found.frames == layout.frames - 10
    chunks = await pieces(AudioInput.from_bytes(cut, filename="cut.mp3"), max_bytes=150_000)
    for chunk in chunks:
        assert chunk.audio.data is not None
        decoded(chunk.audio.data, layout.sample_rate)


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("rec.wav", b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00", "cut short inside a chunk header"),
        ("rec.wav", b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00", "fmt chunk is cut short"),
        ("rec.wav", b"RIFF\x00\x00\x00\x00WAVEdata\x04\x00\x00\x00" + b"\x00" * 4000, "before any fmt chunk"),
        ("rec.wav", b"RIFF\x00\x00\x00\x00WAVE" + os.urandom(4000), ""),
        ("talk.mp3", os.urandom(20_000), "no run of MPEG audio frames"),
        ("talk.mp3", junk(20_000, 4), "no run of MPEG audio frames"),
        ("talk.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x20" + b"\x00" * 32 + junk(20_000, 5), "no run of MPEG"),
    ],
)
async def test_a_broken_wav_or_mp3_over_the_cap_is_a_bad_request(name: str, data: bytes, reason: str) -> None:
    wav = name.endswith(".wav")
    with pytest.raises(WavError if wav else Mp3Error):
        (read_wav if wav else read_mp3)(data)
    with pytest.raises(VidError) as caught:
        await pieces(AudioInput.from_bytes(data, filename=name), max_bytes=10)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    kind = "a WAV" if wav else "an MP3"
    assert caught.value.message.startswith(f"{name} is {kind} file that cannot be read: ")
    assert reason in caught.value.message
    assert f"playable {kind[-3:].strip()} file" in (caught.value.hint or "")


# --- what cannot be cut ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def others(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    folder = tmp_path_factory.mktemp("others")
    made = {}
    for name, args in {
        "talk.m4a": ["-c:a", "aac", "-b:a", "32k"],
        "talk.webm": ["-c:a", "libopus", "-b:a", "24k"],
        "talk.flac": ["-c:a", "flac"],
    }.items():
        ffmpeg("-i", str(TALK), *args, str(folder / name))
        made[name] = (folder / name).read_bytes()
    yield made


@pytest.mark.parametrize(
    ("name", "kind"),
    [("talk.m4a", "MP4/M4A"), ("talk.webm", "WebM/Matroska"), ("talk.flac", "FLAC")],
)
async def test_other_containers_over_the_cap_are_too_large_and_say_why(
    others: dict[str, bytes], name: str, kind: str
) -> None:
    data = others[name]
    with pytest.raises(VidError) as caught:
        await pieces(AudioInput.from_bytes(data, filename=name), max_bytes=len(data) - 1)
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert caught.value.message.endswith(f"and {kind} cannot be cut here.")
    assert "MP3, Ogg Opus or WAV" in (caught.value.hint or "") and "local runtime" in (
        caught.value.hint or ""
    )
    [whole] = await pieces(AudioInput.from_bytes(data, filename=name), max_bytes=len(data))
    assert whole.audio.data == data


async def test_unknown_bytes_over_the_cap_are_too_large() -> None:
    with pytest.raises(VidError) as caught:
        await pieces(AudioInput.from_bytes(os.urandom(5000), filename="audio"), max_bytes=1000)
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert caught.value.message.endswith("and only WAV, MP3 and Ogg (Opus, Vorbis) can be cut here.")


async def test_a_cap_below_one_frame_is_too_large(media: dict[str, Path]) -> None:
    data = media["wav"].read_bytes()
    with pytest.raises(VidError) as caught:
        await pieces(AudioInput.from_bytes(data, filename="long.wav"), max_bytes=45)  # a 44-byte header
    assert (
        caught.value.code is ErrorCode.TOO_LARGE
        and "a single frame of it does not fit" in caught.value.message
    )
