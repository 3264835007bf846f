"""``GET /api/v1/health``: is it up, what can it do, and which providers are enabled.

Names the variables a rung needs, never their values.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from litestar import Request, get

from .. import __version__
from ..formats import FORMATTERS
from ..runtime import Runtime

__all__ = ["HealthFormat", "HealthProvider", "HealthResponse", "health"]


class HealthFormat(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    description: str
    mime_type: str


class HealthProvider(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    kind: Literal["source", "stt", "storage"]
    name: str
    enabled: bool


class HealthResponse(msgspec.Struct, rename="camel", kw_only=True):
    ok: bool
    name: str
    version: str
    runtime: str
    storage: str
    formats: list[HealthFormat]
    providers: list[HealthProvider]


@get("/api/v1/health", sync_to_thread=False)
def health(request: Request) -> HealthResponse:
    runtime: Runtime = request.app.state.runtime
    return HealthResponse(
        ok=True,
        name="vid2context",
        version=__version__,
        runtime=runtime.name,
        storage=runtime.storage.id,
        formats=[HealthFormat(id=f.id, description=f.description, mime_type=f.mime_type) for f in FORMATTERS.values()],
        providers=[HealthProvider(id=p.id, kind="source", name=p.name, enabled=True) for p in runtime.sources],
    )
