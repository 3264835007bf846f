"""What the server can do: ``/formats`` (every formatter) and ``/models`` (every model rung).

Both read the runtime's own lists, never a hard-coded copy: a formatter or rung added to the core
appears here without touching this module.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec
from litestar import Request, get
from litestar.params import QueryParameter

from ..errors import ErrorCode, VidError
from ..formats import FormatInfo, format_infos
from ..models import Base
from ..runtime import Runtime
from ..search.embedders.base import Embedder
from .params import runtime_of

__all__ = [
    "EmbeddingInfo",
    "FormatsResponse",
    "ModelInfo",
    "ModelKind",
    "ModelsResponse",
    "embedding_info",
    "formats",
    "models",
]

ModelKind = Literal["llm", "stt", "embed", "video", "visual"]
MODEL_KINDS: tuple[str, ...] = get_args(ModelKind)


class FormatsResponse(Base, kw_only=True):
    formats: list[FormatInfo]


class EmbeddingInfo(Base, kw_only=True):
    """The space an embedding rung's vectors belong to: only vectors of equal spaces are compared."""

    model_id: str
    """The model the vectors belong to, whoever runs it (``BAAI/bge-small-en-v1.5``)."""
    dim: int | None
    """Their dimension; ``null`` until an endpoint that does not say has answered once."""
    pooling: str
    """``cls``, ``mean``, or ``server`` (the endpoint decides and does not say)."""


def embedding_info(rung: Embedder) -> EmbeddingInfo:
    return EmbeddingInfo(model_id=rung.model_id, dim=rung.dim, pooling=rung.pooling)


class ModelInfo(Base, kw_only=True):
    """One model rung, enabled or not; ``requires`` names env vars, never their values."""

    id: str
    """The rung id, e.g. ``stt/groq/whisper-large-v3-turbo``."""
    kind: ModelKind
    service: str
    model: str
    label: str
    """The model id after its last ``/``."""
    tier: str
    """``keyless``, ``free`` (a free account key) or ``paid``."""
    enabled: bool
    requires: list[str] = msgspec.field(default_factory=list)
    capabilities: list[str] = msgspec.field(default_factory=list)
    embedding: EmbeddingInfo | None = None
    """Embedding rungs only: the space of their vectors."""


class ModelsResponse(Base, kw_only=True):
    models: list[ModelInfo]
    default_policy: str


def model_rungs(runtime: Runtime) -> list[ModelInfo]:
    """Every model rung the runtime knows, in ladder order.

    Speech-to-text, then embedding rungs (captions are source providers, not models); each
    ladder adds its rungs here when it lands.
    """
    stt = [
        ModelInfo(
            id=rung.id,
            kind="stt",
            service=rung.service,
            model=rung.model,
            label=rung.model.rsplit("/", 1)[-1],
            tier=rung.tier,
            enabled=rung.enabled,
            requires=list(rung.requires),
            capabilities=["transcribe", "segments"],
        )
        for rung in runtime.stt
    ]
    embed = [
        ModelInfo(
            id=rung.id,
            kind="embed",
            service=rung.service,
            model=rung.model,
            label=rung.model.rsplit("/", 1)[-1],
            tier=rung.tier,
            enabled=rung.enabled,
            requires=list(rung.requires),
            capabilities=["embed", f"batch:{rung.max_batch}"],
            embedding=embedding_info(rung),
        )
        for rung in runtime.embed
    ]
    return [*stt, *embed]


@get("/api/v1/formats", sync_to_thread=False)
def formats() -> FormatsResponse:
    """Every formatter in the core map, in its order (``text`` first)."""
    return FormatsResponse(formats=format_infos())


@get("/api/v1/models", sync_to_thread=False)
def models(
    request: Request,
    kind: Annotated[str | None, QueryParameter(description="llm, stt, embed, video or visual.")] = None,
) -> ModelsResponse:
    """Model rungs (optionally of one ``kind``) and the default policy; embedding rungs
    (``kind=embed``) carry the space of their vectors in ``embedding``."""
    wanted = None
    if kind is not None and kind.strip():
        wanted = kind.strip().lower()
        if wanted not in MODEL_KINDS:
            shown = kind if len(kind) <= 20 else kind[:20] + "..."
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"Unknown model kind {shown!r}.",
                hint="Give kind as one of: " + ", ".join(MODEL_KINDS) + ", or leave kind out for all.",
            )
    runtime = runtime_of(request)
    rungs = [rung for rung in model_rungs(runtime) if wanted is None or rung.kind == wanted]
    return ModelsResponse(models=rungs, default_policy=runtime.settings.policy or "free")
