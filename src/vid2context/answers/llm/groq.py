"""Groq's hosted ``llama-3.3-70b-versatile``, through the ``groq`` SDK.

Enabled when ``GROQ_API_KEY`` is set; ``GROQ_BASE_URL`` (the SDK's own variable, read once by our
settings) points it elsewhere, which is how the tests reach their stand-in. The SDK's own retries
are off: the ladder retries 429 and 5xx itself, honouring ``Retry-After``.

Groq's chat API is OpenAI's (``/openai/v1/chat/completions``), so the SDK is used for the request
and its errors only, and the answer is read raw with the OpenAI-compatible rung's parser
(``openai_compat.read_chat_stream``), as the Whisper rung reads its raw ``verbose_json``: one
reader for one wire format, whichever client sent the request. A stream's usage comes in the last
chunk's ``x_groq.usage`` (and in ``usage`` with ``stream_options.include_usage``).

The model, from Groq's documentation (console.groq.com/docs/models): ``llama-3.3-70b-versatile``,
Meta's Llama 3.3 70B, with a 131,072-token context window; answers are asked for at most 8,192
tokens. Where the SDK is not installed (the Worker), ``rungs.py`` builds the same rung (same id)
from ``OpenAICompatibleLlm`` against Groq's OpenAI-compatible path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from ...ctx import Ctx
from ...models import ChatMessage
from ...providers.speech import RungError, response_error, transport_error
from ...providers.whisper_groq import DEFAULT_BASE_URL
from ...providers.whisper_openai import request_timeout
from .base import LLM_WORDING, Completion, Delta, LlmOptions, LlmTier, output_budget
from .openai_compat import READ_TIMEOUT_S, broken, chat_body, completion_of, read_chat_stream
from .sse import lines_of

__all__ = ["CONTEXT_TOKENS", "GROQ_LLM_MODEL", "MAX_OUTPUT_TOKENS", "GroqLlm"]

GROQ_LLM_MODEL = "llama-3.3-70b-versatile"
CONTEXT_TOKENS = 131_072
MAX_OUTPUT_TOKENS = 8192
REQUIRES = ("GROQ_API_KEY",)
SERVICE = "Groq"


class GroqLlm:
    """``LanguageModel`` on Groq, through ``groq.AsyncGroq``."""

    service = "groq"
    provider = "llm-groq"
    name = "Groq language model"
    tier: LlmTier = "free"
    requires = REQUIRES
    streams = True
    context_tokens = CONTEXT_TOKENS
    max_output_tokens = MAX_OUTPUT_TOKENS

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        model: str = GROQ_LLM_MODEL,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.id = f"llm/groq/{model}"
        self.enabled = bool(api_key)
        self._api_key = api_key
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._http = http
        self._sdk: Any = None

    def _client(self) -> Any:
        if self._sdk is None:
            import groq  # the `local` extra; imported when first used

            self._sdk = groq.AsyncGroq(
                api_key=self._api_key or "", base_url=self._base_url, max_retries=0, http_client=self._http
            )
        return self._sdk

    def _request(
        self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions, *, stream: bool
    ) -> dict[str, Any]:
        body = chat_body(self.model, messages, options, output_budget(self, options), stream=stream)
        request = {**body, "timeout": request_timeout(ctx, READ_TIMEOUT_S)}
        if "stream_options" in request:  # the API takes it; this SDK has no parameter for it
            request["extra_body"] = {"stream_options": request.pop("stream_options")}
        return request

    def _failure(self, exc: Exception) -> RungError:
        import groq

        if isinstance(exc, groq.APIStatusError):
            return response_error(SERVICE, exc.response, requires=REQUIRES, wording=LLM_WORDING)
        timeout = isinstance(exc, groq.APITimeoutError)
        return transport_error(SERVICE, exc, timeout=timeout, wording=LLM_WORDING)

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        import groq

        ctx.check()
        try:
            raw = await self._client().chat.completions.with_raw_response.create(
                **self._request(messages, ctx, options, stream=False)
            )
        except (groq.APIStatusError, groq.APIConnectionError) as exc:
            raise self._failure(exc) from None
        return completion_of(self, raw.http_response.content)

    async def stream(
        self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions
    ) -> AsyncIterator[Delta]:
        import groq

        ctx.check()
        request = self._request(messages, ctx, options, stream=True)
        try:
            opened = self._client().chat.completions.with_streaming_response.create(**request)
            response = await opened.__aenter__()
        except (groq.APIStatusError, groq.APIConnectionError) as exc:
            raise self._failure(exc) from None
        try:
            async for delta in read_chat_stream(self, lines_of(response.iter_bytes()), ctx):
                yield delta
        except (groq.APIError, httpx.HTTPError) as exc:
            raise broken(SERVICE, type(exc).__name__) from None
        finally:
            await opened.__aexit__(None, None, None)
