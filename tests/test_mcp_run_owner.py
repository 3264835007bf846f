"""A long run started over OAuth stays its client's through the hourly token refresh.

A call over ``/mcp`` answers ``processing`` (``VID2CONTEXT_MCP_WAIT_S=0``, YouTube held back by the
test), the client refreshes its access token, and ``get_job`` with the new token reads the run; a
second sign-in of the same client (another grant family) and a static token cannot. Real app,
real OAuth flows (``oauth_client.Flow``), raw JSON-RPC on stateless ``/mcp``, on every runtime.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from vid2context.api import create_app

from .oauth_client import OWNER_KEY, Flow
from .runtimes import Runtimes, asgi_lifespan, on_each_runtime_when
from .test_mcp_http import MCP_HEADERS
from .youtube_replay import httpx_callback

pytestmark = pytest.mark.anyio
pytest_generate_tests = on_each_runtime_when("served")

VIDEO = "GJLlxj_dtq8"
STATIC = "st4tic-" + "t0k3n" * 4
BOUND_S = 60.0
"""Only a bound on how long a broken test hangs; nothing is asserted about time."""


@dataclass
class Served:
    flow: Flow
    http: httpx.AsyncClient
    upstream: asyncio.Event
    """Set: YouTube answers (until then every fetch of the run waits)."""


@pytest.fixture
async def served(runtimes: Runtimes, httpx_mock: Any) -> AsyncIterator[Served]:
    upstream = asyncio.Event()

    async def held(request: httpx.Request) -> httpx.Response:
        await upstream.wait()
        return httpx_callback(request)

    httpx_mock.add_callback(held, is_reusable=True, is_optional=True)
    runtime = await runtimes.build(
        {
            "VID2CONTEXT_API_KEYS": OWNER_KEY,
            "VID2CONTEXT_MCP_TOKENS": STATIC,
            "VID2CONTEXT_MCP_RATE_LIMIT": "0",
            "VID2CONTEXT_MCP_WAIT_S": "0",
        }
    )
    app = create_app(runtime, owns_runtime=False)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with asgi_lifespan(app), httpx.AsyncClient(transport=transport, base_url="http://v2c.test") as http:
        yield Served(flow=Flow(http), http=http, upstream=upstream)


async def _call(served: Served, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` on stateless ``/mcp``; the tool result's JSON block (between fences when it
    holds a video's text)."""
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "Mcp-Protocol-Version": "2025-11-25"}
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = await served.http.post("/mcp", json=message, headers=headers)
    assert response.status_code == 200, response.text
    blocks = [block["text"] for block in response.json()["result"]["content"]]
    return json.loads(blocks[1] if len(blocks) == 3 else blocks[0])


async def _finished(served: Served, token: str, job_id: str) -> dict[str, Any]:
    async with asyncio.timeout(BOUND_S):
        while (answer := await _call(served, token, "get_job", {"job_id": job_id})).get(
            "status"
        ) == "processing":
            await asyncio.sleep(0.05)
    return answer


async def test_a_run_is_read_with_the_refreshed_token_and_by_nobody_else(served: Served) -> None:
    client = await served.flow.register()
    first = await served.flow.tokens(client)
    started = await _call(served, first["access_token"], "get_metadata", {"url": VIDEO})
    assert started["status"] == "processing" and started["job_id"].startswith("job_"), started

    refreshed = await served.flow.refresh(client, first["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    token = refreshed.json()["access_token"]
    assert token != first["access_token"]

    # Another sign-in of the same client is another grant family; a static token is someone else.
    other = await served.flow.tokens(client)
    for stranger in (other["access_token"], STATIC):
        refused = await _call(served, stranger, "get_job", {"job_id": started["job_id"]})
        assert refused["error"] == "bad-request" and "no job" in refused["message"], refused

    served.upstream.set()
    done = await _finished(served, token, started["job_id"])
    assert done.get("title", "").startswith("Surface Go Review"), done
    again = await _call(served, token, "get_metadata", {"url": VIDEO})  # the same call attaches to it
    assert again == done


async def test_a_static_token_keeps_its_runs(served: Served) -> None:
    started = await _call(served, STATIC, "get_metadata", {"url": VIDEO})
    assert started["status"] == "processing", started
    served.upstream.set()
    done = await _finished(served, STATIC, started["job_id"])
    assert done.get("title", "").startswith("Surface Go Review"), done
