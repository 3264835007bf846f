"""The context pack: several videos in one Markdown document an agent can load whole.

Layout: a title line, an index of the videos (title, channel, duration, link, tokens), each video
with its header and cited transcript, then "Not included" for the inputs that failed.

With a token budget the whole pack, as ``estimate_tokens`` measures the final string, never
exceeds it. The pack degrades in steps until it fits:

1. everything;
2. transcripts cut on segment boundaries, the budget shared fairly (every video first gets room
   for its truncation note, the rest is water-filled: equal shares, what a short video does not
   use goes to the others), each cut marked ``[Truncated at m:ss of h:mm:ss: N of M tokens]``;
3. the same with headers that leave out the chapter lists;
4. the index alone, with a line saying the transcripts did not fit;
5. one line saying the budget is too small, shortened as far as needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import ErrorCode, VidError
from ..models import Segment, VideoContext
from ..timecode import format_timestamp
from ..tokens import estimate_tokens
from .base import RenderOptions
from .blocks import duration_of, md_link_text, one_line, plain_text, segments_of, transcript_tokens
from .header import context_header
from .markdown import NO_TRANSCRIPT, markdown_body

__all__ = ["PackFormatter", "render_many"]

_SEP = "\n\n"
_CITE = "Cite as [Video title @ m:ss](link)."
_LAST_WORDS = ("Budget too small.", "Too small.", "Tiny")
_MAX_ROUNDS = 8


def render_many(
    contexts: Sequence[VideoContext],
    *,
    max_tokens: int | None = None,
    failed: Sequence[tuple[str, VidError]] = (),
) -> str:
    """The pack for ``contexts``; ``failed`` lists ``(input, error)`` pairs that could not be read.

    ``max_tokens`` below 1 is a ``bad-request``: no text fits in it.
    """
    if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"maxTokens must be a positive number of tokens, not {max_tokens!r}.",
            hint="Leave maxTokens out for the whole pack, or give a budget such as 8000.",
        )
    pack = _Pack([_Video(i, ctx) for i, ctx in enumerate(contexts, start=1)], list(failed), max_tokens)
    full = pack.assemble([v.full_block for v in pack.videos], compact=False, truncated=set())
    if max_tokens is None or estimate_tokens(full) <= max_tokens:
        return full
    for compact in (False, True):
        if (text := pack.fit(compact)) is not None:
            return text
    index_only = pack.index_only()
    if estimate_tokens(index_only) <= max_tokens:
        return index_only
    return pack.too_small()


@dataclass
class _Video:
    number: int
    context: VideoContext
    segments: list[Segment] = field(init=False)
    total_tokens: int = field(init=False)
    full_block: str = field(init=False)

    def __post_init__(self) -> None:
        self.segments = segments_of(self.context)
        self.total_tokens = transcript_tokens(self.context)
        body = markdown_body(self.context, level=3) if plain_text(self.segments) else ""
        self.full_block = body or NO_TRANSCRIPT

    def header(self, compact: bool) -> str:
        first, _, rest = context_header(self.context, level=2, chapters=not compact).partition("\n")
        first = f"## {self.number}. {first.removeprefix('## ')}"
        return f"{first}\n{rest}" if rest else first

    def index_line(self, truncated: bool) -> str:
        meta = self.context.metadata
        title = md_link_text(one_line(meta.title, 200) or self.context.id)
        url = one_line(meta.url).replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        parts = [f"[{title}]({url})" if url else title]
        if channel := one_line(meta.channel, 80):
            parts.append(channel)
        if (duration := duration_of(self.context)) is not None:
            parts.append(format_timestamp(duration))
        parts.append(f"{self.total_tokens} tokens" + (" (truncated)" if truncated else ""))
        return f"{self.number}. " + " · ".join(parts)

    def marker(self, kept: int) -> str:
        cut = self.segments[kept].start_sec if kept < len(self.segments) else (duration_of(self.context) or 0)
        duration = duration_of(self.context) or cut
        tokens = estimate_tokens(plain_text(self.segments[:kept]))
        return (
            f"[Truncated at {format_timestamp(cut)} of {format_timestamp(duration)}: "
            f"{tokens} of {self.total_tokens} tokens]"
        )

    def cut_block(self, kept: int) -> str:
        body = markdown_body(self.context, level=3, limit=kept)
        return f"{body}{_SEP}{self.marker(kept)}" if body else self.marker(kept)

    def cost(self, block: str) -> int:
        return estimate_tokens(_SEP + block)

    def fit(self, share: int) -> tuple[int, str] | None:
        """The most segments whose cut block costs at most ``share``, with that block."""
        if self.cost(self.cut_block(0)) > share:
            return None
        low, high = 0, len(self.segments) - 1  # all segments would be no cut at all
        while low < high:
            middle = (low + high + 1) // 2
            if self.cost(self.cut_block(middle)) <= share:
                low = middle
            else:
                high = middle - 1
        return low, self.cut_block(low)


@dataclass
class _Pack:
    videos: list[_Video]
    failed: list[tuple[str, VidError]]
    budget: int | None

    def title(self) -> str:
        count = len(self.videos)
        line = f"# Context pack: {count} video{'' if count == 1 else 's'}"
        if self.failed:
            line += f", {len(self.failed)} not included"
        return line

    def not_included(self) -> list[str]:
        if not self.failed:
            return []
        lines = ["## Not included"]
        for source, error in self.failed:
            lines.append(f"- {one_line(source, 200)}: {error.code.value}: {one_line(error.message, 300)}")
        return ["\n".join(lines)]

    def index(self, truncated: set[int]) -> str:
        lines = ["## Videos"] + [v.index_line(v.number in truncated) for v in self.videos]
        return "\n".join(lines)

    def assemble(self, blocks: list[str], *, compact: bool, truncated: set[int]) -> str:
        parts = [self.title(), _CITE]
        if truncated:
            parts[-1] += (
                f" Token budget: {self.budget}; {len(truncated)} of {len(self.videos)} transcripts "
                "cut on segment boundaries, each marked [Truncated at ...]."
            )
        if self.videos:
            parts.append(self.index(truncated))
        for video, block in zip(self.videos, blocks, strict=True):
            parts.append(video.header(compact))
            parts.append(block)
        parts.extend(self.not_included())
        return _SEP.join(parts) + "\n"

    def fit(self, compact: bool) -> str | None:
        """The pack with transcripts cut to share the budget, or ``None`` if the headers alone
        leave no room for every truncation note."""
        assert self.budget is not None
        everyone = {v.number for v in self.videos}
        # The frame with empty bodies and every video marked truncated: an upper bound for the
        # frame of any cut (fewer marks only shorten it).
        frame = self.assemble(["" for _ in self.videos], compact=compact, truncated=everyone)
        room = self.budget - estimate_tokens(frame)
        for _ in range(_MAX_ROUNDS):
            if room < 0:
                return None
            blocks, truncated = self._share(room)
            if blocks is None:
                return None
            text = self.assemble(blocks, compact=compact, truncated=truncated)
            over = estimate_tokens(text) - self.budget
            if over <= 0:
                return text
            room -= over
        return None

    def _share(self, room: int) -> tuple[list[str] | None, set[int]]:
        needs = [v.cost(v.full_block) for v in self.videos]
        floors = [min(need, v.cost(v.cut_block(0))) for v, need in zip(self.videos, needs, strict=True)]
        spare = room - sum(floors)
        if spare < 0:
            return None, set()
        extras = _water_fill([need - floor for need, floor in zip(needs, floors, strict=True)], spare)
        blocks: list[str] = []
        used: list[int] = []
        truncated: set[int] = set()
        for video, need, floor, extra in zip(self.videos, needs, floors, extras, strict=True):
            share = floor + extra
            if need <= share:
                blocks.append(video.full_block)
                used.append(need)
                continue
            cut = video.fit(share)
            if cut is None:
                return None, set()
            blocks.append(cut[1])
            used.append(video.cost(cut[1]))
            truncated.add(video.number)
        # Cuts fall on segment boundaries, so shares are rarely used to the last token: offer what
        # is left to the truncated videos in order.
        left = room - sum(used)
        for i, video in enumerate(self.videos):
            if video.number not in truncated or left <= 0:
                continue
            if needs[i] <= used[i] + left:
                blocks[i] = video.full_block
                truncated.discard(video.number)
                left -= needs[i] - used[i]
                continue
            cut = video.fit(used[i] + left)
            if cut is not None:
                left -= video.cost(cut[1]) - used[i]
                blocks[i] = cut[1]
        return blocks, truncated

    def index_only(self) -> str:
        parts = [
            self.title(),
            f"Token budget: {self.budget}, too small for the transcripts; only the index is included.",
        ]
        if self.videos:
            parts.append(self.index(set()))
        parts.extend(self.not_included())
        return _SEP.join(parts) + "\n"

    def too_small(self) -> str:
        assert self.budget is not None
        words = (
            f"Context pack: token budget {self.budget} is too small even for the index of "
            f"{len(self.videos)} videos ({len(self.failed)} not included); raise maxTokens."
        ).split()
        while words:
            line = " ".join(words) + "\n"
            if estimate_tokens(line) <= self.budget:
                return line
            words.pop()
        for line in _LAST_WORDS:
            if estimate_tokens(line) <= self.budget:
                return line
        return "-"  # pragma: no cover - "Tiny" is one token and budgets start at 1


def _water_fill(needs: list[int], room: int) -> list[int]:
    """Equal shares of ``room``, each capped at its need; what one leaves goes to the others."""
    shares = [0] * len(needs)
    left = room
    order = sorted(range(len(needs)), key=lambda i: needs[i])
    for position, i in enumerate(order):
        fair = left // (len(needs) - position)
        shares[i] = min(needs[i], fair)
        left -= shares[i]
    return shares


class PackFormatter:
    id = "pack"
    description = (
        "Markdown context pack for one or more videos: index, headers, cited transcripts; "
        "fits a token budget (maxTokens)."
    )
    mime_type = "text/markdown; charset=utf-8"
    extension = "md"
    combines_videos = True

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        return render_many([context], max_tokens=options.max_tokens)
