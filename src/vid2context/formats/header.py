"""The header every text result starts with, so an agent always knows what it is reading.

The layout is short, stable and reads the same as plain text and as Markdown (a heading and a
list)::

    # Me at the zoo
    - Channel: jawed · Duration: 0:19 · Published: 2005-04-23
    - URL: https://www.youtube.com/watch?v=jNQXAC9IVRw
    - Transcript: manual captions, en, by youtube/innertube, caption-level timing, about 52 tokens
    - Track: English (manual) chosen over the automatic track
    - Chapters:
      - [0:00](https://www.youtube.com/watch?v=jNQXAC9IVRw&t=0s) Intro
      - [0:10](https://www.youtube.com/watch?v=jNQXAC9IVRw&t=10s) The elephants

Lines whose values are unknown are left out; a video without a URL shows ``- Source: <id>``.
Every value is folded onto one line, so a title or note cannot add lines of its own.
"""

from __future__ import annotations

import re

from ..models import Origin, Timing, VideoContext
from ..timecode import format_timestamp
from .blocks import chapter_spans, cite, duration_of, one_line, transcript_tokens

__all__ = ["ORIGIN_LABELS", "TIMING_LABELS", "context_header", "published_date"]

ORIGIN_LABELS: dict[Origin, str] = {
    "captions-manual": "manual captions",
    "captions-auto": "automatic captions",
    "captions-translated": "translated captions",
    "asr": "speech-to-text",
    "sidecar": "subtitle file",
    "embedded": "embedded subtitles",
}

TIMING_LABELS: dict[Timing, str] = {
    "word": "word-level timing",
    "caption": "caption-level timing",
    "segment-approx": "approximate timing",
}

_COMPACT_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def published_date(value: str | None) -> str | None:
    """``YYYY-MM-DD`` from an ISO timestamp or yt-dlp's ``YYYYMMDD``; other forms pass through."""
    if not value:
        return None
    value = one_line(value)
    if match := _COMPACT_DATE.match(value):
        return "-".join(match.groups())
    if match := _ISO_DATE.match(value):
        return match.group(0)
    return one_line(value, 40) or None


def context_header(context: VideoContext, *, level: int = 1, chapters: bool = True) -> str:
    """The header for ``context``, without a trailing newline.

    ``level`` is the Markdown heading level of the title line (a pack nests videos at level 2);
    ``chapters=False`` leaves out the chapter list where space is short.
    """
    meta = context.metadata
    title = one_line(meta.title) or context.id
    lines = [f"{'#' * max(1, min(level, 6))} {title}"]

    facts = []
    if channel := one_line(meta.channel, 120):
        facts.append(f"Channel: {channel}")
    if (duration := duration_of(context)) is not None:
        facts.append(f"Duration: {format_timestamp(duration)}")
    if published := published_date(meta.published_at):
        facts.append(f"Published: {published}")
    if facts:
        lines.append("- " + " · ".join(facts))

    url = one_line(meta.url)
    lines.append(f"- URL: {url}" if url else f"- Source: {one_line(context.id)}")

    transcript = context.transcript
    if transcript is None:
        lines.append("- Transcript: none")
    else:
        parts = [ORIGIN_LABELS.get(transcript.origin, transcript.origin)]
        if language := one_line(transcript.language):
            parts.append(language)
        if producer := one_line(transcript.producer):
            parts.append(f"by {producer}")
        parts.append(TIMING_LABELS.get(transcript.timing, transcript.timing))
        parts.append(f"about {transcript_tokens(context)} tokens")
        lines.append("- Transcript: " + ", ".join(parts))
        if note := one_line(transcript.note, 200):
            lines.append(f"- Track: {note}")

    spans = chapter_spans(context) if chapters else []
    if spans:
        lines.append("- Chapters:")
        lines.extend(f"  - {cite(context, span.start_sec)} {one_line(span.title, 120)}" for span in spans)
    return "\n".join(lines)
