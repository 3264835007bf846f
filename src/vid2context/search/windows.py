"""What gets embedded: windows of whole consecutive segments, each small enough for the model.

A segment of captions is a few words, too little to carry a meaning an embedding can find; a whole
chapter is far more than an embedding model reads (``bge-small-en-v1.5`` reads 512 tokens and
ignores the rest). So the transcript is cut into windows of about ``TARGET_WORDS`` words of whole
consecutive segments, each overlapping the one before by one segment, so that a sentence cut at a
window's edge is whole in the next. A window knows its video, its time range, the segments it holds
and its chapter, which is all a hit needs to cite ``[m:ss]`` and to name the chapter.

The rules, each chosen for what a hit must cite:

- **Chapters are walls.** A window never crosses a chapter boundary, and the overlap does not
  either. A segment belongs to the chapter its start falls in (the outline's rule,
  ``formats.blocks.split_by_starts``; segments before the first chapter join it), so a hit names
  exactly one chapter, the one ``get_section(chapter=i)`` returns with the hit's words in it. The
  price is a little context lost at a boundary, where the subject changes anyway.
- **Never past the model's limit.** A window holds at most ``MAX_WORDS`` words and at most
  ``max_tokens`` tokens by ``token_bound``, a conservative estimate (the real count needs the
  model's tokenizer, which the Worker does not have): ``TOKENS_PER_WORD`` tokens a word, or a token
  every ``CHARS_PER_TOKEN`` characters when that is more (long words, numbers, names), each CJK
  character counted as a word of its own (BERT's tokenizer splits them so), plus
  ``SPECIAL_TOKENS`` for the model's own markers. Embedders truncate what is over anyway; this keeps
  them from having to.
- **A segment too long for one window** (a transcript from speech-to-text that came back as one
  block, say) is cut by words into parts of about ``TARGET_WORDS`` words, balanced so that no part
  is a stub. Each part is a window of that one segment (``first_segment == last_segment``,
  ``part`` = 0, 1, ...) and keeps the segment's whole time range: nothing says when inside it each
  word was spoken. Windows beside it do not overlap into it.
- **Segments without text** are skipped: no window starts or ends on one (one between two is inside
  a window's segment range, harmlessly).
- **No stubs at the end.** When what is left of a chapter fits into the window being built, it
  joins it rather than making a last window of a few words.
- **Deterministic, with stable ids.** The same transcript gives the same windows. A window's id is
  its video id and segment range (``youtube:jNQXAC9IVRw@12-19``, ``...@7.2`` for part 2 of segment
  7), at most ``MAX_WINDOW_ID_BYTES`` bytes: a video id too long for that (``upload:<sha256>``, a
  page URL) is replaced by ``~`` and a digest of it. 56 bytes leave room for the 8-byte space tag
  the Vectorize index puts in front, within its 64-byte limit on ids.

**On-screen text** (``context.visual``, what ``mode=video`` read) is embedded too, so semantic
search finds a slide by its meaning: ``index_windows`` is the transcript's windows and then one
window per stretch (``on_screen_windows``; a stretch too long for the model cut into parts as a
segment is). A stretch's window points at ``ON_SCREEN_IDX + j`` (``j`` its place in ``visual``),
the ``segments.idx`` keyword search gives the same stretch, so a hit knows its kind and both sides
of a hybrid search fuse into one passage. Auto-chapters and ``PUT /library`` read the transcript's
windows only (``make_windows``).

Pure and portable: no I/O, nothing platform-specific.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ..formats.blocks import chapter_spans, clean_text, one_line
from ..models import Segment, VideoContext
from ..storage.common import ON_SCREEN_IDX, on_screen_passage

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_WINDOW_ID_BYTES",
    "MAX_WORDS",
    "SPECIAL_TOKENS",
    "TARGET_WORDS",
    "TOKENS_PER_WORD",
    "Window",
    "WindowRef",
    "index_windows",
    "is_on_screen",
    "make_windows",
    "on_screen_windows",
    "token_bound",
    "window_id",
]

TARGET_WORDS = 250
"""A window stops growing once it holds this many words (a minute and a half of speech)."""
MAX_WORDS = 300
"""A window never holds more words than this."""
TOKENS_PER_WORD = 1.5
"""Tokens a word costs at most, on average over a window. English speech averages about 1.3
WordPiece tokens a word in the BERT-family vocabularies (bge, MiniLM); 1.5 leaves room for names
and numbers."""
CHARS_PER_TOKEN = 3.0
"""A token covers at least this many characters on average, when words are long (German compounds,
URLs, digits): the bound takes whichever of the two estimates is larger."""
SPECIAL_TOKENS = 2
"""The model's own markers around every text (``[CLS]`` and ``[SEP]``)."""
MAX_WINDOW_ID_BYTES = 56
"""Ids stay within this, so that a space tag of 8 bytes still fits Vectorize's 64."""

_EPSILON = 0.001  # as formats.blocks.split_by_starts: a segment starting on a chapter mark is in it
_WIDE = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNIT = re.compile(rf"[{_WIDE}]|[^\s{_WIDE}]+")
"""A word: a run of non-space characters, or one CJK character (kana, ideographs, Hangul)."""
_DIGEST_CHARS = 26


class WindowRef(msgspec.Struct, frozen=True, kw_only=True):
    """Where a window is: what the vector index keeps beside each vector, and what a hit returns."""

    id: str
    """Stable: the video id (or its digest) and the segment range; see ``window_id``."""
    video_id: str
    start_sec: float
    end_sec: float
    first_segment: int
    """Index in ``transcript.segments`` of the window's first segment."""
    last_segment: int
    """Index of its last segment (inclusive); equal to ``first_segment`` for a part."""
    part: int | None = None
    """For a segment too long for one window: which part of it (0, 1, ...); the window then keeps
    the whole segment's time range. ``None`` for a window of whole segments."""
    chapter_index: int | None = None
    """The chapter (index in the video's chapters, sorted by start) all of its segments belong to;
    ``None`` when the video has no chapters."""
    chapter_title: str | None = None


class Window(WindowRef, frozen=True, kw_only=True):
    """A window with its text, for the embedder."""

    text: str
    words: int
    tokens: int
    """``token_bound`` of ``text``, the model's markers included: never over ``max_tokens``."""


def token_bound(words: int, chars: int) -> int:
    """The most tokens ``words`` words of ``chars`` characters (spaces not counted) should cost,
    without the model's markers (see the module docstring)."""
    return math.ceil(max(words * TOKENS_PER_WORD, chars / CHARS_PER_TOKEN))


def window_id(video_id: str, first: int, last: int, part: int | None = None) -> str:
    """``<video id>@<first>-<last>``, or ``<video id>@<segment>.<part>`` for a part of one segment;
    a video id that would make it longer than ``MAX_WINDOW_ID_BYTES`` becomes ``~<digest>``."""
    suffix = f"@{first}-{last}" if part is None else f"@{first}.{part}"
    if len((video_id + suffix).encode("utf-8", "surrogatepass")) <= MAX_WINDOW_ID_BYTES:
        return video_id + suffix
    digest = hashlib.sha256(video_id.encode("utf-8", "surrogatepass")).digest()
    return "~" + base64.b32encode(digest).decode().lower()[:_DIGEST_CHARS] + suffix


class _Piece(NamedTuple):
    index: int
    segment: Segment
    text: str
    words: int
    chars: int


def make_windows(
    context: VideoContext,
    *,
    max_tokens: int = 512,
    target_words: int = TARGET_WORDS,
    max_words: int = MAX_WORDS,
) -> list[Window]:
    """The windows of ``context``'s transcript, in transcript order; none without a transcript.

    ``max_tokens`` is the embedding model's limit, markers included (512 for the bge and MiniLM
    models); windows are smaller when it is (``target_words`` and ``max_words`` shrink to fit).
    """
    builder = _Builder.of(context.id, max_tokens, target_words, max_words)
    segments = context.transcript.segments if context.transcript else []
    chapters = _Chapters(context)
    runs: list[tuple[int | None, list[_Piece]]] = []
    for index, segment in enumerate(segments):
        piece = _piece(index, segment)
        if piece is None:
            continue
        chapter = chapters.of(segment.start_sec)
        if runs and runs[-1][0] == chapter:
            runs[-1][1].append(piece)
        else:
            runs.append((chapter, [piece]))
    windows: list[Window] = []
    for chapter, pieces in runs:
        windows.extend(builder.chapter(pieces, chapter, chapters.title(chapter)))
    return windows


def on_screen_windows(context: VideoContext, *, max_tokens: int = 512) -> list[Window]:
    """One window per stretch of ``context.visual`` with text (its lines joined by `` / ``, as
    keyword search indexes it), in order; parts for a stretch too long for the model."""
    builder = _Builder.of(context.id, max_tokens, TARGET_WORDS, MAX_WORDS)
    chapters = _Chapters(context)
    windows: list[Window] = []
    for j, item in enumerate(context.visual or []):
        segment = Segment(start_sec=item.start_sec, end_sec=item.end_sec, text=on_screen_passage(item))
        piece = _piece(ON_SCREEN_IDX + j, segment)
        if piece is None:
            continue
        chapter = chapters.of(item.start_sec)
        title = chapters.title(chapter)
        if builder.fits(piece.words, piece.chars):
            windows.append(builder.window([piece], chapter, title))
        else:
            windows.extend(builder.parts(piece, chapter, title))
    return windows


def index_windows(context: VideoContext, *, max_tokens: int = 512) -> list[Window]:
    """What the vector index holds of ``context``: its transcript's windows, then its on-screen ones."""
    return make_windows(context, max_tokens=max_tokens) + on_screen_windows(context, max_tokens=max_tokens)


def is_on_screen(window: WindowRef) -> bool:
    """Whether ``window`` holds on-screen text (``on_screen_windows``) rather than speech."""
    return window.first_segment >= ON_SCREEN_IDX


def _piece(index: int, segment: Segment) -> _Piece | None:
    text = clean_text(segment.text)
    if not text:
        return None
    units = _UNIT.findall(text)
    return _Piece(index, segment, text, len(units), sum(len(u) for u in units))


class _Chapters:
    """Which chapter a time falls in (the outline's rule) and its title."""

    def __init__(self, context: VideoContext) -> None:
        spans = chapter_spans(context)
        self.starts = [span.start_sec for span in spans]
        self.titles = [one_line(span.title) or f"Chapter {i + 1}" for i, span in enumerate(spans)]

    def of(self, seconds: float) -> int | None:
        return max(0, bisect_right(self.starts, seconds + _EPSILON) - 1) if self.starts else None

    def title(self, chapter: int | None) -> str | None:
        return self.titles[chapter] if chapter is not None else None


class _Builder:
    def __init__(self, video_id: str, budget: int, target_words: int, max_words: int) -> None:
        self.video_id = video_id
        self.budget = budget
        self.target = target_words
        self.max_words = max_words

    @classmethod
    def of(cls, video_id: str, max_tokens: int, target_words: int, max_words: int) -> _Builder:
        """A builder for a model reading ``max_tokens`` (markers included): the word limits shrink to fit."""
        if max_tokens <= SPECIAL_TOKENS:
            raise ValueError(f"max_tokens must be more than {SPECIAL_TOKENS}")
        budget = max_tokens - SPECIAL_TOKENS
        max_words = max(1, min(max_words, math.floor(budget / TOKENS_PER_WORD)))
        return cls(video_id, budget, max(1, min(target_words, max_words)), max_words)

    def fits(self, words: int, chars: int) -> bool:
        return words <= self.max_words and token_bound(words, chars) <= self.budget

    def chapter(self, pieces: list[_Piece], chapter: int | None, title: str | None) -> list[Window]:
        """The windows of one chapter's pieces (see the module docstring for the rules)."""
        windows: list[Window] = []
        n = len(pieces)
        i = 0
        while i < n:
            if not self.fits(pieces[i].words, pieces[i].chars):
                windows.extend(self.parts(pieces[i], chapter, title))
                i += 1
                continue
            j, words, chars = i, 0, 0
            while j < n and self.fits(words + pieces[j].words, chars + pieces[j].chars):
                words, chars, j = words + pieces[j].words, chars + pieces[j].chars, j + 1
                if words >= self.target:
                    rest_words = sum(p.words for p in pieces[j:])
                    rest_chars = sum(p.chars for p in pieces[j:])
                    if self.fits(words + rest_words, chars + rest_chars):
                        j = n  # what is left joins this window rather than making a stub
                    break
            windows.append(self.window(pieces[i:j], chapter, title))
            if j >= n:
                break
            overlap = pieces[j - 1]
            can_overlap = j - 1 > i and self.fits(
                overlap.words + pieces[j].words, overlap.chars + pieces[j].chars
            )
            i = j - 1 if can_overlap else j
        return windows

    def window(self, pieces: Sequence[_Piece], chapter: int | None, title: str | None) -> Window:
        words = sum(p.words for p in pieces)
        chars = sum(p.chars for p in pieces)
        first, last = pieces[0].index, pieces[-1].index
        return Window(
            id=window_id(self.video_id, first, last),
            video_id=self.video_id,
            start_sec=min(p.segment.start_sec for p in pieces),
            end_sec=max(max(p.segment.start_sec, p.segment.end_sec) for p in pieces),
            first_segment=first,
            last_segment=last,
            chapter_index=chapter,
            chapter_title=title,
            text=" ".join(p.text for p in pieces),
            words=words,
            tokens=token_bound(words, chars) + SPECIAL_TOKENS,
        )

    def parts(self, piece: _Piece, chapter: int | None, title: str | None) -> list[Window]:
        """One segment too long for a window, cut by words into balanced parts."""
        units = self.units(piece.text)
        chars = sum(len(u.group()) for u in units)
        count = max(
            math.ceil(len(units) / self.target), math.ceil(token_bound(len(units), chars) / self.budget)
        )
        per_part = math.ceil(len(units) / count)
        groups: list[list[re.Match[str]]] = [[]]
        words = chars = 0
        for unit in units:
            size = len(unit.group())
            if groups[-1] and (words + 1 > per_part or not self.fits(words + 1, chars + size)):
                groups.append([])
                words = chars = 0
            groups[-1].append(unit)
            words, chars = words + 1, chars + size
        segment = piece.segment
        windows = []
        for part, group in enumerate(groups):
            text = piece.text[group[0].start() : group[-1].end()]
            chars = sum(len(u.group()) for u in group)
            windows.append(
                Window(
                    id=window_id(self.video_id, piece.index, piece.index, part),
                    video_id=self.video_id,
                    start_sec=segment.start_sec,
                    end_sec=max(segment.start_sec, segment.end_sec),
                    first_segment=piece.index,
                    last_segment=piece.index,
                    part=part,
                    chapter_index=chapter,
                    chapter_title=title,
                    text=text,
                    words=len(group),
                    tokens=token_bound(len(group), chars) + SPECIAL_TOKENS,
                )
            )
        return windows

    def units(self, text: str) -> list[re.Match[str]]:
        """The words of ``text``, a word too long for a window on its own cut into pieces that fit."""
        longest = max(1, math.floor(self.budget * CHARS_PER_TOKEN))
        units: list[re.Match[str]] = []
        for match in _UNIT.finditer(text):
            if len(match.group()) <= longest:
                units.append(match)
                continue
            pattern = re.compile(rf"[^\s]{{1,{longest}}}")
            units.extend(pattern.finditer(text, match.start(), match.end()))
        return units
