"""Reranking the best hits of a search with a cross-encoder: the rung protocol and the ladder walk.

A cross-encoder reads the query and a passage together and scores how well the passage answers
it, which is better than comparing two vectors made apart, and far slower: so only the top 20
hits of a search are reranked (``engine.RERANK_TOP``), and only when asked (``rerank=1``).

Rungs, in ladder order (cheapest and most private first)::

    rerank_local.py     fastembed TextCrossEncoder on this machine (local only)   tier local
    WorkersAIReranker   Workers AI @cf/baai/bge-reranker-base over REST (httpx)  tier free
    WorkersAIBindingReranker   the same model through the Worker's AI binding    tier free

Workers AI documents the model's input as ``{query, contexts: [{text}], top_k?}`` and its output as
``{response: [{id, score}]}``, ``id`` being the index of a context in the request (the REST API
wraps it as ``{"result": {...}, "success": true}``). A rung answers one score per text, in the
texts' order; only their order matters (the scales of two models differ).

``rerank_texts`` walks the enabled rungs through ``pipeline.run_rung`` (stage ``rerank``): a
failing rung hands over to the next. Portable: httpx and the binding only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from ..cloudflare_api import RestRung
from ..ctx import Ctx
from ..errors import ErrorCode, VidError, steps
from ..models import Attempt
from ..providers.speech import RungError, Tier, Wording
from ..providers.whisper_workers_ai import AiBinding

__all__ = [
    "RERANK_MODEL",
    "RERANK_WORDING",
    "Reranker",
    "WorkersAIBindingReranker",
    "WorkersAIReranker",
    "rerank_texts",
    "scores_from",
]

RERANK_MODEL = "@cf/baai/bge-reranker-base"
MAX_CONTEXTS = 100
READ_TIMEOUT_S = 30.0
REQUIRES = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN")
SERVICE = "Workers AI"
RERANK_WORDING = Wording(
    capability="reranking",
    too_large="the passages to rerank",
    too_large_hint="Search again without rerank, or with a lower limit.",
    timeout_hint="Repeat the call once, or search again without rerank.",
    upstream_hint="Search again without rerank; if you need the reranked order, repeat the call once in a "
    "minute, and if it fails again tell the user the service failed, and do not retry.",
)


@runtime_checkable
class Reranker(Protocol):
    id: str
    """``rerank/<service>/<model>``: the attempt id."""
    service: str
    model: str
    tier: Tier
    requires: tuple[str, ...]
    enabled: bool
    max_contexts: int

    async def rerank(self, query: str, texts: list[str], ctx: Ctx) -> list[float]:
        """One score per text (higher is better), in the texts' order; ``VidError`` on failure."""
        ...


def _unreadable(what: str) -> RungError:
    return RungError(ErrorCode.UPSTREAM, f"{SERVICE} answered {what}.", hint=RERANK_WORDING.upstream_hint)


class _Ranked(msgspec.Struct):
    id: int
    score: float


class _Output(msgspec.Struct):
    response: list[_Ranked]


class _Envelope(msgspec.Struct):
    result: _Output | None = None
    success: bool = True


def scores_from(ranked: Sequence[_Ranked], count: int) -> list[float]:
    """The documented ``[{id, score}]`` as one score per context, in order; a context the model
    left out scores below every other (``-inf``). Ids out of range or non-finite scores are
    refused as unreadable."""
    scores = [-math.inf] * count
    for item in ranked:
        if not 0 <= item.id < count or not math.isfinite(item.score):
            raise _unreadable(f"a score for context {item.id} of {count}")
        scores[item.id] = float(item.score)
    return scores


def _inputs(query: str, texts: list[str]) -> dict[str, Any]:
    return {"query": query, "contexts": [{"text": text} for text in texts], "top_k": len(texts)}


class _Rung:
    service = "cloudflare"
    model = RERANK_MODEL
    id = f"rerank/cloudflare/{RERANK_MODEL}"
    tier: Tier = "free"
    max_contexts = MAX_CONTEXTS


class WorkersAIReranker(RestRung, _Rung):
    """The cross-encoder on Workers AI over its REST API."""

    requires = REQUIRES

    async def rerank(self, query: str, texts: list[str], ctx: Ctx) -> list[float]:
        ctx.check()
        response = await self._run_model(
            _inputs(query, texts), ctx, read_timeout_s=READ_TIMEOUT_S, wording=RERANK_WORDING
        )
        try:
            envelope = msgspec.json.decode(response.content, type=_Envelope)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise _unreadable("something that is not a reranking result") from None
        if envelope.result is None or not envelope.success:
            raise _unreadable("an envelope without a result")
        return scores_from(envelope.result.response, len(texts))


class WorkersAIBindingReranker(_Rung):
    """The cross-encoder through the Worker's ``AI`` binding: no key."""

    requires = ("AI",)

    def __init__(self, ai: AiBinding | None) -> None:
        self._ai = ai
        self.enabled = ai is not None

    async def rerank(self, query: str, texts: list[str], ctx: Ctx) -> list[float]:
        if self._ai is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "The Worker has no AI binding.",
                hint="Search again without rerank, and tell the user to bind AI in wrangler.toml; do not retry.",
            )
        ctx.check()
        try:
            answer: Any = await self._ai.run(RERANK_MODEL, _inputs(query, texts))
        except VidError:
            raise
        except Exception as exc:  # noqa: BLE001  the binding raises JS errors as plain exceptions
            raise RungError(
                ErrorCode.UPSTREAM,
                f"Workers AI failed: {type(exc).__name__}.",
                hint=RERANK_WORDING.upstream_hint,
                retryable=True,
            ) from None
        if hasattr(answer, "to_py"):
            answer = answer.to_py()
        try:
            output = msgspec.convert(answer, type=_Output)
        except (msgspec.ValidationError, TypeError):
            raise _unreadable("something that is not a reranking result") from None
        return scores_from(output.response, len(texts))


def _skipped(rung: Reranker, keyless: bool) -> Attempt:
    if rung.tier == "keyless" and not keyless:
        return Attempt(
            id=rung.id, stage="rerank", outcome="skipped", reason="disabled", detail="VID2CONTEXT_KEYLESS=0"
        )
    detail = "set " + " and ".join(rung.requires) if rung.requires else "not set up"
    return Attempt(id=rung.id, stage="rerank", outcome="skipped", reason="missing-key", detail=detail)


def no_reranker(attempts: list[Attempt]) -> VidError:
    return VidError(
        ErrorCode.NO_PROVIDER,
        "No reranking rung is set up, so the hits keep their fused order.",
        hint=steps(
            "Install the local extra (fastembed's cross-encoder), set CLOUDFLARE_ACCOUNT_ID and "
            "CLOUDFLARE_API_TOKEN, or bind AI on the Worker; {rungs} lists every rung."
        ),
        attempts=attempts,
    )


async def rerank_texts(
    rungs: Sequence[Reranker],
    query: str,
    texts: list[str],
    ctx: Ctx,
    attempts: list[Attempt],
    *,
    keyless: bool = True,
) -> tuple[list[float], str]:
    """One score per text from the first enabled rung that answers, and that rung's id.

    ``no-provider`` when no rung is enabled; the rung's own error when one was tried; else
    ``all-rungs-failed``. Every rung is in ``attempts``, skipped ones included."""
    from ..pipeline import combine_errors, run_rung  # the runtime imports this module, and pipeline it

    ready = [rung for rung in rungs if rung.enabled]
    attempts.extend(_skipped(rung, keyless) for rung in rungs if not rung.enabled)
    if not ready:
        raise no_reranker(attempts)
    errors: list[VidError] = []
    for rung in ready:
        try:
            scores = await run_rung(
                attempts, rung.id, "rerank", lambda r=rung: r.rerank(query, texts[: r.max_contexts], ctx)
            )
        except VidError as error:
            errors.append(error)
            if ctx.remaining == 0:
                break
            continue
        if len(scores) != len(texts[: rung.max_contexts]):
            errors.append(_unreadable(f"{len(scores)} scores for {len(texts)} passages"))
            continue
        return [*scores, *([-math.inf] * (len(texts) - len(scores)))], rung.id
    raise combine_errors(errors, attempts)
