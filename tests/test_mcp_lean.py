"""``initialize`` without the SDK (``mcp/lean.py``): the same bytes as the SDK's answer, or none.

Every request below goes to the SDK's own Streamable HTTP app (built as ``McpHttp`` builds it,
running under its lifespan) and to ``lean_answer``; wherever the lean path answers, status,
headers and body must be the SDK's, byte for byte, so the two cannot drift (a new capability, a
changed instruction, another protocol version). The common requests must be answered lean, so
the comparison is never vacuous; the others (a 2026 header, a wildcard ``Accept``, ``_meta``,
params the SDK refuses) must be left to the SDK. Then, through the whole app in a fresh
process: ``initialize`` and ``notifications/initialized`` leave the SDK unimported, and
``tools/list`` after them still works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from vid2context.mcp.http import McpHttp
from vid2context.mcp.lean import lean_answer
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

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
    ([JSON, ACCEPT], json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()),
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


@pytest.fixture
async def sdk_app() -> AsyncIterator[Any]:
    runtime = build_runtime(load_settings({}), http=httpx.AsyncClient())
    app = McpHttp(runtime)._build()  # the SDK app exactly as the /mcp mount builds it
    async with app.router.lifespan_context(app):
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


def test_an_unknown_version_gets_the_latest_handshake_version() -> None:
    status, _, body = lean_answer([JSON, ACCEPT], _initialize("1999-01-01")) or (0, [], b"")
    assert status == 200
    assert json.loads(body)["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION


def test_initialize_through_the_app_leaves_the_sdk_unimported() -> None:
    """In a fresh process, through the whole app (checks, CORS, the mount): ``initialize`` and
    ``notifications/initialized`` are answered and the SDK stays out; ``tools/list`` loads it;
    an ``initialize`` left to the SDK gets it the whole body, and the same bytes back."""
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
        "            out['sdk_after_tools'] = 'mcp' in sys.modules\n"
        "            HEADERS['accept'] = '*/*'  # left to the SDK, which reads the body read before\n"
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
    assert out["sdk_after_tools"] is True
    assert out["sdk_initialize_is_lean"] == [200, True]
