"""What an embedding rung must offer, and the one runner every rung's work goes through.

An ``Embedder`` turns a batch of texts into one vector each. The runtime holds the rungs in ladder
order (``runtime.embed``, built by ``rungs.py``); ``ladder.pick_embedder`` chooses the rungs whose
model a library was indexed with, and ``ladder.embed_texts`` walks them. A rung only ever sees a
batch of at most ``max_batch`` non-blank texts: ``embed_batches`` below cuts the input to that
size, retries what may be retried (429 with ``Retry-After``, 5xx, no answer: ``chunking.retrying``,
the speech-to-text rungs' own loop), splits a batch the service refused as too large (413) in two,
and checks every answer before anyone sees it: one vector per text, each of the rung's dimension,
finite and not all zero. It also scales each vector to unit length, so that every vector this
package hands out can be compared by a plain dot product, whoever made it.

Rungs, one module each::

    fastembed_local.py   fastembed (ONNX Runtime) on this machine (local only)   tier local
    workers_ai.py        Workers AI bge-small: REST API (httpx) or the AI binding  tier free
    openai_compat.py     any OpenAI-compatible /embeddings endpoint (httpx)      tier keyless/paid

A vector's identity is its ``EmbeddingSpace`` (``models.py``): the model it belongs to
(``model_id``), its dimension (``dim``) and how the model's token vectors were pooled
(``pooling``). Equal spaces, comparable vectors; anything else never mixes.

Errors: every failure is a ``VidError``; hosted rungs raise ``providers.speech.RungError`` with
``retryable`` set, mapped from HTTP statuses by the speech-to-text rungs' table
(``status_error`` with ``EMBED_WORDING``). Portable: no filesystem, no threads.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ...chunking import retrying
from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...models import Embeddings, EmbeddingSpace, Pooling
from ...providers.speech import RungError, Tier, Wording

__all__ = [
    "EMBED_WORDING",
    "MAX_TEXT_CHARS",
    "EmbedPlan",
    "Embedder",
    "check_texts",
    "embed_batches",
    "space_of",
    "unreadable",
]

EMBED_WORDING = Wording(
    capability="embedding",
    too_large="a batch of texts",
    too_large_hint="A single text this large is over the service's cap (batches are split and sent again "
    "already); tell the user, and do not retry.",
    timeout_hint="Repeat the call once (texts are sent in batches, each with its own time limit); if it "
    "runs out of time again, tell the user, and do not retry.",
    upstream_hint="Repeat the call once in a minute (the next embedding rung, when one is set up, is tried "
    "first); if it fails again, tell the user the service failed, and do not retry.",
)
"""How the hosted rungs' HTTP errors name embeddings (``providers.speech.status_error``)."""

MAX_TEXT_CHARS = 100_000
"""The longest text accepted (models read 512 tokens, about 2,000 characters, and cut the rest):
anything longer is a caller's mistake, refused before it is sent anywhere."""


@runtime_checkable
class Embedder(Protocol):
    id: str
    """``embed/<service>/<model>``, e.g. ``embed/fastembed/BAAI/bge-small-en-v1.5``; the attempt
    id and the ``producer`` of what it makes."""
    service: str
    """Who runs the model: ``fastembed``, ``cloudflare``, ``openai``, ``self-hosted``."""
    model: str
    """The model as that service names it (``@cf/baai/bge-small-en-v1.5``)."""
    tier: Tier
    requires: tuple[str, ...]
    """Environment variables this rung needs, by name (never their values)."""
    enabled: bool
    """Installed and set up (credentials present; for ``keyless`` rungs, keyless rungs allowed)."""
    provider: str
    """The health entry this rung is listed under (``embed-local``, ``embed-workers-ai``)."""
    name: str
    """Human name of that entry."""
    max_batch: int
    """The most texts one ``embed`` call carries (Workers AI takes 100)."""
    model_id: str
    """The model the vectors belong to, whoever runs it: ``EmbeddingSpace.model``."""
    dim: int | None
    """Their dimension; ``None`` until the first answer tells (an OpenAI-compatible endpoint
    without ``VID2CONTEXT_EMBED_DIM``)."""
    pooling: Pooling

    async def embed(self, texts: list[str], ctx: Ctx) -> Sequence[Sequence[float]]:
        """One vector per text, in the texts' order (``1 <= len(texts) <= max_batch``, none blank).

        Raises ``VidError``: ``auth`` for a refused key, ``rate-limited`` and ``upstream``
        (``RungError`` with ``retryable`` set) for the service's own troubles, ``too-large`` when
        the service refused the batch for its size, ``timeout``, ``no-provider`` when the model
        cannot be loaded. Vectors need not be normalised; ``embed_batches`` checks and scales them.
        """
        ...


def space_of(rung: Embedder) -> EmbeddingSpace | None:
    """The space of ``rung``'s vectors; ``None`` while its dimension is unknown."""
    if rung.dim is None:
        return None
    return EmbeddingSpace(model=rung.model_id, dim=rung.dim, pooling=rung.pooling)


@dataclass
class EmbedPlan:
    """How rungs are fed: batch size and retries (the fields ``chunking.retrying`` reads)."""

    batch: int = 0
    """Most texts per call below a rung's own ``max_batch``; 0: the rung's."""
    retries: int = 4
    """Further tries of one batch after a retryable failure."""
    backoff_s: float = 1.0
    """First wait without a ``Retry-After``; doubled each time, with jitter."""
    backoff_cap_s: float = 30.0
    max_wait_s: float = 120.0
    """A ``Retry-After`` longer than this fails the rung (the next one is tried) instead of waiting."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """Replaced in tests, which then see every wait without waiting."""


def unreadable(service: str, what: str) -> RungError:
    """The error for an answer that is not what the service documents."""
    return RungError(
        ErrorCode.UPSTREAM,
        f"{service} answered {what}.",
        hint=EMBED_WORDING.upstream_hint,
    )


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or ``bad-request``/``too-large`` for what no rung should be sent."""
    if not texts:
        raise VidError(ErrorCode.BAD_REQUEST, "There is nothing to embed.", hint="Pass at least one text.")
    checked: list[str] = []
    for index, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"Text {index} is blank, and a blank text has no meaning to embed.",
                hint="Leave blank texts out.",
            )
        if len(text) > MAX_TEXT_CHARS:
            raise VidError(
                ErrorCode.TOO_LARGE,
                f"Text {index} is {len(text):,} characters, over the {MAX_TEXT_CHARS:,} one text may have.",
                hint="Split the text into windows of a transcript (about 250 words each); a whole transcript is "
                "too long to embed as one text.",
            )
        checked.append(text)
    return checked


def _unit(rung: Embedder, vector: Any, expected: int) -> list[float]:
    """``vector`` checked against the rung's dimension and scaled to unit length."""
    if hasattr(vector, "tolist"):  # a numpy row (fastembed)
        vector = vector.tolist()
    if not isinstance(vector, list | tuple):
        raise unreadable(rung.service, "something that is not a list of numbers")
    if len(vector) != expected:
        raise RungError(
            ErrorCode.UPSTREAM,
            f"{rung.id} answered a {len(vector)}-dimensional vector where its vectors have {expected}.",
            hint="Check that the endpoint serves the model it is set to (VID2CONTEXT_EMBED_MODEL_ID), "
            "and VID2CONTEXT_EMBED_DIM when it is set.",
        )
    try:
        norm = math.hypot(*vector)  # one pass in C: this runs for every vector of every batch
    except (TypeError, ValueError):
        raise unreadable(rung.service, "a vector with something other than numbers in it") from None
    if not math.isfinite(norm) or norm == 0.0:
        raise unreadable(rung.service, "a vector that is all zeros or not finite")
    return [x / norm for x in vector]


def _checked(rung: Embedder, count: int, vectors: Sequence[Any]) -> list[list[float]]:
    if not isinstance(vectors, Sequence) and not hasattr(vectors, "tolist"):
        raise unreadable(rung.service, "something that is not a list of vectors")
    rows = list(vectors)
    if len(rows) != count:
        raise unreadable(rung.service, f"{len(rows)} vectors for {count} texts")
    expected = rung.dim
    if expected is None:  # a rung must know its dimension once it has answered
        raise unreadable(rung.service, "vectors without saying their dimension")
    return [_unit(rung, row, expected) for row in rows]


async def _batch(rung: Embedder, texts: list[str], ctx: Ctx, plan: EmbedPlan) -> list[list[float]]:
    ctx.check()
    try:
        vectors = await retrying(lambda: rung.embed(texts, ctx), ctx, plan)
    except VidError as error:
        if error.code is not ErrorCode.TOO_LARGE or len(texts) == 1:
            raise
        half = len(texts) // 2
        return [*await _batch(rung, texts[:half], ctx, plan), *await _batch(rung, texts[half:], ctx, plan)]
    return _checked(rung, len(texts), vectors)


async def embed_batches(rung: Embedder, texts: Sequence[str], ctx: Ctx, plan: EmbedPlan) -> Embeddings:
    """``texts`` through ``rung``, in batches: unit vectors in the texts' order, with their space.

    ``bad-request`` for no texts or a blank one and ``too-large`` for a text over
    ``MAX_TEXT_CHARS``, before anything is sent; then the rung's own errors.
    """
    checked = check_texts(texts)
    size = max(1, min(rung.max_batch, plan.batch or rung.max_batch))
    vectors: list[list[float]] = []
    total = len(checked)
    for start in range(0, total, size):
        vectors.extend(await _batch(rung, checked[start : start + size], ctx, plan))
        if total > size:
            ctx.progress("embed", len(vectors) / total, f"{rung.id}: {len(vectors)} of {total} texts")
    space = space_of(rung)
    assert space is not None  # _checked refused an answer without a dimension
    return Embeddings(space=space, vectors=vectors, producer=rung.id)
