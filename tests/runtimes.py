"""Runtimes of every kind, so one contract suite runs against every platform the app runs on.

Kinds (``KINDS``):

- ``memory``: ``build_runtime`` as it is, the portable core with memory stores.
- ``sqlite``: ``build_runtime`` over the local stores (``open_local_stores``: the SQLite library and
  KV, blobs in files, the sqlite-vec index and the OAuth tables in the same file) under the test's
  ``tmp_path``.
- ``worker``: ``build_worker_runtime(env)``, ``env`` being Miniflare's real D1, KV and R2
  (``miniflare_harness.py``) with the settings as the Worker's vars, the D1 schema applied as
  ``wrangler d1 migrations apply`` does, a Vectorize stand-in as ``VECTORS`` (384 dimensions, with
  its ``videoId`` metadata index) and
  the ``AI`` binding when the test gives one.

Fixtures (registered in ``conftest.py``):

- ``runtime_kind``: ``memory`` unless the test parametrizes it indirectly, as ``ON_WORKER_TOO``
  and ``ON_EVERY_RUNTIME`` do, or as ``pytest_generate_tests = on_each_runtime_when("stored_api")``
  does for every test of a module that takes that fixture.
- ``runtimes``: ``await runtimes.build({"VID2CONTEXT_X": "1"})`` builds a runtime of that kind; every
  runtime built is closed after the test (a test never closes one itself; an app's lifespan may),
  then the bindings' connections. Miniflare is started (once per session) and emptied only for
  ``worker`` tests.

``serve(app)`` runs an app's ASGI lifespan and yields an httpx client over it, all in the test's
own event loop (Litestar's ``AsyncTestClient`` runs the app in a thread of its own, where the
Worker's per-loop bindings and the tasks a request starts would live in another loop).
``WorkerLikeApp(app)`` serves an app the way ``workers.asgi.fetch`` does, for a real HTTP server
to run it as the Worker would: the lifespan around every request, no addresses in the scope.

Every runtime makes its own ``httpx.AsyncClient``, which pytest-httpx answers when the test uses
``httpx_mock``; the Miniflare bindings use their own transport, which it leaves alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from vid2context.runtime import Runtime, build_runtime, build_worker_runtime
from vid2context.settings import load_settings
from vid2context.storage.memory import MemoryKv
from vid2context.storage.vectorize import VIDEO_PROPERTY

from .cloudflare_bindings import CloudflareEnv, WorkersAi
from .egress_standins import MappedResolver
from .miniflare_harness import MiniflareHarness, apply_migrations
from .vectorize_standin import VectorizeStandin

__all__ = [
    "KINDS",
    "ON_EVERY_RUNTIME",
    "ON_WORKER_TOO",
    "VECTOR_DIMENSIONS",
    "Runtimes",
    "WorkerLikeApp",
    "asgi_lifespan",
    "on_each_runtime_when",
    "runtime_kind",
    "runtimes",
    "serve",
]

KINDS = ("memory", "sqlite", "worker")
VECTOR_DIMENSIONS = 384
"""The dimension of the Worker kind's Vectorize stand-in, as ``wrangler vectorize create`` makes it."""
ON_WORKER_TOO = pytest.mark.parametrize("runtime_kind", ["memory", "worker"], indirect=True)
"""Run the test on the memory runtime and on the Worker's."""
ON_EVERY_RUNTIME = pytest.mark.parametrize("runtime_kind", KINDS, indirect=True)
"""Run the test on every kind of runtime."""


def on_each_runtime_when(*fixtures: str, kinds: Sequence[str] = KINDS) -> Callable[[pytest.Metafunc], None]:
    """A ``pytest_generate_tests`` hook: a test that takes one of ``fixtures`` runs on each kind."""

    def parametrize(metafunc: pytest.Metafunc) -> None:
        if any(name in metafunc.fixturenames for name in fixtures):
            metafunc.parametrize("runtime_kind", list(kinds), indirect=True)

    return parametrize


class Runtimes:
    """Builds runtimes of one ``kind`` for one test and closes them afterwards."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown runtime kind {kind!r}: one of {KINDS}")
        self.kind = kind
        self._tmp_path = tmp_path
        self._request = request
        self._built: list[Runtime] = []
        self._envs: dict[int, CloudflareEnv] = {}
        self._miniflare: MiniflareHarness | None = None

    async def build(
        self, environ: Mapping[str, str] | None = None, *, ai: WorkersAi | None = None
    ) -> Runtime:
        """A runtime of this kind with the settings ``environ``; ``ai`` is the Worker's AI binding."""
        environ = dict(environ or {})
        if ai is not None and self.kind != "worker":
            raise ValueError("only the Worker has an AI binding")
        if self.kind == "memory":
            runtime = build_runtime(load_settings(environ))
        elif self.kind == "sqlite":
            runtime = self._sqlite(environ)
        else:
            runtime = await self._worker(environ, ai)
        self._built.append(runtime)
        return runtime

    def _sqlite(self, environ: dict[str, str]) -> Runtime:
        from vid2context.auth.store_sql import SqlOAuthStore
        from vid2context.integrations.webhook_egress import GuardedSender
        from vid2context.integrations.webhooks import build_webhooks
        from vid2context.storage.sqlite import SQLiteSql, open_local_stores
        from vid2context.storage.sqlite_vec import open_vector_index

        home = self._tmp_path / f"home{len(self._built)}"
        stores = open_local_stores(home)
        settings = load_settings({"VID2CONTEXT_HOME": str(home), **environ})
        vectors = open_vector_index(stores.storage.database.path)
        assert vectors is not None, (
            "sqlite-vec could not be loaded (the local extra installs it and pysqlite3)"
        )
        runtime = build_runtime(
            settings, storage=stores.storage, kv=stores.kv, blobs=stores.blobs, vectors=vectors
        )
        runtime.sql = SQLiteSql(stores.storage.database)
        runtime.oauth = SqlOAuthStore(SQLiteSql(stores.storage.database), stores.kv)  # as build_local_runtime
        # As build_local_runtime's, on a DNS that knows no name: a test never looks one up for real.
        sender = GuardedSender(public=settings.public, resolver=MappedResolver({}))
        runtime.webhooks = build_webhooks(runtime, sender=sender)
        return runtime

    async def _worker(self, environ: dict[str, str], ai: WorkersAi | None) -> Runtime:
        if self._miniflare is None:
            self._miniflare = self._request.getfixturevalue("miniflare")
            self._miniflare.reset()  # one empty deployment per test; its runtimes share it
        vectors = VectorizeStandin(dimensions=VECTOR_DIMENSIONS)
        vectors.create_metadata_index(VIDEO_PROPERTY, "string")  # as the deploy guide makes it
        env = self._miniflare.new_env(vars=environ, ai=ai, vectors=vectors)
        await apply_migrations(env.DB)
        runtime = build_worker_runtime(env)
        self._envs[id(runtime)] = env
        return runtime

    def env_of(self, runtime: Runtime) -> CloudflareEnv:
        """The bindings a ``worker`` runtime was built on."""
        return self._envs[id(runtime)]

    async def kv_keys(self, runtime: Runtime, prefix: str) -> list[str]:
        """The keys under ``prefix`` in the runtime's KV store (not part of its protocol: read
        through the store underneath)."""
        if self.kind == "worker":
            listed = await self.env_of(runtime).KV.list(prefix=prefix)
            return sorted(key.name for key in listed.keys)
        if isinstance(runtime.kv, MemoryKv):
            return sorted(key for key in runtime.kv._data if key.startswith(prefix))
        raise NotImplementedError(f"no key listing for {type(runtime.kv).__name__}")

    async def aclose(self) -> None:
        """Close every runtime built (jobs stop and write their state), then the bindings. A
        runtime an app's lifespan closed already (its http client, closed last) is left alone."""
        for runtime in reversed(self._built):
            if not runtime.http.is_closed:
                await runtime.aclose()
        for env in self._envs.values():
            await env.aclose()


@pytest.fixture
def runtime_kind(request: pytest.FixtureRequest) -> str:
    """``memory`` unless the test is parametrized with ``runtime_kind`` (indirect)."""
    return getattr(request, "param", "memory")


@pytest.fixture
async def runtimes(
    runtime_kind: str, tmp_path: Path, request: pytest.FixtureRequest, anyio_backend: Any
) -> AsyncIterator[Runtimes]:
    made = Runtimes(runtime_kind, tmp_path, request)
    try:
        yield made
    finally:
        await made.aclose()


@asynccontextmanager
async def asgi_lifespan(app: Any) -> AsyncIterator[None]:
    """One ASGI lifespan of ``app``, driven over the protocol as a server (or the Worker) does."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
    task = asyncio.ensure_future(app(scope, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        stopped = await outbox.get()
        await task
        assert stopped["type"] == "lifespan.shutdown.complete", stopped


@asynccontextmanager
async def serve(
    app: Any, *, client: tuple[str, int] = ("127.0.0.1", 50000)
) -> AsyncIterator[httpx.AsyncClient]:
    """``app`` inside its lifespan, with an httpx client that calls it in this event loop."""
    transport = httpx.ASGITransport(app=app, client=client)
    async with (
        asgi_lifespan(app),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as http,
    ):
        yield http


class WorkerLikeApp:
    """``app`` as ``workers.asgi.fetch`` runs it (its source: ``workers/asgi.py`` of the Python
    Workers SDK): the app's lifespan started before and shut down after every request, and a scope
    without ``client`` or ``server`` (a Worker has neither; Cloudflare names the client in
    ``CF-Connecting-IP``). For a server that runs it with its own lifespan handling off."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise RuntimeError(f"the Worker's adapter passes HTTP requests only, not {scope['type']!r}")
        request = {key: value for key, value in scope.items() if key not in ("client", "server")}
        async with asgi_lifespan(self.app):
            await self.app(request, receive, send)
