"""How the queue (``jobs_queued.py``) cuts a job into units, one queue message each.

A job whose work is many videos is planned first (its lists expanded, videos already held
skipped), then each video is a unit of its own, and a last step puts the results together::

    ingest   plan: library.plan_ingest(inputs)      unit: read one video   finish: memberships, RefreshSummary
    refresh  plan: library.plan_ingest(None)        unit: read one video   finish: as ingest, then checkedAt
    items    plan: pipeline.list_items(input)       unit: read one video   finish: ItemsResult

``context`` is cut into pieces of a long upload (``job_pieces.py``), one unit each, and runs whole
otherwise; the other kinds (``bundle``, ``index``) run whole as one unit. A unit's result is
plain JSON (its ``item`` event plus what finishing needs), kept with the unit in the ledger, so
the isolate that finishes need not be the one that read the video. A video that cannot be read
is an ``error`` item, as on the in-process queue; only an unexpected failure is retried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from . import library, pipeline
from .batch import OnEvent, error_body
from .collections_io import CollectionResult
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .job_kinds import ItemsResult
from .models import FailedInput, RefreshSummary, VideoSummary
from .storage.base import summarize

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["SPLITS", "TRANSIENT", "Planned", "Split", "UnitRun", "read_unit"]

TRANSIENT = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.TIMEOUT, ErrorCode.UPSTREAM})
"""A video failing with one of these is tried again by the queue (the in-process queue records
it at once); any other code is the video's answer."""


@dataclass
class Planned:
    units: list[dict[str, Any]]
    """One payload per unit, in order: ``{id, input, url, via?}``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What finishing needs besides the units' results (JSON)."""
    whole: bool = False
    """No units: the kind runs whole in the plan's message (``job_pieces``: an upload that fits
    one request, or any video that is not an upload)."""


Plan = Callable[["Runtime", Any, dict[str, Any], Ctx, OnEvent], Awaitable[Planned]]
Finish = Callable[["Runtime", Any, dict[str, Any], dict[str, Any], list[dict[str, Any]]], Awaitable[Any]]
UnitRun = Callable[["Runtime", dict[str, Any], Ctx], Awaitable[dict[str, Any]]]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _failed(text: str, error: VidError, via: str | None) -> FailedInput:
    return FailedInput(
        input=text, code=error.code.value, message=error.message, hint=error.hint,
        cause=f"from {via}" if via else None,
    )  # fmt: skip


async def read_unit(runtime: Runtime, payload: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    """Read one video (saving it in the library, as every read does): ``{item, summary}`` or
    ``{item, failed}``, with ``retry: true`` (and ``retryAfter``) when the failure is transient."""
    try:
        context = await pipeline.get_context(runtime, payload["url"], ctx=ctx)
    except VidError as error:
        failed = _failed(payload["input"], error, payload.get("via"))
        item = {"id": payload["id"], "outcome": "error", "error": error_body(error)}
        result = {"item": item, "failed": msgspec.to_builtins(failed)}
        if error.code in TRANSIENT:
            result.update(retry=True, retryAfter=error.retry_after or 0)
        return result
    item = {"id": context.id, "outcome": "ok", "title": context.metadata.title}
    return {"item": item, "summary": msgspec.to_builtins(summarize(context))}


@dataclass(frozen=True, slots=True)
class Split:
    """How a kind is cut up: ``plan`` the units, ``run`` one (its result is plain JSON; with
    ``retry: true`` it is tried again), ``finish`` them together."""

    plan: Plan
    finish: Finish
    run: UnitRun = read_unit
    todo: str = "videos to read"
    done: str = "videos read"
    """The progress messages' words for the units (``3 of 7 videos read``)."""
    whole_or_nothing: bool = False
    """A unit that fails for good fails the job (a piece of a transcript), instead of being a
    failed item beside the others (a video of an ingest)."""
    item: Callable[[Any], dict[str, Any]] | None = None
    """The job's one ``item`` event, made of its result and written with its end, for kinds whose
    units are not videos (``None``: each unit's result carries its own)."""


def _payload(candidate: Any) -> dict[str, Any]:
    return {"id": candidate.ref.id, "input": candidate.input, "url": candidate.ref.url or candidate.ref.id,
            "via": candidate.via}  # fmt: skip


async def _plan_collection(
    runtime: Runtime, collection_id: str, inputs: list[str] | None, options: dict[str, Any], ctx: Ctx,
    on_item: OnEvent,
) -> Planned:  # fmt: skip
    todo, skipped, failed = await library.plan_ingest(
        runtime, collection_id, inputs, concurrency=options["concurrency"], on_item=on_item, ctx=ctx
    )
    limit = options.get("limit")
    now, later = (todo, []) if limit is None else (todo[:limit], todo[limit:])
    extra = {
        "skipped": skipped,
        "failed": msgspec.to_builtins(failed),
        "later": [[c.input, c.ref.id] for c in later],
        "checkedAt": _now(),
    }
    return Planned(units=[_payload(c) for c in now], extra=extra)


async def _plan_ingest(
    runtime: Runtime, value: Any, options: dict[str, Any], ctx: Ctx, on_item: OnEvent
) -> Planned:
    return await _plan_collection(runtime, value["collectionId"], value["inputs"], options, ctx, on_item)


async def _plan_refresh(
    runtime: Runtime, value: Any, options: dict[str, Any], ctx: Ctx, on_item: OnEvent
) -> Planned:
    return await _plan_collection(runtime, value, None, options, ctx, on_item)


def _split_results(results: list[dict[str, Any]]) -> tuple[list[VideoSummary], list[FailedInput]]:
    added = [msgspec.convert(r["summary"], VideoSummary) for r in results if "summary" in r]
    failed = [msgspec.convert(r["failed"], FailedInput) for r in results if "failed" in r]
    return added, failed


async def _finish_collection(
    runtime: Runtime, collection_id: str, extra: dict[str, Any], results: list[dict[str, Any]],
    payloads: list[dict[str, Any]],
) -> RefreshSummary:  # fmt: skip
    added, failed = _split_results(results)
    saved = [
        (p["input"], r["summary"]["id"]) for p, r in zip(payloads, results, strict=True) if "summary" in r
    ]
    later = [(text, vid) for text, vid in extra.get("later", [])]
    await library.save_memberships(runtime, collection_id, saved, later)
    return RefreshSummary(
        collection_id=collection_id,
        added=added,
        skipped=int(extra.get("skipped", 0)),
        failed=[msgspec.convert(f, FailedInput) for f in extra.get("failed", [])] + failed,
        remaining=len(later),
        checked_at=extra.get("checkedAt", ""),
    )


async def _finish_ingest(
    runtime: Runtime, value: Any, options: dict[str, Any], extra: dict[str, Any], units: list[dict[str, Any]]
) -> CollectionResult:
    collection_id = value["collectionId"]
    summary = await _finish_collection(
        runtime, collection_id, extra, [u["result"] for u in units], [u["payload"] for u in units]
    )
    return CollectionResult(collection=await library.get_collection(runtime, collection_id), summary=summary)


async def _finish_refresh(
    runtime: Runtime, value: Any, options: dict[str, Any], extra: dict[str, Any], units: list[dict[str, Any]]
) -> CollectionResult:
    summary = await _finish_collection(
        runtime, value, extra, [u["result"] for u in units], [u["payload"] for u in units]
    )
    fresh = await runtime.storage.get_collection(value)
    if fresh is not None:  # the refresh's time, as library.refresh_collection records it
        await runtime.storage.put_collection(msgspec.structs.replace(fresh, checked_at=summary.checked_at))
    return CollectionResult(collection=await library.get_collection(runtime, value), summary=summary)


async def _plan_items(
    runtime: Runtime, value: Any, options: dict[str, Any], ctx: Ctx, on_item: OnEvent
) -> Planned:
    refs = await pipeline.list_items(runtime, value, limit=options["limit"], ctx=ctx)
    return Planned(units=[{"id": r.id, "input": r.url or r.id, "url": r.url or r.id} for r in refs])


async def _finish_items(
    runtime: Runtime, value: Any, options: dict[str, Any], extra: dict[str, Any], units: list[dict[str, Any]]
) -> ItemsResult:
    added, failed = _split_results([u["result"] for u in units])
    return ItemsResult(items=added, failed=failed)


SPLITS: dict[str, Split] = {
    "ingest": Split(_plan_ingest, _finish_ingest),
    "refresh": Split(_plan_refresh, _finish_refresh),
    "items": Split(_plan_items, _finish_items),
}
"""The kinds whose videos are units of their own; every other kind is one unit."""
