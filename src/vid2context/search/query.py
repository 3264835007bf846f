"""The keyword query language, parsed once for every backend, so a query means the same thing in
memory, in SQLite and in D1.

Deliberately tiny, and nothing the user types reaches FTS5 as syntax:

- words are ANDed: ``rate limit`` finds segments holding both words;
- ``"quoted words"`` must appear together, in that order (an unclosed quote runs to the end);
- ``-word`` or ``-"some words"`` excludes segments that hold them;
- a chunk that splits into several words (``e-mail``, ``3.14``, ``text:foo``) counts as a phrase,
  as FTS5 does;
- everything else is a separator: ``* ^ : ( ) { } + '``, control characters and NUL; ``AND``,
  ``OR``, ``NOT`` and ``NEAR`` are words like any other.

Words are what SQLite's ``unicode61`` tokenizer (with ``remove_diacritics 2``) calls tokens, so the
memory backend and FTS5 agree: runs of letters and digits, case-folded, Latin accents removed.
Each word also has its English stem (``porter.py``): a phrase matches exactly when its words do,
and by stems when its words' stems do (``"baking bread"`` finds "baked breads"). Exclusions always
go by stems: ``-limits`` also drops a segment saying "limit".

A query that leaves nothing to find (empty, only punctuation, only exclusions) or is too long is a
``bad-request`` whose hint says what to send instead; no query ever makes an FTS5 error.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from ..errors import ErrorCode, VidError
from .porter import stem

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUERY_PHRASES",
    "ParsedQuery",
    "Phrase",
    "count_phrase",
    "fts_expression",
    "highlight_spans",
    "initials",
    "parse_query",
    "stems",
    "tokenize",
    "token_spans",
]

MAX_QUERY_CHARS = 2000
"""Longer queries are refused: no one types that much, and every phrase costs an index walk."""
MAX_QUERY_PHRASES = 32

Phrase = tuple[str, ...]
"""One word, or several that must appear together in this order: tokens as ``tokenize`` makes them."""

# unicode61 token characters: letters, digits, private use; Latin combining accents are part of a
# token (then removed), every other mark, punctuation, symbol and emoji separates tokens.
_TOKEN = re.compile(r"(?:[^\W_]|[\u0300-\u036f\ue000-\uf8ff])+")
# ASCII text: every byte but a letter or a digit becomes a space, then split (twice as fast as
# the pattern, same tokens).
_ASCII_SPACES = bytes(b if chr(b).isascii() and chr(b).isalnum() else 32 for b in range(256))
_ACCENTS = re.compile(r"[\u0300-\u036f]")
_CHUNK = re.compile(r'(-?)(?:"([^"]*)(?:"|$)|([^\s"]+))')
_STEM_CACHE: dict[str, str] = {}


def _bad(message: str, hint: str) -> VidError:
    return VidError(ErrorCode.BAD_REQUEST, message, hint=hint)


def _fold(token: str) -> str:
    if not token.isascii():
        token = unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFD", token)))
    return token.lower()


def tokenize(text: str) -> list[str]:
    """The tokens FTS5's ``unicode61 remove_diacritics 2`` tokenizer finds in ``text``."""
    if text.isascii():  # the common case, several times faster
        return text.encode("ascii").translate(_ASCII_SPACES).decode("ascii").lower().split()
    return [token for token in map(_fold, _TOKEN.findall(text)) if token]


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """Each token of ``text`` with its ``[start, end)`` character offsets in ``text``."""
    spans = []
    for match in _TOKEN.finditer(text):
        token = _fold(match.group())
        if token:
            spans.append((token, match.start(), match.end()))
    return spans


def stems(tokens: list[str], initials: frozenset[str] | None = None) -> list[str]:
    """``tokens`` as FTS5's ``porter`` tokenizer indexes them (memoised: speech repeats words).

    With ``initials``, only tokens starting with one of them are stemmed, the rest kept as they
    are: a stem keeps its word's first letter, so a token starting otherwise can equal none of
    the stems starting with ``initials``, stemmed or not. Comparing against a few stems, that
    skips most of the work.
    """
    cache = _STEM_CACHE
    if len(cache) > 200_000:
        cache.clear()
    out = []
    for token in tokens:
        if initials is not None and token[0] not in initials:
            out.append(token)
            continue
        found = cache.get(token)
        if found is None:
            found = cache[token] = stem(token)
        out.append(found)
    return out


def initials(phrases: tuple[Phrase, ...]) -> frozenset[str]:
    """The first letters of every word of ``phrases`` (for ``stems(..., initials)``)."""
    return frozenset(word[0] for phrase in phrases for word in phrase)


class ParsedQuery(NamedTuple):
    """A query as phrases of tokens; a single word is a phrase of one token."""

    required: tuple[Phrase, ...]
    excluded: tuple[Phrase, ...]

    @property
    def required_stems(self) -> tuple[Phrase, ...]:
        return tuple(tuple(stems(list(phrase))) for phrase in self.required)

    @property
    def excluded_stems(self) -> tuple[Phrase, ...]:
        return tuple(tuple(stems(list(phrase))) for phrase in self.excluded)


def parse_query(query: str) -> ParsedQuery:
    """Split ``query`` into required and excluded phrases; ``bad-request`` when it is not text, too
    long, or leaves nothing to find."""
    if not isinstance(query, str):
        raise _bad("The query must be text.", "Give the words to search for, such as: rate limit.")
    if len(query) > MAX_QUERY_CHARS:
        raise _bad(
            f"The query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are searched.",
            "Give a few distinctive words or a quoted phrase instead.",
        )
    required: list[Phrase] = []
    excluded: list[Phrase] = []
    for match in _CHUNK.finditer(query):
        negate, quoted, bare = match.groups()
        phrase = tuple(tokenize(quoted if quoted is not None else bare))
        target = excluded if negate else required
        if phrase and phrase not in target:
            target.append(phrase)
    if not required:
        if excluded:
            raise _bad(
                "The query only excludes words: there is nothing left to find.",
                'Give a word or a "quoted phrase" to find as well; -word only narrows, as in: rate -limit.',
            )
        if query.strip():
            raise _bad(
                "The query has no words in it, only punctuation or symbols.",
                'Give words or numbers to find; "quotes" keep words together and -word leaves one out.',
            )
        raise _bad("The query is empty.", "Give the words to search for, such as: rate limit.")
    if len(required) + len(excluded) > MAX_QUERY_PHRASES:
        raise _bad(
            f"The query has {len(required) + len(excluded)} words and phrases; at most "
            f"{MAX_QUERY_PHRASES} are searched.",
            "Give a few distinctive words or a quoted phrase instead.",
        )
    return ParsedQuery(tuple(required), tuple(excluded))


def _quote(phrase: Phrase) -> str:
    return '"' + " ".join(phrase) + '"'


def fts_expression(required: tuple[Phrase, ...], excluded: tuple[Phrase, ...] = ()) -> str:
    """The FTS5 MATCH expression: every phrase quoted, so nothing the user typed is syntax.

    Tokens hold only letters and digits, so they never contain a double quote. The same text
    serves both indexes: the stemmed one stems the words of the expression itself.
    """
    expression = "(" + " AND ".join(_quote(p) for p in required) + ")"
    if excluded:
        expression += " NOT (" + " OR ".join(_quote(p) for p in excluded) + ")"
    return expression


def count_phrase(tokens: list[str], phrase: Phrase) -> int:
    """How often ``phrase`` occurs in ``tokens`` (as FTS5 counts phrase instances, overlapping
    ones each)."""
    if len(phrase) == 1:
        return tokens.count(phrase[0])
    first, rest, n = phrase[0], phrase[1:], len(phrase)
    count, i = 0, -1
    while True:
        try:
            i = tokens.index(first, i + 1)  # in C: only where the phrase can start is compared
        except ValueError:
            return count
        if tuple(tokens[i + 1 : i + n]) == rest:
            count += 1


def highlight_spans(text: str, phrases: tuple[Phrase, ...], *, stemmed: bool) -> list[tuple[int, int]]:
    """``[start, end)`` offsets in ``text`` of every word inside an occurrence of one of
    ``phrases`` (compared by stems when ``stemmed``), in order, for ``**bold**`` snippets."""
    spans = token_spans(text)
    words = [token for token, _, _ in spans]
    if stemmed:
        words = stems(words)
    marked = [False] * len(words)
    for phrase in phrases:
        n = len(phrase)
        for i in range(len(words) - n + 1):
            if words[i] == phrase[0] and tuple(words[i : i + n]) == phrase:
                marked[i : i + n] = [True] * n
    return [(start, end) for (_, start, end), on in zip(spans, marked, strict=True) if on]
