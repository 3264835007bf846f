"""A live stream transcribed as it arrives: the one core of ``GET /api/v1/live`` and ``watch_live``.

``prepare_live`` checks everything a caller can get wrong before anything is streamed (the
``maxMinutes`` bounds, the input, public mode, a runtime that can read streams, a speech-to-text
rung, a manifest that is live and has begun, the stream behind a live page), so those are answered with the standard error body
and status. ``live_events`` then reads the stream through ``runtime.live`` (a ``LiveSource``: ffmpeg
on the local runtime, none on the Worker), sends each piece through the speech-to-text ladder
(``pipeline.transcribe``, the same rungs as a video's audio) and yields:

- ``status`` ``{state, ...}``: ``live`` first (``startedAt``, ``maxMinutes``, ``pieceSec``), then
  ``heard`` after each piece (``heardSec``, ``pieces``, and ``silent`` for a piece with no speech);
- ``segment`` ``{startSec, endSec, start, text}`` for every segment, in order, times in seconds from
  where the watch joined the stream (absolute within it, never relative to a piece);
- ``done`` ``{text, segments, durationSec, reason, startedAt, attempts}`` at the end: ``reason`` is
  ``ended`` (the stream stopped) or ``max-minutes``.

It raises ``VidError`` on failure; the REST skin turns that into an ``error`` event. Closing the
iterator, or cancelling the task reading it (a client that went away), leaves the source's
``async with``, which stops ffmpeg's process group and removes the temporary folder.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec

from ..answers.ask import Event
from ..ctx import Ctx
from ..errors import ErrorCode, VidError, per_surface
from ..inputs import parse_input
from ..models import Attempt, Segment
from ..pipeline import no_stt_rung, transcribe
from ..providers.speech import AudioInput
from ..runtime import Runtime
from ..timecode import format_timestamp

__all__ = [
    "DEFAULT_MAX_MINUTES",
    "MAX_MINUTES",
    "PIECE_SEC",
    "LivePiece",
    "LiveSource",
    "LiveWatch",
    "check_minutes",
    "live_events",
    "live_text",
    "prepare_live",
]

DEFAULT_MAX_MINUTES = 30
MAX_MINUTES = 240
"""Four hours: the longest watch one call may hold a connection, ffmpeg and the ladder for."""
PIECE_SEC = 10.0
"""A piece is about this long (cut inside a pause near its end): short enough that a word is
back within seconds, long enough that a speech-to-text request has a sentence to work with."""
GRACE_S = 120.0
"""How long past ``maxMinutes`` the last pieces may take to be transcribed."""


@dataclass(frozen=True)
class LivePiece:
    """One piece of the stream's audio, ready to send, and where it sits in the stream."""

    index: int
    start_sec: float
    end_sec: float
    audio: AudioInput


class LiveSource(Protocol):
    """Reads a live stream's audio as it arrives (``live/ffmpeg_live.py`` locally)."""

    async def probe(self, url: str, ctx: Ctx, *, page: bool = False) -> str:
        """The media address to read once ``url`` is known to be a live stream that has begun;
        ``page``: ``url`` is a video page (YouTube), whose stream is found first (``live.pages``).

        Raises ``unsupported-input`` for a manifest that is not live (video on demand) or not a
        manifest at all, ``not-found``/``upstream`` when it cannot be fetched, ``timeout`` when the
        stream has not begun within the source's start limit."""
        ...

    def pieces(
        self, media: str, ctx: Ctx, *, length_sec: float, piece_sec: float
    ) -> AbstractAsyncContextManager[AsyncIterator[LivePiece]]:
        """The pieces in order as they arrive, at most ``length_sec`` of audio in all; leaving the
        ``async with`` stops the reading and removes what it wrote."""
        ...


@dataclass
class LiveWatch:
    """A checked request: what to read and for how long."""

    url: str
    media: str
    max_minutes: int
    lang: str | None = None
    attempts: list[Attempt] = field(default_factory=list)


def check_minutes(value: int | None) -> int:
    """``maxMinutes``: 1 to ``MAX_MINUTES``, ``DEFAULT_MAX_MINUTES`` when left out."""
    if value is None:
        return DEFAULT_MAX_MINUTES
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MINUTES:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"maxMinutes must be a whole number from 1 to {MAX_MINUTES}, not {str(value)[:20]}.",
            hint=f"Give maxMinutes from 1 to {MAX_MINUTES}, or leave it out for {DEFAULT_MAX_MINUTES}.",
        )
    return value


def _not_here() -> VidError:
    return VidError(
        ErrorCode.UNSUPPORTED_INPUT,
        "This server cannot read live streams (it has no ffmpeg: a Cloudflare Worker).",
        hint=per_surface(
            rest="Tell the user live streams are read by the local runtime (`vid2context serve`, then GET "
            "/api/v1/live there); do not retry here.",
            mcp="Tell the user live streams are read by the local runtime (`vid2context mcp`); do not retry "
            "here.",
        ),
    )


def _stream_url(runtime: Runtime, url: str) -> tuple[str, bool]:
    """The address to read, and whether it is a video page (YouTube) rather than a web address
    (a manifest, or a page the source reads for its stream)."""
    ref = parse_input(url, public=runtime.settings.public)
    if ref.platform == "youtube" and ref.kind == "video":
        return ref.url or f"https://www.youtube.com/watch?v={ref.native_id}", True
    if ref.platform != "web" or not (ref.url or "").lower().startswith(("http://", "https://")):
        raise VidError(
            ErrorCode.UNSUPPORTED_INPUT,
            "A live stream is read from its HLS (.m3u8) or DASH (.mpd) address or its live page, and this "
            "is neither.",
            hint="Give the stream's http(s) address: its .m3u8 or .mpd manifest, or its live page.",
        )
    return ref.url or url, False


async def prepare_live(
    runtime: Runtime, url: str, max_minutes: int | None, ctx: Ctx, *, lang: str | None = None
) -> LiveWatch:
    """Everything checked before the first event; raises the request's ``VidError``."""
    minutes = check_minutes(max_minutes)
    stream, page = _stream_url(runtime, url)
    if runtime.live is None:
        raise _not_here()
    if not any(rung.enabled for rung in runtime.stt):
        raise no_stt_rung([])
    media = await runtime.live.probe(stream, ctx, page=page)
    return LiveWatch(url=stream, media=media, max_minutes=minutes, lang=lang)


def _segment_data(segment: Segment) -> dict[str, Any]:
    return {
        "startSec": segment.start_sec,
        "endSec": segment.end_sec,
        "start": format_timestamp(segment.start_sec),
        "text": segment.text.strip(),
    }


def _words(text: str) -> list[str]:
    return ["".join(c for c in w.lower() if c.isalnum() or c == "'") for w in text.split()]


def _unheard(text: str, last: str) -> str:
    """``text`` without its first words where they repeat the last words of ``last`` (the words
    both pieces heard in their overlap), compared without case and punctuation."""
    said, new = _words(last), _words(text)
    for k in range(min(len(said), len(new)), 0, -1):
        if said[-k:] == new[:k]:
            return " ".join(text.split()[k:])
    return text


def _fresh(segments: list[Segment], offset: float, heard_to: float, last: str = "") -> list[Segment]:
    """A piece's segments in stream time, minus what the previous piece already gave: after a
    hard cut the pieces overlap, and a segment whose middle is before the end of the last segment
    sent (``heard_to``, text ``last``) was heard already. One that straddles that end (heard in
    part by both pieces, as real speech cut inside a sentence is) loses the words the last segment
    ended with, and starts at ``heard_to``: no words twice, and no time going back."""
    fresh = []
    for s in segments:
        start, end = round(s.start_sec + offset, 3), round(s.end_sec + offset, 3)
        text = s.text.strip()
        if (start + end) / 2 <= heard_to or not text:
            continue
        if start < heard_to:
            start, text = heard_to, _unheard(text, last)
            if not text:
                continue
        fresh.append(Segment(start_sec=start, end_sec=end, text=text, speaker=s.speaker))
    return fresh


def live_text(segments: list[Segment]) -> str:
    """The watch's whole transcript as its result gives it: one ``[m:ss] text`` line a segment
    (``watch_live`` states its cost a minute, measured on this)."""
    return "\n".join(f"[{format_timestamp(s.start_sec)}] {s.text}" for s in segments)


async def live_events(runtime: Runtime, watch: LiveWatch, ctx: Ctx) -> AsyncIterator[Event]:
    """The watch as events (see the module docstring); raises ``VidError`` when it fails."""
    assert runtime.live is not None  # prepare_live checked it
    length = watch.max_minutes * 60.0
    # The watch is bounded by maxMinutes, not by the request timeout that bounds a request's start.
    ctx.deadline = time.monotonic() + length + GRACE_S
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    yield Event(
        "status",
        {
            "state": "live",
            "url": watch.url,
            "startedAt": started,
            "maxMinutes": watch.max_minutes,
            "pieceSec": PIECE_SEC,
        },
    )
    sent: list[Segment] = []
    heard_to, heard_sec, count = 0.0, 0.0, 0
    async with runtime.live.pieces(watch.media, ctx, length_sec=length, piece_sec=PIECE_SEC) as pieces:
        async for piece in pieces:
            count += 1
            heard_sec = piece.end_sec
            del watch.attempts[:-20]  # one attempt a piece: a long watch keeps only the latest
            try:
                transcript = await transcribe(
                    runtime, piece.audio, lang=watch.lang, ctx=ctx, attempts=watch.attempts
                )
            except VidError as error:
                if error.code is not ErrorCode.NO_TRANSCRIPT:  # a silent piece is no failure
                    raise
                yield Event(
                    "status", {"state": "heard", "heardSec": heard_sec, "pieces": count, "silent": True}
                )
                continue
            last = sent[-1].text if sent else ""
            for segment in _fresh(transcript.segments, piece.start_sec, heard_to, last):
                sent.append(segment)
                heard_to = segment.end_sec
                yield Event("segment", _segment_data(segment))
            yield Event("status", {"state": "heard", "heardSec": heard_sec, "pieces": count})
    yield Event(
        "done",
        {
            "text": live_text(sent),
            "segments": len(sent),
            "durationSec": round(heard_sec, 3),
            "reason": "max-minutes" if heard_sec >= length - 1.0 else "ended",
            "startedAt": started,
            "attempts": msgspec.to_builtins(watch.attempts[-20:]),
        },
    )
