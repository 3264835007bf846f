"""The calling client's model as a language-model rung, built from one tool call's context.

``caller_model(ctx)`` answers an ``answers.llm.sampling.SamplingLlm`` that sends
``sampling/createMessage`` on this call's channel when the client declared sampling and the
channel can carry a request from the server mid-call (protocol 2025-11-25 and older, over stdio, in
process, or in a session of the local ``/mcp``, ``http.py``); otherwise a disabled one that says
why. The stateless ``/mcp`` (the Worker's, or the local one without sessions) answers each request
with one JSON body, so it never can. Tools put it on their per-call ``Ctx``
(``with_caller_model``), where ``plan_llm`` finds it.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from ..answers.llm.sampling import SamplingLlm
from ..ctx import Ctx
from .toolkit import over_http

__all__ = ["caller_model", "with_caller_model"]


def caller_model(ctx: Context) -> SamplingLlm:
    """The client's model for this call, enabled when the client can sample during it."""
    try:
        session = ctx.session
        capabilities = ctx.client_capabilities
        request_id = ctx.request_id
    except ValueError:  # no request context: a direct call, with nobody to ask
        return SamplingLlm(unavailable="this call has no MCP client to ask")
    if capabilities is None or capabilities.sampling is None:
        return SamplingLlm(unavailable="the MCP client did not declare sampling")
    if not session.can_send_request:
        if over_http(ctx):  # stateless, one JSON answer per request: no way back to the client
            return SamplingLlm(unavailable="the stateless HTTP endpoint cannot ask the client during a call")
        return SamplingLlm(
            unavailable=f"MCP {ctx.protocol_version or 'this protocol version'} carries no sampling request "
            "in the middle of a call"
        )
    return SamplingLlm(session, request_id=request_id)


def with_caller_model(job: Ctx, ctx: Context) -> Ctx:
    """``job`` (a run's context) with this call's client model on it."""
    job.caller_model = caller_model(ctx)
    return job
