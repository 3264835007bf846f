"""``get_job``: come back to long work that answered ``processing``."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from ...errors import ErrorCode, VidError
from ..results import Reply
from ..toolkit import ContractTool, Deps, caller, define, progress_sender

__all__ = ["tools"]

JobId = Annotated[str, Field(description="The job_id of a processing result.", min_length=4, max_length=64)]


def tools(deps: Deps) -> list[ContractTool]:
    async def get_job(ctx: Context, job_id: JobId) -> Reply:
        """Wait for work that answered {"status": "processing", "job_id": ...}: up to 45 seconds,
        with progress notifications. When it is done, answers exactly what the original call would
        have; when it is still going, processing again with retry_after_seconds (do not poll faster).
        Calling the original tool again with the same arguments does the same. Costs the tokens of
        the original result (about 150 tokens while still processing)."""
        reply = await deps.runs.job(job_id.strip(), caller(ctx), progress_sender(ctx))
        if reply is None:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"There is no job {job_id.strip()[:64]!r} for this caller (unknown, expired or someone else's).",
                hint="Repeat the call that answered with this job_id, with the same arguments: if the work "
                "finished, its result is saved and the call answers at once.",
            )
        return reply

    return [define(get_job, title="Wait for long work", read_only=True, open_world=False, idempotent=True)]
