"""Several videos in one document: the context pack, read with progress per video.

Inputs are videos, lists (expanded) and/or a collection (its saved videos, then its pending ones).
Videos are read a few at a time by ``batch.read_videos``, as REST and jobs read them; each one
finished is a progress notification (``done`` of ``total``). One video that cannot be read never
fails the batch: it is listed in the pack under "Not included" with its error, and counted in the
closing line, even when no video could be read; so are the inputs ``limit`` left videos of.

``maxTokens`` is a budget for the whole result as sent (fences and closing line included): when
the whole pack does not fit, ``formats.pack`` chooses what goes in (every outline, then whole
chapters, by ``query`` first) and measures each choice with this tool's own wrapping.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ... import library
from ...batch import MAX_VIDEOS, read_videos
from ...errors import ErrorCode, VidError
from ...formats.pack import MAX_QUERY_CHARS, build_pack, check_query
from ...models import VideoContext
from ..pack_pages import check_pack_cursor, pack_page
from ..paging import call_text, page_size
from ..params import OptionalCollection, Urls, int_range
from ..results import Reply, TextReply, Untrusted
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import MAX_BUDGET, describe_paging, long_call
from .transcripts import reading_costs

__all__ = ["tools"]

DEFAULT_VIDEOS = 50
_HINT = "Give urls (videos, playlists, channels) and/or a collection (its id or name)."

Limit = Annotated[
    int | None,
    Field(
        description=f"Most videos in the pack; default {DEFAULT_VIDEOS}.",
        json_schema_extra=int_range(1, MAX_VIDEOS),
    ),
]
Budget = Annotated[
    int | None,
    Field(
        alias="maxTokens",
        description="A budget (about 4 characters a token) for the whole result, fences and closing line "
        "included, that selects what goes in; it never pages. A pack that fits comes whole. Otherwise every "
        "video keeps its header and outline (each chapter's tokens and the get_section call that reads "
        "it), then whole chapters, never a cut: those matching query first, then spread across the video, "
        "the budget shared between videos. Less than the outlines need is bad-request with the minimum in "
        "the hint. Left out: everything, in pages of the server's page size (see the tool description).",
        json_schema_extra=int_range(1, MAX_BUDGET),
    ),
]
Query = Annotated[
    str | None,
    Field(
        json_schema_extra={"maxLength": MAX_QUERY_CHARS},
        description='Keywords for the parts you need, e.g. "kickstand". With maxTokens, the chapters whose '
        "words match come first (keyword relevance within each video; marked match in the outline). Without "
        "maxTokens nothing is left out, so it changes nothing.",
    ),
]
PackCursor = Annotated[
    str | None,
    Field(
        description='next_cursor of the previous pack page ("pack:N:..."); pass it with the same other '
        "arguments and no maxTokens."
    ),
]


def _reader(context: VideoContext) -> str:
    """How the pack names the call for one outline entry (``N``)."""
    return f'get_section {{"url": {json.dumps(context.id)}, "chapter": N}}'


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def export_context_pack(
        ctx: Context,
        urls: Urls = None,
        collection: OptionalCollection = None,
        max_tokens: Budget = None,
        limit: Limit = None,
        cursor: PackCursor = None,
        query: Query = None,
    ) -> Reply:
        """Several videos as one Markdown document: an index (title, channel, duration, link,
        tokens), then each video's header and cited transcript ([m:ss](link) on every paragraph),
        then under "Not included" every input left out and why (failed, beyond limit, or no
        chapter within maxTokens).

        Costs the sum of the transcripts (about 12k tokens per hour of speech). maxTokens caps the
        whole result: a larger pack is then chosen, not cut: each video's outline (chapters or
        five-minute sections with their tokens and the get_section call for each), then whole
        chapters marked · below, those matching query first, then spread across the video; too
        small a budget is bad-request with the minimum. Without maxTokens nothing is left out: a
        pack longer than the page size comes in pages cut between paragraphs, each ending with
        [Partial pack: ...; next page: export_context_pack {...}; next_cursor: pack:N:...]: make
        that call (the same arguments plus that cursor) for the next page. The last page ends
        with [End of pack: ...]. {paging}
        Sends a progress notification per video read when the client asks for progress.
        """
        inputs = [text for text in urls or [] if isinstance(text, str) and text.strip()]
        if collection is not None:
            view = await library.get_collection_view(runtime, collection)
            inputs = view.inputs + inputs
        if not inputs:
            raise VidError(ErrorCode.BAD_REQUEST, "No videos to pack.", hint=_HINT)
        count = DEFAULT_VIDEOS if limit is None else limit
        if not 1 <= count <= MAX_VIDEOS:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"limit must be 1 to {MAX_VIDEOS}, not {count}.",
                hint=f"Give limit from 1 to {MAX_VIDEOS}; for more videos, make several packs.",
            )
        if max_tokens is not None and not 1 <= max_tokens <= MAX_BUDGET:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"maxTokens must be 1 to {MAX_BUDGET}, not {max_tokens}.",
                hint="Leave maxTokens out for the whole pack, or give a budget such as 8000.",
            )
        if len(inputs) > 5 * MAX_VIDEOS:
            raise VidError(
                ErrorCode.TOO_LARGE,
                f"{len(inputs)} inputs; at most {5 * MAX_VIDEOS} are read.",
                hint=f"Split them over several export_context_pack calls of at most {5 * MAX_VIDEOS} urls.",
            )
        checked_query = check_query(query)
        if check_pack_cursor(cursor) is not None and max_tokens is not None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "A pack cursor pages the whole pack; maxTokens cuts the pack to a budget instead.",
                hint="Pass the cursor with the same other arguments and no maxTokens.",
            )
        args = {
            "urls": inputs,
            "maxTokens": max_tokens,
            "limit": count,
            "cursor": cursor,
            "query": checked_query,
        }
        given = {
            name: value
            for name, value in (
                ("urls", urls),
                ("collection", collection),
                ("limit", limit),
                ("query", query),
            )
            if value is not None
        }

        async def work(run: Run) -> Reply:
            found = await read_videos(
                runtime, inputs, ctx=run.ctx(), limit=count, leave_out=True, on_progress=run.progress_event
            )
            contexts, failed = found.contexts, found.failed
            left_out = [
                (
                    source,
                    f"beyond limit={count}" if lost == 1 else f"{lost} of its videos, beyond limit={count}",
                )
                for source, lost in found.left_out_by
            ]
            cached = sum(1 for c in contexts if c.attempts and c.attempts[0].stage == "cache")
            line = (
                f"Packed {len(contexts)} of {found.total} inputs ({cached} from the library, "
                f"{len(contexts) - cached} fetched); {len(failed)} not included"
                + (" (listed in the pack under Not included)." if failed else ".")
            )
            if found.left_out:
                were = "videos were" if found.left_out != 1 else "video was"
                line += (
                    f" {found.left_out} more {were} left out by limit={count} (listed under Not included)."
                )
            if max_tokens is None:
                whole = build_pack(contexts, failed=failed, left_out=left_out)
                size = page_size(runtime, None)
                return pack_page(whole.text, [line], size, cursor, ("export_context_pack", given))
            unbudgeted = {name: value for name, value in given.items() if name != "query"}  # moot without it
            everything = call_text("export_context_pack", unbudgeted, otherwise=" but no maxTokens")
            pages = " and follow its pages" if runtime.settings.mcp_max_tokens else ""
            whole_tokens = build_pack(contexts, failed=failed, left_out=left_out).whole_tokens

            def closing(budget: int | None) -> str:
                if budget is None:
                    return line
                return (  # a budget chooses rather than pages: say how to get all of it
                    f"{line} maxTokens={budget} chose from a pack of about {whole_tokens} tokens; for all of "
                    f"it, call {everything}{pages}."
                )

            def measure(text: str, budget: int | None) -> int:
                return TextReply([Untrusted("pack", text), closing(budget)]).tokens()

            pack = build_pack(
                contexts,
                max_tokens=max_tokens,
                failed=failed,
                left_out=left_out,
                query=checked_query,
                reader=_reader,
                costs=lambda video: reading_costs(runtime, video, video.id, mode="auto", lang=None),
                measure=measure,
            )
            return TextReply([Untrusted("pack", pack.text), closing(max_tokens if pack.selected else None)])

        return await long_call(deps, ctx, "export_context_pack", args, work)

    describe_paging(
        export_context_pack, runtime.settings.mcp_max_tokens, "the whole pack", by_max_tokens=False
    )
    return [
        define(
            export_context_pack,
            title="Export a context pack",
            read_only=True,
            open_world=True,
            idempotent=True,
        ),
    ]
