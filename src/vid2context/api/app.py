"""Assembling the app: routes, error handlers and the runtime's lifetime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.datastructures import State

from ..runtime import Runtime
from .errors import EXCEPTION_HANDLERS
from .health import health

__all__ = ["create_app"]


def create_app(runtime: Runtime) -> Litestar:
    """The ASGI app for ``runtime``; shutting the app down closes the runtime's clients and store.

    The runtime travels in ``app.state`` so handlers reach it without globals.
    """

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runtime.aclose()

    return Litestar(
        route_handlers=[health],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan],
        state=State({"runtime": runtime}),
        openapi_config=None,
    )
