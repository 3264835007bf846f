"""Which embedding rung may embed for a library, and the walk down the ladder.

Vectors of different models never mix. A library indexed with one model (its ``EmbeddingSpace``)
can only be searched with query vectors of that model, so ``pick_embedder(runtime, indexed)``
keeps the enabled rungs of that space, in ladder order, and says why when there are none (the
vector side of search is then off, and keyword search answers alone)::

    no rung set up ......... no-provider  "No embedding rung is set up ..."
    none of that model ..... no-provider  "The library's vectors are <model> (...), and no rung here makes those"

``embed_texts`` walks the picked rungs through ``pipeline.run_rung`` (stage ``embed``), as the
speech-to-text ladder walks its own: a failing rung (rate limits past their retries, a server
down) hands over to the next rung of the same space, and every attempt is recorded, skipped ones
included. With no ``indexed`` space (nothing is indexed yet), every enabled rung qualifies and the
answer's ``space`` says which one made the vectors: that is the space to record beside them.

A rung whose dimension is not known before it answers (an OpenAI-compatible endpoint) fits on
model and pooling; its answer is then held to the space's dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...ctx import Ctx
from ...errors import ErrorCode, VidError, steps
from ...models import Attempt, Embeddings, EmbeddingSpace
from ...pipeline import combine_errors, run_rung
from ...runtime import Runtime
from .base import Embedder, check_texts, embed_batches, space_of

__all__ = ["Pick", "embed_texts", "pick_embedder"]

# The texts themselves are the problem, or the call is over: no other rung would do better.
_LADDER_STOPS = {ErrorCode.BAD_REQUEST, ErrorCode.CANCELED}


@dataclass
class Pick:
    """What ``pick_embedder`` found: the rungs that may embed for a space, or why none may."""

    space: EmbeddingSpace | None
    """The space asked for; ``None`` when any rung will do (nothing indexed yet)."""
    rungs: list[Embedder] = field(default_factory=list)
    """Enabled rungs of that space, in ladder order; empty when ``reason`` is set."""
    reason: VidError | None = None
    """Why the vector side is off (``no-provider``, with a hint), when no rung fits."""
    attempts: list[Attempt] = field(default_factory=list)
    """The rungs left out: not set up (``missing-key``) or of another model (``other-model``)."""

    @property
    def embedder(self) -> Embedder | None:
        """The first rung to try, or ``None``."""
        return self.rungs[0] if self.rungs else None


def _describe(space: EmbeddingSpace) -> str:
    return f"{space.model} ({space.pooling} pooling, {space.dim} dimensions)"


def _fits(rung: Embedder, space: EmbeddingSpace) -> bool:
    return (
        rung.model_id == space.model
        and rung.pooling == space.pooling
        and (rung.dim is None or rung.dim == space.dim)
    )


def _skipped(rung: Embedder, keyless_allowed: bool) -> Attempt:
    if rung.tier == "keyless" and not keyless_allowed:
        return Attempt(
            id=rung.id, stage="embed", outcome="skipped", reason="disabled", detail="VID2CONTEXT_KEYLESS=0"
        )
    detail = "set " + " and ".join(rung.requires) if rung.requires else "not set up"
    return Attempt(id=rung.id, stage="embed", outcome="skipped", reason="missing-key", detail=detail)


def _other_model(rung: Embedder) -> Attempt:
    space = space_of(rung)
    made = space.key if space is not None else f"{rung.model_id}|{rung.pooling}"
    return Attempt(id=rung.id, stage="embed", outcome="skipped", reason="other-model", detail=f"makes {made}")


def pick_embedder(runtime: Runtime, indexed: EmbeddingSpace | None = None) -> Pick:
    """The enabled rungs whose vectors are comparable with ``indexed`` (any enabled rung when
    ``None``), in ladder order; or the reason there are none. No I/O beyond a local model
    folder's one-time hash (``fastembed_local``)."""
    pick = Pick(space=indexed)
    enabled: list[Embedder] = []
    for rung in runtime.embed:
        if not rung.enabled:
            pick.attempts.append(_skipped(rung, runtime.settings.keyless))
        elif indexed is not None and not _fits(rung, indexed):
            enabled.append(rung)
            pick.attempts.append(_other_model(rung))
        else:
            enabled.append(rung)
            pick.rungs.append(rung)
    if pick.rungs:
        return pick
    if not enabled:
        pick.reason = VidError(
            ErrorCode.NO_PROVIDER,
            "No embedding rung is set up, so texts cannot be embedded (vector search is off).",
            hint=steps(
                "Install the local extra (fastembed), set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN or "
                "VID2CONTEXT_EMBED_URL, or bind AI on the Worker; {embed_rungs} lists every rung."
            ),
            attempts=pick.attempts,
        )
    else:
        assert indexed is not None
        first = space_of(enabled[0])
        instead = f" with {_describe(first)}" if first is not None else ""
        pick.reason = VidError(
            ErrorCode.NO_PROVIDER,
            f"The library's vectors are {_describe(indexed)}, and no embedding rung set up here makes those.",
            hint={
                surface: text + f"{instead}."
                for surface, text in steps(
                    "Set up a rung of that model ({embed_rungs} lists them), or index the library again"
                ).items()
            },
            attempts=pick.attempts,
        )
    return pick


async def _embed_in(
    runtime: Runtime, rung: Embedder, texts: list[str], ctx: Ctx, space: EmbeddingSpace | None
) -> Embeddings:
    made = await embed_batches(rung, texts, ctx, runtime.embed_plan)
    if space is not None and made.space != space:
        raise VidError(
            ErrorCode.UPSTREAM,
            f"{rung.id} made vectors of {_describe(made.space)}, and the library's are {_describe(space)}.",
            hint="Check VID2CONTEXT_EMBED_MODEL_ID and VID2CONTEXT_EMBED_DIM against what the endpoint serves.",
        )
    return made


async def embed_texts(
    runtime: Runtime,
    texts: Sequence[str],
    *,
    space: EmbeddingSpace | None = None,
    ctx: Ctx | None = None,
    attempts: list[Attempt] | None = None,
) -> Embeddings:
    """Unit vectors for ``texts`` (in their order) from the first rung of ``space`` that answers.

    Raises ``VidError``: ``bad-request``/``too-large`` for the texts themselves (nothing is sent),
    the ``Pick``'s reason when no rung fits, the rung's own code when one rung was tried (or all
    failed the same way), ``all-rungs-failed`` otherwise; ``attempts`` records every rung.
    """
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    attempts = [] if attempts is None else attempts
    checked = check_texts(texts)
    pick = pick_embedder(runtime, space)
    attempts.extend(pick.attempts)
    if pick.reason is not None:
        pick.reason.attempts = list(attempts)
        raise pick.reason
    errors: list[VidError] = []
    for rung in pick.rungs:
        try:
            return await run_rung(
                attempts, rung.id, "embed", lambda r=rung: _embed_in(runtime, r, checked, ctx, space)
            )
        except VidError as error:
            errors.append(error)
            if error.code in _LADDER_STOPS or ctx.remaining == 0:
                break
    raise combine_errors(errors, attempts)
