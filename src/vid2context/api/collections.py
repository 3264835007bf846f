"""Collections: named groups of saved videos that can follow lists (playlists, channels).

Every route of the contract's "Library and collections" table, on ``library.py``::

    GET    /collections                    {collections: Collection[]}
    POST   /collections                    201 Collection            {name, description?, sources?, watch?}
    GET    /collections/{id}               Collection & {videos, pending, watch: {schedule, state} | null}
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
the field). A collection id that cannot exist (not ``[A-Za-z0-9_-]``, too long) is ``not-found``
like an unknown one, with the same hint.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, delete, get, patch, post
from litestar.params import JSONBody, Parameter, QueryParameter
from msgspec import UNSET, UnsetType

from .. import library
from ..errors import ErrorCode, VidError
from ..jobs import Job
from ..models import Base, Collection, CollectionDefinition, RefreshSummary
from .params import BODY_ERRORS, decode_body, parse_bool, runtime_of

__all__ = [
    "COLLECTION_ROUTES",
    "CollectionCreate",
    "CollectionImported",
    "CollectionPatch",
    "CollectionsResponse",
    "IngestRequest",
    "RefreshRequest",
    "RemoveRequest",
    "WatchSchedule",
]

_COLLECTION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LIMIT = Annotated[int, msgspec.Meta(ge=1, le=5_000)]

CollectionIdPath = Annotated[str, Parameter(description="The collection's id (col_...).")]


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


class CollectionsResponse(Base):
    collections: list[Collection]


class CollectionImported(Base, omit_defaults=True):
    collection: Collection
    summary: RefreshSummary | None = None
    """Only with ``refresh=1``: what the first ingest did."""


def _checked_id(collection_id: str) -> str:
    if not _COLLECTION_ID.fullmatch(collection_id):
        shown = collection_id if len(collection_id) <= 60 else collection_id[:60] + "..."
        raise VidError(
            ErrorCode.NOT_FOUND,
            f"There is no collection {shown!r}.",
            hint="List collections with GET /api/v1/collections (or list_collections).",
        )
    return collection_id


def _schedule(watch: WatchSchedule | None) -> dict[str, Any] | None:
    return None if watch is None else msgspec.to_builtins(watch)


def _accepted(job: Job) -> Response[Job]:
    return Response(job, status_code=202)


@get("/api/v1/collections")
async def list_collections(request: Request) -> CollectionsResponse:
    """Every collection, most recently updated first."""
    return CollectionsResponse(collections=await library.list_collections(runtime_of(request)))


@post("/api/v1/collections", status_code=201, exception_handlers=BODY_ERRORS)
async def create_collection(request: Request, data: JSONBody[CollectionCreate]) -> Collection:
    """A new, empty collection; its ``sources`` (lists only) are read by the first refresh."""
    data = await decode_body(request, CollectionCreate)  # strict: Litestar's decode was lenient
    return await library.create_collection(
        runtime_of(request), data.name, data.description, data.sources, _schedule(data.watch)
    )


@get("/api/v1/collections/{collection_id:str}")
async def get_collection(request: Request, collection_id: CollectionIdPath) -> library.CollectionView:
    """The collection with its saved videos, pending inputs and watch state."""
    return await library.get_collection_view(runtime_of(request), _checked_id(collection_id))


@patch("/api/v1/collections/{collection_id:str}", exception_handlers=BODY_ERRORS)
async def update_collection(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[CollectionPatch]
) -> Collection:
    """Change the fields given; ``watch: null`` removes the schedule."""
    checked = _checked_id(collection_id)
    data = await decode_body(request, CollectionPatch)
    changes: dict[str, Any] = {
        name: getattr(data, name)
        for name in ("name", "description", "sources")
        if getattr(data, name) is not UNSET
    }
    if data.watch is not UNSET:
        changes["schedule"] = _schedule(data.watch)
    return await library.update_collection(runtime_of(request), checked, **changes)


@delete("/api/v1/collections/{collection_id:str}")
async def delete_collection(request: Request, collection_id: CollectionIdPath) -> None:
    """Delete the collection and its items; saved transcripts stay in the library."""
    await library.delete_collection(runtime_of(request), _checked_id(collection_id))


@post("/api/v1/collections/{collection_id:str}/items", status_code=202, exception_handlers=BODY_ERRORS)
async def add_items(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[IngestRequest]
) -> Response[Job]:
    """Queue an ``ingest`` job that reads the inputs (lists expanded) into the collection."""
    checked = _checked_id(collection_id)
    data = await decode_body(request, IngestRequest)
    runtime = runtime_of(request)
    options = {} if data.limit is None else {"limit": data.limit}
    job = await runtime.jobs.submit(
        runtime, "ingest", {"collectionId": checked, "inputs": data.inputs}, options
    )
    return _accepted(job)


@delete("/api/v1/collections/{collection_id:str}/items", status_code=200, exception_handlers=BODY_ERRORS)
async def remove_items(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[RemoveRequest]
) -> Collection:
    """Take videos out; a refresh never adds them back (an explicit add does)."""
    checked = _checked_id(collection_id)
    data = await decode_body(request, RemoveRequest)
    return await library.remove_from_collection(runtime_of(request), checked, data.video_ids)


@post("/api/v1/collections/{collection_id:str}/refresh", status_code=202, exception_handlers=BODY_ERRORS)
async def refresh(
    request: Request, collection_id: CollectionIdPath, data: JSONBody[RefreshRequest | None] = None
) -> Response[Job]:
    """Queue a ``refresh`` job: pending inputs first, then the sources' new videos."""
    checked = _checked_id(collection_id)
    body = await decode_body(request, RefreshRequest | None) if await request.body() else None  # type: ignore[arg-type]
    runtime = runtime_of(request)
    options = {} if body is None or body.limit is None else {"limit": body.limit}
    return _accepted(await runtime.jobs.submit(runtime, "refresh", checked, options))


@get("/api/v1/collections/{collection_id:str}/export")
async def export_collection(request: Request, collection_id: CollectionIdPath) -> CollectionDefinition:
    """The collection as a portable ``vid2context.collection`` v1 file: no transcripts."""
    return await library.export_collection(runtime_of(request), _checked_id(collection_id))


@post("/api/v1/collections/import", status_code=201, exception_handlers=BODY_ERRORS)
async def import_collection(
    request: Request,
    data: JSONBody[CollectionDefinition],
    refresh: Annotated[
        str | None, QueryParameter(description="1 to ingest the videos and sources now (inline).")
    ] = None,
) -> CollectionImported:
    """A new collection from a definition; its videos wait for a refresh unless ``refresh=1``."""
    now = parse_bool("refresh", refresh)
    collection, summary = await library.import_collection(
        runtime_of(request), await request.body(), refresh=now
    )
    return CollectionImported(collection=collection, summary=summary)


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
