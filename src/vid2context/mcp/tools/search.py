"""``search_transcript``: find where something is said, across the library or in given videos.

The same core as ``GET /api/v1/search`` (``search.engine.search``): keyword and vector sides fused,
every hit narrowed to one segment with its time range and link. ``urls`` that are not saved yet
are read first (``batch.read_videos``, so a long read answers ``processing`` like every other
tool); ``from``/``to`` narrow a search within one video. The hits are text from the videos, so
they are fenced; one status line after the fence says which sides ran, the embedding model and
why the vector side did not run, when it did not.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...batch import MAX_VIDEOS, read_videos
from ...errors import ErrorCode, VidError
from ...search.engine import DEFAULT_LIMIT, MAX_LIMIT, MODES, SearchRequest, search
from ...search.query import MAX_QUERY_CHARS
from ...search.render import render_hits, status_line
from ...timecode import parse_time
from ..costs import SEARCH_COSTS
from ..params import From, OptionalCollection, To, int_range
from ..results import Reply, TextReply, Untrusted
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import describe_costs, long_call

__all__ = ["SEARCH_COSTS", "tools"]

Query = Annotated[
    str,
    Field(
        description='The words to find; "quoted phrases" stay together, -word excludes. Plain words also '
        "find passages that mean the same in other words (vector search, where the server has it).",
        min_length=1,
        max_length=MAX_QUERY_CHARS,
    ),
]
SearchUrls = Annotated[
    list[str] | None,
    Field(
        description="Search only these videos (URLs or ids; lists are expanded); those not saved yet are "
        "read and saved first. Left out (and no collection): every saved video."
    ),
]
Limit = Annotated[
    int | None,
    Field(
        description=f"Most hits to return; default {DEFAULT_LIMIT}.",
        json_schema_extra=int_range(1, MAX_LIMIT),
    ),
]
Rerank = Annotated[
    bool | None,
    Field(description="true to reorder the top 20 hits with a cross-encoder: slower, sometimes better."),
]
SearchMode = Annotated[
    str | None,
    Field(description="hybrid (default: keyword and meaning, fused), keyword (exact words only) or vector."),
]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def search_transcript(
        ctx: Context,
        query: Query,
        collection: OptionalCollection = None,
        urls: SearchUrls = None,
        limit: Limit = None,
        rerank: Rerank = None,
        mode: SearchMode = None,
        from_: From = None,
        to: To = None,
    ) -> Reply:
        """Find where something is said before reading transcripts: across every saved video, a
        collection, or the given urls (read and saved first when new); from/to narrow one video.
        Each hit: title, [m:ss-m:ss], the timestamp link, chapter, the matching words in **bold**
        and whether keyword or meaning (vector) search found it; then one status line (which
        sides ran, the embedding model, why vector search was off). Costs about {search_base}
        tokens plus {search_per_hit} per hit: far less than a transcript (12k per hour).
        """
        checked_mode = (mode or "hybrid").strip().lower()
        if checked_mode not in MODES:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"Unknown mode {str(mode)[:20]!r}.",
                hint="Use one of: " + ", ".join(MODES) + " (default hybrid).",
            )
        inputs = [text for text in urls or [] if isinstance(text, str) and text.strip()]
        if urls is not None and not inputs:
            raise VidError(
                ErrorCode.BAD_REQUEST, "urls is empty.", hint="Give video URLs or ids, or leave urls out."
            )
        low = parse_time(from_) if from_ is not None else None
        high = parse_time(to) if to is not None else None
        if (low is not None or high is not None) and len(inputs) != 1:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "from and to narrow a search within one video.",
                hint="Give one url with them, or leave them out.",
            )
        request = SearchRequest(
            query=query,
            collection=collection,
            limit=DEFAULT_LIMIT if limit is None else limit,
            mode=checked_mode,
            rerank=bool(rerank),
            from_sec=low,
            to_sec=high,
        )
        args = {
            "query": query,
            "collection": collection,
            "urls": inputs,
            "limit": request.limit,
            "rerank": request.rerank,
            "mode": checked_mode,
            "from": low,
            "to": high,
        }

        async def work(run: Run) -> Reply:
            read, failed = 0, []
            if inputs:
                found = await read_videos(
                    runtime, inputs, ctx=run.ctx(), limit=MAX_VIDEOS, on_progress=run.progress_event
                )
                found.raise_if_empty("Give video URLs or ids.")
                request.video_ids = [context.id for context in found.contexts]
                read = sum(1 for c in found.contexts if not (c.attempts and c.attempts[0].stage == "cache"))
                failed = [label[:80] for label, _ in found.failed]
            result = await search(runtime, request, run.ctx())
            line = status_line(result, read, failed)
            if result.hits:
                line += " Read more around a hit with get_section (url and from/to, or its chapter)."
            if not result.hits:
                return TextReply([line])
            return TextReply([Untrusted("search hits", render_hits(result)), line])

        return await long_call(deps, ctx, "search_transcript", args, work, writes=True)

    describe_costs(search_transcript, SEARCH_COSTS)
    return [
        define(
            search_transcript,
            title="Search transcripts",
            read_only=True,
            open_world=True,
            idempotent=True,
        )
    ]
