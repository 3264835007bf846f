"""``GET /api/v1/search``: the library searched by keyword and by meaning, hits fused and cited.

A thin skin over ``search.engine.search``: the query string is read into a ``SearchRequest``
(numbers and flags by ``params``, the rest checked by the engine, which every surface shares) and
the ``SearchResult`` is the body, exactly as ``vid2context search --json`` prints it.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get
from litestar.params import QueryParameter

from ..errors import ErrorCode, VidError
from ..models import SearchResult
from ..search.engine import DEFAULT_LIMIT, MAX_LIMIT, SearchRequest, search
from .middleware import request_ctx
from .params import parse_bool, parse_int, runtime_of

__all__ = ["search_route"]

_MAX_LIST_CHARS = 40_000


def _query(description: str, name: str | None = None) -> object:
    return (
        QueryParameter(name=name, description=description)
        if name
        else QueryParameter(description=description)
    )


def _list(name: str, value: str | None) -> list[str] | None:
    """A comma-separated list; given but empty is a ``bad-request``."""
    if value is None:
        return None
    if len(value) > _MAX_LIST_CHARS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"{name} is {len(value):,} characters long.",
            hint=f"Give at most 500 {name} values.",
        )
    items = [part.strip() for part in value.split(",") if part.strip()]
    if not items:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"{name} is empty.",
            hint=f"Give {name} as comma-separated values, or leave it out.",
        )
    return items


@get("/api/v1/search")
async def search_route(
    request: Request,
    q: Annotated[
        str | None,
        _query(
            'The words to find. "quoted phrases" stay together, -word excludes; at most 2,000 characters.'
        ),
    ] = None,
    collection_id: Annotated[
        str | None,
        _query("Search this collection's videos (its id, col_..., or its unique name).", "collectionId"),
    ] = None,
    video_ids: Annotated[
        str | None,
        _query("Search only these saved videos: ids comma-separated (youtube:jNQXAC9IVRw).", "videoIds"),
    ] = None,
    limit: Annotated[
        str | None, _query(f"How many hits, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).")
    ] = None,
    mode: Annotated[
        str | None,
        _query("hybrid (default: keyword and vector, fused), keyword or vector."),
    ] = None,
    rerank: Annotated[
        str | None,
        _query("1 to rerank the top 20 hits with a cross-encoder (slower; meta.rerank says how it went)."),
    ] = None,
    channel: Annotated[str | None, _query("Only videos of this channel (its name, case ignored).")] = None,
    origin: Annotated[
        str | None,
        _query(
            "Only transcripts of these origins, comma-separated: captions-manual, captions-auto, asr, ..."
        ),
    ] = None,
    published_after: Annotated[
        str | None,
        _query("Only videos published on or after this date (YYYY-MM-DD or ISO 8601).", "publishedAfter"),
    ] = None,
    published_before: Annotated[
        str | None, _query("Only videos published on or before this date.", "publishedBefore")
    ] = None,
) -> SearchResult:
    """Hits from the saved videos, best first: each narrowed to one segment with its ``url`` (a
    timestamp link), chapter, channel and a ``**bold**`` snippet, the ``sources`` that found it
    and its ``ranks`` there; ``meta`` says which sides ran, the embedding model, the vector side's
    state (``ok``, ``partial``, ``disabled``, ``failed`` or ``off``) with its reason, the rerank and
    the timings."""
    if q is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "The q parameter is required.",
            hint='Pass q= with the words to find, e.g. ?q=kickstand or ?q="rate limit" -redis.',
        )
    checked = SearchRequest(
        query=q,
        collection=collection_id or None,
        video_ids=_list("videoIds", video_ids),
        limit=parse_int("limit", limit, low=1, high=MAX_LIMIT, default=DEFAULT_LIMIT),
        mode=(mode or "hybrid"),
        rerank=parse_bool("rerank", rerank),
        channel=channel if channel is not None and channel != "" else None,
        origins=_list("origin", origin),
        published_after=published_after or None,
        published_before=published_before or None,
    )
    runtime = runtime_of(request)
    return await search(runtime, checked, request_ctx(request, runtime))
