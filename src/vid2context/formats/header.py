"""The header every text result starts with, so an agent always knows what it is reading.

``context_header()`` is the one place a header is written; the formatters, the MCP pages and the
pack all call it. It has two sizes.

The full header, on a first read (a REST response, the first page of ``get_transcript``, a pack's
video). It reads the same as plain text and as Markdown (a heading and a list)::

    # Me at the zoo
    - Channel: jawed · Duration: 0:19 · Published: 2005-04-23
    - URL: https://www.youtube.com/watch?v=jNQXAC9IVRw
    - Moment links: https://www.youtube.com/watch?v=jNQXAC9IVRw&t=<seconds>s
    - Transcript: manual captions, en, by youtube/innertube, caption-level timing
    - Chapters:
      - [0:00] Intro
      - [0:10] The elephants

With ``links="pattern"`` (plain text, whose ``[m:ss]`` carry no URL) the header states the link
pattern once and lists the chapters as bare ``[m:ss]``; with ``links="each"`` (Markdown, the pack,
where every moment is a link) the chapters are ``[m:ss](link)`` and no pattern line is needed.

The lean header, on everything that is not a first read (a later page, a section): one line with
the title, what the result covers, where the words came from and the link pattern::

    # Me at the zoo · The elephants, 0:10–0:19 of 0:19 · manual captions, en · moment links: https://www.youtube.com/watch?v=jNQXAC9IVRw&t=<seconds>s

A call that asked about speakers (``speakers=`` of the transcript) gets a ``- Speakers:`` line in
the full header: who was labelled, or why nobody is and how to get labels.

Both add a ``- Track:`` line only when it tells the agent something: the words are not in the
language it asked for, or they come from an automatic or translated track (the platform's
translation, or a language model's: ``translated``, which the Transcript line names too). Lines
whose values are unknown are left out; a video without a URL shows ``- Source: <id>``. Every value
is folded onto one line, so a title or note cannot add lines of its own.

No token count is printed here: a header cannot know the size of the result it heads (a page, a
section, a pack), so the counts are stated where they are measured, in the closing line of a page
and in the outline.
"""

from __future__ import annotations

import re

from ..models import Origin, Timing, Transcript, VideoContext
from ..timecode import format_timestamp
from .base import Links, Part
from .blocks import chapter_spans, cite, duration_of, link_pattern, one_line

__all__ = [
    "ORIGIN_LABELS",
    "TIMING_LABELS",
    "Links",
    "Part",
    "context_header",
    "published_date",
    "track_news",
]

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

_NO_LINKS = {"local": "none (a local file)", "upload": "none (an upload)"}
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


def _primary(language: str) -> str:
    return language.strip().replace("_", "-").lower().split("-")[0]


def track_news(transcript: Transcript, asked: str | None) -> str | None:
    """Why this track, when that is news: another language than ``asked`` (the language the
    call asked for), or an automatic or translated track. ``None`` for the usual case, a manual
    track in the language asked for (or in the video's own, when none was asked)."""
    other = bool(asked and transcript.language and _primary(asked) != _primary(transcript.language))
    automatic = transcript.origin in ("captions-auto", "captions-translated") or transcript.translated
    if not (other or automatic):
        return None
    if note := one_line(transcript.note, 200):
        return note
    if other:
        return f"asked for {one_line(asked, 35)}, the transcript is in {one_line(transcript.language, 35)}"
    return None  # the Transcript line (or the lean header) already says it is automatic


def _moment_links(context: VideoContext) -> str:
    return link_pattern(context) or _NO_LINKS.get(context.metadata.platform, "none")


def _origin(transcript: Transcript | None) -> str:
    if transcript is None:
        return "no transcript"
    parts = [ORIGIN_LABELS.get(transcript.origin, transcript.origin)]
    if transcript.translated:
        parts[0] += " translated by a language model"
    if language := one_line(transcript.language):
        parts.append(language)
    return ", ".join(parts)


def context_header(
    context: VideoContext,
    *,
    level: int = 1,
    chapters: bool = True,
    links: Links = "each",
    asked: str | None = None,
    part: Part | None = None,
    speakers: str | None = None,
) -> str:
    """The header for ``context``, without a trailing newline: the full one, or with ``part`` the
    lean one for a result that covers only that part.

    ``level`` is the Markdown heading level of the title line (a pack nests videos at level 2);
    ``chapters=False`` leaves out the chapter list where space is short; ``links`` says how the
    result prints its moments; ``asked`` is the language the call asked for, if any; ``speakers`` the line about speaker labels.
    """
    title = one_line(context.metadata.title) or context.id
    heading = "#" * max(1, min(level, 6))
    transcript = context.transcript
    news = track_news(transcript, asked) if transcript is not None else None
    if part is not None:
        return _lean(context, f"{heading} {title}", part, links, news)

    meta = context.metadata
    lines = [f"{heading} {title}"]
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
    if links == "pattern":
        lines.append(f"- Moment links: {_moment_links(context)}")

    if transcript is None:
        lines.append("- Transcript: none")
    else:
        parts = [_origin(transcript)]
        if producer := one_line(transcript.producer):
            parts.append(f"by {producer}")
        parts.append(TIMING_LABELS.get(transcript.timing, transcript.timing))
        lines.append("- Transcript: " + ", ".join(parts))
        if news:
            lines.append(f"- Track: {news}")
        if said := one_line(speakers, 400):
            lines.append(f"- Speakers: {said}")

    spans = chapter_spans(context) if chapters else []
    if spans:
        lines.append("- Chapters:")
        for span in spans:
            stamp = (
                cite(context, span.start_sec) if links == "each" else f"[{format_timestamp(span.start_sec)}]"
            )
            lines.append(f"  - {stamp} {one_line(span.title, 120)}")
    return "\n".join(lines)


def _lean(context: VideoContext, heading: str, part: Part, links: Links, news: str | None) -> str:
    covered = f"{format_timestamp(part.start_sec)}–{format_timestamp(part.end_sec)}"
    if (duration := duration_of(context)) is not None:
        covered += f" of {format_timestamp(duration)}"
    if title := one_line(part.title, 120):
        covered = f"{title}, {covered}"
    facts = [heading, covered, _origin(context.transcript)]
    if links == "pattern":
        facts.append(f"moment links: {_moment_links(context)}")
    line = " · ".join(facts)
    return f"{line}\n- Track: {news}" if news else line
