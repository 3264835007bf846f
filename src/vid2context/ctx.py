"""The per-call context: one per request, tool call or CLI run.

Server objects hold no per-request state; everything that belongs to one call lives here: its
deadline, its abort signal, a memo that lets providers share one upstream response between the
metadata and captions stages, a progress callback, and the calling client's own model when an MCP
client can lend it (sampling). Providers call ``ctx.check()`` between
upstream requests so an aborted or expired call stops doing work.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from .errors import ErrorCode, VidError, per_surface

__all__ = ["METER", "Ctx", "Progress"]

Progress = Callable[[str, float | None, str], None]
"""``progress(stage, fraction, message)``; fraction is 0..1 or ``None`` when unknown."""


METER: ContextVar[Any] = ContextVar("vid2context_meter", default=None)
"""What the calls of this request are counted against (hosted mode's ``auth.quotas.Meter``): set
by the layer that knew the caller (the API's auth, the ``/mcp`` mount) around the request, and read
by each ``Ctx`` made inside it; ``None`` everywhere else."""


class Ctx:
    """Deadline, abort signal, memo and progress for one call."""

    def __init__(
        self,
        *,
        timeout: float | None = None,
        request_id: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.request_id = request_id or uuid.uuid4().hex
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.progress_callback = progress
        self.memo: dict[Any, Any] = {}
        self.meter: Any = METER.get()
        """The caller's quotas in hosted mode (``auth.quotas.Meter``), else ``None``: the pipeline
        counts a video read from its platform and the minutes sent to speech-to-text against it."""
        self.caller_model: Any = None
        """The calling MCP client's own model (``answers.llm.sampling.SamplingLlm``), set by the
        MCP layer for its tool calls; ``answers.llm.ladder.plan_llm`` offers it as a rung."""
        self._abort = asyncio.Event()
        self._abort_reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._abort.is_set()

    @property
    def remaining(self) -> float | None:
        """Seconds left before the deadline, ``None`` when the call has none."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def abort(self, reason: str = "canceled") -> None:
        """Ask every provider working for this call to stop at its next check."""
        self._abort_reason = reason
        self._abort.set()

    def check(self) -> None:
        """Raise if the call was aborted or its deadline passed; cheap enough to call often."""
        if self._abort.is_set():
            if self._abort_reason == "timeout":
                raise self.timeout_error()
            raise VidError(
                ErrorCode.CANCELED,
                "The call was canceled.",
                hint="Repeat the call if its answer is still needed; nothing was lost.",
            )
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise self.timeout_error()

    def timeout_error(self) -> VidError:
        """The error for this call's deadline passing (also raised by ``check``)."""
        return VidError(
            ErrorCode.TIMEOUT,
            "The call ran out of time.",
            hint=per_surface(
                rest="Repeat the call once (what was read is saved); for long videos submit a job "
                "(POST /api/v1/jobs), or tell the user to raise VID2CONTEXT_REQUEST_TIMEOUT_MS.",
                mcp="Repeat the call once (what was read is saved); if it runs out of time again, tell "
                "the user to raise VID2CONTEXT_REQUEST_TIMEOUT_MS, and do not retry.",
            ),
        )

    def progress(self, stage: str, fraction: float | None = None, message: str = "") -> None:
        if self.progress_callback is not None:
            self.progress_callback(stage, fraction, message)
