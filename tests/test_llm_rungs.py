"""Every language-model rung against one contract, and each hosted rung against its service's failures.

The contract (``answers/llm/base.py``): ``complete`` answers the whole text with the model, the
finish reason and the usage the service counted; ``stream`` yields it in pieces and ends with a
delta carrying that same whole answer; ``max_tokens`` cuts an answer with ``finish_reason
length``. The rungs, each against the stand-in (``tests/fake_llm.py``) over real HTTP:

- ``openai``: an OpenAI-compatible endpoint (``/v1/chat/completions``);
- ``groq-sdk``: Groq through the groq SDK with ``GROQ_BASE_URL`` (``/openai/v1/...``);
- ``groq-httpx``: the same rung over plain httpx, as the Worker (no groq SDK) builds it;
- ``workers-ai``: Workers AI's REST API over httpx;
- ``binding``: the Worker's ``AI`` binding (``tests/cloudflare_bindings.WorkersAi`` through
  ``storage/cloudflare.CloudflareAi``, as the Worker's runtime wraps it), streaming through the
  ``ReadableStream`` it returns.

Failures are the services' own: 401 for a wrong key (``auth``, naming the variable to fix), 429
with ``Retry-After`` (waited for, seen through the plan's ``sleep``: nothing waits), 500, an unknown
model, a stream that stops before its end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from vid2context.answers.llm.base import Delta, LanguageModel, LlmOptions, LlmPlan
from vid2context.answers.llm.groq import GroqLlm
from vid2context.answers.llm.ladder import call
from vid2context.answers.llm.openai_compat import OpenAICompatibleLlm
from vid2context.answers.llm.rungs import groq_over_httpx, hosted_llms
from vid2context.answers.llm.sampling import SamplingLlm
from vid2context.answers.llm.sse import DONE, events, lines_of
from vid2context.answers.llm.workers_ai import WORKERS_AI_LLM_MODEL, WorkersAIBindingLlm, WorkersAILlm
from vid2context.ctx import Ctx
from vid2context.errors import STATUS_BY_CODE, ErrorCode, VidError
from vid2context.models import ChatMessage, Usage
from vid2context.providers.speech import RungError
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.storage.cloudflare import CloudflareAi

from .cloudflare_bindings import WorkersAi
from .fake_llm import GROQ_MODEL, FakeLlm
from .runtimes import Runtimes

pytestmark = pytest.mark.anyio

KEY = "sk-test-llm-0123456789"
ACCOUNT = "acct-0123"
RUNGS = ("openai", "groq-sdk", "groq-httpx", "workers-ai", "binding")
ASK = [
    ChatMessage(role="system", content="Answer in one line."),
    ChatMessage(role="user", content="what does the kickstand do"),
]
ANSWER = "You said: what does the kickstand do"
USAGE = Usage(prompt_tokens=9, completion_tokens=7, total_tokens=16)
"""What the stand-in counts for ``ASK`` and ``ANSWER``: words."""
KEY_SETTING = {
    "openai": "VID2CONTEXT_LLM_KEY",
    "groq-sdk": "GROQ_API_KEY",
    "groq-httpx": "GROQ_API_KEY",
    "workers-ai": "CLOUDFLARE_API_TOKEN",
}


class Waits:
    """The plan's ``sleep``: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(key=KEY) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def make_rung(kind: str, fake: FakeLlm, http: httpx.AsyncClient, *, key: str = KEY) -> LanguageModel:
    if kind == "openai":
        return OpenAICompatibleLlm(http, url=fake.url + "/v1", model="qwen2.5", key=key)
    if kind == "groq-sdk":
        return GroqLlm(api_key=key, base_url=fake.url, http=http)
    if kind == "groq-httpx":
        return groq_over_httpx(load_settings({"GROQ_API_KEY": key, "GROQ_BASE_URL": fake.url}), http)
    if kind == "workers-ai":
        return WorkersAILlm(http, account_id=ACCOUNT, api_token=key, base_url=fake.url + "/client/v4")
    fake.key = None  # the binding carries no key: the Worker's own account pays
    return WorkersAIBindingLlm(CloudflareAi(WorkersAi(fake.url, account=ACCOUNT)))


@pytest.fixture(params=RUNGS)
def rung(request: pytest.FixtureRequest, fake: FakeLlm, http: httpx.AsyncClient) -> LanguageModel:
    return make_rung(request.param, fake, http)


def ctx() -> Ctx:
    return Ctx(timeout=60)


async def deltas(rung: LanguageModel, options: LlmOptions | None = None) -> list[Delta]:
    return [delta async for delta in rung.stream(ASK, ctx(), options or LlmOptions())]


# --- the contract -----------------------------------------------------------------------------------


async def test_every_rung_answers_the_whole_text_with_its_model_finish_and_usage(
    rung: LanguageModel, fake: FakeLlm
) -> None:
    assert isinstance(rung, LanguageModel) and rung.enabled and rung.streams
    assert rung.id.startswith(f"llm/{rung.service}/")
    answer = await rung.complete(ASK, ctx(), LlmOptions(temperature=0.0))
    assert (answer.text, answer.rung, answer.finish_reason) == (ANSWER, rung.id, "stop")
    assert answer.model == rung.model
    assert answer.usage == USAGE
    (request,) = fake.answered
    assert request.body["messages"] == [{"role": m.role, "content": m.content} for m in ASK]
    assert request.body["max_tokens"] == rung.max_output_tokens  # always sent: Workers AI's default is 256
    assert request.body["temperature"] == 0.0 and not request.streamed


async def test_every_rung_streams_in_pieces_and_ends_with_the_whole_answer(
    rung: LanguageModel, fake: FakeLlm
) -> None:
    got = await deltas(rung)
    *pieces, last = got
    assert len(pieces) == len(ANSWER.split()) and all(piece.done is None for piece in pieces)
    assert last.done is not None and last.text == ""
    assert "".join(piece.text for piece in pieces) == last.done.text == ANSWER
    assert last.done.finish_reason == "stop" and last.done.rung == rung.id
    assert last.done.usage == USAGE
    (request,) = fake.answered
    assert request.streamed


async def test_max_tokens_cuts_the_answer_and_says_so(rung: LanguageModel) -> None:
    answer = await rung.complete(ASK, ctx(), LlmOptions(max_tokens=2))
    assert (answer.text, answer.finish_reason) == ("You said: ", "length")
    *_, last = await deltas(rung, LlmOptions(max_tokens=2))
    assert last.done is not None and (last.done.text, last.done.finish_reason) == ("You said: ", "length")


async def test_max_tokens_is_never_asked_above_what_the_rung_allows(
    rung: LanguageModel, fake: FakeLlm
) -> None:
    await rung.complete(ASK, ctx(), LlmOptions(max_tokens=10_000_000))
    assert fake.answered[-1].body["max_tokens"] == rung.max_output_tokens


# --- what each service does on its own --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "groq-sdk", "groq-httpx"])
async def test_reasoning_comes_apart_from_the_answer(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    fake.reasoning = "the user asks about a stand"
    rung = make_rung(kind, fake, http)
    whole = await rung.complete(ASK, ctx(), LlmOptions())
    assert (whole.text, whole.reasoning) == (ANSWER, fake.reasoning)
    *pieces, last = await deltas(rung)
    thoughts = [p.reasoning for p in pieces if p.reasoning]
    assert "".join(thoughts) == fake.reasoning and len(thoughts) > 1
    assert all(not p.text for p in pieces if p.reasoning)
    assert last.done is not None and (last.done.text, last.done.reasoning) == (ANSWER, fake.reasoning)


async def test_openai_streams_ask_for_usage_and_send_the_stop_sequences(
    fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    rung = make_rung("openai", fake, http)
    await deltas(rung, LlmOptions(stop=("\n\n", "END")))
    body = fake.answered[-1].body
    assert body["stream_options"] == {"include_usage": True} and body["stop"] == ["\n\n", "END"]
    assert fake.answered[-1].auth == f"Bearer {KEY}"


@pytest.mark.parametrize("kind", ["groq-sdk", "groq-httpx"])
async def test_groq_is_reached_at_its_openai_path_under_one_id(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    rung = make_rung(kind, fake, http)
    await rung.complete(ASK, ctx(), LlmOptions())
    await deltas(rung)
    assert [r.path for r in fake.answered] == ["/openai/v1/chat/completions"] * 2
    assert [r.body["model"] for r in fake.answered] == [GROQ_MODEL] * 2
    assert (rung.id, rung.tier, rung.provider, rung.requires) == (
        "llm/groq/llama-3.3-70b-versatile",
        "free",
        "llm-groq",
        ("GROQ_API_KEY",),
    )
    assert rung.context_tokens == 131_072


def test_the_groq_sdk_is_used_where_it_is_installed_and_httpx_elsewhere() -> None:
    settings = load_settings({"GROQ_API_KEY": KEY})
    http = httpx.AsyncClient()
    assert isinstance(hosted_llms(settings, http)[0], GroqLlm)  # the `local` extra is installed here
    plain = hosted_llms(settings, http, groq_sdk=False)[0]
    assert isinstance(plain, OpenAICompatibleLlm) and plain.id == "llm/groq/llama-3.3-70b-versatile"
    assert plain.enabled and plain.tier == "free"
    assert not hosted_llms(load_settings({}), http, groq_sdk=False)[0].enabled


async def test_workers_ai_is_asked_at_its_account_and_model(fake: FakeLlm, http: httpx.AsyncClient) -> None:
    rung = make_rung("workers-ai", fake, http)
    await rung.complete(ASK, ctx(), LlmOptions())
    request = fake.answered[-1]
    assert request.path == f"/client/v4/accounts/{ACCOUNT}/ai/run/{WORKERS_AI_LLM_MODEL}"
    assert request.auth == f"Bearer {KEY}" and "model" not in request.body
    assert rung.context_tokens == 24_000  # as Cloudflare documents the model


@pytest.mark.parametrize("kind", ["workers-ai", "binding"])
async def test_workers_ai_takes_no_stop_sequences_so_the_answer_is_cut_at_them(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    rung = make_rung(kind, fake, http)
    answer = await rung.complete(ASK, ctx(), LlmOptions(stop=(" kickstand",)))
    assert answer.text == "You said: what does the"
    assert "stop" not in fake.answered[-1].body


async def test_the_binding_stream_is_read_from_its_readable_stream(fake: FakeLlm) -> None:
    fake.key = None
    binding = WorkersAi(fake.url, account=ACCOUNT)
    rung = WorkersAIBindingLlm(CloudflareAi(binding))
    *pieces, last = await deltas(rung)
    assert binding.calls == 1 and len(pieces) == 7 and last.done is not None
    assert fake.answered[-1].body["stream"] is True


def test_the_binding_rung_without_a_binding_is_disabled() -> None:
    rung = WorkersAIBindingLlm(None)
    assert not rung.enabled and rung.requires == ("AI",)


async def test_the_binding_rung_without_a_binding_says_what_to_bind() -> None:
    with pytest.raises(VidError) as raised:
        await WorkersAIBindingLlm(None).complete(ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.NO_PROVIDER and "AI" in (raised.value.hint or "")


def test_an_endpoint_on_this_machine_or_its_network_is_local() -> None:
    http = httpx.AsyncClient()
    tiers = {
        url: OpenAICompatibleLlm(http, url=url, key=key).tier
        for url, key in [
            ("http://127.0.0.1:11434/v1", None),
            ("http://localhost:8080/v1", "sk-local"),
            ("http://192.168.1.20:1234/v1", None),
            ("http://ollama:11434/v1", None),
            ("http://gpu.lan/v1", None),
            ("https://api.openai.com/v1", "sk-paid"),
            ("https://llm.example.org/v1", None),
        ]
    }
    assert list(tiers.values()) == ["local", "local", "local", "local", "local", "paid", "keyless"]
    assert OpenAICompatibleLlm(http, url=None, key="sk").tier == "paid"  # a key alone: OpenAI's
    assert not OpenAICompatibleLlm(http, url="https://llm.example.org/v1", keyless_allowed=False).enabled
    assert OpenAICompatibleLlm(http, url="http://127.0.0.1:1/v1", keyless_allowed=False).enabled
    assert not OpenAICompatibleLlm(http, url=None).enabled


def test_the_openai_compatible_rung_takes_its_settings() -> None:
    runtime = build_runtime(
        load_settings(
            {
                "VID2CONTEXT_LLM_URL": "http://127.0.0.1:11434/v1/chat/completions",
                "VID2CONTEXT_LLM_MODEL": "llama3.2",
                "VID2CONTEXT_LLM_CONTEXT_TOKENS": "32768",
            }
        )
    )
    rung = runtime.llm[-1]
    assert (rung.id, rung.tier, rung.enabled, rung.context_tokens) == (
        "llm/self-hosted/llama3.2",
        "local",
        True,
        32768,
    )
    assert rung.requires == ("VID2CONTEXT_LLM_URL",)


# --- failures -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KEY_SETTING))
async def test_a_refused_key_is_auth_naming_the_variable_to_fix(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    rung = make_rung(kind, fake, http, key="sk-wrong")
    for attempt in ("complete", "stream"):
        with pytest.raises(VidError) as raised:
            if attempt == "complete":
                await rung.complete(ASK, ctx(), LlmOptions())
            else:
                await deltas(rung)
        error = raised.value
        assert error.code is ErrorCode.AUTH and STATUS_BY_CODE[error.code] == 502
        assert KEY_SETTING[kind] in (error.hint or "") and "sk-wrong" not in error.message + (
            error.hint or ""
        )
        assert isinstance(error, RungError) and not error.retryable


@pytest.mark.parametrize("kind", ["openai", "groq-sdk", "groq-httpx", "workers-ai"])
async def test_a_429_is_tried_again_after_its_retry_after(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient, runtimes: Runtimes
) -> None:
    rung = make_rung(kind, fake, http)
    fake.fail_next(429, count=2, retry_after=7)
    waits = Waits()
    answer = await call(await _runtime(runtimes, waits), rung, ASK, ctx(), LlmOptions())
    assert answer.text == ANSWER and waits.seen == [7.0, 7.0]
    assert [r.status for r in fake.requests] == [429, 429, 200]


@pytest.mark.parametrize("kind", RUNGS)
async def test_a_500_is_tried_again_then_given_up(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient, runtimes: Runtimes
) -> None:
    rung = make_rung(kind, fake, http)
    fake.fail_next(500, count=4)
    waits = Waits()
    with pytest.raises(VidError) as raised:
        await call(await _runtime(runtimes, waits, retries=3), rung, ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.UPSTREAM and len(waits.seen) == 3
    assert len(fake.requests) == 4


@pytest.mark.parametrize("kind", RUNGS)
async def test_a_stream_that_stops_early_is_an_upstream_error(
    kind: str, fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    rung = make_rung(kind, fake, http)
    fake.break_next()
    got: list[Delta] = []
    with pytest.raises(VidError) as raised:
        async for delta in rung.stream(ASK, ctx(), LlmOptions()):
            got.append(delta)
    assert raised.value.code is ErrorCode.UPSTREAM
    assert got and all(delta.done is None for delta in got)  # the first words came, the end never did
    assert isinstance(raised.value, RungError) and not raised.value.retryable


async def test_an_unknown_model_is_an_upstream_error_that_is_not_retried(
    fake: FakeLlm, http: httpx.AsyncClient
) -> None:
    fake.models = {"llama3.2"}
    rung = OpenAICompatibleLlm(http, url=fake.url + "/v1", model="llama9", key=KEY)
    with pytest.raises(RungError) as raised:
        await rung.complete(ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.UPSTREAM and not raised.value.retryable
    assert "404" in raised.value.message and "llama9" in raised.value.message


async def test_an_answer_that_is_not_a_chat_completion_is_refused(http: httpx.AsyncClient) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>gateway</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        rung = OpenAICompatibleLlm(client, url="http://127.0.0.1:9/v1", key=KEY)
        with pytest.raises(RungError) as raised:
            await rung.complete(ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.UPSTREAM and "not a chat completion" in raised.value.message


async def test_an_endpoint_nobody_answers_is_a_retryable_upstream_error() -> None:
    async with httpx.AsyncClient() as client:
        rung = OpenAICompatibleLlm(client, url="http://127.0.0.1:9/v1")  # port 9 (discard): nothing listens
        with pytest.raises(RungError) as raised:
            await rung.complete(ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.UPSTREAM and raised.value.retryable


async def test_the_sampling_rung_outside_an_mcp_call_says_it_has_no_client() -> None:
    rung = SamplingLlm()
    assert not rung.enabled and rung.tier == "caller" and not rung.streams
    with pytest.raises(VidError) as raised:
        await rung.complete(ASK, ctx(), LlmOptions())
    assert raised.value.code is ErrorCode.NO_PROVIDER


# --- the event stream reader ------------------------------------------------------------------------


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _events(*parts: bytes) -> list[str]:
    return [data async for data in events(lines_of(_chunks(*parts)))]


async def test_events_survive_any_cut_of_the_bytes() -> None:
    stream = 'data: {"a": 1}\r\n\r\n: keep-alive\r\n\r\nevent: x\r\ndata: one\r\ndata: two\r\n\r\ndata: "é"\n\ndata: [DONE]\n\n'
    raw = stream.encode()
    whole = await _events(raw)
    assert whole == ['{"a": 1}', "one\ntwo", '"é"', DONE]
    for cut in range(1, len(raw)):  # every place a chunk may end, inside \r\n and inside é too
        assert await _events(raw[:cut], raw[cut:]) == whole


async def test_the_last_event_counts_without_its_blank_line_and_nothing_follows_done() -> None:
    assert await _events(b"data: last") == ["last"]
    assert await _events(b"data: [DONE]\n\ndata: after\n\n") == [DONE]
    assert await _events(b"") == []


async def _runtime(runtimes: Runtimes, waits: Waits, *, retries: int = 3) -> Runtime:
    runtime = await runtimes.build({})
    runtime.llm_plan = LlmPlan(retries=retries, sleep=waits)
    return runtime
