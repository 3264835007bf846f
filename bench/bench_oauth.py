"""What checking an OAuth access token costs each ``/mcp`` request, locally and on the edge's KV.

The check is ``McpHttp._identify``: the static tokens compared in constant time (a miss, as for
every OAuth token), the token hashed, its grant read from the store, its expiry and audience
checked. Measured on:

- ``sqlite``: the local store (``SqlOAuthStore`` on a real SQLite file, a read on the reader
  pool) holding ``BENCH_OAUTH_N`` live grants (default 10,000 access tokens and their refresh
  tokens); the target is under 1 ms a request;
- ``memory``: the same check on the memory store, the floor of the code around the read;
- ``miniflare_kv``: ``EdgeOAuthStore`` on Miniflare's KV (``tests/miniflare``), 300 tokens. Every
  binding call there crosses HTTP to the harness on 127.0.0.1, which a deployed Worker does not
  pay; ``kv_round_trip`` (a KV read of a missing key) is that floor, to subtract.

Figures are p50/p99 ms over 2,000 checks of random live tokens (and 500 of unknown ones).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from vid2context.auth.server import OAuthServer
from vid2context.auth.store import Grant, MemoryOAuthStore
from vid2context.auth.store_sql import EdgeOAuthStore, SqlOAuthStore
from vid2context.mcp.http import McpHttp
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings
from vid2context.storage.cloudflare import CloudflareKv, D1Sql
from vid2context.storage.memory import MemoryKv
from vid2context.storage.sqlite import SQLiteKv, SQLiteSql, SQLiteStorage

from .bench_storage import timed

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.miniflare_harness import apply_migrations, start_harness  # noqa: E402

ORIGIN = "https://v2c.example"
CHECKS = 2000


async def _issue(server: OAuthServer, n: int) -> list[str]:
    tokens = []
    for i in range(n):
        grant = Grant(
            kind="code",
            client_id=f"v2c-bench{i % 50}",
            family=f"f{i}",
            expires_at=0.0,
            resource=ORIGIN + "/mcp",
        )
        tokens.append((await server._issue(grant, refresh=True))["access_token"])
    return tokens


def _scope(token: str) -> dict[str, Any]:
    headers = [(b"host", b"v2c.example"), (b"authorization", f"Bearer {token}".encode())]
    return {"type": "http", "scheme": "https", "headers": headers, "path": "/mcp", "method": "POST"}


async def _measure(store: Any, n: int) -> dict[str, object]:
    server = OAuthServer(store, public_origin=ORIGIN)
    runtime = build_runtime(load_settings({"VID2CONTEXT_MCP_TOKENS": "static-one,static-two"}))
    mount = McpHttp(runtime, oauth=server)
    try:
        tokens = await _issue(server, n)
        assert await mount._identify(_scope(tokens[0])), "a live token must be accepted"
        live = [_scope(random.choice(tokens)) for _ in range(CHECKS)]
        unknown = [_scope("v2c_at_unknown" + str(i)) for i in range(500)]
        return {
            "tokens_stored": n,
            "live_token": await timed([lambda s=s: mount._identify(s) for s in live], CHECKS),
            "unknown_token": await timed([lambda s=s: mount._identify(s) for s in unknown], 500),
        }
    finally:
        await runtime.aclose()


async def _local(directory: Path, n: int) -> dict[str, object]:
    storage = SQLiteStorage(directory / "bench.db")
    try:
        return await _measure(SqlOAuthStore(SQLiteSql(storage.database), SQLiteKv(storage.database)), n)
    finally:
        await storage.close()


async def _edge(directory: Path) -> dict[str, object]:
    harness = start_harness(persist=directory)
    env = harness.new_env(keepalive=True)
    try:
        await apply_migrations(env.DB)
        kv = CloudflareKv(env.KV)
        round_trip = await timed([lambda: kv.get("oauth:access:missing")], 300)
        figures = await _measure(EdgeOAuthStore(D1Sql(env.DB), kv), 300)
    finally:
        await env.aclose()
        harness.stop()
    return {**figures, "kv_round_trip": round_trip, "miniflare": "4.20260426.0"}


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_OAUTH_N", "10000"))
    random.seed(16)
    with tempfile.TemporaryDirectory(prefix="vid2context-bench-oauth-") as directory:
        root = Path(directory)
        (root / "edge").mkdir()
        return {
            "sqlite": asyncio.run(_local(root, n)),
            "memory": asyncio.run(_measure(MemoryOAuthStore(MemoryKv()), n)),
            "miniflare_kv": asyncio.run(_edge(root / "edge")),
        }
