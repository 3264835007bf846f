"""What the server can use: its model rungs (speech-to-text, LLM, embeddings), read at runtime."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...api.catalog import MODEL_KINDS, ModelsResponse, model_rungs
from ...errors import ErrorCode, VidError
from ..results import JsonReply, Reply, output_schema
from ..toolkit import ContractTool, Deps, define

__all__ = ["tools"]

Kind = Annotated[str | None, Field(description="Only rungs of this kind: llm, stt, embed, video or visual.")]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def list_models(kind: Kind = None) -> Reply:
        """The model rungs this server knows (speech-to-text, LLM, embedding, vision), in ladder
        order, each with whether it is enabled, the environment variables it needs (names only,
        never values) and its capabilities, plus the default policy; an embedding rung (kind embed)
        also gives the space of its vectors (modelId, dim, pooling), and only vectors of one space
        are ever compared. An empty list means no model rung is set up: transcripts then come from
        platform captions only. Costs about 100 tokens per rung."""
        wanted = None
        if kind is not None and kind.strip():
            wanted = kind.strip().lower()
            if wanted not in MODEL_KINDS:
                raise VidError(
                    ErrorCode.BAD_REQUEST,
                    f"Unknown model kind {kind[:20]!r}.",
                    hint="Give kind as one of: " + ", ".join(MODEL_KINDS) + ", or leave kind out for all.",
                )
        rungs = [rung for rung in model_rungs(runtime) if wanted is None or rung.kind == wanted]
        return JsonReply(
            ModelsResponse(models=rungs, default_policy=runtime.settings.policy or "free"), structured=True
        )

    return [
        define(
            list_models,
            title="List model rungs",
            read_only=True,
            open_world=False,
            idempotent=True,
            output=output_schema(ModelsResponse, processing=False),
        ),
    ]
