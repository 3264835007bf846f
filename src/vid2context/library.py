"""The library of saved videos, and collections of them.

Every video the pipeline reads is saved; these functions list, read and forget those videos, and
group them into collections that follow lists (playlists, channels). REST and MCP both call them,
and both get the same shapes back (``CollectionSummary``, ``CollectionView``).

A collection is named by its id or by its name: names are unique (the stores refuse a second
one, compared trimmed and ignoring ASCII case, ``storage.common.name_key``), an id wins over a
name, and a name that twins from before the rule share is a ``bad-request`` listing their ids.

Collections keep one ``CollectionItem`` per video, in one of three states::

    pending ──ingest──▶ saved ──remove──▶ removed (a tombstone: refreshes skip it)
       ▲                                    │
       └── limit left it over               └── an explicit add of that video restores it

Ingesting (``add_to_collection``, ``refresh_collection``) expands lists through
``pipeline.list_items``, fetches each video through ``pipeline.get_context`` (so it lands in the
library), a few at a time with ``batch.read_each`` as every batch of videos is read, and reports a
``RefreshSummary``: one failing input or video becomes a ``FailedInput`` and never stops the
others. Videos beyond ``limit`` are kept as ``pending`` items, which the next refresh ingests
first, so ``remaining`` is work saved for later, not work lost.
The new items are written once, at the end, in input order, so ``added`` and the collection's
``videos`` keep the order the caller (or the playlist) gave, whichever video finished first.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from . import batch, pipeline
from .answers.translate import delete_translations
from .batch import OnEvent
from .collections_io import (
    MAX_NAME_CHARS,
    MAX_VIDEOS,
    CollectionSummary,
    Watch,
    WatchState,
    check_description,
    check_name,
    check_run,
    check_schedule,
    check_sources,
    check_video_key,
    check_videos,
    is_int_in,
    normalize_video_id,
    parse_definition,
    summary_of,
)
from .ctx import Ctx
from .errors import ErrorCode, VidError, per_surface, steps
from .inputs import is_list, parse_input
from .models import (
    Collection,
    CollectionDefinition,
    CollectionItem,
    FailedInput,
    Page,
    RefreshSummary,
    Schedule,
    VideoContext,
    VideoRef,
    VideoSummary,
)
from .runtime import Runtime
from .storage.base import summarize

log = logging.getLogger("vid2context.library")

__all__ = [
    "CollectionSummary",
    "CollectionView",
    "Watch",
    "WatchState",
    "add_to_collection",
    "create_collection",
    "delete_collection",
    "delete_video",
    "export_collection",
    "get_collection",
    "get_collection_view",
    "get_video",
    "import_collection",
    "list_collections",
    "list_videos",
    "normalize_video_id",
    "plan_ingest",
    "refresh_collection",
    "remove_from_collection",
    "resolve_collection",
    "save_memberships",
    "select_new",
    "update_collection",
]

MAX_PAGE = 200
_UNSET: Any = object()
_LIBRARY_HINT = steps("List saved videos with {library}; a video is saved when it is first read.")


class CollectionView(CollectionSummary, kw_only=True):
    """A collection's summary with its saved videos (in added order) and pending inputs."""

    videos: list[VideoSummary] = msgspec.field(default_factory=list)
    pending: list[str] = msgspec.field(default_factory=list)

    @property
    def inputs(self) -> list[str]:
        """What reading the collection reads: its saved videos (in added order), then its pending
        inputs; packs, exports and duplicates all take a collection this way."""
        return [video.id for video in self.videos] + list(self.pending)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


# --- saved videos ---------------------------------------------------------------------------------


async def list_videos(runtime: Runtime, limit: int = 50, cursor: str | None = None) -> Page[VideoSummary]:
    """Saved videos, newest first; ``limit`` 1 to 200."""
    if not is_int_in(limit, 1, MAX_PAGE):
        raise _bad(
            f"limit must be 1 to {MAX_PAGE}, not {str(limit)[:20]}.", f"Give limit from 1 to {MAX_PAGE}."
        )
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise _bad("The cursor is not valid.", "Pass the nextCursor of the previous page, or none.")
    return await runtime.storage.list_videos(limit=limit, cursor=cursor)


async def get_video(runtime: Runtime, video_id: str) -> VideoContext:
    """The saved context; ``not-found`` when the video was never read (or was deleted)."""
    key = normalize_video_id(video_id)
    context = await runtime.storage.get_context(key)
    if context is None:
        raise VidError(ErrorCode.NOT_FOUND, f"{key[:80]} is not in the library.", hint=_LIBRARY_HINT)
    return context


async def delete_video(runtime: Runtime, video_id: str) -> None:
    """Forget a saved video, its vectors in every space and its translations (collections keep
    their items; it drops out of their ``videos``). Those go first: should that fail, the video is
    still there to delete again, rather than gone with vectors that would still be found."""
    key = normalize_video_id(video_id)
    if runtime.vectors is not None:
        await runtime.vectors.delete_video(key)
    await delete_translations(runtime.blobs, key)
    if not await runtime.storage.delete_context(key):
        raise VidError(ErrorCode.NOT_FOUND, f"{key[:80]} is not in the library.", hint=_LIBRARY_HINT)


# --- collections ----------------------------------------------------------------------------------


def _new_id() -> str:
    return "col_" + secrets.token_urlsafe(9)  # 12 URL-safe characters, 72 random bits


async def _require(runtime: Runtime, reference: object) -> Collection:
    """The stored collection ``reference`` names: its id, else its name (compared trimmed, ASCII
    case ignored). An id wins over a name; a name that twins made before names were unique
    share is ``bad-request`` listing their ids."""
    if not isinstance(reference, str) or not reference.strip():
        raise _bad(
            "A collection id or name is required.",
            steps("Give its id (col_...) or name; {collections} lists them."),
        )
    text = reference.strip()
    shown = text if len(text) <= 60 else text[:57] + "..."
    if len(text) <= MAX_NAME_CHARS:
        collection = await runtime.storage.get_collection(text)
        if collection is not None:
            return collection
        named = await runtime.storage.find_collections(text)
        if len(named) == 1:
            return named[0]
        if named:
            ids = [c.id for c in named]
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"{len(ids)} collections are named {shown!r}: {', '.join(ids[:10])}.",
                hint=per_surface(
                    rest=f"Name one by its id ({ids[0]}, ...); renaming the others "
                    "(PATCH /api/v1/collections/{id}) makes the name unique again.",
                    mcp=f"Name one by its id ({ids[0]}, ...).",
                ),
            )
    raise VidError(
        ErrorCode.NOT_FOUND,
        f"There is no collection with the id or name {shown!r}.",
        hint=steps("List collections with {collections}, and give an id (col_...) or a name."),
    )


async def resolve_collection(runtime: Runtime, reference: str) -> CollectionSummary:
    """The collection named by its id or its unique name (see ``_require``)."""
    return summary_of(await _require(runtime, reference))


async def create_collection(
    runtime: Runtime,
    name: str,
    description: str | None = None,
    sources: list[str] | None = None,
    schedule: Schedule | dict[str, Any] | None = None,
) -> CollectionSummary:
    """A new, empty collection; its ``sources`` are read by the first refresh. Its name must be
    unused (``bad-request`` naming the collection that has it)."""
    now = _now()
    collection = Collection(
        id=_new_id(),
        name=check_name(name),
        description=check_description(description),
        sources=check_sources(sources, public=runtime.settings.public),
        schedule=check_schedule(schedule),
        created_at=now,
        updated_at=now,
    )
    await runtime.storage.put_collection(collection)
    return await resolve_collection(runtime, collection.id)


async def get_collection(runtime: Runtime, collection_id: str) -> CollectionSummary:
    """The collection by id or unique name."""
    return await resolve_collection(runtime, collection_id)


async def list_collections(runtime: Runtime) -> list[CollectionSummary]:
    """Every collection, most recently updated first."""
    return [summary_of(collection) for collection in await runtime.storage.list_collections()]


async def get_collection_view(runtime: Runtime, collection_id: str) -> CollectionView:
    collection = await _require(runtime, collection_id)
    items = await runtime.storage.list_items(collection.id)
    saved = [item.video_id for item in items if item.state == "saved"]
    videos = await runtime.storage.get_summaries(saved) if saved else []
    pending = [item.input or item.video_id for item in items if item.state == "pending"]
    summary = summary_of(collection)
    fields = {name: getattr(summary, name) for name in summary.__struct_fields__}
    return CollectionView(**fields, videos=videos, pending=pending)


async def update_collection(
    runtime: Runtime,
    collection_id: str,
    *,
    name: str = _UNSET,
    description: str | None = _UNSET,
    sources: list[str] | None = _UNSET,
    schedule: Schedule | dict[str, Any] | None = _UNSET,
) -> CollectionSummary:
    """Change the given fields only; ``None`` clears ``description``, ``sources`` or ``schedule``.
    A new name must be unused by the other collections."""
    collection = await _require(runtime, collection_id)
    changes: dict[str, Any] = {"updated_at": _now()}
    if name is not _UNSET:
        changes["name"] = check_name(name)
    if description is not _UNSET:
        changes["description"] = check_description(description)
    if sources is not _UNSET:
        changes["sources"] = check_sources(sources, public=runtime.settings.public)
    if schedule is not _UNSET:
        changes["schedule"] = check_schedule(schedule)
    await runtime.storage.put_collection(msgspec.structs.replace(collection, **changes))
    return await resolve_collection(runtime, collection.id)


async def delete_collection(runtime: Runtime, collection_id: str) -> None:
    """Delete the collection and its items; its videos stay in the library."""
    collection = await _require(runtime, collection_id)
    if not await runtime.storage.delete_collection(collection.id):
        raise VidError(ErrorCode.NOT_FOUND, f"There is no collection {collection.id!r}.")


async def remove_from_collection(
    runtime: Runtime, collection_id: str, video_ids: list[str]
) -> CollectionSummary:
    """Mark videos ``removed``: they leave ``videos`` and no refresh adds them back.

    An id the collection does not hold yet still gets its tombstone, so a video can be excluded
    from a source before a refresh reaches it.
    """
    collection = await _require(runtime, collection_id)
    if not isinstance(video_ids, (list, tuple)) or not video_ids or len(video_ids) > MAX_VIDEOS:
        raise _bad(
            f"videoIds must be a list of 1 to {MAX_VIDEOS} video ids.",
            "Give ids such as youtube:jNQXAC9IVRw.",
        )
    keys = [check_video_key(video_id, f"videoIds[{index}]") for index, video_id in enumerate(video_ids)]
    existing = {item.video_id: item for item in await runtime.storage.list_items(collection.id)}
    now = _now()
    tombstones = []
    for key in dict.fromkeys(keys):
        item = existing.get(key)
        tombstones.append(
            msgspec.structs.replace(item, state="removed")
            if item
            else CollectionItem(video_id=key, state="removed", added_at=now)
        )
    await runtime.storage.put_items(collection.id, tombstones)
    await runtime.storage.put_collection(msgspec.structs.replace(collection, updated_at=now))
    return await resolve_collection(runtime, collection.id)


# --- ingest -----------------------------------------------------------------------------------


@dataclass
class _Candidate:
    ref: VideoRef
    input: str
    """What the item records and a failure names: the caller's text, or the video URL of a list entry."""
    explicit: bool
    """Named by the caller (or pending): restores a removed video."""
    via: str | None = None
    """The list it came from."""


def _failed(text: str, error: VidError, via: str | None = None) -> FailedInput:
    return FailedInput(
        input=text,
        code=error.code.value,
        message=error.message,
        hint=error.hint,
        cause=f"from {via}" if via else None,
    )


async def _expand(
    runtime: Runtime,
    entries: list[tuple[Any, bool]],
    concurrency: int,
    on_item: OnEvent | None,
    ctx: Ctx | None,
) -> tuple[list[_Candidate], list[FailedInput]]:
    """Inputs to videos, lists expanded (a few at a time); both results in input order."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(raw: Any, explicit: bool) -> list[_Candidate] | FailedInput:
        text = raw.strip() if isinstance(raw, str) else str(raw)[:200]
        try:
            ref = pipeline.resolve(runtime, raw)
            if not is_list(ref):
                return [_Candidate(ref, text, explicit)]
            async with semaphore:
                refs = await pipeline.list_items(runtime, ref, ctx=ctx)
        except VidError as error:
            await batch.emit(on_item, {"id": text, "outcome": "error", "error": batch.error_body(error)})
            return _failed(text, error)
        return [_Candidate(item, item.url or item.id, False, via=text) for item in refs]

    expanded = await asyncio.gather(*(one(raw, explicit) for raw, explicit in entries))
    candidates = [c for group in expanded if not isinstance(group, FailedInput) for c in group]
    return candidates, [group for group in expanded if isinstance(group, FailedInput)]


async def select_new(
    runtime: Runtime, collection_id: str, candidates: list[_Candidate], on_item: OnEvent | None
) -> tuple[list[_Candidate], int]:
    """The candidates to read, one per video, and how many were skipped (saved already, or
    removed and not named by the caller); a ``skipped`` item event for each of those."""
    storage = runtime.storage
    items = {item.video_id: item for item in await storage.list_items(collection_id)}
    unique: dict[str, _Candidate] = {}
    for candidate in candidates:
        first = unique.setdefault(candidate.ref.id, candidate)
        first.explicit = first.explicit or candidate.explicit
    saved = [vid for vid in unique if vid in items and items[vid].state == "saved"]
    present = {summary.id for summary in await storage.get_summaries(saved)} if saved else set()
    todo: list[_Candidate] = []
    skipped = 0
    for vid, candidate in unique.items():
        state = items[vid].state if vid in items else None
        if (state == "saved" and vid in present) or (state == "removed" and not candidate.explicit):
            skipped += 1
            await batch.emit(on_item, {"id": vid, "outcome": "skipped"})
        else:
            todo.append(candidate)
    return todo, skipped


async def save_memberships(
    runtime: Runtime, collection_id: str, saved: list[tuple[str, str]], pending: list[tuple[str, str]]
) -> None:
    """Write ``(input, video id)`` pairs as saved and pending items, in that order, in one write.

    One write at the end, in input order: the collection lists its videos in a stable order, and
    a call cut short loses only memberships (the videos it read are in the library already).
    """
    storage = runtime.storage
    now = _now()
    new_items = [
        CollectionItem(video_id=vid, state="saved", input=text, added_at=now) for text, vid in saved
    ] + [CollectionItem(video_id=vid, state="pending", input=text, added_at=now) for text, vid in pending]
    if new_items:
        await storage.put_items(collection_id, new_items)
        fresh = await storage.get_collection(collection_id)
        if fresh is not None:
            await storage.put_collection(msgspec.structs.replace(fresh, updated_at=now))


async def _refresh_entries(runtime: Runtime, collection: Collection) -> list[tuple[Any, bool]]:
    """A refresh's inputs: the pending items (as named by the caller), then the sources."""
    pending = [
        (i.input or i.video_id, True)
        for i in await runtime.storage.list_items(collection.id)
        if i.state == "pending"
    ]
    return pending + [(source, False) for source in collection.sources]


async def plan_ingest(
    runtime: Runtime,
    collection_id: str,
    inputs: list[str] | None,
    *,
    concurrency: int = 4,
    on_item: OnEvent | None = None,
    ctx: Ctx | None = None,
) -> tuple[list[_Candidate], int, list[FailedInput]]:
    """What an ingest (``inputs``) or a refresh (``None``: the pending items, then the sources)
    would read, without reading it: ``(candidates to read, skipped, failed inputs)``. The queue's
    jobs read each candidate as a unit of their own (``job_units.py``)."""
    collection = await _require(runtime, collection_id)
    entries = (
        await _refresh_entries(runtime, collection) if inputs is None else [(raw, True) for raw in inputs]
    )
    candidates, failed = await _expand(runtime, entries, concurrency, on_item, ctx)
    todo, skipped = await select_new(runtime, collection.id, candidates, on_item)
    return todo, skipped, failed


async def _ingest(
    runtime: Runtime,
    collection: Collection,
    candidates: list[_Candidate],
    failed: list[FailedInput],
    *,
    limit: int | None,
    concurrency: int,
    on_item: OnEvent | None,
    on_progress: OnEvent | None,
    checked_at: str,
    ctx: Ctx | None,
) -> RefreshSummary:
    todo, skipped = await select_new(runtime, collection.id, candidates, on_item)
    now_batch, later = (todo, []) if limit is None else (todo[:limit], todo[limit:])
    outcomes = await batch.read_each(
        runtime,
        [candidate.ref for candidate in now_batch],
        ctx=ctx,
        concurrency=concurrency,
        on_item=on_item,
        on_progress=on_progress,
    )
    results = [
        summarize(outcome) if isinstance(outcome, VideoContext) else _failed(c.input, outcome, c.via)
        for c, outcome in zip(now_batch, outcomes, strict=True)
    ]
    added = [r for r in results if isinstance(r, VideoSummary)]
    failed.extend(r for r in results if isinstance(r, FailedInput))
    # One write at the end, in input order: the collection lists its videos in a stable order, and
    # a call cut short loses only memberships (the videos it read are in the library already).
    saved_now = [
        (c.input, r.id) for c, r in zip(now_batch, results, strict=True) if isinstance(r, VideoSummary)
    ]
    await save_memberships(runtime, collection.id, saved_now, [(c.input, c.ref.id) for c in later])
    if added:
        await _announce(runtime, collection.id, added)
    return RefreshSummary(
        collection_id=collection.id,
        added=added,
        skipped=skipped,
        failed=failed,
        remaining=len(later),
        checked_at=checked_at,
    )


async def _announce(runtime: Runtime, collection_id: str, added: list[VideoSummary]) -> None:
    """Tell ``runtime.on_added`` what joined the collection; a listener that fails is logged and
    never fails the ingest, whose videos are saved already."""
    for listener in list(runtime.on_added):
        try:
            await listener(collection_id, added)
        except Exception:
            log.exception("a listener for videos added to %s failed", collection_id)


async def add_to_collection(
    runtime: Runtime,
    collection_id: str,
    inputs: list[str],
    *,
    limit: int | None = None,
    concurrency: int = 4,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
    ctx: Ctx | None = None,
) -> RefreshSummary:
    """Ingest videos and lists (expanded) now, and make them items of the collection.

    A video already saved in the collection is ``skipped``; a removed one is restored only when
    named itself (a list that contains it skips it). A watch URL with ``list=`` adds its video;
    give the playlist URL to add the list. ``limit`` caps the videos read now, the rest wait as
    ``pending`` (counted in ``remaining``). ``added`` follows the order of ``inputs``; ``failed``
    lists the inputs that could not be read or expanded, then the videos that failed, in that order.
    Videos are read with ``batch.read_each``; ``ctx`` (a job's) stops the work when it is aborted,
    and without one each video gets the pipeline's own.
    """
    collection = await _require(runtime, collection_id)
    if isinstance(inputs, str) or not isinstance(inputs, (list, tuple)) or not 1 <= len(inputs) <= MAX_VIDEOS:
        raise _bad(
            f"inputs must be a list of 1 to {MAX_VIDEOS} videos or lists.", "Give an array of URLs or ids."
        )
    limit, concurrency = check_run(limit, concurrency)
    checked_at = _now()
    candidates, failed = await _expand(runtime, [(raw, True) for raw in inputs], concurrency, on_item, ctx)
    return await _ingest(
        runtime, collection, candidates, failed, limit=limit, concurrency=concurrency,
        on_item=on_item, on_progress=on_progress, checked_at=checked_at, ctx=ctx,
    )  # fmt: skip


async def refresh_collection(
    runtime: Runtime,
    collection_id: str,
    *,
    limit: int | None = None,
    concurrency: int = 4,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
    ctx: Ctx | None = None,
) -> RefreshSummary:
    """Ingest the ``pending`` items, then every source's videos the collection does not hold yet
    (saved or removed). A source that cannot be read is a ``FailedInput``; ``ctx`` as for
    ``add_to_collection``."""
    collection = await _require(runtime, collection_id)
    limit, concurrency = check_run(limit, concurrency)
    checked_at = _now()
    entries = await _refresh_entries(runtime, collection)
    candidates, failed = await _expand(runtime, entries, concurrency, on_item, ctx)
    summary = await _ingest(
        runtime, collection, candidates, failed, limit=limit, concurrency=concurrency,
        on_item=on_item, on_progress=on_progress, checked_at=checked_at, ctx=ctx,
    )  # fmt: skip
    fresh = await runtime.storage.get_collection(collection.id)
    if fresh is not None:
        await runtime.storage.put_collection(msgspec.structs.replace(fresh, checked_at=checked_at))
    return summary


# --- export and import ---------------------------------------------------------------------------


def _portable(video_id: str) -> str:
    """A video input another installation can read: its URL when it has one, else its id."""
    try:
        return parse_input(video_id).url or video_id
    except VidError:
        return video_id


async def export_collection(runtime: Runtime, collection_id: str) -> CollectionDefinition:
    """The collection as a ``vid2context.collection`` v1 definition: its saved and pending videos
    (as URLs or ids), sources and schedule; no transcripts and no tombstones."""
    collection = await _require(runtime, collection_id)
    items = await runtime.storage.list_items(collection.id)
    return CollectionDefinition(
        name=collection.name,
        description=collection.description,
        sources=list(collection.sources),
        videos=[_portable(item.video_id) for item in items if item.state in ("saved", "pending")],
        schedule=collection.schedule,
    )


async def import_collection(
    runtime: Runtime,
    definition: bytes | str | dict[str, Any] | CollectionDefinition,
    *,
    refresh: bool = False,
    limit: int | None = None,
    concurrency: int = 4,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
) -> tuple[CollectionSummary, RefreshSummary | None]:
    """A new collection from a definition; its videos wait as ``pending`` until a refresh, or are
    ingested at once (with the sources) when ``refresh`` is true. Nothing is stored when the
    definition is invalid."""
    checked = parse_definition(definition)
    sources = check_sources(checked.sources, public=runtime.settings.public)
    refs = check_videos(checked.videos, public=runtime.settings.public)
    check_run(limit, concurrency)
    now = _now()
    collection = Collection(
        id=_new_id(),
        name=checked.name,
        description=checked.description,
        sources=sources,
        schedule=checked.schedule,
        created_at=now,
        updated_at=now,
    )
    await runtime.storage.put_collection(collection)
    if refs:
        items = [
            CollectionItem(video_id=vid, state="pending", input=text, added_at=now)
            for vid, text in refs.items()
        ]
        await runtime.storage.put_items(collection.id, items)
    summary = None
    if refresh:
        summary = await refresh_collection(
            runtime,
            collection.id,
            limit=limit,
            concurrency=concurrency,
            on_item=on_item,
            on_progress=on_progress,
        )
    return await resolve_collection(runtime, collection.id), summary
