"""Assembling the app: routes, error handlers and the runtime's lifetime."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.datastructures import State

from ..held import Held
from ..runtime import Runtime
from ..storage.versions import version_now, version_reader
from .accounts import ACCOUNT_ROUTES
from .answers import ANSWER_ROUTES
from .ask import ASK_ROUTES
from .bots import BOT_ROUTES
from .cached_reads import CachedReads
from .caption_languages import caption_languages_route
from .catalog import formats, models
from .chapters import CHAPTER_ROUTES
from .collections import COLLECTION_ROUTES
from .duplicates import DUPLICATE_ROUTES
from .errors import EXCEPTION_HANDLERS
from .exports import EXPORT_ROUTES
from .health import health
from .jobs import JOB_ROUTES
from .library_routes import delete_saved_video, get_saved_video, list_saved_videos, put_saved_video
from .live import LIVE_ROUTES
from .middleware import build_middleware, wrap
from .oauth import oauth_routes
from .openapi import openapi_config
from .packs import bundle_get, bundle_post, pack_get, pack_post
from .reading import outline, section
from .rendered import WORKER_MAX_BYTES, RenderedCache
from .research import RESEARCH_ROUTES
from .search import search_route
from .skips import SKIP_ROUTES
from .uploads import upload
from .videos import comments, context, items, metadata, transcript
from .view import view
from .webapp import WEBAPP_ROUTES
from .webhooks import WEBHOOK_ROUTES

__all__ = ["create_app"]


class SharedLifespan:
    """One lifespan for many overlapping users, entered and left by a task of its own.

    On the Worker every request runs the app's lifespan, and concurrent requests of an isolate
    overlap: they do not end in the order they began. Litestar's lifespan (its event emitter) and
    the MCP session manager hold anyio task groups, which must be left by the task that entered
    them, and the emitter keeps one exit stack per app. So the first user starts a task that enters
    the real lifespan; the others wait for its startup; the last one out lets that task leave it.
    A newcomer waits until a lifespan that is ending has ended, so two never overlap.
    """

    def __init__(self, enter: Callable[[], AbstractAsyncContextManager[None]]) -> None:
        self._enter = enter
        self._users = 0
        self._lock: asyncio.Lock | None = None
        self._running: Held | None = None

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Inside the lifespan (started by the first holder, ended by the last)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._running is None:
                self._running = await Held.enter(self._enter)  # a failing startup: the first holder's
            self._users += 1
        try:
            yield
        finally:
            async with self._lock:
                self._users -= 1
                if self._users == 0 and self._running is not None:
                    running, self._running = self._running, None
                    await running.leave()  # a failing shutdown is the last user's to report


class IsolateApp(Litestar):
    """The app of a Worker isolate: its lifespan may be entered again while it runs (one per
    concurrent request), and all of them share one (``SharedLifespan``)."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self._shared = SharedLifespan(super().lifespan)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._shared.hold():
            yield


def _approver(hosted: Any) -> Any:
    """Who approves on the OAuth consent page: the signed-in account in hosted mode, else the
    owner key (``None``: ``api/oauth.py``'s default)."""
    if hosted is None:
        return None
    from ..auth.consent_github import GitHubApprover

    return GitHubApprover(hosted)


def create_app(runtime: Runtime, *, owns_runtime: bool = True, front: bool = True) -> Litestar:
    """The ASGI app for ``runtime``.

    ``owns_runtime``: whether the app's lifespan is the runtime's life. True for a server process:
    its lifespan runs once, and its shutdown closes the runtime (jobs, store, httpx client). The
    Cloudflare Worker passes False: ``workers.asgi.fetch`` runs the lifespan around *every*
    request, while the runtime is built once per isolate and must stay open for the next request
    and for the background work still running; and since concurrent requests overlap, their
    lifespans share one (``IsolateApp``). The MCP session manager is lifespan-scoped either way
    (it is cheap to start again).

    The runtime travels in ``app.state`` so handlers reach it without globals. The middleware
    (``api/middleware``) wraps Litestar's whole handler, so it sees unknown routes too; a
    malformed ``VID2CONTEXT_API_KEYS`` fails here. Inside it, in front of Litestar, rendered
    transcripts are answered without routing (``cached_reads.py``) where the storage's version is
    read without waiting; ``front=False`` leaves every request to Litestar (the tests and
    ``bench_cached`` compare the two paths).
    """
    hosted = None
    if runtime.settings.hosted:
        from ..auth.hosted import Hosted

        hosted = Hosted(runtime)
    middleware = build_middleware(runtime, hosted=hosted)
    # Imported here, never at module top: the MCP SDK draws random numbers at import (not allowed
    # at Worker start-up).
    from ..mcp.http import mcp_http

    oauth = oauth_routes(runtime, approver=_approver(hosted)) if runtime.settings.oauth else None
    mcp = mcp_http(runtime, oauth=oauth.server if oauth else None, hosted=hosted)

    cache_bytes = runtime.settings.response_cache_mb * 1024 * 1024
    if runtime.name == "worker":
        cache_bytes = min(cache_bytes, WORKER_MAX_BYTES)
    version = version_reader(runtime.storage)
    rendered = (
        RenderedCache(version, max_bytes=cache_bytes, version_now=version_now(runtime.storage))
        if cache_bytes and version
        else None
    )

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owns_runtime:
                await runtime.aclose()

    app_class = Litestar if owns_runtime else IsolateApp
    app = app_class(
        route_handlers=[
            health,
            context,
            transcript,
            metadata,
            formats,
            items,
            section,
            outline,
            view,
            comments,
            pack_get,
            pack_post,
            bundle_get,
            bundle_post,
            models,
            list_saved_videos,
            get_saved_video,
            delete_saved_video,
            put_saved_video,
            *COLLECTION_ROUTES,
            search_route,
            *ASK_ROUTES,
            *CHAPTER_ROUTES,
            *RESEARCH_ROUTES,
            *SKIP_ROUTES,
            caption_languages_route,
            *EXPORT_ROUTES,
            *BOT_ROUTES,
            *DUPLICATE_ROUTES,
            upload,
            *JOB_ROUTES,
            *LIVE_ROUTES,
            *ANSWER_ROUTES,
            *ACCOUNT_ROUTES,
            *WEBHOOK_ROUTES,
            *WEBAPP_ROUTES,
            *mcp.route_handlers,
            *(oauth.route_handlers if oauth else ()),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan, mcp.lifespan],
        state=State(
            {
                "runtime": runtime,
                "hosted": hosted,
                "oauth": oauth.server if oauth else None,
                "rendered": rendered,  # rendered.py; None where the storage has no version
                "cached_reads": None,  # cached_reads.py's front, when there is one
            }
        ),
        openapi_config=openapi_config(runtime.settings),
        logging_config=None,  # the process owns logging; access lines come from api/middleware
    )
    handler = app.asgi_handler
    if front and rendered is not None and rendered.version_now is not None:
        handler = app.state.cached_reads = CachedReads(handler, cache=rendered, runtime=runtime)
    app.asgi_handler = wrap(handler, middleware)
    return app
