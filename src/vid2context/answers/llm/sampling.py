"""The calling MCP client's own model, through MCP sampling (``sampling/createMessage``).

The rung exists only inside an MCP tool call: ``mcp/sampling.py`` builds it from the call's
context and puts it on the per-call ``Ctx`` (``ctx.caller_model``), where ``ladder.plan_llm``
finds it. It is enabled when the client declared the ``sampling`` capability and the call's
channel can carry a request from the server in the middle of the call: protocol versions up to
2025-11-25, which the MCP clients in use speak. From 2026-07-28 on, sampling is deprecated
(SEP-2577) and travels only in input-required rounds that restart the call, which a ladder of many
requests does not fit, so there the rung is listed as not available and the next one answers.
Over REST there is no client model: ``/models`` lists the rung disabled.

Its tier is ``caller``: no key and no bill on this server, and the text goes only to the client
that asked, which is where the answer goes anyway. That is why the ``local-only`` policy keeps it.
The client picks the model (``modelPreferences`` ask for intelligence over speed and cost) and may
ask its user first; the answer names the model it used. The context window is the client's
business: ``CONTEXT_TOKENS`` is what we assume, small enough for any current model. It does not
stream: the whole answer comes back as one delta.

``mcp`` is imported inside the calls only: this module is also read by the REST catalog, and the
Worker must not import the SDK at start-up (it draws random numbers at import).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ...ctx import Ctx
from ...errors import ErrorCode, VidError
from ...models import ChatMessage
from ...providers.speech import RungError
from .base import Completion, Delta, LlmOptions, LlmTier, one_delta, output_budget

__all__ = ["CONTEXT_TOKENS", "SAMPLING_ID", "SamplingLlm"]

SAMPLING_ID = "llm/mcp-sampling/client"
CONTEXT_TOKENS = 16_000
MAX_OUTPUT_TOKENS = 4096
_STOP_REASONS = {"endTurn": "stop", "stopSequence": "stop", "maxTokens": "length"}
_DECLINED_HINT = (
    "Tell the user the MCP client declined or failed the request for its model (it may ask them to "
    "approve it), or to set up another language-model rung; do not retry until then."
)


class SamplingLlm:
    """``LanguageModel`` on the calling MCP client's model."""

    id = SAMPLING_ID
    service = "mcp-sampling"
    model = "client"
    provider = "llm-mcp-sampling"
    name = "MCP sampling (the calling client's model)"
    tier: LlmTier = "caller"
    requires: tuple[str, ...] = ()
    streams = False
    context_tokens = CONTEXT_TOKENS
    max_output_tokens = MAX_OUTPUT_TOKENS

    def __init__(
        self,
        session: Any = None,
        *,
        request_id: Any = None,
        unavailable: str = "only an MCP client that can sample has one",
    ) -> None:
        self._session = session
        self._request_id = request_id
        self.enabled = session is not None
        self.unavailable = unavailable
        """Why the rung cannot run here, for the attempt that skips it."""

    async def complete(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> Completion:
        if self._session is None:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                f"The calling client's model is not available: {self.unavailable}.",
                hint="Tell the user this needs an MCP client that can sample, or another language-model "
                "rung set up; do not retry until then.",
            )
        import mcp_types as types
        from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError

        system = "\n\n".join(m.content for m in messages if m.role == "system") or None
        turns = [
            types.SamplingMessage(role=m.role, content=types.TextContent(type="text", text=m.content))
            for m in messages
            if m.role != "system"
        ]
        ctx.check()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                request = self._session.create_message(
                    turns,
                    max_tokens=output_budget(self, options),
                    system_prompt=system,
                    temperature=options.temperature,
                    stop_sequences=list(options.stop) or None,
                    model_preferences=types.ModelPreferences(
                        intelligence_priority=0.8, speed_priority=0.4, cost_priority=0.2
                    ),
                    related_request_id=self._request_id,
                )
            result = await asyncio.wait_for(request, timeout=ctx.remaining)
        except TimeoutError:
            raise ctx.timeout_error() from None
        except NoBackChannelError:
            raise VidError(
                ErrorCode.NO_PROVIDER,
                "The MCP client cannot be asked for its model during this call.",
                hint=_DECLINED_HINT,
            ) from None
        except MCPError as exc:
            said = " ".join(str(exc.error.message).split())[:160]
            raise RungError(
                ErrorCode.UPSTREAM, f"The MCP client did not sample: {said}.", hint=_DECLINED_HINT
            ) from None
        content = result.content
        if getattr(content, "type", None) != "text":
            raise RungError(
                ErrorCode.UPSTREAM,
                f"The MCP client answered {getattr(content, 'type', 'something')} content, not text.",
                hint=_DECLINED_HINT,
            )
        return Completion(
            text=content.text,
            model=result.model or self.model,
            rung=self.id,
            finish_reason=_STOP_REASONS.get(result.stop_reason or "", result.stop_reason),
        )

    def stream(self, messages: Sequence[ChatMessage], ctx: Ctx, options: LlmOptions) -> AsyncIterator[Delta]:
        return one_delta(self.complete(messages, ctx, options))
