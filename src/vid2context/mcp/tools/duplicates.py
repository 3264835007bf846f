"""``find_duplicates``: reuploads and clips among videos, so a brief counts one talk once.

The MCP skin of ``integrations/duplicates.py`` (``POST /api/v1/duplicates`` is the other): the
same checks before any video is read, the same result as JSON. The passages in the evidence are
text from the videos, so the whole result is fenced.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from ...integrations import duplicates as core
from ..params import OptionalCollection, Urls
from ..results import JsonReply, Reply, output_schema
from ..runs import Run
from ..toolkit import ContractTool, Deps, define
from .common import describe_costs, long_call

__all__ = ["DUPLICATE_COSTS", "tools"]

DUPLICATE_COSTS: dict[str, int] = {"duplicates_base": 70, "duplicates_per_group": 230}
"""What results cost, measured by ``tests/test_duplicates.py`` (a group of two with up to three
matched passages of 40 words)."""


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def find_duplicates(
        ctx: Context, urls: Urls = None, collection: OptionalCollection = None
    ) -> Reply:
        """Find reuploads and clips among videos (urls and/or a collection, at most 100 videos),
        so briefs and counts take each talk once. Compares the transcripts' shingled fingerprints
        (MinHash and LSH over timed five-word shingles), not titles. Answers groups: kind
        reupload (both transcripts mostly the same words) or clip (one is a part of the other);
        members with the reference first (offsetSec 0) and each other member's offsetSec (its
        moment t is said at t + offsetSec in the reference); evidence: each member's share of its
        transcript that overlaps, and the matched passages with times on both sides. Two talks
        on one subject are not grouped. Videos that cannot be read are listed in failed.
        Costs about {duplicates_base} tokens plus {duplicates_per_group} per group.
        """
        inputs = await core.check_inputs(runtime, urls, collection)

        async def work(run: Run) -> Reply:
            result = await core.find_duplicates(
                runtime, inputs, ctx=run.ctx(), on_progress=run.progress_event
            )
            return JsonReply(result, structured=True, untrusted="duplicates (passages are video text)")

        return await long_call(deps, ctx, "find_duplicates", {"urls": inputs}, work)

    describe_costs(find_duplicates, DUPLICATE_COSTS)
    return [
        define(
            find_duplicates,
            title="Find reuploads and clips",
            read_only=True,
            open_world=True,
            idempotent=True,
            output=output_schema(core.DuplicatesResult),
        ),
    ]
