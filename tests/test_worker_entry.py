"""``worker/entry.py``, the Python Worker's shim, driven as the runtime drives it.

The Python Workers runtime cannot run offline, so the entry is imported under CPython with a
stand-in for the runtime's ``workers`` module (tests/workers_standin: ``WorkerEntrypoint``,
``Request``, ``wait_until`` and ``asgi.fetch`` running the lifespan around every request, as the
real adapter does), real D1, KV and R2 from Miniflare, the ``ASSETS`` binding over the real
``site/`` folder, and YouTube replayed from the recorded responses. Loading the entry twice gives
two isolates: what one writes, the other must see (nothing that must be shared lives in an
isolate's memory).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .cloudflare_bindings import CloudflareEnv
from .miniflare_harness import apply_migrations
from .youtube_replay import ReplayServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "worker" / "entry.py"
STANDIN = ROOT / "tests" / "workers_standin"
SITE = ROOT / "site"
ORIGIN = "https://vid2context.example.workers.dev"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

sys.path.insert(0, str(STANDIN))
import workers  # noqa: E402
from assets_binding import AssetsBinding  # noqa: E402

sys.path.remove(str(STANDIN))


class WorkerEnv:
    """The Worker's ``env``: bindings as wrangler.toml names them, vars and secrets as strings."""

    def __init__(self, bindings: CloudflareEnv, **variables: str) -> None:
        self.DB = bindings.DB
        self.KV = bindings.KV
        self.BUCKET = bindings.BUCKET
        self.ASSETS = AssetsBinding(SITE)
        for name, value in variables.items():
            setattr(self, name, value)


def new_isolate() -> ModuleType:
    """A fresh copy of the entry module: its own per-isolate app, as a new isolate would have."""
    spec = importlib.util.spec_from_file_location(f"worker_entry_{uuid.uuid4().hex}", ENTRY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Isolate:
    def __init__(self, env: WorkerEnv) -> None:
        self.module = new_isolate()
        self.env = env

    async def fetch(
        self,
        path: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> workers.Response:
        request = workers.Request(
            f"{ORIGIN}{path}", method=method, headers=list((headers or {}).items()), body=body
        )
        worker = self.module.Default(ctx=object(), env=self.env)
        return await worker.fetch(request)

    async def aclose(self) -> None:
        api = self.module._api
        if api is not None:
            await api.state.runtime.aclose()


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.fixture
async def env(cloudflare_env: CloudflareEnv, replay: ReplayServer) -> WorkerEnv:
    await apply_migrations(cloudflare_env.DB)
    workers.pending.clear()
    return WorkerEnv(cloudflare_env, VID2CONTEXT_PUBLIC="1", VID2CONTEXT_YOUTUBE_ORIGIN=replay.origin)


@pytest.fixture
async def isolate(env: WorkerEnv) -> AsyncIterator[Isolate]:
    worker = Isolate(env)
    yield worker
    await worker.aclose()


async def test_the_api_answers_from_the_worker_runtime(isolate: Isolate) -> None:
    response = await isolate.fetch("/api/v1/health")
    assert response.status == 200
    health = json.loads(response.body)
    assert health["runtime"] == "worker"
    assert health["storage"] != "memory"
    assert isolate.env.ASSETS.requests == []  # the site was not consulted


async def test_the_runtime_is_built_once_per_isolate_and_survives_each_lifespan(isolate: Isolate) -> None:
    first = await isolate.fetch("/api/v1/library")
    app = isolate.module._api
    second = await isolate.fetch("/api/v1/library")
    assert (first.status, second.status) == (200, 200)
    assert isolate.module._api is app  # not rebuilt by the second request
    assert app.state.runtime.keep_alive is workers.wait_until


async def test_a_transcript_fetched_by_one_isolate_is_read_from_d1_by_another(
    env: WorkerEnv, replay: ReplayServer
) -> None:
    one, two = Isolate(env), Isolate(env)
    try:
        fetched = await one.fetch("/api/v1/transcript?url=GJLlxj_dtq8&format=text")
        assert fetched.status == 200, fetched.text()
        assert fetched.text().strip()
        upstream = len(replay.requests)
        cached = await two.fetch("/api/v1/transcript?url=GJLlxj_dtq8&format=text")
        assert cached.status == 200
        assert cached.body == fetched.body
        assert len(replay.requests) == upstream  # the second isolate did not go to YouTube
        library = json.loads((await two.fetch("/api/v1/library")).body)
        assert [item["id"] for item in library["items"]] == ["youtube:GJLlxj_dtq8"]
    finally:
        await one.aclose()
        await two.aclose()


async def test_the_rate_limit_is_shared_by_isolates_through_kv(env: WorkerEnv) -> None:
    env.VID2CONTEXT_RATE_LIMIT = "60"
    env.VID2CONTEXT_RATE_BURST = "2"
    one, two = Isolate(env), Isolate(env)
    try:
        headers = {"x-forwarded-for": "203.0.113.9", "cf-connecting-ip": "203.0.113.9"}
        statuses = [
            (await one.fetch("/api/v1/formats", headers=headers)).status,
            (await two.fetch("/api/v1/formats", headers=headers)).status,
            (await one.fetch("/api/v1/formats", headers=headers)).status,
            (await two.fetch("/api/v1/formats", headers=headers)).status,
        ]
    finally:
        await one.aclose()
        await two.aclose()
    assert statuses[:2] == [200, 200]
    assert 429 in statuses[2:]


async def test_an_upload_lands_in_r2_and_is_visible_to_another_isolate(
    env: WorkerEnv, fixtures: Path
) -> None:
    audio = (fixtures / "media" / "talk.mp3").read_bytes()
    one, two = Isolate(env), Isolate(env)
    try:
        boundary = uuid.uuid4().hex
        form = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="talk.mp3"\r\n'
                "Content-Type: audio/mpeg\r\n\r\n"
            ).encode()
            + audio
            + f"\r\n--{boundary}--\r\n".encode()
        )
        response = await one.fetch(
            "/api/v1/uploads",
            method="POST",
            body=form,
            headers={
                "content-type": f"multipart/form-data; boundary={boundary}",
                "content-length": str(len(form)),
            },
        )
        assert response.status in (200, 201), response.text()
        upload = json.loads(response.body)
        listed = await env.BUCKET.list()
        assert listed.objects, "the upload is not in R2"
        # the other isolate resolves the same upload id (its details live in KV, its bytes in R2)
        metadata = await two.fetch(f"/api/v1/metadata?url={upload['input']}")
        assert metadata.status == 200, metadata.text()
    finally:
        await one.aclose()
        await two.aclose()


async def test_mcp_is_served_at_mcp_statelessly(isolate: Isolate) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "entry-test", "version": "1"},
        },
    }
    response = await isolate.fetch(
        "/mcp", method="POST", headers=MCP_HEADERS, body=json.dumps(initialize).encode()
    )
    assert response.status == 200, response.text()
    assert json.loads(response.body)["result"]["serverInfo"]["name"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    tools = await isolate.fetch(
        "/mcp",
        method="POST",
        body=json.dumps(listing).encode(),
        headers={**MCP_HEADERS, "mcp-protocol-version": "2025-11-25"},
    )
    assert tools.status == 200, tools.text()
    names = {tool["name"] for tool in json.loads(tools.body)["result"]["tools"]}
    assert {"get_transcript", "get_outline", "export_context_pack"} <= names
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "export_obsidian", "arguments": {"urls": ["GJLlxj_dtq8"], "vaultPath": "/tmp/v"}},
    }
    refused = await isolate.fetch(
        "/mcp",
        method="POST",
        body=json.dumps(call).encode(),
        headers={**MCP_HEADERS, "mcp-protocol-version": "2025-11-25"},
    )
    assert json.loads(refused.body)["result"]["isError"] is True  # the server's disk is not the caller's
    assert (await isolate.fetch("/mcp")).status == 405


@pytest.mark.parametrize("path", ["/mcp/server-card", "/.well-known/ai-catalog.json"])
async def test_discovery_documents_come_from_the_app(isolate: Isolate, path: str) -> None:
    response = await isolate.fetch(path)
    assert response.status == 200
    assert json.loads(response.body)
    assert isolate.env.ASSETS.requests == []


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/app", "text/html"), ("/app/app.js", "text/javascript"), ("/app/transcript.js", "text/javascript")],
)
async def test_the_web_app_comes_from_the_app_not_assets(isolate: Isolate, path: str, kind: str) -> None:
    response = await isolate.fetch(path)
    assert response.status == 200 and (response.header("content-type") or "").startswith(kind)
    assert isolate.env.ASSETS.requests == []  # ui/ is in the bundle: /app needs no asset


@pytest.mark.parametrize(
    ("path", "accept", "twin"),
    [
        ("/", "text/markdown", "index.md"),
        ("/", "text/html", "index.html"),
        ("/", None, "index.html"),
        ("/quick-start", "text/markdown", "quick-start.md"),
        ("/quick-start", "text/markdown;q=0.5, text/html;q=0.9", "quick-start.html"),
        ("/deploy-cloudflare", "text/markdown", "deploy-cloudflare.md"),
        ("/llms.txt", None, "llms.txt"),
    ],
)
async def test_the_site_comes_from_assets_negotiated_by_accept(
    isolate: Isolate, path: str, accept: str | None, twin: str
) -> None:
    response = await isolate.fetch(path, headers={"accept": accept} if accept else None)
    assert response.status == 200
    assert response.body == (SITE / twin).read_bytes()
    assert response.header("vary") == "Accept"
    if twin.endswith(".html"):
        assert 'rel="service-desc"' in (response.header("link") or "")
    assert isolate.module._api is None  # the site never builds the API app
    assert len(isolate.env.ASSETS.requests) == 1  # the page's file was the first one read


async def test_a_missing_page_is_the_sites_404(isolate: Isolate) -> None:
    response = await isolate.fetch("/no-such-page", headers={"accept": "text/markdown"})
    assert response.status == 404
    assert response.body == (SITE / "404.md").read_bytes()


async def test_build_inputs_are_not_served(isolate: Isolate) -> None:
    sources = sorted(p for p in SITE.glob("_*/**/*") if p.is_file())
    for source in sources[:3]:
        relative = "/" + source.relative_to(SITE).as_posix()
        response = await isolate.fetch(relative)
        assert response.status == 404, relative


async def test_an_encoded_api_path_still_reaches_the_api(isolate: Isolate) -> None:
    response = await isolate.fetch("/%61pi/v1/health")
    assert response.status == 200
    assert json.loads(response.body)["runtime"] == "worker"


async def test_the_app_sees_the_request_as_sent(isolate: Isolate) -> None:
    """Query string, headers and a JSON body pass through the adapter unchanged."""
    body = json.dumps({"name": "Talks", "description": "from the worker"}).encode()
    created = await isolate.fetch(
        "/api/v1/collections", method="POST", body=body, headers={"content-type": "application/json"}
    )
    assert created.status == 201, created.text()
    collection: dict[str, Any] = json.loads(created.body)
    listed = json.loads((await isolate.fetch("/api/v1/collections?limit=5")).body)
    assert collection["id"] in json.dumps(listed)
