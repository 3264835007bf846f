"""``open_transcript_viewer``: a transcript as an MCP Apps page, with text for every other client.

The tool's ``_meta.ui.resourceUri`` names the ``ui://`` page (``mcp/apps.py`` serves it); a host
with MCP Apps renders that page and hands it this call's result, whose ``structuredContent`` is
the ``TranscriptView`` (metadata, chapters, segments, moment link). Clients without MCP Apps
read the text content, the first page of ``get_transcript`` as that tool gives it (its footer
names the call for the next page), so the call is worth making from any client.
"""

from __future__ import annotations

import msgspec
from mcp.server.mcpserver import Context

from ...formats import FORMATTERS, RenderOptions
from ...pipeline import get_context
from ...ui import VIEWER_URI
from ...viewer import TranscriptView, transcript_view
from ..paging import page_size
from ..params import Url
from ..reading import Reading
from ..results import Reply, output_schema
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import long_call, notes

__all__ = ["tools"]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def open_transcript_viewer(ctx: Context, url: Url) -> Reply:
        """Show a video's transcript to the user as an interactive page (MCP Apps): chapters to
        jump to, a search box that marks its matches, and [m:ss] stamps that open the video at
        that moment. structuredContent holds the metadata, chapters and every segment, for the
        page; it is not meant for you to read.

        The text content, for you and for clients without MCP Apps, is the first page of
        get_transcript (same header, [m:ss] lines and next-page call): it costs what that page
        costs, at most the page size in tokens (about 14,000 tokens per hour of speech). Call
        this when the user wants to see or browse a transcript; to answer from it, get_outline
        and get_section cost less."""

        async def work(run: Run) -> Reply:
            context = await get_context(runtime, url, ctx=run.ctx())
            call = ("get_transcript", {"url": url})
            options = RenderOptions(timestamps=True)
            reading = Reading(
                context, FORMATTERS["text"], options, page_size(runtime, None), call, notes(context)
            )
            reply = reading.page(None)[0]
            reply.structured = msgspec.to_builtins(transcript_view(context))
            return reply

        return await long_call(deps, ctx, "open_transcript_viewer", {"url": url}, work)

    tool = define(
        open_transcript_viewer,
        title="Open the transcript viewer",
        read_only=True,
        open_world=True,
        idempotent=True,
        output=output_schema(TranscriptView),
    )
    tool.meta = {"ui": {"resourceUri": VIEWER_URI}}
    return [tool]
