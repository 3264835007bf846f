"""Session mode of ``/mcp`` (``VID2CONTEXT_MCP_SESSIONS=1``) under a real ``vid2context serve``.

The SDK's HTTP client (protocol 2025-11-25) opens a session, and through it the server asks the
user mid-call (elicitation in ``choose_caption_track``) and pushes ``resources/updated`` for a
subscribed collection on the session's GET stream. Raw requests check the binding: a session id
used with another token is 404 with the error body, as for a session that never existed. The
Worker ignores the setting.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from vid2context.mcp.http import McpHttp
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

from .test_mcp_http import INIT, MCP_HEADERS, _local_server
from .test_mcp_subscriptions import Updates
from .youtube_replay import PLAYLIST_ID, ReplayServer

pytestmark = pytest.mark.slow

TOKENS = ("s3ss10n-one", "s3ss10n-two")
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
WAIT_S = 60  # a bound on a hang, never a measured time


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with ReplayServer() as replay:
        settings = {
            "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin,
            "VID2CONTEXT_MCP_TOKENS": ",".join(TOKENS),
            "VID2CONTEXT_MCP_SESSIONS": "1",
            "VID2CONTEXT_ACCESS_LOG": "0",
            "VID2CONTEXT_EMBED_ON_SAVE": "0",
        }
        yield from _local_server(settings, tmp_path_factory.mktemp("home"))


def _client(origin: str, token: str = TOKENS[0], **kwargs: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(origin + "/mcp", http_client=http), mode="legacy", **kwargs)


def _open(origin: str, token: str) -> str:
    """A raw ``initialize``: the session id it answers."""
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    response = httpx.post(origin + "/mcp", json=INIT, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def _list_tools(origin: str, token: str, session: str) -> httpx.Response:
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {token}",
        "Mcp-Session-Id": session,
        "Mcp-Protocol-Version": "2025-11-25",
    }
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    return httpx.post(origin + "/mcp", json=message, headers=headers, timeout=30)


@pytest.mark.anyio
async def test_through_a_session_the_user_is_asked_mid_call(server: str) -> None:
    asked: list[Any] = []

    async def pick_german(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"language": "de"})

    async with _client(server, elicitation_callback=pick_german) as client:
        result = await client.call_tool("choose_caption_track", {"url": "GJLlxj_dtq8"})
    assert not result.is_error, result.content[0].text
    [params] = asked
    assert {"en", "de"} <= set(params.requested_schema["properties"]["language"]["enum"])
    text = "\n".join(block.text for block in result.content)
    assert "- Transcript: " in text and "captions, de," in text  # the track the user chose


@pytest.mark.anyio
async def test_a_subscriber_is_told_on_the_session_stream(server: str) -> None:
    updates = Updates()
    logged: list[Any] = []

    async def on_log(params: Any) -> None:
        logged.append(params)

    async with _client(server, message_handler=updates, logging_callback=on_log) as client:
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging/setLevel too is 2025-era
            await client.set_logging_level("info")  # one request; the level lasts for the session
        created = await client.call_tool("create_collection", {"name": "Session list"})
        cid = created.structured_content["collection"]["id"]
        uri = f"vid2context://collection/{cid}/latest"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe as 2025-era
            await client.subscribe_resource(uri)
        added = await client.call_tool("add_to_collection", {"collection": cid, "urls": [PLAYLIST]})
        assert len(added.structured_content["summary"]["added"]) == 12
        with anyio.fail_after(WAIT_S):
            await updates.arrived.wait()
        assert updates.uris == [uri]
        assert logged and {entry.level for entry in logged} == {"info"}  # the steps, at the session's level
        latest = json.loads((await client.read_resource(uri)).contents[0].text)
        assert len(latest["videos"]) == 12


def test_a_session_answers_only_the_token_that_opened_it(server: str) -> None:
    session = _open(server, TOKENS[0])
    assert _list_tools(server, TOKENS[0], session).status_code == 200
    stolen = _list_tools(server, TOKENS[1], session)
    assert stolen.status_code == 404
    body = stolen.json()
    assert body["error"]["code"] == "not-found" and "initialize" in body["error"]["hint"]
    assert TOKENS[0] not in stolen.text and session not in stolen.text
    unknown = _list_tools(server, TOKENS[0], "0" * 32)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not-found"
    assert _list_tools(server, TOKENS[0], session).status_code == 200  # still the owner's
    ended = httpx.delete(
        server + "/mcp",
        headers={"Authorization": f"Bearer {TOKENS[1]}", "Mcp-Session-Id": session},
        timeout=30,
    )
    assert ended.status_code == 404  # another token cannot end it either
    ended = httpx.delete(
        server + "/mcp",
        headers={"Authorization": f"Bearer {TOKENS[0]}", "Mcp-Session-Id": session},
        timeout=30,
    )
    assert ended.status_code == 200
    assert _list_tools(server, TOKENS[0], session).status_code == 404


def test_without_a_token_a_session_is_not_opened(server: str) -> None:
    response = httpx.post(server + "/mcp", json=INIT, headers=MCP_HEADERS, timeout=30)
    assert response.status_code == 401 and "mcp-session-id" not in response.headers


def test_put_is_405_and_names_the_methods(server: str) -> None:
    response = httpx.put(server + "/mcp", headers={"Authorization": f"Bearer {TOKENS[0]}"}, timeout=30)
    assert response.status_code == 405 and response.headers["allow"] == "GET, POST, DELETE, OPTIONS"
    assert response.json()["error"]["hint"]


def test_the_worker_ignores_session_mode() -> None:
    runtime = build_runtime(load_settings({"VID2CONTEXT_MCP_SESSIONS": "1"}))
    assert McpHttp(runtime).sessions is True
    assert McpHttp(dataclasses.replace(runtime, name="worker")).sessions is False
    assert McpHttp(build_runtime(load_settings({}))).sessions is False


@pytest.mark.anyio
async def test_a_listen_stream_needs_no_session(server: str) -> None:
    """Protocol 2026-07-28 has no sessions: its ``subscriptions/listen`` stream is told all the same."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[1]}"}, timeout=60)
    async with Client(streamable_http_client(server + "/mcp", http_client=http), mode="2026-07-28") as client:
        created = await client.call_tool("create_collection", {"name": "Listened"})
        cid = created.structured_content["collection"]["id"]
        uri = f"vid2context://collection/{cid}/latest"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            added = await client.call_tool("add_to_collection", {"collection": cid, "urls": ["GJLlxj_dtq8"]})
            assert [v["id"] for v in added.structured_content["summary"]["added"]] == ["youtube:GJLlxj_dtq8"]
            with anyio.fail_after(WAIT_S):
                event = await anext(aiter(subscription))
        assert getattr(event, "uri", None) == uri


@pytest.mark.anyio
async def test_through_a_session_the_clients_model_answers(server: str) -> None:
    """Sampling travels mid-call through the session: ``ask`` is answered by the client's model."""
    asked: list[Any] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="The battery is covered in the review [1]."),
            model="client-model-9",
            stop_reason="endTurn",
        )

    async with _client(server, sampling_callback=sample) as client:
        await client.call_tool("get_outline", {"url": "GJLlxj_dtq8"})  # read, so saved and searchable
        result = await client.call_tool("ask", {"question": "battery life", "urls": ["GJLlxj_dtq8"]})
    text = "\n".join(block.text for block in result.content)
    assert not result.is_error, text
    assert len(asked) == 1 and asked[0].messages[-1].content.text == "battery life"
    assert "client-model-9" in text
