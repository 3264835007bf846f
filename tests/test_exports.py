"""Exports over REST and MCP: Obsidian notes as files, and Notion pages through the Notion stand-in
(``fake_notion.py``, real HTTP on 127.0.0.1), on the memory runtime (the notion-client SDK) and on
the Worker's (D1, KV and R2 on Miniflare; plain httpx).

The videos are the made-up talks of ``talks.py`` saved in the library first, so nothing is fetched
from a platform. Notion's documented limits are the stand-in's: an export that broke one (more than
100 blocks in a request, more than 2,000 characters in a rich text) would be refused there.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client

from vid2context import library
from vid2context.api import create_app
from vid2context.errors import ErrorCode, VidError
from vid2context.exports.notes import vault_notes
from vid2context.exports.notion import BLOCKS_PER_REQUEST, RICH_TEXT_CHARS, parent_page_id, rich_text
from vid2context.exports.obsidian import export_notes
from vid2context.mcp import create_mcp
from vid2context.runtime import Runtime

from .fake_notion import PARENT, TOKEN, FakeNotion
from .runtimes import ON_WORKER_TOO, Runtimes
from .talks import bike_review, sourdough, three_hour_talk

pytestmark = pytest.mark.anyio

QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0"}
API = "https://edge.example/api/v1"


@pytest.fixture
def notion() -> Any:
    with FakeNotion() as stand_in:
        yield stand_in


async def _runtime(runtimes: Runtimes, notion: FakeNotion | None = None, **extra: str) -> Runtime:
    environ = dict(QUIET)
    if notion is not None:
        environ |= {"NOTION_TOKEN": TOKEN, "VID2CONTEXT_NOTION_ORIGIN": notion.origin}
    runtime = await runtimes.build(environ | extra)
    for context in (bike_review(), sourdough()):
        await runtime.storage.put_context(context)
    return runtime


@pytest.fixture
async def client_of() -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    def make(runtime: Runtime) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)), base_url=API)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert "Traceback" not in response.text
    return body["error"]


# Obsidian ----------------------------------------------------------------------------------------


@ON_WORKER_TOO
async def test_obsidian_files_are_the_notes_the_stdio_tool_writes(
    runtimes: Runtimes, client_of: Any, tmp_path: Path
) -> None:
    runtime = await _runtime(runtimes)
    ids = [bike_review().id, sourdough().id]
    response = await client_of(runtime).post("/exports/obsidian", json={"inputs": ids})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["failed"] == []
    files = {item["path"]: item["content"] for item in body["files"]}
    assert len(files) == 3  # one note per video, then the index note
    contexts = [await runtime.storage.get_context(video_id) for video_id in ids]
    _, written = export_notes(str(tmp_path), str(tmp_path), contexts, title="vid2context export")
    assert files == {path.name: path.read_text() for path in written}
    index = body["files"][-1]["content"]
    for path in list(files)[:2]:
        assert f"[[{path.removesuffix('.md')}]]" in index


@ON_WORKER_TOO
async def test_obsidian_from_a_collection_names_the_index_after_it(
    runtimes: Runtimes, client_of: Any
) -> None:
    runtime = await _runtime(runtimes)
    client = client_of(runtime)
    made = await library.create_collection(runtime, "Bread and bikes")
    await library.add_to_collection(runtime, made.id, [sourdough().id])
    response = await client.post("/exports/obsidian", json={"collectionId": made.id})
    assert response.status_code == 200, response.text
    paths = [item["path"] for item in response.json()["files"]]
    assert paths[-1] == "Bread and bikes.md"
    assert len(paths) == 2


async def test_note_paths_are_single_safe_file_names() -> None:
    hostile = sourdough()
    hostile.metadata.title = "../../etc/passwd \\ C:\\x:y*?<>| [[link]] #tag ^block"
    notes = vault_notes([hostile], title="../../../../collection/..")
    for name, _ in notes:
        assert "/" not in name and "\\" not in name and ":" not in name
        assert not name.startswith(".") and name.strip() == name
    reserved = sourdough()
    reserved.metadata.title = ""
    reserved.id = "local:CON"
    reserved.metadata.id = "CON"
    assert vault_notes([reserved], title="x")[0][0] == "_CON"


@ON_WORKER_TOO
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 400, "bad-request"),
        ({"inputs": []}, 400, "bad-request"),
        ({"inputs": "not a list"}, 400, "bad-request"),
        ({"inputs": [1, 2]}, 400, "bad-request"),
        ({"inputs": ["youtube:x"], "vaultPath": "/etc"}, 400, "bad-request"),
        ({"inputs": [f"https://www.youtube.com/watch?v=v{i:010d}" for i in range(101)]}, 413, "too-large"),
        ({"collectionId": "col_doesnotexist"}, 404, "not-found"),
    ],
)
async def test_obsidian_refuses_bad_bodies(
    runtimes: Runtimes, client_of: Any, body: dict[str, Any], status: int, code: str
) -> None:
    runtime = await _runtime(runtimes)
    response = await client_of(runtime).post("/exports/obsidian", json=body)
    assert response.status_code == status, response.text
    error = _error(response)
    assert error["code"] == code and error["hint"]


async def test_obsidian_refuses_malformed_and_oversized_bodies(runtimes: Runtimes, client_of: Any) -> None:
    client = client_of(await _runtime(runtimes))
    broken = await client.post(
        "/exports/obsidian", content=b'{"inputs": [', headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 400 and _error(broken)["hint"]
    huge = await client.post("/exports/obsidian", json={"inputs": ["x" * 300_000] * 40})
    assert huge.status_code in (400, 413) and _error(huge)["hint"]


async def test_an_unreadable_input_is_listed_not_fatal(runtimes: Runtimes, client_of: Any) -> None:
    runtime = await _runtime(runtimes, VID2CONTEXT_PUBLIC="1")
    response = await client_of(runtime).post(
        "/exports/obsidian", json={"inputs": [sourdough().id, "/etc/passwd"]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [item["input"] for item in body["failed"]] == ["/etc/passwd"]
    assert "Not included" in body["files"][-1]["content"]


# Notion ------------------------------------------------------------------------------------------


def _texts(block: dict[str, Any]) -> str:
    kind = block["type"]
    return "".join(part["text"]["content"] for part in block[kind].get("rich_text", []))


@ON_WORKER_TOO
async def test_notion_pages_have_the_title_facts_chapters_and_linked_stamps(
    runtimes: Runtimes, client_of: Any, notion: FakeNotion
) -> None:
    runtime = await _runtime(runtimes, notion)
    ids = [bike_review().id, sourdough().id]
    response = await client_of(runtime).post("/exports/notion", json={"inputs": ids, "parentPageId": PARENT})
    assert response.status_code == 200, response.text
    pages = response.json()["pages"]
    assert [page["videoId"] for page in pages] == ids
    created = notion.created()
    assert [page["title"] for _, page in created] == [
        bike_review().metadata.title,
        sourdough().metadata.title,
    ]
    assert all(page["url"].startswith("https://www.notion.so/") for page in pages)
    blocks = notion.blocks_of(created[0][0])
    headings = [block for block in blocks if block["type"] == "heading_2"]
    chapters = bike_review().metadata.chapters
    assert [_texts(block).split("] ", 1)[1] for block in headings] == [ch.title for ch in chapters]
    first_stamp = headings[0]["heading_2"]["rich_text"][0]["text"]
    assert first_stamp["content"] == "[0:00]" and "t=0s" in first_stamp["link"]["url"]
    facts = [_texts(block) for block in blocks if block["type"] == "bulleted_list_item"]
    assert any(fact.startswith("Channel: ") for fact in facts)
    requests = notion.seen.requests
    assert {request["headers"]["Notion-Version"] for request in requests} == {"2025-09-03"}
    agents = {request["headers"].get("User-Agent", "") for request in requests}
    sdk = runtime.name == "local"  # the notion-client SDK locally, plain httpx on the Worker
    assert all(("notion-sdk-py" in agent) is sdk for agent in agents), agents


@ON_WORKER_TOO
async def test_a_long_transcript_goes_in_requests_of_at_most_100_blocks(
    runtimes: Runtimes, client_of: Any, notion: FakeNotion
) -> None:
    runtime = await _runtime(runtimes, notion)
    long = three_hour_talk()
    await runtime.storage.put_context(long)
    response = await client_of(runtime).post(
        "/exports/notion", json={"inputs": [long.id], "parentPageId": PARENT}
    )
    assert response.status_code == 200, response.text
    sizes = [len(request["body"]["children"]) for request in notion.seen.requests]
    assert len(sizes) > 2 and max(sizes) == BLOCKS_PER_REQUEST
    assert sum(sizes) == len(notion.blocks_of(notion.created()[0][0]))
    assert [request["method"] for request in notion.seen.requests][1:] == ["PATCH"] * (len(sizes) - 1)
    assert 429 not in notion.seen.refused  # paced under the stand-in's three a second


def test_rich_text_is_cut_on_spaces_within_notions_limit() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    pieces = rich_text(text, "https://example.com/x")
    assert all(len(piece["text"]["content"]) <= RICH_TEXT_CHARS for piece in pieces)
    assert "".join(piece["text"]["content"] for piece in pieces) == text
    assert all(piece["text"]["content"].endswith(" ") for piece in pieces[:-1])
    unbroken = rich_text("x" * 4500)
    assert [len(piece["text"]["content"]) for piece in unbroken] == [2000, 2000, 500]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (PARENT, PARENT),
        (PARENT.replace("-", "").upper(), PARENT),
        (f"https://www.notion.so/acme/Videos-{PARENT.replace('-', '')}?pvs=4", PARENT),
    ],
)
def test_the_parent_page_comes_from_an_id_or_a_url(given: str, expected: str) -> None:
    assert parent_page_id(given, None) == expected


@pytest.mark.parametrize(
    "given", ["", "   ", "not-an-id", "1234", "x" * 5000, f"javascript:{PARENT}junk{PARENT}"]
)
def test_a_bad_parent_page_is_a_bad_request(given: str) -> None:
    with pytest.raises(VidError) as caught:
        parent_page_id(given, None)
    assert caught.value.code is ErrorCode.BAD_REQUEST and caught.value.hint


@ON_WORKER_TOO
async def test_notion_without_a_token_is_no_provider(runtimes: Runtimes, client_of: Any) -> None:
    runtime = await _runtime(runtimes)
    response = await client_of(runtime).post(
        "/exports/notion", json={"inputs": [sourdough().id], "parentPageId": PARENT}
    )
    assert response.status_code == 503
    error = _error(response)
    assert error["code"] == "no-provider" and "NOTION_TOKEN" in error["hint"]


@ON_WORKER_TOO
async def test_notion_refusals_map_to_the_contracts_codes(
    runtimes: Runtimes, client_of: Any, notion: FakeNotion
) -> None:
    runtime = await _runtime(runtimes, notion)
    client = client_of(runtime)
    body = {"inputs": [sourdough().id]}
    no_parent = await client.post("/exports/notion", json=body)
    assert no_parent.status_code == 400 and "parentPageId" in _error(no_parent)["hint"]
    unshared = await client.post("/exports/notion", json=body | {"parentPageId": "0" * 32})
    assert unshared.status_code == 404 and "share" in _error(unshared)["hint"].lower()
    notion.token = "another-token"
    refused = await client.post("/exports/notion", json=body | {"parentPageId": PARENT})
    assert refused.status_code == 502 and _error(refused)["code"] == "auth"
    assert TOKEN not in refused.text


@ON_WORKER_TOO
async def test_notion_rate_limits_are_waited_out_then_reported(
    runtimes: Runtimes, client_of: Any, notion: FakeNotion
) -> None:
    runtime = await _runtime(runtimes, notion)
    client = client_of(runtime)
    body = {"inputs": [sourdough().id], "parentPageId": PARENT}
    notion.limit_next(2)
    waited = await client.post("/exports/notion", json=body)
    assert waited.status_code == 200, waited.text
    assert notion.seen.refused == [429, 429] and len(notion.created()) == 1
    notion.fail_next = [503]
    retried = await client.post("/exports/notion", json=body)
    assert retried.status_code == 200 and len(notion.created()) == 2
    notion.retry_after = 3600  # longer than an export waits: answered at once
    notion.limit_next(1)
    limited = await client.post("/exports/notion", json=body)
    assert limited.status_code == 429
    assert _error(limited)["code"] == "rate-limited" and int(limited.headers["Retry-After"]) > 3600


@ON_WORKER_TOO
async def test_notion_over_mcp_is_the_same_export(runtimes: Runtimes, notion: FakeNotion) -> None:
    runtime = await _runtime(runtimes, notion)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("export_notion", {"urls": [bike_review().id], "parentPageId": PARENT})
        assert not result.is_error, result.content
        reply = json.loads(result.content[0].text)
        assert [page["videoId"] for page in reply["pages"]] == [bike_review().id]
        refused = await client.call_tool(
            "export_notion", {"urls": [bike_review().id], "parentPageId": "nope"}
        )
        assert refused.is_error and "parentPageId" in refused.content[0].text


@ON_WORKER_TOO
async def test_notion_over_mcp_on_each_runtime_refuses_without_a_token(runtimes: Runtimes) -> None:
    runtime = await _runtime(runtimes)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("export_notion", {"urls": [sourdough().id], "parentPageId": PARENT})
        assert result.is_error and "NOTION_TOKEN" in result.content[0].text
