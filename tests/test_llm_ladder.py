"""The language-model ladder: which rungs a request gets (``plan_llm``), and the walk down them.

Policies order the rungs by tier (``answers/llm/rungs.py``); the contract's ``model`` picks one
rung (``strict``) or starts with it, or names a policy for one request. Bad choices are
``bad-request`` with the list to choose from. The walk (``complete``, ``stream``) goes through
``run_rung``: a rung that keeps failing after its retries hands over to the next, and every rung
tried or left out is an ``Attempt``. Services are the stand-in (``tests/fake_llm.py``); the
calling client's model is a ``SamplingLlm`` given a session it is never asked through here (the
MCP tests ask it for real).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context.answers.llm.base import LlmPlan
from vid2context.answers.llm.ladder import complete, plan_llm, stream
from vid2context.answers.llm.rungs import POLICIES
from vid2context.answers.llm.sampling import SAMPLING_ID, SamplingLlm
from vid2context.answers.llm.workers_ai import WorkersAIBindingLlm
from vid2context.api import create_app
from vid2context.ctx import Ctx
from vid2context.errors import ErrorCode, VidError
from vid2context.mcp import create_mcp
from vid2context.models import ChatMessage, ModelChoice
from vid2context.runtime import Runtime
from vid2context.settings import load_settings

from .cloudflare_bindings import WorkersAi
from .fake_llm import FakeLlm
from .hint_steps import problems, surfaces
from .runtimes import Runtimes
from .test_mcp_tools import json_block

pytestmark = pytest.mark.anyio

GROQ = "llm/groq/llama-3.3-70b-versatile"
WORKERS_AI = "llm/cloudflare/@cf/meta/llama-3.3-70b-instruct-fp8-fast"
LOCAL = "llm/self-hosted/llama3.2"
PAID = "llm/openai/gpt-4o-mini"
ASK = [ChatMessage(role="user", content="what does the kickstand do")]
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}


class Waits:
    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm() as server:
        yield server


def everything(fake: FakeLlm) -> dict[str, str]:
    """Groq, Workers AI and a model server on this machine, all at the stand-in."""
    return {
        "GROQ_API_KEY": "gsk-test",
        "GROQ_BASE_URL": fake.url,
        "CLOUDFLARE_ACCOUNT_ID": "acct",
        "CLOUDFLARE_API_TOKEN": "cf-token",
        "CLOUDFLARE_BASE_URL": fake.url + "/client/v4",
        "VID2CONTEXT_LLM_URL": fake.url + "/v1",
        "VID2CONTEXT_LLM_MODEL": "llama3.2",
    }


def calling() -> Ctx:
    """A call whose client can sample (its model is never asked here)."""
    ctx = Ctx(timeout=60)
    ctx.caller_model = SamplingLlm(session=object())
    return ctx


def ids(pick: Any) -> list[str]:
    return [rung.id for rung in pick.rungs]


def skipped(pick: Any) -> list[tuple[str, str | None]]:
    return [(a.id, a.reason) for a in pick.attempts]


# --- policies --------------------------------------------------------------------------------------


async def test_each_policy_orders_the_rungs_by_its_tiers(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(everything(fake))
    assert ids(plan_llm(runtime, ctx=calling())) == [
        SAMPLING_ID,
        LOCAL,
        GROQ,
        WORKERS_AI,
    ]  # free, the default
    quality = plan_llm(runtime, ModelChoice(policy="quality"), calling())
    assert ids(quality) == [GROQ, WORKERS_AI, SAMPLING_ID, LOCAL]
    local = plan_llm(runtime, ModelChoice(policy="local-only"), calling())
    assert ids(local) == [LOCAL, SAMPLING_ID] and local.attempts == []  # hosted rungs are not even tried
    assert ids(plan_llm(runtime, ModelChoice(policy="local-only"))) == [LOCAL]  # REST: no client model


async def test_a_paid_key_leads_quality_and_comes_last_in_free(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(
        {
            "GROQ_API_KEY": "gsk-test",
            "VID2CONTEXT_LLM_KEY": "sk-paid",
            "VID2CONTEXT_LLM_URL": "https://api.openai.com/v1",
        }
    )
    assert ids(plan_llm(runtime, ModelChoice(policy="quality"))) == [PAID, GROQ]
    assert ids(plan_llm(runtime, ModelChoice(policy="free"))) == [GROQ, PAID]
    assert ids(plan_llm(runtime, ModelChoice(policy="local-only"), calling())) == [SAMPLING_ID]


async def test_the_setting_is_the_default_policy(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build({**everything(fake), "VID2CONTEXT_POLICY": "Quality"})
    pick = plan_llm(runtime)
    assert pick.policy == "quality" and ids(pick)[0] == GROQ
    assert ids(plan_llm(runtime, ModelChoice(policy="free"))) == [
        LOCAL,
        GROQ,
        WORKERS_AI,
    ]  # a request overrides it


def test_a_policy_that_does_not_exist_stops_start_up_naming_the_setting() -> None:
    with pytest.raises(VidError) as raised:
        load_settings({"VID2CONTEXT_POLICY": "cheapest"})
    assert raised.value.code is ErrorCode.BAD_REQUEST and "VID2CONTEXT_POLICY" in raised.value.message
    assert set(POLICIES) == {"free", "quality", "local-only"}


async def test_rungs_not_set_up_are_attempts_saying_what_they_need(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(
        {
            "GROQ_API_KEY": "gsk-test",
            "VID2CONTEXT_LLM_URL": "https://llm.example.org/v1",
            "VID2CONTEXT_KEYLESS": "0",
        }
    )
    ctx = Ctx(timeout=60)
    ctx.caller_model = SamplingLlm(unavailable="the MCP client did not declare sampling")
    pick = plan_llm(runtime, ctx=ctx)
    assert ids(pick) == [GROQ]
    details = {a.id: (a.reason, a.detail) for a in pick.attempts}
    assert details == {
        SAMPLING_ID: ("unavailable", "the MCP client did not declare sampling"),
        WORKERS_AI: ("missing-key", "set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN"),
        "llm/example/gpt-4o-mini": ("disabled", "VID2CONTEXT_KEYLESS=0"),
    }


@pytest.mark.parametrize("policy", ["free", "quality", "local-only"])
async def test_nothing_set_up_is_no_provider_naming_what_to_set(runtimes: Runtimes, policy: str) -> None:
    runtime = await runtimes.build({"VID2CONTEXT_POLICY": policy})
    pick = plan_llm(runtime)
    assert pick.rungs == [] and pick.reason is not None
    with pytest.raises(VidError) as raised:
        pick.require()
    error = raised.value
    assert error.code is ErrorCode.NO_PROVIDER and "VID2CONTEXT_LLM_URL" in (error.hint or "")
    assert {a.id for a in error.attempts} == {
        GROQ,
        WORKERS_AI,
        "llm/openai/gpt-4o-mini",
    } or policy == "local-only"
    for surface in ("rest", "mcp"):
        assert problems(error.hint_for(surface), surfaces()[surface], code=error.code.value) == []
    assert ("GET /api/v1/models?kind=llm" in error.hint_for("rest")) and "list_models" in error.hint_for(
        "mcp"
    )


# --- one rung, strict or not -------------------------------------------------------------------------


async def test_a_strict_rung_is_that_rung_alone(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(everything(fake))
    assert ids(plan_llm(runtime, ModelChoice(rung=WORKERS_AI, strict=True), calling())) == [WORKERS_AI]
    # Even one the policy leaves out: the caller named it.
    assert ids(plan_llm(runtime, ModelChoice(rung=GROQ, strict=True, policy=None), None)) == [GROQ]


async def test_a_rung_not_strict_goes_first_then_the_policy_ladder(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build({**everything(fake), "VID2CONTEXT_POLICY": "local-only"})
    pick = plan_llm(runtime, ModelChoice(rung=WORKERS_AI.upper()), calling())  # ids compare without case too
    assert ids(pick) == [WORKERS_AI, LOCAL, SAMPLING_ID]


async def test_an_unknown_strict_rung_is_bad_request_listing_every_rung(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(everything(fake))
    with pytest.raises(VidError) as raised:
        plan_llm(runtime, ModelChoice(rung="llm/openai/gpt-9", strict=True))
    error = raised.value
    assert error.code is ErrorCode.BAD_REQUEST and "llm/openai/gpt-9" in error.message
    for rung in (SAMPLING_ID, GROQ, WORKERS_AI, LOCAL):
        assert rung in (error.hint or "")


async def test_an_unknown_rung_not_strict_falls_back_and_says_so(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build(everything(fake))
    pick = plan_llm(runtime, ModelChoice(rung="llm/openai/gpt-9"))
    assert ids(pick) == [LOCAL, GROQ, WORKERS_AI]
    assert ("llm/openai/gpt-9", "not-found") in skipped(pick)


async def test_a_strict_rung_not_set_up_is_no_provider(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await runtimes.build({"GROQ_API_KEY": "gsk-test"})
    pick = plan_llm(runtime, ModelChoice(rung=WORKERS_AI, strict=True))
    assert pick.rungs == [] and pick.reason is not None and pick.reason.code is ErrorCode.NO_PROVIDER
    assert "CLOUDFLARE_API_TOKEN" in pick.reason.message
    over_rest = plan_llm(runtime, ModelChoice(rung=SAMPLING_ID, strict=True))  # no client model outside MCP
    assert over_rest.reason is not None and "MCP client" in over_rest.reason.message


@pytest.mark.parametrize(
    ("choice", "said"),
    [
        (ModelChoice(rung=GROQ, policy="free"), "both a rung and a policy"),
        (ModelChoice(policy="cheapest"), "Unknown model policy 'cheapest'"),
        (ModelChoice(policy="x" * 500), "Unknown model policy"),
    ],
)
async def test_bad_choices_are_bad_requests_with_a_hint(
    runtimes: Runtimes, choice: ModelChoice, said: str
) -> None:
    runtime = await runtimes.build({"GROQ_API_KEY": "gsk-test"})
    with pytest.raises(VidError) as raised:
        plan_llm(runtime, choice)
    error = raised.value
    assert error.code is ErrorCode.BAD_REQUEST and said in error.message and len(error.message) < 200
    assert problems(error.hint, surfaces()["rest"], code=error.code.value) == []


def test_the_contract_shapes_of_model_decode() -> None:
    import msgspec

    assert msgspec.json.decode(b'{"rung": "llm/x", "strict": true}', type=ModelChoice) == ModelChoice(
        rung="llm/x", strict=True
    )
    assert msgspec.json.decode(b'{"policy": "quality"}', type=ModelChoice) == ModelChoice(policy="quality")
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"rung": "llm/x", "fast": true}', type=ModelChoice)


# --- the walk ----------------------------------------------------------------------------------------


async def _walking(runtimes: Runtimes, fake: FakeLlm, waits: Waits) -> Runtime:
    """The local model server first, Groq next (both at the stand-in); retries seen, not waited."""
    runtime = await runtimes.build(
        {
            "GROQ_API_KEY": "gsk-test",
            "GROQ_BASE_URL": fake.url,
            "VID2CONTEXT_LLM_URL": fake.url + "/v1",
            "VID2CONTEXT_LLM_MODEL": "llama3.2",
        }
    )
    runtime.llm_plan = LlmPlan(retries=1, sleep=waits)
    return runtime


async def test_a_rung_that_keeps_failing_hands_over_to_the_next(runtimes: Runtimes, fake: FakeLlm) -> None:
    waits = Waits()
    runtime = await _walking(runtimes, fake, waits)
    fake.fail_next(503, count=2)  # the local server, and its one retry
    attempts = list(plan_llm(runtime).attempts)
    answer = await complete(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60), attempts=attempts)
    assert answer.rung == GROQ and answer.text == "You said: what does the kickstand do"
    assert [(a.id, a.outcome, a.reason) for a in attempts if a.stage == "llm" and a.outcome != "skipped"] == [
        (LOCAL, "error", "upstream"),
        (GROQ, "ok", None),
    ]
    assert len(waits.seen) == 1 and [r.path for r in fake.requests] == ["/v1/chat/completions"] * 2 + [
        "/openai/v1/chat/completions"
    ]


async def test_a_retry_after_longer_than_worth_waiting_moves_on_at_once(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    waits = Waits()
    runtime = await _walking(runtimes, fake, waits)
    fake.fail_next(429, retry_after=3600)
    answer = await complete(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60))
    assert answer.rung == GROQ and waits.seen == []


async def test_every_rung_failing_the_same_way_is_that_code(runtimes: Runtimes, fake: FakeLlm) -> None:
    waits = Waits()
    runtime = await _walking(runtimes, fake, waits)
    fake.fail_next(429, count=4, retry_after=2)
    attempts: list[Any] = []
    with pytest.raises(VidError) as raised:
        await complete(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60), attempts=attempts)
    assert raised.value.code is ErrorCode.RATE_LIMITED and raised.value.retry_after == 2
    assert [a.id for a in raised.value.attempts] == [LOCAL, GROQ]


async def test_a_refused_key_moves_on_to_the_next_rung(runtimes: Runtimes, fake: FakeLlm) -> None:
    fake.key = "gsk-test"  # the local server's key is missing: it is refused, Groq's is right
    runtime = await _walking(runtimes, fake, Waits())
    answer = await complete(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60))
    assert answer.rung == GROQ and [r.status for r in fake.requests] == [401, 200]


async def test_a_stream_falls_back_before_its_first_word(runtimes: Runtimes, fake: FakeLlm) -> None:
    fake.key = "gsk-test"
    runtime = await _walking(runtimes, fake, Waits())
    attempts: list[Any] = []
    got = [d async for d in stream(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60), attempts=attempts)]
    assert got[-1].done is not None and got[-1].done.rung == GROQ
    assert "".join(d.text for d in got) == got[-1].done.text
    assert [(a.id, a.reason) for a in attempts] == [(LOCAL, "auth"), (GROQ, None)]


async def test_a_stream_that_breaks_after_its_first_word_is_the_error(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await _walking(runtimes, fake, Waits())
    fake.break_next()
    attempts: list[Any] = []
    got: list[Any] = []
    with pytest.raises(VidError) as raised:
        async for delta in stream(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60), attempts=attempts):
            got.append(delta)
    assert raised.value.code is ErrorCode.UPSTREAM and got  # no other rung: the words were out
    assert [(a.id, a.outcome) for a in attempts] == [(LOCAL, "ok"), (LOCAL, "error")]
    assert len(fake.requests) == 1


# --- listing ---------------------------------------------------------------------------------------


async def test_models_and_health_list_every_llm_rung_with_its_capabilities(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build({**QUIET, **everything(fake)})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t"
    ) as c:
        models = (await c.get("/api/v1/models", params={"kind": "llm"})).json()
        health = (await c.get("/api/v1/health")).json()
    listed = {m["id"]: m for m in models["models"]}
    assert list(listed) == [SAMPLING_ID, LOCAL, GROQ, WORKERS_AI] and models["defaultPolicy"] == "free"
    assert listed[GROQ]["capabilities"] == ["chat", "stream", "context:131072"]
    assert listed[WORKERS_AI]["capabilities"] == ["chat", "stream", "context:24000"]
    assert listed[SAMPLING_ID]["capabilities"] == ["chat", "context:16000"]  # it does not stream
    assert not listed[SAMPLING_ID]["enabled"] and all(listed[i]["enabled"] for i in (LOCAL, GROQ, WORKERS_AI))
    assert listed[LOCAL]["tier"] == "local" and listed[SAMPLING_ID]["tier"] == "caller"
    assert listed[WORKERS_AI]["label"] == "llama-3.3-70b-instruct-fp8-fast"
    assert listed[GROQ]["requires"] == ["GROQ_API_KEY"]
    entries = {p["id"]: p for p in health["providers"] if p["kind"] == "llm"}
    assert list(entries) == ["llm-mcp-sampling", "llm-openai-compatible", "llm-groq", "llm-workers-ai"]
    assert entries["llm-groq"]["enabled"] and not entries["llm-mcp-sampling"]["enabled"]
    assert "gsk-test" not in str(models) + str(health) and "cf-token" not in str(models) + str(health)


async def test_list_models_enables_the_clients_own_model_when_it_can_sample(runtimes: Runtimes) -> None:
    runtime = await runtimes.build({})

    async def sample(context: Any, params: Any) -> Any:
        raise AssertionError("listing never samples")

    for mode, callback, enabled in [
        ("legacy", sample, True),
        ("legacy", None, False),
        ("auto", sample, False),
    ]:
        async with Client(create_mcp(runtime), mode=mode, sampling_callback=callback) as client:
            models = json_block(await client.call_tool("list_models", {"kind": "llm"}))["models"]
        own = next(m for m in models if m["id"] == SAMPLING_ID)
        assert own["enabled"] is enabled, (mode, callback)


# --- the Worker ------------------------------------------------------------------------------------


@pytest.mark.parametrize("runtime_kind", ["worker"], indirect=True)
async def test_the_worker_answers_through_its_ai_binding_and_groq_over_httpx(
    runtimes: Runtimes, fake: FakeLlm
) -> None:
    runtime = await runtimes.build(
        {"GROQ_API_KEY": "gsk-test", "GROQ_BASE_URL": fake.url, "VID2CONTEXT_POLICY": "quality"},
        ai=WorkersAi(fake.url),
    )
    by_id = {rung.id: rung for rung in runtime.llm}
    assert isinstance(by_id[WORKERS_AI], WorkersAIBindingLlm) and by_id[WORKERS_AI].enabled
    assert ids(plan_llm(runtime)) == [GROQ, WORKERS_AI]
    answer = await complete(
        runtime, plan_llm(runtime, ModelChoice(rung=WORKERS_AI, strict=True)), ASK, ctx=Ctx(timeout=60)
    )
    assert answer.rung == WORKERS_AI and answer.text == "You said: what does the kickstand do"
    streamed = [d async for d in stream(runtime, plan_llm(runtime), ASK, ctx=Ctx(timeout=60))]
    assert streamed[-1].done is not None and streamed[-1].done.rung == GROQ
    assert fake.requests[0].path.endswith("/ai/run/@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    assert fake.requests[1].path == "/openai/v1/chat/completions"  # plain httpx, no groq SDK needed
