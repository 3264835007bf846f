"""Translation: ``GET /transcript?lang=xx&translate=1`` and get_transcript ``translate``.

The recorded video (``GJLlxj_dtq8``) has manual tracks in zh, cs, en, de, hi, ja, ko and es, and
YouTube translates into eighteen languages more (fr among them, sv not). So ``de`` is the
platform's own track, ``fr`` YouTube's translation (both answered without a language model), and
``sv`` needs one: the stand-in model (``tests/fake_llm.py``) "translates" by marking each numbered
line (``[n] sv: text``), which is what lets a test check that every segment kept its text's place
and its times. Models that answer the wrong number of lines, ramble past the token limit or fail
half-way are scripted replies of the same stand-in. The calling client's model answers through the
SDK client's real sampling callback, in process and over stdio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
from mcp.client import Client

from vid2context.answers.llm.base import LlmPlan
from vid2context.answers.translate import MAX_LINES, PREFIX, read_numbered, translate_context, translation_key
from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.models import VideoContext
from vid2context.runtime import Runtime
from vid2context.tokens import estimate_tokens

from .cloudflare_bindings import WorkersAi
from .fake_llm import FakeLlm, Request, numbered, translator
from .hint_steps import problems, surfaces
from .runtimes import Runtimes
from .stdio_sampling import sampling_stdio
from .talks import three_hour_talk
from .test_mcp_tools import text_of
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    # The stand-in model is a real server on 127.0.0.1: only YouTube is answered by httpx_mock.
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

VIDEO = "GJLlxj_dtq8"
SOURCE = [  # the recorded English track: (start, end, text)
    (0.0, 1.54, "Hey, this is just a test"),
    (1.54, 5.7, "this is not the original transcript"),
    (5.7, 8.939, "just something shorter, I made up for testing"),
]
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=translator("sv")) as server:
        yield server


def local_model(fake: FakeLlm, **more: str) -> dict[str, str]:
    return {**QUIET, "VID2CONTEXT_LLM_URL": fake.url + "/v1", "VID2CONTEXT_LLM_MODEL": "llama3.2", **more}


@pytest.fixture
async def youtube(httpx_mock: Any) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)


def rest(runtime: Runtime) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t")


async def transcript(client: httpx.AsyncClient, lang: str, **params: str) -> httpx.Response:
    return await client.get("/api/v1/transcript", params={"url": VIDEO, "lang": lang, **params})


def segments(answer: httpx.Response) -> list[tuple[float, float, str]]:
    found = answer.json()["transcript"]["segments"]
    return [(s["startSec"], s["endSec"], s["text"]) for s in found]


# --- the platform first -------------------------------------------------------------------------------


@pytest.mark.usefixtures("youtube")
@pytest.mark.parametrize(("lang", "origin"), [("de", "captions-manual"), ("fr", "captions-translated")])
async def test_a_platform_track_or_its_own_translation_comes_first(
    runtimes: Runtimes, fake: FakeLlm, lang: str, origin: str
) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        answer = await transcript(client, lang, translate="1", format="json")
    found = answer.json()["transcript"]
    assert answer.status_code == 200 and (found["language"], found["origin"]) == (lang, origin)
    assert found["translated"] is False and fake.requests == []  # no language model was asked


# --- a language model's translation -------------------------------------------------------------------


@pytest.mark.usefixtures("youtube")
async def test_a_language_model_translates_every_segment_and_keeps_its_times(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        plain = await transcript(client, "sv", format="json")
        answer = await transcript(client, "sv", translate="1", format="json")
        text = await transcript(client, "sv", translate="1", timestamps="1")
    assert segments(plain) == SOURCE  # without translate=1: the best track, as it is
    assert answer.status_code == 200 and answer.headers["content-language"] == "sv"
    assert segments(answer) == [(start, end, f"sv: {words}") for start, end, words in SOURCE]
    found = answer.json()["transcript"]
    assert (found["language"], found["origin"], found["translated"]) == ("sv", "captions-manual", True)
    assert found["producer"] == "llm/self-hosted/llama3.2" and found["requestedLanguage"] is None
    assert found["note"].startswith("no sv track: translated from en by llm/self-hosted/llama3.2 (1 request)")
    assert ("llm/self-hosted/llama3.2", "llm", "ok") in [
        (a["id"], a["stage"], a["outcome"]) for a in answer.json()["attempts"]
    ]
    lines = text.text.splitlines()
    assert (
        "- Transcript: manual captions translated by a language model, sv, by llm/self-hosted/llama3.2"
        in text.text
    )
    assert any(line.startswith("- Track: no sv track: translated from en") for line in lines)
    assert lines[-3:] == [
        "[0:00] sv: Hey, this is just a test",
        "[0:01] sv: this is not the original transcript",
        "[0:05] sv: just something shorter, I made up for testing",
    ]
    (request,) = fake.answered  # one translation, saved: the text answer read it back
    assert numbered(request) == [(1, SOURCE[0][2]), (2, SOURCE[1][2]), (3, SOURCE[2][2])]
    assert request.messages[0]["role"] == "system" and "sv" in request.messages[0]["content"]
    assert request.body["temperature"] == 0.0


@pytest.mark.usefixtures("youtube")
async def test_a_repeat_is_read_from_the_library_on_every_surface(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        first = await transcript(client, "sv", translate="1", format="json")
        again = await transcript(client, "SV", translate="1", format="json")
    async with Client(create_mcp(runtime)) as mcp:
        page = await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv", "translate": True})
    assert len(fake.requests) == 1
    assert segments(again) == segments(first)
    assert ("translation/SV", "cache") in [(a["id"], a["stage"]) for a in again.json()["attempts"]]
    assert "[0:00] sv: Hey, this is just a test" in "\n".join(unfence(text_of(page)))
    assert await runtime.blobs.list_blobs(PREFIX) == [translation_key(f"youtube:{VIDEO}", "sv")]


@pytest.mark.usefixtures("youtube")
async def test_deleting_the_video_deletes_its_translations(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        await transcript(client, "sv", translate="1")
        assert (await client.delete(f"/api/v1/library/youtube%3A{VIDEO}")).status_code == 204
    assert await runtime.blobs.list_blobs(PREFIX) == []


def _talk(minutes: int) -> VideoContext:
    return three_hour_talk("TalkToSwede", minutes=minutes)


async def _translated(runtime: Runtime, context: VideoContext, lang: str = "sv") -> VideoContext:
    ctx = Ctx(timeout=120)
    return await translate_context(runtime, context, lang, llm=True, ctx=ctx)


async def test_a_long_transcript_goes_in_batches_that_fit_the_rung(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake, VID2CONTEXT_LLM_CONTEXT_TOKENS="1024"))
    runtime.llm_plan = LlmPlan(concurrency=1)  # the requests in the order of their batches
    talk = _talk(10)
    done = await _translated(runtime, talk)
    source = talk.transcript
    assert source is not None and done.transcript is not None and len(source.segments) > 100
    rung = runtime.llm[-1]
    budget = min(rung.max_output_tokens // 2, (rung.context_tokens - 400) // 3)
    sent = [numbered(request) for request in fake.answered]
    assert [n for lines in sent for n, _ in lines] == [n for lines in sent for n in range(1, len(lines) + 1)]
    assert [text for lines in sent for _, text in lines] == [
        s.text for s in source.segments
    ]  # each once, in order
    for lines in sent:
        assert len(lines) <= MAX_LINES and sum(estimate_tokens(text) + 4 for _, text in lines) <= budget
    assert [(s.start_sec, s.end_sec) for s in done.transcript.segments] == [
        (s.start_sec, s.end_sec) for s in source.segments
    ]
    assert [s.text for s in done.transcript.segments] == [f"sv: {s.text}" for s in source.segments]
    assert f"({len(sent)} requests)" in (done.transcript.note or "")


async def test_a_wrong_number_of_lines_is_asked_again_once(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake))
    proper = translator("sv")

    def drops_a_line_at_first(request: Request) -> str:
        answer = proper(request)
        return "\n".join(answer.splitlines()[:-1]) if len(request.messages) == 2 else answer

    fake.reply = drops_a_line_at_first
    done = await _translated(runtime, _talk(1))
    assert done.transcript is not None and all(s.text.startswith("sv: ") for s in done.transcript.segments)
    first, second = fake.answered
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    count = len(numbered(first))
    assert f"had {count - 1} numbered lines, and there are {count}" in second.messages[-1]["content"]


async def test_a_model_that_keeps_merging_lines_is_split_down_to_one_line_a_request(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))

    def merges(request: Request) -> str:
        lines = numbered(request)
        if len(lines) > 1:  # two lines said as one, as a careless model does
            return (
                "[1] sv: "
                + " ".join(text for _, text in lines[:2])
                + "\n"
                + "\n".join(f"[{n - 1}] sv: {text}" for n, text in lines[2:])
            )
        return f"[1] sv: {lines[0][1]}"

    fake.reply = merges
    talk = _talk(1)
    done = await _translated(runtime, talk)
    assert talk.transcript is not None and done.transcript is not None
    assert [s.text for s in done.transcript.segments] == [f"sv: {s.text}" for s in talk.transcript.segments]
    assert [s.start_sec for s in done.transcript.segments] == [s.start_sec for s in talk.transcript.segments]
    single = [r for r in fake.answered if len(numbered(r)) == 1]
    assert len(single) == len(talk.transcript.segments)  # every segment ended up asked alone


async def test_an_answer_cut_by_the_token_limit_is_split_not_asked_again(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))
    proper = translator("sv")

    def rambles_over_two_lines(request: Request) -> str:
        if len(numbered(request)) > 2:
            return "Sure! Let me explain first. " + "very " * 5000
        return proper(request)

    fake.reply = rambles_over_two_lines
    talk = _talk(1)
    done = await _translated(runtime, talk)
    assert done.transcript is not None and all(s.text.startswith("sv: ") for s in done.transcript.segments)
    assert all(len(r.messages) == 2 for r in fake.answered)  # no re-ask: a cut answer is split at once


async def test_a_rung_that_fails_half_way_hands_the_rest_to_the_next(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake, GROQ_API_KEY="gsk-test", GROQ_BASE_URL=fake.url))
    runtime.llm_plan = LlmPlan(concurrency=1, retries=0)
    talk = _talk(10)

    def local_overloaded_after_one_batch(request: Request) -> int | None:
        local = [r for r in fake.requests if r.path == "/v1/chat/completions"]
        return 503 if request.path == "/v1/chat/completions" and len(local) > 1 else None

    fake.refuse = local_overloaded_after_one_batch
    done = await _translated(runtime, talk)
    assert done.transcript is not None and talk.transcript is not None
    assert done.transcript.producer == "llm/self-hosted/llama3.2 + llm/groq/llama-3.3-70b-versatile"
    assert [s.text for s in done.transcript.segments] == [f"sv: {s.text}" for s in talk.transcript.segments]
    outcomes = [(a.id, a.outcome) for a in done.attempts if a.stage == "llm" and a.outcome != "skipped"]
    assert outcomes == [("llm/self-hosted/llama3.2", "error"), ("llm/groq/llama-3.3-70b-versatile", "ok")]


async def test_a_changed_source_is_translated_again(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake))
    talk = _talk(1)
    await _translated(runtime, talk)
    await _translated(runtime, talk)
    asked = len(fake.requests)
    assert talk.transcript is not None
    changed = msgspec.structs.replace(
        talk, transcript=msgspec.structs.replace(talk.transcript, segments=talk.transcript.segments[:-1])
    )
    again = await _translated(runtime, changed)
    assert len(fake.requests) > asked and again.transcript is not None
    assert len(again.transcript.segments) == len(talk.transcript.segments) - 1


def test_numbered_lines_must_be_all_there_in_order() -> None:
    assert read_numbered("Here you go:\n```\n[1] a\n[2] b\n```", 2) == ["a", "b"]
    assert read_numbered("[1] a\n[2]  b  c ", 2) == ["a", "b c"]
    assert read_numbered("[1] a", 2) is None  # one missing
    assert read_numbered("[2] b\n[1] a", 2) is None  # out of order
    assert read_numbered("[1] a\n[1] a\n[2] b", 2) is None  # twice
    assert read_numbered("[1] a\ncontinued\n[2] b", 2) is None  # a line split in two
    assert read_numbered("[1] a\n[2] ", 2) is None  # an empty translation
    assert read_numbered("[1] a\n[2] b\n[3] c", 2) is None  # one too many


# --- the note and bad input ---------------------------------------------------------------------------


@pytest.mark.usefixtures("youtube")
async def test_the_missing_language_note_says_how_to_ask_for_a_translation(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        text = (await transcript(client, "sv")).text
    async with Client(create_mcp(runtime)) as mcp:
        page = "\n".join(
            unfence(text_of(await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv"})))
        )
    assert (
        "- Track: requested sv not available (translate=1 has a language model translate it), so the best"
        in text
    )
    assert "- Track: requested sv not available (translate=true has a language model translate it)," in page
    assert fake.requests == []
    stored = await runtime.storage.get_context(f"youtube:{VIDEO}")
    assert (
        stored is not None
        and stored.transcript is not None
        and "translate" not in (stored.transcript.note or "")
    )


@pytest.mark.usefixtures("youtube")
async def test_translate_without_a_language_model_is_no_provider(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    async with rest(runtime) as client:
        answer = await transcript(client, "sv", translate="1")
        plain = await transcript(client, "sv")
    error = answer.json()["error"]
    assert answer.status_code == 503 and error["code"] == "no-provider"
    assert problems(error["hint"], surfaces()["rest"], code="no-provider") == []
    assert "GROQ_API_KEY" in error["hint"] and "translate=1" not in plain.text  # nothing to offer


@pytest.mark.usefixtures("youtube")
@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"translate": "1"}, "needs the language"),
        ({"lang": "sv", "translate": "maybe"}, "translate must be 1 or 0"),
    ],
)
async def test_bad_translate_requests_are_bad_requests(
    runtimes: Runtimes, fake: FakeLlm, params: dict[str, str], said: str
) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with rest(runtime) as client:
        answer = await client.get("/api/v1/transcript", params={"url": VIDEO, **params})
    assert answer.status_code == 400 and said in answer.json()["error"]["message"]
    assert problems(answer.json()["error"]["hint"], surfaces()["rest"], code="bad-request") == []
    assert fake.requests == []


async def test_translate_without_a_language_is_a_bad_request_over_mcp(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("get_transcript", {"url": VIDEO, "translate": True})
    assert result.is_error and '"bad-request"' in result.content[0].text and fake.requests == []


# --- the client's own model (MCP sampling) ------------------------------------------------------------


def sampling_translator(tag: str, asked: list[Any]) -> Callable[..., Any]:
    """A client whose model "translates" numbered lines, as the SDK's sampling callback."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        first = next(m for m in params.messages if m.role == "user")
        assert isinstance(first.content, types.TextContent)
        lines = [line.split("] ", 1) for line in first.content.text.splitlines()]
        text = "\n".join(f"{number}] {tag}: {words}" for number, words in lines)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=text),
            model="client-model-7",
            stop_reason="endTurn",
        )

    return sample


@pytest.mark.usefixtures("youtube")
async def test_the_clients_own_model_translates_when_it_can_sample(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(
        local_model(fake)
    )  # a local model too: the free policy asks the client first
    asked: list[Any] = []
    async with Client(
        create_mcp(runtime), mode="legacy", sampling_callback=sampling_translator("sv", asked)
    ) as mcp:
        result = await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv", "translate": True})
    page = "\n".join(unfence(text_of(result)))
    assert not result.is_error and "[0:00] sv: Hey, this is just a test" in page
    assert "by llm/mcp-sampling/client" in page and fake.requests == []
    (params,) = asked
    assert params.system_prompt is not None and "sv" in params.system_prompt
    assert params.temperature == 0.0 and params.model_preferences is not None


@pytest.mark.usefixtures("youtube")
async def test_without_sampling_in_the_call_the_next_rung_translates(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(local_model(fake))
    asked: list[Any] = []
    async with Client(
        create_mcp(runtime), sampling_callback=sampling_translator("sv", asked)
    ) as mcp:  # 2026-07-28
        result = await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv", "translate": True})
    page = "\n".join(unfence(text_of(result)))
    assert "by llm/self-hosted/llama3.2" in page and asked == [] and len(fake.requests) == 1


@pytest.mark.usefixtures("youtube")
async def test_a_client_that_cannot_sample_and_no_rung_is_no_provider(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    async with Client(create_mcp(runtime), mode="legacy") as mcp:
        result = await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv", "translate": True})
    assert result.is_error
    body = msgspec.json.decode(result.content[0].text)
    assert body["error"] == "no-provider"
    assert problems(body["hint"], surfaces()["mcp"], code="no-provider") == []
    assert {
        "id": "llm/mcp-sampling/client",
        "stage": "llm",
        "outcome": "skipped",
        "reason": "unavailable",
        "detail": "the MCP client did not declare sampling",
    } in body["attempts"]


@pytest.mark.slow
async def test_the_stdio_server_translates_with_the_clients_model(tmp_path: Path) -> None:
    asked: list[Any] = []
    async with sampling_stdio(tmp_path, sampling_translator("sv", asked)) as mcp:
        result = await mcp.call_tool("get_transcript", {"url": VIDEO, "language": "sv", "translate": True})
        again = await mcp.call_tool(
            "get_transcript", {"url": VIDEO, "language": "sv", "translate": True, "timestamps": False}
        )
    page = "\n".join(unfence(text_of(result)))
    assert not result.is_error and "[0:05] sv: just something shorter, I made up for testing" in page
    assert "sv: Hey, this is just a test" in "\n".join(unfence(text_of(again)))
    assert len(asked) == 1  # the second call read the translation the first saved in the SQLite library


# --- the Worker ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("youtube")
@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_the_worker_translates_through_its_ai_binding_and_keeps_it_in_r2(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    binding = WorkersAi(fake.url)
    runtime = await runtimes.build(QUIET, ai=binding)
    async with rest(runtime) as client:
        first = await transcript(client, "sv", translate="1", format="json")
        again = await transcript(client, "sv", translate="1", format="json")
    assert first.status_code == 200, first.text
    assert (
        segments(first) == segments(again) == [(start, end, f"sv: {words}") for start, end, words in SOURCE]
    )
    assert first.json()["transcript"]["producer"] == "llm/cloudflare/@cf/meta/llama-3.3-70b-instruct-fp8-fast"
    assert [model for model in binding.models if "llama" in model] == [
        "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
    ]
    listed = await runtimes.env_of(runtime).BUCKET.list(prefix=PREFIX)
    assert [item.key for item in listed.objects] == [translation_key(f"youtube:{VIDEO}", "sv")]


async def test_a_translation_error_names_the_attempts(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(local_model(fake))
    runtime.llm_plan = LlmPlan(retries=0)
    fake.key = "sk-other"
    with pytest.raises(VidError) as raised:
        await _translated(runtime, _talk(1))
    assert raised.value.code is ErrorCode.AUTH and "VID2CONTEXT_LLM_KEY" in (raised.value.hint or "")
    assert [(a.id, a.reason) for a in raised.value.attempts if a.outcome == "error"] == [
        ("llm/self-hosted/llama3.2", "auth")
    ]
