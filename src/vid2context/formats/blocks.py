"""Pieces every formatter and the outline share: durations, citations, chapters, paragraphs, cues.

Kept apart from the formatters so that each of them stays a short list of layout decisions, and so
that the outline counts tokens over exactly the segments the formatters would print for a chapter.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Segment, VideoContext
from ..timecode import format_timestamp, timestamp_pattern, timestamp_url
from ..tokens import estimate_tokens

__all__ = [
    "Cue",
    "Paragraph",
    "Span",
    "chapter_spans",
    "clock_times",
    "numbered_cues",
    "plain_cues",
    "cite",
    "clean_text",
    "cues",
    "duration_of",
    "ends_sentence",
    "link_at",
    "link_pattern",
    "md_link_text",
    "md_text",
    "one_line",
    "paragraphs",
    "plain_text",
    "segments_of",
    "split_by_starts",
    "transcript_tokens",
]

MIN_CUE_MS = 1000
"""A cue whose end is not after its start is given this length, so players show it."""

_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")
_PAUSE_SEC = 2.0
_SOFT_CHARS = 200
_SENTENCE_CHARS = 500
_HARD_CHARS = 1000
_EPSILON = 0.001


def ends_sentence(text: str) -> bool:
    """True when ``text`` ends with sentence punctuation (closing quotes and brackets allowed)."""
    return bool(_SENTENCE_END.search(text.rstrip()))


def clean_text(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return " ".join(text.split())


def one_line(text: str | None, limit: int | None = None) -> str:
    """A value safe to print on one line of a header: no line breaks, optionally shortened."""
    line = clean_text(text or "")
    if limit is not None and len(line) > limit:
        line = line[: max(0, limit - 1)].rstrip() + "…"
    return line


def md_link_text(text: str) -> str:
    """Text that cannot end a Markdown link early."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


# What a CommonMark renderer would not print as written: a ``<`` that opens raw HTML or an
# autolink, an ``&`` that starts a character reference, ``*`` and backticks (emphasis, code spans,
# inside which backslashes are not read), an ``_`` that is not inside a word (inside one it never
# emphasises), the ``](`` of a link, and a backslash that would escape the character after it.
# One scan for the candidates, a look at their neighbours for each: much faster than lookarounds.
_MD_CANDIDATE = re.compile(r"[\\<&*`_\]]")
_MD_REFERENCE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_TAG_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/!?")


def _md_escape(match: re.Match[str]) -> str:
    char, text, at = match.group(), match.string, match.start()
    after = text[at + 1 : at + 2]
    if char == "\\":
        escaped = after in _ASCII_PUNCTUATION and after != ""
    elif char == "<":
        escaped = after in _TAG_START and after != ""
    elif char == "&":
        escaped = _MD_REFERENCE.match(text, at) is not None
    elif char == "_":
        escaped = not (at and text[at - 1].isalnum() and after.isalnum())
    elif char == "]":
        escaped = after == "("
    else:  # * and `
        escaped = True
    return "\\" + char if escaped else char


def md_text(text: str) -> str:
    """Transcript text that renders as it reads: ``<div>`` is written ``\\<div>``.

    A renderer takes ``<div>`` for HTML (dropped, or worse, a real element in an Obsidian note),
    ``&lt;`` for ``<``, ``__init__`` for bold and ``[0:00](url)`` for a link like our citations, so
    a caption would lose the very words it is about, or pass for something it is not. A backslash
    goes before just those characters; ``a < b``, ``AT&T``, ``snake_case``, ``[Music]`` and the
    rest stay as they are, so the Markdown still reads as the transcript does, to an agent as to
    a person. (Extensions beyond CommonMark, such as ``~~`` or Obsidian's ``[[links]]``, are not
    escaped.)
    """
    return _MD_CANDIDATE.sub(_md_escape, text)


def segments_of(context: VideoContext) -> list[Segment]:
    return list(context.transcript.segments) if context.transcript else []


def plain_text(segments: Sequence[Segment]) -> str:
    return " ".join(text for seg in segments if (text := clean_text(seg.text)))


def transcript_tokens(context: VideoContext) -> int:
    """Tokens of the transcript's words alone: the figure headers, outlines and packs quote."""
    return estimate_tokens(plain_text(segments_of(context)))


def duration_of(context: VideoContext) -> float | None:
    """The video's duration from its metadata, else the end of its last segment, else ``None``."""
    if context.metadata.duration_sec and context.metadata.duration_sec > 0:
        return context.metadata.duration_sec
    ends = [max(seg.start_sec, seg.end_sec) for seg in segments_of(context)]
    return max(ends) if ends else None


def _native_id(context: VideoContext) -> str:
    prefix = context.metadata.platform + ":"
    for candidate in (context.id, context.metadata.id):
        if candidate.startswith(prefix):
            return candidate[len(prefix) :]
    return context.metadata.id


def link_at(context: VideoContext, seconds: float) -> str | None:
    """A link that opens the video at ``seconds``, where the platform has one."""
    meta = context.metadata
    return timestamp_url(meta.platform, _native_id(context), meta.url, seconds)


def link_pattern(context: VideoContext) -> str | None:
    """Every moment's link at once (``...&t=<seconds>s``), where the platform has links."""
    meta = context.metadata
    return timestamp_pattern(meta.platform, _native_id(context), meta.url)


def cite(context: VideoContext, seconds: float) -> str:
    """``[m:ss](link)``, or a bare ``[m:ss]`` where there is no link."""
    stamp = f"[{format_timestamp(seconds)}]"
    url = link_at(context, seconds)
    return f"{stamp}({url})" if url else stamp


@dataclass(frozen=True, slots=True)
class Span:
    """A chapter with its end resolved: the next chapter's start; for the last, its own end or the
    video's."""

    title: str
    start_sec: float
    end_sec: float | None


def chapter_spans(context: VideoContext) -> list[Span]:
    chapters = sorted(context.metadata.chapters, key=lambda ch: ch.start_sec)
    duration = duration_of(context)
    spans = []
    for i, chapter in enumerate(chapters):
        if i + 1 < len(chapters):
            # Segments belong to the chapter their start falls in, so a chapter runs to the next
            # one even when its own end leaves a gap.
            end: float | None = chapters[i + 1].start_sec
        elif chapter.end_sec is not None and chapter.end_sec > chapter.start_sec:
            end = chapter.end_sec
        else:
            end = duration
        spans.append(Span(chapter.title, chapter.start_sec, end))
    return spans


def split_by_starts(segments: Sequence[Segment], starts: Sequence[float]) -> list[list[Segment]]:
    """Segments grouped by the span their start falls in; any before the first span join it.

    ``starts`` must be sorted. Assigning by start (not overlap) puts every segment in exactly one
    group, so the groups' token counts add up to the whole.
    """
    groups: list[list[Segment]] = [[] for _ in starts]
    if not groups:
        return groups
    for seg in segments:
        index = max(0, bisect_right(starts, seg.start_sec + _EPSILON) - 1)
        groups[index].append(seg)
    return groups


@dataclass(frozen=True, slots=True)
class Paragraph:
    start_sec: float
    text: str
    speaker: str | None = None


def paragraphs(segments: Sequence[Segment]) -> list[Paragraph]:
    """Segments joined into readable paragraphs.

    A paragraph ends at a change of speaker, at a pause once it has a few sentences' worth of
    text, at a sentence end once it is long, and in any case before it grows past about 250 tokens
    (automatic captions have no punctuation to cut at).
    """
    result: list[Paragraph] = []
    parts: list[str] = []
    start = 0.0
    speaker: str | None = None
    size = 0
    previous: Segment | None = None

    def flush() -> None:
        if parts:
            result.append(Paragraph(start, " ".join(parts), speaker))

    for seg in segments:
        text = clean_text(seg.text)
        if not text:
            continue
        if parts and previous is not None:
            pause = seg.start_sec - previous.end_sec
            if (
                (seg.speaker or None) != speaker
                or (pause >= _PAUSE_SEC and size >= _SOFT_CHARS)
                or (ends_sentence(parts[-1]) and size >= _SENTENCE_CHARS)
                or size >= _HARD_CHARS
            ):
                flush()
                parts, size = [], 0
        if not parts:
            start, speaker = seg.start_sec, seg.speaker or None
        parts.append(text)
        size += len(text) + 1
        previous = seg
    flush()
    return result


@dataclass(frozen=True, slots=True)
class Cue:
    start_ms: int
    end_ms: int
    lines: list[str]
    speaker: str | None = None


def cues(segments: Sequence[Segment]) -> list[Cue]:
    """Subtitle cues: whole milliseconds, no empty lines, no cue that ends before it starts.

    Segments without text are left out (an empty cue is invalid SRT). A segment whose end is not
    after its start (zero-length timings are common in automatic captions) lasts ``MIN_CUE_MS``.
    """
    result = []
    for seg in segments:
        lines = [clean_text(line) for line in seg.text.splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            continue
        start_ms = max(0, round(seg.start_sec * 1000))
        end_ms = round(seg.end_sec * 1000)
        if end_ms <= start_ms:
            end_ms = start_ms + MIN_CUE_MS
        speaker = one_line(seg.speaker) or None
        result.append(Cue(start_ms, end_ms, lines, speaker))
    return result


def plain_cues(segments: Sequence[Segment]) -> tuple[list[int], list[int], list[str]] | None:
    """``cues`` for the common case, as parallel lists (starts, ends, texts), or ``None``.

    The common case is a transcript whose every segment is one line of clean text and has no
    speaker, as caption parsers and speech-to-text produce: then each cue is its segment's text
    as it is, and a few checks over all the texts at once say so, instead of cleaning each line.
    Anything else is ``None``, and the caller uses ``cues``, which gives the same cues.
    """
    texts = [seg.text for seg in segments]
    if not texts:
        return [], [], []
    # str.isprintable is False for every whitespace character but the space (and for NUL, so
    # no text holds the separator); then the texts are clean unless a space is doubled or at an
    # end, which the NUL-joined string shows. All of it in C, without a regex.
    joined = "\x00".join(texts)
    if (
        not "".join(texts).isprintable()
        or "  " in joined
        or " \x00" in joined
        or "\x00 " in joined
        or "\x00\x00" in joined
        or joined[0] in " \x00"
        or joined[-1] in " \x00"
        or any(seg.speaker for seg in segments)
    ):
        return None
    starts = [max(0, round(seg.start_sec * 1000)) for seg in segments]
    ends = [round(seg.end_sec * 1000) for seg in segments]
    return starts, [e if e > s else s + MIN_CUE_MS for s, e in zip(starts, ends, strict=True)], texts


# Zero-padded numbers by table: a list index is several times cheaper than a format spec. The
# 3,600 ``MM:SS`` of an hour are made on first use, not at import (the Worker's cold start).
_PAD2 = [f"{n:02d}" for n in range(100)]
_PAD3 = [f"{n:03d}" for n in range(1000)]
_MM_SS: list[str] = []


def clock_times(values: Sequence[int], mark: str) -> list[str]:
    """``HH:MM:SS<mark>mmm`` for each count of milliseconds (``mark`` is ``,`` in SRT, ``.`` in
    WebVTT), negative ones as zero: two integer divmods and padded digits from tables, for whole
    files at once."""
    if not _MM_SS:
        _MM_SS.extend(f"{m}:{s}" for m in _PAD2[:60] for s in _PAD2[:60])
    stamps = []
    append = stamps.append
    pad2, pad3, mm_ss = _PAD2, _PAD3, _MM_SS
    for value in values:
        hours, rest = divmod(value if value > 0 else 0, 3_600_000)
        seconds, millis = divmod(rest, 1000)
        append(f"{pad2[hours] if hours < 100 else hours}:{mm_ss[seconds]}{mark}{pad3[millis]}")
    return stamps


def numbered_cues(starts: list[int], ends: list[int], texts: list[str], mark: str) -> list[str]:
    """``number``, ``start --> end`` and the text of each cue from ``plain_cues``, one f-string
    each (SRT and WebVTT write cues alike but for the time's ``mark``)."""
    count = len(texts)
    stamps = clock_times(starts + ends, mark)
    return [
        f"{number}\n{begin} --> {end}\n{text}"
        for number, begin, end, text in zip(
            range(1, count + 1), stamps[:count], stamps[count:], texts, strict=True
        )
    ]
