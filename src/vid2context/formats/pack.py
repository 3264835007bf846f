"""The context pack: several videos in one Markdown document an agent can load whole.

Layout: a title line, an index of the videos (title, channel, duration, link, tokens), each video
with its header and cited transcript, then "Not included": every input that is not in the pack
(failed, with its error code and message; left out by a limit, with how many) and, in a pack
chosen to a budget, every video none of whose chapters fit.

A token budget (``max_tokens``) the whole pack does not fit *selects* instead of cutting (issue #12
item 5). The measure is the whole result as the surface returns it (``measure``: the REST body, or
the MCP text with its fences and closing line), and the result never exceeds the budget:

- every video keeps its header and its outline: each chapter (or, without chapters, each time
  section of ``outline.py``) with its index, start, title and token count, and the call that
  reads it (``reader``: ``get_section`` on MCP, ``GET /api/v1/section`` on REST). These are the
  index: the list of videos at the top, which would repeat them, is left out;
- then whole chapters, never a cut: first those that match ``query`` (``relevance.part_scores``),
  best first, then others spread across the video (the first, the last, the middle, ...). The
  budget is shared: the video that has used least so far picks next, so one long video cannot
  starve the others, and what one cannot use goes to the rest. Chosen chapters are marked
  ``· below`` in the outline and follow the header in time order;
- a budget below the index (the headers, every outline and "Not included", with no chapter) is a
  ``bad-request`` whose hint gives the minimum, measured the same way: that budget succeeds, one
  token less fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from .. import outline as outlines
from ..errors import ErrorCode, VidError
from ..models import VideoContext
from ..relevance import part_scores
from ..timecode import format_timestamp
from ..tokens import estimate_tokens
from .base import RenderOptions
from .blocks import (
    duration_of,
    md_link_text,
    md_text,
    one_line,
    plain_text,
    segments_of,
    transcript_tokens,
)
from .header import context_header
from .markdown import NO_TRANSCRIPT, markdown_body

__all__ = [
    "MAX_QUERY_CHARS",
    "Measure",
    "Pack",
    "PackFormatter",
    "Reader",
    "ReadingCosts",
    "build_pack",
    "check_query",
    "render_many",
]

MAX_QUERY_CHARS = 500
"""Longest ``query``: a few keywords or a question, not a document."""

Reader = Callable[[VideoContext], str]
"""How a pack says to read one outline entry of a video: a call in which ``N`` stands for the
entry's index, e.g. ``get_section {"url": "youtube:abc", "chapter": N}``."""
ReadingCosts = Callable[[VideoContext], "outlines.Costs"]
"""What the reader's call costs for each part of a video (``outline.Costs``), so the outline states
what reading a part left out will cost on this surface; by default its words alone."""
Measure = Callable[[str, int | None], int]
"""What the result as sent costs for a pack's text: with ``None`` for the whole pack, else with the
budget the selection answers to (a surface may close a selection with a line that names it)."""

_SEP = "\n\n"
_CITE = "Cite as [Video title @ m:ss](link)."
_BELOW = " · below"
_MAX_ROUNDS = 8


def check_query(query: str | None) -> str | None:
    """``query`` folded onto one line, ``None`` when blank; ``bad-request`` when not a string or
    longer than ``MAX_QUERY_CHARS``. Surfaces call it before reading any video."""
    if query is None:
        return None
    if not isinstance(query, str):
        raise VidError(
            ErrorCode.BAD_REQUEST, "query must be a string.", hint='Give keywords, e.g. "kickstand".'
        )
    if len(query) > MAX_QUERY_CHARS:
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"query is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS}.",
            hint="Give a few keywords that name the parts you need.",
        )
    return one_line(query) or None


@dataclass(frozen=True, slots=True)
class Pack:
    """A rendered pack: its text, whether a budget chose what is in it, and how many tokens the
    whole pack's text has (``estimate_tokens``)."""

    text: str
    selected: bool
    whole_tokens: int


def build_pack(
    contexts: Sequence[VideoContext],
    *,
    max_tokens: int | None = None,
    failed: Sequence[tuple[str, VidError]] = (),
    left_out: Sequence[tuple[str, str]] = (),
    query: str | None = None,
    reader: Reader | None = None,
    costs: ReadingCosts | None = None,
    measure: Measure | None = None,
) -> Pack:
    """The pack for ``contexts``, whole, or chosen to fit ``max_tokens`` (module docstring).

    ``failed`` lists ``(input, error)`` pairs that could not be read, ``left_out`` ``(input, why)``
    pairs that were not read at all (beyond a limit). ``query`` chooses the chapters a budget
    keeps; ``reader`` names the call that reads one, on the surface asking (without it the outline
    names none) and ``costs`` what that call costs per part (default: the part's words); ``measure`` costs the result as the
    surface sends it (default: ``estimate_tokens`` of the text). ``max_tokens`` below 1, or below
    the index, is a ``bad-request``.
    """
    if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
        raise VidError(
            ErrorCode.BAD_REQUEST,
            f"maxTokens must be a positive number of tokens, not {max_tokens!r}.",
            hint="Leave maxTokens out for the whole pack, or give a budget such as 8000.",
        )
    pack = _Pack(
        [_Video(i, ctx, costs) for i, ctx in enumerate(contexts, start=1)],
        list(failed),
        list(left_out),
    )
    full = pack.full()
    whole_tokens = estimate_tokens(full)
    cost = measure or _text_tokens
    whole = cost(full, None)
    if max_tokens is None or whole <= max_tokens:
        return Pack(full, False, whole_tokens)
    choice = _Selection(
        pack,
        budget=max_tokens,
        whole=whole,
        whole_tokens=whole_tokens,
        query=check_query(query),
        reader=reader,
        measure=cost,
    )
    return Pack(choice.render(), True, whole_tokens)


def render_many(
    contexts: Sequence[VideoContext],
    *,
    max_tokens: int | None = None,
    failed: Sequence[tuple[str, VidError]] = (),
    left_out: Sequence[tuple[str, str]] = (),
    query: str | None = None,
    reader: Reader | None = None,
    costs: ReadingCosts | None = None,
) -> str:
    """The pack's text (``build_pack``), measured as a body of its own."""
    return build_pack(
        contexts,
        max_tokens=max_tokens,
        failed=failed,
        left_out=left_out,
        query=query,
        reader=reader,
        costs=costs,
    ).text


def _text_tokens(text: str, budget: int | None) -> int:
    return estimate_tokens(text)


@dataclass(frozen=True, slots=True)
class _Part:
    """One outline entry as a pack can hold it: its block (heading and cited paragraphs) and
    what holding it costs."""

    index: int
    title: str
    start_sec: float
    tokens: int
    """What reading it with the reader's call costs (``costs``), as the outline states it."""
    words: int
    """Its words alone: an entry without any is never chosen."""
    block: str
    cost: int
    score: float


@dataclass
class _Video:
    number: int
    context: VideoContext
    costs: ReadingCosts | None = None
    total_tokens: int = field(init=False)
    has_text: bool = field(init=False)
    full_block: str = field(init=False)
    _parts: list[_Part] | None = field(default=None, init=False)
    _kind: str = field(default="chapters", init=False)

    def __post_init__(self) -> None:
        self.total_tokens = transcript_tokens(self.context)
        self.has_text = bool(plain_text(segments_of(self.context)))
        body = markdown_body(self.context, level=3) if self.has_text else ""
        self.full_block = body or NO_TRANSCRIPT

    def header(self, chapters: bool) -> str:
        first, _, rest = context_header(self.context, level=2, chapters=chapters).partition("\n")
        first = f"## {self.number}. {first.removeprefix('## ')}"
        return f"{first}\n{rest}" if rest else first

    def index_line(self) -> str:
        meta = self.context.metadata
        title = md_link_text(one_line(meta.title, 200) or self.context.id)
        url = one_line(meta.url).replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        parts = [f"[{title}]({url})" if url else title]
        if channel := one_line(meta.channel, 80):
            parts.append(channel)
        if (duration := duration_of(self.context)) is not None:
            parts.append(format_timestamp(duration))
        parts.append(f"{self.total_tokens} tokens")
        return f"{self.number}. " + " · ".join(parts)

    def parts(self, query: str | None) -> list[_Part]:
        """The outline's entries, each with its block, cost and relevance to ``query``."""
        if self._parts is not None:
            return self._parts
        if not self.has_text:
            self._parts = []
            return self._parts
        shape = outlines.outline(
            self.context, costs=self.costs(self.context) if self.costs else outlines.SPEECH
        )
        self._kind = shape.sections
        texts: list[str] = []
        blocks: list[str] = []
        words: list[int] = []
        for entry in shape.chapters:
            section = outlines.get_section(self.context, chapter=entry.index)
            part = section.context
            bare = msgspec.structs.replace(part, metadata=msgspec.structs.replace(part.metadata, chapters=[]))
            heading = (
                f"### {md_text(one_line(entry.title, 200)) or 'Untitled'} ({self.noun(1)} {entry.index})"
            )
            body = markdown_body(bare, level=3)
            blocks.append(f"{heading}{_SEP}{body}" if body else heading)
            texts.append(f"{entry.title}\n{plain_text(segments_of(part))}")
            words.append(section.tokens)
        scores = part_scores(query, texts)
        self._parts = [
            _Part(
                index=entry.index,
                title=one_line(entry.title, 120),
                start_sec=entry.start_sec,
                tokens=entry.tokens,
                words=count,
                block=block,
                cost=estimate_tokens(_SEP + block) + estimate_tokens(_BELOW),
                score=score,
            )
            for entry, block, score, count in zip(shape.chapters, blocks, scores, words, strict=True)
        ]
        return self._parts

    def noun(self, count: int) -> str:
        if self._kind == "time":
            return "section" if count == 1 else "sections"
        return "chapter" if count == 1 else "chapters"

    def outlined(self, picked: set[int], query: str | None, reader: Reader | None) -> str:
        """The header with the outline in place of the chapter list, marking what is below."""
        lines = [self.header(chapters=False)]
        parts = self.parts(query)
        if not parts:
            return lines[0]
        count = len(parts)
        what = self.noun(count)
        if self._kind == "time":
            what += " of about five minutes (no chapters)"
        outline = f"- Outline: {count} {what}, {len(picked)} in full below"
        if reader is not None:
            outline += f"; read {self.noun(1)} N (for the tokens beside it): {reader(self.context)}"
        lines.append(outline)
        for part in parts:
            line = f"  - {part.index} · "
            if self._kind != "time":
                line += f"{format_timestamp(part.start_sec)} "
            line += f"{part.title} · {part.tokens} tokens"
            if query and part.score > 0:
                line += " · match"
            if part.index in picked:
                line += _BELOW
            lines.append(line)
        return "\n".join(lines)


@dataclass
class _Pack:
    videos: list[_Video]
    failed: list[tuple[str, VidError]]
    left_out: list[tuple[str, str]]

    def title(self) -> str:
        count = len(self.videos)
        line = f"# Context pack: {count} video{'' if count == 1 else 's'}"
        if missing := len(self.failed) + len(self.left_out):
            line += f", {missing} not included"
        return line

    def not_included(self, dropped: Sequence[_Video] = ()) -> list[str]:
        lines = [
            f"- {one_line(source, 200)}: {error.code.value}: {one_line(error.message, 300)}"
            for source, error in self.failed
        ]
        lines += [
            f"- {one_line(source, 200)}: left out: {one_line(why, 200)}" for source, why in self.left_out
        ]
        lines += [
            f"- Video {video.number}'s transcript: none of its {video.noun(2)} fit what the budget left "
            "(its outline names the call for each)."
            for video in dropped
        ]
        return ["\n".join(["## Not included", *lines])] if lines else []

    def full(self) -> str:
        parts = [self.title(), _CITE]
        if self.videos:
            parts.append("\n".join(["## Videos"] + [v.index_line() for v in self.videos]))
        for video in self.videos:
            parts.append(video.header(chapters=True))
            parts.append(video.full_block)
        parts.extend(self.not_included())
        return _SEP.join(parts) + "\n"


@dataclass
class _Selection:
    """The pack chosen to a budget: outlines first, then whole chapters (module docstring)."""

    pack: _Pack
    budget: int
    whole: int
    whole_tokens: int
    query: str | None
    reader: Reader | None
    measure: Measure

    def render(self) -> str:
        videos = self.pack.videos
        nothing: list[set[int]] = [set() for _ in videos]
        frame = self.assemble(nothing)
        floor = self.measure(frame, self.budget)
        if floor > self.budget:
            minimum = min(self.minimum(), self.whole)
            raise VidError(
                ErrorCode.BAD_REQUEST,
                f"maxTokens={self.budget} is too small for this pack: its index (every video's header "
                f"and outline, and what is not included) needs {minimum} tokens.",
                hint=f"Give maxTokens of at least {minimum} (the whole pack is about {self.whole}), "
                "pack fewer videos, or leave maxTokens out for all of it.",
            )
        # The frame lists every video as left out for budget; a choice lists only those it leaves
        # empty, so start from the frame without those lines and let overshoot narrow the room.
        room = self.budget - self.measure(self.assemble(nothing, drops=False), self.budget)
        for _ in range(_MAX_ROUNDS):
            if room <= 0:
                break
            chosen = self.choose(room)
            text = self.assemble(chosen)
            over = self.measure(text, self.budget) - self.budget
            if over <= 0:
                return text
            room -= over
        return frame

    def choose(self, room: int) -> list[set[int]]:
        """Which entries of each video to hold within ``room`` tokens: matches first, best first,
        then entries spread across each video; the video that has used least picks next."""
        parts = [video.parts(self.query) for video in self.pack.videos]
        chosen: list[set[int]] = [set() for _ in parts]
        used = [0] * len(parts)
        matches = [
            sorted((p for p in ps if p.score > 0 and p.words), key=lambda p: (-p.score, p.index))
            for ps in parts
        ]
        room = _fill(matches, chosen, used, room)
        spread = [_spread(ps, chosen[i]) for i, ps in enumerate(parts)]
        _fill(spread, chosen, used, room)
        return chosen

    def minimum(self) -> int:
        """The smallest budget whose frame fits it. The frame states the budget, so its size
        grows with the budget's digits: the answer is the first number of digits whose frame fits
        in a number of that many digits."""
        nothing: list[set[int]] = [set() for _ in self.pack.videos]
        digits = 1
        while True:
            low, high = 10 ** (digits - 1), 10**digits - 1
            need = max(low, self.measure(self.assemble(nothing, budget=high), high))
            if need <= high and self.measure(self.assemble(nothing, budget=need), need) <= need:
                return need
            digits += 1

    def assemble(self, chosen: list[set[int]], *, drops: bool = True, budget: int | None = None) -> str:
        """The selected pack: no index list (each video's header and outline are its index
        entry), then per video its header and outline and the chosen chapters in time order."""
        blocks = [self.pack.title(), self.budget_line(self.budget if budget is None else budget)]
        dropped = []
        for video, picked in zip(self.pack.videos, chosen, strict=True):
            blocks.append(video.outlined(picked, self.query, self.reader))
            parts = video.parts(self.query)
            if not parts:
                blocks.append(NO_TRANSCRIPT)
                continue
            if not picked and drops:
                dropped.append(video)
            blocks.extend(part.block for part in parts if part.index in picked)
        blocks.extend(self.pack.not_included(dropped))
        return _SEP.join(blocks) + "\n"

    def budget_line(self, budget: int) -> str:
        order = "spread across each video"
        if self.query:
            order = f'matches for "{md_text(one_line(self.query, 200))}" first, then spread across each video'
        return (
            f"{_CITE} Token budget: {budget} of about {self.whole_tokens}: outlines, then whole "
            f"chapters (· below): {order}."
        )


def _fill(queues: list[list[_Part]], chosen: list[set[int]], used: list[int], room: int) -> int:
    """Take entries from the queues while ``room`` lasts, the video that used least first; an
    entry that does not fit is passed over (room only shrinks). Returns the room left."""
    heads = [0] * len(queues)
    while True:
        waiting = [i for i, queue in enumerate(queues) if heads[i] < len(queue)]
        if not waiting:
            return room
        i = min(waiting, key=lambda i: (used[i], queues[i][heads[i]].cost, i))
        part = queues[i][heads[i]]
        heads[i] += 1
        if part.index in chosen[i] or part.cost > room:
            continue
        chosen[i].add(part.index)
        used[i] += part.cost
        room -= part.cost


def _spread(parts: list[_Part], taken: set[int]) -> list[_Part]:
    """The entries with words that are not taken, each next one as far as it can be from those
    already taken or ordered (by index; the first entry first when nothing is taken yet)."""
    candidates = [p for p in parts if p.words and p.index not in taken]
    if not candidates:
        return []
    far = len(parts) + 1
    distance = {p.index: min((abs(p.index - t) for t in taken), default=far) for p in candidates}
    order: list[_Part] = []
    while candidates:
        best = max(candidates, key=lambda p: (distance[p.index], -p.index))
        order.append(best)
        candidates.remove(best)
        for p in candidates:
            distance[p.index] = min(distance[p.index], abs(p.index - best.index))
    return order


class PackFormatter:
    id = "pack"
    description = (
        "Markdown context pack for one or more videos: index, headers, cited transcripts; within a "
        "token budget (maxTokens), every video's outline and the whole chapters that fit."
    )
    mime_type = "text/markdown; charset=utf-8"
    extension = "md"
    combines_videos = True

    def render(self, context: VideoContext, options: RenderOptions) -> str:
        return render_many([context], max_tokens=options.max_tokens)
