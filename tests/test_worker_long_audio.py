"""Long uploads transcribed on the Worker, which has no ffmpeg: cut in pure Python, heard whole.

The Worker's own runtime (``build_worker_runtime`` over Miniflare's D1, KV and R2: the upload's
bytes go through R2) and the memory runtime, with the Whisper stand-in as the only rung. The
audio is tone words (``fake_whisper.tone_audio``), so every word and its time is known; the
upload is over the piece size, so it is cut (WAV on frames, MP3 on frames, Ogg Opus on pages) and the pieces are
sent concurrently, each a request of its own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vid2context.chunking_portable import PortablePrep
from vid2context.pipeline import get_context
from vid2context.uploads import save_upload

from .fake_whisper import FakeWhisper, Word, tone_audio
from .runtimes import ON_WORKER_TOO, Runtimes

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Word]]:
    """Sentences of three 0.5 s words with a pause after each, 50 s long: as WAV and MP3."""
    spoken, at = [], 0.0
    for sentence in range(16):
        for j in range(3):
            spoken.append((sentence * 3 + j, at, at + 0.5))
            at += 0.65
        at += 1.0
    folder = tmp_path_factory.mktemp("talk")
    wav = folder / "talk.wav"
    words = tone_audio(wav, spoken, total=at + 0.3)
    mp3 = folder / "talk.mp3"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(wav), "-c:a", "libmp3lame", "-b:a", "32k",
                    str(mp3)], check=True)  # fmt: skip
    return wav, mp3, words


@pytest.fixture(scope="module")
def talk_ogg(talk: tuple[Path, Path, list[Word]]) -> Path:
    """The same talk as Ogg Opus."""
    ogg = talk[0].with_suffix(".ogg")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(talk[0]), "-c:a", "libopus", "-b:a",
                    "32k", str(ogg)], check=True)  # fmt: skip
    return ogg


@pytest.fixture
def fake() -> Iterator[FakeWhisper]:
    with FakeWhisper(key=None) as server:
        yield server


@ON_WORKER_TOO
@pytest.mark.parametrize(("container", "piece_bytes"), [("wav", 400_000), ("mp3", 50_000), ("ogg", 50_000)])
async def test_a_long_upload_is_cut_and_transcribed_at_absolute_times(
    runtimes: Runtimes, fake: FakeWhisper, talk: tuple[Path, Path, list[Word]], talk_ogg: Path, container: str,
    piece_bytes: int,
) -> None:  # fmt: skip
    wav, mp3, words = talk
    path = {"wav": wav, "mp3": mp3, "ogg": talk_ogg}[container]
    runtime = await runtimes.build(
        {"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_RATE_LIMIT": "0", "VID2CONTEXT_PUBLIC": "0"}
    )
    assert isinstance(runtime.stt_plan.prep, PortablePrep)
    runtime.stt_plan.chunk_bytes = piece_bytes
    data = path.read_bytes()
    assert len(data) > 3 * piece_bytes
    mime = {"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg"}[container]
    info = await save_upload(runtime, data, f"lecture.{container}", mime)
    context = await get_context(runtime, info.input, mode="stt")
    transcript = context.transcript
    assert transcript is not None and transcript.note is not None and "pieces" in transcript.note
    assert len(fake.answered) >= 4 and all(r.size <= piece_bytes + 1000 for r in fake.answered)
    heard = [w.strip(".,") for s in transcript.segments for w in s.text.split()]
    assert heard == [w.text for w in words]  # every word once, in order, across every seam
    by_text = {w.text: w for w in words}
    # The cuts are hard (no silence is looked for without decoding): a segment cut at a seam has
    # its words placed by their length, so it may be off by half a word; the others are exact
    # within the stand-in's 50 ms frames (and, for MP3, the encoder's 69 ms delay).
    close = 0
    for segment in transcript.segments:
        said = [by_text[p.strip(".,")] for p in segment.text.split()]
        start, end = abs(segment.start_sec - said[0].start), abs(segment.end_sec - said[-1].end)
        assert start <= 0.45 and end <= 0.45, (segment, said)
        close += start <= 0.15 and end <= 0.15
    assert close >= len(transcript.segments) // 2, transcript.segments
    assert transcript.segments[-1].end_sec == pytest.approx(words[-1].end, abs=0.45)
