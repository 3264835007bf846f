"""Assembling the app: routes, error handlers and the runtime's lifetime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.datastructures import State

from ..runtime import Runtime
from .catalog import formats, models
from .collections import COLLECTION_ROUTES
from .errors import EXCEPTION_HANDLERS
from .health import health
from .jobs import JOB_ROUTES
from .library_routes import delete_saved_video, get_saved_video, list_saved_videos
from .middleware import build_middleware, wrap
from .openapi import openapi_config
from .packs import bundle_get, bundle_post, pack_get, pack_post
from .reading import outline, section
from .uploads import upload
from .videos import comments, context, items, metadata, transcript

__all__ = ["create_app"]


def create_app(runtime: Runtime) -> Litestar:
    """The ASGI app for ``runtime``; shutting the app down closes the runtime's clients and store.

    The runtime travels in ``app.state`` so handlers reach it without globals. The middleware
    (``api/middleware``) wraps Litestar's whole handler, so it sees unknown routes too; a
    malformed ``VID2CONTEXT_API_KEYS`` fails here.
    """
    middleware = build_middleware(runtime)
    # Imported here, never at module top: the MCP SDK draws random numbers at import (not allowed
    # at Worker start-up).
    from ..mcp.http import mcp_http

    mcp = mcp_http(runtime)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runtime.aclose()

    app = Litestar(
        route_handlers=[
            health,
            context,
            transcript,
            metadata,
            formats,
            items,
            section,
            outline,
            comments,
            pack_get,
            pack_post,
            bundle_get,
            bundle_post,
            models,
            list_saved_videos,
            get_saved_video,
            delete_saved_video,
            *COLLECTION_ROUTES,
            upload,
            *JOB_ROUTES,
            *mcp.route_handlers,
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan, mcp.lifespan],
        state=State({"runtime": runtime}),
        openapi_config=openapi_config(runtime.settings),
        logging_config=None,  # the process owns logging; access lines come from api/middleware
    )
    app.asgi_handler = wrap(app.asgi_handler, middleware)
    return app
