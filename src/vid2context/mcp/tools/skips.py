"""``get_skip_segments``: SponsorBlock's skip segments of a video and the transcript share of each.

A skin over ``integrations.skips`` (``GET /skips`` is the other): the segments come from the same
core, then the transcript is read (and saved, as every tool that reads a video does) to say what
share of its words each segment holds, so an agent knows what leaving them out saves. A chapter's
name in the data was written by SponsorBlock's users, so the result is fenced.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...integrations.skips import DEFAULT_CATEGORIES, Skips, find_skips, parse_categories, with_shares
from ...integrations.sponsorblock import CATEGORIES
from ...pipeline import get_context
from ..params import Url
from ..results import JsonReply, Reply, output_schema
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import long_call

__all__ = ["tools"]

Categories = Annotated[
    list[str] | None,
    Field(
        description=f"SponsorBlock categories, any of {', '.join(CATEGORIES)}; default "
        f"{', '.join(DEFAULT_CATEGORIES)}.",
        max_length=len(CATEGORIES),
    ),
]


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def get_skip_segments(ctx: Context, url: Url, categories: Categories = None) -> Reply:
        """SponsorBlock's crowd-sourced segments of a YouTube video (sponsor reads, self-promotion,
        interaction reminders; on request intros, outros, previews, off-topic music, filler,
        highlights, chapters), each with start and end [m:ss], a timestamp link and the share of
        the transcript's words inside it (transcriptShare, 0 to 1); coveredSec and transcriptShare
        for all of them together. Carries the attribution SponsorBlock's licence (CC BY-NC-SA)
        asks for: pass it on with the data. Costs about 60 tokens per segment plus 120.
        """
        chosen = parse_categories(categories)  # before any fetch
        args = {"url": url, "categories": list(chosen)}

        async def work(run: Run) -> Reply:
            job = run.ctx()
            skips: Skips = await find_skips(runtime, url, chosen, job)
            context = await get_context(runtime, url, ctx=job)
            return JsonReply(with_shares(skips, context), structured=True, untrusted="skip segments")

        return await long_call(deps, ctx, "get_skip_segments", args, work)

    return [
        define(
            get_skip_segments,
            title="List skip segments",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(Skips),
        )
    ]
