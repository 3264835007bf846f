"""Hosted mode: what it costs to know who a request is, per request.

The API's auth layer (``Auth.caller``) on an ``Authorization: Bearer v2c_...`` account key and on a
``v2c_session`` cookie, against a store of 1,000 accounts with two keys and one session each: a
digest lookup by primary or unique index. On SQLite (a temporary file, as ``vid2context serve``
has) and on D1 through Miniflare (the test harness; every call crosses HTTP to 127.0.0.1, so
``binding_round_trip``, a ``SELECT 1``, is the floor to subtract; a deployed Worker pays its own
hop to the database instead). The reference, measured in the same run, is a configured
``VID2CONTEXT_API_KEYS`` key (a hash and constant-time compares, no I/O).

``BENCH_HOSTED_N`` sets the number of accounts (default 1000).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vid2context.api.middleware.auth import Auth, parse_api_keys
from vid2context.auth.accounts import digest
from vid2context.runtime import build_runtime
from vid2context.settings import load_settings

from .bench_storage import timed

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # the harness lives in tests/, beside this package
    sys.path.insert(0, str(_ROOT))

from tests.miniflare_harness import apply_migrations, start_harness  # noqa: E402

REPEAT = 400


async def _hosted(sql: Any) -> tuple[Any, Any]:
    """A hosted-mode ``Hosted`` over ``sql`` (as ``create_app`` makes it), and its runtime."""
    from vid2context.auth.hosted import Hosted

    runtime = build_runtime(load_settings({"VID2CONTEXT_HOSTED": "1"}))
    runtime.sql = sql
    return Hosted(runtime), runtime


async def _fill(store: Any, n: int) -> tuple[str, str]:
    key = session = ""
    for i in range(n):
        account = await store.sign_in(10_000 + i, f"user{i}", now="2026-12-01T00:00:00Z")
        for k in range(2):
            key = f"v2c_bench-{i}-{k}-" + "x" * 24
            await store.add_key(
                account.id, f"key_{i}_{k}", "bench", digest(key), key[:8], now="2026-12-01T00:00:00Z"
            )
        session = f"session-{i}-" + "y" * 32
        await store.open_session(
            account.id, digest(session), expires_at=int(time.time()) + 86_400, now=int(time.time())
        )
    return key, session


def _scope(header: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http", "path": "/api/v1/library", "headers": [header]}


async def _measure(sql: Any, n: int) -> dict[str, object]:
    hosted, runtime = await _hosted(sql)
    key, session = await _fill(hosted.store, n)
    auth = Auth(lambda *a: None, keys=(), hosted=hosted)  # type: ignore[arg-type]
    by_key = _scope((b"authorization", b"Bearer " + key.encode()))
    by_session = _scope((b"cookie", b"v2c_session=" + session.encode()))
    unknown = _scope((b"authorization", b"Bearer v2c_not-a-key-" + b"z" * 24))
    assert (await auth.caller(by_key)) is not None and (await auth.caller(by_session)) is not None
    figures = {
        "account_key": await timed([lambda: auth.caller(by_key)], REPEAT),
        "session_cookie": await timed([lambda: auth.caller(by_session)], REPEAT),
        "unknown_key": await timed([lambda: auth.caller(unknown)], REPEAT),
    }
    await runtime.http.aclose()
    return figures


async def _reference() -> dict[str, float]:
    plain = "owner-" + "k" * 26
    auth = Auth(lambda *a: None, keys=parse_api_keys(plain))  # type: ignore[arg-type]
    scope = _scope((b"authorization", b"Bearer " + plain.encode()))
    return await timed([lambda: auth.caller(scope)], REPEAT)


async def _sqlite(directory: Path, n: int) -> dict[str, object]:
    from vid2context.storage.sqlite import SQLiteSql, open_local_stores

    stores = open_local_stores(directory / "home")
    try:
        return await _measure(SQLiteSql(stores.storage.database), n)
    finally:
        await stores.storage.close()


async def _d1(directory: Path, n: int) -> dict[str, object]:
    from vid2context.storage.cloudflare import D1Sql

    harness = start_harness(persist=directory / "d1")
    env = harness.new_env(keepalive=True)
    try:
        await apply_migrations(env.DB)
        figures = await _measure(D1Sql(env.DB), n)
        figures["binding_round_trip"] = await timed([lambda: env.DB.prepare("SELECT 1").all()], REPEAT)
        return figures
    finally:
        await env.aclose()
        harness.stop()


def run() -> dict[str, object]:
    n = int(os.environ.get("BENCH_HOSTED_N", "1000"))
    with tempfile.TemporaryDirectory(prefix="vid2context-bench-hosted-") as directory:
        root = Path(directory)
        return {
            "accounts": n,
            "static_key_reference": asyncio.run(_reference()),
            "sqlite": asyncio.run(_sqlite(root, n)),
            "d1_miniflare": asyncio.run(_d1(root, n)),
        }
