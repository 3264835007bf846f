"""``vid2context mcp``: the stdio server as a real subprocess, driven by the SDK's stdio client.

The server builds the local runtime from its environment (SQLite under ``VID2CONTEXT_HOME``) and
reads YouTube from a local replay server (``VID2CONTEXT_YOUTUBE_ORIGIN``), as ``test_cli.py`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from vid2context.mcp.fences import unfence
from vid2context.runtime import build_local_runtime
from vid2context.tokens import estimate_tokens

from .mcp_catalogue import TOOLS
from .pages import follow, reassembles
from .talks import THREE_HOURS, three_hour_talk
from .youtube_replay import ReplayServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def _params(home: Path, origin: str, roots: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(
        VID2CONTEXT_HOME=str(home),
        VID2CONTEXT_YOUTUBE_ORIGIN=origin,
        VID2CONTEXT_FILE_ROOTS=str(roots),
        # No embedding on save: the default model cannot be fetched offline, and its failed attempt
        # would be one more line in the first read's layers (tests/test_indexing.py covers it).
        VID2CONTEXT_EMBED_ON_SAVE="0",
        PYTHONUNBUFFERED="1",
    )
    return StdioServerParameters(
        command=sys.executable, args=["-m", "vid2context", "mcp"], env=env, cwd=str(roots)
    )


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_stdio_server_serves_every_tool(tmp_path: Path, replay: ReplayServer, mode: str) -> None:
    roots = tmp_path / "work"
    roots.mkdir()
    errors = (tmp_path / "stderr.txt").open("w+", encoding="utf-8")
    seen: list[tuple[float, float | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total))

    async with Client(
        stdio_client(_params(tmp_path / "home", replay.origin, roots), errlog=errors), mode=mode
    ) as client:
        assert "get_outline" in (client.instructions or "")
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == TOOLS
        transcript = await client.call_tool(
            "get_transcript", {"url": "https://www.youtube.com/watch?v=GJLlxj_dtq8"}
        )
        assert not transcript.is_error
        (inside,) = unfence(_text(transcript))
        assert inside.startswith("# Surface Go Review") and "Hey, this is just a test" in inside
        outline = await client.call_tool("get_outline", {"url": "GJLlxj_dtq8"})
        assert outline.structured_content["totalTokens"] == estimate_tokens(_text(transcript))  # as sent
        blocked = await client.call_tool("get_transcript", {"url": "botCheck001"})
        assert blocked.is_error and json.loads(blocked.content[0].text)["error"] == "blocked"
        pack = await client.call_tool(
            "export_context_pack", {"urls": ["GJLlxj_dtq8", "dsMFmonKDD4"]}, progress_callback=progress
        )
        assert "1 not included" in _text(pack)
        exported = await client.call_tool("export_obsidian", {"vaultPath": "notes", "urls": ["GJLlxj_dtq8"]})
        assert not exported.is_error, _text(exported)
        written = json.loads(exported.content[0].text)["notes"]
        assert [Path(p).name for p in written] == [
            "Surface Go Review - It’s Awesome (GJLlxj_dtq8).md",
            "vid2context export.md",
        ]
        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        assert prompts == {"brief", "buyer_guide", "digest"}
        with pytest.raises(MCPError) as caught:  # without what it needs: the real message, not stderr's
            await client.get_prompt("brief", {})
        refusal = json.loads(caught.value.error.message)
        assert refusal["error"] == "bad-request" and "collection or urls" in refusal["message"]
        created = json.loads((await client.call_tool("create_collection", {"name": "Talks"})).content[0].text)
        twin = await client.call_tool("create_collection", {"name": "talks"})
        assert twin.is_error and created["collection"]["id"] in json.loads(twin.content[0].text)["hint"]
        resources = {str(resource.uri) for resource in (await client.list_resources()).resources}
        assert "vid2context://video/youtube%3AGJLlxj_dtq8" in resources  # saved to the SQLite library
    assert seen == [(0.0, 2.0), (1.0, 2.0), (2.0, 2.0)]  # progress notifications over real JSON-RPC
    assert (roots / "notes" / "vid2context export.md").is_file()
    errors.seek(0)
    logged = errors.read()
    assert "jsonrpc" not in logged and "Traceback" not in logged


async def test_a_second_session_reads_the_library(tmp_path: Path, replay: ReplayServer) -> None:
    params = _params(tmp_path / "home", replay.origin, tmp_path)
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errors:
        async with Client(stdio_client(params, errlog=errors)) as client:
            await client.call_tool("get_outline", {"url": "GJLlxj_dtq8"})
        before = len(replay.requests)
        async with Client(stdio_client(params, errlog=errors)) as client:
            result = await client.call_tool("get_transcript", {"url": "GJLlxj_dtq8"})
    text = _text(result)
    assert "Surface Go Review" in text and "Layers" not in text  # a fresh saved copy: nothing to say
    assert len(replay.requests) == before  # nothing fetched: the second session read the library


async def test_a_long_transcript_comes_in_pages_of_the_default_size(
    tmp_path: Path, replay: ReplayServer
) -> None:
    """A three-hour talk saved in the SQLite library first: the server pages it at 20,000 tokens,
    and the calls its pages name read all of it over real JSON-RPC."""
    home = tmp_path / "home"
    runtime = build_local_runtime({"VID2CONTEXT_HOME": str(home)})
    await runtime.storage.put_context(three_hour_talk())
    await runtime.aclose()
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errors:
        async with Client(stdio_client(_params(home, replay.origin, tmp_path), errlog=errors)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "or 20000 tokens when it is left out" in tools["get_transcript"].description
            whole = _text(
                await client.call_tool("get_transcript", {"url": THREE_HOURS, "maxTokens": 10_000_000})
            )
            pages = await follow(client, "get_transcript", {"url": THREE_HOURS}, 20_000)
    assert estimate_tokens(whole) > 40_000 and len(pages) == 3  # with its [m:ss] lines, the default
    assert reassembles(pages, unfence(whole)[0])
    assert replay.requests == [] or all(THREE_HOURS not in path for _, path in replay.requests)


def test_a_bad_page_size_stops_the_server_with_its_name(tmp_path: Path, replay: ReplayServer) -> None:
    params = _params(tmp_path / "home", replay.origin, tmp_path)
    result = subprocess.run(
        [params.command, *params.args],
        env={**params.env, "VID2CONTEXT_MCP_MAX_TOKENS": "50"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert (
        "VID2CONTEXT_MCP_MAX_TOKENS='50' is not valid: expected 0 (off) or 100 to 10000000" in result.stderr
    )
    assert result.stdout == ""  # nothing on the protocol channel


LOCAL = Path(__file__).resolve().parents[1] / "local"


def _servers(config: dict[str, Any]) -> dict[str, Any]:
    return config.get("mcpServers") or config["servers"]


@pytest.mark.parametrize("path", sorted((LOCAL / "mcp").glob("*.json")), ids=lambda p: p.name)
def test_the_client_configs_name_the_server(path: Path) -> None:
    (server,) = _servers(json.loads(path.read_text(encoding="utf-8"))).values()
    if path.name.startswith("remote-"):
        assert server["url"].endswith("/mcp") and server["headers"]["Authorization"].startswith("Bearer ")
    else:
        assert server["command"] == "vid2context" and server["args"] == ["mcp"]
    assert path.name in (LOCAL / "README.md").read_text(encoding="utf-8")


async def test_the_configured_command_starts_the_server(tmp_path: Path, replay: ReplayServer) -> None:
    """The command the configs give, as installed in this environment (``<venv>/bin/vid2context``)."""
    (server,) = _servers(
        json.loads((LOCAL / "mcp" / "claude-desktop.json").read_text(encoding="utf-8"))
    ).values()
    params = _params(tmp_path / "home", replay.origin, tmp_path)
    params = params.model_copy(
        update={"command": str(Path(sys.executable).parent / server["command"]), "args": server["args"]}
    )
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errors:
        async with Client(stdio_client(params, errlog=errors)) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
