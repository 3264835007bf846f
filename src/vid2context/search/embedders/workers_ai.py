"""Workers AI's ``@cf/baai/bge-small-en-v1.5``, two ways in: the REST API and the Worker's binding.

The model is BAAI's bge-small-en-v1.5, the same one fastembed runs locally by default, and with
``pooling: "cls"`` (the upstream model's own pooling; Workers AI's default, ``mean``, is kept there
for old callers only and makes vectors that do not match) its vectors share the local model's
space: a library embedded on a laptop is searchable on the edge, and back.

What Cloudflare documents (developers.cloudflare.com/workers-ai/models/bge-small-en-v1.5/ and the
model's schema in ``@cloudflare/workers-types``, ``Ai_Cf_Baai_Bge_Small_En_V1_5_Input`` and
``..._Output``): input ``{"text": string | string[], "pooling"?: "mean" | "cls"}``; output
``{"shape": [n, 384], "data": [[...384 numbers], ...], "pooling"?: "mean" | "cls"}``; 384
dimensions, at most 512 input tokens a text; the REST API wraps the output as
``{"result": {...}, "success": true, "errors": [], "messages": []}``::

    POST https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/run/@cf/baai/bge-small-en-v1.5
    Authorization: Bearer {api_token}
    {"text": ["...", "..."], "pooling": "cls"}

Embedding endpoints take at most 100 texts a call (``MAX_BATCH``).

- ``WorkersAIEmbedder``: the REST API over plain httpx, for the local runtime, with
  ``CLOUDFLARE_ACCOUNT_ID`` and ``CLOUDFLARE_API_TOKEN`` (``CLOUDFLARE_BASE_URL`` points it
  elsewhere, e.g. the tests' stand-in).
- ``WorkersAIBindingEmbedder``: ``await env.AI.run(model, inputs)`` on the Worker, through
  ``storage/cloudflare.CloudflareAi`` as the speech-to-text binding rung does; no key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...cloudflare_api import DEFAULT_BASE_URL, RestRung
from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...models import Pooling
from ...providers.speech import RungError, Tier
from ...providers.whisper_workers_ai import AiBinding
from .base import EMBED_WORDING, unreadable

__all__ = [
    "DEFAULT_BASE_URL",
    "DIM",
    "MAX_BATCH",
    "MODEL_ID",
    "WORKERS_AI_MODEL",
    "WorkersAIBindingEmbedder",
    "WorkersAIEmbedder",
]

WORKERS_AI_MODEL = "@cf/baai/bge-small-en-v1.5"
MODEL_ID = "BAAI/bge-small-en-v1.5"
"""The upstream model: what the vectors' space is named after (fastembed's name for it too)."""
DIM = 384
POOLING: Pooling = "cls"
MAX_BATCH = 100
READ_TIMEOUT_S = 60.0
"""One batch of 100 windows comes back in a second or two; a minute is a service in trouble."""
REQUIRES = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN")
SERVICE = "Workers AI"


class _Output(msgspec.Struct):
    data: list[list[float]]
    shape: list[int] | None = None
    pooling: str | None = None


class _Envelope(msgspec.Struct):
    result: _Output | None = None
    success: bool = True


def _vectors(output: _Output, count: int) -> list[list[float]]:
    """The output's rows, after checking what it says of itself: the pooling asked for, and a
    ``shape`` that matches ``data`` (a shape of ``[n, 384]`` with other rows is not trusted)."""
    if output.pooling is not None and output.pooling != POOLING:
        raise unreadable(SERVICE, f"vectors pooled with {output.pooling[:20]!r}, not {POOLING!r}")
    if output.shape is not None and (
        len(output.shape) != 2 or output.shape[0] != len(output.data) or output.shape[0] != count
    ):
        raise unreadable(SERVICE, f"a shape of {output.shape[:4]} for {count} texts")
    return output.data


class _Rung:
    service = "cloudflare"
    model = WORKERS_AI_MODEL
    id = f"embed/cloudflare/{WORKERS_AI_MODEL}"
    provider = "embed-workers-ai"
    name = "Cloudflare Workers AI embeddings"
    tier: Tier = "free"
    model_id = MODEL_ID
    dim: int | None = DIM
    pooling: Pooling = POOLING
    max_batch = MAX_BATCH


class WorkersAIEmbedder(RestRung, _Rung):
    """``Embedder`` on Workers AI over its REST API (httpx; no SDK needed)."""

    requires = REQUIRES

    async def embed(self, texts: list[str], ctx: Ctx) -> Sequence[Sequence[float]]:
        ctx.check()
        response = await self._run_model(
            {"text": texts, "pooling": POOLING}, ctx, read_timeout_s=READ_TIMEOUT_S, wording=EMBED_WORDING
        )
        try:
            envelope = msgspec.json.decode(response.content, type=_Envelope)
        except msgspec.DecodeError:
            raise unreadable(SERVICE, "something that is not an embeddings result") from None
        if envelope.result is None or not envelope.success:
            raise unreadable(SERVICE, "an envelope without a result")
        return _vectors(envelope.result, len(texts))


class WorkersAIBindingEmbedder(_Rung):
    """``Embedder`` on the Worker's ``AI`` binding: no key, billed to the Worker's account."""

    requires = ("AI",)
    """The binding's name in wrangler.toml."""

    def __init__(self, ai: AiBinding | None) -> None:
        self._ai = ai
        self.enabled = ai is not None

    async def embed(self, texts: list[str], ctx: Ctx) -> Sequence[Sequence[float]]:
        if self._ai is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "The Worker has no AI binding.",
                hint='Tell the user to add the AI binding to wrangler.toml ([ai] binding = "AI") and deploy '
                "again; do not retry until then.",
            )
        ctx.check()
        try:
            answer: Any = await self._ai.run(WORKERS_AI_MODEL, {"text": texts, "pooling": POOLING})
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  the binding raises JS errors as plain exceptions
            raise RungError(
                ErrorCode.UPSTREAM,
                f"Workers AI failed: {type(exc).__name__}.",
                hint=EMBED_WORDING.upstream_hint,
                retryable=True,
            ) from None
        if hasattr(answer, "to_py"):  # a JS object that was not converted
            answer = answer.to_py()
        try:
            output = msgspec.convert(answer, type=_Output)
        except (msgspec.ValidationError, TypeError):
            raise unreadable(SERVICE, "something that is not an embeddings result") from None
        return _vectors(output, len(texts))
