"""Reading one video: transcript (paged), metadata, formats, outline, one section, caption tracks.

These are the tools an agent spends most of its tokens through, so each says what it costs: speech
is about 12k tokens an hour, an outline about 1k. Every one that reads a video goes through a
long run (``runs.py``), saves the video to the library (the pipeline does), and fences the text
that came from the video.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp.server.mcpserver import Context

from ...api.catalog import FormatsResponse
from ...errors import ErrorCode, VidError
from ...formats import Formatter, RenderOptions, format_infos, get_formatter, render_view
from ...inputs import is_list
from ...models import Attempt, Base, CaptionTrack, VideoContext
from ...outline import Outline, get_section, outline
from ...pipeline import get_context, get_metadata, resolve, run_rung
from ...timecode import format_timestamp
from ..paging import (
    Page,
    fit_reply,
    next_call,
    next_cursor,
    page_marker,
    page_size,
    pager_for,
    parse_cursor,
)
from ..params import Chapter, Cursor, Format, From, Language, MaxTokens, Mode, Timestamps, To, Url
from ..results import JsonReply, Reply, TextReply, Untrusted, output_schema
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import check_budget, check_language, check_mode, describe_paging, layers_line, long_call

__all__ = ["CaptionLanguages", "tools", "transcript_page"]


class CaptionLanguages(Base, kw_only=True):
    id: str
    url: str | None = None
    tracks: list[CaptionTrack]


def _formatter(format_id: str, *, single: bool) -> Formatter:
    formatter = get_formatter(format_id)
    if single and formatter.combines_videos:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The {formatter.id} format combines several videos.",
            hint="Use export_context_pack for it, or pick a single-video format from list_formats.",
        )
    return formatter


def transcript_page(
    context: VideoContext,
    formatter: Formatter,
    options: RenderOptions,
    size: int | None,
    cursor: str | None,
    *,
    call: tuple[str, dict[str, object]],
    noun: str = "transcript",
    lines: Sequence[str] = (),
    section_line: str = "",
    end_sec: float | None = None,
) -> TextReply:
    """One page of at most ``size`` tokens (``None``: the rest): fenced content, ``lines`` (the
    layers line), and the closing marker with the ``call`` (tool, arguments) for the next page."""
    pager = pager_for(context, formatter, options, section_line)
    first = pager.unit_at(parse_cursor(cursor, pager.segment_count)) if pager.units else 0
    tool, args = call

    def reply_for(page: Page, stated: int) -> TextReply:
        marker = page_marker(
            context,
            page,
            stated=stated,
            next_page=next_call(tool, args, next_cursor(page)),
            noun=noun,
            end_sec=end_sec,
        )
        return TextReply([Untrusted(noun, page.content), *lines, marker])

    return fit_reply(pager, first, size, reply_for)


def _given(**values: object) -> dict[str, object]:
    """The arguments a call gave, by their contract names, leaving out those at their defaults."""
    defaults = {"format": "text", "timestamps": False, "mode": "auto"}
    return {
        name: value for name, value in values.items() if value is not None and defaults.get(name) != value
    }


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def get_transcript(
        ctx: Context,
        url: Url,
        format: Format = "text",
        timestamps: Timestamps = False,
        mode: Mode = "auto",
        language: Language = None,
        max_tokens: MaxTokens = None,
        cursor: Cursor = None,
    ) -> Reply:
        """The transcript of a video, with the source header (title, channel, URL, duration, where
        the words came from, chapters with [m:ss] links) in text format.

        Use it when you need the words themselves. It costs about 12k tokens per hour of speech
        (get_outline gives the exact count first, for about 1k tokens): for a long video read
        get_outline, then get_section for the parts you need. A transcript longer than the page
        size comes in pages cut between segments, each complete on its own and ending with
        [Partial transcript: ...; next page: get_transcript {...}; next_cursor: seg:N]: make that
        call (the same arguments plus cursor="seg:N") for the next page. The last page ends with
        [End of transcript: ...]. {paging}
        """
        formatter = _formatter(format, single=True)
        checked_mode, lang, budget = check_mode(mode), check_language(language), check_budget(max_tokens)
        if cursor is not None:
            parse_cursor(cursor, 1 << 40)  # only the form, before any fetch
        options = RenderOptions(timestamps=timestamps)
        args = {
            "url": url,
            "format": formatter.id,
            "timestamps": timestamps,
            "mode": checked_mode,
            "language": lang,
            "maxTokens": budget,
            "cursor": cursor,
        }

        given = _given(
            url=url,
            format=formatter.id,
            timestamps=timestamps,
            mode=checked_mode,
            language=lang,
            maxTokens=budget,
        )
        size = page_size(runtime, budget)

        async def work(run: Run) -> Reply:
            context = await get_context(runtime, url, mode=checked_mode, lang=lang, ctx=run.ctx())
            return transcript_page(
                context,
                formatter,
                options,
                size,
                cursor,
                call=("get_transcript", given),
                lines=[layers_line(context)],
            )

        return await long_call(deps, ctx, "get_transcript", args, work)

    async def get_metadata_tool(ctx: Context, url: Url) -> Reply:
        """A video's metadata as JSON: title, channel, duration, publication date, description,
        tags, chapters, thumbnails. No captions or audio are fetched; a saved video answers from
        the library. Costs a few hundred tokens (more with a long description)."""

        async def work(run: Run) -> Reply:
            metadata = await get_metadata(runtime, url, ctx=run.ctx())
            return JsonReply(metadata, untrusted="metadata")

        return await long_call(deps, ctx, "get_metadata", {"url": url}, work)

    get_metadata_tool.__name__ = "get_metadata"

    async def list_formats() -> Reply:
        """The output formats this server renders (id, description, MIME type, file extension,
        whether it combines several videos), as get_transcript, get_section and the REST API take
        them. Costs about 300 tokens."""
        return JsonReply(FormatsResponse(formats=format_infos()), structured=True)

    async def get_outline(ctx: Context, url: Url, mode: Mode = "auto", language: Language = None) -> Reply:
        """Start here for any video longer than a few minutes: its chapters (or, without chapters,
        sections of about five minutes), each with its index, start [m:ss], timestamp link and token
        count, the total token count of the transcript, the metadata and what to call next.

        Costs about 300 tokens plus about 70 per chapter or section (about 1.2k for a two-hour talk
        with 12 chapters), whatever the length of the speech; then read only what you need
        with get_section (chapter=<index> or from/to).
        """
        checked_mode, lang = check_mode(mode), check_language(language)

        async def work(run: Run) -> Reply:
            context = await get_context(runtime, url, mode=checked_mode, lang=lang, ctx=run.ctx())
            return JsonReply(outline(context), structured=True, untrusted="outline")

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
        timestamps: Timestamps = False,
        mode: Mode = "auto",
        language: Language = None,
        max_tokens: MaxTokens = None,
        cursor: Cursor = None,
    ) -> Reply:
        """One part of a transcript: a chapter or time section (chapter=<index from get_outline> or
        part of its title) or any time range (from and/or to: 90, 1:30, 1:02:05 or 1h2m5s).

        In text format it has the source header and a line 'Section "title": m:ss to m:ss, about N
        tokens'. Costs what the section holds: about 1k tokens per five minutes of speech (the
        outline lists each chapter's count). A section longer than the page size comes in pages as
        get_transcript's do, ending with [Partial section: ...; next page: get_section {...};
        next_cursor: seg:N] (segments counted within the section) and, on the last page, [End of
        section: ...]. {paging}
        """
        formatter = _formatter(format, single=False)
        checked_mode, lang, budget = check_mode(mode), check_language(language), check_budget(max_tokens)
        if cursor is not None:
            parse_cursor(cursor, 1 << 40)  # only the form, before any fetch
        options = RenderOptions(timestamps=timestamps)
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
        }
        given = {
            "url": url,
            **_given(**{"from": from_, "to": to, "chapter": chapter}),
            **_given(format=formatter.id, timestamps=timestamps, mode=checked_mode, language=lang),
            **_given(maxTokens=budget),
        }
        size = page_size(runtime, budget)

        async def work(run: Run) -> Reply:
            context = await get_context(runtime, url, mode=checked_mode, lang=lang, ctx=run.ctx())
            section = get_section(context, chapter=chapter, from_=from_, to=to)
            section_line = section.section_line()
            where = f"index {section.index}, " if section.index is not None else ""
            lines = [
                f"Section ({where}{format_timestamp(section.start_sec)} to "
                f"{format_timestamp(section.end_sec)}): about {section.tokens} tokens.",
                layers_line(context),
            ]
            if cursor is None:  # the whole section, as it always came, when it fits
                text = render_view(section.context, formatter, options, section_line)
                whole = TextReply([Untrusted("section", text), *lines])
                if size is None or whole.tokens() <= size:
                    return whole
            return transcript_page(
                section.context,
                formatter,
                options,
                size,
                cursor,
                call=("get_section", given),
                noun="section",
                lines=lines,
                section_line=section_line,
                end_sec=section.end_sec,
            )

        return await long_call(deps, ctx, "get_section", args, work)

    get_section_tool.__name__ = "get_section"
    describe_paging(get_transcript, runtime.settings.mcp_max_tokens, "the whole transcript")
    describe_paging(get_section_tool, runtime.settings.mcp_max_tokens, "the whole section")

    async def list_caption_languages(ctx: Context, url: Url) -> Reply:
        """The caption tracks the platform offers for a video: language, name, manual or automatic,
        and whether the platform can translate it. Pass one track's language as language= to
        get_transcript. Costs about 50 tokens per track."""

        async def work(run: Run) -> Reply:
            ref = resolve(runtime, url)
            if is_list(ref):
                raise VidError(
                    ErrorCode.BAD_REQUEST,
                    f"{ref.url or ref.id} is a {ref.kind}, not a video.",
                    hint="List its videos with list_items and ask for one video's tracks.",
                )
            providers = [provider for provider in runtime.sources if provider.accepts(ref)]
            if not providers:
                raise VidError(
                    ErrorCode.NO_PROVIDER,
                    f"No provider here lists caption tracks for {ref.id[:80]}.",
                    hint="Caption tracks are listed for YouTube videos.",
                )
            attempts: list[Attempt] = []
            errors: list[VidError] = []
            job_ctx = run.ctx()
            for provider in providers:
                try:
                    tracks = await run_rung(
                        attempts, provider.id, "captions", lambda p=provider: p.caption_tracks(ref, job_ctx)
                    )
                except VidError as error:
                    errors.append(error)
                    continue
                return JsonReply(CaptionLanguages(id=ref.id, url=ref.url, tracks=tracks))
            raise errors[0]

        return await long_call(deps, ctx, "list_caption_languages", {"url": url}, work)

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
