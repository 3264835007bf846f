"""``watch_live``: a live stream's rolling transcript as progress notifications, the text at the end.

A skin over ``live.core``, as ``GET /api/v1/live`` is: the same checks first (a request error is
the tool's error result), then each ``segment`` goes out as a progress notification whose message
is the line ``[m:ss] text`` (progress counts the stream's seconds heard, of ``maxMinutes``), and the
reply is the whole transcript, fenced. The call runs in the request, not as a detached long run:
a client that cancels the call or goes away cancels it, which stops ffmpeg and removes its files.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from ...ctx import Ctx
from ...live import DEFAULT_MAX_MINUTES, MAX_MINUTES, live_events, prepare_live
from ...timecode import format_timestamp
from ..results import Reply, TextReply, Untrusted
from ..toolkit import ContractTool, Deps, define, progress_sender
from .common import describe_costs

__all__ = ["LIVE_COSTS", "tools"]

LIVE_COSTS: dict[str, int] = {"live_per_minute": 230}
"""What a minute of speech costs in the result (one ``[m:ss]`` line a segment), measured by
``tests/test_mcp_costs.py`` on the generated talks' speech."""

StreamUrl = Annotated[
    str,
    Field(description="The live stream's HLS (.m3u8) or DASH (.mpd) address.", min_length=1, max_length=2048),
]
MaxMinutes = Annotated[
    int | None,
    Field(
        description=f"Stop after this many minutes of the stream, 1 to {MAX_MINUTES}; default {DEFAULT_MAX_MINUTES}.",
        alias="maxMinutes",
    ),
]

_REASONS = {"ended": "the stream ended", "max-minutes": "maxMinutes was reached"}


def tools(deps: Deps) -> list[ContractTool]:
    runtime = deps.runtime

    async def watch_live(ctx: Context, url: StreamUrl, max_minutes: MaxMinutes = None) -> Reply:
        """Transcribe a live stream (HLS .m3u8 or DASH .mpd) as it arrives, for maxMinutes or until it
        ends. While it runs, each new line "[m:ss] text" is sent as a progress notification (send a
        progressToken to see them); the result is the whole transcript, times in seconds from where
        the watch joined the stream. Holds the call for up to maxMinutes; the text costs
        about {live_per_minute} tokens a minute of speech. A finished playlist is a video: read it
        with get_transcript. Local server only.
        """
        work = Ctx(timeout=runtime.settings.request_timeout_ms / 1000 or None)
        watch = await prepare_live(runtime, url, max_minutes, work)
        notify = progress_sender(ctx)
        total = watch.max_minutes * 60
        done: dict[str, Any] = {}
        # aclosing: a call cancelled while a notification goes out closes the watch, and ffmpeg
        async with contextlib.aclosing(live_events(runtime, watch, work)) as watching:
            async for event in watching:
                if event.name == "segment":
                    line = f"[{event.data['start']}] {event.data['text']}"
                    await notify("live", None, line, int(event.data["endSec"]), total)
                elif event.name == "done":
                    done = event.data
        lines = done.get("text", "")
        reason = _REASONS.get(done.get("reason", ""), "the stream ended")
        heard = format_timestamp(float(done.get("durationSec", 0.0)))
        header = f"Live stream {watch.url}: {done.get('segments', 0)} segments in {heard}; stopped because {reason}."
        if not lines:
            return TextReply([header, "No speech was heard."])
        return TextReply([header, Untrusted("live transcript", lines)])

    describe_costs(watch_live, LIVE_COSTS)
    return [
        define(watch_live, title="Watch a live stream", read_only=True, open_world=True, idempotent=False)
    ]
