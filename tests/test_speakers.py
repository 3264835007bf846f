"""Speaker labels: the Deepgram rung, the ladder that prefers it, and ``speakers`` on both skins.

The rung talks to a local stand-in of Deepgram's ``/v1/listen`` (``tests/fake_deepgram.py``) that
measures each body with a real ffprobe and answers two voices; the media are the espeak-ng talk
(``tests/fixtures/media``). Long audio goes through the real ffmpeg prep. The REST route runs on
the memory runtime and on the Worker's (Miniflare), with an upload as the input (the Worker has no
ffmpeg: the upload is sent as it is); MCP through the SDK's own client.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.chunking import SttPlan, transcribe_audio
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.mcp import create_mcp
from vid2context.models import Segment, Transcript, VideoContext, VideoMetadata
from vid2context.pipeline import get_context
from vid2context.providers.audio_local import FfmpegPrep
from vid2context.providers.deepgram import DeepgramStt
from vid2context.providers.speech import AudioInput, RungError
from vid2context.runtime import build_local_runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.speakers import with_speakers

from .fake_deepgram import FakeDeepgram
from .fake_whisper import FakeWhisper
from .runtimes import ON_WORKER_TOO, Runtimes, serve

pytestmark = pytest.mark.anyio

MEDIA = Path(__file__).parent / "fixtures" / "media"
TALK = (MEDIA / "talk.mp3").read_bytes()
API = "/api/v1"
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
VIDEO = "jNQXAC9IVRw"


@pytest.fixture
def deepgram() -> Iterator[FakeDeepgram]:
    with FakeDeepgram() as fake:
        yield fake


def _rung(http: httpx.AsyncClient, fake: FakeDeepgram, **kw: Any) -> DeepgramStt:
    return DeepgramStt(http, api_key=kw.pop("key", fake.key), origin=fake.url, **kw)


async def _transcribe(fake: FakeDeepgram, audio: AudioInput, **kw: Any) -> Transcript:
    lang = kw.pop("lang", None)
    async with httpx.AsyncClient() as http:
        return await _rung(http, fake, **kw).transcribe(audio, Ctx(timeout=60), lang=lang)


def _mp3() -> AudioInput:
    return AudioInput.from_bytes(TALK, filename="talk.mp3", mime="audio/mpeg")


# --- the rung ------------------------------------------------------------------------------------


async def test_the_rung_sends_the_documented_request_and_reads_utterances(deepgram: FakeDeepgram) -> None:
    transcript = await _transcribe(deepgram, _mp3())
    (request,) = deepgram.requests
    assert request.path == "/v1/listen" and request.size == len(TALK)
    assert request.query == {
        "model": "nova-3",
        "diarize": "true",
        "utterances": "true",
        "smart_format": "true",
        "detect_language": "true",
    }
    assert request.headers["authorization"] == f"Token {deepgram.key}"
    assert request.headers["content-type"] == "audio/mpeg"
    assert transcript.producer == "stt/deepgram/nova-3" and transcript.origin == "asr"
    assert transcript.language == "en"  # detected_language
    assert [(s.speaker, s.text) for s in transcript.segments] == [
        ("Speaker 1", "Welcome to the show. Today we talk about python programming."),
        ("Speaker 2", "The weather today is sunny and warm."),
        ("Speaker 1", "Please remember to subscribe to the channel."),
        ("Speaker 2", "Machine learning models need a lot of data."),
    ]
    starts = [s.start_sec for s in transcript.segments]
    assert starts == sorted(starts) and all(s.end_sec >= s.start_sec for s in transcript.segments)


async def test_a_language_hint_is_sent_instead_of_detection(deepgram: FakeDeepgram) -> None:
    transcript = await _transcribe(deepgram, _mp3(), lang="de")
    assert deepgram.requests[0].query["language"] == "de"
    assert "detect_language" not in deepgram.requests[0].query
    assert transcript.language == "de"


@pytest.mark.parametrize(
    ("status", "retry_after", "code", "retryable", "named"),
    [
        (402, None, ErrorCode.AUTH, False, "no credit"),
        (429, 7, ErrorCode.RATE_LIMITED, True, "Retry-After"),
        (500, None, ErrorCode.UPSTREAM, True, "once in a minute"),
        (503, None, ErrorCode.UPSTREAM, True, "once in a minute"),
    ],
)
async def test_the_services_refusals_are_our_errors(
    deepgram: FakeDeepgram, status: int, retry_after: int | None, code: ErrorCode, retryable: bool, named: str
) -> None:
    deepgram.fail_next(status, retry_after=retry_after)
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, _mp3())
    assert caught.value.code is code and caught.value.retryable is retryable
    assert named in (caught.value.hints and str(caught.value.hints) or "")
    if retry_after is not None:
        assert caught.value.retry_after == retry_after


async def test_a_refused_key_names_the_setting_never_the_key(deepgram: FakeDeepgram) -> None:
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, _mp3(), key="a-wrong-secret-key")
    assert caught.value.code is ErrorCode.AUTH and not caught.value.retryable
    said = f"{caught.value.message} {caught.value.hints}"
    assert "DEEPGRAM_API_KEY" in said and "a-wrong-secret-key" not in said and deepgram.key not in said


async def test_audio_over_the_cap_is_refused_before_it_is_sent(deepgram: FakeDeepgram) -> None:
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, _mp3(), max_bytes=1000)
    assert caught.value.code is ErrorCode.TOO_LARGE and deepgram.requests == []
    deepgram.max_bytes = 1000  # the service's own 413
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, _mp3())
    assert caught.value.code is ErrorCode.TOO_LARGE


@pytest.mark.parametrize("body", [b"RIFF0000WAVE", b"\x00" * 64, b"<script>alert(1)</script>"])
async def test_bytes_that_are_not_audio_are_the_services_400_and_not_a_stop(
    deepgram: FakeDeepgram, body: bytes
) -> None:
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, AudioInput.from_bytes(body, filename="x.wav"))
    # 400 may also be a language the model lacks: upstream, so another rung may still try.
    assert caught.value.code is ErrorCode.UPSTREAM and not caught.value.retryable
    assert "HTTP 400" in caught.value.message


@pytest.mark.parametrize(
    "answer",
    [b"not json", b"[]", b'{"results": {"channels": []}}', b'{"results": {"utterances": [{"start": "x"}]}}'],
)
async def test_an_answer_that_is_not_deepgrams_is_upstream(deepgram: FakeDeepgram, answer: bytes) -> None:
    deepgram.answer_next(answer)
    with pytest.raises(RungError) as caught:
        await _transcribe(deepgram, _mp3())
    assert caught.value.code is ErrorCode.UPSTREAM and "VID2CONTEXT_DEEPGRAM_ORIGIN" in str(
        caught.value.hints
    )


async def test_a_file_path_is_refused_by_the_portable_rung(deepgram: FakeDeepgram) -> None:
    with pytest.raises(VidError) as caught:
        await _transcribe(deepgram, AudioInput.from_path(str(MEDIA / "talk.mp3")))
    assert caught.value.code is ErrorCode.BAD_REQUEST and deepgram.requests == []


# --- pieces through the real ffmpeg prep ----------------------------------------------------------


async def test_one_request_holds_the_audio_the_plan_would_have_cut(deepgram: FakeDeepgram) -> None:
    """The plan cuts at 5 s and 10 kB; the diarizing rung still gets the whole talk at once."""
    plan = SttPlan(chunk_sec=5.0, chunk_bytes=10_000, prep=FfmpegPrep())
    async with httpx.AsyncClient() as http:
        transcript = await transcribe_audio(
            _rung(http, deepgram),
            AudioInput.from_path(str(MEDIA / "talk.mp4")),
            Ctx(timeout=120),
            lang=None,
            plan=plan,
        )
    assert len(deepgram.requests) == 1
    assert {s.speaker for s in transcript.segments} == {"Speaker 1", "Speaker 2"}
    assert transcript.note is None


async def test_audio_cut_into_pieces_loses_its_labels_with_a_note(deepgram: FakeDeepgram) -> None:
    """Each piece numbers its own voices from 0: kept, they would name different people as one."""
    plan = SttPlan(prep=FfmpegPrep())
    async with httpx.AsyncClient() as http:
        rung = _rung(http, deepgram)
        rung.max_sec = 8.0  # the talk is about 17 s: three pieces
        transcript = await transcribe_audio(
            rung, AudioInput.from_path(str(MEDIA / "talk.wav")), Ctx(timeout=120), lang=None, plan=plan
        )
    assert len(deepgram.requests) >= 2
    assert all(s.speaker is None for s in transcript.segments) and transcript.segments
    assert "speaker labels dropped" in (transcript.note or "")


# --- the ladder -----------------------------------------------------------------------------------


@pytest.fixture
def whisper() -> Iterator[FakeWhisper]:
    with FakeWhisper(engine="length") as fake:
        yield fake


async def test_speakers_true_puts_the_labelling_rung_first_on_a_local_file(
    tmp_path: Path, deepgram: FakeDeepgram, whisper: FakeWhisper
) -> None:
    folder = tmp_path / "media"
    folder.mkdir()
    shutil.copy(MEDIA / "talk.mp4", folder / "talk.mp4")
    runtime = build_local_runtime(
        {
            "VID2CONTEXT_HOME": str(tmp_path / "home"),
            "VID2CONTEXT_FILE_ROOTS": str(folder),
            "VID2CONTEXT_STT_URL": f"{whisper.url}/v1",
            "VID2CONTEXT_STT_KEY": "sk-test",
            **deepgram.env(),
        }
    )
    try:
        plain = await get_context(runtime, str(folder / "talk.mp4"), mode="stt")
        # The first enabled rung: the local model when installed, else the Whisper stand-in.
        assert plain.transcript is not None and plain.transcript.producer != "stt/deepgram/nova-3"
        assert not any(s.speaker for s in plain.transcript.segments)
        assert deepgram.requests == []
        labelled = await get_context(runtime, str(folder / "talk.mp4"), mode="stt", speakers=True)
        assert labelled.transcript is not None and labelled.transcript.producer == "stt/deepgram/nova-3"
        assert labelled.attempts[0].stage != "cache"  # Whisper's saved copy has no labels: again
        assert {s.speaker for s in labelled.transcript.segments} == {"Speaker 1", "Speaker 2"}
        assert len(deepgram.requests) == 1 and deepgram.requests[0].size > 0
        again = await get_context(runtime, str(folder / "talk.mp4"), mode="stt", speakers=True)
        assert [a.stage for a in again.attempts] == ["cache"] and len(deepgram.requests) == 1
    finally:
        await runtime.aclose()


# --- the view: kept, dropped, or said -------------------------------------------------------------


def _context(
    speakers: list[str | None], *, origin: str = "captions-manual", producer: str = "youtube/innertube"
) -> VideoContext:
    segments = [
        Segment(start_sec=float(i), end_sec=float(i) + 1, text=f"line {i}", speaker=name)
        for i, name in enumerate(speakers)
    ]
    return VideoContext(
        id=f"youtube:{VIDEO}",
        metadata=VideoMetadata(
            id=VIDEO, platform="youtube", url=f"https://www.youtube.com/watch?v={VIDEO}", title="Talk"
        ),
        transcript=Transcript(
            language="en", origin=origin, timing="caption", producer=producer, segments=segments
        ),  # type: ignore[arg-type]
        fetched_at="2026-11-01T00:00:00Z",
    )


def _labels(context: VideoContext) -> list[str | None]:
    assert context.transcript is not None
    return [s.speaker for s in context.transcript.segments]


def test_the_three_values_of_speakers() -> None:
    runtime = build_runtime(load_settings({}))
    two = _context(["Ana", "Ben", "Ana"])
    one = _context(["Speaker 1", "Speaker 1"])
    assert _labels(with_speakers(runtime, two, None).context) == ["Ana", "Ben", "Ana"]
    assert with_speakers(runtime, two, None).line is None
    assert _labels(with_speakers(runtime, one, None).context) == [None, None]  # one voice says nothing
    assert _labels(with_speakers(runtime, two, False).context) == [None, None, None]
    assert _labels(two) == ["Ana", "Ben", "Ana"]  # a copy: the saved transcript keeps its labels
    kept = with_speakers(runtime, one, True)
    assert _labels(kept.context) == ["Speaker 1", "Speaker 1"]
    assert kept.line == "1 voice labelled (Speaker 1) by youtube/innertube"


def test_without_labels_the_line_says_what_would_give_them() -> None:
    bare = _context([None, None])
    without = with_speakers(build_runtime(load_settings({})), bare, True).line or ""
    assert without.startswith("none: manual captions by youtube/innertube carry no speaker labels")
    assert "DEEPGRAM_API_KEY" in without and "mode=stt" in without
    with_rung = with_speakers(build_runtime(load_settings({"DEEPGRAM_API_KEY": "k"})), bare, True).line or ""
    assert (
        "mode=stt" in with_rung and "stt/deepgram/nova-3" in with_rung and "DEEPGRAM_API_KEY" not in with_rung
    )
    cut = bare.transcript.note = "transcribed in 3 pieces; speaker labels dropped: ..."  # type: ignore[union-attr]
    assert cut
    assert "too long for one request" in (
        with_speakers(build_runtime(load_settings({})), bare, True).line or ""
    )


# --- REST, on the memory runtime and the Worker's ----------------------------------------------


async def _upload(client: httpx.AsyncClient) -> str:
    response = await client.post(f"{API}/uploads", files={"file": ("talk.mp3", TALK, "audio/mpeg")})
    assert response.status_code == 201, response.text
    return response.json()["input"]


@ON_WORKER_TOO
async def test_rest_labels_an_upload_and_false_strips_them(
    runtimes: Runtimes, deepgram: FakeDeepgram
) -> None:
    runtime = await runtimes.build({**QUIET, **deepgram.env()})
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        reference = await _upload(client)
        labelled = await client.get(f"{API}/transcript", params={"url": reference, "speakers": "1"})
        unset = await client.get(f"{API}/transcript", params={"url": reference, "timestamps": "1"})
        never = await client.get(f"{API}/transcript", params={"url": reference, "speakers": "false"})
        srt = await client.get(f"{API}/transcript", params={"url": reference, "format": "srt"})
    assert labelled.status_code == 200, labelled.text
    assert "- Speakers: 2 voices labelled (Speaker 1, Speaker 2) by stt/deepgram/nova-3" in labelled.text
    assert "Speaker 2: The weather today is sunny and warm." in labelled.text
    assert "] Speaker 1: Welcome to the show." in unset.text and "- Speakers:" not in unset.text
    assert never.status_code == 200 and "Speaker 1" not in never.text and "Welcome to the show" in never.text
    assert "Speaker 2: The weather today" in srt.text
    assert deepgram.requests and all(r.size == len(TALK) for r in deepgram.requests)


@ON_WORKER_TOO
async def test_rest_a_caption_transcript_says_how_to_get_labels(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    await runtime.storage.put_context(_context([None, None]))
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        asked = await client.get(f"{API}/transcript", params={"url": VIDEO, "speakers": "yes"})
        quiet = await client.get(f"{API}/transcript", params={"url": VIDEO, "speakers": ""})
        as_json = await client.get(
            f"{API}/transcript", params={"url": VIDEO, "speakers": "1", "format": "json"}
        )
    assert asked.status_code == 200, asked.text
    line = next(x for x in asked.text.splitlines() if x.startswith("- Speakers: "))
    assert "carry no speaker labels" in line and "DEEPGRAM_API_KEY" in line and "mode=stt" in line
    assert quiet.status_code == 200 and "- Speakers:" not in quiet.text  # empty: not given
    note = as_json.json()["transcript"]["note"]
    assert note.startswith("Speakers: none: manual captions") and "DEEPGRAM_API_KEY" in note
    stored = await runtime.storage.get_context(f"youtube:{VIDEO}")
    assert stored is not None and stored.transcript is not None and stored.transcript.note is None


@ON_WORKER_TOO
@pytest.mark.parametrize(
    "value", ["maybe", "2", "1\r\nX-Injected: yes", "<script>", "t" * 10_000, "真", "1;DROP TABLE videos"]
)
async def test_rest_a_bad_speakers_value_is_a_bad_request_before_any_fetch(
    runtimes: Runtimes, deepgram: FakeDeepgram, value: str
) -> None:
    runtime = await runtimes.build({**QUIET, **deepgram.env()})
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        response = await client.get(
            f"{API}/transcript", params={"url": "upload:" + "a" * 64, "speakers": value}
        )
    assert response.status_code == 400, response.text
    body = response.json()["error"]
    assert body["code"] == "bad-request" and "speakers" in body["message"]
    assert body["hint"] == "Give speakers as 1 (or true, yes) or 0."
    # shown shortened and repr'd (a JSON string: no line break can reach a header or a log line)
    assert len(body["message"]) < 80 and "\r" not in response.text and "X-Injected" not in response.headers
    assert deepgram.requests == []


# --- MCP, through the SDK's client -----------------------------------------------------------------


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@ON_WORKER_TOO
async def test_mcp_get_transcript_takes_speakers(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    await runtime.storage.put_context(_context(["Ana", "Ben"]))
    async with Client(create_mcp(runtime)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = listed["get_transcript"].input_schema["properties"]["speakers"]
        assert schema["description"]
        labelled = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": True})
        never = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": False})
        unset = await client.call_tool("get_transcript", {"url": VIDEO})
        wrong = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": "perhaps"})
        listy = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": [True]})
        huge = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": "t" * 100_000})
        number = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": 2})
    assert not labelled.is_error, _text(labelled)
    assert "- Speakers: 2 voices labelled (Ana, Ben) by youtube/innertube" in _text(labelled)
    assert "Ana: line 0" in _text(labelled) and "Ben: line 1" in _text(labelled)
    assert not never.is_error and "Ana" not in _text(never) and "line 0" in _text(never)
    assert "Ana: line 0" in _text(unset) and "- Speakers:" not in _text(unset)
    for bad in (wrong, listy, huge, number):
        assert bad.is_error and "speakers" in _text(bad)


@ON_WORKER_TOO
async def test_mcp_without_labels_the_note_is_ours_after_the_fence(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    await runtime.storage.put_context(_context([None, None]))
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("get_transcript", {"url": VIDEO, "speakers": True})
    assert not result.is_error, _text(result)
    text = _text(result)
    after = text[text.index("=== END UNTRUSTED VIDEO TEXT") :]
    (note,) = [line for line in after.splitlines() if line.startswith("Speakers: none:")]
    assert "DEEPGRAM_API_KEY" in note and "mode=stt" in note
    assert text.count("Speakers: none") == 1
