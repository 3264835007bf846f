"""Embedding what is saved: each video's transcript windows and on-screen text, into the vector index.

Three ways in, one function underneath (``index_video``):

- **At save.** ``pipeline`` calls ``index_saved`` after it saved a context it fetched (unless
  ``VID2CONTEXT_EMBED_ON_SAVE=0``). The save has already happened: an embedding that fails never
  fails it. The video stays keyword-searchable, the failure is an ``Attempt`` of the answer
  (stage ``embed``, or ``save`` for the vector write) and the last failure is kept in the KV
  store (``index:last-failure``), which health shows; search then says ``vector: partial``.
  Replacing a transcript (``refresh``) replaces the video's vectors (``replace_video``).
- **Backfill.** ``index_library`` walks the library (newest first), a video at a time, for a
  library saved before embeddings were set up or after a model change; ``vid2context index`` and
  the ``index`` job kind run it. Idempotent, hence resumable: a video whose windows the index
  already holds in that space (``window_ids`` equal to the windows of its transcript now) is
  skipped, so a run stopped half-way and started again embeds only what is left. Batches are
  bounded below: the embedder sends at most its ``max_batch`` texts a call (Workers AI: 100) and
  the index writes at most ``MAX_BATCH`` vectors a call (Vectorize: 1,000).
- **Search** reads ``choose_space`` to know which space to query, and ``coverage`` to know
  whether every video it searched is in it.

Which space: the spaces the index holds, most videos first, the first one an enabled rung can
embed for (``pick_embedder``); when none can, the first enabled rung's own (a new index is
started there, and the old one names the model that would read it). No rung at all: nothing is
embedded, silently at save (``vector: disabled`` in search, with the reason).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import msgspec

from ..batch import OnEvent, emit
from ..batch import error_body as item_error
from ..ctx import Ctx
from ..errors import SURFACE, ErrorCode, VidError, per_surface
from ..models import Attempt, Base, EmbeddingSpace, FailedInput, VideoContext
from ..pipeline import run_rung
from ..runtime import Runtime
from .embedders.base import space_of
from .embedders.ladder import Pick, embed_texts, pick_embedder
from .vectors import SpaceCount, VectorRecord
from .windows import index_windows

__all__ = [
    "FAILURE_KEY",
    "IndexFailure",
    "IndexSummary",
    "Indexed",
    "SpaceChoice",
    "VectorStatus",
    "choose_space",
    "coverage",
    "index_library",
    "index_saved",
    "index_video",
    "last_failure",
]

log = logging.getLogger("vid2context.indexing")

FAILURE_KEY = "index:last-failure"
"""The KV key of the last embedding failure (``IndexFailure`` as JSON), for health."""
FAILURE_TTL_S = 7 * 24 * 60 * 60
PAGE = 200


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class IndexFailure(Base):
    """The last video that could not be embedded, and why."""

    video_id: str
    code: str
    message: str
    at: str


class IndexSummary(Base):
    """What a backfill did: ``indexed`` videos embedded now, ``skipped`` already indexed (or with
    nothing to embed), ``failed`` with their errors; ``total`` videos in the library."""

    space: EmbeddingSpace | None = None
    embedder: str | None = None
    total: int = 0
    indexed: int = 0
    skipped: int = 0
    windows: int = 0
    failed: list[FailedInput] = []


@dataclass
class SpaceChoice:
    """The space to write and search, the rungs that embed for it, and what the index holds."""

    space: EmbeddingSpace | None
    """``None`` when no rung is set up, or when the first rung's dimension is not known yet."""
    pick: Pick
    held: list[SpaceCount] = field(default_factory=list)

    @property
    def count(self) -> SpaceCount | None:
        """The index's count of ``space``, ``None`` when it holds nothing of it."""
        return next((c for c in self.held if c.space == self.space), None)


async def choose_space(runtime: Runtime) -> SpaceChoice:
    """Which space this runtime indexes into and searches (see the module docstring). No
    embedding is done; one read of the index's spaces."""
    held = await runtime.vectors.spaces() if runtime.vectors is not None else []
    for count in held:
        pick = pick_embedder(runtime, count.space)
        if pick.rungs:
            return SpaceChoice(count.space, pick, held)
    pick = pick_embedder(runtime, None)
    if pick.reason is not None or pick.embedder is None:
        if held:  # vectors of a model no rung here makes: say which
            pick = pick_embedder(runtime, held[0].space)
        return SpaceChoice(held[0].space if held else None, pick, held)
    return SpaceChoice(space_of(pick.embedder), pick_embedder(runtime, space_of(pick.embedder)), held)


@dataclass
class Indexed:
    """One video's indexing: ``ok`` (``windows`` written), ``skipped`` (already indexed, or no
    vector index or rung here: ``reason``) or ``error``."""

    video_id: str
    outcome: Literal["ok", "skipped", "error"]
    windows: int = 0
    space: EmbeddingSpace | None = None
    reason: str | None = None
    error: VidError | None = None


async def index_video(
    runtime: Runtime,
    context: VideoContext,
    *,
    choice: SpaceChoice | None = None,
    ctx: Ctx | None = None,
    attempts: list[Attempt] | None = None,
    skip_indexed: bool = False,
) -> Indexed:
    """Embed ``context``'s windows and make them its vectors in the chosen space (none: its
    vectors there are cleared, and it counts as indexed). Never raises a ``VidError``: a failure
    is the ``error`` outcome, with the rungs tried in ``attempts``. ``skip_indexed``: leave a video
    whose windows the index already holds in that space as it is."""
    vectors = runtime.vectors
    if vectors is None:
        return Indexed(context.id, "skipped", reason="no vector index here")
    choice = choice or await choose_space(runtime)
    if choice.pick.reason is not None:
        return Indexed(context.id, "skipped", reason=choice.pick.reason.message)
    attempts = [] if attempts is None else attempts
    windows = index_windows(context)
    space = choice.space
    try:
        if skip_indexed and space is not None:
            held = await vectors.window_ids(space, context.id)
            if held == sorted(w.id for w in windows) and (
                held or context.id in await vectors.indexed(space, [context.id])
            ):
                return Indexed(context.id, "skipped", space=space, reason="already indexed")
        if not windows:
            if space is None:
                return Indexed(context.id, "skipped", reason="nothing to embed")
            await run_rung(
                attempts,
                f"vectors/{vectors.id}",
                "save",
                lambda: vectors.replace_video(space, context.id, []),
            )
            return Indexed(context.id, "ok", space=space)
        tried: list[Attempt] = []
        try:
            made = await embed_texts(runtime, [w.text for w in windows], space=space, ctx=ctx, attempts=tried)
        finally:  # the rungs that ran, not the ones left out for want of a key: those are health's
            attempts.extend(a for a in tried if a.outcome != "skipped" or a.reason == "other-model")
        records = [VectorRecord(window, vector) for window, vector in zip(windows, made.vectors, strict=True)]
        await run_rung(
            attempts,
            f"vectors/{vectors.id}",
            "save",
            lambda: vectors.replace_video(made.space, context.id, records),
        )
        return Indexed(context.id, "ok", windows=len(records), space=made.space)
    except VidError as error:
        await _remember(runtime, context.id, error)
        return Indexed(context.id, "error", space=space, reason=error.code.value, error=error)


async def _remember(runtime: Runtime, video_id: str, error: VidError) -> None:
    failure = IndexFailure(video_id=video_id, code=error.code.value, message=error.message[:300], at=_now())
    try:
        await runtime.kv.put(FAILURE_KEY, msgspec.json.encode(failure).decode(), ttl=FAILURE_TTL_S)
    except Exception:  # the record of a failure must not become one
        log.warning("could not record the embedding failure of %s", video_id, exc_info=True)


async def last_failure(runtime: Runtime) -> IndexFailure | None:
    """The last embedding failure recorded (for health), or ``None``."""
    try:
        raw = await runtime.kv.get(FAILURE_KEY)
        return msgspec.json.decode(raw, type=IndexFailure) if raw else None
    except Exception:
        return None


async def index_saved(runtime: Runtime, context: VideoContext, ctx: Ctx, attempts: list[Attempt]) -> None:
    """The save path's step (``pipeline``): index ``context`` unless turned off; a failure is an
    attempt in ``attempts`` and the KV's last failure, never an exception."""
    if not runtime.settings.embed_on_save or runtime.vectors is None:
        return
    try:
        await index_video(runtime, context, ctx=ctx, attempts=attempts)
    except Exception:  # a bug in indexing must not lose the save that already happened
        log.exception("indexing %s failed", context.id)
        attempts.append(Attempt(id="index", stage="embed", outcome="error", reason=ErrorCode.INTERNAL.value))


async def index_library(
    runtime: Runtime,
    *,
    ctx: Ctx | None = None,
    video_ids: Sequence[str] | None = None,
    on_item: OnEvent | None = None,
    on_progress: OnEvent | None = None,
) -> IndexSummary:
    """Index every saved video (or those of ``video_ids``) not indexed yet in the chosen space.

    ``no-provider`` when there is no vector index or no embedding rung (nothing to do it with);
    one video that fails never stops the others. ``ctx`` stops the run when aborted (a job
    canceled): what was indexed stays indexed, and the next run skips it.
    """
    if runtime.vectors is None:
        raise VidError(
            ErrorCode.NO_PROVIDER,
            "There is no vector index here, so nothing can be indexed.",
            hint="Tell the user the server needs a vector index (locally sqlite-vec, from the local extra; on "
            "the Worker a Vectorize index bound as VECTORS); do not retry.",
        )
    choice = await choose_space(runtime)
    if choice.pick.reason is not None:
        raise choice.pick.reason
    summary = IndexSummary(
        space=choice.space, embedder=choice.pick.embedder.id if choice.pick.embedder else None
    )
    summary.total = len(video_ids) if video_ids is not None else await runtime.storage.count_videos()
    await emit(
        on_progress, {"done": 0, "total": summary.total, "message": f"{summary.total} videos to check"}
    )
    done = 0
    async for video_id in _video_ids(runtime, video_ids):
        if ctx is not None:
            ctx.check()
        context = await runtime.storage.get_context(video_id)
        if context is None:
            continue  # deleted meanwhile
        outcome = await index_video(runtime, context, choice=choice, ctx=ctx, skip_indexed=True)
        if outcome.outcome == "ok":
            summary.indexed += 1
            summary.windows += outcome.windows
            if choice.space is None and outcome.space is not None:  # learned from the first answer
                choice = SpaceChoice(outcome.space, pick_embedder(runtime, outcome.space), choice.held)
                summary.space = outcome.space
            await emit(on_item, {"id": video_id, "outcome": "ok", "title": context.metadata.title})
        elif outcome.outcome == "skipped":
            summary.skipped += 1
            await emit(on_item, {"id": video_id, "outcome": "skipped", "title": context.metadata.title})
        else:
            assert outcome.error is not None
            if outcome.error.code is ErrorCode.CANCELED or (ctx is not None and ctx.aborted):
                raise outcome.error
            summary.failed.append(
                FailedInput(
                    input=video_id,
                    code=outcome.error.code.value,
                    message=outcome.error.message,
                    hint=outcome.error.hint,
                )
            )
            await emit(on_item, {"id": video_id, "outcome": "error", "error": item_error(outcome.error)})
        done += 1
        message = f"{done} of {summary.total} videos checked, {summary.indexed} indexed"
        await emit(on_progress, {"done": done, "total": summary.total, "message": message})
    return summary


async def _video_ids(runtime: Runtime, video_ids: Sequence[str] | None):  # type: ignore[no-untyped-def]
    """The ids to index: those given, else the library's, newest first, a page at a time."""
    if video_ids is not None:
        for video_id in dict.fromkeys(video_ids):
            yield video_id
        return
    cursor: str | None = None
    while True:
        page = await runtime.storage.list_videos(limit=PAGE, cursor=cursor)
        for summary in page.items:
            yield summary.id
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


class VectorStatus(Base):
    """Whether the vector side can search some videos, and how many of them it holds.

    ``state``: ``off`` (no vector index here), ``disabled`` (no embedding rung for the index's
    space), ``partial`` (some of the ``videos`` are not ``indexed`` in ``space``) or ``ok``.
    """

    state: Literal["ok", "partial", "disabled", "off"]
    reason: str | None = None
    hint: str | None = None
    index: str | None = None
    """The vector index backend: ``sqlite-vec``, ``vectorize``, ``memory``."""
    space: EmbeddingSpace | None = None
    embedder: str | None = None
    """The rung that embeds queries for ``space``."""
    videos: int = 0
    indexed: int = 0


NOT_INDEXED_HINT = per_surface(
    rest='Index them with POST /api/v1/jobs {"kind": "index", "input": "library"} (or vid2context index '
    "on the server); until then they are found by keyword only.",
    mcp="They are found by keyword only until the server indexes them: tell the user to run vid2context "
    "index on the server; do not retry.",
)


def no_index_reason(runtime: Runtime) -> tuple[str, str]:
    """Why this runtime has no vector index, and what would give it one."""
    if runtime.name == "worker":
        return (
            "This Worker has no Vectorize index bound as VECTORS, so search is by keyword only.",
            "Bind a Vectorize index as VECTORS (the Cloudflare deploy guide creates it).",
        )
    return (
        "There is no vector index here (sqlite-vec could not be loaded), so search is by keyword only.",
        "Install the local extra, which brings sqlite-vec and pysqlite3.",
    )


async def coverage(
    runtime: Runtime, choice: SpaceChoice | None = None, video_ids: Sequence[str] | None = None
) -> VectorStatus:
    """The vector side's state for ``video_ids`` (every saved video when ``None``)."""
    if runtime.vectors is None:
        reason, hint = no_index_reason(runtime)
        return VectorStatus(state="off", reason=reason, hint=hint)
    choice = choice or await choose_space(runtime)
    status = VectorStatus(state="ok", index=runtime.vectors.id, space=choice.space)
    if video_ids is None:
        status.videos = await runtime.storage.count_videos()
        count = choice.count
        status.indexed = min(status.videos, count.videos if count is not None else 0)
    else:
        wanted = list(dict.fromkeys(video_ids))
        status.videos = len(wanted)
        if choice.space is not None and wanted:
            status.indexed = len(await runtime.vectors.indexed(choice.space, wanted))
    if choice.pick.reason is not None:
        status.state, status.reason, status.hint = (
            "disabled",
            choice.pick.reason.message,
            choice.pick.reason.hint,
        )
        return status
    status.embedder = choice.pick.embedder.id if choice.pick.embedder else None
    missing = status.videos - status.indexed
    if missing > 0:
        model = choice.space.model if choice.space is not None else "the embedding model"
        status.state = "partial"
        status.reason = (
            f"{missing} of the {status.videos} videos searched are not indexed in {model} yet"
            if status.indexed
            else f"None of the {status.videos} videos searched is indexed in {model} yet"
        ) + " (saved before embeddings were set up, or their embedding failed)."
        status.hint = NOT_INDEXED_HINT[SURFACE.get()]
    return status
