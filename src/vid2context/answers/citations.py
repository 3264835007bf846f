"""Checking an answer's ``[n]`` citations against the sources it was given.

A model cites a source by writing its number in square brackets after a sentence: ``[2]``,
``[1][3]`` or ``[1, 3]``. Three things happen to those numbers:

- **Unknown numbers go.** A number that names no source (``[7]`` when there were five, ``[0]``)
  is removed from the text, with the space before it, and listed in ``unverified``: a made-up
  source never reaches the reader. In ``[1, 7]`` only the 7 goes. ``strip_unverified`` does it
  to a whole text; ``StreamStripper`` does the same to a stream, holding back a partial ``[1``
  (and the space before it) across deltas until it can tell, so the concatenated stream is
  exactly the whole text stripped (``strip_unverified`` of everything), whatever the cut points.
- **Known numbers are narrowed.** A source is a passage of a minute or more; the citation points
  at the segment of it that best supports the sentences citing it, by the same word matching
  search uses to narrow a hit (``search.passages``: query words, stems, containment). With no
  word in common it points at the passage's start.
- **One ``Citation`` per number cited**, in the order first cited:
  ``{ n, videoId, title, startSec, endSec, url, quote }``, the quote being that segment's words.

Only what looks like a citation is touched: ``[12]`` is, ``[see 2]``, ``[a]`` and a bracket with
more than ``MAX_GROUP`` numbers are not. Portable and pure.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..formats.blocks import link_at, one_line
from ..models import Citation
from ..search import passages
from ..search.query import ParsedQuery, tokenize
from .grounding import Source

__all__ = [
    "CITE",
    "MAX_GROUP",
    "Checked",
    "StreamStripper",
    "check_citations",
    "cited_numbers",
    "citing_sentences",
    "narrow",
    "strip_unverified",
]

MAX_GROUP = 16
"""Most numbers in one bracket that still read as a citation."""
QUOTE_CHARS = 300
CITE = re.compile(r"(\s*)\[(\d{1,4}(?:, ?\d{1,4}){0,MORE})\]".replace("MORE", str(MAX_GROUP - 1)))
"""A citation bracket and the whitespace before it (removed with it when nothing in it is known)."""
_HOLD_CHARS = 6 * MAX_GROUP + 2
_PARTIAL = re.compile(r"\s*(?:\[[\d, ]{0,HOLD})?$".replace("HOLD", str(_HOLD_CHARS)))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _numbers(group: str) -> list[int]:
    return [int(part) for part in group.replace(" ", "").split(",")]


def strip_unverified(text: str, known: Collection[int]) -> tuple[str, list[int]]:
    """``text`` without the cited numbers not in ``known``, and those numbers (first seen first)."""
    unverified: list[int] = []

    def replace(match: re.Match[str]) -> str:
        numbers = _numbers(match.group(2))
        kept = [n for n in numbers if n in known]
        for n in numbers:
            if n not in known and n not in unverified:
                unverified.append(n)
        if not kept:
            return ""
        if len(kept) == len(numbers):
            return match.group(0)
        return match.group(1) + "[" + ", ".join(str(n) for n in kept) + "]"

    return CITE.sub(replace, text), unverified


@dataclass
class StreamStripper:
    """``strip_unverified`` for text that arrives in pieces: ``feed`` each delta and send what it
    returns; ``finish`` returns the rest at the end. What may still become a citation (trailing
    whitespace, an unclosed ``[12``) is held until the next piece shows what it is."""

    known: Collection[int]
    unverified: list[int] = field(default_factory=list)
    _held: str = ""

    def feed(self, text: str) -> str:
        pending = self._held + text
        hold = _PARTIAL.search(pending)
        cut = hold.start() if hold is not None else len(pending)
        head, self._held = pending[:cut], pending[cut:]
        return self._strip(head)

    def finish(self) -> str:
        rest, self._held = self._held, ""
        return self._strip(rest)

    def _strip(self, text: str) -> str:
        out, found = strip_unverified(text, self.known)
        self.unverified.extend(n for n in found if n not in self.unverified)
        return out


def cited_numbers(text: str) -> list[int]:
    """Every number cited in ``text``, first seen first."""
    seen: list[int] = []
    for match in CITE.finditer(text):
        seen.extend(n for n in _numbers(match.group(2)) if n not in seen)
    return seen


def citing_sentences(text: str) -> dict[int, list[str]]:
    """For each number cited, the sentences citing it (a citation belongs to the sentence it ends
    or follows: ``It tilts back. [2]`` cites 2 for "It tilts back.")."""
    found: dict[int, list[str]] = {}
    previous = 0
    for match in CITE.finditer(text):
        before = text[previous : match.start()]
        parts = [p for p in _SENTENCE_END.split(before) if p.strip()]
        sentence = parts[-1].strip() if parts else ""
        if not sentence:
            # A citation right after another one: the sentence they follow is the same one.
            sentence = _last_sentence(text[: match.start()])
        for n in _numbers(match.group(2)):
            found.setdefault(n, [])
            if sentence and sentence not in found[n]:
                found[n].append(sentence)
        previous = match.end()
    return found


def _last_sentence(text: str) -> str:
    plain = CITE.sub(" ", text)
    parts = [p for p in _SENTENCE_END.split(plain) if p.strip()]
    return parts[-1].strip() if parts else ""


def _words(sentence: str) -> passages.QueryWords:
    tokens = tuple((t,) for t in dict.fromkeys(tokenize(sentence)))
    return passages.query_words(ParsedQuery(required=tokens, excluded=()))


def narrow(source: Source, sentences: Sequence[str]) -> Citation:
    """The citation of ``source`` at the segment that best supports one of ``sentences``."""
    segments = source.segments
    best, best_score = 0, 0
    for sentence in sentences:
        words = _words(sentence)
        if not words.words:
            continue
        index = passages.best_segment(segments, 0, len(segments) - 1, words)
        score = passages.score_text(segments[index].text, words)
        if score > best_score:
            best, best_score = index, score
    segment = segments[best]
    return Citation(
        n=source.n,
        video_id=source.video_id,
        title=source.title,
        start_sec=segment.start_sec,
        end_sec=segment.end_sec,
        url=link_at(source.context, segment.start_sec),
        quote=one_line(segment.text, QUOTE_CHARS) or None,
    )


@dataclass
class Checked:
    """An answer after its citations were checked."""

    text: str
    """The answer with unknown numbers removed."""
    citations: list[Citation]
    unverified: list[int]


def check_citations(text: str, sources: Sequence[Source]) -> Checked:
    """``text`` stripped of unknown numbers, and a narrowed ``Citation`` per known number cited."""
    by_number = {source.n: source for source in sources}
    stripped, unverified = strip_unverified(text, by_number)
    sentences = citing_sentences(stripped)
    citations = [narrow(by_number[n], sentences.get(n, [])) for n in cited_numbers(stripped)]
    return Checked(text=stripped, citations=citations, unverified=unverified)
