"""The Cloudflare Python Worker: a thin shim from ``fetch`` to the same ASGI apps the local server runs.

``/api/*``, ``/mcp`` (with ``/mcp/server-card``), ``/oauth/*`` and ``/.well-known/*`` go to the Litestar app of
``vid2context.api``; everything else is the docs site, answered by ``vid2context.site`` from the
``ASSETS`` binding (Markdown or HTML by the ``Accept`` header). Both go through
``workers.asgi.fetch``, which runs the app's lifespan around every request: the runtime (D1, KV,
R2, Workers AI, one httpx client) is therefore built once per isolate, here, and the app is told
not to close it at each lifespan shutdown.

What this module imports at its top is part of the memory snapshot Cloudflare takes at deploy, so
every new isolate starts with Litestar, the app's modules and the Cloudflare bindings' wrappers
already loaded. The ``mcp`` SDK is not among them: it draws random numbers at import, which
Workers forbid while the snapshot is taken, and the app loads it on the first MCP message only.
``scripts/build_worker.py`` (wrangler.toml's build step) puts the package beside this file.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from workers import WorkerEntrypoint, asgi

# Imported here so they are in the snapshot; build_worker_runtime would import them on first use.
import vid2context.providers.whisper_workers_ai
import vid2context.storage.cloudflare  # noqa: F401  (binds the same name as the line above)
from vid2context.api import create_app
from vid2context.runtime import build_worker_runtime
from vid2context.site import SiteApp, is_app_path

_api: Any = None
"""The Litestar app of this isolate, built by the first API request."""


def api_app(env: Any) -> Any:
    """The isolate's API app, built on first use from the Worker's bindings, vars and secrets."""
    global _api
    if _api is None:
        from workers import wait_until  # cloudflare:workers, reachable inside a request

        runtime = build_worker_runtime(env)
        runtime.keep_alive = wait_until  # background jobs outlive the request that started them
        _api = create_app(runtime, owns_runtime=False)
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
