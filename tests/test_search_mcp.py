"""``search_transcript`` through the SDK's client, and ``vid2context search``/``index`` in a subprocess.

The tool is the REST route's core in another skin: its hits are the route's, rendered as fenced
text with ``[m:ss-m:ss]`` and links, then one status line. ``urls`` not saved yet are read first
(recorded YouTube answers). What a result costs is measured here against ``SEARCH_COSTS``, the
figures its description and the server instructions state.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from vid2context.api import create_app
from vid2context.mcp import create_mcp
from vid2context.mcp.fences import unfence
from vid2context.mcp.prompts import READING
from vid2context.mcp.server import INSTRUCTIONS
from vid2context.mcp.tools.common import about
from vid2context.mcp.tools.search import SEARCH_COSTS
from vid2context.search.indexing import index_video
from vid2context.tokens import estimate_tokens

from .pages import text_of
from .retrieval_set import talks
from .runtimes import ON_WORKER_TOO, Runtimes, serve
from .test_indexing import QUIET, model_runtime
from .youtube_replay import httpx_callback

pytestmark = [pytest.mark.anyio, pytest.mark.httpx_mock(assert_all_responses_were_requested=False)]

VIDEO = "GJLlxj_dtq8"


async def indexed(runtimes: Runtimes, model_dir: Path) -> Any:
    runtime = await model_runtime(runtimes, model_dir)
    for talk in talks():
        await runtime.storage.put_context(talk)
        await index_video(runtime, talk)
    return runtime


@ON_WORKER_TOO
async def test_the_tool_answers_fenced_hits_then_one_status_line(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await indexed(runtimes, embed_model_dir)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool(
            "search_transcript", {"query": "how far does the stand tilt", "limit": 3}
        )
        async with serve(create_app(runtime, owns_runtime=False)) as http:
            rest = (
                await http.get("/api/v1/search", params={"q": "how far does the stand tilt", "limit": "3"})
            ).json()
    assert not result.is_error
    text = text_of(result)
    (hits,) = unfence(text)
    status = text.splitlines()[-1]
    assert text.count("=== BEGIN UNTRUSTED VIDEO TEXT [") == 1 and "] search hits (" in text
    lines = [line for line in hits.splitlines() if re.match(r"\d+\. ", line)]
    assert len(lines) == 3 == len(rest["hits"])
    first = rest["hits"][0]
    assert lines[0].startswith("1. Folding e-bike, a year on (youtube:EbikeTalk01) [")
    assert re.search(
        r"\[\d+:\d\d-\d+:\d\d\] best at \d+:\d\d https://www\.youtube\.com/watch\?v=EbikeTalk01&t=\d+s",
        lines[0],
    )
    assert first["url"] in lines[0] and 'chapter 1: "Kickstand"' in lines[0] and lines[0].endswith("· vector")
    assert "the **kickstand** bends to 165 degrees" in hits
    assert status.startswith(
        "Search: 3 hits for 'how far does the stand tilt' (hybrid; ran keyword and vector)"
    )
    assert "embedding model" in status and "vector ok" in status and "5 videos searched, 5 indexed" in status
    assert "get_section" in status and "/api/v1" not in text


async def test_urls_not_saved_yet_are_read_and_saved_first(
    runtimes: Runtimes, embed_model_dir: Path, httpx_mock: Any
) -> None:
    httpx_mock.add_callback(httpx_callback, is_reusable=True, is_optional=True)
    runtime = await model_runtime(runtimes, embed_model_dir)
    assert await runtime.storage.get_context(f"youtube:{VIDEO}") is None
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("search_transcript", {"query": "surface", "urls": [VIDEO]})
        narrowed = await client.call_tool(
            "search_transcript", {"query": "surface", "urls": [VIDEO], "from": "0:00", "to": "0:01"}
        )
    assert not result.is_error, text_of(result)
    saved = await runtime.storage.get_context(f"youtube:{VIDEO}")
    assert saved is not None
    status = text_of(result).splitlines()[-1]
    assert "1 read and saved first" in status and "1 videos searched, 1 indexed" in status
    assert not narrowed.is_error and "1 read and saved first" not in text_of(narrowed)


async def test_a_search_with_no_hits_is_the_status_line_alone(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    for talk in talks():
        await runtime.storage.put_context(talk)
    async with Client(create_mcp(runtime)) as client:
        result = await client.call_tool("search_transcript", {"query": "zeppelin"})
    text = text_of(result)
    assert not result.is_error and "UNTRUSTED" not in text and len(text.splitlines()) == 1
    assert "Search: 0 hits" in text and "vector disabled: No embedding rung" in text
    assert "list_models with kind=embed" in text  # the MCP hint, never a route


async def test_what_a_result_costs_is_what_the_description_states(
    runtimes: Runtimes, embed_model_dir: Path
) -> None:
    runtime = await indexed(runtimes, embed_model_dir)
    measured: dict[int, int] = {}
    async with Client(create_mcp(runtime)) as client:
        for limit in (1, 5, 10, 20):
            result = await client.call_tool("search_transcript", {"query": "battery range", "limit": limit})
            text = text_of(result)
            assert len(unfence(text)[0].strip().split("\n   ")) - 1 == limit
            measured[limit] = estimate_tokens(text)
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "search_transcript"]
    per_hit = (measured[20] - measured[1]) / 19
    base = measured[1] - per_hit
    print(f"\nsearch_transcript tokens: {measured}; about {base:.0f} plus {per_hit:.0f} a hit")
    assert SEARCH_COSTS["search_per_hit"] * 0.75 <= per_hit <= SEARCH_COSTS["search_per_hit"] * 1.25
    assert SEARCH_COSTS["search_base"] * 0.6 <= base <= SEARCH_COSTS["search_base"] * 1.4
    stated = f"about {about(SEARCH_COSTS['search_base'])} tokens plus {about(SEARCH_COSTS['search_per_hit'])} per hit"
    assert stated in " ".join((tool.description or "").split())
    assert "search_transcript first" in INSTRUCTIONS and "Search before reading" in READING


def _env(tmp_path: Path, origin: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(
        VID2CONTEXT_HOME=str(tmp_path), VID2CONTEXT_YOUTUBE_ORIGIN=origin, VID2CONTEXT_EMBED_ON_SAVE="0"
    )
    return env


async def test_the_cli_searches_and_its_json_is_the_rest_body(tmp_path: Path, embed_model_dir: Path) -> None:
    """``vid2context index`` backfills the library the CLI reads (the test model in a folder),
    ``search --json`` prints what ``GET /api/v1/search`` answers for the same library."""
    from vid2context.runtime import build_local_runtime

    # Nothing is fetched: the library is filled here, then read by the subprocesses.
    env = {
        **_env(tmp_path, "http://127.0.0.1:9"),
        "VID2CONTEXT_EMBED_MODEL_DIR": str(embed_model_dir),
        "VID2CONTEXT_EMBED_POOLING": "mean",
    }
    runtime = build_local_runtime(env)
    try:
        for talk in talks():
            await runtime.storage.put_context(talk)
    finally:
        await runtime.aclose()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vid2context", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )

    first = run("index")
    again = run("index", "--quiet")
    found = run("search", "kickstand degrees", "--json", "--limit", "3")
    plain = run("search", "kickstand degrees", "--limit", "2")
    runtime = build_local_runtime(env)
    try:
        async with serve(create_app(runtime)) as http:
            rest = (await http.get("/api/v1/search", params={"q": "kickstand degrees", "limit": "3"})).json()
    finally:
        if not runtime.http.is_closed:
            await runtime.aclose()
    assert first.returncode == 0, first.stderr[-500:]
    summary = json.loads(first.stdout)
    assert summary["indexed"] == 5 and summary["total"] == 5 and "5 of 5 videos checked" in first.stderr
    assert json.loads(again.stdout)["skipped"] == 5 and again.stderr == ""
    assert found.returncode == 0, found.stderr[-500:]
    body = json.loads(found.stdout)
    assert set(body) == {"hits", "meta"} and body["meta"]["vector"] == "ok"
    strip = lambda b: [{k: v for k, v in h.items()} for h in b["hits"]]  # noqa: E731
    assert strip(body) == strip(rest)
    assert {k: v for k, v in body["meta"].items() if k not in ("timings", "attempts")} == {
        k: v for k, v in rest["meta"].items() if k not in ("timings", "attempts")
    }
    assert plain.returncode == 0 and plain.stdout.startswith("1. Folding e-bike, a year on")
    assert plain.stderr.startswith("Search: 2 hits") and "GET /api" not in plain.stderr
