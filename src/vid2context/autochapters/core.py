"""Chapters for a video that has none: the one core of ``POST /api/v1/chapters``.

``make_chapters(runtime, request, ctx=...) -> ChaptersResult`` reads the video (library first,
as every route does), cuts its transcript where the subject changes (``texttiling.py``: an
embedding model's similarity when an embedding rung is set up, shared words otherwise, so it
always works offline), names each chapter, and keeps the chapters with the saved video
(``VideoContext.generated_chapters``): outlines and sections by chapter then use them when the
platform gave none, and say who made them.

Titles come from the language-model ladder when one is set up (``titles.py``), else from each
chapter's key phrases (``lexical.key_phrases``). ``llm`` says which: left out, the ladder when it
has a rung, else key phrases (and a rung that fails leaves key phrases, said in ``notes``);
``true`` or a ``ModelChoice``, the ladder or an error; ``false``, key phrases only. Summaries
are a model's or none: without one, ``notes`` says so rather than inventing them.

Checked before anything is fetched: the body's shape, ``summaries`` with ``llm: false``, a
required model that is not set up. Then: a video without words is ``no-transcript``; one that
already has chapters (the platform's, or made here before) is ``bad-request`` unless ``force``.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Literal

import msgspec

from ..answers.llm.ladder import LlmPick, plan_llm
from ..ctx import Ctx
from ..errors import ErrorCode, VidError
from ..formats.blocks import duration_of
from ..models import Attempt, Base, GeneratedChapter, GeneratedChapters, ModelChoice, VideoContext
from ..pipeline import get_context, run_rung
from ..runtime import Runtime
from ..search.embedders.ladder import embed_texts, pick_embedder
from ..search.windows import Window
from ..timecode import format_timestamp
from . import lexical, texttiling
from .titles import Drafted, Section, write_titles

__all__ = ["PRODUCER", "ChaptersRequest", "ChaptersResult", "make_chapters"]

PRODUCER = "chapters/texttiling"
MAX_URL_CHARS = 2048


class ChaptersRequest(Base, kw_only=True, forbid_unknown_fields=True):
    """``POST /api/v1/chapters``: ``{ url, force?, llm?, summaries?, lang? }``."""

    url: str | None = None
    force: bool = False
    """Make chapters even when the video has some (its own stay first in outlines)."""
    llm: bool | ModelChoice | None = None
    """Titles by the language-model ladder: left out, when one is set up; ``true`` or a model
    choice, required; ``false``, never (key phrases)."""
    summaries: bool = False
    """A summary per chapter, by the language model (none without one: ``notes`` says so)."""
    lang: str | None = None
    """The transcript language to read, as ``/context`` takes it."""


class ChaptersResult(Base, kw_only=True):
    """``{ videoId, chapters, producer, rung, model, source: 'auto', method, durationSec, notes,
    attempts }``; ``rung`` and ``model`` are ``null`` when the chapters are wholly offline."""

    video_id: str
    chapters: list[GeneratedChapter]
    producer: str = PRODUCER
    rung: str | None = None
    model: str | None = None
    source: Literal["auto"] = "auto"
    method: Literal["embeddings", "lexical"]
    duration_sec: float | None = None
    notes: list[str] = []
    attempts: list[Attempt] = []


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _check(request: ChaptersRequest) -> str:
    url = (request.url or "").strip()
    if not url:
        raise _bad(
            "Say which video to make chapters for.", "Give url as a video URL or id (youtube:jNQXAC9IVRw)."
        )
    if len(url) > MAX_URL_CHARS:
        raise VidError(
            ErrorCode.TOO_LARGE,
            f"url is {len(url):,} characters long; the limit is {MAX_URL_CHARS:,}.",
            hint="Give url as the video's address or id (youtube:jNQXAC9IVRw).",
        )
    if request.summaries and request.llm is False:
        raise _bad(
            "summaries need the language model, and llm is false.",
            "Leave llm out (or set it true) for summaries, or leave summaries out.",
        )
    return url


def _plan(runtime: Runtime, request: ChaptersRequest, ctx: Ctx) -> tuple[LlmPick | None, bool]:
    """The pick for the titles (``None`` for key phrases only) and whether it is required."""
    if request.llm is False:
        return None, False
    choice = request.llm if isinstance(request.llm, ModelChoice) else None
    required = request.llm is True or choice is not None
    pick = plan_llm(runtime, choice, ctx)
    if required and pick.reason is not None:
        pick.require()  # raises the reason with the attempts
    return pick, required


def _has_chapters(context: VideoContext, force: bool, notes: list[str]) -> None:
    own = context.metadata.chapters
    if force:
        if own:
            notes.append(f"The video has {len(own)} chapters of its own: outlines keep using those.")
        return
    if own:
        raise _bad(
            f"{context.id} already has {len(own)} chapters of its own.",
            "Read them with GET /api/v1/outline, or send force: true to make chapters anyway "
            "(outlines keep the video's own).",
        )
    made = context.generated_chapters
    if made is not None and made.chapters:
        raise _bad(
            f"{context.id} already has {len(made.chapters)} chapters made by {made.producer}"
            + (f" on {made.created_at[:10]}" if made.created_at else "")
            + ".",
            "Read them with GET /api/v1/outline, or send force: true to make them again.",
        )


async def _similarities(
    runtime: Runtime,
    tiles: list[Window],
    counts: list[Counter[str]],
    ctx: Ctx,
    attempts: list[Attempt],
    notes: list[str],
) -> tuple[list[float], Literal["embeddings", "lexical"], str | None]:
    """Gap similarities by the first embedding rung that answers, else by shared words."""
    pick = pick_embedder(runtime)
    if pick.rungs:
        try:
            made = await embed_texts(runtime, [tile.text for tile in tiles], ctx=ctx, attempts=attempts)
        except VidError as error:
            if error.code == ErrorCode.CANCELED:
                raise
            notes.append(f"Embedding failed ({error.message}); the cuts measure shared words instead.")
        else:
            return texttiling.vector_gaps(made.vectors), "embeddings", made.producer
    else:
        attempts.extend(pick.attempts)
        notes.append("No embedding rung is set up: the cuts measure shared words (lexical cohesion).")
    return texttiling.lexical_gaps(counts), "lexical", None


def _sections(
    context: VideoContext, cuts: list[int], end_sec: float, tile_counts: list[Counter[str]]
) -> list[Section]:
    segments = context.transcript.segments if context.transcript else []
    starts = [0.0] + [segments[i].start_sec for i in cuts]
    firsts = [0, *cuts]
    sections = []
    for n, first in enumerate(firsts):
        last = firsts[n + 1] if n + 1 < len(firsts) else len(segments)
        part = segments[first:last]
        end = starts[n + 1] if n + 1 < len(starts) else end_sec
        text = "\n".join(segment.text for segment in part)
        phrases = lexical.key_phrases(text, tile_counts)
        sections.append(Section(start_sec=starts[n], end_sec=end, segments=part, phrases=phrases))
    return sections


async def _titles(
    runtime: Runtime,
    context: VideoContext,
    sections: list[Section],
    pick: LlmPick | None,
    required: bool,
    request: ChaptersRequest,
    ctx: Ctx,
    attempts: list[Attempt],
    notes: list[str],
) -> list[Drafted | None]:
    """The model's titles when there is a model to ask, else ``None`` for each (key phrases)."""
    if pick is None:
        notes.append("Titles are each chapter's key phrases (llm is false).")
        return [None] * len(sections)
    attempts.extend(pick.attempts)
    if pick.reason is not None:
        notes.append(
            "Titles are each chapter's key phrases: no language-model rung is set up (GROQ_API_KEY, "
            "CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN, or VID2CONTEXT_LLM_URL)."
        )
        if request.summaries:
            notes.append("No summaries were written: they need a language model, and none is set up.")
        return [None] * len(sections)
    transcript = context.transcript
    try:
        return list(
            await write_titles(
                runtime,
                pick,
                sections,
                video_title=context.metadata.title,
                summaries=request.summaries,
                language=transcript.language if transcript else None,
                ctx=ctx,
                attempts=attempts,
            )
        )
    except VidError as error:
        if required or error.code == ErrorCode.CANCELED:
            error.attempts = list(attempts)
            raise
        notes.append(f"The language model failed ({error.message}); titles are each chapter's key phrases.")
        if request.summaries:
            notes.append("No summaries were written: the language model failed.")
        return [None] * len(sections)


def _chapters(sections: list[Section], drafted: list[Drafted | None]) -> list[GeneratedChapter]:
    chapters = []
    for n, (section, draft) in enumerate(zip(sections, drafted, strict=True), 1):
        fallback = lexical.title_of(section.phrases, f"Part {n}")
        chapters.append(
            GeneratedChapter(
                title=(draft.title if draft is not None else "") or fallback,
                start_sec=section.start_sec,
                end_sec=section.end_sec,
                summary=draft.summary if draft is not None else None,
            )
        )
    return chapters


def _used(drafted: list[Drafted | None]) -> tuple[str | None, str | None]:
    rungs = list(dict.fromkeys(d.rung for d in drafted if d is not None))
    models = [d.model for d in drafted if d is not None]
    return (" + ".join(rungs) or None), (models[-1] if models else None)


async def _keep(
    runtime: Runtime,
    context: VideoContext,
    made: GeneratedChapters,
    attempts: list[Attempt],
    notes: list[str],
) -> None:
    """Save the chapters with the saved video, so outlines and sections find them."""
    if context.metadata.platform == "upload":
        notes.append("Not saved: uploads are kept apart from the library, so outlines cannot use these.")
        return
    stored = await runtime.storage.get_context(context.id)
    if stored is None:
        notes.append("Not saved: the video is not in the library.")
        return
    saved = msgspec.structs.replace(stored, generated_chapters=made)
    await run_rung(attempts, runtime.storage.id, "save", lambda: runtime.storage.put_context(saved))


async def make_chapters(
    runtime: Runtime, request: ChaptersRequest, *, ctx: Ctx | None = None
) -> ChaptersResult:
    """Chapters for ``request.url`` (module docstring), saved with the video.

    Raises ``VidError``: ``bad-request`` for the request and for a video that has chapters
    (without ``force``), what ``get_context`` raises, ``no-transcript``, and with a required model
    its ``no-provider`` or the rungs' errors.
    """
    ctx = ctx or Ctx(timeout=runtime.settings.request_timeout_ms / 1000)
    url = _check(request)
    pick, required = _plan(runtime, request, ctx)
    context = await get_context(runtime, url, lang=request.lang, ctx=ctx)
    attempts = list(context.attempts)
    transcript = context.transcript
    if transcript is None or not any(segment.text.strip() for segment in transcript.segments):
        raise VidError(
            ErrorCode.NO_TRANSCRIPT,
            f"{context.id} has no transcript to cut into chapters.",
            hint="Tell the user the video has no words to make chapters from; do not retry.",
            attempts=attempts,
        )
    notes: list[str] = []
    try:
        _has_chapters(context, request.force, notes)
    except VidError as error:
        error.attempts = attempts
        raise
    segments = transcript.segments
    end_sec = max([duration_of(context) or 0.0, *(max(s.start_sec, s.end_sec) for s in segments)])
    tiles = texttiling.tiles_of(context)
    counts = [lexical.terms(tile.text) for tile in tiles]
    method: Literal["embeddings", "lexical"] = "lexical"
    embedder = None
    cuts: list[int] = []
    if len(tiles) < 2:
        notes.append("The transcript is too short to cut: it is one chapter.")
    else:
        ctx.check()
        scores, method, embedder = await _similarities(runtime, tiles, counts, ctx, attempts, notes)
        cuts = texttiling.boundaries(
            tiles, scores, segments, end_sec=end_sec, min_sec=texttiling.min_chapter_sec(end_sec)
        )
        if not cuts:
            notes.append("No place where the subject clearly changes was found: it is one chapter.")
    sections = _sections(context, cuts, end_sec, counts)
    drafted = await _titles(runtime, context, sections, pick, required, request, ctx, attempts, notes)
    chapters = _chapters(sections, drafted)
    rung, model = _used(drafted)
    made = GeneratedChapters(
        chapters=chapters,
        producer=PRODUCER,
        method=method,
        rung=rung,
        model=model,
        embedder=embedder,
        transcript_producer=transcript.producer,
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    notes.insert(0, _summary_note(made, end_sec, own=bool(context.metadata.chapters)))
    await _keep(runtime, context, made, attempts, notes)
    return ChaptersResult(
        video_id=context.id,
        chapters=chapters,
        rung=rung,
        model=model,
        method=method,
        duration_sec=duration_of(context),
        notes=notes,
        attempts=attempts,
    )


def _summary_note(made: GeneratedChapters, end_sec: float, *, own: bool) -> str:
    how = f"embeddings from {made.embedder}" if made.embedder else "shared words"
    titled = f"titled by {made.rung}" if made.rung else "titled by key phrases"
    use = "" if own else "; outlines and sections by chapter use them"
    return f"{len(made.chapters)} chapters over {format_timestamp(end_sec)}, cut by {PRODUCER} on {how}, {titled}{use}."
