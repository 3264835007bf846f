"""Collections: named groups of saved videos that can follow lists (playlists, channels).

Every route of the contract's "Library and collections" table, on ``library.py``::

    GET    /collections                    {collections: Collection[]}
    POST   /collections                    201 Collection            {name, description?, sources?, watch?}
    GET    /collections/{id}               Collection & {videos, pending}
    PATCH  /collections/{id}               Collection                {name?, description?, sources?, watch?}
    DELETE /collections/{id}               204 (the videos stay in the library)
    POST   /collections/{id}/items         202 Job (kind ingest)     {inputs, limit?}
    DELETE /collections/{id}/items         Collection                {videoIds}
    POST   /collections/{id}/refresh       202 Job (kind refresh)    {limit?} (the body is optional)
    GET    /collections/{id}/export        CollectionDefinition
    POST   /collections/import?refresh=    201 {collection, summary?}

Ingesting runs as a job on the runtime's queue (``runtime.jobs``): the answer is the queued
``Job``, whose ``result`` is ``{collection, summary}``; follow it with ``GET /jobs/{id}/events``.
``POST /collections/import?refresh=1`` ingests inline (its answer carries the summary).

In ``PATCH``, a field left out is left alone and ``null`` clears it: ``watch: null`` removes the
schedule, ``description: null`` the description, ``sources: null`` every source. ``watch`` is a
``Schedule``, whose ``every`` is ``hourly``, ``daily``, ``weekly``, minutes as a number, or
``{"minutes": n}``. Bodies are decoded strictly (unknown fields and wrong types refused, naming
the field).

``Collection`` is one shape everywhere (``library.CollectionSummary``): ``id``, ``name``,
``description``, ``sources``, ``videoCount``, ``createdAt``, ``updatedAt``, ``checkedAt`` and ``watch``
(``{schedule, state: {nextDueAt}}``, or ``null``). ``{id}`` is a collection's id or its name
(URL-encoded; names are unique, compared trimmed and ignoring ASCII case; an id wins over a name).
A second collection with a name in use is ``bad-request`` whose hint names the first one's id.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, delete, get, patch, post
from litestar.params import JSONBody, Parameter, QueryParameter
from msgspec import UNSET, UnsetType

from .. import library
from ..collections_io import CollectionList, CollectionResult
from ..jobs import Job
from ..models import Base, CollectionDefinition
from .params import BODY_ERRORS, decode_body, parse_bool, runtime_of

__all__ = [
    "COLLECTION_ROUTES",
    "CollectionCreate",
    "CollectionPatch",
    "IngestRequest",
    "RefreshRequest",
    "RemoveRequest",
    "WatchSchedule",
]

_LIMIT = Annotated[int, msgspec.Meta(ge=1, le=5_000)]

CollectionIdPath = Annotated[
    str, Parameter(description="The collection's id (col_...) or its name, URL-encoded.")
]


class EveryMinutes(Base, forbid_unknown_fields=True):
    minutes: int


class WatchSchedule(Base, forbid_unknown_fields=True):
    """A ``Schedule`` as a caller sends it: ``every`` may also be ``{"minutes": n}``."""

    every: Literal["hourly", "daily", "weekly"] | int | EveryMinutes
    at: str | None = None
    """``HH:MM`` UTC, for daily and weekly schedules."""
    enabled: bool = True


class CollectionCreate(Base, forbid_unknown_fields=True):
    name: str
    description: str | None = None
    sources: list[str] | None = None
    """Lists (playlists, channels, feeds) whose new videos a refresh adds."""
    watch: WatchSchedule | None = None


class CollectionPatch(Base, forbid_unknown_fields=True):
    """Only the fields given change; ``null`` clears ``description``, ``sources`` or ``watch``."""

    name: str | UnsetType = UNSET
    description: str | None | UnsetType = UNSET
    sources: list[str] | None | UnsetType = UNSET
    watch: WatchSchedule | None | UnsetType = UNSET


class IngestRequest(Base, forbid_unknown_fields=True):
    inputs: list[str]
    """Videos or lists (expanded)."""
    limit: _LIMIT | None = None
    """Read at most this many videos now; the rest wait as pending for the next refresh."""


class RemoveRequest(Base, forbid_unknown_fields=True):
    video_ids: list[str]


class RefreshRequest(Base, forbid_unknown_fields=True):
    limit: _LIMIT | None = None


def _schedule(watch: WatchSchedule | None) -> dict[str, Any] | None:
    return None if watch is None else msgspec.to_builtins(watch)


def _accepted(job: Job) -> Response[Job]:
    return Response(job, status_code=202)


@get("/api/v1/collections")
async def list_collections(request: Request) -> CollectionList:
    """Every collection, most recently updated first."""
    return CollectionList(collections=await library.list_collections(runtime_of(request)))


@post("/api/v1/collections", status_code=201, exception_handlers=BODY_ERRORS)
async def create_collection(request: Request, data: JSONBody[CollectionCreate]) -> library.CollectionSummary:
    """A new, empty collection; its ``sources`` (lists only) are read by the first refresh."""
    data = await decode_body(request, CollectionCreate)  # strict: Litestar's decode was lenient
    return await library.create_collection(
        runtime_of(request), data.name, data.description, data.sources, _schedule(data.watch)
    )


@get("/api/v1/collections/{collection_id:str}")
async def get_collection(request: Request, collection_id: CollectionIdPath) -> library.CollectionView:
    """The collection with its saved videos, pending inputs and watch state."""
    return await library.get_collection_view(runtime_of(request), collection_id)


@patch("/api/v1/collections/{collection_id:str}", exception_handlers=BODY_ERRORS)
async def update_collection(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[CollectionPatch]
) -> library.CollectionSummary:
    """Change the fields given; ``watch: null`` removes the schedule."""
    data = await decode_body(request, CollectionPatch)
    changes: dict[str, Any] = {
        name: getattr(data, name)
        for name in ("name", "description", "sources")
        if getattr(data, name) is not UNSET
    }
    if data.watch is not UNSET:
        changes["schedule"] = _schedule(data.watch)
    return await library.update_collection(runtime_of(request), collection_id, **changes)


@delete("/api/v1/collections/{collection_id:str}")
async def delete_collection(request: Request, collection_id: CollectionIdPath) -> None:
    """Delete the collection and its items; saved transcripts stay in the library."""
    await library.delete_collection(runtime_of(request), collection_id)


@post("/api/v1/collections/{collection_id:str}/items", status_code=202, exception_handlers=BODY_ERRORS)
async def add_items(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[IngestRequest]
) -> Response[Job]:
    """Queue an ``ingest`` job that reads the inputs (lists expanded) into the collection."""
    data = await decode_body(request, IngestRequest)
    runtime = runtime_of(request)
    collection = await library.resolve_collection(runtime, collection_id)  # the job keeps the id
    options = {} if data.limit is None else {"limit": data.limit}
    job = await runtime.jobs.submit(
        runtime, "ingest", {"collectionId": collection.id, "inputs": data.inputs}, options
    )
    return _accepted(job)


@delete("/api/v1/collections/{collection_id:str}/items", status_code=200, exception_handlers=BODY_ERRORS)
async def remove_items(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[RemoveRequest]
) -> library.CollectionSummary:
    """Take videos out; a refresh never adds them back (an explicit add does)."""
    data = await decode_body(request, RemoveRequest)
    return await library.remove_from_collection(runtime_of(request), collection_id, data.video_ids)


@post("/api/v1/collections/{collection_id:str}/refresh", status_code=202, exception_handlers=BODY_ERRORS)
async def refresh(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[RefreshRequest | None] = None
) -> Response[Job]:
    """Queue a ``refresh`` job: pending inputs first, then the sources' new videos."""
    body = await decode_body(request, RefreshRequest | None) if await request.body() else None  # type: ignore[arg-type]
    runtime = runtime_of(request)
    collection = await library.resolve_collection(runtime, collection_id)
    options = {} if body is None or body.limit is None else {"limit": body.limit}
    return _accepted(await runtime.jobs.submit(runtime, "refresh", collection.id, options))


@get("/api/v1/collections/{collection_id:str}/export")
async def export_collection(request: Request, collection_id: CollectionIdPath) -> CollectionDefinition:
    """The collection as a portable ``vid2context.collection`` v1 file: no transcripts."""
    return await library.export_collection(runtime_of(request), collection_id)


@post("/api/v1/collections/import", status_code=201, exception_handlers=BODY_ERRORS)
async def import_collection(
    request: Request,
    data: JSONBody[CollectionDefinition],
    refresh: Annotated[
        str | None, QueryParameter(description="1 to ingest the videos and sources now (inline).")
    ] = None,
) -> CollectionResult:
    """A new collection from a definition; its videos wait for a refresh unless ``refresh=1``."""
    now = parse_bool("refresh", refresh)
    collection, summary = await library.import_collection(
        runtime_of(request), await request.body(), refresh=now
    )
    return CollectionResult(collection=collection, summary=summary)


COLLECTION_ROUTES = [
    list_collections,
    create_collection,
    import_collection,
    get_collection,
    update_collection,
    delete_collection,
    add_items,
    remove_items,
    refresh,
    export_collection,
]
"""Every handler of this module, for ``create_app``."""
