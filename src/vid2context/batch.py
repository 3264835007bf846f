"""Many videos in one call: the inputs expanded to distinct videos, then read a few at a time.

REST ``/pack`` and ``/bundle``, the MCP ``export_context_pack`` and ``export_obsidian`` tools, the
``items`` and ``bundle`` job kinds and collection ingest all read several videos at once. They do
it through this module so that they agree on what a batch is (four copies of this loop had drifted
apart: a bug in one video failed a whole request but not a job, failures came in different
orders, a call had one deadline or two)::

    inputs ──expand──▶ entries (distinct videos and failed inputs, in input order) ──read──▶ Batch

- **Expansion** is in input order: a video is itself, a list (playlist, channel) its videos, the
  first occurrence of a video keeps its place and label (the caller's own input for a video, the
  video's URL for a list's member). An input that cannot be read or expanded stays in its place
  as its error. ``limit`` bounds the distinct videos: beyond it the batch is refused
  (``too-large``, before any video is read) or, with ``leave_out``, the rest are counted and left,
  and each input that lost videos to the limit is named with how many (``left_out_by``), so a
  pack can say what it left out.
- **Reading** goes ``concurrency`` at a time (4 by default) so one call cannot flood the upstream.
  One video that cannot be read never fails the batch: its ``VidError`` is recorded (a bug is
  logged and recorded as ``internal``). Results keep input order, whichever finished first.
- **Hooks**: ``on_item`` gets one ``{id, outcome: ok|error, title?, error?}`` per video read and per
  input that failed to expand; ``on_progress`` gets ``{done, total, message}``, with ``total``
  ``None`` while a list is expanded, then ``0`` of ``total`` and one step per video. Either may be
  sync or async (a job's ``item`` and ``progress_event``, an MCP run's ``progress_event``).
- **Stopping**: when the call's ``Ctx`` is aborted (a job canceled, a request's timeout answered),
  no further video starts and the abort's own error is raised; a deadline that merely passes is
  a failure of the videos it cut, like any other.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import pipeline
from .ctx import Ctx
from .errors import ErrorCode, VidError
from .inputs import is_list
from .models import VideoContext, VideoRef
from .runtime import Runtime

__all__ = [
    "CONCURRENCY",
    "MAX_VIDEOS",
    "Batch",
    "Event",
    "OnEvent",
    "emit",
    "error_body",
    "read_each",
    "read_videos",
]

log = logging.getLogger("vid2context.batch")

MAX_VIDEOS = 100
"""Most distinct videos one pack, bundle or export reads."""
CONCURRENCY = 4
"""Videos read at once unless the caller says otherwise."""

Event = dict[str, Any]
OnEvent = Callable[[Event], Any]
"""A hook for ``item`` events ``{id, outcome, title?, error?}`` or ``progress`` events
``{done, total, message}``; it may be sync or async."""
Entry = tuple[str, VideoRef | VidError]
"""A place in the batch: the label a failure shows, and the video or the input's error."""


@dataclass(frozen=True, slots=True)
class Batch:
    """What a batch read: both lists in input order, failures with the label of their input."""

    contexts: list[VideoContext]
    failed: list[tuple[str, VidError]]
    total: int
    """Distinct videos plus inputs that failed before reading: every place the batch accounts for."""
    left_out: int = 0
    """Distinct videos beyond ``limit`` (with ``leave_out``)."""
    left_out_by: list[tuple[str, int]] = field(default_factory=list)
    """Each input that lost videos to ``limit``, in input order, with how many it lost (1 for a
    video; a list may lose many); the counts add up to ``left_out``."""

    def raise_if_empty(self, hint: str) -> None:
        """Nothing to answer with: raise the first failure (its own code), else ``bad-request``."""
        if self.contexts:
            return
        if self.failed:
            raise self.failed[0][1]
        raise VidError(ErrorCode.BAD_REQUEST, "The inputs name no videos.", hint=hint)


async def emit(hook: OnEvent | None, event: Event) -> None:
    """Call ``hook`` with ``event``, awaiting it when it is async."""
    if hook is not None:
        result = hook(event)
        if inspect.isawaitable(result):
            await result


def error_body(error: VidError) -> dict[str, Any]:
    """An item event's ``error``: ``{code, message, hint?}``."""
    body: dict[str, Any] = {"code": error.code.value, "message": error.message}
    if error.hint:
        body["hint"] = error.hint
    return body


def _stop_if_aborted(ctx: Ctx | None) -> None:
    if ctx is not None and ctx.aborted:
        ctx.check()  # raises the abort's own error (canceled, or timeout)


async def _expand(
    runtime: Runtime,
    inputs: Sequence[str | VideoRef],
    *,
    ctx: Ctx | None,
    limit: int | None,
    leave_out: bool,
    on_item: OnEvent | None,
    on_progress: OnEvent | None,
) -> tuple[list[Entry], list[tuple[str, int]]]:
    """The entries in input order, and each input ``leave_out`` left videos of, with how many."""
    cap = runtime.settings.max_playlist_items
    entries: list[Entry] = []
    seen: set[str] = set()
    dropped: set[str] = set()
    left_out: list[tuple[str, int]] = []
    for source in inputs:
        text = source if isinstance(source, str) else source.url or source.id
        try:
            ref = pipeline.resolve(runtime, source)
            found: list[tuple[str, VideoRef]] = [(text, ref)]
            if is_list(ref):
                await emit(on_progress, {"done": 0, "total": None, "message": "Expanding a list"})
                wanted = cap  # with leave_out, the whole list: how many are left out is counted
                if limit is not None and not leave_out:  # just enough to tell the limit is passed
                    wanted = max(1, min(limit - len(seen) + 1, cap))
                listed = await pipeline.list_items(runtime, ref, limit=wanted, ctx=ctx)
                found = [(video.url or video.id, video) for video in listed]
        except VidError as error:
            _stop_if_aborted(ctx)
            entries.append((text, error))
            await emit(on_item, {"id": text[:200], "outcome": "error", "error": error_body(error)})
            continue
        lost = 0
        for label, video in found:
            if video.id in seen or video.id in dropped:
                continue
            if limit is not None and leave_out and len(seen) >= limit:
                dropped.add(video.id)
                lost += 1
                continue
            seen.add(video.id)
            entries.append((label, video))
        if lost:
            left_out.append((text, lost))
        if limit is not None and len(seen) > limit:
            raise VidError(
                ErrorCode.TOO_LARGE,
                f"The inputs name more than {limit} videos.",
                hint=f"Split them into batches of at most {limit} videos each.",
            )
    return entries, left_out


async def read_each(
    runtime: Runtime,
    refs: Sequence[VideoRef],
    *,
    ctx: Ctx | None,
    mode: str = "auto",
    lang: str | None = None,
    concurrency: int = CONCURRENCY,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
) -> list[VideoContext | VidError]:
    """Read every video, ``concurrency`` at a time: one outcome per ref, in the order of ``refs``.

    The reading half of ``read_videos``, for callers that choose their videos themselves
    (collection ingest). ``ctx=None`` gives each video the pipeline's own default ``Ctx``.
    """
    gate = asyncio.Semaphore(concurrency)
    total, done = len(refs), 0
    await emit(on_progress, {"done": 0, "total": total, "message": f"{total} videos to read"})

    async def one(ref: VideoRef) -> VideoContext | VidError | None:
        nonlocal done
        async with gate:
            if ctx is not None and ctx.aborted:
                return None  # stopped: raised below, once the others have settled
            try:
                outcome: VideoContext | VidError = await pipeline.get_context(
                    runtime, ref, mode=mode, lang=lang, ctx=ctx
                )
            except VidError as error:
                outcome = error
            except Exception:  # a bug: logged, recorded as internal, and the others go on
                log.exception("reading %s failed", ref.id)
                outcome = VidError.internal()
        if isinstance(outcome, VidError):
            event: Event = {"id": ref.id, "outcome": "error", "error": error_body(outcome)}
        else:
            event = {"id": outcome.id, "outcome": "ok", "title": outcome.metadata.title}
        done += 1
        await emit(on_item, event)
        await emit(on_progress, {"done": done, "total": total, "message": f"{done} of {total} videos read"})
        return outcome

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(ref)) for ref in refs]
    _stop_if_aborted(ctx)  # a video was skipped (None) only if the call was aborted
    return [outcome for task in tasks if (outcome := task.result()) is not None]


async def read_videos(
    runtime: Runtime,
    inputs: Sequence[str | VideoRef],
    *,
    ctx: Ctx | None,
    limit: int | None = MAX_VIDEOS,
    leave_out: bool = False,
    mode: str = "auto",
    lang: str | None = None,
    concurrency: int = CONCURRENCY,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
) -> Batch:
    """Expand ``inputs`` (videos, lists, or refs already listed) and read every distinct video.

    ``limit`` bounds the distinct videos (``None``: no bound): more is ``too-large`` before any
    video is read, unless ``leave_out`` counts the rest in ``left_out`` instead. Never raises for
    one input or video; raises when ``ctx`` is aborted. The module docstring has the rules.
    """
    entries, left_out_by = await _expand(
        runtime, inputs, ctx=ctx, limit=limit, leave_out=leave_out, on_item=on_item, on_progress=on_progress
    )
    refs = [entry for _, entry in entries if isinstance(entry, VideoRef)]
    outcomes = iter(
        await read_each(
            runtime, refs, ctx=ctx, mode=mode, lang=lang, concurrency=concurrency,
            on_item=on_item, on_progress=on_progress,
        )
    )  # fmt: skip
    contexts: list[VideoContext] = []
    failed: list[tuple[str, VidError]] = []
    for label, entry in entries:
        result = next(outcomes) if isinstance(entry, VideoRef) else entry
        if isinstance(result, VidError):
            failed.append((label, result))
        else:
            contexts.append(result)
    return Batch(
        contexts=contexts,
        failed=failed,
        total=len(entries),
        left_out=sum(count for _, count in left_out_by),
        left_out_by=left_out_by,
    )
