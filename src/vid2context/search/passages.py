"""Where in a passage the query is: the segment a hit is narrowed to, and its snippet in bold.

A keyword hit is one segment already. A vector hit is a window of about 250 words, found by
meaning; it is narrowed to the segment of the window whose words are closest to the query's,
scored without a model (the vector side has no finer vectors than the window's): a word of the
query (very common words left out, ``STOPWORDS``) scores 3, a word sharing its English stem
(porter, as the keyword side stems) 2, a word that contains a query word of four
letters or more, or is contained in one, 1 ("stand" in "kickstand"). The best segment wins, the
earliest of equals; with no word in common at all the hit points at the window's start. Either
way the hit keeps its window's range.

The snippet is the segment's text with every word that scored put in ``**bold**``; asterisks of
the text itself are escaped so that only ours mark words. A long segment (speech-to-text blocks)
is cut to about ``SNIPPET_CHARS`` characters around its first match.

Portable and pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..models import Segment
from .query import ParsedQuery, stems, token_spans, tokenize

__all__ = [
    "SNIPPET_CHARS",
    "STOPWORDS",
    "QueryWords",
    "best_segment",
    "excluded",
    "match_spans",
    "query_words",
    "score_text",
    "snippet",
]

SNIPPET_CHARS = 320
STOPWORDS = frozenset(
    (
        "a an and are as at be but by can did do does for from had has have how i if in into is it its "
        "me my no not of on or our so than that the their them then there these they this to too up "
        "us was we were what when where which who why will with you your far much many very just"
    ).split()
)
"""Words too common to point at a segment (they still count in the keyword side's ranking)."""


def _stem(word: str) -> str:
    """The word's English stem, as the keyword side's porter stemmer makes it (``query.stems``)."""
    return stems([word])[0]


@dataclass(frozen=True)
class QueryWords:
    words: frozenset[str]
    stems: frozenset[str]
    long: tuple[str, ...]
    """Words of four letters or more, for containment."""
    excluded: tuple[tuple[str, ...], ...]
    scores: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    """Each token's score once worked out (``_word_score``): a query scores the same few hundred
    words over and over, across every segment of every window it narrows."""


def query_words(parsed: ParsedQuery) -> QueryWords:
    every = frozenset(token for phrase in parsed.required for token in phrase)
    words = frozenset(every - STOPWORDS) or every  # a query of stopwords only still marks them
    return QueryWords(
        words=words,
        stems=frozenset(_stem(w) for w in words),
        long=tuple(sorted(w for w in words if len(w) >= 4)),
        excluded=tuple(parsed.excluded),
    )


def _word_score(token: str, query: QueryWords) -> int:
    score = query.scores.get(token)
    if score is None:
        if len(query.scores) > 100_000:  # a query over every word of a huge library: stay bounded
            query.scores.clear()
        score = query.scores[token] = _score_of(token, query)
    return score


def _score_of(token: str, query: QueryWords) -> int:
    if token in query.words:
        return 3
    if _stem(token) in query.stems:
        return 2
    if len(token) >= 4 and any(w in token or (len(token) >= 4 and token in w) for w in query.long):
        return 1
    return 0


def score_text(text: str, query: QueryWords) -> int:
    scores = query.scores
    total = 0
    for token in tokenize(text):
        score = scores.get(token)
        total += _word_score(token, query) if score is None else score
    return total


def excluded(text: str, query: QueryWords) -> bool:
    """Whether ``text`` holds an excluded word or phrase (by the same light stems)."""
    if not query.excluded:
        return False
    tokens = tokenize(text)
    stems = [_stem(t) for t in tokens]
    for phrase in query.excluded:
        wanted = [_stem(t) for t in phrase]
        n = len(wanted)
        if any(stems[i : i + n] == wanted for i in range(len(stems) - n + 1)):
            return True
    return False


def best_segment(segments: Sequence[Segment], first: int, last: int, query: QueryWords) -> int:
    """The index (``first`` to ``last``) of the segment that best matches ``query``."""
    best, best_score = first, 0
    for index in range(first, min(last, len(segments) - 1) + 1):
        score = score_text(segments[index].text, query)
        if score > best_score:
            best, best_score = index, score
    return best


def match_spans(text: str, query: QueryWords) -> list[tuple[int, int]]:
    """``[start, end)`` offsets of the words of ``text`` that match ``query`` (the narrowing's
    rule), for a hit the keyword side did not find and so has no ``highlights`` of its own."""
    return [(start, end) for token, start, end in token_spans(text) if _word_score(token, query) > 0]


def snippet(text: str, query: QueryWords, spans: list[tuple[int, int]] | None = None) -> str:
    """``text`` with the words that match in ``**bold**`` (``spans``, the keyword side's
    highlights, when given), cut around the first match when long."""
    if spans is None:
        spans = match_spans(text, query)
    spans = sorted((a, b) for a, b in spans if 0 <= a < b <= len(text))
    start, end = 0, len(text)
    if len(text) > SNIPPET_CHARS:
        anchor = spans[0][0] if spans else 0
        start = max(0, anchor - SNIPPET_CHARS // 3)
        start = text.rfind(" ", 0, start) + 1 if start else 0
        end = min(len(text), start + SNIPPET_CHARS)
        cut = text.rfind(" ", start, end)
        end = cut if end < len(text) and cut > start else end
    out: list[str] = ["…" if start else ""]
    position = start
    for a, b in spans:
        if a < start or b > end:
            continue
        out.append(_escape(text[position:a]))
        out.append("**" + _escape(text[a:b]) + "**")
        position = b
    out.append(_escape(text[position:end]))
    if end < len(text):
        out.append("…")
    return " ".join("".join(out).split())


def _escape(text: str) -> str:
    return text.replace("*", "\\*")
