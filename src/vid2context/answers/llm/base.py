"""What a language-model rung must offer, and the shapes it takes and gives.

A ``LanguageModel`` answers a conversation (``models.ChatMessage``: system, user and assistant
turns) with text, two ways: ``complete`` waits for the whole answer, ``stream`` yields it as it
comes (``Delta``: a piece of text, or of the model's reasoning when it shows it), the last item
carrying the whole ``Completion`` (text, model, finish reason, usage). A rung that cannot stream
natively (``streams = False``) yields its answer as one delta. The runtime holds the rungs
(``runtime.llm``, built by ``rungs.py``); ``ladder.plan_llm`` orders them by a policy for one
request, and ``ladder.complete``/``ladder.stream`` walk them through ``pipeline.run_rung``.

Rungs, one module each::

    groq.py            Groq through its SDK (locally)                              tier free
    openai_compat.py   any OpenAI-compatible /chat/completions (httpx); also Groq    local/keyless/paid
                       on the Worker, where the groq SDK is not installed
    workers_ai.py      Workers AI: the REST API (httpx) or the Worker's AI binding   tier free
    sampling.py        the MCP client's own model (sampling), inside an MCP call     tier caller

Tiers (``LLM_TIERS``): ``local`` runs on this machine or its network (an Ollama server on
127.0.0.1); ``caller`` is the calling MCP client's model (the server sends nothing anywhere the
answer would not go anyway); ``free`` needs a free account key; ``keyless`` needs none (a public
endpoint); ``paid`` bills the key's owner.

Errors: every failure is a ``VidError``. Hosted rungs map HTTP statuses with the speech-to-text
rungs' table (``providers.speech.status_error`` with ``LLM_WORDING``): 401/403 ``auth`` naming the
variable that holds the key, 429 ``rate-limited`` with ``Retry-After``, 5xx ``upstream``, both
retryable (``chunking.retrying`` tries them again with ``LlmPlan``), then the next rung.
Portable: no filesystem, no threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import msgspec

from ...ctx import Ctx
from ...errors import ErrorCode
from ...models import ChatMessage, Usage
from ...providers.speech import RungError, Wording

__all__ = [
    "LLM_TIERS",
    "LLM_WORDING",
    "Completion",
    "Delta",
    "LanguageModel",
    "LlmOptions",
    "LlmPlan",
    "LlmTier",
    "WireUsage",
    "one_delta",
    "output_budget",
    "unreadable",
    "usage_of",
]

LlmTier = Literal["local", "caller", "free", "keyless", "paid"]
LLM_TIERS: tuple[LlmTier, ...] = ("local", "caller", "free", "keyless", "paid")

LLM_WORDING = Wording(
    capability="language-model",
    too_large="a prompt",
    too_large_hint="Tell the user the request was too large for the model's service (lower "
    "VID2CONTEXT_LLM_CONTEXT_TOKENS for an OpenAI-compatible server); do not retry until then.",
    timeout_hint="Repeat the call once (long work is sent in parts, each with its own time limit); if it "
    "runs out of time again, tell the user, and do not retry.",
    upstream_hint="Repeat the call once in a minute (the next language-model rung, when one is set up, is "
    "tried first); if it fails again, tell the user the service failed, and do not retry.",
)
"""How the hosted rungs' HTTP errors name language models (``providers.speech.status_error``)."""


class LlmOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How to answer: at most ``max_tokens`` (``None``: the rung's ``max_output_tokens``), at
    ``temperature`` (``None``: the service's default), stopping before any of ``stop``."""

    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()


class Completion(msgspec.Struct, frozen=True, kw_only=True):
    """A whole answer."""

    text: str
    model: str
    """The model that answered, as the service named it (a sampling client names its own)."""
    rung: str
    """The rung that answered (``llm/groq/llama-3.3-70b-versatile``)."""
    finish_reason: str | None = None
    """``stop`` (the model ended its answer), ``length`` (``max_tokens`` cut it), or the
    service's own word; ``None`` when it did not say."""
    usage: Usage | None = None
    reasoning: str = ""
    """The model's reasoning, when the service shows it apart from the answer."""


class Delta(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of a streamed answer; the last one carries the whole ``Completion`` in ``done``."""

    text: str = ""
    reasoning: str = ""
    done: Completion | None = None


@runtime_checkable
class LanguageModel(Protocol):
    id: str
    """``llm/<service>/<model>``, e.g. ``llm/groq/llama-3.3-70b-versatile``; the attempt id."""
    service: str
    """Who runs the model: ``groq``, ``cloudflare``, ``openai``, ``self-hosted``, ``mcp-sampling``."""
    model: str
    tier: LlmTier
    requires: tuple[str, ...]
    """Environment variables (or bindings) this rung needs, by name (never their values)."""
    enabled: bool
    """Set up: credentials present (keyless rungs: allowed), or a client that can sample."""
    provider: str
    """The health entry this rung is listed under (``llm-groq``, ``llm-workers-ai``)."""
    name: str
    """Human name of that entry."""
    context_tokens: int
    """The model's context window: prompt and answer together."""
    max_output_tokens: int
    """The most tokens one answer is asked for."""
    streams: bool
    """Whether ``stream`` streams natively (``False``: the whole answer comes as one delta)."""

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        """The whole answer to ``messages`` (at least one; the last is the user's).

        Raises ``VidError``: ``auth`` for a refused key, ``rate-limited`` and ``upstream``
        (``RungError`` with ``retryable`` set) for the service's own troubles, ``timeout``,
        ``too-large`` for a prompt over the service's limit, ``no-provider`` when the rung cannot
        run here (no binding, a client that cannot sample).
        """
        ...

    def stream(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> AsyncIterator[Delta]:
        """The answer as it comes: deltas of text (and reasoning), then one with ``done`` set.

        Raises as ``complete`` does: before the first delta for a refused request, after it for
        a stream that broke (``upstream``, not retryable: what was said cannot be unsaid).
        """
        ...


@dataclass
class LlmPlan:
    """How rungs are called: retries (the fields ``chunking.retrying`` reads), and how many
    requests of work in parts (a translation's batches) are in flight at once."""

    concurrency: int = 2
    retries: int = 3
    """Further tries of one request after a retryable failure (429, 5xx, no answer)."""
    backoff_s: float = 1.0
    """First wait without a ``Retry-After``; doubled each time, with jitter."""
    backoff_cap_s: float = 30.0
    max_wait_s: float = 60.0
    """A ``Retry-After`` longer than this fails the rung (the next one is tried) instead of waiting."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """Replaced in tests, which then see every wait without waiting."""


class WireUsage(msgspec.Struct):
    """``usage`` as OpenAI's API and Workers AI both answer it (other fields are ignored)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


def usage_of(raw: WireUsage | None) -> Usage | None:
    """Our ``Usage`` from the wire's; a missing total is the sum."""
    if raw is None:
        return None
    total = raw.total_tokens or raw.prompt_tokens + raw.completion_tokens
    return Usage(prompt_tokens=raw.prompt_tokens, completion_tokens=raw.completion_tokens, total_tokens=total)


def output_budget(rung: LanguageModel, options: LlmOptions) -> int:
    """The ``max_tokens`` to send: the caller's, never above what the rung allows."""
    wanted = options.max_tokens or rung.max_output_tokens
    return max(1, min(wanted, rung.max_output_tokens))


def unreadable(service: str, what: str) -> RungError:
    """The error for an answer that is not what the service documents."""
    return RungError(ErrorCode.UPSTREAM, f"{service} answered {what}.", hint=LLM_WORDING.upstream_hint)


async def one_delta(completion: Awaitable[Completion]) -> AsyncIterator[Delta]:
    """``stream`` for a rung that cannot stream: the whole answer as one delta, then done."""
    whole = await completion
    if whole.reasoning:
        yield Delta(reasoning=whole.reasoning)
    yield Delta(text=whole.text)
    yield Delta(done=whole)
