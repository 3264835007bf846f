"""One read of a video's words as MCP answers it, and what that read costs.

``get_transcript`` and ``get_section`` answer through a ``Reading``: which words (a whole video or
one section), in which format, at which page size, with which of our lines after the fence. Its
``page(cursor)`` is the reply the tool sends; its ``cost()`` is what reading it all costs, page by
page, each reply measured as sent (fences, header, our lines and the closing marker), which is
the figure ``get_outline`` states for every section and for the whole transcript.

What is a first read, on a server that keeps no state between calls: a call whose arguments do
not presuppose an earlier one. So ``get_transcript`` without a cursor is a first read and gets the
full header (channel, date, URL, link pattern, chapters); a call with a cursor came from a page
the agent has read, and a section is read from an outline (or to look again at a part of a video
already seen), so they get the lean one-line header: title, what the page covers, where the words
came from, the link pattern (a first page whose full header alone would not leave room for
any words within ``maxTokens`` gets the lean one too: the budget wins). The same arguments always give the same answer, so a repeated call
is not told apart from the first: that is what makes a finished call safe to answer again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from ..formats import Formatter, Part, RenderOptions
from ..models import VideoContext
from ..outline import Section
from .paging import (
    Page,
    Pager,
    fit_page,
    next_call,
    next_cursor,
    page_marker,
    page_span,
    pager_for,
    parse_cursor,
)
from .results import TextReply, Untrusted

__all__ = ["Reading"]


@dataclass
class Reading:
    context: VideoContext
    """The video, or for a section the section's context (``Section.context``)."""
    formatter: Formatter
    options: RenderOptions
    size: int | None
    """The page size in tokens; ``None``: everything in one reply."""
    call: tuple[str, dict[str, object]]
    """The tool and the arguments the call gave, for the call each page names for the next."""
    lines: Sequence[str] = ()
    """Our lines between the fence and the marker (what ran, a stale copy)."""
    section: Section | None = None

    @property
    def noun(self) -> str:
        return "transcript" if self.section is None else "section"

    @property
    def bounds(self) -> dict[str, float | None]:
        """Where a section starts and ends (nothing for a whole transcript)."""
        if self.section is None:
            return {"start_sec": None, "end_sec": None}
        return {"start_sec": self.section.start_sec, "end_sec": self.section.end_sec}

    def _part(self, first_seg: int, end_seg: int) -> Part:
        start, end = page_span(self.context, first_seg, end_seg, **self.bounds)
        title = self.section.part().title if self.section is not None else None
        return Part(start_sec=start, end_sec=end, title=title)

    @cached_property
    def pager(self) -> Pager:
        return pager_for(self.context, self.formatter, self.options, part=self._part)

    def page(self, cursor: str | None) -> tuple[TextReply, Page]:
        """The reply for the page from ``cursor`` (``None``: the first), and that page."""
        pager = self.pager
        first = pager.unit_at(parse_cursor(cursor, pager.segment_count)) if pager.units else 0
        tool, args = self.call

        def reply_for(page: Page, stated: int) -> TextReply:
            marker = page_marker(
                self.context,
                page,
                stated=stated,
                next_page=next_call(tool, args, next_cursor(page)),
                noun=self.noun,
                **self.bounds,
            )
            return TextReply([Untrusted(self.noun, page.content), *self.lines, marker])

        lean = cursor is not None or self.section is not None
        fitted = fit_page(pager, first, self.size, reply_for, lean=lean)
        if not lean and self.size is not None and fitted[0].tokens() > self.size:
            # maxTokens is smaller than the full header and one unit: the budget wins
            return fit_page(pager, first, self.size, reply_for, lean=True)
        return fitted

    def cost(self) -> int:
        """Tokens of every reply from the first page to the last, each following the cursor the
        page before it names, as an agent reading it all receives them."""
        total = 0
        cursor: str | None = None
        while True:
            reply, page = self.page(cursor)
            total += reply.tokens()
            if page.end_seg >= self.pager.segment_count or not self.pager.units:
                return total
            cursor = next_cursor(page)
