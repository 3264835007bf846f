"""MCP ``ask``: the answer, one source line per citation, errors with the code nested.

A server rung (the OpenAI-compatible stand-in, ``tests/fake_llm.py``) or the client's own model
through the SDK client's real sampling callback, in process and over stdio (``vid2context mcp``
on a SQLite library saved beforehand). Both models cite source 1 with the kickstand's sentence and
a source number that was never given, which must not reach the agent.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.mcp.tools.ask import ASK_COSTS
from vid2context.tokens import estimate_tokens

from .fake_llm import FakeLlm, Request, source_numbers
from .hint_steps import problems, surfaces
from .retrieval_set import talks
from .runtimes import ON_WORKER_TOO, Runtimes
from .test_ask_api import KICKSTAND, NO_CAPTIONS, QUESTION, QUIET, citing, library
from .test_mcp_tools import text_of
from .youtube_replay import httpx_callback

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

ANSWER = "The kickstand bends to 165 degrees so the bike leans safely [1]. It is also purple."
SOURCE_LINE = re.compile(
    r"^\[1\] Folding e-bike, a year on @ (\d+):(\d\d) <https://www\.youtube\.com/watch\?v=EbikeTalk01&t=(\d+)s>$"
)


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=citing) as server:
        yield server


def nested_error(result: Any) -> dict[str, Any]:
    assert result.is_error, text_of(result)
    body = json.loads(result.content[0].text)
    assert set(body) == {"error", "attempts"} and set(body["error"]) == {"code", "message", "hint"}, body
    return body


def check_reply(result: Any, rung: str) -> str:
    assert not result.is_error, text_of(result)
    text = text_of(result)
    (inside,) = unfence(text)
    answer, lines = inside.rstrip("\n").split("\n\n")
    assert answer == ANSWER
    status = text.rsplit("\n", 1)[-1]
    removed = re.search(r"Removed citations that match no source: \[(\d+)\]", status)
    assert removed and f"[{removed.group(1)}" not in inside
    (line,) = lines.splitlines()
    match = SOURCE_LINE.match(line)
    assert match, line
    minutes, seconds, at = (int(g) for g in match.groups())
    assert minutes * 60 + seconds == at  # the link opens the moment the line names
    assert status.startswith(f"Answered by {rung}")
    return text


def sampling_model(asked: list[Any]) -> Any:
    """A client whose model cites source 1 and one it was never given, as the SDK's callback."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        system = params.system_prompt or ""
        request = Request(path="", auth=None, body={"messages": [{"role": "system", "content": system}]})
        beyond = len(source_numbers(request)) + 5
        text = f"The kickstand bends to 165 degrees so the bike leans safely [1, {beyond}]. It is also purple [{beyond}]."
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=text),
            model="client-model-7",
            stop_reason="endTurn",
        )

    return sample


@ON_WORKER_TOO
async def test_ask_answers_with_source_lines_from_a_server_rung(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("ask", {"question": QUESTION})
    check_reply(result, "llm/self-hosted/llama3.2")
    (sent,) = fake.answered
    assert KICKSTAND in sent.messages[0]["content"]


async def test_the_clients_own_model_answers_through_sampling(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)  # no server rung at all
    for talk in talks():
        await runtime.storage.put_context(talk)
    asked: list[Any] = []
    async with Client(create_mcp(runtime), mode="legacy", sampling_callback=sampling_model(asked)) as mcp:
        result = await mcp.call_tool("ask", {"question": QUESTION, "urls": ["youtube:EbikeTalk01"]})
    text = check_reply(result, "llm/mcp-sampling/client")
    assert "(client-model-7)" in text
    (params,) = asked
    assert params.system_prompt is not None and len(unfence(params.system_prompt)) == 1
    assert params.messages[-1].content.text == QUESTION


async def test_errors_nest_the_code(runtimes: Runtimes, fake: FakeLlm, httpx_mock: Any) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await library(runtimes, fake)
    cases = [
        ({"question": ""}, "bad-request"),
        ({}, "bad-request"),
        ({"question": "kickstand " * 10_000}, "too-large"),
        ({"question": QUESTION, "urls": []}, "bad-request"),
        ({"question": QUESTION, "collection": "col_nothing"}, "not-found"),
        ({"question": QUESTION, "urls": [NO_CAPTIONS]}, "no-transcript"),
        ({"question": "xylophone quasar"}, "not-found"),
    ]
    async with Client(create_mcp(runtime)) as mcp:
        for args, code in cases:
            body = nested_error(await mcp.call_tool("ask", args))
            assert body["error"]["code"] == code, (args, body)
            assert body["error"]["message"] and body["error"]["hint"], body
            assert "/api/" not in body["error"]["hint"] and "Traceback" not in body["error"]["message"]
    assert fake.answered == []


async def test_no_rung_and_no_sampling_is_no_provider_nested(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    for talk in talks():
        await runtime.storage.put_context(talk)
    async with Client(create_mcp(runtime), mode="legacy") as mcp:
        body = nested_error(await mcp.call_tool("ask", {"question": QUESTION}))
    assert body["error"]["code"] == "no-provider"
    assert problems(body["error"]["hint"], surfaces()["mcp"], code="no-provider") == []
    assert any(a["id"] == "llm/mcp-sampling/client" and a["outcome"] == "skipped" for a in body["attempts"])


async def test_the_stated_costs_are_measured(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await library(runtimes, fake)
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("ask", {"question": QUESTION})
    text = text_of(result)
    (inside,) = unfence(text)
    answer, lines = inside.rstrip("\n").split("\n\n")
    overhead = (
        estimate_tokens(text)
        - estimate_tokens(answer)
        - sum(estimate_tokens(li) for li in lines.splitlines())
    )
    per_source = max(estimate_tokens(li) for li in lines.splitlines())
    assert overhead <= ASK_COSTS["ask_base"] and per_source <= ASK_COSTS["ask_per_source"]
    assert overhead > ASK_COSTS["ask_base"] // 2  # stated near what it is, not padded


@pytest.mark.slow
async def test_the_stdio_server_answers_with_the_clients_model(tmp_path: Path) -> None:
    from vid2context.storage.sqlite import open_local_stores

    home = tmp_path / "home"
    stores = open_local_stores(home)
    for talk in talks():
        await stores.storage.put_context(talk)
    await stores.storage.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VID2CONTEXT_", "GROQ_", "CLOUDFLARE_"))}
    env.update(VID2CONTEXT_HOME=str(home), PYTHONUNBUFFERED="1")
    asked: list[Any] = []
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vid2context", "mcp"], env=env, cwd=str(tmp_path)
    )
    with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errors:
        async with Client(
            stdio_client(params, errlog=errors), mode="legacy", sampling_callback=sampling_model(asked)
        ) as mcp:
            result = await mcp.call_tool("ask", {"question": QUESTION})
    check_reply(result, "llm/mcp-sampling/client")
    assert len(asked) == 1
