"""Collections: named groups of videos, optionally following playlists and channels.

The tools call the library functions the REST routes call, and answer the same shapes
(``CollectionSummary``, ``CollectionList``, ``CollectionResult``, ``CollectionView``) as JSON text and
as ``structuredContent`` under an ``outputSchema``. A collection is named by its id or its unique
name. Adding videos reads each one now (a few at a time, progress per video), so it runs as a long
run; one video that fails is listed in the summary's ``failed`` and never stops the others.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ... import library
from ...collections_io import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_SOURCES,
    MAX_VIDEOS,
    CollectionList,
    CollectionResult,
)
from ..params import CollectionId
from ..results import JsonReply, Reply, output_schema
from ..runs import Run, replaying
from ..toolkit import ContractTool, Deps, define
from .common import long_call

__all__ = ["tools"]

FIRST_READ = 50
"""Videos a new collection reads from its sources at once; the rest wait as pending."""

Name = Annotated[
    str,
    Field(
        description="The collection's name, unique (case is ignored).",
        json_schema_extra={"minLength": 1, "maxLength": MAX_NAME_CHARS},
    ),
]
Description = Annotated[
    str | None,
    Field(description="What the collection is for.", json_schema_extra={"maxLength": MAX_DESCRIPTION_CHARS}),
]
Sources = Annotated[
    list[str] | None,
    Field(
        description="Playlists or channels (URLs) whose videos the collection follows; not single videos.",
        json_schema_extra={"maxItems": MAX_SOURCES},
    ),
]
VideoInputs = Annotated[
    list[str],
    Field(
        description="Videos or lists (playlists, channels: expanded) to read and add, as URLs or ids.",
        json_schema_extra={"minItems": 1, "maxItems": MAX_VIDEOS},
    ),
]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def list_collections() -> Reply:
        """Every collection, most recently updated first: id, name, description, followed sources,
        videoCount (saved videos), dates and watch schedule. Costs about 80 tokens per collection."""
        listed = CollectionList(collections=await library.list_collections(runtime))
        return JsonReply(listed, structured=True)

    async def create_collection(
        ctx: Context, name: Name, description: Description = None, sources: Sources = None
    ) -> Reply:
        """A new collection: a named group of videos to pack, brief or export together. Names are
        unique: a name in use is a bad-request whose hint names that collection's id.

        Answers {collection}; with sources (playlists, channels) it follows them: their first 50
        videos are read now (the rest wait as pending), and the answer adds summary (added,
        skipped, failed). A single video as a source is a bad-request: add it with
        add_to_collection. Costs about 200 tokens, plus about 80 per video added.
        """
        if replaying():  # the queue's consumer following the sources: the call made it already
            created = await library.get_collection(runtime, name)
        else:
            created = await library.create_collection(runtime, name, description, sources)
        if not created.sources:
            return JsonReply(CollectionResult(collection=created), structured=True)

        async def work(run: Run) -> Reply:
            summary = await library.refresh_collection(
                runtime, created.id, limit=FIRST_READ, on_progress=_progress(run)
            )
            return JsonReply(
                CollectionResult(
                    collection=await library.get_collection(runtime, created.id), summary=summary
                ),
                structured=True,
                untrusted="collection",
            )

        return await long_call(deps, ctx, "create_collection", {"id": created.id}, work, writes=True)

    async def add_to_collection(ctx: Context, collection: CollectionId, urls: VideoInputs) -> Reply:
        """Read videos (and the videos of lists) now and add them to a collection (by id or
        name). Answers {collection, summary: {added, skipped, failed, remaining, checkedAt}}: a
        video already in the collection is counted in skipped, one that cannot be read is listed in
        failed and never stops the others. Sends a progress notification per video. Costs about 80
        tokens per video."""
        existing = await library.get_collection(runtime, collection)

        async def work(run: Run) -> Reply:
            summary = await library.add_to_collection(runtime, existing.id, urls, on_progress=_progress(run))
            return JsonReply(
                CollectionResult(
                    collection=await library.get_collection(runtime, existing.id), summary=summary
                ),
                structured=True,
                untrusted="collection",
            )

        return await long_call(
            deps, ctx, "add_to_collection", {"collection": existing.id, "urls": urls}, work, writes=True
        )

    async def get_collection(collection: CollectionId) -> Reply:
        """A collection (by id or name): its summary as list_collections shows it, its saved
        videos (id, title, channel, duration, origin, language, tokens: pick what to read by token
        count) and the inputs still pending. Costs about 80 tokens per video."""
        view = await library.get_collection_view(runtime, collection)
        return JsonReply(view, structured=True, untrusted="collection")

    return [
        define(
            list_collections,
            title="List collections",
            read_only=True,
            open_world=False,
            idempotent=True,
            output=output_schema(CollectionList, processing=False),
        ),
        define(
            create_collection,
            title="Create a collection",
            read_only=False,
            open_world=True,
            idempotent=False,
            output=output_schema(CollectionResult),
        ),
        define(
            add_to_collection,
            title="Add videos to a collection",
            read_only=False,
            open_world=True,
            idempotent=True,
            output=output_schema(CollectionResult),
        ),
        define(
            get_collection,
            title="Read a collection",
            read_only=True,
            open_world=False,
            idempotent=True,
            output=output_schema(library.CollectionView, processing=False),
        ),
    ]


def _progress(run: Run):  # type: ignore[no-untyped-def]
    """The library's ``on_progress`` events as steps of the run (``done`` of ``total`` videos)."""

    def on_progress(event: dict) -> None:  # type: ignore[type-arg]
        done, total = event.get("done"), event.get("total")
        fraction = done / total if isinstance(done, int) and isinstance(total, int) and total else None
        run.report("read", fraction, str(event.get("message") or ""), done=done, total=total)

    return on_progress
