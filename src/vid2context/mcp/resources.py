"""Resources: saved videos and collections, addressed by id, listed from the library.

``vid2context://video/{id}`` is the saved ``VideoContext`` as JSON (``id`` is the ref id,
URL-encoded: ``youtube%3AjNQXAC9IVRw``), ``.../transcript`` the header and the ``[m:ss]`` text
transcript (fenced, as tool results are), and ``vid2context://collection/{id}`` a collection with
its videos' token counts; ``.../latest`` its newest videos, the last added first, which
``updates.py`` lets a client subscribe to. Resources only read the library: an id that is not saved is a
``not-found`` error whose message is the contract's error JSON.
"""

from __future__ import annotations

from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from .. import library
from ..collections_io import CollectionSummary
from ..errors import ErrorCode, VidError
from ..formats import RenderOptions, get_formatter, render_view
from ..formats.blocks import transcript_tokens
from ..models import Base, Origin
from ..runtime import Runtime
from .fences import fence
from .results import error_payload, json_text
from .toolkit import Deps

__all__ = ["LATEST", "CollectionResource", "LatestResource", "latest_of", "register", "video_uri"]

MAX_LISTED = 500
LATEST = 20
"""How many videos ``vid2context://collection/{id}/latest`` holds."""


class CollectionVideo(Base, kw_only=True):
    id: str
    title: str
    url: str | None = None
    channel: str | None = None
    duration_sec: float | None = None
    origin: Origin | None = None
    language: str | None = None
    chapters: int = 0
    tokens: int = 0


class CollectionResource(Base, kw_only=True):
    collection: CollectionSummary
    videos: list[CollectionVideo]
    total_tokens: int
    missing: list[str]
    """Inputs of the collection that are not in the library: pending, or saved ones deleted since."""


class LatestVideo(Base, kw_only=True):
    id: str
    title: str
    url: str | None = None
    channel: str | None = None
    published_at: str | None = None
    added_at: str = ""
    """When it joined the collection."""
    tokens: int = 0


class LatestResource(Base, kw_only=True):
    collection: CollectionSummary
    videos: list[LatestVideo]
    """The newest saved videos of the collection, the last added first."""
    older: int
    """How many saved videos are older than these (read them in vid2context://collection/{id})."""


async def latest_of(runtime: Runtime, collection_id: str, count: int = LATEST) -> LatestResource:
    """The collection's ``count`` newest saved videos, by the time they joined it."""
    collection = await library.get_collection(runtime, collection_id)
    items = [item for item in await runtime.storage.list_items(collection.id) if item.state == "saved"]
    items.sort(key=lambda item: item.added_at, reverse=True)
    newest = items[:count]
    summaries = (
        {s.id: s for s in await runtime.storage.get_summaries([i.video_id for i in newest])} if newest else {}
    )
    videos = [
        LatestVideo(
            id=item.video_id,
            title=summary.title,
            url=summary.url,
            channel=summary.channel,
            published_at=summary.published_at,
            added_at=item.added_at,
            tokens=summary.tokens,
        )
        for item in newest
        if (summary := summaries.get(item.video_id)) is not None
    ]
    return LatestResource(collection=collection, videos=videos, older=len(items) - len(newest))


def video_uri(video_id: str) -> str:
    return f"vid2context://video/{quote(video_id, safe='')}"


def _failure(error: VidError) -> ResourceError:
    text = json_text(error_payload(error))
    return (
        ResourceNotFoundError(text)
        if error.code in (ErrorCode.NOT_FOUND, ErrorCode.BAD_REQUEST)
        else ResourceError(text)
    )


def register(server: MCPServer, deps: Deps) -> None:
    runtime = deps.runtime

    @server.resource(
        "vid2context://video/{id}",
        name="video",
        title="Saved video (JSON)",
        description="A saved video's full context: metadata, timed transcript, attempts.",
        mime_type="application/json",
    )
    async def video(id: str) -> str:
        try:
            context = await library.get_video(runtime, id)
        except VidError as error:
            raise _failure(error) from None
        return json_text(context) + "\n"

    @server.resource(
        "vid2context://video/{id}/transcript",
        name="transcript",
        title="Saved video's transcript",
        description="The source header and the [m:ss] text transcript of a saved video (fenced).",
        mime_type="text/plain",
    )
    async def transcript(id: str) -> str:
        try:
            context = await library.get_video(runtime, id)
        except VidError as error:
            raise _failure(error) from None
        text = render_view(context, get_formatter("text"), RenderOptions(timestamps=True))
        return fence(text, "transcript") + "\n"

    @server.resource(
        "vid2context://collection/{id}",
        name="collection",
        title="Collection",
        description="A collection, its saved videos with token counts, and what is missing from the library.",
        mime_type="application/json",
    )
    async def collection(id: str) -> str:
        try:
            view = await library.get_collection_view(runtime, id)
        except VidError as error:
            raise _failure(error) from None
        videos, missing = [], list(view.pending)
        for summary in view.videos:
            context = await runtime.storage.get_context(summary.id)
            if context is None:
                missing.append(summary.id)
                continue
            meta = context.metadata
            videos.append(
                CollectionVideo(
                    id=context.id,
                    title=meta.title,
                    url=meta.url,
                    channel=meta.channel,
                    duration_sec=meta.duration_sec,
                    origin=context.transcript.origin if context.transcript else None,
                    language=context.transcript.language if context.transcript else None,
                    chapters=len(meta.chapters),
                    tokens=transcript_tokens(context),
                )
            )
        fields = {name: getattr(view, name) for name in CollectionSummary.__struct_fields__}
        body = CollectionResource(
            collection=CollectionSummary(**fields),
            videos=videos,
            total_tokens=sum(v.tokens for v in videos),
            missing=missing,
        )
        return json_text(body) + "\n"

    @server.resource(
        "vid2context://collection/{id}/latest",
        name="collection_latest",
        title="Collection's newest videos",
        description=f"The {LATEST} videos that joined a collection last, newest first; subscribable "
        "(resources/subscribe): updated when a refresh or an add brings new videos in this server.",
        mime_type="application/json",
    )
    async def collection_latest(id: str) -> str:
        try:
            body = await latest_of(runtime, id)
        except VidError as error:
            raise _failure(error) from None
        return json_text(body) + "\n"


async def listed_resources(deps: Deps) -> list[tuple[str, str, str, str]]:
    """``(uri, name, description, mime)`` for the newest saved videos and every collection."""
    storage = deps.runtime.storage
    found: list[tuple[str, str, str, str]] = []
    cursor: str | None = None
    while len(found) < MAX_LISTED:
        page = await storage.list_videos(limit=min(200, MAX_LISTED - len(found)), cursor=cursor)
        for summary in page.items:
            found.append((video_uri(summary.id), summary.id, summary.title[:200], "application/json"))
        cursor = page.next_cursor
        if not cursor or not page.items:
            break
    for item in await storage.list_collections():
        found.append(
            (
                f"vid2context://collection/{quote(item.id, safe='')}",
                item.id,
                item.name[:200],
                "application/json",
            )
        )
    return found
