"""``initialize`` and the lists without the SDK (``mcp/lean.py``): the same bytes as the SDK's answer, or none.

Every request below goes to the SDK's own Streamable HTTP app (built as ``McpHttp`` builds it,
running under its lifespan) and to ``lean_answer``; wherever the lean path answers, status,
headers and body must be the SDK's, byte for byte, so the two cannot drift (a new capability, a
changed instruction, another protocol version). The common requests must be answered lean, so
the comparison is never vacuous; the others (a 2026 header, a wildcard ``Accept``, ``_meta``,
params the SDK refuses) must be left to the SDK. ``tools/list`` and ``prompts/list`` are compared
the same way for every handshake version, with a cursor (the SDK does not page them), unknown
params and ids of each kind, on the memory runtime and the Worker's; ``listed.py`` must be a
fresh build (``scripts/build_listed.py``), and another page size must leave the lists to the SDK.
Then, through the whole app in a fresh process: ``initialize``, ``notifications/initialized``,
``tools/list`` and ``prompts/list`` leave the SDK unimported, a tool call loads it, and session
mode sends the lists to the SDK.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from vid2context.api import create_app
from vid2context.mcp.http import McpHttp
from vid2context.mcp.lean import lean_answer
from vid2context.runtime import Runtime, build_runtime
from vid2context.settings import load_settings

from .runtimes import ON_WORKER_TOO, Runtimes

JSON = (b"content-type", b"application/json")
ACCEPT = (b"accept", b"application/json, text/event-stream")


def _initialize(version: str = "2025-11-25", request_id: Any = 1, **params: Any) -> bytes:
    body = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "lean-test", "version": "1"},
        **params,
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": body}).encode()


INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


def _list(method: str = "tools/list", request_id: Any = 2, params: Any = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return json.dumps(message if params is None else {**message, "params": params}).encode()


def _version(version: str) -> tuple[bytes, bytes]:
    return (b"mcp-protocol-version", version.encode())


LISTS = ("tools/list", "prompts/list")
# (headers, body): the lists the lean path must answer, as the SDK does.
LISTED = [
    *(
        ([JSON, ACCEPT, _version(version)], _list(method))
        for version in HANDSHAKE_PROTOCOL_VERSIONS
        for method in LISTS
    ),
    *(([JSON, ACCEPT], _list(method)) for method in LISTS),  # no header: the default negotiated version
    ([JSON, ACCEPT, _version("2025-11-25")], _list(params={"cursor": "abc"})),
    ([JSON, ACCEPT, _version("2025-11-25")], _list("prompts/list", params={"cursor": ""})),
    ([JSON, ACCEPT, _version("2025-06-18")], _list(params={"unknown": [1, 2], "cursor": None})),
    ([JSON, ACCEPT, _version("2025-11-25")], _list(params={})),
    ([JSON, (b"accept", b"application/json")], _list(request_id="list-1")),
    ([JSON, ACCEPT], _list(request_id=0)),
    ([JSON, ACCEPT], _list("prompts/list", request_id=-(2**40))),
]
# Lists the lean path must leave to the SDK.
LISTS_LEFT = [
    ([JSON, ACCEPT, _version("2026-07-28")], _list()),  # the 2026 entry, its _meta envelope
    ([JSON, ACCEPT, _version("2025-11-25")], _list(params={"_meta": {"progressToken": 1}})),
    ([JSON, ACCEPT, _version("2025-11-25")], _list(params={"cursor": 7})),  # the SDK refuses it
    ([JSON, ACCEPT, _version("2025-11-25")], _list(params=[1])),
    ([JSON, (b"accept", b"*/*")], _list()),
    ([(b"content-type", b"text/plain"), ACCEPT], _list()),
    ([JSON, ACCEPT], _list("resources/list")),  # read from the library
    ([JSON, ACCEPT], _list("resources/templates/list")),
    ([JSON, ACCEPT], _list("tools/lists")),
    ([JSON, ACCEPT], json.dumps([json.loads(_list())]).encode()),
    ([JSON, ACCEPT], json.dumps({"jsonrpc": "2.0", "method": "tools/list"}).encode()),  # a notification
    ([JSON, ACCEPT], b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"'),
]

# (headers, body): what the lean path must answer, as the SDK does.
ANSWERED = [
    *(([JSON, ACCEPT], _initialize(version)) for version in HANDSHAKE_PROTOCOL_VERSIONS),
    ([JSON, ACCEPT], _initialize("2026-07-28")),  # the latest handshake version is negotiated
    ([JSON, ACCEPT], _initialize("1999-01-01", request_id="req-7")),
    ([JSON, (b"accept", b"application/json")], _initialize(request_id=0)),
    ([(b"content-type", b"application/json; charset=utf-8"), ACCEPT], _initialize()),
    ([JSON, ACCEPT, (b"mcp-protocol-version", b"2025-06-18")], _initialize()),
    (
        [JSON, ACCEPT],
        _initialize(capabilities={"sampling": {}, "roots": {"listChanged": True}, "elicitation": {}}),
    ),
    ([JSON, ACCEPT], _initialize(clientInfo={"name": "x", "version": "2", "title": "X"})),
    ([JSON, ACCEPT], INITIALIZED),
    ([JSON, ACCEPT, (b"mcp-protocol-version", b"2025-11-25")], INITIALIZED),
]
# What the lean path must leave to the SDK.
LEFT = [
    ([JSON, ACCEPT, (b"mcp-protocol-version", b"2026-07-28")], _initialize()),
    ([JSON, ACCEPT, (b"mcp-protocol-version", b"2099-01-01")], _initialize()),
    ([JSON, (b"accept", b"*/*")], _initialize()),
    ([JSON], _initialize()),
    ([(b"content-type", b"text/plain"), ACCEPT], _initialize()),
    ([(b"content-type", b" application/json"), ACCEPT], _initialize()),  # the SDK refuses it (400)
    ([JSON, ACCEPT], _initialize(_meta={"progressToken": 1})),
    ([JSON, ACCEPT], json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()),
    ([JSON, ACCEPT], json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize"}).encode()),
    ([JSON, ACCEPT], _initialize(capabilities="none")),
    ([JSON, ACCEPT], b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", '),
    ([JSON, ACCEPT], json.dumps([json.loads(_initialize())]).encode()),
    ([JSON, ACCEPT], json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled"}).encode()),
]


async def _call(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, list, bytes]:
    """One POST straight to an ASGI app: its status, raw headers and body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8787),
    }
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], [tuple(h) for h in start["headers"]], content


@asynccontextmanager
async def _sdk(runtime: Runtime) -> AsyncIterator[Any]:
    app = McpHttp(runtime)._build()  # the SDK app exactly as the /mcp mount builds it
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def sdk_app() -> AsyncIterator[Any]:
    runtime = build_runtime(load_settings({}), http=httpx.AsyncClient())
    async with _sdk(runtime) as app:
        yield app
    await runtime.http.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize(("headers", "body"), ANSWERED)
async def test_the_lean_answer_is_the_sdks(sdk_app: Any, headers: list, body: bytes) -> None:
    lean = lean_answer(headers, body)
    assert lean is not None, "this request should be answered without the SDK"
    assert lean == await _call(sdk_app, headers, body)


@pytest.mark.parametrize(("headers", "body"), LEFT)
def test_everything_else_is_left_to_the_sdk(headers: list, body: bytes) -> None:
    assert lean_answer(headers, body) is None


@pytest.mark.anyio
@ON_WORKER_TOO
async def test_the_lean_lists_are_the_sdks(runtimes: Runtimes) -> None:
    """Every list request the lean path answers, on the memory runtime and the Worker's."""
    runtime = await runtimes.build()
    assert McpHttp(runtime).listed is True
    async with _sdk(runtime) as app:
        for headers, body in LISTED:
            lean = lean_answer(headers, body)
            assert lean is not None, f"{body!r} should be answered without the SDK"
            assert lean == await _call(app, headers, body), body


@pytest.mark.parametrize(("headers", "body"), LISTS_LEFT)
def test_other_lists_are_left_to_the_sdk(headers: list, body: bytes) -> None:
    assert lean_answer(headers, body) is None


@pytest.mark.anyio
async def test_another_page_size_leaves_the_lists_to_the_sdk() -> None:
    """The paging tools describe the server's page size, so ``listed.py`` (built with the default)
    is not this server's list: the SDK's answer differs, and the lean path stays out of it."""
    runtime = build_runtime(load_settings({"VID2CONTEXT_MCP_MAX_TOKENS": "500"}))
    glue = McpHttp(runtime)
    assert glue.listed is False
    headers = [JSON, ACCEPT]
    assert lean_answer(headers, _list(), listed=False) is None
    assert lean_answer(headers, _initialize(), listed=False) is not None  # initialize does not list
    async with _sdk(runtime) as app:
        status, _, body = await _call(app, headers, _list())
    assert status == 200
    assert body != (lean_answer(headers, _list()) or (0, [], b""))[2]
    assert b"500 tokens" in body


def test_listed_is_a_fresh_build() -> None:
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("build_listed", root / "scripts" / "build_listed.py")
    assert spec is not None and spec.loader is not None
    build_listed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_listed)
    text = (root / "src" / "vid2context" / "mcp" / "listed.py").read_text(encoding="utf-8")
    assert text == build_listed.build(), "run make site (scripts/build_listed.py)"


@pytest.mark.anyio
async def test_in_session_mode_the_lists_go_to_the_sdk() -> None:
    """A session's requests stream from the SDK (``text/event-stream``), lists included; the
    lean path answers JSON, so the content type says who answered."""
    runtime = build_runtime(load_settings({"VID2CONTEXT_MCP_SESSIONS": "1"}), http=httpx.AsyncClient())
    app = create_app(runtime)
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    async with app.lifespan():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            opened = await client.post("/mcp", content=_initialize(), headers={**headers, **dict([JSON])})
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            await client.post(
                "/mcp",
                content=INITIALIZED,
                headers={**headers, **session, "content-type": "application/json"},
            )
            for method in LISTS:
                listed = await client.post(
                    "/mcp",
                    content=_list(method),
                    headers={**headers, **session, "content-type": "application/json"},
                )
                assert listed.status_code == 200
                assert listed.headers["content-type"].startswith("text/event-stream"), method
    await runtime.http.aclose()


def test_an_unknown_version_gets_the_latest_handshake_version() -> None:
    status, _, body = lean_answer([JSON, ACCEPT], _initialize("1999-01-01")) or (0, [], b"")
    assert status == 200
    assert json.loads(body)["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION


def test_the_handshake_and_lists_through_the_app_leave_the_sdk_unimported() -> None:
    """In a fresh process, through the whole app (checks, CORS, the mount): ``initialize``,
    ``notifications/initialized``, ``tools/list`` and ``prompts/list`` are answered and the SDK
    stays out; a tool call loads it, and lists the same tools; an ``initialize`` left to the SDK
    gets it the whole body, and the same bytes back."""
    code = (
        "import asyncio, json, sys, httpx\n"
        "from vid2context.api import create_app\n"
        "from vid2context.runtime import build_runtime\n"
        "from vid2context.settings import load_settings\n"
        "HEADERS = {'accept': 'application/json, text/event-stream', 'origin': 'http://t'}\n"
        "def post(c, message, version=None):\n"
        "    headers = {**HEADERS, **({'mcp-protocol-version': version} if version else {})}\n"
        "    return c.post('/mcp', json=message, headers=headers)\n"
        "async def main():\n"
        "    app = create_app(build_runtime(load_settings({}), http=httpx.AsyncClient()))\n"
        "    out = {}\n"
        "    async with app.lifespan():\n"
        "        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://t') as c:\n"
        f"            r = await post(c, {json.loads(_initialize())!r})\n"
        "            out['initialize'] = [r.status_code, r.json()['result']['protocolVersion'],\n"
        "                                 r.headers.get('access-control-allow-origin')]\n"
        "            lean = r.content\n"
        f"            r = await post(c, {json.loads(INITIALIZED)!r}, '2025-11-25')\n"
        "            out['initialized'] = r.status_code\n"
        "            out['sdk_after_handshake'] = 'mcp' in sys.modules\n"
        "            r = await post(c, {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}, '2025-11-25')\n"
        "            out['tools'] = [r.status_code, len(r.json()['result']['tools'])]\n"
        "            lean_tools = r.content\n"
        "            r = await post(c, {'jsonrpc': '2.0', 'id': 3, 'method': 'prompts/list'}, '2025-11-25')\n"
        "            out['prompts'] = [r.status_code, len(r.json()['result']['prompts'])]\n"
        "            out['sdk_after_lists'] = 'mcp' in sys.modules\n"
        "            call = {'name': 'list_collections', 'arguments': {}}\n"
        "            r = await post(c, {'jsonrpc': '2.0', 'id': 4, 'method': 'tools/call', 'params': call}, '2025-11-25')\n"
        "            out['call'] = [r.status_code, r.json()['result'].get('isError', False)]\n"
        "            out['sdk_after_call'] = 'mcp' in sys.modules\n"
        "            HEADERS['accept'] = '*/*'  # left to the SDK, now loaded\n"
        "            r = await post(c, {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}, '2025-11-25')\n"
        "            out['sdk_tools_are_lean'] = [r.status_code, r.content == lean_tools]\n"
        f"            r = await post(c, {json.loads(_initialize())!r})\n"
        "            out['sdk_initialize_is_lean'] = [r.status_code, r.content == lean]\n"
        "    print(json.dumps(out))\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["initialize"] == [200, "2025-11-25", "http://t"]
    assert out["initialized"] == 202
    assert out["sdk_after_handshake"] is False
    assert out["tools"][0] == 200 and out["tools"][1] > 10
    assert out["prompts"][0] == 200 and out["prompts"][1] > 0
    assert out["sdk_after_lists"] is False
    assert out["call"] == [200, False]
    assert out["sdk_after_call"] is True
    assert out["sdk_tools_are_lean"] == [200, True]
    assert out["sdk_initialize_is_lean"] == [200, True]
