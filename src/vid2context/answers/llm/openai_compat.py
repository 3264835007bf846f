"""Any OpenAI-compatible ``/chat/completions`` endpoint, over plain httpx.

OpenAI itself, and the servers that copy its API: Ollama (``http://127.0.0.1:11434/v1``),
llama.cpp's server, vLLM, LM Studio, most hosted services, and Groq's ``/openai/v1`` (which is how
the Worker reaches Groq: its bundle has no groq SDK). Settings:

- ``VID2CONTEXT_LLM_URL``: the API base (``/chat/completions`` is added) or the full URL ending in
  ``/chat/completions``. Unset, with a key set, it is OpenAI's.
- ``VID2CONTEXT_LLM_MODEL``: the model name sent (default ``gpt-4o-mini``).
- ``VID2CONTEXT_LLM_KEY``: sent as ``Authorization: Bearer``.
- ``VID2CONTEXT_LLM_CONTEXT_TOKENS``: the model's context window (default 8192, a common
  Ollama setting); what one request may carry.

The tier follows from where the endpoint is: an address or name on this machine or its network
(``addresses.host_class``: loopback, private, link-local, a single-label or ``.lan`` name) is
``local``, anything else ``paid`` with a key and ``keyless`` without.

Wire protocol, as OpenAI documents it: ``POST {"model", "messages": [{role, content}],
"max_tokens", "temperature"?, "stop"?}`` answers ``{"model", "choices": [{"message": {"content"},
"finish_reason"}], "usage": {prompt_tokens, completion_tokens, total_tokens}}``. With ``"stream":
true`` and ``"stream_options": {"include_usage": true}`` it answers server-sent events, each
``data: {"choices": [{"delta": {"content"}, "finish_reason"}], "model"}``, then a chunk with empty
``choices`` and the ``usage``, then ``data: [DONE]``. Reasoning models put their reasoning in
``reasoning_content`` (DeepSeek, vLLM, llama.cpp) or ``reasoning`` (Groq, Ollama) beside
``content``; both are read. Groq also reports a stream's usage in ``x_groq.usage``. An error in
the middle of a stream comes as ``data: {"error": {...}}``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from ...addresses import AddressClass, host_class
from ...ctx import Ctx
from ...errors import ErrorCode
from ...models import ChatMessage, Usage
from ...providers.speech import RungError, response_error, transport_error
from ...providers.whisper_openai import request_timeout, service_name
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
from .sse import DONE, events, lines_of

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_URL",
    "ChatAnswer",
    "OpenAICompatibleLlm",
    "broken",
    "chat_body",
    "completion_of",
    "endpoint_url",
    "is_local",
    "read_chat_stream",
]

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_CONTEXT_TOKENS = 8192
MAX_OUTPUT_TOKENS = 4096
READ_TIMEOUT_S = 300.0
"""A CPU-only server writes a few tokens a second: a long answer may take minutes."""

_LOCAL = {
    AddressClass.LOOPBACK,
    AddressClass.PRIVATE,
    AddressClass.LINK_LOCAL,
    AddressClass.SHARED,
    AddressClass.UNSPECIFIED,
    AddressClass.LOCAL_NAME,
}


def endpoint_url(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def is_local(url: str) -> bool:
    """Whether ``url`` names this machine or its network (no DNS is asked)."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return bool(host) and host_class(host) in _LOCAL


# --- the wire shapes -------------------------------------------------------------------------------


class _Message(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None


class _XGroq(msgspec.Struct):
    usage: WireUsage | None = None


class _Error(msgspec.Struct):
    message: str = ""


class ChatAnswer(msgspec.Struct):
    """A chat completion, or one chunk of a streamed one, as far as we read it."""

    choices: list[_Choice] = []
    model: str | None = None
    usage: WireUsage | None = None
    x_groq: _XGroq | None = None
    error: _Error | str | None = None


_decode = msgspec.json.Decoder(ChatAnswer).decode


def _reasoning(message: _Message) -> str:
    return message.reasoning_content or message.reasoning or ""


def completion_of(rung: Any, body: bytes) -> Completion:
    """The ``Completion`` in a chat completion's JSON ``body`` (module docstring)."""
    try:
        answer = _decode(body)
    except msgspec.DecodeError:
        raise unreadable(rung.service, "something that is not a chat completion") from None
    choice = answer.choices[0] if answer.choices else None
    if choice is None or choice.message is None:
        raise unreadable(rung.service, "a chat completion without a message")
    return Completion(
        text=choice.message.content or "",
        model=answer.model or rung.model,
        rung=rung.id,
        finish_reason=choice.finish_reason,
        usage=usage_of(answer.usage) or (usage_of(answer.x_groq.usage) if answer.x_groq else None),
        reasoning=_reasoning(choice.message),
    )


def chat_body(
    model: str, messages: Sequence[ChatMessage], options: LlmOptions, max_tokens: int, *, stream: bool
) -> dict[str, Any]:
    """The request body OpenAI documents (and Groq takes), from our shapes."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "max_tokens": max_tokens,
    }
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop:
        body["stop"] = list(options.stop[:4])  # OpenAI takes up to four
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class OpenAICompatibleLlm:
    """``LanguageModel`` for an OpenAI-compatible chat completions endpoint."""

    provider = "llm-openai-compatible"
    name = "OpenAI-compatible language model"
    streams = True

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        url: str | None,
        model: str | None = None,
        key: str | None = None,
        keyless_allowed: bool = True,
        context_tokens: int | None = None,
        max_output_tokens: int = MAX_OUTPUT_TOKENS,
        service: str | None = None,
        tier: LlmTier | None = None,
        requires: tuple[str, ...] | None = None,
        key_setting: str = "VID2CONTEXT_LLM_KEY",
        provider: str | None = None,
        name: str | None = None,
    ) -> None:
        self._http = http
        self._url = endpoint_url(url or DEFAULT_URL)
        self._key = key
        self.key_setting = key_setting
        """The setting that holds the key: what a refused key's hint tells the user to fix."""
        self.model = model or DEFAULT_MODEL
        self.service = service or service_name(self._url)
        self.id = f"llm/{self.service}/{self.model}"
        self.tier: LlmTier = tier or ("local" if is_local(self._url) else "paid" if key else "keyless")
        if requires is None:
            requires = ("VID2CONTEXT_LLM_URL",) if url or not key else ("VID2CONTEXT_LLM_KEY",)
        self.requires = requires
        self.enabled = bool(url or key) and (self.tier != "keyless" or keyless_allowed)
        self.context_tokens = context_tokens or DEFAULT_CONTEXT_TOKENS
        self.max_output_tokens = max(1, min(max_output_tokens, self.context_tokens // 2))
        if provider:
            self.provider = provider
        if name:
            self.name = name

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _refused(self, response: httpx.Response) -> RungError:
        return response_error(self.service, response, requires=(self.key_setting,), wording=LLM_WORDING)

    def _transport(self, exc: httpx.HTTPError) -> RungError:
        timeout = isinstance(exc, httpx.TimeoutException)
        return transport_error(self.service, exc, timeout=timeout, wording=LLM_WORDING)

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        body = chat_body(self.model, messages, options, output_budget(self, options), stream=False)
        ctx.check()
        try:
            response = await self._http.post(
                self._url, json=body, headers=self._headers(), timeout=request_timeout(ctx, READ_TIMEOUT_S)
            )
        except httpx.HTTPError as exc:
            raise self._transport(exc) from None
        if response.status_code != 200:
            raise self._refused(response)
        return completion_of(self, response.content)

    async def stream(
        self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions
    ) -> AsyncIterator[Delta]:
        body = chat_body(self.model, messages, options, output_budget(self, options), stream=True)
        ctx.check()
        request = self._http.build_request(
            "POST",
            self._url,
            json=body,
            headers=self._headers(),
            timeout=request_timeout(ctx, READ_TIMEOUT_S),
        )
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._transport(exc) from None
        try:
            if response.status_code != 200:
                await response.aread()
                raise self._refused(response)
            async for delta in read_chat_stream(self, lines_of(response.aiter_bytes()), ctx):
                yield delta
        except httpx.HTTPError as exc:
            raise broken(self.service, type(exc).__name__) from None
        finally:
            await response.aclose()


def broken(service: str, why: str) -> RungError:
    """A stream that stopped part-way: not retried, since its first words were already given."""
    return RungError(
        ErrorCode.UPSTREAM,
        f"{service} broke off its answer ({why}).",
        hint=LLM_WORDING.upstream_hint,
    )


async def read_chat_stream(rung: Any, lines: AsyncIterator[str], ctx: Ctx) -> AsyncIterator[Delta]:
    """OpenAI's chat completion chunks (module docstring) as deltas, then the ``done`` one."""
    text: list[str] = []
    reasoning: list[str] = []
    model = rung.model
    finish: str | None = None
    usage: Usage | None = None
    ended = False
    try:
        async for data in events(lines):
            ctx.check()
            if data == DONE:
                ended = True
                break
            try:
                chunk = _decode(data)
            except msgspec.DecodeError:
                raise unreadable(rung.service, "a stream chunk that is not a chat completion chunk") from None
            if chunk.error is not None:
                said = chunk.error if isinstance(chunk.error, str) else chunk.error.message
                raise broken(rung.service, " ".join(said.split())[:160] or "an error event")
            model = chunk.model or model
            usage = usage_of(chunk.usage) or (usage_of(chunk.x_groq.usage) if chunk.x_groq else None) or usage
            for choice in chunk.choices[:1]:
                delta = choice.delta or choice.message or _Message()
                finish = choice.finish_reason or finish
                piece, thought = delta.content or "", _reasoning(delta)
                if piece or thought:
                    text.append(piece)
                    reasoning.append(thought)
                    yield Delta(text=piece, reasoning=thought)
    except ValueError as exc:  # an event over the size any chunk has
        raise broken(rung.service, str(exc)) from None
    if finish is None and not ended:
        raise broken(rung.service, "the stream ended before the answer did")
    yield Delta(
        done=Completion(
            text="".join(text),
            model=model,
            rung=rung.id,
            finish_reason=finish,
            usage=usage,
            reasoning="".join(reasoning),
        )
    )
