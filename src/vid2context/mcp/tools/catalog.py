"""What the server can use: its model rungs (speech-to-text, LLM, embeddings), read at runtime."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...api.catalog import MODEL_KINDS, ModelsResponse, model_rungs
from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ..results import JsonReply, Reply, output_schema
from ..sampling import with_caller_model
from ..toolkit import ContractTool, Deps, define

__all__ = ["tools"]

Kind = Annotated[str | None, Field(description="Only rungs of this kind: llm, stt, embed, video or visual.")]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def list_models(ctx: Context, kind: Kind = None) -> Reply:
        """The model rungs this server knows (speech-to-text, LLM, embedding, vision), in ladder
        order, each with whether it is enabled, the environment variables it needs (names only,
        never values) and its capabilities, plus the default policy; an embedding rung (kind embed)
        also gives the space of its vectors (modelId, dim, pooling), and only vectors of one space
        are ever compared. LLM rungs (kind llm) list chat, stream when they stream and their
        context window; llm/mcp-sampling/client is your own model, enabled when your client can
        sample. A rung that is not enabled is not set up: with no speech-to-text rung, transcripts
        come from platform captions only; with no LLM rung, nothing is translated. Costs about 100
        tokens per rung."""
        wanted = None
        if kind is not None and kind.strip():
            wanted = kind.strip().lower()
            if wanted not in MODEL_KINDS:
                raise VidError(
                    ErrorCode.BAD_REQUEST,
                    f"Unknown model kind {kind[:20]!r}.",
                    hint="Give kind as one of: " + ", ".join(MODEL_KINDS) + ", or leave kind out for all.",
                )
        call = with_caller_model(Ctx(), ctx)
        rungs = [rung for rung in model_rungs(runtime, call) if wanted is None or rung.kind == wanted]
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
