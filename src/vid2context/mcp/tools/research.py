"""``research_videos``, ``get_key_moments`` and ``get_video_context``: finding one's way into videos.

Skins over one core each (``answers/research.py``, ``answers/key_moments.py``,
``answers/video_context.py``); ``POST /research`` and ``GET /key-moments`` are the other skins
of the first two. Text that came from a video, and what a model wrote from it (moments, the
summary), is fenced; our own lines (what ran, what was left out, what to call next) are not.
The language-model work runs with this call's client model on its ``Ctx`` (``with_caller_model``),
so a client that can sample answers when the policy puts it first or no server rung is set up.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from mcp.server.mcpserver import Context
from pydantic import Field

from ...answers.key_moments import DEFAULT_COUNT, MAX_COUNT, KeyMoment, KeyMoments, check_count, key_moments
from ...answers.research import (
    DEFAULT_CONTEXT_SEC,
    DEFAULT_EXCERPTS,
    MAX_CONTEXT_SEC,
    MAX_EXCERPTS,
    MAX_URLS,
    ResearchRequest,
    ResearchResult,
    check_research,
    research,
)
from ...answers.video_context import (
    BRIEF_TOKENS,
    LEVELS,
    PARTS,
    Overview,
    check_detail,
    check_include,
    video_context,
)
from ...formats import FORMATTERS, RenderOptions
from ...formats.blocks import duration_of, link_at, one_line
from ...models import Base
from ...pipeline import get_context
from ...search.query import MAX_QUERY_CHARS
from ...timecode import format_timestamp
from ..costs import RESEARCH_COSTS
from ..paging import next_cursor, page_size
from ..params import Url, int_range
from ..reading import Reading
from ..results import Reply, TextReply, Untrusted, output_schema
from ..runs import Run
from ..sampling import with_caller_model
from ..toolkit import ContractTool, Deps, define
from .common import describe_costs, long_call, notes

__all__ = ["RESEARCH_COSTS", "OverviewFacts", "render_moments", "render_overview", "render_research", "tools"]

ResearchUrls = Annotated[
    list[str],
    Field(description=f"1 to {MAX_URLS} videos (URLs or ids) to look into; each is read first when new."),
]
ResearchQuery = Annotated[
    str,
    Field(
        description='What to find: words; "quoted phrases" stay together, -word excludes.',
        min_length=1,
        max_length=MAX_QUERY_CHARS,
    ),
]
ContextSec = Annotated[
    float | None,
    Field(
        description=f"Seconds of speech before and after each excerpt, 0 to {MAX_CONTEXT_SEC:g} "
        f"(default {DEFAULT_CONTEXT_SEC:g}).",
        alias="contextSec",
    ),
]
MaxExcerpts = Annotated[
    int | None,
    Field(
        description=f"Most excerpts per video, default {DEFAULT_EXCERPTS}.",
        alias="maxExcerpts",
        json_schema_extra=int_range(1, MAX_EXCERPTS),
    ),
]
Count = Annotated[
    int | None,
    Field(
        description=f"How many moments, default {DEFAULT_COUNT}.", json_schema_extra=int_range(1, MAX_COUNT)
    ),
]
Detail = Annotated[
    str | None,
    Field(description="brief (default: under about 2,000 tokens whatever the length), standard or full."),
]
Include = Annotated[
    list[str] | None,
    Field(
        description="Pick parts explicitly, in place of detail's default (summary, chapters, key_moments): "
        "any of "
        + ", ".join(PARTS)
        + ". transcript adds the transcript's first page and the cursor to go on."
    ),
]


# --- rendering ---------------------------------------------------------------------------------------


def render_research(result: ResearchResult) -> tuple[str, list[str]]:
    """The excerpts as fenced text, and our lines after the fence (what was left out, which sides
    ran)."""
    blocks: list[str] = []
    for video in result.results:
        head = f"## {one_line(video.title, 200)} ({video.video_id})"
        lines = [head]
        if not video.excerpts:
            lines.append("(no passage matches)")
        for number, excerpt in enumerate(video.excerpts, 1):
            span = f"[{format_timestamp(excerpt.start_sec)}-{format_timestamp(excerpt.end_sec)}]"
            link = f" {excerpt.url}" if excerpt.url else ""
            around = (
                f"{format_timestamp(excerpt.context_start_sec)}-{format_timestamp(excerpt.context_end_sec)}"
            )
            lines.append(f"{number}. {span}{link}")
            lines.append(f"   match: {one_line(excerpt.text)}")
            lines.append(f"   context [{around}]: {one_line(excerpt.context)}")
        blocks.append("\n".join(lines))
    ours = []
    for failure in result.failed:
        hint = f" {failure.hint}" if failure.hint else ""
        ours.append(f"Not included: {failure.input[:80]} ({failure.code}: {failure.message}){hint}")
    meta = result.meta
    sides = " and ".join(meta.sides)
    why = f"; vector search {meta.vector}: {meta.vector_reason.rstrip('.')}" if meta.vector_reason else ""
    count = sum(len(video.excerpts) for video in result.results)
    ours.append(
        f"Research: {count} excerpt{'s' if count != 1 else ''} in {len(result.results)} video"
        f"{'s' if len(result.results) != 1 else ''} (ran {sides}{why}). Read more around one with "
        "get_section (url and from/to)."
    )
    return "\n\n".join(blocks), ours


def _moment_line(moment: KeyMoment) -> str:
    link = f" {moment.url}" if moment.url else ""
    why = f" — {moment.why}" if moment.why else ""
    return f"[{moment.start}] {moment.title}{why}{link}"


def render_moments(result: KeyMoments) -> tuple[str, list[str]]:
    fenced = "\n".join(_moment_line(m) for m in result.moments) or "(no moment passed the checks)"
    ours = [
        f"Key moments of {result.video_id}: {len(result.moments)}, chosen by {result.rung}"
        f"{f' ({result.model})' if result.model and result.model not in result.rung else ''}"
        f"{f' in {result.parts} parts' if result.parts > 1 else ''}; every time is the start of a real segment."
    ]
    if result.dropped:
        shown = "; ".join(f"[{d.start}] {one_line(d.title, 60)}: {d.reason}" for d in result.dropped[:10])
        ours.append(f"Left out {len(result.dropped)} the model named (as it said them): {shown}")
    return fenced, ours


class OverviewFacts(Base, kw_only=True):
    """``get_video_context``'s structured part: the facts, counts and what is missing, not the
    text (the text content carries that), so the result is not paid for twice."""

    status: Literal["done"] = "done"
    detail: str
    included: list[str]
    """The parts that have content."""
    video_id: str
    title: str
    url: str | None = None
    duration_sec: float | None = None
    length: str | None = None
    language: str | None = None
    summary_available: bool
    """False: no summary was made (no language model, or it failed: see notes)."""
    key_moments_available: bool
    chapters: int
    """Chapters (or time sections) shown."""
    chapters_total: int
    sections: str
    """``chapters`` (the platform's) or ``time`` (sections of about five minutes)."""
    key_moments: int
    rungs: list[str] = []
    tokens_estimate: int = 0
    transcript_next_cursor: str | None = None
    """Pass as cursor to get_transcript for the page after the one included."""
    notes: list[str] = []


def render_overview(found: Overview, chapters_shown: int | None) -> tuple[str, int]:
    """The fenced overview text and how many chapters it shows (at most ``chapters_shown``)."""
    context = found.context
    meta = context.metadata
    duration = duration_of(context)
    transcript = context.transcript
    facts = [
        one_line(meta.channel, 100) if meta.channel else None,
        format_timestamp(duration) if duration else None,
        (meta.published_at or "")[:10] or None,
        f"language {transcript.language}" if transcript and transcript.language else None,
        meta.url,
    ]
    lines = [f"# {one_line(meta.title, 200) or context.id}", " · ".join(f for f in facts if f)]
    if "summary" in found.include and found.summary:
        lines += ["", "## Summary", found.summary]
    shown = 0
    if "chapters" in found.include:
        entries = found.outline.chapters
        shown = len(entries) if chapters_shown is None else min(chapters_shown, len(entries))
        kind = "Chapters" if found.outline.sections == "chapters" else "Sections (about five minutes each)"
        lines += ["", f"## {kind}"]
        for entry in entries[:shown]:
            link = f" {entry.url}" if entry.url else ""
            lines.append(f"[{entry.start}] {one_line(entry.title, 80)}{link}")
        if shown < len(entries):
            lines.append(f"(and {len(entries) - shown} more: get_outline lists them all)")
    if "key_moments" in found.include and found.moments:
        lines += ["", "## Key moments", *(_moment_line(m) for m in found.moments)]
    return "\n".join(lines), shown


def _overview_reply(found: Overview, page: TextReply | None, cursor: str | None) -> TextReply:
    level = LEVELS[found.detail]
    limit = level.chapters
    while True:
        text, shown = render_overview(found, limit)
        ours = [f"Video context, detail {found.detail}. Layers: chapters from the outline"]
        if found.rungs:
            ours[0] += f"; summary and key moments by {' + '.join(found.rungs)}"
        ours[0] += "."
        ours += list(found.notes or [])
        parts: list[str | Untrusted] = [ours[0], Untrusted("context", text), *ours[1:]]
        if page is not None:
            parts += page.parts
        else:
            parts.append(
                "Read on with get_outline and get_section, or find a passage with search_transcript."
            )
        included = [
            part
            for part, has in (
                ("summary", bool(found.summary)),
                ("chapters", shown > 0),
                ("key_moments", bool(found.moments)),
                ("transcript", page is not None),
            )
            if part in found.include and has
        ]
        context = found.context
        duration = duration_of(context)
        facts = OverviewFacts(
            detail=found.detail,
            included=included,
            video_id=context.id,
            title=context.metadata.title,
            url=context.metadata.url or link_at(context, 0),
            duration_sec=duration,
            length=format_timestamp(duration) if duration else None,
            language=context.transcript.language if context.transcript else None,
            summary_available=found.summary_available,
            key_moments_available=found.key_moments_available,
            chapters=shown,
            chapters_total=len(found.outline.chapters),
            sections=found.outline.sections,
            key_moments=len(found.moments or []),
            rungs=list(found.rungs or []),
            transcript_next_cursor=cursor,
            notes=list(found.notes or []),
        )
        reply = TextReply(parts)
        tokens = reply.tokens()
        over = found.detail == "brief" and page is None and tokens > BRIEF_TOKENS - 100
        if over and shown > 3:
            limit = max(3, shown // 2)  # the outline lists the rest: the bound holds for any length
            continue
        facts.tokens_estimate = tokens
        reply.structured = msgspec.to_builtins(facts)
        return reply


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def research_videos(
        ctx: Context,
        urls: ResearchUrls,
        query: ResearchQuery,
        context_sec: ContextSec = None,
        max_excerpts: MaxExcerpts = None,
    ) -> Reply:
        """Find what 1 to 10 videos say about something, without reading them: per video, the
        passages that match query best, each with [m:ss-m:ss], its timestamp link and the words
        said contextSec before and after it. Videos are read first when new (no saved library
        needed); keyword search, with meaning (vector) search fused in where the server indexes
        videos. Costs about {research_base} tokens plus {research_per_excerpt} per excerpt at the default
        context: far less than the transcripts.
        """
        asked = ResearchRequest(urls=urls, query=query, context_sec=context_sec, max_excerpts=max_excerpts)
        checked = check_research(asked)  # before any read
        args = {
            "urls": checked.urls,
            "query": query,
            "contextSec": checked.context_sec,
            "maxExcerpts": checked.max_excerpts,
        }

        async def work(run: Run) -> Reply:
            result = await research(runtime, asked, run.ctx(), on_progress=run.progress_event)
            fenced, ours = render_research(result)
            return TextReply([Untrusted("research excerpts", fenced), *ours])

        return await long_call(deps, ctx, "research_videos", args, work, writes=True)

    async def get_key_moments(ctx: Context, url: Url, count: Count = None) -> Reply:
        """The key moments of a video, chosen by a language model (the server's, or this client's
        own through sampling): [m:ss] title — why, with the timestamp link. Every time is checked
        against the transcript and snapped to the start of a real segment; moments outside the
        video or not about what is said there are left out and listed.
        Costs about {moments_base} tokens plus {moments_per_moment} per moment.
        """
        wanted = check_count(count)

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            context = await get_context(runtime, url, ctx=job)
            result = await key_moments(runtime, context, wanted, ctx=job)
            fenced, ours = render_moments(result)
            return TextReply([ours[0], Untrusted("key moments", fenced), *ours[1:]])

        return await long_call(deps, ctx, "get_key_moments", {"url": url, "count": wanted}, work)

    async def get_video_context(
        ctx: Context, url: Url, detail: Detail = None, include: Include = None
    ) -> Reply:
        """Start here for any video: a compact overview to reason from without reading the
        transcript. Title, channel, length, language, a summary, chapters (or five-minute
        sections) and key moments, each with [m:ss] and its link. detail: brief (default, under
        about {brief} tokens whatever the video's length), standard (longer summary, more chapters
        and moments) or full (everything). include picks parts in place of detail's default;
        "transcript" adds the transcript's first page with the cursor for get_transcript. The
        summary and moments need a language model (the server's, or this client's through
        sampling); without one the result says so (summaryAvailable false).
        """
        checked = check_detail("brief" if detail is None else detail)
        parts = check_include(include)
        args = {"url": url, "detail": checked, "include": list(parts)}

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            context = await get_context(runtime, url, ctx=job)
            found = await video_context(runtime, context, detail=checked, include=parts, ctx=job)
            page, cursor = None, None
            if "transcript" in parts:
                size = page_size(runtime, None) or 20_000
                reading = Reading(
                    context,
                    FORMATTERS["text"],
                    RenderOptions(timestamps=True),
                    size,
                    ("get_transcript", {"url": url}),
                    notes(context),
                )
                page, shown = reading.page(None)
                count = len(context.transcript.segments) if context.transcript else 0
                cursor = next_cursor(shown) if shown.end_seg < count else None
            return _overview_reply(found, page, cursor)

        return await long_call(deps, ctx, "get_video_context", args, work)

    for fn in (research_videos, get_key_moments, get_video_context):
        describe_costs(fn, RESEARCH_COSTS)
    return [
        define(
            get_video_context,
            title="A video's overview",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(OverviewFacts),
        ),
        define(research_videos, title="Research videos", read_only=True, open_world=True, idempotent=True),
        define(get_key_moments, title="Key moments", read_only=True, open_world=True, idempotent=False),
    ]
