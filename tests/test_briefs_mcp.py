"""MCP ``build_brief``, ``extract`` and ``digest_videos`` through the SDK's own client, in process.

The client's model is the SDK client's real sampling callback (protocol 2025-11-25, ``legacy``,
where a server may ask during a call); the server's model is the stand-in of ``tests/fake_llm.py``.
Videos are the two saved reviews of ``test_briefs`` and a long talk with chapters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client

from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.runtime import Runtime
from vid2context.timecode import parse_time

from .fake_llm import FakeLlm
from .runtimes import Runtimes
from .talks import three_hour_talk
from .test_briefs import MANY, QUIET, REMOTE, A, B, brief_answer, local_model, products_ok, saved, scripted
from .test_mcp_tools import error_of, text_of

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host != "127.0.0.1"
    ),
]

_LABEL = re.compile(r"^\[(\d+)\] (.+?) @ ", re.MULTILINE)
Sample = Callable[[Any, types.CreateMessageRequestParams], Any]


class _Asked:
    """What a sampling request carried, in the stand-in ``Request``'s shape (for the shared replies)."""

    def __init__(self, params: types.CreateMessageRequestParams) -> None:
        self.messages = [{"role": "system", "content": params.system_prompt or ""}] + [
            {"role": m.role, "content": m.content.text} for m in params.messages
        ]


def client_model(reply: Callable[[Any], str], asked: list[types.CreateMessageRequestParams]) -> Sample:
    """A sampling callback answering with ``reply`` (given the request as the stand-in sees one)."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=reply(_Asked(params))),
            model="client-model-7",
            stop_reason="endTurn",
        )

    return sample


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm(reply=brief_answer) as server:
        yield server


# --- the client's model ------------------------------------------------------------------------------


async def test_build_brief_by_the_clients_model_when_the_server_has_none(runtimes: Runtimes) -> None:
    runtime = await saved(await runtimes.build(QUIET))
    asked: list[types.CreateMessageRequestParams] = []
    async with Client(
        create_mcp(runtime), mode="legacy", sampling_callback=client_model(brief_answer, asked)
    ) as mcp:
        result = await mcp.call_tool("build_brief", {"urls": [A, B]})
        whole = await mcp.call_tool("build_brief", {"urls": [A, B], "format": "json"})
    text = "\n".join(unfence(text_of(result)))
    assert not result.is_error, text
    assert text.startswith("# Brief: research brief")
    assert "## Consensus\n- The frame feels solid" in text
    assert "[Review A @ 0:10](https://www.youtube.com/watch?v=KickstandA1&t=10s)" in text
    assert "Removed citations that matched no source: [99], [42], [77]." in text
    assert (
        "[99]" not in text.split("Removed citations")[0] and "design award" not in text.split("## Sources")[0]
    )
    assert "BEGIN UNTRUSTED VIDEO TEXT" in text_of(result)
    brief = json.loads(unfence(text_of(whole))[0])
    assert brief["rung"] == "llm/mcp-sampling/client" and brief["model"] == "client-model-7"
    assert "BEGIN UNTRUSTED VIDEO TEXT" in (asked[0].system_prompt or "")


async def test_extract_by_the_servers_model_with_citations(runtimes: Runtimes, fake: FakeLlm) -> None:
    fake.reply = scripted(products_ok)
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool("extract", {"urls": [A, B], "template": "products"})
    assert not result.is_error, text_of(result)
    body = json.loads(unfence(text_of(result))[0])
    assert body["data"]["products"][0]["name"] == "Folding bike" and body["unverified"] == [55]
    assert body["citations"][0]["citations"][0]["startSec"] == 20.0
    assert body["rung"].startswith("llm/") and len(fake.requests) == 1


def digest_answer(request: Any) -> str:
    system = request.messages[0]["content"]
    numbers = {title: int(n) for n, title in _LABEL.findall(system)}
    return (
        f"## Review A\n- The kickstand bends to 165 degrees [{numbers['Review A']}].\n"
        f"## Review B\n- The kickstand snapped [{numbers['Review B']}][9].\n"
    )


async def test_digest_by_the_clients_model_is_cited_and_checked(runtimes: Runtimes, fake: FakeLlm) -> None:
    runtime = await saved(await runtimes.build(local_model(fake)))
    asked: list[types.CreateMessageRequestParams] = []
    async with Client(
        create_mcp(runtime), mode="legacy", sampling_callback=client_model(digest_answer, asked)
    ) as mcp:
        result = await mcp.call_tool(
            "digest_videos", {"urls": [A, B], "question": "Does the kickstand hold?"}
        )
    text = text_of(result)
    assert not result.is_error, text
    digest = "\n".join(unfence(text))
    assert "- The kickstand snapped [" in digest and "[9]" not in digest.split("\n\n")[0]
    assert re.search(
        r"^\[\d+\] Review A @ 0:10 <https://www\.youtube\.com/watch\?v=KickstandA1&t=10s>$", digest, re.M
    )
    assert "Digest by client-model-7 (llm/mcp-sampling/client)" in text and "matched no source: [9]" in text
    assert fake.requests == [] and len(asked) == 1  # the server's own model is never used for a digest
    assert "Does the kickstand hold?" in asked[0].messages[0].content.text


async def test_digest_without_sampling_is_a_plan_never_an_error(runtimes: Runtimes) -> None:
    runtime = await saved(await runtimes.build(QUIET))
    talk = three_hour_talk("LongTalk001", minutes=60)
    await runtime.storage.put_context(talk)
    async with Client(create_mcp(runtime)) as mcp:
        short = await mcp.call_tool("digest_videos", {"urls": [A, B]})
        long = await mcp.call_tool(
            "digest_videos", {"urls": [talk.id], "question": "battery in winter", "maxTokensPerVideo": 3000}
        )
    text = text_of(short)
    assert not short.is_error and "Not a digest: no model to write one here" in text
    assert "the MCP client did not declare sampling" in text
    assert (
        'get_transcript {"url": "https://www.youtube.com/watch?v=KickstandA1"}: the whole transcript' in text
    )
    assert "[Video title @ m:ss](link)" in text
    plan = text_of(long)
    assert not long.is_error and 'search_transcript {"query": "battery in winter"' in plan
    sections = re.findall(
        r'get_section \{.*"from": "([\d:]+)", "to": "([\d:]+)"\}: .*, about ([\d,]+) tokens', plan
    )
    assert 1 < len(sections) < 4 and sum(int(t.replace(",", "")) for *_, t in sections) <= 3000
    starts = [parse_time(start) for start, *_ in sections]
    assert starts == sorted(starts) and starts[-1] - starts[0] > 1800  # spread through the hour
    assert "more sections left out to stay within the budget" in plan


# --- bad input ---------------------------------------------------------------------------------------

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("build_brief", {}, "bad-request"),
    ("build_brief", {"urls": []}, "bad-request"),
    ("build_brief", {"urls": [""]}, "bad-request"),
    ("build_brief", {"urls": MANY}, "too-large"),
    ("build_brief", {"collection": "nope"}, "not-found"),
    ("build_brief", {"urls": [A], "question": ""}, "bad-request"),
    ("build_brief", {"urls": [A], "question": "x" * 100_000}, "too-large"),
    ("build_brief", {"urls": [A], "template": "nope"}, "bad-request"),
    ("build_brief", {"urls": [A], "format": "xml"}, "bad-request"),
    ("build_brief", {"urls": "youtube:KickstandA1"}, "bad-request"),
    ("extract", {"urls": [A]}, "bad-request"),
    ("extract", {"urls": [A], "template": "nope"}, "bad-request"),
    ("extract", {"urls": [A], "schema": [1]}, "bad-request"),
    ("extract", {"urls": [A], "schema": {"type": "array"}}, "bad-request"),
    ("extract", {"urls": [A], "schema": REMOTE}, "bad-request"),
    ("extract", {"urls": [A], "schema": {"type": "object", "x": "y" * 40_000}}, "too-large"),
    ("extract", {"urls": MANY, "template": "facts"}, "too-large"),
    ("digest_videos", {}, "bad-request"),
    ("digest_videos", {"urls": [A], "maxTokensPerVideo": 5}, "bad-request"),
    ("digest_videos", {"urls": MANY}, "too-large"),
    ("digest_videos", {"urls": [A], "question": ""}, "bad-request"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, *_) in enumerate(BAD_CALLS)]
)
async def test_bad_calls_are_errors_with_a_hint(
    runtimes: Runtimes, fake: FakeLlm, httpx_mock: Any, tool: str, arguments: dict[str, Any], code: str
) -> None:
    runtime = await saved(await runtimes.build(local_model(fake)))
    async with Client(create_mcp(runtime)) as mcp:
        result = await mcp.call_tool(tool, arguments)
    body = error_of(result)
    assert body["error"] == code and body["hint"], body
    assert "Traceback" not in text_of(result)
    assert fake.requests == [] and httpx_mock.get_requests() == []


async def test_no_model_anywhere_is_no_provider(runtimes: Runtimes) -> None:
    runtime: Runtime = await saved(await runtimes.build(QUIET))
    async with Client(create_mcp(runtime)) as mcp:  # no server rung, and this client cannot sample
        for tool, arguments in (
            ("build_brief", {"urls": [A]}),
            ("extract", {"urls": [A], "template": "facts"}),
        ):
            body = error_of(await mcp.call_tool(tool, arguments))
            assert body["error"] == "no-provider" and "GROQ_API_KEY" in body["hint"], body


async def test_the_digest_prompt_drives_digest_videos(runtimes: Runtimes) -> None:
    runtime = await saved(await runtimes.build(QUIET))
    async with Client(create_mcp(runtime)) as mcp:
        found = await mcp.get_prompt("digest", {"urls": f"{A}, {B}", "question": "Does it hold?"})
        empty = None
        try:
            await mcp.get_prompt("digest", {})
        except Exception as error:  # the contract's error JSON as a protocol error
            empty = str(error)
    text = found.messages[0].content.text
    assert f'digest_videos {{"urls":["{A}","{B}"],"question":"Does it hold?"}}' in text
    assert "Not a digest" in text and "[Video title @ m:ss](link)" in text
    assert empty is not None and "bad-request" in empty
