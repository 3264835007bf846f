"""The library of saved videos: ``GET /library``, ``GET``, ``PUT`` and ``DELETE /library/{id}``.

Ids go in the path URL-encoded once (``youtube%3AjNQXAC9IVRw``); an id encoded twice
(``youtube%253AjNQXAC9IVRw``, as some clients and proxies leave it) is decoded again by
``normalize_video_id``, and a video URL works too. The id is a ``path`` parameter, so an encoded
``/`` cannot turn it into another route. An id that is not printable text (control characters,
bytes that are not UTF-8) is ``bad-request``; one that names no saved video is ``not-found``.
The id never reaches a file path: storage keys are looked up, never opened.

``GET /library/{id}`` carries an ``ETag`` (the SHA-256 of the body, quoted) and answers a
matching ``If-None-Match`` with ``304`` and no body. ``PUT /library/{id}`` takes that same body
(``library_put.py`` checks and stores it; ``If-Match`` guards a newer copy) and answers the
``ETag`` of what it stored.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from litestar import Request, Response, delete, get, put
from litestar.datastructures import ResponseHeader
from litestar.openapi import ResponseSpec
from litestar.params import HeaderParameter, JSONBody, Parameter, QueryParameter

from .. import library, library_put
from ..errors import ErrorCode, VidError
from ..models import Page, VideoContext, VideoSummary
from .middleware import request_ctx
from .params import BODY_ERRORS, LimitQuery, parse_int, runtime_of
from .rendered import ETAG_HEADER, NOT_MODIFIED, etag_of, not_modified

__all__ = ["DEFAULT_LIMIT", "delete_saved_video", "get_saved_video", "list_saved_videos", "put_saved_video"]

DEFAULT_LIMIT = 50
MAX_CURSOR_CHARS = 1024
_JSON = "application/json"
_ENCODER = msgspec.json.Encoder()
_MERGED_SCHEME = re.compile(r"^(https?):/(?!/)", re.IGNORECASE)
_ID_HINT = "Give a saved video's id URL-encoded once, e.g. /api/v1/library/youtube%3AjNQXAC9IVRw."

VideoIdPath = Annotated[
    str,
    Parameter(description="A saved video's id, URL-encoded once (youtube%3AjNQXAC9IVRw), or its URL."),
]


def _video_id(raw: str) -> str:
    """The path's id: one leading ``/`` (the ``path`` type keeps it) removed, printable text only.

    The router merges ``//`` in the path, so a video URL given as the id (``https%3A%2F%2F...``)
    arrives as ``https:/...``; its second slash is put back.
    """
    text = raw.removeprefix("/")
    text = _MERGED_SCHEME.sub(r"\1://", text, count=1)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise VidError(ErrorCode.BAD_REQUEST, "The video id holds characters an id never has.", hint=_ID_HINT)
    if not text.strip():
        raise VidError(ErrorCode.BAD_REQUEST, "A video id is required.", hint=_ID_HINT)
    return text


@get("/api/v1/library")
async def list_saved_videos(
    request: Request,
    limit: LimitQuery = None,
    cursor: Annotated[
        str | None,
        QueryParameter(description="The nextCursor of the previous page; leave out for the first."),
    ] = None,
) -> Page[VideoSummary]:
    """Saved videos, newest first, ``limit`` (1 to 200, default 50) at a time."""
    count = parse_int("limit", limit, low=1, high=library.MAX_PAGE, default=DEFAULT_LIMIT)
    if cursor is not None and len(cursor) > MAX_CURSOR_CHARS:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "The cursor is not valid.",
            hint="Pass the nextCursor of the previous page, or none.",
        )
    return await library.list_videos(runtime_of(request), limit=count, cursor=cursor or None)


@get(
    "/api/v1/library/{video_id:path}",
    response_headers=[ETAG_HEADER],
    responses=NOT_MODIFIED,
)
async def get_saved_video(request: Request, video_id: VideoIdPath) -> Response[VideoContext]:
    """The saved ``VideoContext``: metadata, timed transcript and the attempts that made it."""
    context = await library.get_video(runtime_of(request), _video_id(video_id))
    body = _ENCODER.encode(context)
    etag = etag_of(body)
    if (unchanged := not_modified(request.headers.get("if-none-match"), etag)) is not None:
        return unchanged  # type: ignore[return-value]
    # Already-encoded VideoContext JSON: the ETag is the hash of these exact bytes.
    return Response(body, media_type=_JSON, headers={"ETag": etag})  # type: ignore[arg-type]


@delete("/api/v1/library/{video_id:path}")
async def delete_saved_video(request: Request, video_id: VideoIdPath) -> None:
    """Forget a saved video; collections keep their items. ``not-found`` when it is not saved."""
    await library.delete_video(runtime_of(request), _video_id(video_id))


@put(
    "/api/v1/library/{video_id:path}",
    request_max_body_size=None,  # VID2CONTEXT_MAX_PUSH_KB, counted by the Limits middleware
    response_headers=[
        ResponseHeader(
            name="ETag", description="SHA-256 of the stored body, quoted.", documentation_only=True, value=""
        )
    ],
    responses={
        201: ResponseSpec(library_put.PutResult, description="The video was not saved before."),
        412: ResponseSpec(None, description="precondition-failed: If-Match names another copy."),
    },
    status_code=200,
    exception_handlers=BODY_ERRORS,
)
async def put_saved_video(
    request: Request,
    video_id: VideoIdPath,
    data: JSONBody[library_put.PushedContext],
    if_match: Annotated[
        str | None,
        HeaderParameter(
            name="If-Match",
            description="The ETag of the saved copy this one replaces, or * for any saved copy.",
        ),
    ] = None,
) -> Response[library_put.PutResult]:
    """Save a ``VideoContext`` (what ``GET /library/{id}`` answers, optionally with ``embeddings``)
    at its id, indexed for keyword and vector search: ``201`` when new, ``200`` when it replaced
    the saved copy. ``If-Match`` with the saved copy's ``ETag`` refuses to overwrite another
    (``412 precondition-failed``). Checked before anything is stored: the id, segment order and
    times, UTF-8, sizes (``too-large``: more than 100,000 segments, a body over
    ``VID2CONTEXT_MAX_PUSH_KB``)."""
    runtime = runtime_of(request)
    result = await library_put.put_video(
        runtime,
        _video_id(video_id),
        await request.body(),
        if_match=if_match,
        ctx=request_ctx(request, runtime),
    )
    return Response(result, status_code=201 if result.created else 200, headers={"ETag": result.etag})
