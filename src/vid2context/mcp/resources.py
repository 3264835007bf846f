"""Resources: saved videos and collections, addressed by id, listed from the library.

``vid2context://video/{id}`` is the saved ``VideoContext`` as JSON (``id`` is the ref id,
URL-encoded: ``youtube%3AjNQXAC9IVRw``), ``.../transcript`` the header and the ``[m:ss]`` text
transcript (fenced, as tool results are), and ``vid2context://collection/{id}`` a collection with
its videos' token counts. Resources only read the library: an id that is not saved is a
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
from .fences import fence
from .results import error_payload, json_text
from .toolkit import Deps

__all__ = ["CollectionResource", "register", "video_uri"]

MAX_LISTED = 500


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
