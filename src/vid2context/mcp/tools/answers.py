"""``build_brief``, ``extract`` and ``digest_videos``: answers a language model writes from videos.

On MCP these run within the call (as a long run: ``processing`` and ``get_job`` when they take
longer than the wait), not as REST jobs: the calling client's own model can answer only during its
call. Which model writes: the server's rungs in the policy's order, with the client's model
(sampling) among them when the client declared sampling; with no server rung set up, the client's
model alone. ``digest_videos`` uses the client's model only, and without it answers a plan of tool
calls for the agent to digest the videos itself, never an error.

Everything a model wrote from video text is fenced as untrusted, like the video text itself.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from ...answers.briefs import brief_markdown, build_brief
from ...answers.digest import (
    DEFAULT_TOKENS_PER_VIDEO,
    MAX_TOKENS_PER_VIDEO,
    MIN_TOKENS_PER_VIDEO,
    PLAN_STEPS,
    Digest,
    VideoPlan,
    check_tokens_per_video,
    digest,
    plan,
    read_scope,
)
from ...answers.extract import check_spec, extract
from ...answers.scope import MAX_VIDEOS, check_scope
from ...answers.templates import BRIEF_TEMPLATES, EXTRACT_TEMPLATES, brief_template
from ...models import FailedInput
from ...timecode import format_timestamp
from ..params import OptionalCollection, int_range
from ..results import JsonReply, Reply, TextReply, Untrusted
from ..runs import Run
from ..sampling import caller_model, with_caller_model
from ..toolkit import ContractTool, Deps, define
from .common import long_call

__all__ = ["tools"]

Urls = Annotated[
    list[str] | None,
    Field(description=f"Videos or lists (expanded), as URLs or ids; at most {MAX_VIDEOS}."),
]
Question = Annotated[
    str | None,
    Field(description="What to answer from the videos; leave it out for their main points."),
]
BriefTemplateArg = Annotated[
    str | None,
    Field(description="The brief's focus: " + ", ".join(BRIEF_TEMPLATES) + " (the default: research)."),
]
BriefFormat = Annotated[
    Literal["markdown", "json"],
    Field(description="markdown (the default), or json for the whole Brief object."),
]
ExtractTemplateArg = Annotated[
    str | None,
    Field(
        description="A named template: "
        + "; ".join(f"{t.name} ({t.asks.rstrip('.')})" for t in EXTRACT_TEMPLATES.values())
        + ". Or give schema instead."
    ),
]
Schema = Annotated[
    Any,
    Field(
        alias="schema",
        description="A JSON Schema object (type object; at most 32 kB) the result's data must match. Checked: "
        "type, enum, const, properties, required, additionalProperties, items, min/max counts and bounds, "
        "allOf/anyOf/oneOf/not, local $ref with $defs (never fetched); other keywords such as pattern are "
        "refused. Or give template instead.",
    ),
]
TokensPerVideo = Annotated[
    int | None,
    Field(
        alias="maxTokensPerVideo",
        description=f"Most transcript tokens read per video (default {DEFAULT_TOKENS_PER_VIDEO}).",
        json_schema_extra=int_range(MIN_TOKENS_PER_VIDEO, MAX_TOKENS_PER_VIDEO),
    ),
]


def _failed_lines(failed: list[FailedInput]) -> list[str]:
    return [f"Not included: {f.input} ({f.code}: {f.message})" for f in failed]


def _digest_text(found: Digest) -> TextReply:
    """The digest, then one source line per citation: ``[n] Title @ m:ss <link>``."""
    lines = [
        f"[{c.n}] {c.title} @ {format_timestamp(c.start_sec)}" + (f" <{c.url}>" if c.url else "")
        for c in found.citations
    ]
    status = f"Digest by {found.model} ({found.rung}), {len(found.sources)} passages read"
    if found.unverified:
        status += "; removed citations that matched no source: " + ", ".join(
            f"[{n}]" for n in found.unverified
        )
    return TextReply(
        [
            Untrusted(
                "digest written by the client's model from video text", found.text + "\n\n" + "\n".join(lines)
            ),
            status + ".",
            *_failed_lines(found.failed),
        ]
    )


def _plan_text(why: str, plans: list[VideoPlan], failed: list[FailedInput]) -> TextReply:
    """The chunk plan: the instructions, then the calls per video as JSON lines."""
    steps = "\n".join(f"{i}. {step}" for i, step in enumerate(PLAN_STEPS, 1))
    total = sum(call.tokens or 0 for p in plans for call in p.calls)
    parts: list[str | Untrusted] = [
        f"Not a digest: no model to write one here ({why}). Digest the videos yourself with this plan "
        f"(about {total:,} tokens of reading in all):\n{steps}"
    ]
    for number, video in enumerate(plans, 1):
        calls = "\n".join(
            f"- {call.tool} {json.dumps(call.arguments, ensure_ascii=False)}: {call.reads}"
            + (f", about {call.tokens:,} tokens" if call.tokens is not None else "")
            for call in video.calls
        )
        left = (
            f"\n({video.left_out} more sections left out to stay within the budget.)"
            if video.left_out
            else ""
        )
        parts.append(
            Untrusted(
                f"plan for video {number}",
                f"Video {number}: {video.title} ({video.url or video.video_id}), about {video.total_tokens:,} "
                f"tokens whole\n{calls}{left}",
            )
        )
    parts.extend(_failed_lines(failed))
    return TextReply(parts)


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def build_brief_tool(
        ctx: Context,
        collection: OptionalCollection = None,
        urls: Urls = None,
        question: Question = None,
        template: BriefTemplateArg = None,
        format: BriefFormat = "markdown",
    ) -> Reply:
        """A cited brief across videos, written by a language model on the server (or by your own,
        through sampling, when the server has none): claims with citations checked against the
        transcripts, consensus (two or more videos), disagreement, open questions, sources. Every
        claim links its moments as [Video title @ m:ss](link); citations that match no source are
        removed and listed. Single pass over the passages that fit the model's window (the best
        matches for question, else spread through the videos). Costs about 1,000 to 3,000 tokens;
        format=json gives the whole Brief object. For synthesis in your own context instead, read
        with get_outline and get_section and use the prompt brief."""
        found = brief_template(template)
        scope = await check_scope(runtime, urls, collection, question)
        args = {**scope.wire(), "template": found.name, "format": format}

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            brief = await build_brief(runtime, scope, found, ctx=job, on_progress=run.progress_event)
            if format == "json":
                return JsonReply(brief, untrusted="brief written by a language model from video text")
            return TextReply(
                [Untrusted("brief written by a language model from video text", brief_markdown(brief))]
            )

        return await long_call(deps, ctx, "build_brief", args, work)

    build_brief_tool.__name__ = "build_brief"

    async def extract_tool(
        ctx: Context,
        template: ExtractTemplateArg = None,
        json_schema: Schema = None,
        urls: Urls = None,
        collection: OptionalCollection = None,
        question: Question = None,
    ) -> Reply:
        """Structured data out of videos, as JSON that matches a template or your JSON Schema
        (checked; an answer that does not match is asked again once, then reported as an error):
        {template, data, citations: [{field: JSON pointer, citations: [{videoId, title, startSec,
        url, quote}]}], unverified, notes, sources}. A language model on the server writes it (or
        yours, through sampling, when the server has none). Costs about 500 tokens plus the data."""
        spec = check_spec(template, json_schema)
        scope = await check_scope(runtime, urls, collection, question)
        args = {**scope.wire(), **spec.wire()}

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            result = await extract(runtime, scope, spec, ctx=job, on_progress=run.progress_event)
            return JsonReply(result, untrusted="data extracted by a language model from video text")

        return await long_call(deps, ctx, "extract", args, work)

    extract_tool.__name__ = "extract"

    async def digest_videos(
        ctx: Context,
        urls: Urls = None,
        collection: OptionalCollection = None,
        question: Question = None,
        max_tokens_per_video: TokensPerVideo = None,
    ) -> Reply:
        """A cited digest of videos written by your own model through MCP sampling (no server key):
        a section per video, each point citing [n], then one source line per citation
        ([n] Title @ m:ss <link>); citations that match no source are removed and listed. When
        this client cannot sample, it answers instead a plan (never an error): for each video the
        get_transcript, get_section (and, with question, search_transcript) calls to make, what
        each costs, and how to write and cite the digest yourself. Costs the digest (about 1,000
        tokens) or the plan (about 100 tokens a video)."""
        budget = check_tokens_per_video(max_tokens_per_video)
        scope = await check_scope(runtime, urls, collection, question)
        model = caller_model(ctx)
        args = {**scope.wire(), "maxTokensPerVideo": budget, "sampling": model.enabled}

        async def work(run: Run) -> Reply:
            job = run.ctx()
            if model.enabled:
                job.caller_model = model
                return _digest_text(
                    await digest(runtime, scope, budget, ctx=job, on_progress=run.progress_event)
                )
            contexts, failed = await read_scope(runtime, scope, ctx=job, on_progress=run.progress_event)
            return _plan_text(model.unavailable, plan(contexts, scope.question, budget), failed)

        return await long_call(deps, ctx, "digest_videos", args, work)

    return [
        define(
            build_brief_tool, title="Build a cited brief", read_only=True, open_world=True, idempotent=False
        ),
        define(
            extract_tool, title="Extract structured data", read_only=True, open_world=True, idempotent=False
        ),
        define(digest_videos, title="Digest videos", read_only=True, open_world=True, idempotent=False),
    ]
