"""One video: ``/context``, ``/transcript``, ``/metadata``, ``/items`` and ``/comments``.

Each handler checks every query value before any upstream request, then calls the same core
functions the CLI and the MCP tools call. ``/context`` and ``/transcript`` carry an ``ETag``
(SHA-256 of the body) and answer a matching ``If-None-Match`` with ``304``; a stored
transcript's rendering is kept in the process (``rendered.py``), so a repeated read neither
reads the library nor renders again.

The transcript in ``text`` format starts with ``context_header()``, exactly as ``vid2context get``
prints it, so an agent always knows what it is reading; every other format is the formatter's own
output (Markdown, the pack and JSON carry their own header, subtitles must stay parseable).
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from litestar import Request, Response, get
from litestar.datastructures import ResponseHeader
from litestar.params import QueryParameter

from ..answers.translate import translate_context
from ..formats import FORMATTERS, render_view
from ..includes import parse_include
from ..integrations.skips import find_skips, without_skips
from ..integrations.sponsorblock import ATTRIBUTION
from ..models import Base, Comment, VideoContext, VideoMetadata, VideoRef
from ..pipeline import get_comments, get_context, get_metadata, list_items
from ..speakers import noted, with_speakers
from .middleware import request_ctx
from .params import (
    FormatQuery,
    IncludeQuery,
    LangQuery,
    LimitQuery,
    ModeQuery,
    RefreshQuery,
    TimestampsQuery,
    UrlQuery,
    parse_bool,
    parse_int,
    parse_lang,
    parse_mode,
    require_url,
    runtime_of,
)
from .rendered import (
    ETAG_HEADER,
    NOT_MODIFIED,
    Rendered,
    RenderedCache,
    etag_of,
    if_none_match_of,
    not_modified,
    rendered_response,
)
from .skips import ATTRIBUTION_HEADER
from .transcript_query import transcript_ask

__all__ = [
    "CONTENT_LANGUAGE",
    "MAX_COMMENTS",
    "TEXT_MIME",
    "CommentsResponse",
    "ItemsResponse",
    "comments",
    "context",
    "etag_of",
    "items",
    "metadata",
    "text_response",
    "transcript",
]

MAX_COMMENTS = 1000
DEFAULT_COMMENTS = 100
_JSON = "application/json"
TEXT_MIME = FORMATTERS["text"].mime_type
_ENCODER = msgspec.json.Encoder()
_LANGUAGE_TAG = re.compile(r"[A-Za-z0-9-]{1,35}")


class ItemsResponse(Base, kw_only=True):
    items: list[VideoRef]


class CommentsResponse(Base, kw_only=True):
    comments: list[Comment]


CONTENT_LANGUAGE = ResponseHeader(
    name="Content-Language",
    description="The transcript's language; another than lang asked for when no track is in it.",
    documentation_only=True,
    value="",  # documentation only: gives the header its string schema
)


def _text_headers(mime_type: str, language: str | None) -> dict[str, str]:
    headers = {"Content-Type": mime_type}
    if language and _LANGUAGE_TAG.fullmatch(language):
        headers["Content-Language"] = language
    return headers


def text_response(text: str, mime_type: str, *, language: str | None = None) -> Response[str]:
    """``text`` with ``mime_type`` as given: Litestar would append a second charset to ``text/*``.

    ``language`` (the transcript's) is sent as ``Content-Language``, so a client that asked for
    another one sees what it got in every format, subtitles included.
    """
    return Response(text, media_type=mime_type, headers=_text_headers(mime_type, language))


def _from_library(found: VideoContext) -> bool:
    """Whether ``found`` is the library's copy as it was read (the pipeline's one ``cache``
    attempt), the only kind of answer ``RenderedCache`` may keep."""
    return len(found.attempts) == 1 and found.attempts[0].stage == "cache"


@get(
    "/api/v1/context",
    response_headers=[ETAG_HEADER],
    responses=NOT_MODIFIED,
)
async def context(
    request: Request,
    url: UrlQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    refresh: RefreshQuery = None,
    include: IncludeQuery = None,
) -> Response[VideoContext]:
    """The full ``VideoContext``: metadata, timed transcript and attempts (``include=on_screen``:
    and ``visual``, the picture read beside the transcript ``mode`` gives)."""
    source = require_url(url)
    checked_mode, checked_lang = parse_mode(mode), parse_lang(lang)
    again = parse_bool("refresh", refresh)
    on_screen = "on_screen" in parse_include(include)
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    found = await get_context(
        runtime, source, mode=checked_mode, lang=checked_lang, refresh=again, ctx=ctx, on_screen=on_screen
    )
    body = _ENCODER.encode(found)
    etag = etag_of(body)
    if (unchanged := not_modified(request.headers.get("if-none-match"), etag)) is not None:
        return unchanged  # type: ignore[return-value]
    # Already-encoded VideoContext JSON: the ETag is the hash of these exact bytes.
    return Response(body, media_type=_JSON, headers={"ETag": etag})  # type: ignore[arg-type]


@get(
    "/api/v1/transcript",
    media_type=TEXT_MIME,
    response_description="The transcript rendered by the chosen formatter; Content-Type is its mimeType.",
    response_headers=[CONTENT_LANGUAGE, ETAG_HEADER, ATTRIBUTION_HEADER],
    responses=NOT_MODIFIED,
)
async def transcript(
    request: Request,
    url: UrlQuery = None,
    format: FormatQuery = None,
    timestamps: TimestampsQuery = None,
    mode: ModeQuery = None,
    lang: LangQuery = None,
    skip: Annotated[
        str | None,
        QueryParameter(
            description="Remove SponsorBlock segments from a copy of the transcript: comma-separated "
            "categories (sponsor,selfpromo), or 1 for sponsor,selfpromo,interaction. The stored "
            "transcript stays whole; the answer carries X-Data-Attribution."
        ),
    ] = None,
    translate: Annotated[
        str | None,
        QueryParameter(
            description="1: when the video has no track in lang, a language model translates the best "
            "one, every segment at its own time (saved, so a repeat is not translated again)."
        ),
    ] = None,
    speakers: Annotated[
        str | None,
        QueryParameter(
            description="1: label who speaks (with mode=stt or no captions, the speech-to-text rung "
            "that labels speakers is tried first; a transcript without labels gets a Speakers line "
            "saying how to get them). 0: never label. Left out: labels only when two or more voices "
            "were found."
        ),
    ] = None,
    include: IncludeQuery = None,
) -> Response[str]:
    """The transcript rendered by the chosen formatter, with its MIME type as ``Content-Type``.

    With ``lang``, the platform's track in that language (or its own translation into it) comes
    first; ``translate=1`` has a language model translate the best track when there is neither
    (``translated: true``, a ``Track`` line in the header saying from what and by which rung)."""
    runtime = runtime_of(request)
    ask = transcript_ask(runtime, url, format, timestamps, mode, lang, skip, translate, speakers, include)
    source, formatter, options = ask.source, ask.formatter, ask.options
    checked_mode, checked_lang, skipped, llm, labels = ask.mode, ask.lang, ask.skipped, ask.llm, ask.labels
    on_screen = ask.on_screen
    if_none_match = if_none_match_of(request.scope)
    # Not kept: a translation (kept in the blob store, which the version does not cover), nor an
    # answer without SponsorBlock's segments (their data changes outside the library).
    cache: RenderedCache | None = None if llm or skipped is not None else request.app.state.rendered
    key = ask.key  # the input as given, the format and the options (TranscriptAsk.key)
    version = await cache.version() if cache is not None else None  # before anything is read
    if cache is not None and (kept := cache.get(key, version)) is not None:
        return rendered_response(kept, if_none_match)  # type: ignore[return-value]
    ctx = request_ctx(request, runtime)
    found = await get_context(
        runtime, source, mode=checked_mode, lang=checked_lang, ctx=ctx, speakers=labels, on_screen=on_screen
    )
    if checked_lang is not None:
        found = await translate_context(runtime, found, checked_lang, llm=llm, ctx=ctx)
    if skipped is not None:
        found = without_skips(found, await find_skips(runtime, source, skipped, ctx))
    found, said = with_speakers(runtime, found, labels)
    options = msgspec.structs.replace(options, speakers=said)
    if said is not None and formatter.id == "json":
        found = noted(found, said)  # json has no header: the line goes in transcript.note
    language = found.transcript.language if found.transcript else None
    body = render_view(found, formatter, options).encode()
    headers = _text_headers(formatter.mime_type, language)
    if skipped is not None:  # built on SponsorBlock's data: its licence asks for the attribution
        headers["X-Data-Attribution"] = ATTRIBUTION
    rendered = Rendered.of(body, headers)
    if cache is not None and _from_library(found):
        cache.put(key, version, rendered)
    return rendered_response(rendered, if_none_match)  # type: ignore[return-value]


@get("/api/v1/metadata")
async def metadata(request: Request, url: UrlQuery = None) -> VideoMetadata:
    """The source's metadata only: no captions or audio are fetched."""
    source = require_url(url)
    runtime = runtime_of(request)
    return await get_metadata(runtime, source, ctx=request_ctx(request, runtime))


@get("/api/v1/items")
async def items(request: Request, url: UrlQuery = None, limit: LimitQuery = None) -> ItemsResponse:
    """A playlist, channel or feed expanded to videos; a single video returns itself."""
    source = require_url(url)
    runtime = runtime_of(request)
    cap = runtime.settings.max_playlist_items
    count = parse_int("limit", limit, low=1, high=cap, default=cap)
    refs = await list_items(runtime, source, limit=count, ctx=request_ctx(request, runtime))
    return ItemsResponse(items=refs)


@get("/api/v1/comments")
async def comments(request: Request, url: UrlQuery = None, limit: LimitQuery = None) -> CommentsResponse:
    """Top-level comments; ``no-provider`` (503) when no source here can read them."""
    source = require_url(url)
    count = parse_int("limit", limit, low=1, high=MAX_COMMENTS, default=DEFAULT_COMMENTS)
    runtime = runtime_of(request)
    found = await get_comments(runtime, source, limit=count, ctx=request_ctx(request, runtime))
    return CommentsResponse(comments=found)
