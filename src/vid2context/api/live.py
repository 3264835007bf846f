"""``GET /api/v1/live?url=&maxMinutes=``: a live stream's transcript as server-sent events.

A thin skin over ``live.core``: ``prepare_live`` answers every request error (bad ``maxMinutes``,
an input that is no stream manifest, a playlist that is not live, a stream that never began, the
Worker) with the standard error body and status before anything is streamed; then the events go
out through ``api.ask.sse_stream``, the encoding and keep-alive comments ``/chat`` uses
(``event:`` and one line of JSON ``data:``). A failure after streaming began is an ``error``
event. A client that disconnects cancels the stream, and the body is closed after the response
(Litestar leaves that to the app), which stops ffmpeg and removes its files.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from litestar import Request, get
from litestar.background_tasks import BackgroundTask
from litestar.params import QueryParameter
from litestar.response import Stream

from ..answers.ask import Event, error_data
from ..ctx import Ctx
from ..errors import VidError
from ..live import DEFAULT_MAX_MINUTES, MAX_MINUTES, LiveWatch, live_events, prepare_live
from ..runtime import Runtime
from .ask import KEEP_ALIVE_S, sse_stream
from .middleware import request_ctx
from .params import LangQuery, parse_int, parse_lang, require_url, runtime_of

__all__ = ["LIVE_ROUTES", "live_route"]

log = logging.getLogger("vid2context.api")

_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

StreamQuery = Annotated[
    str | None,
    QueryParameter(description="The live stream's HLS (.m3u8) or DASH (.mpd) address; URL-encoded."),
]
MaxMinutesQuery = Annotated[
    str | None,
    QueryParameter(
        name="maxMinutes",
        description=f"Stop after this many minutes of the stream, 1 to {MAX_MINUTES}; default {DEFAULT_MAX_MINUTES}.",
    ),
]


async def _events(runtime: Runtime, watch: LiveWatch, ctx: Ctx) -> AsyncIterator[Event]:
    try:
        # aclosing: a client gone while this waits at a yield closes the watch, and with it ffmpeg
        async with contextlib.aclosing(live_events(runtime, watch, ctx)) as watching:
            async for event in watching:
                yield event
    except VidError as error:
        yield Event("error", error_data(error))
    except Exception:
        log.exception("live stream failed")
        yield Event("error", error_data(VidError.internal(list(watch.attempts))))


@get(
    "/api/v1/live",
    media_type="text/event-stream",
    response_description="Server-sent events: status, segment*, then done or error; : keep-alive comments.",
)
async def live_route(
    request: Request, url: StreamQuery = None, max_minutes: MaxMinutesQuery = None, lang: LangQuery = None
) -> Stream:
    """Transcribe a live HLS (.m3u8) or DASH (.mpd) stream as it arrives, for at most
    ``maxMinutes`` (1 to 240, default 30) or until it ends: ``status`` (``live`` with
    ``startedAt``, then ``heard`` after each piece of about 10 s), ``segment`` (``startSec``,
    ``endSec``, ``start``, ``text``: seconds from where the watch joined the stream), then
    ``done`` (``text``, ``segments``, ``durationSec``, ``reason``: ``ended`` or ``max-minutes``)
    or ``error``. Local runtime only; a finished playlist is a video: read it with /transcript."""
    runtime = runtime_of(request)
    ctx = request_ctx(request, runtime)
    minutes = parse_int("maxMinutes", max_minutes, low=1, high=MAX_MINUTES, default=None)
    watch = await prepare_live(runtime, require_url(url), minutes, ctx, lang=parse_lang(lang))
    keep_alive = request.app.state.get("keep_alive_s", KEEP_ALIVE_S)
    body = sse_stream(_events(runtime, watch, ctx), ctx, float(keep_alive))
    # Litestar stops iterating a body whose client went away but never closes it; closing it
    # after the response (the background task also runs then) stops the watch and its ffmpeg.
    return Stream(
        body, media_type="text/event-stream", headers=_SSE_HEADERS, background=BackgroundTask(body.aclose)
    )


LIVE_ROUTES = [live_route]
"""Every handler of this module, for ``create_app``."""
