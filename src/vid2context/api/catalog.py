"""What the server can do: ``/formats`` (every formatter) and ``/models`` (every model rung).

Both read the runtime's own lists, never a hard-coded copy: a formatter or rung added to the core
appears here without touching this module.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from litestar import Request, get
from litestar.params import QueryParameter

from ..answers.llm.base import LanguageModel
from ..answers.llm.ladder import known_rungs
from ..answers.llm.rungs import listed
from ..ctx import Ctx
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
    "llm_capabilities",
    "llm_ladder",
    "model_rungs",
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
    """``local`` (this machine), ``caller`` (the MCP client's own model), ``free`` (a free account
    key), ``keyless`` or ``paid``."""
    enabled: bool
    requires: list[str] = msgspec.field(default_factory=list)
    capabilities: list[str] = msgspec.field(default_factory=list)
    embedding: EmbeddingInfo | None = None
    """Embedding rungs only: the space of their vectors."""


class ModelsResponse(Base, kw_only=True):
    models: list[ModelInfo]
    default_policy: str


def llm_capabilities(rung: LanguageModel) -> list[str]:
    """``chat``, ``stream`` when it streams natively, and its context window in tokens."""
    return ["chat", *(["stream"] if rung.streams else []), f"context:{rung.context_tokens}"]


def llm_ladder(runtime: Runtime, ctx: Ctx | None = None) -> list[LanguageModel]:
    """Every language-model rung of this call in the default policy's order, the rungs that policy
    leaves out after it (the MCP client's model comes from ``ctx``, disabled without one)."""
    return listed(known_rungs(runtime, ctx), runtime.settings.policy)


def _info(
    rung: Any, kind: ModelKind, capabilities: list[str], embedding: EmbeddingInfo | None = None
) -> ModelInfo:
    """One rung as ``/models`` lists it: every ladder's rungs carry the same few attributes."""
    return ModelInfo(
        id=rung.id,
        kind=kind,
        service=rung.service,
        model=rung.model,
        label=rung.model.rsplit("/", 1)[-1],
        tier=rung.tier,
        enabled=rung.enabled,
        requires=list(rung.requires),
        capabilities=capabilities,
        embedding=embedding,
    )


def model_rungs(runtime: Runtime, ctx: Ctx | None = None) -> list[ModelInfo]:
    """Every model rung the runtime knows, in ladder order.

    Speech-to-text, embedding, language-model, then on-screen (``mode=video``) rungs (captions
    are source providers, not models); the MCP client's own model is enabled only in an MCP call whose client can sample
    (``ctx.caller_model``).
    """
    stt = [_info(rung, "stt", ["transcribe", "segments"]) for rung in runtime.stt]
    embed = [
        _info(rung, "embed", ["embed", f"batch:{rung.max_batch}"], embedding_info(rung))
        for rung in runtime.embed
    ]
    llm = [_info(rung, "llm", llm_capabilities(rung)) for rung in llm_ladder(runtime, ctx)]
    visual = [_info(rung, "visual", ["ocr", f"lang:{getattr(rung, 'lang', '')}"]) for rung in runtime.visual]
    return [*stt, *embed, *llm, *visual]


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
    (``kind=embed``) carry the space of their vectors in ``embedding``, language-model rungs
    (``kind=llm``) ``stream`` among their capabilities when they stream. The MCP client's own model
    (MCP sampling) is listed disabled here: only an MCP call has one."""
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
