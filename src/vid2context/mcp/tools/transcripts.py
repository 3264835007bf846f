"""Reading one video: transcript (paged), metadata, formats, outline, one section, caption tracks.

These are the tools an agent spends most of its tokens through, so each says what it costs, in
figures measured on what it returns (``STATED_COSTS``), and the outline states what reading each
section and the whole transcript costs for that very video (``reading_costs``). Text results
carry [m:ss] by default, with the link pattern in the header, so every moment can be cited. Every
one that reads a video goes through a long run (``runs.py``), saves the video to the library (the
pipeline does), and fences the text that came from the video.
"""

from __future__ import annotations

import msgspec
from mcp.server.mcpserver import Context

from ...answers.translate import translate_context
from ...api.catalog import FormatsResponse
from ...caption_languages import caption_languages
from ...errors import ErrorCode, VidError
from ...formats import FORMATTERS, Formatter, RenderOptions, format_infos, get_formatter
from ...includes import parse_include
from ...models import VideoContext
from ...outline import Costs, Outline, Section, get_section, outline
from ...pipeline import get_context, get_metadata
from ...runtime import Runtime
from ...speakers import speaker_names, with_speakers
from ..costs import STATED_COSTS
from ..paging import page_size, parse_cursor
from ..params import (
    Chapter,
    Cursor,
    Format,
    From,
    Include,
    Language,
    MaxTokens,
    Mode,
    Speakers,
    Timestamps,
    To,
    Translate,
    Url,
)
from ..reading import Reading
from ..results import JsonReply, Reply, output_schema
from ..runs import Run
from ..sampling import with_caller_model
from ..toolkit import ContractTool, Deps, define
from .common import (
    check_budget,
    check_language,
    check_mode,
    describe_costs,
    describe_paging,
    long_call,
    notes,
)

__all__ = ["STATED_COSTS", "reading_costs", "tools"]


def _formatter(format_id: str, *, single: bool) -> Formatter:
    formatter = get_formatter(format_id)
    if single and formatter.combines_videos:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The {formatter.id} format combines several videos.",
            hint="Use export_context_pack for it, or pick a single-video format from list_formats.",
        )
    return formatter


def _given(**values: object) -> dict[str, object]:
    """The arguments a call gave, by their contract names, leaving out those at their defaults."""
    defaults = {"format": "text", "timestamps": True, "mode": "auto", "translate": False}
    return {
        name: value for name, value in values.items() if value is not None and defaults.get(name) != value
    }


def reading_costs(runtime: Runtime, context: VideoContext, url: str, *, mode: str, lang: str | None) -> Costs:
    """What ``get_section(chapter=i)`` and ``get_transcript`` cost with their defaults (text with
    [m:ss] lines, the server's page size), every page as sent: the figures an outline states."""
    size = page_size(runtime, None)
    options = RenderOptions(timestamps=True, asked=lang)
    lines = notes(context)
    text = FORMATTERS["text"]
    same = _given(mode=mode, language=lang)

    def section(part: Section) -> int:
        call = ("get_section", {"url": url, "chapter": part.index, **same})
        return Reading(part.context, text, options, size, call, lines, section=part).cost()

    def whole(video: VideoContext) -> int:
        return Reading(video, text, options, size, ("get_transcript", {"url": url, **same}), lines).cost()

    return Costs(section=section, whole=whole)


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def get_transcript(
        ctx: Context,
        url: Url,
        format: Format = "text",
        timestamps: Timestamps = True,
        mode: Mode = "auto",
        language: Language = None,
        max_tokens: MaxTokens = None,
        cursor: Cursor = None,
        translate: Translate = False,
        speakers: Speakers = None,
        include: Include = None,
    ) -> Reply:
        """The transcript of a video. Text format: one [m:ss] line per segment (timestamps=false:
        paragraphs) under the source header, which gives the link for any moment once (put the
        seconds in its <seconds>). With language, the platform's track in it comes first; with
        translate=true as well, a language model translates the best track when there is none.
        speakers=true labels who speaks (speech-to-text that labels speakers, with mode=stt).
        include=["on_screen"] adds what the picture shows (slides, code), as mode=video does.

        Costs about {per_hour} tokens per hour of speech ({per_hour_plain} without timestamps): for a video
        longer than a few minutes call get_outline first (it states what this and each chapter
        cost), then get_section for the parts you need. A result longer than the page size comes
        in pages cut between segments, ending with [Partial transcript: ...; next page:
        get_transcript {...}; next_cursor: seg:N]: make that call for the next page, which starts
        with a one-line header. The last ends with [End of transcript: ...]. {paging}
        """
        formatter = _formatter(format, single=True)
        checked_mode, lang, budget = check_mode(mode), check_language(language), check_budget(max_tokens)
        if cursor is not None:
            parse_cursor(cursor, 1 << 40)  # only the form, before any fetch
        layers = sorted(parse_include(include))
        if speakers is not None and not isinstance(speakers, bool):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "speakers must be true or false.",
                hint="Give speakers as true or false, or leave it out.",
            )
        if translate and lang is None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "translate needs the language to translate into.",
                hint="Give language as a BCP-47 tag (de, pt-BR), or leave translate out.",
            )
        options = RenderOptions(timestamps=timestamps, asked=lang)
        args = {
            "url": url,
            "format": formatter.id,
            "timestamps": timestamps,
            "mode": checked_mode,
            "language": lang,
            "maxTokens": budget,
            "cursor": cursor,
            "translate": translate,
            "speakers": speakers,
            "include": layers or None,
        }
        given = _given(
            url=url,
            format=formatter.id,
            timestamps=timestamps,
            mode=checked_mode,
            language=lang,
            maxTokens=budget,
            translate=translate,
            speakers=speakers,
            include=layers or None,
        )
        size = page_size(runtime, budget)

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            context = await get_context(
                runtime,
                url,
                mode=checked_mode,
                lang=lang,
                ctx=job,
                speakers=speakers,
                on_screen="on_screen" in layers,
            )
            if lang is not None:
                context = await translate_context(runtime, context, lang, llm=translate, ctx=job)
            context, said = with_speakers(runtime, context, speakers)
            lines = notes(context)
            # Who was labelled names the voices (text from the video): inside the fence, in the
            # header. Why nobody is, and the next step, are our words: after it, with the others.
            if said is not None and speaker_names(context.transcript):
                shown = msgspec.structs.replace(options, speakers=said)
            else:
                shown = options
                lines = [*lines, f"Speakers: {said}"] if said is not None else lines
            reading = Reading(context, formatter, shown, size, ("get_transcript", given), lines)
            return reading.page(cursor)[0]

        return await long_call(deps, ctx, "get_transcript", args, work)

    async def get_metadata_tool(ctx: Context, url: Url) -> Reply:
        """A video's metadata as JSON: title, channel, duration, publication date, description,
        tags, chapters, thumbnails. No captions or audio are fetched; a saved video answers from
        the library. Costs about {metadata} tokens for a typical video (ten chapters, fifteen tags),
        more with a long description."""

        async def work(run: Run) -> Reply:
            metadata = await get_metadata(runtime, url, ctx=run.ctx())
            return JsonReply(metadata, untrusted="metadata")

        return await long_call(deps, ctx, "get_metadata", {"url": url}, work)

    get_metadata_tool.__name__ = "get_metadata"

    async def list_formats() -> Reply:
        """The output formats this server renders (id, description, MIME type, file extension,
        whether it combines several videos), as get_transcript, get_section and the REST API take
        them. Costs about {formats} tokens."""
        return JsonReply(FormatsResponse(formats=format_infos()), structured=True)

    async def get_outline(ctx: Context, url: Url, mode: Mode = "auto", language: Language = None) -> Reply:
        """Start here for any video longer than a few minutes: its chapters (or sections of about
        five minutes), each with its index, start [m:ss], link and what get_section costs for it
        in tokens; what all of get_transcript costs (totalTokens); a metadata summary; what to
        call next. Costs about {outline_base} tokens plus about {outline_per_chapter} per chapter, whatever the length of
        the speech.
        """
        checked_mode, lang = check_mode(mode), check_language(language)

        async def work(run: Run) -> Reply:
            context = await get_context(runtime, url, mode=checked_mode, lang=lang, ctx=run.ctx())
            costs = reading_costs(runtime, context, url, mode=checked_mode, lang=lang)
            return JsonReply(outline(context, costs=costs), structured=True, untrusted="outline")

        return await long_call(
            deps, ctx, "get_outline", {"url": url, "mode": checked_mode, "language": lang}, work
        )

    async def get_section_tool(
        ctx: Context,
        url: Url,
        from_: From = None,
        to: To = None,
        chapter: Chapter = None,
        format: Format = "text",
        timestamps: Timestamps = True,
        mode: Mode = "auto",
        language: Language = None,
        max_tokens: MaxTokens = None,
        cursor: Cursor = None,
        include: Include = None,
    ) -> Reply:
        """One part of a transcript: a chapter (chapter=<index from get_outline> or part of its title)
        or any time range (from and/or to: 90, 1:30, 1:02:05 or 1h2m5s). Text format: one [m:ss]
        line per segment (timestamps=false: paragraphs) under a one-line header with the part
        covered and the link for any moment; include=["on_screen"]: and what the picture showed then.

        Costs what get_outline states: about {section_per_5min} tokens per five minutes of speech plus {section_base}.
        A section longer than the page size comes in pages as get_transcript's do ([Partial
        section: ...; next page: get_section {...}; next_cursor: seg:N], segments counted within
        the section); the last page ends with [End of section: ...]. {paging}
        """
        formatter = _formatter(format, single=False)
        checked_mode, lang, budget = check_mode(mode), check_language(language), check_budget(max_tokens)
        if cursor is not None:
            parse_cursor(cursor, 1 << 40)  # only the form, before any fetch
        layers = sorted(parse_include(include))
        options = RenderOptions(timestamps=timestamps, asked=lang)
        if chapter is None and from_ is None and to is None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "Say which section to read.",
                hint="Give chapter (an index from get_outline, or a title), or from and/or to (90, 1:30, 1h2m).",
            )
        args = {
            "url": url,
            "from": from_,
            "to": to,
            "chapter": chapter,
            "format": formatter.id,
            "timestamps": timestamps,
            "mode": checked_mode,
            "language": lang,
            "maxTokens": budget,
            "cursor": cursor,
            "include": layers or None,
        }
        given = {
            "url": url,
            **_given(**{"from": from_, "to": to, "chapter": chapter}),
            **_given(format=formatter.id, timestamps=timestamps, mode=checked_mode, language=lang),
            **_given(maxTokens=budget, include=layers or None),
        }
        size = page_size(runtime, budget)

        async def work(run: Run) -> Reply:
            context = await get_context(
                runtime, url, mode=checked_mode, lang=lang, ctx=run.ctx(), on_screen="on_screen" in layers
            )
            section = get_section(context, chapter=chapter, from_=from_, to=to)
            call = ("get_section", given)
            reading = Reading(
                section.context, formatter, options, size, call, notes(context), section=section
            )
            return reading.page(cursor)[0]

        return await long_call(deps, ctx, "get_section", args, work)

    get_section_tool.__name__ = "get_section"
    describe_paging(get_transcript, runtime.settings.mcp_max_tokens, "the whole transcript")
    describe_paging(get_section_tool, runtime.settings.mcp_max_tokens, "the whole section")

    async def list_caption_languages(ctx: Context, url: Url) -> Reply:
        """The caption tracks the platform offers for a video: language, name, manual or automatic,
        and whether the platform can translate it; then the languages it translates into
        (translationTargets). Pass one track's language as language= to get_transcript. Costs
        about {per_track} tokens per track, plus about {per_target} per translation target."""

        async def work(run: Run) -> Reply:
            return JsonReply(await caption_languages(runtime, url, run.ctx()))

        return await long_call(deps, ctx, "list_caption_languages", {"url": url}, work)

    for fn in (
        get_transcript,
        get_metadata_tool,
        list_formats,
        get_outline,
        get_section_tool,
        list_caption_languages,
    ):
        describe_costs(fn, STATED_COSTS)
    return [
        define(get_transcript, title="Read a transcript", read_only=True, open_world=True, idempotent=True),
        define(
            get_metadata_tool,
            title="Read a video's metadata",
            read_only=True,
            open_world=True,
            idempotent=True,
        ),
        define(
            list_formats,
            title="List output formats",
            read_only=True,
            open_world=False,
            idempotent=True,
            output=output_schema(FormatsResponse, processing=False),
        ),
        define(
            get_outline,
            title="Read a video's outline",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(Outline),
        ),
        define(get_section_tool, title="Read one section", read_only=True, open_world=True, idempotent=True),
        define(
            list_caption_languages,
            title="List caption tracks",
            read_only=True,
            open_world=True,
            idempotent=True,
        ),
    ]
