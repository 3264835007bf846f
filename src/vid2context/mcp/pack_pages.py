"""Context pack pages: a pack longer than the page size, cut between its blocks, nothing left out.

``export_context_pack`` without ``maxTokens`` pages the whole pack at the server's page size
(``maxTokens`` is the contract's budget, which selects outlines and whole chapters to fit; a page
size must not drop anything the caller did not ask to drop). The pack is Markdown in blocks parted by blank
lines: the title, the citation line, the index, then each video's header, chapter headings and
cited paragraphs, then "Not included". A page is the title and citation line (the *preamble*)
followed by whole *units*: a block, or headings together with the block after them, so a page
never ends on a bare heading. As with transcript pages (``paging.py``), the first page plus every
later page without its preamble is exactly the whole pack.

Cursors are ``pack:N:h``: ``N`` the first block of the next page, ``h`` eight hex digits of the
SHA-256 of the whole pack. A pack re-read for the next page is rendered from the saved videos, so
it is the same text; when it is not (a collection gained a video, one that failed before was read
this time), the cursor is refused rather than skipping or repeating text.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import ErrorCode, VidError
from ..tokens import estimate_tokens
from .paging import Page, Pager, fit_reply, next_call
from .results import TextReply, Untrusted

__all__ = ["PACK_CURSOR", "check_pack_cursor", "pack_page"]

PACK_CURSOR = re.compile(r"pack:(\d{1,9}):([0-9a-f]{8})")
_HEADER = re.compile(r"## (\d+)\. ")
_CITED = re.compile(r"\[(\d+:\d\d(?::\d\d)?)\]")
_SEP = "\n\n"
_PREAMBLE = 2
"""Blocks every page starts with: the title and the citation line."""


def check_pack_cursor(cursor: str | None) -> tuple[int, str] | None:
    """The block and fingerprint a ``pack:N:h`` cursor names; ``bad-request`` for anything else."""
    if cursor is None:
        return None
    match = PACK_CURSOR.fullmatch(cursor.strip()) if isinstance(cursor, str) else None
    if match is None:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"The cursor {str(cursor)[:30]!r} is not a pack cursor.",
            hint='Pass the next_cursor of the previous pack page ("pack:N:..."), with the same other '
            "arguments, or no cursor.",
        )
    return int(match.group(1)), match.group(2)


class _Blocks:
    """The pack's blocks, their offsets, the units they form and where each block is."""

    def __init__(self, whole: str) -> None:
        self.whole = whole
        self.fingerprint = hashlib.sha256(whole.encode()).hexdigest()[:8]
        body = whole[:-1] if whole.endswith("\n") else whole
        self.blocks = body.split(_SEP)
        self.offsets: list[int] = []
        position = 0
        for block in self.blocks:
            self.offsets.append(position)
            position += len(block) + len(_SEP)
        self.places = self._places()
        self.starts = self._units()

    def _places(self) -> list[str]:
        """Where each block is, in the pack's own terms: "video 2 at 1:02:03", "the index"."""
        places = []
        video = 0
        for block in self.blocks:
            header = _HEADER.match(block)
            if header and int(header.group(1)) == video + 1:
                video += 1
                places.append(f"the start of video {video}")
            elif block.startswith("## Videos\n"):
                places.append("the index")
            elif block.startswith("## Not included\n"):
                places.append("the inputs not included")
            elif video and (cited := _CITED.match(block)):
                places.append(f"video {video} at {cited.group(1)}")
            else:
                places.append(f"video {video}" if video else "the start")
        return places

    def _is_heading(self, index: int) -> bool:
        block = self.blocks[index]
        return block.startswith("### ") or self.places[index].startswith("the start of video")

    def _units(self) -> list[int]:
        """The first block of every unit: headings join the block after them (trailing ones the
        unit before); the first unit takes the preamble."""
        starts: list[int] = []
        pending: int | None = None
        for index in range(_PREAMBLE, len(self.blocks)):
            if self._is_heading(index):
                pending = index if pending is None else pending
                continue
            starts.append(index if pending is None else pending)
            pending = None
        if pending is not None and not starts:
            starts.append(pending)
        if starts:
            starts[0] = 0
        return starts

    def render(self, first: int, last: int) -> str:
        """Units ``first`` to ``last - 1``; a later page starts with the preamble."""
        if not self.starts:
            return self.whole
        start = self.offsets[self.starts[first]]
        end = self.offsets[self.starts[last]] if last < len(self.starts) else len(self.whole)
        preamble = self.whole[: self.offsets[_PREAMBLE]] if first else ""
        return preamble + self.whole[start:end]

    def place(self, page: Page) -> str:
        """Where a page starts: the start of a video, else its first block that is not a heading."""
        if page.first_seg == 0:
            return "the start"
        place = self.places[page.first_seg]
        if place.startswith("the start of video"):
            return place
        for index in range(page.first_seg, min(page.end_seg, len(self.blocks))):
            if not self._is_heading(index):
                return self.places[index]
        return place


def _marker(blocks: _Blocks, page: Page, stated: int, total: int, next_page: str, cursor: str) -> str:
    count = len(blocks.blocks)
    where = f"blocks {page.first_seg}-{page.end_seg - 1} of {count}, from {blocks.place(page)}"
    size = f"about {stated} tokens in this result (the whole pack: about {total})"
    if page.end_seg >= count:
        return f"[End of pack: {where} to the end; {size}]"
    following = Page("", page.end_seg, count)
    return (
        f"[Partial pack: {where} up to {blocks.place(following)}; {size}; next page: {next_page}; "
        f"next_cursor: {cursor}]"
    )


def pack_page(
    whole: str,
    lines: list[str],
    size: int | None,
    cursor: str | None,
    call: tuple[str, dict[str, object]],
) -> TextReply:
    """The reply for the pack ``whole`` followed by ``lines``: whole when it fits ``size`` and no
    ``cursor`` is given (as a pack always came), else the page from ``cursor`` with its marker."""
    if cursor is None and (size is None or TextReply([Untrusted("pack", whole), *lines]).tokens() <= size):
        return TextReply([Untrusted("pack", whole), *lines])
    blocks = _Blocks(whole)
    first = 0
    if (named := check_pack_cursor(cursor)) is not None:
        block, fingerprint = named
        if fingerprint != blocks.fingerprint:
            raise VidError(
                ErrorCode.BAD_REQUEST,
                "The pack changed since that page was made (a video was added, removed or read "
                "differently), so its cursor no longer points into it.",
                hint="Start again without a cursor.",
            )
        if block >= len(blocks.blocks):
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"The cursor is past the end of this pack ({len(blocks.blocks)} blocks).",
                hint="That page was the last one; start again without a cursor to read from the beginning.",
            )
    pager = Pager(blocks.starts, len(blocks.blocks), blocks.render)
    if named is not None and pager.units:
        first = pager.unit_at(named[0])
    total = estimate_tokens(whole)
    tool, args = call

    def reply_for(page: Page, stated: int) -> TextReply:
        cursor_next = f"pack:{page.end_seg}:{blocks.fingerprint}"
        marker = _marker(blocks, page, stated, total, next_call(tool, args, cursor_next), cursor_next)
        return TextReply([Untrusted("pack", page.content), *lines, marker])

    return fit_reply(pager, first, size, reply_for)
