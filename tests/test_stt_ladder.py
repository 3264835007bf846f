"""The speech-to-text ladder against a fake Whisper service over real HTTP (``fake_whisper``).

The runtime, pipeline, chunking, ffmpeg splitting and the rungs (the groq and cloudflare SDKs,
plain httpx) are the real ones; only the service is fake. Its "speech" is sine tones, one
frequency per word (``w<k>``), so every test knows what each piece must say and when, and can
check that the merged transcript has every word once, at its time.
"""

from __future__ import annotations

import base64
import itertools
import subprocess
import wave
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from vid2context.api import create_app
from vid2context.audio_mp3 import read_mp3
from vid2context.chunking import AudioChunk, PassthroughPrep, SttPlan, merge, retrying
from vid2context.chunking_portable import PortablePrep, mp3_cuts
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.models import CaptionTrack, Comment, Segment, Transcript, VideoMetadata, VideoRef
from vid2context.pipeline import get_context, transcribe
from vid2context.providers.audio_local import FfmpegPrep, plan_cuts
from vid2context.providers.speech import AudioInput, RungError, parse_retry_after, status_error
from vid2context.providers.stt import ordered
from vid2context.providers.whisper_local import LocalWhisper
from vid2context.providers.whisper_workers_ai import WorkersAIBindingWhisper
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.uploads import save_upload

from .fake_whisper import FakeWhisper, Word, hear_tones, tone_audio

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-value-123"
GROQ_KEY = "gsk-test-secret-value-456"
CF_TOKEN = "cf-test-secret-value-789"
CF_ACCOUNT = "0123456789abcdef0123456789abcdef"


# --- audio with known words ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sentences(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Word]]:
    """14 "sentences" of three 0.5 s words (0.15 s apart), 1.2 s of silence after each: 42 s."""
    words, at = [], 0.0
    for sentence in range(14):
        for j in range(3):
            words.append((sentence * 3 + j, at, at + 0.5))
            at += 0.65
        at += 1.2 - 0.15
    path = tmp_path_factory.mktemp("audio") / "sentences.wav"
    return path, tone_audio(path, words, total=at + 0.3)


@pytest.fixture(scope="session")
def continuous(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Word]]:
    """40 words of 0.9 s each with no silence anywhere: every cut is a hard cut."""
    words = [(k, 0.9 * k, 0.9 * (k + 1)) for k in range(40)]
    path = tmp_path_factory.mktemp("audio") / "continuous.wav"
    return path, tone_audio(path, words, total=36.0)


@pytest.fixture(scope="session")
def silence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five seconds of digital silence."""
    path = tmp_path_factory.mktemp("audio") / "silence.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 16000 * 5)
    return path


def words_of(transcript: Transcript) -> list[str]:
    return [w.strip(".,") for s in transcript.segments for w in s.text.split()]


def expected(words: list[Word]) -> list[str]:
    return [w.text for w in words]


def assert_times(transcript: Transcript, words: list[Word], tolerance: float) -> None:
    """Each segment starts when its first word starts and ends when its last word ends."""
    by_text = {w.text: w for w in words}
    for segment in transcript.segments:
        parts = [p.strip(".,") for p in segment.text.split()]
        first, last = by_text[parts[0]], by_text[parts[-1]]
        assert abs(segment.start_sec - first.start) <= tolerance, (segment, first)
        assert abs(segment.end_sec - last.end) <= tolerance, (segment, last)


# --- runtimes --------------------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeWhisper]:
    with FakeWhisper(key=None) as server:
        yield server


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
async def make_runtime(tmp_path: Path) -> AsyncIterator[Any]:
    opened: list[Runtime] = []

    def make(env: dict[str, str], *, ffmpeg: bool = True, **plan: Any) -> Runtime:
        runtime = build_runtime(load_settings(env), http=httpx.AsyncClient())
        if ffmpeg:
            runtime.stt_plan.prep = FfmpegPrep()
        runtime.stt_plan.sleep = Sleeps()
        for name, value in plan.items():
            setattr(runtime.stt_plan, name, value)
        opened.append(runtime)
        return runtime

    yield make
    for runtime in opened:
        await runtime.aclose()


def openai_env(fake: FakeWhisper, **more: str) -> dict[str, str]:
    return {"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_STT_KEY": KEY, **more}


def groq_env(fake: FakeWhisper) -> dict[str, str]:
    return {"GROQ_API_KEY": GROQ_KEY, "GROQ_BASE_URL": fake.url}


def cloudflare_env(fake: FakeWhisper) -> dict[str, str]:
    return {
        "CLOUDFLARE_ACCOUNT_ID": CF_ACCOUNT,
        "CLOUDFLARE_API_TOKEN": CF_TOKEN,
        "CLOUDFLARE_BASE_URL": f"{fake.url}/client/v4",
    }


def only(runtime: Runtime, prefix: str) -> None:
    """Keep only the rungs whose id starts with ``prefix`` enabled."""
    for rung in runtime.stt:
        rung.enabled = rung.enabled and rung.id.startswith(prefix)


def outcomes(attempts: list[Any]) -> list[tuple[str, str, str]]:
    return [(a.id, a.stage, a.outcome) for a in attempts]


# --- chunking: cuts at silences, hard cuts with overlap, merging ----------------------------------------


async def test_long_audio_is_cut_at_silences_sent_in_pieces_and_merged(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(openai_env(fake), chunk_sec=12.0)
    progress: list[tuple[str, float | None, str]] = []
    ctx = Ctx(timeout=60, progress=lambda *event: progress.append(event))
    transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=ctx)

    assert words_of(transcript) == expected(words)  # every word, once, in order
    assert_times(transcript, words, tolerance=0.12)
    assert transcript.producer == "stt/self-hosted/whisper-1" and transcript.origin == "asr"
    assert transcript.language == "en"  # "english" from the service, as a code
    pieces = fake.answered
    assert len(pieces) == 4 and transcript.note == "transcribed in 4 pieces"
    assert all(r.size <= 12 * 4000 * 1.05 for r in pieces)  # 32 kbit/s MP3
    assert all(
        r.fields["response_format"] == "verbose_json" and r.fields["model"] == "whisper-1" for r in pieces
    )
    assert all(r.auth == f"Bearer {KEY}" for r in pieces)
    fractions = [f for stage, f, _ in progress if stage == "stt" and f]
    assert fractions == [0.25, 0.5, 0.75, 1.0]  # one report per piece


async def test_cuts_fall_inside_silences_so_no_piece_repeats_another(
    sentences: tuple[Path, list[Word]],
) -> None:
    path, words = sentences
    async with FfmpegPrep().chunks(
        AudioInput.from_path(str(path)), Ctx(timeout=60), max_bytes=10**7, max_sec=12
    ) as planned:
        chunks = [chunk async for chunk in planned]
        assert [c.overlap_sec for c in chunks] == [0.0] * len(chunks)
        for before, after in itertools.pairwise(chunks):
            assert before.end_sec == after.start_sec
            # the cut is in a gap between sentences, never inside a word
            assert not any(w.start < after.start_sec < w.end for w in words)
        with wave.open(str(path)) as audio:
            length = audio.getnframes() / audio.getframerate()
        assert chunks[0].start_sec == 0.0 and chunks[-1].end_sec == pytest.approx(length, abs=0.001)


async def test_hard_cuts_overlap_and_the_seam_is_deduplicated(
    fake: FakeWhisper, make_runtime: Any, continuous: tuple[Path, list[Word]]
) -> None:
    path, words = continuous
    runtime = make_runtime(openai_env(fake), chunk_sec=12.0)
    transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60))
    assert words_of(transcript) == expected(words)  # no word lost or doubled at the seams
    assert_times(transcript, words, tolerance=0.12)
    assert len(fake.answered) == 4  # 0-12, 9-21, 18-30, 27-36


def test_plan_cuts_prefers_the_longest_silence_near_the_target() -> None:
    silences = [(8.0, 8.4), (9.0, 10.0), (11.6, 11.9), (25.0, 25.2)]
    assert plan_cuts(30.0, silences, 12.0) == [(0.0, 9.5, 0.0), (9.5, 21.5, 0.0), (18.5, 30.0, 3.0)]
    assert plan_cuts(10.0, [], 12.0) == [(0.0, 10.0, 0.0)]


def seg(start: float, end: float, text: str) -> Segment:
    return Segment(start_sec=start, end_sec=end, text=text)


def piece(*segments: Segment) -> Transcript:
    return Transcript(
        language="en", origin="asr", timing="segment-approx", producer="p", segments=list(segments)
    )


def chunk(index: int, start: float, end: float, overlap: float = 0.0) -> AudioChunk:
    return AudioChunk(
        index=index, start_sec=start, end_sec=end, overlap_sec=overlap, audio=AudioInput.from_bytes(b"x")
    )


def test_merge_shifts_pieces_to_absolute_time() -> None:
    merged = merge(
        [chunk(0, 0, 10), chunk(1, 10, 20)],
        [piece(seg(0, 4, "one two"), seg(5, 9, "three")), piece(seg(0.5, 3, "four"))],
        producer="stt/x/y",
    )
    assert [(s.start_sec, s.end_sec, s.text) for s in merged.segments] == [
        (0, 4, "one two"),
        (5, 9, "three"),
        (10.5, 13, "four"),
    ]


def test_merge_drops_the_words_both_pieces_heard_in_an_overlap() -> None:
    # Piece 1 ends mid-word ("quick" cut off, heard as "qui"); piece 2 starts 3 s earlier.
    merged = merge(
        [chunk(0, 0, 10), chunk(1, 7, 17, overlap=3)],
        [
            piece(seg(0, 5, "The lazy dog sleeps."), seg(5.5, 10, "A brown fox, so qui")),
            piece(seg(0, 3.2, "brown fox, so quick and"), seg(3.4, 9, "nimble, jumps over it.")),
        ],
        producer="p",
    )
    assert (
        " ".join(s.text for s in merged.segments)
        == "The lazy dog sleeps. A brown fox, so quick and nimble, jumps over it."
    )


def test_merge_without_common_words_splits_the_overlap_at_its_middle() -> None:
    merged = merge(
        [chunk(0, 0, 10), chunk(1, 7, 17, overlap=3)],
        [
            piece(seg(0, 5, "alpha"), seg(7.2, 8.0, "beta")),
            piece(seg(0.1, 0.6, "gamma"), seg(2.0, 5, "delta")),
        ],
        producer="p",
    )
    assert [s.text for s in merged.segments] == ["alpha", "beta", "delta"]


# --- concurrency, retries, fallback ----------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 2, 4])
async def test_pieces_are_sent_concurrently_within_the_bound(
    make_runtime: Any, sentences: tuple[Path, list[Word]], concurrency: int
) -> None:
    path, words = sentences
    # The fake holds the first requests until `concurrency` are in flight together (no sleep that a
    # loaded machine could outlast while the next piece is still being encoded).
    with FakeWhisper(together=concurrency) as fake:
        runtime = make_runtime(openai_env(fake), chunk_sec=7.0, concurrency=concurrency)
        transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=120))
    assert words_of(transcript) == expected(words)
    assert len(fake.answered) >= 6
    assert fake.peak_in_flight == concurrency


async def test_429_is_retried_after_the_wait_the_service_asked_for(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(groq_env(fake), chunk_sec=100.0)
    fake.fail_next(429, retry_after=7)
    attempts: list[Any] = []
    transcript = await transcribe(
        runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60), attempts=attempts
    )
    assert words_of(transcript) == expected(words)
    assert runtime.stt_plan.sleep == [7.0]
    assert [r.status for r in fake.requests] == [429, 200]
    assert all(r.path == "/openai/v1/audio/transcriptions" for r in fake.requests)  # the groq SDK's path
    assert transcript.producer == "stt/groq/whisper-large-v3-turbo"
    assert ("stt/groq/whisper-large-v3-turbo", "stt", "ok") in outcomes(attempts)


async def test_5xx_is_retried_with_growing_backoff(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, _ = sentences
    runtime = make_runtime(openai_env(fake), chunk_sec=100.0)
    fake.fail_next(500, count=2)
    fake.fail_next(503)
    await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60))
    first, second, third = runtime.stt_plan.sleep
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0 and 2.0 <= third <= 4.0
    assert [r.status for r in fake.requests] == [500, 500, 503, 200]


async def test_when_retries_run_out_the_next_rung_answers(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime({**groq_env(fake), **openai_env(fake)}, chunk_sec=100.0)
    fake.fail_next(502, count=5)  # one try and four retries
    attempts: list[Any] = []
    transcript = await transcribe(
        runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60), attempts=attempts
    )
    assert words_of(transcript) == expected(words)
    assert transcript.producer == "stt/self-hosted/whisper-1"
    tried = [(a.id, a.outcome, a.reason) for a in attempts if a.outcome != "skipped"]
    assert tried == [
        ("stt/groq/whisper-large-v3-turbo", "error", "upstream"),
        ("stt/self-hosted/whisper-1", "ok", None),
    ]
    assert len(runtime.stt_plan.sleep) == 4


async def test_a_retry_after_longer_than_the_plan_allows_moves_to_the_next_rung(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, _ = sentences
    runtime = make_runtime({**groq_env(fake), **openai_env(fake)}, chunk_sec=100.0)
    fake.fail_next(429, retry_after=3600)
    attempts: list[Any] = []
    await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60), attempts=attempts)
    assert runtime.stt_plan.sleep == []
    assert [(a.id, a.reason) for a in attempts if a.outcome == "error"] == [
        ("stt/groq/whisper-large-v3-turbo", "rate-limited")
    ]


async def test_a_rejected_key_fails_the_rung_without_retrying(
    make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, _ = sentences
    with FakeWhisper(key="the-right-key") as fake:
        runtime = make_runtime(openai_env(fake), chunk_sec=12.0, concurrency=1)
        with pytest.raises(VidError) as caught:
            await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60))
    assert caught.value.code is ErrorCode.AUTH
    assert "VID2CONTEXT_STT_KEY" in (caught.value.hint or "")
    assert KEY not in caught.value.message + (caught.value.hint or "")
    assert len(fake.requests) == 1  # the first piece failed for good; the others never went


async def test_an_oversize_piece_is_too_large_and_is_not_retried(
    make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    with FakeWhisper(max_bytes=60_000) as fake:  # 15 s of 32 kbit/s MP3
        runtime = make_runtime({**groq_env(fake), **openai_env(fake)}, chunk_sec=100.0)
        attempts: list[Any] = []
        with pytest.raises(VidError) as caught:
            await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60), attempts=attempts)
        assert caught.value.code is ErrorCode.TOO_LARGE
        assert "VID2CONTEXT_STT_CHUNK_MB" in (caught.value.hint or "")
        assert [r.status for r in fake.requests] == [413, 413]  # one per rung, no retries
        assert [a.reason for a in attempts if a.outcome == "error"] == ["too-large", "too-large"]
        # The same audio in pieces under the cap goes through.
        runtime.stt_plan.chunk_bytes = 50_000
        transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60))
        assert words_of(transcript) == expected(words)


async def test_without_ffmpeg_audio_over_the_cap_is_refused_before_any_request(
    make_runtime: Any, fake: FakeWhisper
) -> None:
    """Only WAV and MP3 can be cut without ffmpeg (``test_audio_cutting.py``): an M4A is refused."""
    runtime = make_runtime(openai_env(fake), ffmpeg=False)
    assert isinstance(runtime.stt_plan.prep, PortablePrep)
    runtime.stt_plan.chunk_bytes = 1000
    m4a = b"\x00\x00\x00\x20ftypM4A " + b"\x00" * 1000
    with pytest.raises(VidError) as caught:
        await transcribe(runtime, AudioInput.from_bytes(m4a, filename="big.m4a"), ctx=Ctx(timeout=10))
    assert caught.value.code is ErrorCode.TOO_LARGE and "local runtime" in (caught.value.hint or "")
    assert "MP4/M4A cannot be cut here" in caught.value.message
    assert fake.requests == []


async def test_without_ffmpeg_a_long_mp3_is_cut_and_heard_at_its_times(
    make_runtime: Any, fake: FakeWhisper, continuous: tuple[Path, list[Word]], tmp_path: Path
) -> None:
    """Hard cuts only (no silence anywhere): the overlap and the merge keep every word once."""
    path, words = continuous
    mp3 = tmp_path / "continuous.mp3"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-c:a", "libmp3lame", "-b:a",
                    "32k", str(mp3)], check=True)  # fmt: skip
    runtime = make_runtime(openai_env(fake), ffmpeg=False, chunk_bytes=40_000)
    data = mp3.read_bytes()
    transcript = await transcribe(
        runtime, AudioInput.from_bytes(data, filename="talk.mp3", mime="audio/mpeg"), ctx=Ctx(timeout=60)
    )
    assert len(fake.requests) == 5 and all(r.size <= 40_000 for r in fake.requests)  # 36 s in 5 pieces
    assert words_of(transcript) == expected(words)
    # Away from the seams each segment spans its words within the encoder's delay (1,105 samples,
    # 69 ms at 16 kHz, kept in the stream's time) and the stand-in's 50 ms frames; in a seam the
    # merge cuts segments and places their words by their length, so half a word is allowed there.
    layout = read_mp3(data)
    seams = [(f * layout.frame_sec, (f + c) * layout.frame_sec) for f, _, c in mp3_cuts(
        layout, max_bytes=40_000, max_sec=600.0) if c]  # fmt: skip
    by_text = {w.text: w for w in words}
    for segment in transcript.segments:
        said = [by_text[p.strip(".,")] for p in segment.text.split()]
        seam = any(segment.start_sec < end + 1 and segment.end_sec > start - 1 for start, end in seams)
        tolerance = 0.45 if seam else 0.15
        assert abs(segment.start_sec - said[0].start) <= tolerance, (segment, said[0])
        assert abs(segment.end_sec - said[-1].end) <= tolerance, (segment, said[-1])
    assert sum(not any(s.start_sec < e + 1 and s.end_sec > b - 1 for b, e in seams)
               for s in transcript.segments) >= 3  # fmt: skip


MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("size", "cap", "shown"),
    [
        (3 * MIB // 2, MIB, "1.5 MB, over the 1.0 MB"),
        (MIB + 6_000, MIB, "1.01 MB, over the 1.00 MB"),
        (MIB + 600, MIB, "1.001 MB, over the 1.000 MB"),
        (MIB + 1, MIB, "1,048,577 bytes, over the 1,048,576 bytes"),
        (1001, 1000, "1,001 bytes, over the 1,000 bytes"),
    ],
)
async def test_the_too_large_message_shows_sizes_that_differ(size: int, cap: int, shown: str) -> None:
    """Not "1.0 MB, over the 1.0 MB": as many decimals as it takes, or bytes."""
    audio = AudioInput.from_bytes(b"\x07" * size, filename="talk.mp3")
    with pytest.raises(VidError) as caught:
        async with PassthroughPrep().chunks(audio, Ctx(timeout=5), max_bytes=cap, max_sec=600.0):
            pass
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert f"talk.mp3 is {shown} a speech-to-text request may carry" in caught.value.message


async def test_on_the_worker_audio_that_fits_is_sent_as_it_is(
    make_runtime: Any, fake: FakeWhisper, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(openai_env(fake), ffmpeg=False)
    transcript = await transcribe(
        runtime,
        AudioInput.from_bytes(path.read_bytes(), filename="talk.wav", mime="audio/wav"),
        ctx=Ctx(timeout=60),
    )
    assert words_of(transcript) == expected(words)
    assert [r.size for r in fake.requests] == [path.stat().st_size]


async def test_retrying_gives_up_when_the_wait_would_pass_the_deadline() -> None:
    calls = 0

    async def busy() -> None:
        nonlocal calls
        calls += 1
        raise status_error("svc", 429, retry_after=30)

    plan = SttPlan(sleep=Sleeps())
    with pytest.raises(VidError) as caught:
        await retrying(busy, Ctx(timeout=5), plan)
    assert caught.value.code is ErrorCode.RATE_LIMITED and calls == 1 and plan.sleep == []


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    assert parse_retry_after("7") == 7
    assert parse_retry_after("1.2") == 2
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("999999") == 3600
    assert isinstance(status_error("svc", 503), RungError) and status_error("svc", 503).retryable
    assert not status_error("svc", 400).retryable and not status_error("svc", 401).retryable


# --- the ladder: order, skipped rungs, Workers AI ---------------------------------------------------------


async def test_the_default_order_is_local_then_free_then_keyless_then_paid(
    make_runtime: Any, fake: FakeWhisper
) -> None:
    runtime = make_runtime({**openai_env(fake), **groq_env(fake), **cloudflare_env(fake)})
    local = LocalWhisper(("/nowhere", "tiny.en"))
    assert [r.id for r in ordered([*runtime.stt, local])] == [
        "stt/faster-whisper/tiny.en",
        "stt/groq/whisper-large-v3-turbo",
        "stt/cloudflare/@cf/openai/whisper-large-v3-turbo",
        "stt/self-hosted/whisper-1",
        "stt/deepgram/nova-3",  # paid, and the one that labels speakers: last unless asked for
    ]
    assert [r.tier for r in runtime.stt] == ["free", "free", "paid", "paid"]
    keyless = make_runtime({"VID2CONTEXT_STT_URL": f"{fake.url}/v1"})
    assert [(r.id, r.tier, r.enabled) for r in keyless.stt if r.service != "deepgram"][-1] == (
        "stt/self-hosted/whisper-1",
        "keyless",
        True,
    )
    off = make_runtime({"VID2CONTEXT_STT_URL": f"{fake.url}/v1", "VID2CONTEXT_KEYLESS": "0"})
    assert not any(r.enabled for r in off.stt)


async def test_without_the_groq_sdk_groq_is_reached_over_plain_httpx(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Worker has no groq SDK: the same rung goes to Groq's OpenAI-compatible path."""
    from vid2context.providers import stt

    monkeypatch.setattr(stt, "_installed", lambda module: module != "groq")
    path, words = sentences
    runtime = make_runtime(groq_env(fake), chunk_sec=100.0)
    rung = runtime.stt[0]
    assert (rung.id, rung.tier, rung.provider, rung.requires) == (
        "stt/groq/whisper-large-v3-turbo",
        "free",
        "stt-groq",
        ("GROQ_API_KEY",),
    )
    transcript = await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60))
    assert words_of(transcript) == expected(words)
    (request,) = fake.requests
    assert request.path == "/openai/v1/audio/transcriptions" and request.auth == f"Bearer {GROQ_KEY}"
    assert request.fields["model"] == "whisper-large-v3-turbo"
    assert not make_runtime({}).stt[0].enabled


@pytest.mark.parametrize(
    ("url", "service", "endpoint"),
    [
        ("https://api.openai.com/v1", "openai", "https://api.openai.com/v1/audio/transcriptions"),
        (
            "https://oai.endpoints.kepler.ai.cloud.ovh.net/v1/audio/transcriptions/",
            "ovh",
            "https://oai.endpoints.kepler.ai.cloud.ovh.net/v1/audio/transcriptions",
        ),
        ("http://127.0.0.1:9000", "self-hosted", "http://127.0.0.1:9000/audio/transcriptions"),
        ("http://whisper:8000/v1", "self-hosted", "http://whisper:8000/v1/audio/transcriptions"),
    ],
)
def test_the_openai_compatible_url_names_its_service(url: str, service: str, endpoint: str) -> None:
    from vid2context.providers.whisper_openai import endpoint_url, service_name

    assert endpoint_url(url) == endpoint and service_name(endpoint) == service


async def test_rungs_without_keys_are_skipped_and_say_which_variable_is_missing(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, _ = sentences
    runtime = make_runtime(openai_env(fake), chunk_sec=100.0)
    attempts: list[Any] = []
    await transcribe(runtime, AudioInput.from_path(str(path)), ctx=Ctx(timeout=60), attempts=attempts)
    skipped = {a.id: (a.reason, a.detail) for a in attempts if a.outcome == "skipped"}
    assert skipped == {
        "stt/groq/whisper-large-v3-turbo": ("missing-key", "set GROQ_API_KEY"),
        "stt/cloudflare/@cf/openai/whisper-large-v3-turbo": (
            "missing-key",
            "set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN",
        ),
        "stt/deepgram/nova-3": ("missing-key", "set DEEPGRAM_API_KEY"),
    }


async def test_no_enabled_rung_is_no_provider_with_the_variables_to_set(make_runtime: Any) -> None:
    runtime = make_runtime({})
    with pytest.raises(VidError) as caught:
        await transcribe(runtime, AudioInput.from_bytes(b"abc"), ctx=Ctx(timeout=10))
    assert caught.value.code is ErrorCode.NO_PROVIDER
    assert "GROQ_API_KEY" in (caught.value.hint or "")
    assert {a.outcome for a in caught.value.attempts} == {"skipped"}


async def test_workers_ai_over_rest_through_the_cloudflare_sdk(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(cloudflare_env(fake), chunk_sec=100.0)
    transcript = await transcribe(runtime, AudioInput.from_path(str(path)), lang="en", ctx=Ctx(timeout=60))
    assert words_of(transcript) == expected(words)
    assert transcript.producer == "stt/cloudflare/@cf/openai/whisper-large-v3-turbo"
    (request,) = fake.requests
    assert request.path == f"/client/v4/accounts/{CF_ACCOUNT}/ai/run/@cf/openai/whisper-large-v3-turbo"
    assert request.auth == f"Bearer {CF_TOKEN}" and request.fields == {"language": "en"}


class AiStandIn:
    """The call shape of the Worker's ``env.AI``: ``await run(model, {audio: base64, ...})``."""

    def __init__(self, *, fail: BaseException | None = None, answer: Any = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail
        self.answer = answer

    async def run(self, model: str, inputs: dict[str, Any]) -> Any:
        self.calls.append((model, inputs))
        if self.fail is not None:
            raise self.fail
        if self.answer is not None:
            return self.answer
        segments, duration = hear_tones(base64.b64decode(inputs["audio"]))
        return {
            "text": "...",
            "segments": segments,
            "transcription_info": {"language": "en", "duration": duration},
        }


class JsObject:
    """What an unconverted JS result looks like from Python: it has ``to_py()``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def to_py(self) -> Any:
        return self.value


async def test_workers_ai_through_the_binding(sentences: tuple[Path, list[Word]]) -> None:
    path, words = sentences
    ai = AiStandIn()
    rung = WorkersAIBindingWhisper(ai)
    assert rung.enabled and not WorkersAIBindingWhisper(None).enabled
    transcript = await rung.transcribe(AudioInput.from_bytes(path.read_bytes()), Ctx(), lang="en")
    assert words_of(transcript) == expected(words)
    ((model, inputs),) = ai.calls
    assert model == "@cf/openai/whisper-large-v3-turbo"
    assert set(inputs) == {"audio", "language"} and isinstance(inputs["audio"], str)
    js = WorkersAIBindingWhisper(
        AiStandIn(answer=JsObject({"text": "hi there", "transcription_info": {"duration": 2.0}}))
    )
    plain = await js.transcribe(AudioInput.from_bytes(b"abc"), Ctx())
    assert [(s.start_sec, s.end_sec, s.text) for s in plain.segments] == [(0.0, 2.0, "hi there")]


async def test_workers_ai_binding_failures_are_ours() -> None:
    failing = WorkersAIBindingWhisper(AiStandIn(fail=RuntimeError("InferenceUpstreamError: busy")))
    with pytest.raises(RungError) as caught:
        await failing.transcribe(AudioInput.from_bytes(b"abc"), Ctx())
    assert caught.value.code is ErrorCode.UPSTREAM and caught.value.retryable
    assert "busy" not in caught.value.message
    odd = WorkersAIBindingWhisper(AiStandIn(answer={"segments": "nope"}))
    with pytest.raises(VidError) as caught_odd:
        await odd.transcribe(AudioInput.from_bytes(b"abc"), Ctx())
    assert caught_odd.value.code is ErrorCode.UPSTREAM


# --- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make_audio", "code"),
    [
        (lambda tmp: AudioInput.from_bytes(b"", filename="empty.mp3"), ErrorCode.BAD_REQUEST),
        (
            lambda tmp: AudioInput.from_bytes(b"%PDF-1.7 not media at all" * 40, filename="doc.pdf"),
            ErrorCode.BAD_REQUEST,
        ),
        (lambda tmp: AudioInput.from_path(str(tmp / "missing.mp3")), ErrorCode.NOT_FOUND),
    ],
    ids=["zero-length", "not-media", "missing-file"],
)
async def test_unusable_audio_ends_the_ladder_at_the_first_rung(
    fake: FakeWhisper, make_runtime: Any, tmp_path: Path, make_audio: Any, code: ErrorCode
) -> None:
    runtime = make_runtime({**groq_env(fake), **openai_env(fake)})
    with pytest.raises(VidError) as caught:
        await transcribe(runtime, make_audio(tmp_path), ctx=Ctx(timeout=30))
    assert caught.value.code is code
    assert fake.requests == []
    tried = [a for a in caught.value.attempts if a.outcome == "error"]
    assert len(tried) == (1 if code is ErrorCode.BAD_REQUEST else 2)


@pytest.fixture(scope="session")
def video_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two seconds of black picture and no audio stream at all."""
    video = tmp_path_factory.mktemp("media") / "video-only.mp4"
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


async def test_media_without_sound_and_silence_are_no_transcript(
    fake: FakeWhisper, make_runtime: Any, video_only: Path, silence: Path
) -> None:
    video = video_only
    runtime = make_runtime(openai_env(fake))
    with pytest.raises(VidError) as caught:
        await transcribe(runtime, AudioInput.from_path(str(video)), ctx=Ctx(timeout=30))
    assert caught.value.code is ErrorCode.NO_TRANSCRIPT and "no audio track" in caught.value.message
    with pytest.raises(VidError) as quiet:
        await transcribe(runtime, AudioInput.from_path(str(silence)), ctx=Ctx(timeout=30))
    assert quiet.value.code is ErrorCode.NO_TRANSCRIPT and "no speech" in quiet.value.message


# --- through the pipeline: uploads, mode=stt, health and models -------------------------------------------


async def test_uploads_are_transcribed_through_the_ladder_and_never_saved(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(openai_env(fake), chunk_sec=12.0)
    info = await save_upload(runtime, path.read_bytes(), "Lecture 3.wav", "audio/wav")
    context = await get_context(runtime, info.input)
    assert context.metadata.title == "Lecture 3" and context.metadata.platform == "upload"
    assert context.transcript is not None and words_of(context.transcript) == expected(words)
    assert outcomes(context.attempts)[:3] == [
        ("upload", "metadata", "ok"),
        ("upload", "captions", "skipped"),  # an upload has none: nothing was tried, nothing failed
        ("upload", "audio", "ok"),
    ]
    assert outcomes(context.attempts)[-1] == ("stt/self-hosted/whisper-1", "stt", "ok")
    assert await runtime.storage.get_context(info.input) is None
    with pytest.raises(VidError) as caught:
        await get_context(runtime, "upload:" + "0" * 64)
    assert caught.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(VidError) as captions_only:
        await get_context(runtime, info.input, mode="captions")
    assert captions_only.value.code is ErrorCode.NO_TRANSCRIPT


def without_ms(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in attempt.items() if k != "ms"} for attempt in attempts]


@pytest.mark.parametrize(
    ("case", "status", "code", "hint"),
    [
        ("too-large", 413, "too-large", "local runtime"),
        ("rung-failures", 502, "all-rungs-failed", "GROQ_API_KEY"),
        ("no-rung", 503, "no-provider", "GROQ_API_KEY"),
    ],
)
async def test_an_upload_in_auto_mode_answers_what_speech_to_text_answers(
    make_runtime: Any, case: str, status: int, code: str, hint: str
) -> None:
    """An upload has no captions by nature, so mode=auto must not fold "no captions" into its
    answer (it was ``502 all-rungs-failed`` with the hint "Use mode=stt", or ``422 no-transcript``
    with no rung set up): it answers mode=stt's error, and its attempts are mode=stt's with the
    captions recorded as skipped. Without ffmpeg, as on the Worker."""
    with FakeWhisper(key=None) as fake, FakeWhisper(key="another-key") as refusing:
        data = b"\x07" * 1000
        if case == "too-large":
            runtime = make_runtime(openai_env(fake), ffmpeg=False, chunk_bytes=MIB)
            data = b"\x00\x00\x00\x20ftypM4A " + b"\x07" * (MIB - 11)  # M4A: not cut without ffmpeg
        elif case == "rung-failures":  # groq refuses the key, the self-hosted service fails
            runtime = make_runtime({**groq_env(refusing), **openai_env(fake)}, ffmpeg=False, retries=0)
            fake.fail_next(500, count=2)
        else:
            runtime = make_runtime({}, ffmpeg=False)
        async with AsyncTestClient(create_app(runtime)) as client:
            uploaded = await client.post("/api/v1/uploads", files={"file": ("talk.mp3", data, "audio/mpeg")})
            reference = uploaded.json()["input"]
            auto = await client.get("/api/v1/transcript", params={"url": reference})
            stt = await client.get("/api/v1/transcript", params={"url": reference, "mode": "stt"})
    assert (auto.status_code, stt.status_code) == (status, status), auto.text
    error = auto.json()["error"]
    assert error == stt.json()["error"] and error["code"] == code
    assert hint in error["hint"] and "mode=stt" not in error["hint"]
    assert "upload" not in error["message"].split("(")[-1]  # no captions "failure" among the rungs
    attempts = without_ms(auto.json()["attempts"])
    assert attempts[1] == {
        "id": "upload",
        "stage": "captions",
        "outcome": "skipped",
        "reason": "no-transcript",
        "detail": "an upload has no captions",
    }
    assert attempts[:1] + attempts[2:] == without_ms(stt.json()["attempts"])
    assert {a["id"] for a in attempts if a["stage"] == "stt"} == {rung.id for rung in runtime.stt}
    if case == "too-large":
        assert "1,048,577 bytes, over the 1,048,576 bytes" in error["message"]
        assert fake.requests == []  # refused before anything was sent
    if case == "rung-failures":
        assert [(a["id"], a["reason"]) for a in attempts if a["outcome"] == "error"] == [
            ("stt/groq/whisper-large-v3-turbo", "auth"),
            ("stt/self-hosted/whisper-1", "upstream"),
        ]


class CaptionsSource:
    """A source with captions and no audio, as YouTube over InnerTube is."""

    id = "talk"
    name = "Talk"

    def accepts(self, ref: VideoRef) -> bool:
        return ref.platform == "web"

    async def metadata(self, ref: VideoRef, ctx: Ctx) -> VideoMetadata:
        return VideoMetadata(id=ref.id, platform="web", title="Talk")

    async def caption_tracks(self, ref: VideoRef, ctx: Ctx) -> list[CaptionTrack]:
        return [CaptionTrack(language="en", name="English", kind="manual")]

    async def captions(self, ref: VideoRef, ctx: Ctx, *, lang: str | None = None) -> Transcript:
        return Transcript(
            language="en",
            origin="captions-manual",
            timing="caption",
            producer="talk/captions",
            segments=[seg(0, 1, "from captions")],
        )

    async def items(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[VideoRef]:
        return [ref]

    async def comments(self, ref: VideoRef, ctx: Ctx, *, limit: int) -> list[Comment]:
        return []


class TalkSource(CaptionsSource):
    """A source with both captions and audio: what the yt-dlp and local-file providers are."""

    def __init__(self, audio_path: Path) -> None:
        self.audio_path = audio_path
        self.released: list[AudioInput] = []

    async def audio(self, ref: VideoRef, ctx: Ctx) -> AudioInput:
        return AudioInput.from_path(str(self.audio_path))

    async def release_audio(self, audio: AudioInput) -> None:
        self.released.append(audio)


async def test_mode_stt_forces_speech_to_text_over_captions(
    fake: FakeWhisper, make_runtime: Any, sentences: tuple[Path, list[Word]]
) -> None:
    path, words = sentences
    runtime = make_runtime(openai_env(fake), chunk_sec=100.0)
    source = TalkSource(path)
    runtime.sources.insert(0, source)
    url = "https://talks.example/42"
    auto = await get_context(runtime, url)
    assert auto.transcript is not None and auto.transcript.origin == "captions-manual" and fake.requests == []
    forced = await get_context(runtime, url, mode="stt")
    assert forced.transcript is not None and forced.transcript.origin == "asr"
    assert words_of(forced.transcript) == expected(words)
    assert "captions" not in {a.stage for a in forced.attempts}
    assert ("talk", "audio", "ok") in outcomes(forced.attempts) and len(source.released) == 1
    again = await get_context(runtime, url, mode="stt")  # the library answers now
    assert again.attempts[0].stage == "cache" and len(fake.requests) == 1


async def test_youtube_over_innertube_cannot_give_audio(make_runtime: Any, fake: FakeWhisper) -> None:
    runtime = make_runtime(openai_env(fake))
    runtime.sources.insert(0, CaptionsSource())
    with pytest.raises(VidError) as caught:
        await get_context(runtime, "https://talks.example/7", mode="stt")
    assert caught.value.code is ErrorCode.NO_PROVIDER
    assert "local runtime" in (caught.value.hint or "")
    assert ("talk", "audio", "skipped") in outcomes(caught.value.attempts)


async def test_health_and_models_list_every_rung_and_never_a_value(
    make_runtime: Any, fake: FakeWhisper
) -> None:
    runtime = make_runtime({**openai_env(fake), **groq_env(fake)})
    async with AsyncTestClient(create_app(runtime)) as client:
        health = await client.get("/api/v1/health")
        models = await client.get("/api/v1/models", params={"kind": "stt"})
    assert health.status_code == 200 and models.status_code == 200
    for body in (health.text, models.text):
        for secret in (KEY, GROQ_KEY, fake.url):
            assert secret not in body
    stt = {p["id"]: p for p in health.json()["providers"] if p["kind"] == "stt"}
    assert list(stt) == ["stt-groq", "stt-workers-ai", "stt-openai-compatible", "stt-deepgram"]
    assert stt["stt-deepgram"]["enabled"] is False
    assert stt["stt-deepgram"]["rungs"][0]["requires"] == ["DEEPGRAM_API_KEY"]
    assert stt["stt-groq"]["enabled"] is True and stt["stt-workers-ai"]["enabled"] is False
    assert stt["stt-groq"]["rungs"] == [
        {
            "id": "stt/groq/whisper-large-v3-turbo",
            "service": "groq",
            "model": "whisper-large-v3-turbo",
            "tier": "free",
            "enabled": True,
            "requires": ["GROQ_API_KEY"],
        }
    ]
    assert stt["stt-workers-ai"]["rungs"][0]["requires"] == ["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"]
    assert all("rungs" not in p for p in health.json()["providers"] if p["kind"] == "source")
    listed = models.json()["models"]
    assert [(m["id"], m["kind"], m["tier"], m["enabled"]) for m in listed] == [
        ("stt/groq/whisper-large-v3-turbo", "stt", "free", True),
        ("stt/cloudflare/@cf/openai/whisper-large-v3-turbo", "stt", "free", False),
        ("stt/self-hosted/whisper-1", "stt", "paid", True),
        ("stt/deepgram/nova-3", "stt", "paid", False),
    ]
    assert listed[1]["label"] == "whisper-large-v3-turbo"


async def test_groq_over_httpx_names_groq_api_key_when_the_key_is_refused() -> None:
    """The Worker's Groq rung (no groq SDK there): a refused key points at GROQ_API_KEY."""
    from vid2context.providers.stt import groq_over_httpx

    with FakeWhisper(key="the-right-key") as fake:
        settings = load_settings({"GROQ_API_KEY": "a-wrong-key", "GROQ_BASE_URL": fake.url})
        async with httpx.AsyncClient() as http:
            rung = groq_over_httpx(settings, http)
            assert rung.enabled and rung.id == "stt/groq/whisper-large-v3-turbo"
            with pytest.raises(VidError) as caught:
                await rung.transcribe(
                    AudioInput.from_bytes(b"RIFF0000WAVE", filename="a.wav"), Ctx(timeout=30)
                )
    assert caught.value.code is ErrorCode.AUTH
    assert "GROQ_API_KEY" in (caught.value.hint or "")
    assert "VID2CONTEXT_STT_KEY" not in (caught.value.hint or "")
    assert "a-wrong-key" not in caught.value.message + (caught.value.hint or "")
    assert fake.requests[0].path == "/openai/v1/audio/transcriptions"
