"""``ask``: a question answered from videos, with citations checked against their segments.

The same core as ``POST /api/v1/ask`` (``answers.ask``): the question is grounded in passages the
search core finds in ``urls`` (read and saved first when new) and/or a collection, a language
model answers from them citing ``[n]``, unknown numbers are removed and each citation is narrowed
to the segment that best supports its sentence. The client's own model answers through sampling
when the policy puts it first (``free``, ``local-only``) or no server rung is set up.

The reply is the answer, then one line per citation, ``[n] Title @ m:ss <timestamp URL>``, both
fenced (the answer is made of the videos' words, and titles are theirs); after the fence one line
says which rung answered and what was removed. Errors nest the code, as the contract gives it for
this tool: ``{"error": {"code", "message", "hint"}, "attempts"}``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...answers.ask import Question, answer, prepare
from ...answers.grounding import MAX_QUESTION_CHARS
from ...errors import ErrorCode, VidError
from ...models import AskResult, Citation
from ...timecode import format_timestamp
from ..params import OptionalCollection
from ..results import Reply, TextReply, Untrusted
from ..runs import Run
from ..sampling import with_caller_model
from ..toolkit import ContractTool, Deps, define
from .common import describe_costs, long_call

__all__ = ["ASK_COSTS", "source_line", "tools"]

ASK_COSTS: dict[str, int] = {"ask_base": 120, "ask_per_source": 30}
"""What a reply costs besides the answer's own words: the fence and the status line, and each
source line; measured by ``tests/test_ask_mcp.py``."""

QuestionArg = Annotated[
    str,
    Field(
        description=f"The question to answer from the videos (at most {MAX_QUESTION_CHARS:,} characters).",
        min_length=1,
    ),
]
AskUrls = Annotated[
    list[str] | None,
    Field(
        description="Answer from these videos (URLs or ids; lists are expanded); those not saved yet are "
        "read and saved first. Left out (and no collection): every saved video."
    ),
]


def source_line(citation: Citation) -> str:
    """``[n] Title @ m:ss <timestamp URL>`` (without the link where the platform has none)."""
    line = f"[{citation.n}] {citation.title} @ {format_timestamp(citation.start_sec)}"
    return f"{line} <{citation.url}>" if citation.url else line


def _status(result: AskResult, videos: int, failed: list[str]) -> str:
    passages = f"{len(result.sources)} passage" + ("s" if len(result.sources) != 1 else "")
    of = f"{videos} video" + ("s" if videos != 1 else "")
    parts = [f"Answered by {result.rung} ({result.model}) from {passages} of {of}."]
    if result.unverified:
        shown = ", ".join(f"[{n}]" for n in result.unverified)
        parts.append(f"Removed citations that match no source: {shown}.")
    if not result.citations:
        parts.append("The answer cites no source: check it with search_transcript before relying on it.")
    if failed:
        parts.append("Could not read: " + ", ".join(failed) + ".")
    return " ".join(parts)


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def ask(
        ctx: Context,
        question: QuestionArg,
        urls: AskUrls = None,
        collection: OptionalCollection = None,
    ) -> Reply:
        """Answer a question from videos, with each claim cited to the moment that supports it:
        the server finds the passages (in urls, a collection, or every saved video), a language
        model answers from them (yours, through sampling, when no server model comes first), and
        every [n] is checked: made-up numbers are removed, each citation points at the segment
        that best supports its sentence. Returns the answer, then one line per citation, [n] Title
        @ m:ss <link>. Costs about {ask_base} tokens plus the answer and {ask_per_source} per
        source: far less than reading the transcripts. To read the passages yourself instead,
        use search_transcript.
        """
        inputs = [text for text in urls or [] if isinstance(text, str) and text.strip()]
        if urls is not None and not inputs:
            raise VidError(
                ErrorCode.BAD_REQUEST, "urls is empty.", hint="Give video URLs or ids, or leave urls out."
            )
        args = {"question": question, "urls": inputs, "collection": collection}

        async def work(run: Run) -> Reply:
            job = with_caller_model(run.ctx(), ctx)
            asked = Question(question=question, inputs=inputs or None, collection=collection)
            prepared = await prepare(runtime, asked, job, on_progress=run.progress_event)
            result = await answer(runtime, prepared, job)
            lines = [source_line(citation) for citation in result.citations]
            body = result.answer.strip() + ("\n\n" + "\n".join(lines) if lines else "")
            failed = [label[:80] for label, _ in prepared.grounding.failed]
            videos = len({source.video_id for source in result.sources})
            return TextReply([Untrusted("answer with sources", body), _status(result, videos, failed)])

        return await long_call(deps, ctx, "ask", args, work, writes=True)

    describe_costs(ask, ASK_COSTS)
    return [
        define(
            ask,
            title="Ask the videos",
            read_only=True,
            open_world=True,
            idempotent=False,
            nested_errors=True,
        )
    ]
