"""The Cloudflare Python Worker: a thin shim from ``fetch`` to the same ASGI apps the local server runs.

``/api/*``, ``/mcp`` (with ``/mcp/server-card``), ``/oauth/*`` and ``/.well-known/*`` go to the Litestar app of
``vid2context.api``; everything else is the docs site, answered by ``vid2context.site`` from the
``ASSETS`` binding (Markdown or HTML by the ``Accept`` header). Both go through
``workers.asgi.fetch``, which runs the app's lifespan around every request: the runtime (D1, KV,
R2, Workers AI, one httpx client) is therefore built once per isolate, here, and the app is told
not to close it at each lifespan shutdown.

What this module imports at its top is part of the memory snapshot Cloudflare takes at deploy, so
every new isolate starts with Litestar, the app's modules and the Cloudflare bindings' wrappers
already loaded. The ``mcp`` package itself is not among them: importing it draws random numbers,
which Workers forbid while the snapshot is taken (``opentelemetry.context``, which the SDK's
tracing imports, names its context keys with ``uuid4()``; with ``click`` installed, as it is not in
the upload, ``uvicorn`` would load ``multiprocessing`` and its ``os.urandom`` key too), so the app
loads it on the first MCP message that needs it: ``initialize``, ``tools/list`` and
``prompts/list`` do not (``mcp/lean.py`` answers them with the SDK's exact bytes). Its dependencies that draw nothing are imported here
(``SNAPSHOT_MCP_DEPS``): the protocol models of ``mcp_types`` and its per-version models
(``mcp_types.methods``; pydantic, built at import: most of the SDK's import time), with which
the lean ``initialize`` is answered and validated, and Starlette, which the SDK's HTTP app is
made of. (pydantic_core's Rust hash seed, the one draw they
make, is a case workerd's snapshot lets through and seeds before it.) ``tests/test_worker_snapshot.py`` imports this module
with every entropy source refused, as the snapshot does, and checks that the SDK stays out.
``scripts/build_worker.py`` (wrangler.toml's build step) puts the package beside this file.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

# The MCP SDK's dependencies that draw no entropy at import: in the snapshot, so the first MCP
# message imports only the ``mcp`` package (see the module docstring).
import mcp_types  # noqa: F401
import mcp_types.methods  # noqa: F401  (the per-version models: most of mcp_types' import)
import starlette.applications  # noqa: F401
import starlette.responses  # noqa: F401
import starlette.routing  # noqa: F401
from workers import WorkerEntrypoint, asgi

# Imported here so they are in the snapshot; build_worker_runtime would import them on first use.
import vid2context.providers.whisper_workers_ai
import vid2context.storage.cloudflare  # noqa: F401  (binds the same name as the line above)
from vid2context.api import create_app
from vid2context.runtime import build_worker_runtime
from vid2context.site import SiteApp, is_app_path

SNAPSHOT_MCP_DEPS = (
    "mcp_types",
    "mcp_types.methods",
    "starlette.applications",
    "starlette.responses",
    "starlette.routing",
)
"""The MCP SDK's dependencies imported above (the benchmark and the snapshot test read this)."""

_api: Any = None
"""The Litestar app of this isolate, built by the first API request."""
_runtime: Any = None
"""The runtime of this isolate, shared by the API, the queue consumer and the cron handler."""


def runtime_of(env: Any) -> Any:
    """The isolate's runtime, built on first use from the Worker's bindings, vars and secrets."""
    global _runtime
    if _runtime is None:
        from workers import wait_until  # cloudflare:workers, reachable inside a request

        _runtime = build_worker_runtime(env)
        _runtime.keep_alive = wait_until  # background work outlives the request that started it
    return _runtime


def api_app(env: Any) -> Any:
    """The isolate's API app, built on first use."""
    global _api
    if _api is None:
        _api = create_app(runtime_of(env), owns_runtime=False)
    return _api


class AssetsReader:
    """``SiteReader`` over the ``ASSETS`` binding (wrangler.toml: exact files, no HTML handling)."""

    def __init__(self, assets: Any, origin: str) -> None:
        self.assets = assets
        self.origin = origin

    async def read(self, path: str) -> bytes | None:
        response = await self.assets.fetch(self.origin + path)
        if response.status != 200:
            return None
        return await response.bytes()


class Default(WorkerEntrypoint):
    async def fetch(self, request: Any) -> Any:
        url = urlsplit(request.url)
        if is_app_path(unquote(url.path)):
            return await asgi.fetch(api_app(self.env), request, self.env, self.ctx)
        site = SiteApp(AssetsReader(self.env.ASSETS, f"{url.scheme}://{url.netloc}"))
        return await asgi.fetch(site, request, self.env, self.ctx)

    async def queue(self, batch: Any, env: Any = None, ctx: Any = None) -> None:
        """A batch from the ``JOBS`` queue or its dead-letter queue: each message one unit of a
        job (``vid2context.jobs_queued``) or one MCP long run (``vid2context.mcp.queued``)."""
        from vid2context.jobs_queued import consume

        await consume(runtime_of(env or self.env), batch)

    async def scheduled(self, controller: Any, env: Any = None, ctx: Any = None) -> None:
        """A Cron Trigger: queue a refresh of every watch list that is due (``vid2context.watch``),
        and forget queued jobs and MCP runs that ended a day ago."""
        from vid2context.jobs_queued import QueuedJobs
        from vid2context.watch import refresh_due

        runtime = runtime_of(env or self.env)
        await refresh_due(runtime)
        if isinstance(runtime.jobs, QueuedJobs):
            await runtime.jobs.prune()
        if runtime.mcp_runs is not None:
            await runtime.mcp_runs.prune()
