"""Several videos in one document: the context pack, read with progress per video.

Inputs are videos, lists (expanded) and/or a collection (its saved videos, then its pending ones).
Videos are read a few at a time by ``batch.read_videos``, as REST and jobs read them; each one
finished is a progress notification (``done`` of ``total``). One video that cannot be read never
fails the batch: it is listed in the pack under "Not included" with its error, and counted in the
closing line, even when no video could be read.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ... import library
from ...batch import MAX_VIDEOS, read_videos
from ...errors import ErrorCode, VidError
from ...formats import render_many
from ...tokens import estimate_tokens
from ..pack_pages import check_pack_cursor, pack_page
from ..paging import call_text, page_size
from ..params import OptionalCollection, Urls, int_range
from ..results import Reply, TextReply, Untrusted
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import MAX_BUDGET, describe_paging, long_call

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
        description="A token budget for the whole pack (about 4 characters a token): every transcript is "
        "cut fairly on segment boundaries to fit it, each cut marked. Left out: the whole pack, in pages "
        "of the server's page size (see the tool description).",
        json_schema_extra=int_range(1, MAX_BUDGET),
    ),
]
PackCursor = Annotated[
    str | None,
    Field(
        description='next_cursor of the previous pack page ("pack:N:..."); pass it with the same other '
        "arguments and no maxTokens."
    ),
]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def export_context_pack(
        ctx: Context,
        urls: Urls = None,
        collection: OptionalCollection = None,
        max_tokens: Budget = None,
        limit: Limit = None,
        cursor: PackCursor = None,
    ) -> Reply:
        """Several videos as one Markdown document: an index (title, channel, duration, link,
        tokens), then each video's header and cited transcript ([m:ss](link) on every paragraph),
        then the inputs that could not be read under "Not included".

        Costs the sum of the transcripts (about 12k tokens per hour of speech) unless maxTokens
        caps it: then every transcript is cut fairly on segment boundaries, each cut is marked and
        the closing line names the call for all of it. Without maxTokens nothing is cut: a pack longer than the page size comes in pages cut
        between paragraphs, each ending with [Partial pack: ...; next page: export_context_pack
        {...}; next_cursor: pack:N:...]: make that call (the same arguments plus that cursor) for
        the next page. The last page ends with [End of pack: ...]. {paging}
        Sends a progress notification per video read when the client asks for progress.
        """
        inputs = [text for text in urls or [] if isinstance(text, str) and text.strip()]
        if collection is not None:
            view = await library.get_collection_view(runtime, collection)
            inputs = [video.id for video in view.videos] + list(view.pending) + inputs
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
        if check_pack_cursor(cursor) is not None and max_tokens is not None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "A pack cursor pages the whole pack; maxTokens cuts the pack to a budget instead.",
                hint="Pass the cursor with the same other arguments and no maxTokens.",
            )
        args = {"urls": inputs, "maxTokens": max_tokens, "limit": count, "cursor": cursor}
        given = {
            name: value
            for name, value in (("urls", urls), ("collection", collection), ("limit", limit))
            if value is not None
        }

        async def work(run: Run) -> Reply:
            found = await read_videos(
                runtime, inputs, ctx=run.ctx(), limit=count, leave_out=True, on_progress=run.progress_event
            )
            contexts, failed = found.contexts, found.failed
            text = render_many(contexts, failed=failed)
            whole_tokens = estimate_tokens(text)
            cut = max_tokens is not None and whole_tokens > max_tokens
            if cut:
                text = render_many(contexts, max_tokens=max_tokens, failed=failed)
            cached = sum(1 for c in contexts if c.attempts and c.attempts[0].stage == "cache")
            line = (
                f"Packed {len(contexts)} of {found.total} inputs ({cached} from the library, "
                f"{len(contexts) - cached} fetched); {len(failed)} not included"
                + (" (listed in the pack under Not included)." if failed else ".")
            )
            if found.left_out:
                line += f" {found.left_out} more videos were left out by limit={count}."
            if cut:  # the contract's budget cuts rather than pages: say how to get all of it
                whole = call_text("export_context_pack", given, otherwise=" but no maxTokens")
                pages = " and follow its pages" if runtime.settings.mcp_max_tokens else ""
                line += (
                    f" maxTokens={max_tokens} cut this pack (about {whole_tokens} tokens whole; each cut is "
                    f"marked [Truncated at ...]). For all of it, call {whole}{pages}."
                )
            if max_tokens is not None:
                return TextReply([Untrusted("pack", text), line])
            size = page_size(runtime, None)
            return pack_page(text, [line], size, cursor, ("export_context_pack", given))

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
