"""``POST /api/v1/ask`` and ``POST /api/v1/chat``: answers grounded in videos, with checked citations.

Thin skins over ``answers.ask``: the body is read strictly (``decode_body``), ``prepare`` checks,
grounds and picks the rungs, so every request error (a bad body, an unknown collection or strict
rung, a video that cannot be had, a question too large for the window) is answered before
anything is streamed, with the standard error body and status. Then:

- ``/ask`` without ``stream``: the ``AskResult`` as JSON;
- ``/ask`` with ``stream: true`` and ``/chat``: ``text/event-stream`` with ``answers.ask.events``
  (``meta``, ``reasoning``*, ``delta``+, then ``done`` or ``error``), each as ``event:`` and one
  line of JSON ``data:``. A ``: keep-alive`` comment goes out after ``KEEP_ALIVE_S`` of silence
  (``app.state["keep_alive_s"]`` overrides it, for tests). A client that disconnects cancels the
  stream, which closes the rung's upstream connection.

On the Worker the same routes run: the Workers ASGI adapter streams ``text/event-stream``
responses through a ``TransformStream``; an adapter that buffers delivers the same events at the
end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import msgspec
from litestar import Request, Response, post
from litestar.params import JSONBody
from litestar.response import Stream

from ..answers.ask import Event, Question, answer, events, prepare
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..models import AskResult, Base, ChatMessage, ModelChoice
from ..runtime import Runtime
from .middleware import request_ctx
from .params import BODY_ERRORS, decode_body, runtime_of

__all__ = ["ASK_ROUTES", "KEEP_ALIVE_S", "AskRequest", "ChatRequest", "ask_route", "chat_route", "sse_stream"]

KEEP_ALIVE_S = 15.0
"""Silence after which a ``: keep-alive`` comment is sent (proxies drop idle connections)."""
_ENCODE = msgspec.json.Encoder().encode
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_KEEP_ALIVE = b": keep-alive\n\n"


class AskRequest(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /ask``: a question over ``inputs`` and/or a collection."""

    question: str
    collection_id: str | None = None
    inputs: list[str] | None = None
    stream: bool = False
    history: list[ChatMessage] | None = None
    """Earlier turns, oldest first (``user`` and ``assistant``)."""
    model: ModelChoice | None = None
    max_tokens: int | None = None
    temperature: float | None = None


class ChatContext(Base, kw_only=True, forbid_unknown_fields=True):
    inputs: list[str] | None = None
    collection_id: str | None = None


class ChatTurn(Base, frozen=True, forbid_unknown_fields=True):
    role: Literal["user", "assistant"]
    content: str


class ChatRequest(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /chat`` (``ChatApiRequest``): the conversation, ending with the user's question."""

    messages: list[ChatTurn]
    model: ModelChoice | None = None
    context: ChatContext | None = None
    max_tokens: int | None = None
    temperature: float | None = None


def _chat_question(data: ChatRequest) -> Question:
    if not data.messages or data.messages[-1].role != "user":
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "messages must end with the user's question." if data.messages else "messages is empty.",
            hint='Send messages oldest first, the last one {"role": "user", "content": "<the question>"}.',
        )
    context = data.context or ChatContext()
    return Question(
        question=data.messages[-1].content,
        inputs=context.inputs,
        collection=context.collection_id,
        history=[ChatMessage(role=turn.role, content=turn.content) for turn in data.messages[:-1]],
        model=data.model,
        max_tokens=data.max_tokens,
        temperature=data.temperature,
    )


def sse_bytes(event: Event) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (event.name.encode(), _ENCODE(event.data))


async def sse_stream(
    source: AsyncIterator[Event], ctx: Ctx, keep_alive_s: float = KEEP_ALIVE_S
) -> AsyncIterator[bytes]:
    """``source`` as SSE bytes, a keep-alive comment after each ``keep_alive_s`` of silence.

    The events are read in a task of their own, so a comment can go out while a rung is silent;
    when the response is cancelled (the client went away) that task is cancelled too, which
    unwinds the rung's stream and closes its upstream connection, and ``ctx`` is aborted."""
    iterator = source.__aiter__()
    pending: asyncio.Future[Event] | None = None
    finished = False
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=keep_alive_s)
            if not done:
                yield _KEEP_ALIVE
                continue
            task, pending = pending, None
            try:
                event = task.result()
            except StopAsyncIteration:
                finished = True
                return
            yield sse_bytes(event)
    finally:
        if not finished:
            ctx.abort()
            if pending is not None and not pending.done():
                pending.cancel()
                _hold(pending)
            else:  # idle, or its next event came just as the stream was cancelled
                with contextlib.suppress(RuntimeError):
                    # The iterator is idle at a yield: closing it runs its cleanup now.
                    _hold(asyncio.ensure_future(iterator.aclose()))  # type: ignore[attr-defined]


_LEFT_RUNNING: set[asyncio.Future[Any]] = set()
"""Tasks a closed stream left to finish its cleanup: held, because asyncio keeps only weak
references to tasks, and a task nobody holds can be collected before its cleanup ran."""


def _hold(task: asyncio.Future[Any]) -> None:
    _LEFT_RUNNING.add(task)
    task.add_done_callback(_LEFT_RUNNING.discard)


def _keep_alive(request: Request) -> float:
    value = request.app.state.get("keep_alive_s", KEEP_ALIVE_S)
    return float(value) if isinstance(value, (int, float)) and value > 0 else KEEP_ALIVE_S


async def _streamed(request: Request, runtime: Runtime, question: Question, ctx: Ctx) -> Stream:
    prepared = await prepare(runtime, question, ctx)  # request errors: answered before streaming
    body = sse_stream(events(runtime, prepared, ctx), ctx, _keep_alive(request))
    return Stream(body, media_type="text/event-stream", headers=_SSE_HEADERS)


@post(
    "/api/v1/ask",
    status_code=200,
    exception_handlers=BODY_ERRORS,
    response_description="The answer with its checked citations (JSON), or the /chat events when stream is true.",
)
async def ask_route(request: Request, data: JSONBody[AskRequest]) -> Response[AskResult] | Stream:
    """Answer ``question`` from the videos in ``inputs`` and/or ``collectionId`` (the whole
    library when neither is given): ``{answer, citations, unverified, sources, rung, model,
    usage?, attempts}``. The answer cites ``[n]``, matching ``sources[].n``; a number that matches
    no source is removed and listed in ``unverified``; each citation points at the segment that
    best supports the sentence citing it. ``stream: true`` answers with the ``/chat`` events."""
    data = await decode_body(request, AskRequest)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    question = Question(
        question=data.question,
        inputs=data.inputs,
        collection=data.collection_id,
        history=list(data.history or []),
        model=data.model,
        max_tokens=data.max_tokens,
        temperature=data.temperature,
    )
    if data.stream:
        return await _streamed(request, runtime, question, ctx)
    prepared = await prepare(runtime, question, ctx)
    return Response(await answer(runtime, prepared, ctx))


@post(
    "/api/v1/chat",
    status_code=200,
    media_type="text/event-stream",
    exception_handlers=BODY_ERRORS,
    response_description="Server-sent events: meta, reasoning*, delta+, then done or error; : keep-alive comments.",
)
async def chat_route(request: Request, data: JSONBody[ChatRequest]) -> Stream:
    """A multi-turn answer grounded in videos, streamed: ``meta`` (rung, model, contextTokens,
    promptTokens, the numbered sources), ``reasoning``* (when the model shows it), ``delta``+,
    then ``done`` (text, citations, unverified, rung, model, usage, attempts) or ``error``."""
    data = await decode_body(request, ChatRequest)  # strict: Litestar's decode was lenient
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    return await _streamed(request, runtime, _chat_question(data), ctx)


ASK_ROUTES = [ask_route, chat_route]
"""Every handler of this module, for ``create_app``."""
