"""Several videos at once: ``/pack`` (Markdown) and ``/bundle`` (a zip), by GET or POST.

Inputs may be videos or lists (playlists, channels), which are expanded; a collection adds its
saved and pending videos. At most ``MAX_VIDEOS`` videos per request (``too-large`` beyond), read
by ``batch.read_videos`` (``CONCURRENCY`` at a time), the way every surface reads several videos.

One video that cannot be read never fails the request: it is listed under "Not included" in the
pack (and in the bundle's manifest). When no video at all could be read there is nothing to
answer with, so the first failure is the answer, with its own code and status.

``maxTokens`` bounds the body: a pack larger than that is chosen by ``formats.pack`` (every
video's outline, then whole chapters, ``query`` matches first), each outline naming
``GET /api/v1/section`` for the parts left out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import quote

import msgspec
from litestar import Request, Response, get, post
from litestar.datastructures import ResponseHeader
from litestar.params import JSONBody, QueryParameter
from litestar.response import Stream

from ..batch import CONCURRENCY, MAX_VIDEOS, read_videos
from ..batch_inputs import Refusals, request_inputs
from ..bundle import build_bundle
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..formats import FORMATTERS, render_many
from ..formats.pack import MAX_QUERY_CHARS, Reader, check_query
from ..models import Base, Comment, Mode, VideoContext
from ..outline import text_costs
from ..pipeline import get_comments
from ..runtime import Runtime
from .middleware import request_ctx
from .params import (
    BODY_ERRORS,
    LangQuery,
    ModeQuery,
    decode_body,
    parse_bool,
    parse_formats,
    parse_int,
    parse_lang,
    parse_mode,
    runtime_of,
)
from .videos import DEFAULT_COMMENTS, text_response

__all__ = [
    "BundleRequest",
    "PackRequest",
    "bundle_get",
    "bundle_post",
    "pack_get",
    "pack_post",
    "section_route",
]

MAX_BUDGET = 10_000_000
"""Largest ``maxTokens``: far above any model's window, low enough to stay a sane number."""
_CHUNK = 64 * 1024
_ZIP: dict[str, Any] = {
    "media_type": "application/zip",
    "response_description": "A zip: <root>/context.md, <root>/<video>/<video>.<ext> per format, <root>/manifest.json.",
    "response_headers": [
        ResponseHeader(
            name="Content-Disposition",
            description='attachment; filename="<root>.zip"',
            documentation_only=True,
            value="",  # documentation only: gives the header its string schema
        )
    ],
}
UrlsQuery = Annotated[
    list[str] | None,
    QueryParameter(description="Videos or lists (expanded), one url= each; at most 100 videos in all."),
]
MaxTokensQuery = Annotated[
    str | None,
    QueryParameter(
        name="maxTokens",
        description="Token budget for the whole body (1 or more). A pack that fits comes whole; a larger one "
        "keeps every video's outline (each chapter's tokens and its GET /api/v1/section call), then whole "
        "chapters, query matches first, then spread across the video. Less than the outlines need: 400 "
        "with the minimum in the hint.",
    ),
]
PackQuery = Annotated[
    str | None,
    QueryParameter(
        name="query",  # the handler's argument cannot be called query: Litestar gives it the query string
        description=f"Keywords (at most {MAX_QUERY_CHARS} characters) for the chapters a maxTokens budget keeps "
        "first: keyword relevance within each video. Without maxTokens nothing is left out.",
    ),
]
_PACK_MIME = FORMATTERS["pack"].mime_type
_INPUTS_HINT = (
    "Give inputs (video URLs or ids, playlists, channels) or a collectionId, e.g. "
    '{"inputs": ["https://www.youtube.com/watch?v=jNQXAC9IVRw"]}.'
)
_REFUSALS = Refusals(none="No videos to read.", hint=_INPUTS_HINT)


class PackRequest(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /pack``: videos or lists in ``inputs``, and/or a collection."""

    inputs: list[str] | None = None
    collection_id: str | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=MAX_BUDGET)] | None = None
    mode: Mode | None = None
    lang: str | None = None
    query: Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)] | None = None
    """Keywords for the chapters a ``maxTokens`` budget keeps first."""


class BundleRequest(PackRequest, kw_only=True, forbid_unknown_fields=True):
    """``POST /bundle``: a pack's inputs plus the formats to write per video, and comments."""

    formats: list[str] | None = None
    comments: bool = False


def section_route(mode: str | None = None, lang: str | None = None) -> Reader:
    """The REST reader: ``GET /api/v1/section?url=<id>&chapter=N``, with the pack's ``mode`` and
    ``lang`` when they are not the defaults, so the section is read from the same transcript."""
    extra = "".join(
        f"&{name}={quote(value, safe='')}"
        for name, value in (("mode", mode), ("lang", lang))
        if value and not (name == "mode" and value == "auto")
    )

    def reader(context: VideoContext) -> str:
        return f"GET /api/v1/section?url={quote(context.id, safe=':@/')}{extra}&chapter=N"

    return reader


async def _read(
    runtime: Runtime, inputs: list[str], *, mode: Mode, lang: str | None, ctx: Ctx
) -> tuple[list[VideoContext], list[tuple[str, VidError]]]:
    """Every video the inputs name (``batch.read_videos``): the contexts and the failures."""
    found = await read_videos(runtime, inputs, ctx=ctx, limit=MAX_VIDEOS, mode=mode, lang=lang)
    found.raise_if_empty(_INPUTS_HINT)
    return found.contexts, found.failed


def _budget(value: str | None) -> int | None:
    return parse_int("maxTokens", value, low=1, high=MAX_BUDGET, default=None)


def _query_inputs(url: list[str] | None) -> list[str]:
    inputs = [text for text in url or [] if text.strip()]
    if not inputs:
        raise VidError(ErrorCode.BAD_REQUEST, "The url parameter is required.", hint=_INPUTS_HINT)
    _REFUSALS.check_count(inputs)
    return inputs


async def _body_inputs(runtime: Runtime, data: PackRequest) -> list[str]:
    inputs, _ = await request_inputs(
        runtime, list(data.inputs or []), data.collection_id, _REFUSALS, collection_first=False
    )
    return inputs


async def _pack(
    request: Request, inputs: list[str], mode: Mode, lang: str | None, budget: int | None, query: str | None
) -> Response[str]:
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    contexts, failed = await _read(runtime, inputs, mode=mode, lang=lang, ctx=ctx)
    reading = text_costs(lang)  # what GET /api/v1/section answers, as the outline's figures
    text = render_many(
        contexts,
        max_tokens=budget,
        failed=failed,
        query=query,
        reader=section_route(mode, lang),
        costs=lambda _: reading,
    )
    return text_response(text, _PACK_MIME)


@get("/api/v1/pack", media_type=_PACK_MIME)
async def pack_get(
    request: Request,
    url: UrlsQuery = None,
    max_tokens: MaxTokensQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    keywords: PackQuery = None,
) -> Response[str]:
    """The context pack (Markdown) for one or more ``url`` values; lists are expanded. With
    ``maxTokens`` the whole body fits it: outlines, then whole chapters (``query`` matches first)."""
    budget, checked_mode, checked_lang = _budget(max_tokens), parse_mode(mode), parse_lang(lang)
    checked_query = check_query(keywords)
    return await _pack(request, _query_inputs(url), checked_mode, checked_lang, budget, checked_query)


@post("/api/v1/pack", status_code=200, media_type=_PACK_MIME, exception_handlers=BODY_ERRORS)
async def pack_post(request: Request, data: JSONBody[PackRequest]) -> Response[str]:
    """The context pack for ``inputs`` and/or ``collectionId``; ``maxTokens`` and ``query`` as
    for GET."""
    data = await decode_body(request, PackRequest)  # strict: Litestar's decode was lenient
    checked_mode, checked_lang = parse_mode(data.mode), parse_lang(data.lang)
    checked_query = check_query(data.query)
    inputs = await _body_inputs(runtime_of(request), data)
    return await _pack(request, inputs, checked_mode, checked_lang, data.max_tokens, checked_query)


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), _CHUNK):
        yield data[start : start + _CHUNK]


async def _bundle(
    request: Request,
    inputs: list[str],
    *,
    formats: list[str],
    comments: bool,
    mode: Mode,
    lang: str | None,
    budget: int | None,
    query: str | None,
) -> Stream:
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    contexts, failed = await _read(runtime, inputs, mode=mode, lang=lang, ctx=ctx)
    found: dict[str, list[Comment]] | None = None
    missed: list[tuple[str, VidError]] = []
    if comments:
        found, missed = await _read_all_comments(runtime, contexts, ctx)
    reading = text_costs(lang)
    bundle = build_bundle(
        contexts,
        formats=formats,
        max_tokens=budget,
        failed=failed,
        comments=found,
        comment_failures=missed,
        query=query,
        reader=section_route(mode, lang),
        costs=lambda _: reading,
    )
    return Stream(
        _chunks(bundle.data),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{bundle.root}.zip"'},
    )


async def _read_all_comments(
    runtime: Runtime, contexts: list[VideoContext], ctx: Ctx
) -> tuple[dict[str, list[Comment]], list[tuple[str, VidError]]]:
    limit = asyncio.Semaphore(CONCURRENCY)

    async def read(context: VideoContext) -> list[Comment] | VidError:
        async with limit:
            try:
                return await get_comments(runtime, context.id, limit=DEFAULT_COMMENTS, ctx=ctx)
            except VidError as error:
                return error

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(read(context)) for context in contexts]
    found: dict[str, list[Comment]] = {}
    missed: list[tuple[str, VidError]] = []
    for context, task in zip(contexts, tasks, strict=True):
        result = task.result()
        if isinstance(result, VidError):
            missed.append((context.id, result))
        else:
            found[context.id] = result
    return found, missed


@get("/api/v1/bundle", **_ZIP)
async def bundle_get(
    request: Request,
    url: UrlsQuery = None,
    formats: Annotated[
        str | None, QueryParameter(description="Formatter ids, comma-separated, written per video.")
    ] = None,
    comments: Annotated[str | None, QueryParameter(description="1 to add each video's comments.")] = None,
    max_tokens: MaxTokensQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    keywords: PackQuery = None,
) -> Stream:
    """A zip: ``context.md``, the chosen ``formats`` (comma-separated) per video, a manifest;
    ``maxTokens`` and ``query`` shape ``context.md`` as they shape a pack."""
    chosen = [f.id for f in parse_formats(formats)]
    with_comments = parse_bool("comments", comments)
    budget, checked_mode, checked_lang = _budget(max_tokens), parse_mode(mode), parse_lang(lang)
    checked_query = check_query(keywords)
    return await _bundle(
        request,
        _query_inputs(url),
        formats=chosen,
        comments=with_comments,
        mode=checked_mode,
        lang=checked_lang,
        budget=budget,
        query=checked_query,
    )


@post("/api/v1/bundle", status_code=200, exception_handlers=BODY_ERRORS, **_ZIP)
async def bundle_post(request: Request, data: JSONBody[BundleRequest]) -> Stream:
    """The bundle for ``inputs`` and/or ``collectionId``, with ``formats`` as a list."""
    data = await decode_body(request, BundleRequest)  # strict: Litestar's decode was lenient
    chosen = [f.id for f in parse_formats(data.formats)]
    checked_mode, checked_lang = parse_mode(data.mode), parse_lang(data.lang)
    checked_query = check_query(data.query)
    inputs = await _body_inputs(runtime_of(request), data)
    return await _bundle(
        request,
        inputs,
        formats=chosen,
        comments=data.comments,
        mode=checked_mode,
        lang=checked_lang,
        budget=data.max_tokens,
        query=checked_query,
    )
