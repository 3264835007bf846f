"""Bad input on every search surface: the REST route, the MCP tool and the CLI answer the
contract's code with a hint, never a 500 and never an FTS5 message, and lose nothing.

One table of inputs, read by the three surfaces in their own forms (query parameters, tool
arguments, command-line flags)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.mcp import create_mcp

from .retrieval_set import talks
from .runtimes import Runtimes, serve
from .test_indexing import QUIET

pytestmark = pytest.mark.anyio

HOSTILE = [
    '"',
    '"unclosed phrase',
    "NEAR(kickstand degrees)",
    "NEAR(kickstand degrees, 2)",
    "kick*",
    "*",
    "^kickstand",
    "text:kickstand",
    "video_id:youtube",
    "{text video_id}:kickstand",
    "kickstand AND OR NOT",
    "kickstand)",
    "(kickstand",
    "'; DROP TABLE segments; --",
    "\x00kickstand",
    "kickstand\u202e",
]
"""Queries that are FTS5 syntax or SQL: each is searched as words, never as syntax (``NEAR(a b)`` is
the words near, a and b; ``text:kickstand`` the phrase "text kickstand")."""

FTS5_WORDS = ("fts5", "syntax error", "no such column", "sqlite", "malformed", "unterminated", "Traceback")

# (name, REST params, MCP arguments, CLI args, code); None where the surface cannot express it.
BAD: list[tuple[str, dict[str, str] | None, dict[str, Any] | None, list[str] | None, str]] = [
    ("empty query", {"q": ""}, {"query": ""}, [""], "bad-request"),
    ("blank query", {"q": "   "}, {"query": "   "}, ["   "], "bad-request"),
    ("no q", {}, None, None, "bad-request"),
    ("operators only", {"q": '" * ^ : ( )'}, {"query": '" * ^ : ( )'}, ['" * ^ : ( )'], "bad-request"),
    (
        "exclusions only",
        {"q": "-kickstand -motor"},
        {"query": "-kickstand -motor"},
        ["-kickstand -motor"],
        "bad-request",
    ),
    (
        "10 kB query",
        {"q": "kickstand " * 1000},
        {"query": "kickstand " * 1000},
        ["kickstand " * 1000],
        "bad-request",
    ),
    (
        "unknown collection",
        {"q": "kickstand", "collectionId": "col_nope"},
        {"query": "kickstand", "collection": "col_nope"},
        ["kickstand", "--collection", "col_nope"],
        "not-found",
    ),
    ("videoIds not saved", {"q": "kickstand", "videoIds": "youtube:NotSaved123"}, None, None, "not-found"),
    ("empty videoIds", {"q": "kickstand", "videoIds": " , "}, None, None, "bad-request"),
    (
        "limit 0",
        {"q": "kickstand", "limit": "0"},
        {"query": "kickstand", "limit": 0},
        ["kickstand", "--limit", "0"],
        "bad-request",
    ),
    (
        "limit 101",
        {"q": "kickstand", "limit": "101"},
        {"query": "kickstand", "limit": 101},
        ["kickstand", "--limit", "101"],
        "bad-request",
    ),
    (
        "limit not a number",
        {"q": "kickstand", "limit": "ten"},
        {"query": "kickstand", "limit": "ten"},
        None,
        "bad-request",
    ),
    (
        "limit negative",
        {"q": "kickstand", "limit": "-5"},
        {"query": "kickstand", "limit": -5},
        ["kickstand", "--limit", "-5"],
        "bad-request",
    ),
    (
        "unknown mode",
        {"q": "kickstand", "mode": "fuzzy"},
        {"query": "kickstand", "mode": "fuzzy"},
        ["kickstand", "--mode", "fuzzy"],
        "bad-request",
    ),
    (
        "bad rerank",
        {"q": "kickstand", "rerank": "maybe"},
        {"query": "kickstand", "rerank": "maybe"},
        None,
        "bad-request",
    ),
    ("bad date", {"q": "kickstand", "publishedAfter": "last tuesday"}, None, None, "bad-request"),
    ("impossible date", {"q": "kickstand", "publishedBefore": "2026-02-30"}, None, None, "bad-request"),
    (
        "dates swapped",
        {"q": "kickstand", "publishedAfter": "2026-06-01", "publishedBefore": "2026-01-01"},
        None,
        None,
        "bad-request",
    ),
    ("unknown origin", {"q": "kickstand", "origin": "captions-manual,telepathy"}, None, None, "bad-request"),
    ("blank channel", {"q": "kickstand", "channel": "   "}, None, None, "bad-request"),
    ("from without a video", None, {"query": "kickstand", "from": "1:00"}, None, "bad-request"),
    (
        "from after to",
        None,
        {"query": "kickstand", "urls": ["youtube:EbikeTalk01"], "from": "5:00", "to": "1:00"},
        None,
        "bad-request",
    ),
    (
        "bad time",
        None,
        {"query": "kickstand", "urls": ["youtube:EbikeTalk01"], "from": "yesterday"},
        None,
        "bad-request",
    ),
    ("empty urls", None, {"query": "kickstand", "urls": []}, None, "bad-request"),
    ("query not text", None, {"query": 42}, None, "bad-request"),
]


@pytest.fixture
async def runtime(runtimes: Runtimes) -> Any:
    rt = await runtimes.build(QUIET)
    for talk in talks():
        await rt.storage.put_context(talk)
    return rt


def _leaks(text: str) -> list[str]:
    return [word for word in FTS5_WORDS if word.lower() in text.lower()]


@pytest.mark.parametrize(("name", "params", "code"), [(n, p, c) for n, p, _, _, c in BAD if p is not None])
async def test_the_route_refuses_bad_input_with_the_code_and_a_hint(
    runtime: Any, name: str, params: dict[str, str], code: str
) -> None:
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        response = await client.get("/api/v1/search", params=params)
        still = await client.get("/api/v1/search", params={"q": "kickstand"})
    body = response.json()
    assert body["error"]["code"] == code, (name, body)
    assert response.status_code == {"bad-request": 400, "not-found": 404}[code]
    assert body["error"]["hint"] and not _leaks(response.text), (name, body)
    assert still.status_code == 200 and still.json()["hits"]  # nothing was lost


@pytest.mark.parametrize(("name", "arguments", "code"), [(n, a, c) for n, _, a, _, c in BAD if a is not None])
async def test_the_tool_refuses_bad_input_with_the_code_and_a_hint(
    runtime: Any, name: str, arguments: dict[str, Any], code: str
) -> None:
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("search_transcript", arguments)
    assert result.is_error, (name, result.content[0].text[:300])
    body = json.loads(result.content[0].text)
    assert body["error"] == code and body["hint"], (name, body)
    assert not _leaks(result.content[0].text) and "/api/v1" not in body["hint"], (name, body)


@pytest.mark.parametrize("query", HOSTILE)
async def test_fts5_syntax_is_searched_as_words_on_every_runtime_surface(runtime: Any, query: str) -> None:
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        response = await client.get("/api/v1/search", params={"q": query})
    assert response.status_code in (200, 400), (query, response.text)
    assert not _leaks(response.text), (query, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["code"] == "bad-request" and response.json()["error"]["hint"]
    elif query in (
        "^kickstand",
        "kickstand)",
        "(kickstand",
        "\x00kickstand",
    ):  # only punctuation around the word
        assert any("kickstand" in h["text"] for h in response.json()["hits"]), query


@pytest.mark.parametrize("runtime_kind", ["sqlite", "worker"], indirect=True)
async def test_hostile_queries_on_sqlite_and_d1_never_reach_fts5_as_syntax(runtime: Any) -> None:
    async with serve(create_app(runtime, owns_runtime=False)) as client:
        for query in HOSTILE:
            response = await client.get("/api/v1/search", params={"q": query, "mode": "keyword"})
            assert response.status_code in (200, 400), (query, response.text)
            assert not _leaks(response.text), (query, response.text[:300])


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(VID2CONTEXT_HOME=str(tmp_path), VID2CONTEXT_EMBED_ON_SAVE="0")
    return subprocess.run(
        [sys.executable, "-m", "vid2context", "search", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_cli_refuses_bad_input_with_the_code_and_a_hint(tmp_path: Path) -> None:
    """One process per row would take a minute; each row is one run, on an empty library."""
    for name, _, _, args, code in BAD:
        if args is None:
            continue
        done = _cli(tmp_path, *args)
        assert done.returncode in (1, 2), (name, done.returncode, done.stderr[-300:])
        if done.returncode == 1:
            assert f"error: {code}:" in done.stderr and "hint: " in done.stderr, (name, done.stderr[-300:])
        assert done.stdout == "" and not _leaks(done.stderr), (name, done.stderr[-300:])
