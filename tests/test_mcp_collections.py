"""Collections as an agent meets them: named by id or by unique name in every tool (and prompt)
that takes one, duplicate names refused with the holder's id, legacy twins answered with their
ids, one summary shape on MCP and REST, and structured results that the SDK's client checks
against each tool's outputSchema.

Real parts only: ``create_mcp(runtime)`` through the SDK's in-process ``Client``, the REST app
through httpx's ASGI transport on the same runtime, YouTube from the recorded fixtures, SQLite
files for the legacy twins.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings
from vid2context.storage.sqlite import SQLiteDatabase, SQLiteStorage, find_migrations

from .runtimes import ON_WORKER_TOO, Runtimes
from .test_mcp_tools import LONG, PLAIN, error_of, json_block, long_context, text_of
from .test_storage_conformance import LEGACY_TWINS_SQL
from .youtube_replay import PLAYLIST_ID, httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

SUMMARY_FIELDS = {
    "id", "name", "description", "sources", "videoCount", "createdAt", "updatedAt", "checkedAt", "watch"
}  # fmt: skip
"""The one collection shape (the REST suite checks the same set: tests/test_api_collections.py)."""
COLLECTION_TOOLS = ("list_collections", "create_collection", "add_to_collection", "get_collection")


@pytest.fixture
async def runtime(httpx_mock: Any, runtimes: Runtimes) -> Runtime:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    rt = await runtimes.build({"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"})
    await rt.storage.put_context(long_context())
    await rt.storage.put_context(long_context(PLAIN, minutes=40, chapters=False, seed=3))
    return rt


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client]:
    async with Client(create_mcp(runtime)) as connected:
        yield connected


async def structured(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The result's structuredContent, which the SDK's client has checked against the tool's
    outputSchema (it raises when they disagree), and which equals the JSON text."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None, tool
    assert result.structured_content == json_block(result)
    return result.structured_content


# --- by id or by name ------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_every_tool_and_prompt_takes_a_collection_by_id_or_by_name(client: Client) -> None:
    created = (await structured(client, "create_collection", {"name": "Long Talks"}))["collection"]
    cid = created["id"]
    for name in (cid, "Long Talks", "  long talks ", "LONG TALKS"):
        added = await structured(client, "add_to_collection", {"collection": name, "urls": [LONG]})
        assert added["collection"]["id"] == cid
        view = await structured(client, "get_collection", {"collection": name})
        assert view["id"] == cid and [v["id"] for v in view["videos"]] == [f"youtube:{LONG}"]
        pack = text_of(await client.call_tool("export_context_pack", {"collection": name, "maxTokens": 500}))
        assert "# Context pack: 1 video" in pack
        brief = await client.get_prompt("brief", {"collection": name})
        assert f"Collection {cid}" in brief.messages[0].content.text
        guide = await client.get_prompt("buyer_guide", {"product": "Prius", "collection": name})
        assert f"youtube:{LONG}" in guide.messages[0].content.text
    missing = error_of(await client.call_tool("get_collection", {"collection": "Short Talks"}))
    assert missing["error"] == "not-found" and "Short Talks" in missing["message"]
    assert "list_collections" in missing["hint"] and "/api/" not in missing["hint"]


async def test_export_obsidian_takes_a_collection_by_name(runtime: Runtime, tmp_path: Path) -> None:
    roots = tmp_path / "roots"
    roots.mkdir()
    local = dataclasses.replace(
        runtime, settings=msgspec.structs.replace(runtime.settings, file_roots=str(roots))
    )
    async with Client(create_mcp(local)) as connected:
        created = await structured(connected, "create_collection", {"name": "Vault talks"})
        await connected.call_tool(
            "add_to_collection", {"collection": created["collection"]["id"], "urls": [LONG]}
        )
        body = json_block(
            await connected.call_tool("export_obsidian", {"vaultPath": "v", "collection": "vault TALKS"})
        )
    assert len(body["notes"]) == 2 and all(Path(note).parent == roots / "v" for note in body["notes"])


@ON_WORKER_TOO
async def test_a_name_in_use_is_refused_naming_the_collection_that_has_it(client: Client) -> None:
    first = (await structured(client, "create_collection", {"name": "Hybrids"}))["collection"]
    for twin in ("Hybrids", " hybrids ", "HYBRIDS"):
        body = error_of(await client.call_tool("create_collection", {"name": twin}))
        assert body["error"] == "bad-request" and "unique" in body["message"]
        assert first["id"] in body["message"] and first["id"] in body["hint"]
        assert "get_collection" in body["hint"] and "/api/" not in body["hint"]
    listed = await structured(client, "list_collections", {})
    assert [c["id"] for c in listed["collections"]] == [first["id"]]
    other = (await structured(client, "create_collection", {"name": "Hybrids 2"}))["collection"]
    assert other["id"] != first["id"]


async def test_twins_from_before_names_were_unique_are_answered_with_their_ids(
    httpx_mock: Any, tmp_path: Path
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    first_only = tmp_path / "migrations"
    first_only.mkdir()
    (first_only / "0001_init.sql").write_text(
        (find_migrations() / "0001_init.sql").read_text(encoding="utf-8")
    )
    path = tmp_path / "vid2context.db"
    old = SQLiteDatabase(path, migrations=first_only)
    for statement in LEGACY_TWINS_SQL:
        old._writer.execute(statement)
    old._close()
    runtime = build_runtime(load_settings({}), storage=SQLiteStorage(path))  # migrates the file
    try:
        async with Client(create_mcp(runtime)) as client:
            body = error_of(await client.call_tool("get_collection", {"collection": "Talks"}))
            assert body["error"] == "bad-request"
            assert "2 collections are named 'Talks'" in body["message"]
            assert "col_old1" in body["message"] and "col_old2" in body["message"]
            assert "col_old1" in body["hint"] and "/api/" not in body["hint"]
            by_id = await structured(client, "get_collection", {"collection": "col_old2"})
            assert by_id["name"] == "talks"
            assert (await structured(client, "get_collection", {"collection": "solo ✨"}))["id"] == "col_solo"
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("brief", {"collection": "talks"})
            assert "col_old2" in json.loads(caught.value.error.message)["message"]
            again = error_of(await client.call_tool("create_collection", {"name": "TALKS"}))
            assert again["error"] == "bad-request" and "col_old1" in again["hint"]
        rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t")
        async with rest:
            response = await rest.get("/api/v1/collections/Talks")
            assert response.status_code == 400
            assert "PATCH /api/v1/collections/" in response.json()["error"]["hint"]
            renamed = await rest.patch("/api/v1/collections/col_old2", json={"name": "Talks, second"})
            assert renamed.status_code == 200, renamed.text
            assert (await rest.get("/api/v1/collections/talks")).json()["id"] == "col_old1"
    finally:
        await runtime.aclose()


# --- one shape ------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_one_collection_summary_shape_on_mcp_and_rest(runtime: Runtime, client: Client) -> None:
    rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://t")
    async with rest:
        created = await structured(client, "create_collection", {"name": "Shapes", "description": "d"})
        assert set(created) == {"collection"}
        cid = created["collection"]["id"]
        added = await structured(client, "add_to_collection", {"collection": cid, "urls": [LONG, PLAIN]})
        summaries = {
            "mcp create": created["collection"],
            "mcp add": added["collection"],
            "mcp list": (await structured(client, "list_collections", {}))["collections"][0],
            "mcp get": {
                k: v
                for k, v in (await structured(client, "get_collection", {"collection": cid})).items()
                if k not in ("videos", "pending")
            },
            "mcp resource": json.loads(
                (await client.read_resource(f"vid2context://collection/{cid}")).contents[0].text
            )["collection"],
            "rest list": (await rest.get("/api/v1/collections")).json()["collections"][0],
            "rest get": {
                k: v
                for k, v in (await rest.get(f"/api/v1/collections/{cid}")).json().items()
                if k not in ("videos", "pending")
            },
            "rest patch": (await rest.patch("/api/v1/collections/Shapes", json={})).json(),
        }
        for where, summary in summaries.items():
            assert set(summary) == SUMMARY_FIELDS, where
        later = {k: v for k, v in summaries["rest patch"].items() if k != "updatedAt"}
        for where, summary in summaries.items():
            if where not in ("mcp create", "rest patch"):
                assert {k: v for k, v in summary.items() if k != "updatedAt"} == later, where
        assert later["videoCount"] == 2 and later["watch"] is None
        assert summaries["mcp create"]["videoCount"] == 0
        # The summary of what adding did: lists for added and failed, a count for skipped (the contract's).
        again = await structured(
            client, "add_to_collection", {"collection": cid, "urls": [LONG, "dsMFmonKDD4"]}
        )
        assert again["summary"]["added"] == [] and again["summary"]["skipped"] == 1
        assert [f["code"] for f in again["summary"]["failed"]] == ["no-transcript"]


@ON_WORKER_TOO
async def test_every_collection_tool_is_structured_under_its_output_schema(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in COLLECTION_TOOLS:
        assert tools[name].output_schema is not None, name
    followed = await structured(
        client,
        "create_collection",
        {"name": "Followed", "sources": [f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"]},
    )
    assert len(followed["summary"]["added"]) == 12 and followed["collection"]["videoCount"] == 12
    cid = followed["collection"]["id"]
    view = await structured(client, "get_collection", {"collection": "followed"})
    assert len(view["videos"]) == 12 and view["pending"] == []
    assert (await structured(client, "list_collections", {}))["collections"][0]["id"] == cid
