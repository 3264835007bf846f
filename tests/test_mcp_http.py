"""``/mcp`` over Streamable HTTP, on loopback, twice: the real app under ``vid2context serve``
(granian), and the Worker's (``build_worker_runtime`` on Miniflare's D1, KV and R2) served as the
Workers adapter runs it, its lifespan around every request (``runtimes.WorkerLikeApp``, uvicorn).

The SDK's own HTTP client talks to it in both protocol versions (2026-07-28, and 2025-11-25 with
``mode="legacy"``); raw requests check what the mount answers before the SDK sees anything: 401,
403 (Origin, Host), 405 (GET, DELETE), 429, and the public discovery documents.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ResourceTemplateReference
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from vid2context.api import create_app
from vid2context.mcp.fences import unfence
from vid2context.runtime import build_worker_runtime

from .mcp_catalogue import TOOLS
from .miniflare_harness import MiniflareHarness, apply_migrations
from .ports import bound_socket, healthy, start_serve
from .runtimes import WorkerLikeApp
from .youtube_replay import ReplayServer

pytestmark = pytest.mark.slow

TOKENS = ("t0k3n-one", "t0k3n-two", "t0k3n-rate")
RATE = 40
ALLOWED_ORIGIN = "https://app.example"
ALLOWED_HOST = "mcp.example.test"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vid2context"


@pytest.fixture(scope="module", params=["local", "worker"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app serving on 127.0.0.1, its YouTube a replay server; yields its origin."""
    with ReplayServer() as replay:
        settings = {
            "VID2CONTEXT_YOUTUBE_ORIGIN": replay.origin,
            "VID2CONTEXT_MCP_TOKENS": ",".join(TOKENS),
            "VID2CONTEXT_MCP_RATE_LIMIT": str(RATE),
            "VID2CONTEXT_CORS_ORIGINS": ALLOWED_ORIGIN,
            "VID2CONTEXT_MCP_ALLOWED_HOSTS": ALLOWED_HOST,
            "VID2CONTEXT_ACCESS_LOG": "0",
        }
        if request.param == "local":
            yield from _local_server(settings, tmp_path_factory.mktemp("home"))
        else:
            yield from _worker_server(settings, request.getfixturevalue("miniflare"))


def _wait_for_health(origin: str, failed: Any) -> None:
    """Until the server answers, or ``failed()`` gives a reason (a stopped server, its log)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(origin + "/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if (reason := failed()) or time.monotonic() > deadline:
            raise RuntimeError(reason or f"{origin} did not answer within 60 s")
        time.sleep(0.2)


def _local_server(settings: Mapping[str, str], home: Path) -> Iterator[str]:
    """``vid2context serve`` in a subprocess, its home and file roots in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VID2CONTEXT_")}
    env.update(settings, VID2CONTEXT_HOME=str(home), VID2CONTEXT_FILE_ROOTS=str(home))
    process, origin = start_serve(env, home / "server.log", healthy, within_s=60)
    try:
        yield origin
    finally:
        process.terminate()
        process.wait(timeout=30)


def _worker_server(settings: Mapping[str, str], miniflare: MiniflareHarness) -> Iterator[str]:
    """``build_worker_runtime`` on an empty Miniflare deployment with ``settings`` as its vars,
    served by uvicorn in a thread of its own as the Workers adapter runs the app."""
    miniflare.reset()
    env = miniflare.new_env(vars=dict(settings))
    runtime = build_worker_runtime(env)
    sock = bound_socket()
    port = sock.getsockname()[1]
    web = uvicorn.Server(
        uvicorn.Config(
            WorkerLikeApp(create_app(runtime, owns_runtime=False)),
            host="127.0.0.1",
            port=port,
            lifespan="off",
            log_level="warning",
            access_log=False,
        )
    )
    crashed: list[BaseException] = []

    async def run() -> None:
        try:
            await apply_migrations(env.DB)
            await web.serve(sockets=[sock])
        except BaseException as error:  # shown by the health wait below
            crashed.append(error)
            raise
        finally:
            await runtime.aclose()
            await env.aclose()

    thread = threading.Thread(target=asyncio.run, args=(run(),), name="worker-like server", daemon=True)
    thread.start()
    origin = f"http://127.0.0.1:{port}"
    try:
        _wait_for_health(origin, lambda: repr(crashed[0]) if crashed else None)
        yield origin
    finally:
        web.should_exit = True
        thread.join(timeout=30)
        sock.close()


def _client(origin: str, token: str = TOKENS[0], mode: str = "auto") -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(origin + "/mcp", http_client=http), mode=mode)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


# --- the SDK's client, both protocol versions ----------------------------------------------------


@pytest.mark.anyio
# The newest version of each era the SDK speaks (2026-07-28 and 2025-11-25 with mcp 2.3), named by the
# SDK so that a release adding one is not a failure here; the server card's list is checked against
# the same SDK lists below.
@pytest.mark.parametrize(
    ("mode", "version"), [("auto", LATEST_MODERN_VERSION), ("legacy", LATEST_HANDSHAKE_VERSION)]
)
async def test_the_sdk_client_uses_every_kind_of_primitive(server: str, mode: str, version: str) -> None:
    async with _client(server, mode=mode) as client:
        assert client.protocol_version == version
        assert "get_outline" in (client.instructions or "")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        transcript = await client.call_tool("get_transcript", {"url": "GJLlxj_dtq8", "format": "srt"})
        (inside,) = unfence(_text(transcript))
        assert inside.startswith("1\n00:00:00,000 --> ")
        outline = await client.call_tool("get_outline", {"url": "GJLlxj_dtq8"})
        assert outline.structured_content["chapters"][0]["url"].endswith("&t=39s")
        error = await client.call_tool("get_transcript", {"url": "dsMFmonKDD4"})
        assert error.is_error and json.loads(error.content[0].text)["error"] == "no-transcript"
        refused = await client.call_tool("export_obsidian", {"vaultPath": ".", "urls": ["GJLlxj_dtq8"]})
        body = json.loads(refused.content[0].text)
        assert refused.is_error and body["error"] == "forbidden" and "stdio" in body["hint"]
        assert not list(Path(".").glob("*GJLlxj_dtq8*.md"))
        unknown = await client.call_tool("get_job", {"job_id": "job_0123456789"})
        assert json.loads(unknown.content[0].text)["error"] == "bad-request"
        prompt = await client.get_prompt("brief", {"urls": "GJLlxj_dtq8"})
        assert "get_outline" in prompt.messages[0].content.text
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "vid2context://video/youtube%3AGJLlxj_dtq8" in listed
        read = await client.read_resource("vid2context://video/youtube%3AGJLlxj_dtq8")
        assert json.loads(read.contents[0].text)["metadata"]["durationSec"] == 316


@pytest.mark.anyio
async def test_over_http_a_track_choice_is_the_list_and_completions_answer(server: str) -> None:
    """Stateless HTTP cannot ask the user back in the middle of a call: the tracks come as a list."""
    async with _client(server, mode="legacy") as client:
        result = await client.call_tool("choose_caption_track", {"url": "GJLlxj_dtq8"})
        body = json.loads(result.content[0].text)
        assert body["asked"] is False and "get_transcript" in body["next"]
        assert {"en", "de"} <= {track["language"] for track in body["tracks"]}
        await client.call_tool("get_outline", {"url": "GJLlxj_dtq8"})  # read, so saved
        template = ResourceTemplateReference(type="ref/resource", uri="vid2context://video/{id}")
        offered = await client.complete(template, {"name": "id", "value": "youtube:GJ"})
        assert offered.completion.values == ["youtube:GJLlxj_dtq8"]


@pytest.mark.anyio
async def test_a_job_id_belongs_to_its_token(server: str) -> None:
    """Another token cannot read a job (nor learn that it exists)."""
    async with _client(server, TOKENS[1]) as other:
        result = await other.call_tool("get_job", {"job_id": "job_" + "x" * 16})
    assert json.loads(result.content[0].text)["error"] == "bad-request"


# --- what the mount answers itself ---------------------------------------------------------------


def _post(origin: str, *, token: str | None = TOKENS[0], **headers: str) -> httpx.Response:
    sent = dict(MCP_HEADERS)
    if token:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers)
    return httpx.post(origin + "/mcp", json=INIT, headers=sent, timeout=30)


def _is_error_body(response: httpx.Response, code: str) -> None:
    body = response.json()
    assert body["error"]["code"] == code and body["error"]["message"] and body["error"]["hint"]
    assert body["attempts"] == []


def test_a_valid_token_reaches_the_sdk(server: str) -> None:
    response = _post(server)
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "vid2context"


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_missing_or_wrong_token_is_401(server: str, token: str | None) -> None:
    response = _post(server, token=token)
    assert response.status_code == 401
    metadata = server + "/.well-known/oauth-protected-resource/mcp"  # OAuth is on by default
    assert response.headers.get_list("www-authenticate") == [
        f'Bearer resource_metadata="{metadata}", scope="mcp"'
    ]
    _is_error_body(response, "unauthorized")


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_are_405(server: str, method: str) -> None:
    response = httpx.request(
        method, server + "/mcp", headers={"Authorization": f"Bearer {TOKENS[0]}"}, timeout=10
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, OPTIONS"
    _is_error_body(response, "bad-request")


def test_an_origin_not_allowed_is_403_and_an_allowed_one_gets_cors(server: str) -> None:
    refused = _post(server, Origin="https://evil.example")
    assert refused.status_code == 403
    _is_error_body(refused, "forbidden")
    allowed = _post(server, Origin=ALLOWED_ORIGIN)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert _post(server, Origin=server).status_code == 200  # the server's own origin
    preflight = httpx.options(
        server + "/mcp",
        headers={
            "Origin": ALLOWED_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        },
    )
    assert preflight.status_code == 204
    assert "mcp-protocol-version" in preflight.headers["access-control-allow-headers"]


@pytest.mark.parametrize("server", ["local"], indirect=True)
def test_a_host_not_loopback_or_allowed_is_403(server: str) -> None:
    """Against DNS rebinding, on a server bound to loopback; a Worker is bound to no address."""
    port = server.rsplit(":", 1)[1]
    refused = _post(server, Host=f"evil.example:{port}")
    assert refused.status_code == 403
    _is_error_body(refused, "forbidden")
    assert _post(server, Host=ALLOWED_HOST).status_code == 200
    assert _post(server, Host=f"localhost:{port}").status_code == 200


@pytest.mark.parametrize("server", ["worker"], indirect=True)
def test_on_the_worker_every_host_is_served(server: str) -> None:
    """The Worker's scope has no server address, so the loopback Host rule never applies there."""
    assert _post(server, Host="vid2context.example.workers.dev").status_code == 200


def test_the_rate_limit_is_per_token_and_answers_429(server: str) -> None:
    statuses = [_post(server, token=TOKENS[2]).status_code for _ in range(RATE)]
    assert statuses == [200] * RATE  # the whole burst is served
    # The bucket refills at RATE per minute while we post, so on a slow machine a request or two
    # past the burst may still get a fresh token; the limit must bite well before another burst.
    for _ in range(RATE):
        limited = _post(server, token=TOKENS[2])
        if limited.status_code != 200:
            break
    assert limited.status_code == 429
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    _is_error_body(limited, "rate-limited")
    assert _post(server, token=TOKENS[1]).status_code == 200  # another token has its own bucket


def test_discovery_is_public(server: str) -> None:
    card = httpx.get(server + "/mcp/server-card", headers={"Accept": "application/mcp-server-card+json"})
    assert card.status_code == 200
    assert card.headers["content-type"] == "application/mcp-server-card+json"
    assert card.headers["access-control-allow-origin"] == "*"
    body = card.json()
    assert body["$schema"].endswith("/v2/server-card.schema.json")
    assert body["name"] == "io.github.vid2context/vid2context" and len(body["description"]) <= 100
    (remote,) = body["remotes"]
    assert remote["url"] == server + "/mcp" and remote["type"] == "streamable-http"
    assert {"2025-11-25", "2026-07-28"} <= set(remote["supportedProtocolVersions"])
    assert remote["headers"][0]["name"] == "Authorization" and remote["headers"][0]["isSecret"] is True
    # OAuth is on by default: the card says a client may sign in for its token, and where to start.
    assert server + "/.well-known/oauth-protected-resource/mcp" in remote["headers"][0]["description"]
    catalog = httpx.get(server + "/.well-known/ai-catalog.json")
    assert catalog.status_code == 200
    (entry,) = catalog.json()["entries"]
    assert entry["url"] == server + "/mcp/server-card" and entry["type"] == "application/mcp-server-card+json"
    assert httpx.get(server + "/.well-known/mcp/catalog.json").json() == catalog.json()


def test_other_paths_under_mcp_are_404(server: str) -> None:
    response = httpx.post(server + "/mcp/other", headers={"Authorization": f"Bearer {TOKENS[0]}"})
    assert response.status_code == 404
    _is_error_body(response, "not-found")


# --- the import rule for the SDK ---------------------------------------------------------------


def test_mcp_is_imported_lazily_outside_its_package() -> None:
    """Outside ``mcp/`` the SDK (which draws random numbers at import) is never imported at module top."""
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("mcp/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else [f".{node.module or ''}"]
                if node.level and (node.module or "").split(".")[0] == "mcp":
                    names = ["mcp"]
            assert not any(name.split(".")[0] in ("mcp", "mcp_types") for name in names), (
                f"{relative} imports mcp"
            )


def test_the_protocol_versions_the_card_names_are_the_sdks() -> None:
    """``mcp/identity.py`` names them without importing the SDK; they must not drift from it."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from vid2context.mcp.identity import PROTOCOL_VERSIONS

    assert PROTOCOL_VERSIONS == [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]


def test_the_rest_api_never_loads_the_mcp_sdk() -> None:
    """Building the app and serving REST and discovery requests leaves the SDK unimported: on the
    Worker, a cold isolate's first REST request does not pay for it."""

    code = (
        "import asyncio, sys, httpx\n"
        "from vid2context.api import create_app\n"
        "from vid2context.runtime import build_runtime\n"
        "from vid2context.settings import load_settings\n"
        "async def main():\n"
        "    app = create_app(build_runtime(load_settings({}), http=httpx.AsyncClient()))\n"
        "    async with app.lifespan():\n"
        "        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://t') as c:\n"
        "            for path in ('/api/v1/health', '/mcp/server-card', '/.well-known/ai-catalog.json'):\n"
        "                assert (await c.get(path)).status_code == 200, path\n"
        "            assert (await c.get('/mcp')).status_code == 405\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "    print(loaded)\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
