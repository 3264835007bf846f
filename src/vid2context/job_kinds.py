"""The built-in job kinds: ``context``, ``items``, ``bundle``, ``ingest``, ``refresh`` and ``index``
here, ``brief`` and ``extract`` in ``answers/kinds.py``, ``bot_reply`` in ``bots/kind.py``.

Each kind checks its input and options before anything is queued (a bad request never becomes a
failed job), then runs on the same core functions the REST routes and MCP tools call (``items`` and
``bundle`` read their videos with ``batch.read_videos``, as ``/pack`` does)::

    context  input: one video URL or id             options: mode, lang, refresh
             result: the VideoContext
    items    input: a playlist, channel or feed     options: limit (1 to VID2CONTEXT_MAX_PLAYLIST_ITEMS,
                                                             the default), concurrency (1 to 16, default 4)
             reads every video, one item event each; result {items: VideoSummary[], failed: FailedInput[]}
    bundle   input: a URL, or an array of 1 to 100   options: formats, maxTokens, mode, lang
             lists are expanded; more than 100 videos is too-large. The zip is kept in the blob
             store; result {blobKey, filename, bytes} (read it with runtime.blobs.get_blob(blobKey))
    ingest   input: {collectionId, inputs: string[]} options: limit, concurrency
             library.add_to_collection; result {collection, summary}
    refresh  input: a collection id                  options: limit, concurrency
             library.refresh_collection; result {collection, summary}
    index    input: "library", or an array of saved    options: none
             video ids; embeds the windows of each video not indexed yet in the library's
             embedding space (search/indexing.py); result IndexSummary

One video that cannot be read never fails a job: it is an ``item`` event with ``outcome: error``
and a ``failed`` entry. Option names are the wire's (camelCase); unknown ones are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import library, pipeline
from .answers.kinds import ANSWER_KINDS
from .batch import MAX_VIDEOS as MAX_BUNDLE_VIDEOS
from .batch import read_videos
from .bots.kind import BOT_KINDS
from .bundle import build_bundle
from .collections_io import MAX_CONCURRENCY, MAX_VIDEOS, CollectionResult, check_run, is_int_in
from .errors import ErrorCode, VidError
from .formats import get_formatter
from .inputs import is_list
from .jobs import JobKind, JobRun
from .models import Base, FailedInput, VideoContext, VideoSummary
from .outline import text_costs
from .search.indexing import IndexSummary, index_library
from .storage.base import summarize

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["BUILTIN_KINDS", "MAX_BUNDLE_VIDEOS", "BundleResult", "CollectionResult", "ItemsResult"]

_LANG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_MAX_BUDGET = 10_000_000


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


# --- checks shared by the kinds -----------------------------------------------------------------


def _only(options: dict[str, Any], allowed: tuple[str, ...], kind: str) -> None:
    unknown = [str(name)[:40] for name in options if name not in allowed]
    if unknown:
        known = ", ".join(allowed) if allowed else "none"
        raise _bad(
            f"Unknown option {unknown[0]!r} for a {kind} job.",
            f"Leave that option out: a {kind} job takes {known}.",
        )


def _text_input(value: Any, kind: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"A {kind} job's input is {what}.", f"Give input as a string: {what}.")
    return value.strip()


def _read_options(options: dict[str, Any]) -> dict[str, Any]:
    """``mode``, ``lang`` and ``refresh``, as the pipeline takes them."""
    out: dict[str, Any] = {}
    mode = options.get("mode")
    if mode is not None:
        if mode not in pipeline.MODES:
            raise _bad(
                f"Unknown mode {str(mode)[:20]!r}.", "Give mode as one of: " + ", ".join(pipeline.MODES) + "."
            )
        out["mode"] = mode
    lang = options.get("lang")
    if lang is not None:
        if not isinstance(lang, str) or len(lang) > 35 or not _LANG.fullmatch(lang.replace("_", "-")):
            raise _bad("lang is not a language tag.", "Give a BCP-47 tag: en, de, pt-BR.")
        out["lang"] = lang.replace("_", "-")
    refresh = options.get("refresh")
    if refresh is not None:
        if not isinstance(refresh, bool):
            raise _bad("refresh must be true or false.", "Give refresh as a JSON boolean.")
        out["refresh"] = refresh
    return out


def _concurrency(options: dict[str, Any]) -> int:
    value = options.get("concurrency", 4)
    if not is_int_in(value, 1, MAX_CONCURRENCY):
        raise _bad(f"concurrency must be 1 to {MAX_CONCURRENCY}.", "Leave it out for 4.")
    return value


def _failed(text: str, error: VidError) -> FailedInput:
    return FailedInput(input=text[:200], code=error.code.value, message=error.message, hint=error.hint)


# --- the built-in kinds ---------------------------------------------------------------------------


async def _check_context(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    text = _text_input(value, "context", "one video URL or id")
    _only(options, ("mode", "lang", "refresh"), "context")
    ref = pipeline.resolve(runtime, text)
    if is_list(ref):
        raise _bad(f"{text[:80]} is a {ref.kind}, not a video.", "Use a job of kind items for lists.")
    return text, _read_options(options)


async def _run_context(run: JobRun) -> VideoContext:
    await run.progress(0, 1, "reading the video")
    context = await pipeline.get_context(run.runtime, run.input, ctx=run.ctx, **run.options)
    await run.item({"id": context.id, "outcome": "ok", "title": context.metadata.title})
    await run.progress(1, 1, "1 of 1 videos read")
    return context


async def _check_items(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    text = _text_input(value, "items", "a playlist, channel or feed URL")
    _only(options, ("limit", "concurrency"), "items")
    pipeline.resolve(runtime, text)
    cap = runtime.settings.max_playlist_items
    limit = options.get("limit", cap)
    if not is_int_in(limit, 1, cap):
        raise _bad(f"limit must be 1 to {cap}.", f"Give a whole number from 1 to {cap}, or leave it out.")
    return text, {"limit": limit, "concurrency": _concurrency(options)}


class ItemsResult(Base):
    items: list[VideoSummary]
    failed: list[FailedInput]


async def _run_items(run: JobRun) -> ItemsResult:
    refs = await pipeline.list_items(run.runtime, run.input, limit=run.options["limit"], ctx=run.ctx)
    found = await read_videos(
        run.runtime,
        refs,
        ctx=run.ctx,
        limit=None,
        concurrency=run.options["concurrency"],
        on_item=run.item,
        on_progress=run.progress_event,
    )
    return ItemsResult(
        items=[summarize(context) for context in found.contexts],
        failed=[_failed(label, error) for label, error in found.failed],
    )


async def _check_bundle(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    inputs = [value] if isinstance(value, str) else value
    if (
        not isinstance(inputs, list)
        or not inputs
        or not all(isinstance(i, str) and i.strip() for i in inputs)
    ):
        raise _bad(
            "A bundle job's input is a URL or an array of URLs.", 'Give "input": ["https://youtu.be/..."].'
        )
    if len(inputs) > MAX_BUNDLE_VIDEOS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"{len(inputs)} inputs given; a bundle holds at most {MAX_BUNDLE_VIDEOS} videos.",
            hint=f"Split them into bundles of at most {MAX_BUNDLE_VIDEOS}.",
        )
    for text in inputs:
        pipeline.resolve(runtime, text)
    _only(options, ("formats", "maxTokens", "mode", "lang"), "bundle")
    checked = _read_options({k: v for k, v in options.items() if k in ("mode", "lang")})
    formats = options.get("formats", [])
    if not isinstance(formats, list) or len(formats) > 16 or not all(isinstance(f, str) for f in formats):
        raise _bad("formats must be an array of formatter ids.", "GET /api/v1/formats lists them.")
    checked["formats"] = list(dict.fromkeys(get_formatter(f).id for f in formats))
    budget = options.get("maxTokens")
    if budget is not None and not is_int_in(budget, 1, _MAX_BUDGET):
        raise _bad(f"maxTokens must be 1 to {_MAX_BUDGET}.", "Leave it out for no budget.")
    checked["max_tokens"] = budget
    return [text.strip() for text in inputs], checked


class BundleResult(Base):
    blob_key: str
    """Where the zip is in the runtime's blob store."""
    filename: str
    bytes: int


async def _run_bundle(run: JobRun) -> BundleResult:
    runtime, options = run.runtime, run.options
    found = await read_videos(
        runtime,
        run.input,
        ctx=run.ctx,
        limit=MAX_BUNDLE_VIDEOS,
        mode=options.get("mode", "auto"),
        lang=options.get("lang"),
        on_item=run.item,
        on_progress=run.progress_event,
    )
    found.raise_if_empty("Give video URLs, or lists that hold some.")
    from .api.packs import section_route  # the bundle is read over REST: its outlines name routes

    lang = options.get("lang")
    reading = text_costs(lang)
    bundle = build_bundle(
        found.contexts,
        formats=options["formats"],
        max_tokens=options["max_tokens"],
        failed=found.failed,
        reader=section_route(options.get("mode"), lang),
        costs=lambda _: reading,
    )
    key = f"blobs/jobs/{run.id}/{bundle.root}.zip"
    await runtime.blobs.put_blob(key, bundle.data, content_type="application/zip")
    return BundleResult(blob_key=key, filename=f"{bundle.root}.zip", bytes=len(bundle.data))


def _collection_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise _bad(
            "A collection id is required.", "Give the id that POST /api/v1/collections returned (col_...)."
        )
    return value.strip()


def _run_options(options: dict[str, Any], kind: str) -> dict[str, Any]:
    _only(options, ("limit", "concurrency"), kind)
    limit, concurrency = check_run(options.get("limit"), options.get("concurrency", 4))
    return {"limit": limit, "concurrency": concurrency}


async def _check_ingest(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    if not isinstance(value, dict) or set(value) - {"collectionId", "inputs"}:
        raise _bad(
            "An ingest job's input is {collectionId, inputs}.",
            'Give "input": {"collectionId": "col_...", "inputs": ["https://youtu.be/..."]}.',
        )
    collection = await library.get_collection(runtime, _collection_id(value.get("collectionId")))
    inputs = value.get("inputs")
    if (
        not isinstance(inputs, list)
        or not 1 <= len(inputs) <= MAX_VIDEOS
        or not all(isinstance(i, str) for i in inputs)
    ):
        raise _bad(
            f"inputs must be an array of 1 to {MAX_VIDEOS} URLs or ids.", "Give videos or lists as strings."
        )
    return {"collectionId": collection.id, "inputs": inputs}, _run_options(options, "ingest")


async def _run_ingest(run: JobRun) -> CollectionResult:
    collection_id = run.input["collectionId"]
    summary = await library.add_to_collection(
        run.runtime, collection_id, run.input["inputs"],
        on_item=run.item, on_progress=run.progress_event, ctx=run.ctx, **run.options,
    )  # fmt: skip
    return CollectionResult(
        collection=await library.get_collection(run.runtime, collection_id), summary=summary
    )


async def _check_refresh(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    collection = await library.get_collection(runtime, _collection_id(value))
    return collection.id, _run_options(options, "refresh")


async def _run_refresh(run: JobRun) -> CollectionResult:
    summary = await library.refresh_collection(
        run.runtime, run.input, on_item=run.item, on_progress=run.progress_event, ctx=run.ctx, **run.options
    )
    return CollectionResult(collection=await library.get_collection(run.runtime, run.input), summary=summary)


async def _check_index(runtime: Runtime, value: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    _only(options, (), "index")
    if value in (None, "library"):
        ids = None
    elif (
        isinstance(value, list)
        and 1 <= len(value) <= MAX_VIDEOS
        and all(isinstance(v, str) and v.strip() for v in value)
    ):
        ids = [library.normalize_video_id(v) for v in value]
    else:
        raise _bad(
            'An index job\'s input is "library" or an array of saved video ids.',
            f'Give "input": "library" for every saved video, or up to {MAX_VIDEOS} ids such as youtube:jNQXAC9IVRw.',
        )
    if runtime.vectors is None:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "There is no vector index here, so nothing can be indexed.",
            hint="Tell the user the server needs a vector index (locally sqlite-vec, from the local extra; on "
            "the Worker a Vectorize index bound as VECTORS); do not retry.",
        )
    return ids, {}


async def _run_index(run: JobRun) -> IndexSummary:
    return await index_library(
        run.runtime, ctx=run.ctx, video_ids=run.input, on_item=run.item, on_progress=run.progress_event
    )


BUILTIN_KINDS: dict[str, JobKind] = {
    "context": JobKind(_check_context, _run_context, "one video's context"),
    "items": JobKind(_check_items, _run_items, "every video of a playlist, channel or feed"),
    "bundle": JobKind(_check_bundle, _run_bundle, "a zip of several videos, kept in the blob store"),
    "ingest": JobKind(_check_ingest, _run_ingest, "add videos and lists to a collection"),
    "refresh": JobKind(_check_refresh, _run_refresh, "read a collection's sources for new videos"),
    "index": JobKind(_check_index, _run_index, "embed saved videos not indexed yet, for search"),
    **ANSWER_KINDS,
    **BOT_KINDS,
}
