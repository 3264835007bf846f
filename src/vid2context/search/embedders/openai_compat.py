"""Any OpenAI-compatible ``/embeddings`` endpoint, over plain httpx.

OpenAI itself, and the servers that copy its API: Ollama (``http://127.0.0.1:11434/v1``),
llama.cpp's server, vLLM, LM Studio, text-embeddings-inference, most hosted services. Settings:

- ``VID2CONTEXT_EMBED_URL``: the API base (``/embeddings`` is added) or the full URL ending in
  ``/embeddings``. Unset, with a key set, it is OpenAI's.
- ``VID2CONTEXT_EMBED_MODEL_ID``: the model name sent (default ``text-embedding-3-small``), which is
  also the vectors' model in their space.
- ``VID2CONTEXT_EMBED_KEY``: sent as ``Authorization: Bearer``. Without one the rung is ``keyless``.
- ``VID2CONTEXT_EMBED_DIM``: the vectors' dimension, when known; unset, the first answer tells,
  and every later answer must agree.

``POST {url} {"model": ..., "input": [texts]}`` answers ``{"data": [{"embedding": [...],
"index": i}, ...]}``; rows are put back in ``index`` order (the API does not promise the order).
The pooling is the server's business and it does not say which it used, so the space's pooling is
``server``: these vectors never share a space with a local model's, even of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import msgspec

from ...ctx import Ctx
from ...models import Pooling
from ...providers.speech import Tier, response_error, transport_error
from ...providers.whisper_openai import request_timeout, service_name
from .base import EMBED_WORDING, unreadable

__all__ = ["DEFAULT_MODEL", "DEFAULT_URL", "MAX_BATCH", "OpenAICompatibleEmbedder", "endpoint_url"]

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
MAX_BATCH = 64
"""Texts per request: OpenAI takes 2,048, but small self-hosted servers time out on large batches,
and 64 windows of 250 words are already well past what one request should carry."""
READ_TIMEOUT_S = 120.0
"""A CPU-only server embedding 64 windows can take a while; two minutes is one in trouble."""


def endpoint_url(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if url.endswith("/embeddings") else url + "/embeddings"


class _Row(msgspec.Struct):
    embedding: list[float]
    index: int


class _Answer(msgspec.Struct):
    data: list[_Row]


class OpenAICompatibleEmbedder:
    """``Embedder`` for an OpenAI-compatible embeddings endpoint."""

    provider = "embed-openai-compatible"
    name = "OpenAI-compatible embeddings"
    pooling: Pooling = "server"

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        url: str | None,
        model: str | None = None,
        key: str | None = None,
        dim: int | None = None,
        keyless_allowed: bool = True,
        max_batch: int = MAX_BATCH,
    ) -> None:
        self._http = http
        self._url = endpoint_url(url or DEFAULT_URL)
        self._key = key
        self.model = model or DEFAULT_MODEL
        self.model_id = self.model
        self.service = service_name(self._url)
        self.id = f"embed/{self.service}/{self.model}"
        self.tier: Tier = "paid" if key else "keyless"
        self.requires: tuple[str, ...] = (
            ("VID2CONTEXT_EMBED_URL",) if url or not key else ("VID2CONTEXT_EMBED_KEY",)
        )
        self.enabled = bool(url or key) and (self.tier != "keyless" or keyless_allowed)
        self.dim: int | None = dim or None
        self.max_batch = max(1, max_batch)

    async def embed(self, texts: list[str], ctx: Ctx) -> Sequence[Sequence[float]]:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        ctx.check()
        try:
            response = await self._http.post(
                self._url,
                json={"model": self.model, "input": texts},
                headers=headers,
                timeout=request_timeout(ctx, READ_TIMEOUT_S),
            )
        except httpx.TimeoutException as exc:
            raise transport_error(self.service, exc, timeout=True, wording=EMBED_WORDING) from None
        except httpx.HTTPError as exc:
            raise transport_error(self.service, exc, wording=EMBED_WORDING) from None
        if response.status_code != 200:
            raise response_error(
                self.service, response, requires=("VID2CONTEXT_EMBED_KEY",), wording=EMBED_WORDING
            )
        try:
            answer = msgspec.json.decode(response.content, type=_Answer)
        except msgspec.DecodeError:
            raise unreadable(self.service, "something that is not an OpenAI embeddings list") from None
        rows = sorted(answer.data, key=lambda row: row.index)
        if [row.index for row in rows] != list(range(len(texts))):
            raise unreadable(self.service, f"{len(rows)} vectors, not one for each of the {len(texts)} texts")
        if self.dim is None and rows and rows[0].embedding:
            self.dim = len(rows[0].embedding)  # learned once; embed_batches holds later answers to it
        return [row.embedding for row in rows]
