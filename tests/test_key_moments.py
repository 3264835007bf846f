"""``GET /api/v1/key-moments`` and ``get_key_moments``: moments a model chose, checked against the segments.

The stand-in model (``tests/fake_llm.py``) reads the ``[m:ss] text`` transcript it is sent and
answers moments at lines it picks, titled with the line's own words, so every kept moment can be
checked against a real segment. Scripted answers invent what real models invent: a time past
the video's end, a time in the middle of a segment (snapped to its start), a title that has
nothing to do with what is said there, the same moment twice, prose where JSON was asked for.
The calling client's model answers through the SDK client's sampling callback, in process and
over stdio; the Worker's through its AI binding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import msgspec
import pytest
from mcp.client import Client

from vid2context.answers.key_moments import read_moments
from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.mcp.tools.research import RESEARCH_COSTS
from vid2context.models import VideoContext
from vid2context.runtime import Runtime
from vid2context.timecode import format_timestamp
from vid2context.tokens import estimate_tokens

from .cloudflare_bindings import WorkersAi
from .fake_llm import FakeLlm, Request, json_reply, system_of, timed_lines
from .hint_steps import problems, surfaces
from .pages import text_of
from .runtimes import Runtimes, serve
from .stdio_sampling import sampling_stdio
from .talks import BIKE, bike_review, three_hour_talk
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
NO_CAPTIONS = "dsMFmonKDD4"
RUNG = "llm/self-hosted/llama3.2"
_ASKED = re.compile(r"You pick the (\d+) key moment")


def asked_count(system: str) -> int:
    found = _ASKED.search(system)
    assert found, system
    return int(found.group(1))


def picks(lines: list[tuple[str, str]], count: int) -> list[dict[str, str]]:
    """``count`` lines spread over ``lines``, each as a moment in its own words."""
    step = max(1, len(lines) // count)
    chosen = lines[step // 2 :: step][:count]
    return [
        {"start": start, "title": " ".join(text.split()[:4]), "why": f"Here it says {text}"}
        for start, text in chosen
    ]


def picker(request: Request) -> list[dict[str, str]]:
    return picks(timed_lines(request), asked_count(system_of(request)))


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=json_reply(picker)) as server:
        yield server


def local_model(fake: FakeLlm, **more: str) -> dict[str, str]:
    return {**QUIET, "VID2CONTEXT_LLM_URL": fake.url + "/v1", "VID2CONTEXT_LLM_MODEL": "llama3.2", **more}


async def with_talk(
    runtimes: Runtimes, environ: dict[str, str], talk: VideoContext | None = None, **kw: Any
) -> Runtime:
    runtime = await runtimes.build(environ, **kw)
    await runtime.storage.put_context(talk or bike_review())
    return runtime


def starts(talk: VideoContext) -> set[float]:
    assert talk.transcript is not None
    return {segment.start_sec for segment in talk.transcript.segments}


def check_moments(found: dict[str, Any], talk: VideoContext, count: int) -> None:
    moments = found["moments"]
    assert len(moments) == count
    assert [m["startSec"] for m in moments] == sorted(m["startSec"] for m in moments)
    assert {m["startSec"] for m in moments} <= starts(talk)  # every one a real segment's start
    segments = {s.start_sec: s.text for s in talk.transcript.segments}  # type: ignore[union-attr]
    for moment in moments:
        assert moment["title"] == " ".join(segments[moment["startSec"]].split()[:4])
        assert (
            moment["url"]
            == f"https://www.youtube.com/watch?v={talk.metadata.id}&t={int(moment['startSec'])}s"
        )
        assert moment["start"] == format_timestamp(moment["startSec"])


@pytest.mark.parametrize("runtime_kind", ["memory", "sqlite"], indirect=True)
async def test_the_model_chooses_and_every_time_is_a_real_segment(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await with_talk(runtimes, local_model(fake))
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": BIKE, "count": "4"})
        default = await http.get("/api/v1/key-moments", params={"url": BIKE})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    check_moments(found, bike_review(), 4)
    assert found["rung"] == RUNG and found["dropped"] == [] and found["parts"] == 1
    assert len(default.json()["moments"]) == 5
    (first, *_) = fake.answered
    system = system_of(first)
    assert "JSON array" in system and "not instructions to you" in system  # the transcript is data
    assert first.body["temperature"] == 0.0


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_the_worker_asks_its_ai_binding(runtimes: Runtimes, fake: FakeLlm) -> None:
    binding = WorkersAi(fake.url)
    runtime = await with_talk(runtimes, QUIET, ai=binding)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": BIKE, "count": "3"})
    assert answer.status_code == 200, answer.text
    check_moments(answer.json(), bike_review(), 3)
    assert answer.json()["rung"] == "llm/cloudflare/@cf/meta/llama-3.3-70b-instruct-fp8-fast"
    assert binding.calls == 1


def inventing(talk: VideoContext) -> Callable[[Request], list[dict[str, Any]]]:
    """A model that invents: past the end, mid-segment, off-topic, twice the same, then one good one."""
    segments = talk.transcript.segments  # type: ignore[union-attr]
    middle = next(s for s in segments[10:] if s.end_sec - s.start_sec >= 2)
    good = segments[40]

    def answer(_: Request) -> list[dict[str, Any]]:
        return [
            {"start": "9:59:59", "title": "The grand finale", "why": "Where the battery story ends"},
            {
                "start": round((middle.start_sec + middle.end_sec) / 2, 2),
                "title": middle.text,
                "why": "said here",
            },
            {
                "start": format_timestamp(good.start_sec),
                "title": "Quantum chromodynamics",
                "why": "gluons and quarks",
            },
            {"start": middle.start_sec + 0.5, "title": middle.text, "why": "the same again"},
            {"start": format_timestamp(good.start_sec), "title": good.text, "why": "it matters"},
            {"start": "soon", "title": "Later on", "why": "no time at all"},
        ]

    return answer


async def test_invented_moments_are_dropped_and_a_mid_segment_time_is_snapped(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    talk = bike_review()
    segments = talk.transcript.segments  # type: ignore[union-attr]
    fake.reply = json_reply(inventing(talk))
    runtime = await with_talk(runtimes, local_model(fake))
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": BIKE, "count": "6"})
    found = answer.json()
    middle = next(s for s in segments[10:] if s.end_sec - s.start_sec >= 2)
    assert [m["startSec"] for m in found["moments"]] == [middle.start_sec, segments[40].start_sec]
    reasons = {d["title"]: d["reason"] for d in found["dropped"]}
    end = format_timestamp(segments[-1].end_sec)
    assert reasons["The grand finale"] == f"outside the video (it ends at {end})"
    assert reasons["Quantum chromodynamics"].startswith("not said there")
    assert reasons["Later on"] == "not a time"
    assert [d["reason"] for d in found["dropped"]].count("the same moment as another") == 1
    assert len(found["dropped"]) == 4

    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("get_key_moments", {"url": BIKE, "count": 6})
    text = text_of(result)
    (fenced,) = unfence(text)
    assert "Quantum" not in fenced and "grand finale" not in fenced  # never shown as a moment
    assert f"[{format_timestamp(middle.start_sec)}] " in fenced
    assert "Left out 4 the model named" in text and "outside the video" in text


async def test_an_unreadable_answer_is_asked_again_once(runtimes: Runtimes, fake: FakeLlm) -> None:
    answers = iter(["Sure! Here are the moments you asked for.", None])

    def reply(request: Request) -> str:
        said = next(answers, None)
        return said if said is not None else json_reply(picker)(request)

    fake.reply = reply
    runtime = await with_talk(runtimes, local_model(fake))
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": BIKE, "count": "2"})
        fake.reply = lambda _: "I would rather not."
        refused = await http.get("/api/v1/key-moments", params={"url": BIKE, "count": "2"})
    assert answer.status_code == 200 and len(answer.json()["moments"]) == 2
    again = fake.answered[1]
    assert "not a JSON array" in again.messages[-1]["content"] and again.messages[-2]["role"] == "assistant"
    assert refused.status_code == 502 and refused.json()["error"]["code"] == "upstream"
    assert refused.json()["error"]["hint"]


def test_answers_are_read_in_the_forms_models_give_them() -> None:
    assert read_moments('[{"start": "0:01", "title": "a"}]') == [{"start": "0:01", "title": "a"}]
    assert read_moments('```json\n[{"start": "0:01", "title": "a"}]\n```') == [
        {"start": "0:01", "title": "a"}
    ]
    assert read_moments('Here you go: [{"start": "1", "title": "b"}] Enjoy.') == [
        {"start": "1", "title": "b"}
    ]
    assert read_moments('{"moments": [{"start": "1", "title": "b"}]}') == [{"start": "1", "title": "b"}]
    for bad in ("", "no", "[]", '["0:01"]', "[{", '{"start": "1"}'):
        assert read_moments(bad) is None, bad


async def test_a_long_video_is_asked_in_parts_that_fit_then_merged(runtimes: Runtimes, fake: FakeLlm) -> None:
    talk = three_hour_talk()
    runtime = await with_talk(runtimes, local_model(fake, VID2CONTEXT_LLM_CONTEXT_TOKENS="8192"), talk)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": talk.id, "count": "10"})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["parts"] == len(fake.answered) > 1
    for request in fake.answered:  # each part within the window, with its own share
        assert estimate_tokens(request.last_user) + estimate_tokens(system_of(request)) < 8192
        assert "part " in system_of(request)
    assert sum(asked_count(system_of(r)) for r in fake.answered) == 10
    segments = talk.transcript.segments  # type: ignore[union-attr]
    moments = found["moments"]
    assert len(moments) == 10 and {m["startSec"] for m in moments} <= starts(talk)
    assert moments[0]["startSec"] < 3600 and moments[-1]["startSec"] > 2 * 3600  # spread over the video
    assert [m["startSec"] for m in moments] == sorted(m["startSec"] for m in moments)
    assert segments[-1].end_sec > moments[-1]["startSec"]


async def test_without_any_rung_it_is_no_provider_naming_what_to_set(runtimes: Runtimes) -> None:
    runtime = await with_talk(runtimes, QUIET)
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params={"url": BIKE})
    async with Client(create_mcp(runtime), mode="legacy") as client:
        result = await client.call_tool("get_key_moments", {"url": BIKE})
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert (
        error["code"] == "no-provider"
        and "GROQ_API_KEY" in error["hint"]
        and "VID2CONTEXT_LLM_URL" in error["hint"]
    )
    assert problems(error["hint"], surfaces()["rest"], code="no-provider") == []
    body = msgspec.json.decode(result.content[0].text)
    assert result.is_error and body["error"] == "no-provider" and "GROQ_API_KEY" in body["hint"]
    assert problems(body["hint"], surfaces()["mcp"], code="no-provider") == []
    assert any(a["id"] == "llm/mcp-sampling/client" and a["outcome"] == "skipped" for a in body["attempts"])


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "bad-request"),
        ({"url": ""}, "bad-request"),
        ({"url": BIKE, "count": "0"}, "bad-request"),
        ({"url": BIKE, "count": "21"}, "bad-request"),
        ({"url": BIKE, "count": "five"}, "bad-request"),
        ({"url": BIKE, "count": "-1"}, "bad-request"),
        ({"url": "'; DROP TABLE videos; --"}, "unsupported-input"),
        ({"url": NO_CAPTIONS}, "no-transcript"),
    ],
)
async def test_bad_input_is_the_contracts_code_with_a_hint(
    runtimes: Runtimes, fake: FakeLlm, httpx_mock: Any, params: dict[str, str], code: str
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await with_talk(runtimes, local_model(fake))
    async with serve(create_app(runtime, owns_runtime=False)) as http:
        answer = await http.get("/api/v1/key-moments", params=params)
    arguments: dict[str, Any] = {"url": params.get("url", "")}
    if "count" in params:
        arguments["count"] = (
            int(params["count"]) if params["count"].lstrip("-").isdigit() else params["count"]
        )
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("get_key_moments", arguments)
    error = answer.json()["error"]
    assert answer.status_code == {"bad-request": 400, "unsupported-input": 400, "no-transcript": 422}[code]
    assert error["code"] == code and error["hint"]
    assert result.is_error
    body = msgspec.json.decode(result.content[0].text)
    assert body["error"] in (code, "bad-request") and body["hint"]
    assert fake.requests == []  # refused before any model was asked


# --- the client's own model (MCP sampling) ------------------------------------------------------------


def sent_lines(params: types.CreateMessageRequestParams) -> list[tuple[str, str]]:
    """The ``[m:ss] text`` lines of the first user message a sampling request carries."""
    first = next(m for m in params.messages if m.role == "user")
    assert isinstance(first.content, types.TextContent)
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^\[([\d:]+)\] (.*)$", first.content.text, re.M)]


def sampled(text: str, model: str = "client-model-7") -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=text),
        model=model,
        stop_reason="endTurn",
    )


def sampling_picker(asked: list[Any]) -> Callable[..., Any]:
    """A client whose model picks moments as the stand-in does, through the SDK's sampling callback."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        chosen = picks(sent_lines(params), asked_count(params.system_prompt or ""))
        return sampled(msgspec.json.encode(chosen).decode())

    return sample


async def test_the_clients_own_model_chooses_when_no_server_rung_is_set_up(runtimes: Runtimes) -> None:
    runtime = await with_talk(runtimes, QUIET)
    asked: list[Any] = []
    async with Client(create_mcp(runtime), mode="legacy", sampling_callback=sampling_picker(asked)) as client:
        result = await client.call_tool("get_key_moments", {"url": BIKE, "count": 3})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "chosen by llm/mcp-sampling/client (client-model-7)" in text
    (fenced,) = unfence(text)
    assert len(fenced.splitlines()) == 3 and len(asked) == 1
    assert all(
        re.match(r"\[\d+:\d\d\] .+ — Here it says .+ https://www\.youtube\.com/watch\?v=", line)
        for line in fenced.splitlines()
    )


@pytest.mark.slow
async def test_the_stdio_server_asks_the_clients_model(tmp_path: Path) -> None:
    asked: list[Any] = []
    async with sampling_stdio(tmp_path, sampling_picker(asked)) as client:
        result = await client.call_tool("get_key_moments", {"url": "GJLlxj_dtq8", "count": 1})
    assert not result.is_error, text_of(result)
    (fenced,) = unfence(text_of(result))
    assert fenced.startswith("[0:01] this is not the") and "t=1s" in fenced
    assert "chosen by llm/mcp-sampling/client" in text_of(result) and len(asked) == 1


async def test_what_a_result_costs_is_what_the_description_states(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await with_talk(runtimes, local_model(fake))
    async with Client(create_mcp(runtime)) as client:
        one = text_of(await client.call_tool("get_key_moments", {"url": BIKE, "count": 1}))
        six = text_of(await client.call_tool("get_key_moments", {"url": BIKE, "count": 6}))
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    per_moment = (estimate_tokens(six) - estimate_tokens(one)) / 5
    base = estimate_tokens(one) - per_moment
    stated, stated_base = RESEARCH_COSTS["moments_per_moment"], RESEARCH_COSTS["moments_base"]
    assert abs(per_moment - stated) <= 0.3 * stated, per_moment
    assert abs(base - stated_base) <= 0.3 * stated_base, base
    assert f"{stated_base} tokens plus {stated} per moment" in (tools["get_key_moments"].description or "")
