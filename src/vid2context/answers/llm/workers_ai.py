"""Workers AI's ``@cf/meta/llama-3.3-70b-instruct-fp8-fast``, two ways in: REST and the binding.

The model, as Cloudflare documents it (developers.cloudflare.com/workers-ai/models/
llama-3.3-70b-instruct-fp8-fast/): Meta's Llama 3.3 70B quantized to fp8, "optimized to be
faster", a 24,000-token context window, ``max_tokens`` defaulting to 256 (so it is always sent).
Input ``{"messages": [{role, content}], "max_tokens"?, "temperature"?, "stream"?}`` (no stop
sequences: ``complete`` cuts the text at the first one itself); output ``{"response": string,
"usage": {prompt_tokens, completion_tokens, total_tokens}}``, which the REST API wraps as
``{"result": {...}, "success": true, "errors": [], "messages": []}``. It does not say why it
stopped, so ``finish_reason`` is ``length`` when the answer used all of ``max_tokens`` and
``stop`` otherwise.

Streaming (developers.cloudflare.com/workers-ai/features/streaming/): with ``"stream": true`` the
REST API answers ``text/event-stream`` and the binding returns a ``ReadableStream`` of the same
bytes: ``data: {"response": "New"}`` ... (the last chunk may carry ``usage``) ... ``data: [DONE]``.
One reader (``read_response_stream``) serves both.

- ``WorkersAILlm``: the REST API over plain httpx, locally, with ``CLOUDFLARE_ACCOUNT_ID`` and
  ``CLOUDFLARE_API_TOKEN`` (``CLOUDFLARE_BASE_URL`` points it elsewhere, e.g. the tests' stand-in).
- ``WorkersAIBindingLlm``: the Worker's ``AI`` binding through ``storage/cloudflare.CloudflareAi``
  (``run`` for a whole answer, ``stream`` for the bytes of a streamed one); no key.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any, Protocol

import httpx
import msgspec

from ...cloudflare_api import RestRung
from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...models import ChatMessage, Usage
from ...providers.speech import RungError, response_error, transport_error
from ...providers.whisper_openai import request_timeout
from .base import (
    LLM_WORDING,
    Completion,
    Delta,
    LlmOptions,
    LlmTier,
    WireUsage,
    output_budget,
    unreadable,
    usage_of,
)
from .openai_compat import broken
from .sse import DONE, events, lines_of

__all__ = [
    "CONTEXT_TOKENS",
    "MAX_OUTPUT_TOKENS",
    "WORKERS_AI_LLM_MODEL",
    "AiStreamBinding",
    "WorkersAIBindingLlm",
    "WorkersAILlm",
    "read_response_stream",
]

WORKERS_AI_LLM_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
CONTEXT_TOKENS = 24_000
MAX_OUTPUT_TOKENS = 4096
REQUIRES = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN")
SERVICE = "Workers AI"
READ_TIMEOUT_S = 120.0


class _Output(msgspec.Struct):
    response: str | None = None
    usage: WireUsage | None = None


class _Envelope(msgspec.Struct):
    result: _Output | None = None
    success: bool = True


_decode_chunk = msgspec.json.Decoder(_Output).decode


def _inputs(
    messages: Sequence[ChatMessage], options: LlmOptions, max_tokens: int, *, stream: bool
) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "max_tokens": max_tokens,
    }
    if options.temperature is not None:
        inputs["temperature"] = options.temperature
    if stream:
        inputs["stream"] = True
    return inputs


def _finish(usage: Usage | None, max_tokens: int) -> str | None:
    if usage is None:
        return None
    return "length" if usage.completion_tokens >= max_tokens else "stop"


def _cut(text: str, stop: tuple[str, ...]) -> str:
    """``text`` up to the first stop sequence (the model takes none itself)."""
    ends = [text.find(s) for s in stop if s and s in text]
    return text[: min(ends)] if ends else text


def _completion(rung: Any, output: _Output, options: LlmOptions, max_tokens: int) -> Completion:
    if output.response is None:
        raise unreadable(SERVICE, "something without a response")
    usage = usage_of(output.usage)
    return Completion(
        text=_cut(output.response, options.stop),
        model=rung.model,
        rung=rung.id,
        finish_reason=_finish(usage, max_tokens),
        usage=usage,
    )


async def read_response_stream(
    rung: Any, lines: AsyncIterable[str], ctx: Ctx, max_tokens: int
) -> AsyncIterator[Delta]:
    """Workers AI's streamed ``{"response": ...}`` events as deltas, then the ``done`` one."""
    text: list[str] = []
    usage: Usage | None = None
    ended = False
    try:
        async for data in events(lines):
            ctx.check()
            if data == DONE:
                ended = True
                break
            try:
                chunk = _decode_chunk(data)
            except msgspec.DecodeError:
                raise unreadable(SERVICE, "a stream event that is not a text generation chunk") from None
            usage = usage_of(chunk.usage) or usage
            if chunk.response:
                text.append(chunk.response)
                yield Delta(text=chunk.response)
    except ValueError as exc:  # an event over the size any chunk has
        raise broken(SERVICE, str(exc)) from None
    if not ended:
        raise broken(SERVICE, "the stream ended before [DONE]")
    yield Delta(
        done=Completion(
            text="".join(text),
            model=rung.model,
            rung=rung.id,
            finish_reason=_finish(usage, max_tokens),
            usage=usage,
        )
    )


class _Rung:
    service = "cloudflare"
    model = WORKERS_AI_LLM_MODEL
    id = f"llm/cloudflare/{WORKERS_AI_LLM_MODEL}"
    provider = "llm-workers-ai"
    name = "Cloudflare Workers AI language model"
    tier: LlmTier = "free"
    streams = True
    context_tokens = CONTEXT_TOKENS
    max_output_tokens = MAX_OUTPUT_TOKENS


class WorkersAILlm(RestRung, _Rung):
    """``LanguageModel`` on Workers AI over its REST API (httpx; no SDK needed)."""

    requires = REQUIRES

    def _post(self, body: dict[str, Any], ctx: Ctx) -> httpx.Request:
        return self._http.build_request(
            "POST",
            self._url,
            json=body,
            headers=self._headers,
            timeout=request_timeout(ctx, READ_TIMEOUT_S),
        )

    def _failure(self, exc: httpx.HTTPError) -> RungError:
        timeout = isinstance(exc, httpx.TimeoutException)
        return transport_error(SERVICE, exc, timeout=timeout, wording=LLM_WORDING)

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        max_tokens = output_budget(self, options)
        ctx.check()
        try:
            response = await self._http.send(
                self._post(_inputs(messages, options, max_tokens, stream=False), ctx)
            )
        except httpx.HTTPError as exc:
            raise self._failure(exc) from None
        if response.status_code != 200:
            raise response_error(SERVICE, response, requires=REQUIRES, wording=LLM_WORDING)
        try:
            envelope = msgspec.json.decode(response.content, type=_Envelope)
        except msgspec.DecodeError:
            raise unreadable(SERVICE, "something that is not a text generation result") from None
        if envelope.result is None or not envelope.success:
            raise unreadable(SERVICE, "an envelope without a result")
        return _completion(self, envelope.result, options, max_tokens)

    async def stream(
        self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions
    ) -> AsyncIterator[Delta]:
        max_tokens = output_budget(self, options)
        ctx.check()
        request = self._post(_inputs(messages, options, max_tokens, stream=True), ctx)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._failure(exc) from None
        try:
            if response.status_code != 200:
                await response.aread()
                raise response_error(SERVICE, response, requires=REQUIRES, wording=LLM_WORDING)
            async for delta in read_response_stream(self, lines_of(response.aiter_bytes()), ctx, max_tokens):
                yield delta
        except httpx.HTTPError as exc:
            raise broken(SERVICE, type(exc).__name__) from None
        finally:
            await response.aclose()


class AiStreamBinding(Protocol):
    """The Worker's ``env.AI`` as ``storage/cloudflare.CloudflareAi`` hands it over."""

    async def run(self, model: str, inputs: dict[str, Any]) -> Any:
        """The model's answer, as plain Python."""
        ...

    def stream(self, model: str, inputs: dict[str, Any]) -> AsyncIterator[bytes]:
        """``run`` with ``stream: true``: the bytes of the ``ReadableStream`` it returns."""
        ...


def _no_binding() -> VidError:
    return VidError(
        ErrorCode.NO_PROVIDER,
        "The Worker has no AI binding.",
        hint='Tell the user to add the AI binding to wrangler.toml ([ai] binding = "AI") and deploy again, '
        "or to set GROQ_API_KEY; do not retry until then.",
    )


def _binding_failed(exc: Exception) -> RungError:
    return RungError(
        ErrorCode.UPSTREAM,
        f"Workers AI failed: {type(exc).__name__}.",
        hint=LLM_WORDING.upstream_hint,
        retryable=True,
    )


class WorkersAIBindingLlm(_Rung):
    """``LanguageModel`` on the Worker's ``AI`` binding: no key, billed to the Worker's account."""

    requires = ("AI",)
    """The binding's name in wrangler.toml."""

    def __init__(self, ai: AiStreamBinding | None) -> None:
        self._ai = ai
        self.enabled = ai is not None

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        if self._ai is None:
            raise _no_binding()
        max_tokens = output_budget(self, options)
        ctx.check()
        try:
            answer: Any = await self._ai.run(self.model, _inputs(messages, options, max_tokens, stream=False))
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  the binding raises JS errors as plain exceptions
            raise _binding_failed(exc) from None
        try:
            output = msgspec.convert(answer, type=_Output)
        except (msgspec.ValidationError, TypeError):
            raise unreadable(SERVICE, "something that is not a text generation result") from None
        return _completion(self, output, options, max_tokens)

    async def stream(
        self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions
    ) -> AsyncIterator[Delta]:
        if self._ai is None:
            raise _no_binding()
        max_tokens = output_budget(self, options)
        ctx.check()
        chunks = self._ai.stream(self.model, _inputs(messages, options, max_tokens, stream=True))
        started = False
        try:
            async for delta in read_response_stream(self, lines_of(chunks), ctx, max_tokens):
                started = True
                yield delta
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  a rejected run, or a stream that errored, as JS errors
            if started:
                raise broken(SERVICE, type(exc).__name__) from None
            raise _binding_failed(exc) from None
