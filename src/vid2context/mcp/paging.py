"""Transcript pages: a long transcript cut on segment boundaries, every page complete on its own.

``get_transcript`` with ``maxTokens`` answers one page at a time. A page is the unpaged result's
*preamble* (what comes before the first segment's text: the header for ``text``, the header and
``## Transcript`` for ``markdown``, ``WEBVTT`` for ``vtt``) followed by a run of whole *units*
copied from the unpaged result, so:

- every page reads on its own (a subtitle page is a valid file, a Markdown page has its header);
- the first page plus every later page without its preamble is exactly the unpaged result.

A *lean* page (any page asked for with a cursor, and every page of a section: none of them is a
first read) has the lean one-line header in its preamble instead of the full one, saying which
part of the video the page covers (``page_span``); the rest of the preamble is the same.

A unit is what the format prints for a run of segments and never splits: a cue (``srt``,
``vtt``), a ``[m:ss]`` line (``text`` with timestamps), a paragraph (``text``), a paragraph with
any chapter headings before it (``markdown``). Where the units cannot be found (a format added
later, or a layout this module does not know), and for ``json``, a page is the formatter's own
rendering of the page's segments: still complete (JSON pages parse), and the segments of all
pages add up to the whole.

Cursors are ``seg:N``, the index of the first segment of the next page; a cursor inside a unit
starts at that unit, so no text is ever skipped. Every page's closing marker names the exact call
for the next page and states the page's size as ``estimate_tokens`` measures the whole result
(``fit_reply``), so an agent can trust it when it budgets its context; it states no other figure
(the outline says what each section and the whole transcript cost to read, page by page).

Pages are cut when the caller gives ``maxTokens`` and, without it, at the server's page size
(``VID2CONTEXT_MCP_MAX_TOKENS``, ``page_size``): clients cap a tool result (Claude Code at 25,000
tokens) or cut it short, so a three-hour transcript (about 36k tokens) must not come in one piece.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from ..errors import ErrorCode, VidError
from ..formats import Formatter, Part, RenderOptions, header_of, render_view
from ..formats.blocks import (
    chapter_spans,
    clean_text,
    duration_of,
    paragraphs,
    plain_text,
    segments_of,
    split_by_starts,
)
from ..models import Segment, VideoContext
from ..runtime import Runtime
from ..timecode import format_timestamp
from .results import TextReply

__all__ = [
    "CURSOR",
    "Page",
    "Pager",
    "call_text",
    "fit_page",
    "fit_reply",
    "next_call",
    "next_cursor",
    "page_marker",
    "page_size",
    "page_span",
    "pager_for",
    "parse_cursor",
]

CURSOR = re.compile(r"seg:(\d{1,9})")


def parse_cursor(cursor: str | None, segment_count: int) -> int:
    """The segment index a ``seg:N`` cursor names; ``bad-request`` for anything else."""
    if cursor is None:
        return 0
    match = CURSOR.fullmatch(cursor.strip()) if isinstance(cursor, str) else None
    if match is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The cursor {str(cursor)[:30]!r} is not valid.",
            hint='Pass the next_cursor of the previous page ("seg:N") with the same arguments, or no cursor.',
        )
    index = int(match.group(1))
    if index >= max(1, segment_count):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The cursor seg:{index} is past the end of this transcript ({segment_count} segments).",
            hint="That page was the last one; start again without a cursor to read from the beginning.",
        )
    return index


@dataclass(frozen=True, slots=True)
class Page:
    content: str
    """What goes inside the fence."""
    first_seg: int
    end_seg: int
    """One past the last segment of the page; the next cursor when below the segment count."""


class Pager:
    """Pages of one rendering: ``len(starts)`` units, unit ``i`` starting at segment ``starts[i]``.

    ``render(first, last)`` is units ``first`` to ``last - 1`` after the preamble; ``lean``, when
    given, the same after the lean preamble (a page that is not a first read).
    """

    def __init__(
        self,
        starts: list[int],
        segment_count: int,
        render: Callable[[int, int], str],
        lean: Callable[[int, int], str] | None = None,
    ) -> None:
        self.starts = starts
        self.segment_count = segment_count
        self._render = render
        self._lean = lean or render

    @property
    def units(self) -> int:
        return len(self.starts)

    def unit_at(self, segment: int) -> int:
        """The unit holding ``segment``: a cursor inside a unit starts at that unit."""
        return max(0, bisect_right(self.starts, segment) - 1)

    def end_seg(self, last: int) -> int:
        return self.starts[last] if last < len(self.starts) else self.segment_count

    def page(self, first: int, last: int, *, lean: bool = False) -> Page:
        """Units ``first`` to ``last - 1``."""
        render = self._lean if lean else self._render
        if not self.starts:
            return Page(render(0, 0), 0, self.segment_count)
        return Page(render(first, last), self.starts[first], self.end_seg(last))

    def fit(self, first: int, fits: Callable[[Page], bool], *, lean: bool = False) -> Page:
        """The longest page from unit ``first`` that ``fits``; at least one unit, so paging always moves."""
        if not self.starts:
            return self.page(0, 0, lean=lean)
        low, high = first + 1, len(self.starts)
        if fits(candidate := self.page(first, high, lean=lean)):
            return candidate
        best = self.page(first, low, lean=lean)
        while low < high:
            middle = (low + high + 1) // 2
            candidate = self.page(first, middle, lean=lean)
            if fits(candidate):
                low, best = middle, candidate
            else:
                high = middle - 1
        return best


def page_size(runtime: Runtime, max_tokens: int | None) -> int | None:
    """The page size of a call: its ``maxTokens``, else the server's (``None``: no paging)."""
    if max_tokens is not None:
        return max_tokens
    return runtime.settings.mcp_max_tokens or None


_SHORT_CALL = 1500
"""Longest arguments written out in an instruction (a pack of many urls says "this call's")."""


def call_text(tool: str, args: dict[str, object], *, otherwise: str) -> str:
    """A call an agent can make as written: ``get_transcript {"url": ..., "cursor": "seg:N"}``;
    arguments too long to repeat are "the arguments of this call" plus ``otherwise``."""
    written = json.dumps(args, ensure_ascii=False)
    if len(written) <= _SHORT_CALL:
        return f"{tool} {written}"
    return f"{tool} with the arguments of this call{otherwise}"


def next_call(tool: str, args: dict[str, object], cursor: str) -> str:
    """The call for the next page: ``args`` and the ``cursor``."""
    return call_text(tool, {**args, "cursor": cursor}, otherwise=f' and "cursor": "{cursor}"')


def fit_reply(
    pager: Pager,
    first: int,
    size: int | None,
    reply_for: Callable[[Page, int], TextReply],
    *,
    lean: bool = False,
) -> TextReply:
    """The reply for the longest page from unit ``first`` whose whole reply (fences, our lines,
    the marker) fits ``size`` tokens, or for the rest when ``size`` is ``None``.

    ``reply_for(page, stated)`` builds the reply whose marker says it is about ``stated`` tokens;
    the reply returned states its own estimate (to within a token: the figure is part of it).
    ``lean``: the page is not a first read (``Pager``).
    """
    return fit_page(pager, first, size, reply_for, lean=lean)[0]


def fit_page(
    pager: Pager,
    first: int,
    size: int | None,
    reply_for: Callable[[Page, int], TextReply],
    *,
    lean: bool = False,
) -> tuple[TextReply, Page]:
    """``fit_reply``, and the page it holds (whose ``end_seg`` is where the next one starts)."""
    if size is None:
        page = pager.page(first, pager.units, lean=lean)
    else:  # a figure of as many digits as the size: no stated figure can make a fitting page longer
        page = pager.fit(first, lambda candidate: reply_for(candidate, size).tokens() <= size, lean=lean)
    stated = 0
    reply = reply_for(page, stated)
    for _ in range(4):
        actual = reply.tokens()
        if actual == stated:
            break
        stated = actual
        reply = reply_for(page, stated)
    return reply, page


def page_span(
    context: VideoContext,
    first_seg: int,
    end_seg: int,
    *,
    start_sec: float | None = None,
    end_sec: float | None = None,
) -> tuple[float, float]:
    """Where a page of segments ``first_seg`` to ``end_seg - 1`` starts and stops in the video: its
    first segment's start (on the first page of a section starting at ``start_sec``, the earlier
    of the two), and the next page's first start (on the last page ``end_sec``, where a section
    ends, else the end of the video). The marker and the lean header both say it."""
    segments = segments_of(context)
    count = len(segments)
    start = segments[first_seg].start_sec if first_seg < count else (start_sec or 0.0)
    if first_seg == 0 and start_sec is not None:
        start = min(start, start_sec)
    if end_seg < count:
        return start, segments[end_seg].start_sec
    if end_sec is not None:
        return start, end_sec
    ends = [max(s.start_sec, s.end_sec) for s in segments[first_seg:]]
    return start, max([duration_of(context) or 0.0, *ends])


def pager_for(
    context: VideoContext,
    formatter: Formatter,
    options: RenderOptions,
    section_line: str = "",
    *,
    part: Callable[[int, int], Part] | None = None,
) -> Pager:
    """The pager of ``render_view(context, formatter, options, section_line)``.

    ``part(first_seg, end_seg)`` says what a lean page covers; without it a lean page is the same
    as any other.
    """
    segments = segments_of(context)
    full = msgspec.structs.replace(options, part=None)
    whole = render_view(context, formatter, full, section_line)

    def lean_options(first_seg: int, end_seg: int) -> RenderOptions:
        return full if part is None else msgspec.structs.replace(full, part=part(first_seg, end_seg))

    found = _units(context, formatter, full, segments, whole, section_line)
    if found is None:
        return _per_segment(context, formatter, full, segments, section_line, lean_options)
    starts, offsets = found
    preamble = whole[: offsets[0]] if offsets else whole
    head = header_of(context, formatter, full)

    def render(first: int, last: int, lead: str = preamble) -> str:
        if not offsets:
            return lead
        end = offsets[last] if last < len(offsets) else len(whole)
        return lead + whole[offsets[first] : end]

    def lean(first: int, last: int) -> str:
        first_seg = starts[first] if starts else 0
        end_seg = starts[last] if last < len(starts) else len(segments)
        chosen = lean_options(first_seg, end_seg)
        if not offsets or not whole.startswith(head):  # no words: the lean rendering of it all
            return render_view(context, formatter, chosen, section_line)
        return render(first, last, header_of(context, formatter, chosen) + preamble[len(head) :])

    return Pager(starts, len(segments), render, lean if part is not None else None)


def _per_segment(
    context: VideoContext,
    formatter: Formatter,
    options: RenderOptions,
    segments: list[Segment],
    section_line: str,
    lean_options: Callable[[int, int], RenderOptions],
) -> Pager:
    """One unit per segment, each page rendered by the formatter from the page's segments."""
    transcript = context.transcript

    def render(first: int, last: int, chosen: RenderOptions = options) -> str:
        if transcript is None or not segments:
            return render_view(context, formatter, chosen, section_line)
        part = msgspec.structs.replace(
            context,
            transcript=msgspec.structs.replace(transcript, segments=segments[first:last]),
        )
        return render_view(part, formatter, chosen, section_line)

    def lean(first: int, last: int) -> str:
        return render(first, last, lean_options(first, last))

    return Pager(list(range(len(segments))), len(segments), render, lean)


# --- finding the units in the unpaged result -----------------------------------------------------------


def _units(
    context: VideoContext,
    formatter: Formatter,
    options: RenderOptions,
    segments: list[Segment],
    whole: str,
    section_line: str = "",
) -> tuple[list[int], list[int]] | None:
    """``(first segment, offset in whole)`` of every unit, or ``None`` when they cannot be found."""
    worded = [i for i, seg in enumerate(segments) if clean_text(seg.text)]
    if not worded:
        return [], []
    # text: the header, a blank line, then (for a section) its line and a blank line (render_view)
    header = len(header_of(context, formatter, options)) + 2 + (len(section_line) + 2 if section_line else 0)
    try:
        if formatter.id in ("srt", "vtt"):
            return _locate(_blocks_after(whole, 1 if formatter.id == "vtt" else 0), worded)
        if formatter.id == "text" and options.timestamps:
            return _locate(_split(whole, "\n", header), worded)
        if formatter.id == "text":
            return _locate(_split(whole, "\n\n", header), _text_paragraph_starts(context, segments))
        if formatter.id == "markdown":
            return _markdown(context, segments, whole)
    except _Mismatch:
        return None
    return None


class _Mismatch(Exception):
    """The rendering is not laid out as expected; page it segment by segment instead."""


def _split(whole: str, sep: str, start: int) -> list[tuple[int, str]]:
    """``(offset, block)`` for the blocks of ``whole[start:]`` (without its final newline)."""
    if not whole.endswith("\n"):
        raise _Mismatch
    blocks = []
    position = start
    for block in whole[start:-1].split(sep):
        blocks.append((position, block))
        position += len(block) + len(sep)
    return blocks


def _blocks_after(whole: str, skip: int) -> list[tuple[int, str]]:
    """The ``\\n\\n`` blocks of ``whole``, leaving out the first ``skip`` (``WEBVTT``)."""
    return _split(whole, "\n\n", 0)[skip:]


def _locate(blocks: Sequence[tuple[int, str]], starts: list[int]) -> tuple[list[int], list[int]]:
    """One unit per block; the first unit also takes any segments without words before it."""
    if len(blocks) != len(starts) or any(not block for _, block in blocks):
        raise _Mismatch
    offsets = [offset for offset, _ in blocks]
    return [0, *starts[1:]], offsets


def _paragraph_starts(indexed: Sequence[tuple[int, Segment]]) -> list[int]:
    """The index of the first segment of every paragraph ``paragraphs()`` makes of ``indexed``."""
    worded = [(i, clean_text(seg.text)) for i, seg in indexed if clean_text(seg.text)]
    starts = []
    position = 0
    for para in paragraphs([seg for _, seg in indexed]):
        if position >= len(worded):
            raise _Mismatch
        starts.append(worded[position][0])
        length = -1
        while length < len(para.text) and position < len(worded):
            length += len(worded[position][1]) + 1
            position += 1
        if length != len(para.text):
            raise _Mismatch
    return starts


def _groups(context: VideoContext, segments: list[Segment]) -> list[list[tuple[int, Segment]]]:
    """Segments (with their indices) grouped by chapter as the formatters group them."""
    spans = chapter_spans(context)
    if not spans:
        return [list(enumerate(segments))]
    index_of = {id(seg): i for i, seg in enumerate(segments)}
    groups = split_by_starts(segments, [span.start_sec for span in spans])
    return [[(index_of[id(seg)], seg) for seg in group] for group in groups]


def _text_paragraph_starts(context: VideoContext, segments: list[Segment]) -> list[int]:
    return [start for group in _groups(context, segments) for start in _paragraph_starts(group)]


def _markdown(context: VideoContext, segments: list[Segment], whole: str) -> tuple[list[int], list[int]]:
    """Markdown: the header block, then (without chapters) ``## Transcript``, then paragraphs; with
    chapters, each chapter's heading and its paragraphs. A heading joins the paragraph after it
    (a trailing heading joins the unit before it), so a page never ends on a bare heading."""
    if not plain_text(segments):
        return [], []
    blocks = _split(whole, "\n\n", 0)
    kinds: list[int | None] = [None]  # the header
    if chapter_spans(context):
        for group in _groups(context, segments):
            kinds.append(None)  # the heading
            if group:
                kinds.extend(_paragraph_starts(group))
    else:
        kinds.append(None)  # ## Transcript
        kinds.extend(_paragraph_starts(list(enumerate(segments))))
    if len(kinds) != len(blocks) or any(not block for _, block in blocks):
        raise _Mismatch
    starts: list[int] = []
    offsets: list[int] = []
    pending: int | None = None  # offset of headings waiting for their paragraph
    leading = 2 if not chapter_spans(context) else 1  # blocks that form the preamble
    for position, ((offset, _), kind) in enumerate(zip(blocks, kinds, strict=True)):
        if position < leading:
            continue
        if kind is None:
            pending = offset if pending is None else pending
            continue
        starts.append(kind)
        offsets.append(offset if pending is None else pending)
        pending = None
    if not starts:
        raise _Mismatch
    starts[0] = 0
    return starts, offsets


def page_marker(
    context: VideoContext,
    page: Page,
    *,
    stated: int,
    next_page: str,
    noun: str = "transcript",
    start_sec: float | None = None,
    end_sec: float | None = None,
) -> str:
    """``[End of transcript: ...]`` or ``[Partial transcript: ...; next page: <call>; next_cursor: seg:N]``.

    ``stated`` is the size of the whole result, ``next_page`` the call for the next page (with
    ``next_cursor(page)`` in it), ``start_sec`` and ``end_sec`` where a section starts and ends.
    """
    count = len(segments_of(context))
    duration = duration_of(context)
    if count == 0:
        return f"[End of {noun}: it has no segments; about {stated} tokens in this result]"
    start, until = page_span(context, page.first_seg, page.end_seg, start_sec=start_sec, end_sec=end_sec)
    span = f"{format_timestamp(start)} to {format_timestamp(until)}"
    if duration:
        span += f" of {format_timestamp(duration)}"
    where = f"segments {page.first_seg}-{page.end_seg - 1} of {count}, {span}; about {stated} tokens in this result"
    if page.end_seg >= count:
        return f"[End of {noun}: {where}]"
    return f"[Partial {noun}: {where}; next page: {next_page}; next_cursor: {next_cursor(page)}]"


def next_cursor(page: Page) -> str:
    return f"seg:{page.end_seg}"
