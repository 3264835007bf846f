"""``GET /api/v1/health``: is it up, what can it do, and which providers are enabled.

Names the variables a rung needs, never their values.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from litestar import Request, get

from .. import __version__
from ..formats import FORMATTERS
from ..runtime import Runtime
from ..search.indexing import IndexFailure, VectorStatus, coverage, last_failure
from .catalog import EmbeddingInfo, embedding_info, llm_ladder

__all__ = [
    "HealthFormat",
    "HealthProvider",
    "HealthResponse",
    "HealthRung",
    "HealthSearch",
    "embed_providers",
    "health",
    "llm_providers",
    "stt_providers",
]


class HealthFormat(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    description: str
    mime_type: str


class HealthRung(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One model rung: ``requires`` names environment variables, never their values."""

    id: str
    service: str
    model: str
    tier: str
    enabled: bool
    requires: list[str]
    embedding: EmbeddingInfo | None = None
    """Embedding rungs only: the space of their vectors."""


class HealthProvider(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    kind: Literal["source", "stt", "embed", "llm", "storage"]
    name: str
    enabled: bool
    rungs: list[HealthRung] | None = None
    """Speech-to-text, embedding and language-model entries only: their rungs in ladder order."""
    requires: list[str] | None = None
    """Source entries only, for an optional hosted source (Supadata): the variables it needs."""


class HealthSearch(VectorStatus, kw_only=True):
    """Search over the whole library: the vector side's state, with the last embedding failure."""

    last_failure: IndexFailure | None = None
    """The last video whose windows could not be embedded (at save or in a backfill), if any."""


class HealthResponse(msgspec.Struct, rename="camel", kw_only=True):
    ok: bool
    name: str
    version: str
    runtime: str
    storage: str
    formats: list[HealthFormat]
    providers: list[HealthProvider]
    search: HealthSearch | None = None
    """Keyword search always works; this says whether the vector side does, and over how much."""


async def _search(runtime: Runtime) -> HealthSearch | None:
    try:
        status = await coverage(runtime)
    except Exception:  # health answers even when the index cannot be read
        return None
    fields = {name: getattr(status, name) for name in status.__struct_fields__}
    return HealthSearch(**fields, last_failure=await last_failure(runtime))


@get("/api/v1/health")
async def health(request: Request) -> HealthResponse:
    runtime: Runtime = request.app.state.runtime
    return HealthResponse(
        ok=True,
        name="vid2context",
        version=__version__,
        runtime=runtime.name,
        storage=runtime.storage.id,
        formats=[
            HealthFormat(id=f.id, description=f.description, mime_type=f.mime_type)
            for f in FORMATTERS.values()
        ],
        providers=[
            *(
                HealthProvider(
                    id=p.id,
                    kind="source",
                    name=p.name,
                    enabled=getattr(p, "enabled", True),
                    requires=list(getattr(p, "requires", ())) or None,
                )
                for p in runtime.sources
            ),
            *stt_providers(runtime),
            *embed_providers(runtime),
            *llm_providers(runtime),
        ],
        search=await _search(runtime),
    )


def stt_providers(runtime: Runtime) -> list[HealthProvider]:
    """The speech-to-text ladder grouped by provider, in ladder order; enabled when a rung is."""
    return _grouped("stt", [(rung, None) for rung in runtime.stt])


def embed_providers(runtime: Runtime) -> list[HealthProvider]:
    """The embedding ladder grouped by provider, in ladder order, each rung with its space."""
    return _grouped("embed", [(rung, embedding_info(rung)) for rung in runtime.embed])


def llm_providers(runtime: Runtime) -> list[HealthProvider]:
    """The language-model rungs grouped by provider, in the default policy's order (the MCP
    client's own model is disabled here: only an MCP call has one)."""
    return _grouped("llm", [(rung, None) for rung in llm_ladder(runtime)])


def _grouped(
    kind: Literal["stt", "embed", "llm"], rungs: list[tuple[Any, EmbeddingInfo | None]]
) -> list[HealthProvider]:
    groups: dict[str, HealthProvider] = {}
    for rung, embedding in rungs:
        entry = groups.setdefault(
            rung.provider,
            HealthProvider(id=rung.provider, kind=kind, name=rung.name, enabled=False, rungs=[]),
        )
        entry.rungs.append(  # type: ignore[union-attr]
            HealthRung(
                id=rung.id,
                service=rung.service,
                model=rung.model,
                tier=rung.tier,
                enabled=rung.enabled,
                requires=list(rung.requires),
                embedding=embedding,
            )
        )
        entry.enabled = entry.enabled or rung.enabled
    return list(groups.values())
