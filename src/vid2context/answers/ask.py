"""Answers to questions about videos, with checked citations: the one core of ``/ask``, ``/chat``
and MCP ``ask``.

Two steps, so that every request error is known before anything is streamed:

1. ``prepare(runtime, Question, ctx)`` checks the request (question, history, ``maxTokens``,
   ``temperature``, ``model``), picks the rungs (``ladder.plan_llm``: an unknown strict rung is
   ``bad-request``, nothing set up ``no-provider``), grounds the question (``grounding.ground``:
   videos read, passages found and fitted to the smallest window of the picked rungs) and builds
   the messages. Everything it raises is a request error: REST answers it with its status.
2. ``answer(runtime, prepared, ctx)`` walks the ladder for the whole answer and checks its
   citations (``citations.check_citations``) into an ``AskResult``; ``events(runtime, prepared,
   ctx)`` streams the same as ``/chat``'s events: ``meta`` (the first rung to try, its window, our
   prompt estimate, the sources), ``reasoning``*, ``delta``+ (unknown ``[n]`` stripped as they
   come, a partial ``[1`` held until it closes), then ``done`` (the shown text, citations,
   unverified numbers, the rung that answered) or ``error`` (a failure after streaming began).

``ask(runtime, question, ctx)`` is both steps for a caller that wants the whole answer.
Portable: the rungs do the I/O.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import AnswerSource, AskResult, Attempt, ChatMessage, ModelChoice
from ..runtime import Runtime
from ..tokens import estimate_tokens
from .citations import StreamStripper, check_citations
from .grounding import Grounding, check_history, check_question, ground, messages, source_budget
from .llm import ladder
from .llm.base import Completion, LlmOptions
from .llm.ladder import LlmPick

__all__ = ["MAX_ANSWER_TOKENS", "Event", "Prepared", "Question", "answer", "ask", "events", "prepare"]

MAX_ANSWER_TOKENS = 32_768
"""The most ``maxTokens`` a request may ask for (each rung also caps it at its own limit)."""


@dataclass
class Question:
    """A question as every surface gives it (the REST names in the comments)."""

    question: str
    inputs: list[str] | None = None
    collection: str | None = None  # collectionId
    history: list[ChatMessage] = field(default_factory=list)
    model: ModelChoice | None = None
    max_tokens: int | None = None  # maxTokens
    temperature: float | None = None


@dataclass
class Prepared:
    """A checked, grounded question, ready for a rung."""

    question: str
    pick: LlmPick
    grounding: Grounding
    messages: list[ChatMessage]
    options: LlmOptions
    attempts: list[Attempt]
    prompt_tokens: int
    """Our estimate of the prompt (``estimate_tokens`` over every message)."""

    @property
    def sources(self) -> list[AnswerSource]:
        return [source.public() for source in self.grounding.sources]

    def meta(self) -> dict[str, Any]:
        """The ``meta`` event: the first rung to try, its window, the prompt and the sources."""
        first = self.pick.rungs[0]
        return {
            "rung": first.id,
            "model": first.model,
            "contextTokens": first.context_tokens,
            "promptTokens": self.prompt_tokens,
            "sources": msgspec.to_builtins(self.sources),
        }


@dataclass(frozen=True)
class Event:
    """One event of an answer's stream: its name and its JSON data."""

    name: str
    data: dict[str, Any]


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _options(question: Question) -> LlmOptions:
    tokens = question.max_tokens
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens):
        raise _bad(
            "maxTokens must be a whole number of 1 or more.", "Give maxTokens such as 512, or leave it out."
        )
    if tokens is not None and tokens > MAX_ANSWER_TOKENS:
        raise _bad(
            f"maxTokens is {tokens:,}; at most {MAX_ANSWER_TOKENS:,} are asked of a model.",
            f"Give maxTokens of {MAX_ANSWER_TOKENS:,} or fewer, or leave it out for the rung's own limit.",
        )
    heat = question.temperature
    if heat is not None and (
        isinstance(heat, bool)
        or not isinstance(heat, (int, float))
        or not math.isfinite(heat)
        or not 0 <= heat <= 2
    ):
        raise _bad(
            "temperature must be a number from 0 to 2.", "Give temperature such as 0.2, or leave it out."
        )
    return LlmOptions(max_tokens=tokens, temperature=None if heat is None else float(heat))


def _inputs(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    kept = [v for v in values if isinstance(v, str) and v.strip()]
    if not kept:
        raise _bad("inputs is empty.", "Give video URLs or ids in inputs, or leave it out.")
    return kept


async def prepare(runtime: Runtime, question: Question, ctx: Ctx, *, on_progress: object = None) -> Prepared:
    """The question checked and grounded, the rungs picked, the messages built (module docstring).

    Raises ``VidError`` for the request: ``bad-request``, ``too-large``, ``no-provider``,
    ``not-found``, ``no-transcript`` and the other codes of a video that cannot be had.
    """
    text = check_question(question.question)
    history = check_history(question.history)
    options = _options(question)
    inputs = _inputs(question.inputs)
    pick = ladder.plan_llm(runtime, question.model, ctx)
    rungs = pick.require()
    budget = source_budget(rungs, options, text, history)
    grounding = await ground(
        runtime,
        text,
        inputs=inputs,
        collection=question.collection,
        budget=budget,
        ctx=ctx,
        on_progress=on_progress,
    )
    sent = messages(text, grounding, history)
    return Prepared(
        question=text,
        pick=pick,
        grounding=grounding,
        messages=sent,
        options=options,
        attempts=[*pick.attempts, *grounding.attempts],
        prompt_tokens=sum(estimate_tokens(m.content) + 4 for m in sent),
    )


def _result(prepared: Prepared, completion: Completion, text: str) -> AskResult:
    checked = check_citations(text, prepared.grounding.sources)
    return AskResult(
        answer=checked.text,
        citations=checked.citations,
        unverified=checked.unverified,
        sources=prepared.sources,
        rung=completion.rung,
        model=completion.model,
        usage=completion.usage,
        attempts=list(prepared.attempts),
        context_tokens=next((r.context_tokens for r in prepared.pick.rungs if r.id == completion.rung), None),
        prompt_tokens=prepared.prompt_tokens,
    )


async def answer(runtime: Runtime, prepared: Prepared, ctx: Ctx) -> AskResult:
    """The whole answer of the first rung that gives one, its citations checked."""
    completion = await ladder.complete(
        runtime,
        prepared.pick,
        prepared.messages,
        ctx=ctx,
        options=prepared.options,
        attempts=prepared.attempts,
    )
    return _result(prepared, completion, completion.text)


async def ask(runtime: Runtime, question: Question, ctx: Ctx) -> AskResult:
    """``prepare`` then ``answer``."""
    return await answer(runtime, await prepare(runtime, question, ctx), ctx)


def done_data(result: AskResult) -> dict[str, Any]:
    """The ``done`` event of ``result``: ``{text, rung, model, usage?, citations, unverified, attempts}``."""
    data: dict[str, Any] = {
        "text": result.answer,
        "rung": result.rung,
        "model": result.model,
        "citations": msgspec.to_builtins(result.citations),
        "unverified": list(result.unverified),
        "attempts": msgspec.to_builtins(result.attempts),
    }
    if result.usage is not None:
        data["usage"] = msgspec.to_builtins(result.usage)
    return data


def error_data(error: VidError) -> dict[str, Any]:
    """The ``error`` event: ``{code, message, hint?, attempts?}``."""
    data: dict[str, Any] = {"code": error.code.value, "message": error.message}
    if error.hint:
        data["hint"] = str(error.hint)
    if error.attempts:
        data["attempts"] = msgspec.to_builtins(error.attempts)
    return data


async def events(runtime: Runtime, prepared: Prepared, ctx: Ctx) -> AsyncIterator[Event]:
    """The answer as ``/chat`` streams it: meta, reasoning*, delta+, then done or error.

    Closing this iterator (a client that went away) closes the rung's stream, and with it the
    upstream connection."""
    yield Event("meta", prepared.meta())
    stripper = StreamStripper({source.n for source in prepared.grounding.sources})
    raw: list[str] = []
    completion: Completion | None = None
    shown = 0
    stream = ladder.stream(
        runtime,
        prepared.pick,
        prepared.messages,
        ctx=ctx,
        options=prepared.options,
        attempts=prepared.attempts,
    )
    try:
        async for delta in stream:
            if delta.reasoning:
                yield Event("reasoning", {"text": delta.reasoning})
            if delta.text:
                raw.append(delta.text)
                out = stripper.feed(delta.text)
                if out:
                    shown += 1
                    yield Event("delta", {"text": out})
            if delta.done is not None:
                completion = delta.done
    except VidError as error:
        yield Event("error", error_data(error))
        return
    except Exception:  # noqa: BLE001  nothing else leaks: an unexpected failure is internal
        yield Event("error", error_data(VidError.internal(list(prepared.attempts))))
        return
    finally:
        await stream.aclose()
    tail = stripper.finish()
    if tail or not shown:
        yield Event("delta", {"text": tail})
    if completion is None:
        yield Event("error", error_data(VidError.internal(list(prepared.attempts))))
        return
    text = "".join(raw) if raw else completion.text
    yield Event("done", done_data(_result(prepared, completion, text)))
