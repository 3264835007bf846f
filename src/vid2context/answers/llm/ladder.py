"""Which language-model rungs answer a request, and the walk down them.

``plan_llm(runtime, choice, ctx)`` is what a request handler calls first. It reads the contract's
``model`` (``models.ModelChoice``: ``{rung, strict?}`` or ``{policy}``; ``None`` for the server's
``VID2CONTEXT_POLICY``) and answers an ``LlmPick``: the enabled rungs in the order they will be
tried, the rungs left out (each an ``Attempt``: not set up, keyless not allowed, no client model
here), and why there is none when there is none::

    both rung and policy ........... bad-request  "Give model as {rung, strict} or {policy} ..."
    an unknown policy .............. bad-request  lists the policies
    an unknown rung, strict ........ bad-request  lists every rung id
    an unknown rung, not strict .... the policy's ladder (an attempt says the rung is unknown)
    a known rung, strict ........... that rung alone; no-provider when it is not set up
    a known rung, not strict ....... that rung first, then the policy's ladder
    nothing set up ................. reason: no-provider, naming the variables to set

The rungs are ``runtime.llm`` plus the calling MCP client's model: in an MCP call
(``ctx.caller_model``) it takes its place in the policy's order, enabled or said to be missing;
elsewhere it is a disabled stand-in, known by id but tried only when asked for.

``complete`` and ``stream`` walk a pick: each rung through ``pipeline.run_rung`` (stage ``llm``),
its 429s and 5xx tried again after ``Retry-After`` (``chunking.retrying`` with ``runtime.llm_plan``),
then the next rung. A stream falls back only until its first delta: after that the words are out,
and a broken stream is the answer's error. ``call`` is one rung's request with those retries, for
work that walks the rungs itself (``answers/translate.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from ...chunking import retrying
from ...ctx import Ctx
from ...errors import ErrorCode, VidError, steps
from ...models import Attempt, ChatMessage, ModelChoice
from ...pipeline import combine_errors, run_rung
from ...runtime import Runtime
from .base import Completion, Delta, LanguageModel, LlmOptions, unreadable
from .rungs import POLICIES, ordered
from .sampling import SamplingLlm

__all__ = ["LlmPick", "call", "complete", "known_rungs", "plan_llm", "stream"]

log = logging.getLogger("vid2context.llm")

# The prompt itself is the problem, or the call is over: no other rung would do better.
_LADDER_STOPS = {ErrorCode.BAD_REQUEST, ErrorCode.CANCELED}


@dataclass
class LlmPick:
    """What ``plan_llm`` found: the rungs to try, in order, or why there are none."""

    policy: str
    rungs: list[LanguageModel] = field(default_factory=list)
    """Enabled rungs in the order they are tried; empty when ``reason`` is set."""
    attempts: list[Attempt] = field(default_factory=list)
    """The rungs left out, once each: add them to the answer's attempts."""
    reason: VidError | None = None
    """Why no rung can answer (``no-provider``, with a hint), when none can."""

    def require(self) -> list[LanguageModel]:
        """The rungs, or ``reason`` raised (with the attempts)."""
        if self.reason is not None:
            self.reason.attempts = list(self.attempts)
            raise self.reason
        return self.rungs


def known_rungs(runtime: Runtime, ctx: Ctx | None) -> list[LanguageModel]:
    """Every language-model rung of this call: the client's own model, then ``runtime.llm``."""
    caller = ctx.caller_model if ctx is not None and ctx.caller_model is not None else SamplingLlm()
    return [caller, *runtime.llm]


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:80] + "...")


def _skipped(rung: LanguageModel, keyless_allowed: bool) -> Attempt:
    if rung.tier == "keyless" and not keyless_allowed:
        return Attempt(
            id=rung.id, stage="llm", outcome="skipped", reason="disabled", detail="VID2CONTEXT_KEYLESS=0"
        )
    if not rung.requires:
        detail = getattr(rung, "unavailable", None) or "not set up"
        return Attempt(id=rung.id, stage="llm", outcome="skipped", reason="unavailable", detail=detail)
    detail = "set " + " and ".join(rung.requires)
    return Attempt(id=rung.id, stage="llm", outcome="skipped", reason="missing-key", detail=detail)


def _none_set_up(policy: str) -> VidError:
    if policy == "local-only":
        return VidError(
            ErrorCode.NO_PROVIDER,
            "No language model on this machine is set up, and the policy is local-only.",
            hint=steps(
                "Tell the user to set VID2CONTEXT_LLM_URL to a model server on this machine (Ollama: "
                "http://127.0.0.1:11434/v1), to use an MCP client that can sample, or to set VID2CONTEXT_POLICY "
                "to free ({llm_rungs} lists every rung); do not retry until then."
            ),
        )
    return VidError(
        ErrorCode.NO_PROVIDER,
        "No language-model rung is set up.",
        hint=steps(
            "Tell the user to set GROQ_API_KEY (free tier), CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN, or "
            "VID2CONTEXT_LLM_URL ({llm_rungs} lists every rung); do not retry until one is set."
        ),
    )


def _policy(runtime: Runtime, choice: ModelChoice | None) -> str:
    if choice is not None and choice.rung is not None and choice.policy is not None:
        raise _bad(
            "model names both a rung and a policy.",
            "Give model as {rung, strict} for one rung, or as {policy} for an order, not both.",
        )
    raw = choice.policy if choice is not None and choice.policy is not None else runtime.settings.policy
    policy = (raw or "free").strip().lower()
    if policy not in POLICIES:
        raise _bad(
            f"Unknown model policy {_shown(raw or '')}.",
            "Give model.policy as one of: " + ", ".join(POLICIES) + ".",
        )
    return policy


def _find(rungs: list[LanguageModel], wanted: str) -> LanguageModel | None:
    exact = next((rung for rung in rungs if rung.id == wanted), None)
    return exact or next((rung for rung in rungs if rung.id.lower() == wanted.strip().lower()), None)


def plan_llm(runtime: Runtime, choice: ModelChoice | None = None, ctx: Ctx | None = None) -> LlmPick:
    """The rungs that answer this request, in order (table in the module docstring). No I/O."""
    policy = _policy(runtime, choice)
    known = known_rungs(runtime, ctx)
    # Outside an MCP call there is no client model at all: it is tried (and said to be missing)
    # only when asked for by name.
    calling = ctx is not None and ctx.caller_model is not None
    ladder = ordered(known if calling else known[1:], policy)
    pick = LlmPick(policy=policy)
    wanted = choice.rung if choice is not None else None
    if wanted is not None:
        rung = _find(known, wanted)
        if rung is None and choice is not None and choice.strict:
            raise _bad(
                f"There is no language-model rung {_shown(wanted)}.",
                "Give model.rung as one of: "
                + ", ".join(r.id for r in known)
                + "; or leave model out for the "
                "server's policy.",
            )
        if rung is None:
            pick.attempts.append(
                Attempt(
                    id=wanted[:120], stage="llm", outcome="skipped", reason="not-found", detail="no such rung"
                )
            )
        elif choice is not None and choice.strict:
            ladder = [rung]
        else:
            ladder = [rung, *(other for other in ladder if other is not rung)]
    for rung in ladder:
        if rung.enabled:
            pick.rungs.append(rung)
        else:
            pick.attempts.append(_skipped(rung, runtime.settings.keyless))
    if not pick.rungs:
        if choice is not None and choice.strict and wanted is not None:
            only = ladder[0]
            needs = (
                " and ".join(only.requires) if only.requires else getattr(only, "unavailable", "setting up")
            )
            pick.reason = VidError(
                ErrorCode.NO_PROVIDER,
                f"The language-model rung {only.id} is not set up here (it needs {needs}).",
                hint=steps(
                    "Tell the user to set it up, or choose another rung with model.rung ({llm_rungs} lists "
                    "them) or strict false; do not retry until then."
                ),
            )
        else:
            pick.reason = _none_set_up(policy)
    return pick


async def call(
    runtime: Runtime, rung: LanguageModel, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions
) -> Completion:
    """One rung's whole answer, its retryable failures tried again as ``runtime.llm_plan`` says."""
    return await retrying(lambda: rung.complete(messages, ctx, options), ctx, runtime.llm_plan)


async def complete(
    runtime: Runtime,
    pick: LlmPick,
    messages: Sequence[ChatMessage],
    *,
    ctx: Ctx,
    options: LlmOptions | None = None,
    attempts: list[Attempt] | None = None,
) -> Completion:
    """The first whole answer a rung of ``pick`` gives; ``attempts`` records every rung tried.

    Raises the pick's reason when it has no rung, the rung's own code when one was tried (or all
    failed the same way), ``all-rungs-failed`` otherwise.
    """
    attempts = [] if attempts is None else attempts
    options = options or LlmOptions()
    errors: list[VidError] = []
    for rung in pick.require():
        try:
            return await run_rung(
                attempts, rung.id, "llm", lambda r=rung: call(runtime, r, messages, ctx, options)
            )
        except VidError as error:
            errors.append(error)
            if error.code in _LADDER_STOPS or ctx.remaining == 0:
                break
    raise combine_errors(errors, attempts)


async def stream(
    runtime: Runtime,
    pick: LlmPick,
    messages: Sequence[ChatMessage],
    *,
    ctx: Ctx,
    options: LlmOptions | None = None,
    attempts: list[Attempt] | None = None,
) -> AsyncIterator[Delta]:
    """The answer of the first rung of ``pick`` that starts one, as it comes (the last delta has
    ``done``). Rungs are tried in turn until one yields its first delta; a failure after that is
    raised (``upstream``), recorded as an error attempt of that rung."""
    attempts = [] if attempts is None else attempts
    options = options or LlmOptions()
    errors: list[VidError] = []
    for rung in pick.require():

        async def opened(r: LanguageModel = rung) -> tuple[AsyncIterator[Delta], Delta]:
            deltas = r.stream(messages, ctx, options).__aiter__()
            try:
                return deltas, await anext(deltas)
            except StopAsyncIteration:
                raise unreadable(r.service, "an empty stream") from None

        try:
            deltas, first = await run_rung(
                attempts, rung.id, "llm", lambda o=opened: retrying(o, ctx, runtime.llm_plan)
            )
        except VidError as error:
            errors.append(error)
            if error.code in _LADDER_STOPS or ctx.remaining == 0:
                break
            continue
        started = time.perf_counter()
        yield first
        try:
            async for delta in deltas:
                yield delta
        except VidError as error:
            ms = int((time.perf_counter() - started) * 1000)
            attempts.append(
                Attempt(
                    id=rung.id,
                    stage="llm",
                    outcome="error",
                    reason=error.code.value,
                    detail=error.message,
                    ms=ms,
                )
            )
            error.attempts = list(attempts)
            raise
        except Exception:
            log.exception("the stream of rung %s failed", rung.id)
            attempts.append(
                Attempt(id=rung.id, stage="llm", outcome="error", reason=ErrorCode.INTERNAL.value)
            )
            raise VidError.internal(list(attempts)) from None
        finally:
            # A consumer that stops early (a client gone) closes the upstream stream now, not at GC.
            close = getattr(deltas, "aclose", None)
            if close is not None:
                await close()
        return
    raise combine_errors(errors, attempts)
