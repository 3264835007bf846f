"""Read a long video in parts: its outline, then one section at a time.

Speech runs near 12k tokens an hour, so an agent should see the shape of a video before loading
it. ``outline()`` lists the chapters (from the video's metadata) or, for a video without any,
sections of about five minutes cut where the speaker pauses or ends a sentence; each entry has
its token count and a timestamp link. ``get_section()`` returns one entry, or any time range, as a
``VideoContext`` whose transcript holds only that part, so every formatter can render it.

Segments belong to the entry their start falls in, so the entries' words add up to the whole and
``get_section(chapter=i)`` returns exactly the words the outline counted. The token figures are
what reading costs: the caller passes ``Costs`` that measure the result it would really return
for an entry and for the whole transcript (header, fences and closing lines included); without
them, an entry's figure is its words alone. A section keeps only the chapters it overlaps, so its
rendering never shows the headings of chapters outside it.

A video the platform gave no chapters, and for which ``POST /api/v1/chapters`` made some
(``VideoContext.generated_chapters``), is outlined and cut by those, and the outline's ``note``
says who made them (``chaptered``).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from .errors import ErrorCode, VidError, steps
from .formats.base import Part
from .formats.blocks import (
    chapter_spans,
    duration_of,
    ends_sentence,
    link_at,
    one_line,
    plain_text,
    segments_of,
    split_by_starts,
    transcript_tokens,
)
from .models import Base, Chapter, Origin, Segment, VideoContext, VideoMetadata, VisualItem
from .timecode import format_timestamp, parse_time
from .tokens import estimate_tokens

__all__ = [
    "ApiOutline",
    "ApiOutlineChapter",
    "Costs",
    "Outline",
    "OutlineEntry",
    "OutlineMetadata",
    "Section",
    "TranscriptInfo",
    "chaptered",
    "get_section",
    "outline",
    "outline_for_api",
    "text_costs",
]

SECTION_SEC = 300.0
"""Length of a time section for videos without chapters: five minutes, about 1k tokens of speech."""


class OutlineEntry(Base, kw_only=True):
    index: int
    title: str
    start_sec: float
    end_sec: float | None = None
    start: str
    """``start_sec`` as ``m:ss`` (``h:mm:ss`` past an hour), ready to cite."""
    tokens: int
    url: str | None = None


class TranscriptInfo(Base, kw_only=True):
    origin: Origin
    language: str | None
    producer: str
    requested_language: str | None = None
    """The language asked for when no track was in it (the outline is of the best track)."""
    available_languages: list[str] = []


class OutlineMetadata(Base, kw_only=True, omit_defaults=True):
    """The metadata an outline carries: who and what, not the description, tags or thumbnails
    (``get_metadata`` has those), so the outline stays cheaper than the words it outlines.
    Unknown values are left out."""

    id: str
    title: str
    channel: str | None = None
    url: str | None = None
    duration_sec: float | None = None
    published_at: str | None = None
    language: str | None = None


class Outline(Base, kw_only=True, omit_defaults=True):
    """The ``get_outline`` tool's result. Every field is always there (``url`` may be ``null``)
    but ``note``, which only outlines by generated chapters carry."""

    title: str
    url: str | None
    duration_sec: float | None
    transcript: TranscriptInfo | None
    sections: Literal["chapters", "time"]
    total_tokens: int
    """What reading the whole transcript costs (``Costs.whole``)."""
    chapters: list[OutlineEntry]
    metadata: OutlineMetadata
    next: str
    """What to call next, in one sentence."""
    note: str | None = None
    """Where the chapters come from when they are not the platform's (made by ``chapters/...``)."""


@dataclass(frozen=True, slots=True)
class Costs:
    """What reading costs on one surface, measured on the result it would return: ``section``
    for one entry (``get_section(chapter=i)``), ``whole`` for the whole transcript."""

    section: Callable[[Section], int]
    whole: Callable[[VideoContext], int]


def _speech_section(section: Section) -> int:
    return section.tokens


SPEECH = Costs(section=_speech_section, whole=transcript_tokens)
"""The words alone, for callers that return no text of their own."""


def text_costs(lang: str | None = None) -> Costs:
    """What reading costs as ``render_view`` prints it in ``text`` with its defaults (the REST
    routes, the CLI): the full header, a section's line, the words."""
    from .formats import FORMATTERS, RenderOptions, render_view

    text, options = FORMATTERS["text"], RenderOptions(asked=lang)

    def section(part: Section) -> int:
        return estimate_tokens(render_view(part.context, text, options, part.section_line()))

    def whole(context: VideoContext) -> int:
        return estimate_tokens(render_view(context, text, options))

    return Costs(section=section, whole=whole)


class ApiOutlineChapter(Base, kw_only=True):
    title: str
    start_sec: float
    end_sec: float | None = None
    tokens: int


class ApiOutline(Base, kw_only=True, omit_defaults=True):
    """``GET /api/v1/outline``: ``{ metadata, chapters: (Chapter & { tokens })[], totalTokens }``,
    and ``note`` when the chapters are generated ones."""

    metadata: VideoMetadata
    chapters: list[ApiOutlineChapter]
    total_tokens: int
    note: str | None = None
    """Where the chapters come from when they are not the platform's (made by ``chapters/...``)."""


class Section(Base, kw_only=True):
    """One chapter, time section or range; ``context`` carries only its segments."""

    title: str
    start_sec: float
    end_sec: float
    tokens: int
    index: int | None = None
    """The outline index when the section was chosen by chapter."""
    named: bool = False
    """Whether ``title`` is a chapter's (not a time range's, which the range already says)."""
    context: VideoContext
    """The video with only this section's segments, and only the chapters it overlaps."""

    def section_line(self) -> str:
        """``Section "title": m:ss to m:ss``, the line above a section's text in a full header."""
        return (
            f'Section "{one_line(self.title, 200)}": {format_timestamp(self.start_sec)} to '
            f"{format_timestamp(self.end_sec)}"
        )

    def part(self) -> Part:
        """What a lean header says this section covers."""
        return Part(start_sec=self.start_sec, end_sec=self.end_sec, title=self.title if self.named else None)


@dataclass(frozen=True, slots=True)
class _Entry:
    title: str
    start_sec: float
    end_sec: float | None
    segments: list[Segment]


def chaptered(context: VideoContext) -> tuple[VideoContext, str | None]:
    """``context`` with the chapters outlines read: the platform's, else those made for it (then
    in ``metadata.chapters``, with a note saying who made them)."""
    made = context.generated_chapters
    if context.metadata.chapters or made is None:
        return context, None
    chapters = [
        Chapter(title=c.title, start_sec=c.start_sec, end_sec=c.end_sec)
        for c in made.chapters
        if math.isfinite(c.start_sec) and c.start_sec >= 0
    ]
    if not chapters:
        return context, None
    titled = f", titled by {made.rung}" if made.rung else ""
    note = f"Chapters generated by {made.producer} ({made.method}{titled}); the video has none of its own."
    meta = msgspec.structs.replace(context.metadata, chapters=chapters)
    return msgspec.structs.replace(context, metadata=meta), note


def outline(context: VideoContext, *, section_sec: float = SECTION_SEC, costs: Costs = SPEECH) -> Outline:
    """The video's chapters (or those made for it), else sections of about ``section_sec``
    seconds, with what reading each and the whole costs by ``costs``."""
    total = costs.whole(context)  # what the whole transcript costs as it is read: its own chapters
    context, note = chaptered(context)
    kind, entries = _entries(context, section_sec)
    transcript = context.transcript
    meta = context.metadata
    named = kind == "chapters"
    tokens = [
        costs.section(_entry_section(context, entry, i, named=named)) for i, entry in enumerate(entries)
    ]
    return Outline(
        title=one_line(meta.title) or context.id,
        url=meta.url,
        duration_sec=duration_of(context),
        transcript=(
            TranscriptInfo(
                origin=transcript.origin,
                language=transcript.language,
                producer=transcript.producer,
                requested_language=transcript.requested_language,
                available_languages=transcript.available_languages,
            )
            if transcript
            else None
        ),
        sections=kind,
        total_tokens=total,
        chapters=[
            OutlineEntry(
                index=i,
                title=entry.title,
                start_sec=entry.start_sec,
                end_sec=entry.end_sec,
                start=format_timestamp(entry.start_sec),
                tokens=tokens[i],
                url=link_at(context, entry.start_sec),
            )
            for i, entry in enumerate(entries)
        ],
        metadata=OutlineMetadata(
            id=context.id,
            title=meta.title,
            channel=meta.channel,
            url=meta.url,
            duration_sec=duration_of(context),
            published_at=meta.published_at,
            language=meta.language or (transcript.language if transcript else None),
        ),
        next=_next_step(kind, tokens, total, has_transcript=bool(plain_text(segments_of(context)))),
        note=note,
    )


def outline_for_api(
    context: VideoContext, *, section_sec: float = SECTION_SEC, costs: Costs = SPEECH
) -> ApiOutline:
    """The REST shape of ``outline()``: metadata, chapters (or time sections) with tokens, total."""
    metadata, total = context.metadata, costs.whole(context)
    context, note = chaptered(context)
    kind, entries = _entries(context, section_sec)
    return ApiOutline(
        metadata=metadata,
        chapters=[
            ApiOutlineChapter(
                title=entry.title,
                start_sec=entry.start_sec,
                end_sec=entry.end_sec,
                tokens=costs.section(_entry_section(context, entry, i, named=kind == "chapters")),
            )
            for i, entry in enumerate(entries)
        ],
        total_tokens=total,
        note=note,
    )


def get_section(
    context: VideoContext,
    *,
    chapter: str | int | None = None,
    from_: str | float | None = None,
    to: str | float | None = None,
    section_sec: float = SECTION_SEC,
) -> Section:
    """One outline entry (``chapter``: index, or title exact, prefix, then substring, ignoring
    case) or the time range ``from_``..``to`` (any form ``parse_time`` reads; either may be left
    out). A chapter takes the segments that start in it; a range takes every segment it overlaps.
    """
    if chapter is None and from_ is None and to is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Say which section to read.",
            hint=steps(
                "Give chapter (an index from {outline}, or a title), or from and/or to (90, 1:30, 1h2m)."
            ),
        )
    if chapter is not None and (from_ is not None or to is not None):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "Give either chapter or from/to, not both.",
            hint="Use chapter for one outline entry, or from/to for any time range.",
        )
    context, _ = chaptered(context)
    if chapter is not None:
        kind, entries = _entries(context, section_sec)
        index = _find_entry(entries, chapter)
        return _entry_section(context, entries[index], index, named=kind == "chapters")
    return _range(context, from_, to)


def _entry_section(context: VideoContext, entry: _Entry, index: int, *, named: bool) -> Section:
    end = entry.end_sec
    if end is None:
        end = max([entry.start_sec, *(max(s.start_sec, s.end_sec) for s in entry.segments)])
    return _section(context, entry.title, entry.start_sec, end, entry.segments, index, named=named)


def _range(context: VideoContext, from_: str | float | None, to: str | float | None) -> Section:
    start = parse_time(from_) if from_ is not None else 0.0
    duration = duration_of(context)
    end = parse_time(to) if to is not None else (duration if duration is not None else start)
    if start > end:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"from ({format_timestamp(start)}) is after to ({format_timestamp(end)}).",
            hint="Give from before to, e.g. from=1:30 to=4:00.",
        )
    if duration is not None and start >= duration:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"from ({format_timestamp(start)}) is at or past the end of the video "
            f"({format_timestamp(duration)}).",
            hint=steps(f"Give a time before {format_timestamp(duration)}; {{outline}} lists the sections."),
        )
    if duration is not None:
        end = min(end, duration)
    selected = [seg for seg in segments_of(context) if _overlaps(seg, start, end)]
    title = f"{format_timestamp(start)}–{format_timestamp(end)}"
    return _section(context, title, start, end, selected, None)


def _overlaps(seg: Segment | VisualItem, start: float, end: float) -> bool:
    seg_start, seg_end = seg.start_sec, max(seg.start_sec, seg.end_sec)
    if seg_end == seg_start:
        return start <= seg_start < end or start == end == seg_start
    if start == end:
        return seg_start <= start < seg_end
    return seg_start < end and seg_end > start


def _section(
    context: VideoContext,
    title: str,
    start: float,
    end: float,
    segments: list[Segment],
    index: int | None,
    *,
    named: bool = False,
) -> Section:
    transcript = context.transcript
    covered = _covered_chapters(context, start, end)
    part = msgspec.structs.replace(
        context, metadata=msgspec.structs.replace(context.metadata, chapters=covered)
    )
    if transcript is not None:
        part = msgspec.structs.replace(
            part, transcript=msgspec.structs.replace(transcript, segments=segments)
        )
    if context.visual:  # what was on screen during the section, not the whole video's
        part = msgspec.structs.replace(part, visual=[i for i in context.visual if _overlaps(i, start, end)])
    return Section(
        title=title,
        start_sec=start,
        end_sec=end,
        tokens=estimate_tokens(plain_text(segments)),
        index=index,
        named=named,
        context=part,
    )


def _covered_chapters(context: VideoContext, start: float, end: float) -> list[Chapter]:
    """The chapters whose span overlaps ``start``..``end`` (one that only touches it does not),
    each with its end written out, so a section's chapters keep the spans they had."""
    covered = []
    for span in chapter_spans(context):
        span_end = span.end_sec if span.end_sec is not None else math.inf
        if span.start_sec < end and span_end > start or span.start_sec == start:
            covered.append(Chapter(title=span.title, start_sec=span.start_sec, end_sec=span.end_sec))
    return covered


def _find_entry(entries: Sequence[_Entry], chapter: str | int) -> int:
    if isinstance(chapter, bool) or not isinstance(chapter, (int, str)):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "chapter must be an index or a title.",
            hint=steps("Give an index from {outline} (0, 1, ...) or part of a chapter title."),
        )
    if not entries:
        raise VidError(
            ErrorCode.NOT_FOUND,
            "This video has no chapters or sections to choose from (it has no transcript).",
            hint=steps(
                "Read its metadata with {metadata}, or ask for the transcript with another mode (mode=stt)."
            ),
        )
    text = chapter.strip() if isinstance(chapter, str) else ""
    if isinstance(chapter, int) or re.fullmatch(r"[0-9]+", text):
        index = chapter if isinstance(chapter, int) else (int(text) if len(text) <= 9 else -1)
        if 0 <= index < len(entries):
            return index
        raise VidError(
            ErrorCode.NOT_FOUND,
            f"There is no section {one_line(str(chapter), 20)}; this video has {len(entries)}.",
            hint=steps(f"Use an index from 0 to {len(entries) - 1}, as {{outline}} lists them."),
        )
    needle = one_line(text).casefold()
    if not needle:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            "chapter is empty.",
            hint=steps("Give an index from {outline} (0, 1, ...) or part of a chapter title."),
        )
    titles = [one_line(entry.title).casefold() for entry in entries]
    for matches in (
        lambda title: title == needle,
        lambda title: title.startswith(needle),
        lambda title: needle in title,
    ):
        for i, title in enumerate(titles):
            if matches(title):
                return i
    raise VidError(
        ErrorCode.NOT_FOUND,
        f"No chapter matches {one_line(text, 60)!r}.",
        hint="Chapters: " + _brief_titles(entries) + ". Give an index or part of one of these titles.",
    )


def _brief_titles(entries: Sequence[_Entry], shown: int = 8) -> str:
    listed = [f'{i} "{one_line(entry.title, 30)}"' for i, entry in enumerate(entries[:shown])]
    if len(entries) > shown:
        listed.append(f"... ({len(entries)} in all)")
    return ", ".join(listed)


def _next_step(kind: str, tokens: Sequence[int], total: int, *, has_transcript: bool) -> str:
    """One sentence on what to call next; a transcript that costs no more than two of its parts
    is short enough to read whole, and the sentence says so first."""
    if not has_transcript:
        return "This video has no transcript; only its metadata is available."
    what = "one chapter" if kind == "chapters" else "one section of about five minutes"
    by_part = (
        f"get_section with chapter=<index 0-{len(tokens) - 1}> (or part of a title) reads {what}, "
        "or with from/to (m:ss) any range"
    )
    if total <= 2 * max(tokens, default=0):
        return f"It is short: get_transcript reads all of it for about {total} tokens; {by_part}."
    return f"Read what you need: {by_part}; get_transcript reads all of it (about {total} tokens)."


def _entries(context: VideoContext, section_sec: float) -> tuple[Literal["chapters", "time"], list[_Entry]]:
    spans = chapter_spans(context)
    segments = segments_of(context)
    if spans:
        groups = split_by_starts(segments, [span.start_sec for span in spans])
        return "chapters", [
            _Entry(one_line(span.title) or f"Chapter {i + 1}", span.start_sec, span.end_sec, group)
            for i, (span, group) in enumerate(zip(spans, groups, strict=True))
        ]
    return "time", _time_sections(context, sorted(segments, key=lambda s: s.start_sec), section_sec)


def _time_sections(context: VideoContext, segments: list[Segment], section_sec: float) -> list[_Entry]:
    """Sections of about ``section_sec`` cut on segment starts, near each multiple of it.

    Around each mark (within a tenth of a section) the cut goes where the pause before a segment
    is longest and the previous segment ends a sentence; with no segment starting near the mark,
    at the first segment after it. A last section shorter than a quarter of a section is merged
    into the one before.
    """
    if not segments:
        return []
    if not (math.isfinite(section_sec) and section_sec > 0):
        section_sec = SECTION_SEC
    end_total = max([duration_of(context) or 0.0, *(max(s.start_sec, s.end_sec) for s in segments)])
    starts = [seg.start_sec for seg in segments]
    window = section_sec / 10
    min_tail = section_sec / 4
    cuts = [0]
    mark = 1
    while True:
        target = mark * section_sec
        if end_total - target < min_tail:
            break
        low = max(cuts[-1] + 1, bisect_left(starts, target - window))
        high = bisect_right(starts, target + window)
        if low < high:
            best = max(range(low, high), key=lambda i: _cut_score(segments, i, target, window))
        else:
            best = max(cuts[-1] + 1, bisect_left(starts, target))
            if best >= len(segments):
                break
        if end_total - segments[best].start_sec < min_tail:
            break
        cuts.append(best)
        mark = max(mark + 1, math.floor((segments[best].start_sec + section_sec / 2) / section_sec) + 1)

    bounds = [0.0] + [segments[i].start_sec for i in cuts[1:]] + [end_total]
    entries = []
    for n, first in enumerate(cuts):
        last = cuts[n + 1] if n + 1 < len(cuts) else len(segments)
        start, end = bounds[n], bounds[n + 1]
        title = f"{format_timestamp(start)}–{format_timestamp(end)}"
        entries.append(_Entry(title, start, end, segments[first:last]))
    return entries


def _cut_score(segments: Sequence[Segment], i: int, target: float, window: float) -> float:
    """Higher is a better place to start a section: near the mark, after a pause, at a sentence."""
    previous = segments[i - 1]
    pause = max(0.0, segments[i].start_sec - previous.end_sec)
    sentence = 1.0 if ends_sentence(previous.text) else 0.0
    distance = abs(segments[i].start_sec - target) / window
    return min(pause, 3.0) / 3.0 * 0.6 + sentence * 0.5 - distance
