"""Which parts of a video a query is about: keyword relevance, until search is built.

A pack short of budget keeps the chapters a ``query`` names (issue #12 item 5). Real search
(keyword plus vectors, fused, behind one core function) is a later issue; until then this module
is the one place that decides, and it is small so that issue can replace it: ``part_scores`` takes
the query and each part's text and answers a score per part, nothing else.

The scoring is BM25 over the parts of one video (so a word every chapter says counts for little),
on words folded to a crude stem (``baking``, ``baked`` and ``bakes`` all count as ``bake``), with
common English words ignored. A part that shares no word with the query scores 0. It needs no
stored index, so it works the same on every runtime and for videos read just now.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["part_scores", "query_terms"]

_WORD = re.compile(r"\w+")
_K1 = 1.2
_B = 0.75
_STOP = frozenset(
    """a an and are as at be but by do does for from has have how i in is it its of on or so
    that the their then there this to was we what when where which who why with you your""".split()
)
_SUFFIXES = ("ing", "ed", "es", "s", "e")


def _stem(word: str) -> str:
    """A word without one common English ending, when enough of it is left to mean something."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.casefold()) if word not in _STOP]


def query_terms(query: str | None) -> list[str]:
    """The query's distinct stems in order; empty when it has none that count."""
    return list(dict.fromkeys(_words(query or "")))


def part_scores(query: str | None, texts: Sequence[str]) -> list[float]:
    """How much each of ``texts`` (the parts of one video) is about ``query``: higher is more,
    0 for a part that says none of its words."""
    terms = query_terms(query)
    if not terms or not texts:
        return [0.0] * len(texts)
    counted = [Counter(_words(text)) for text in texts]
    lengths = [sum(counts.values()) for counts in counted]
    average = (sum(lengths) / len(lengths)) or 1.0
    scores = []
    for counts, length in zip(counted, lengths, strict=True):
        score = 0.0
        for term in terms:
            frequency = counts.get(term, 0)
            if not frequency:
                continue
            found_in = sum(1 for other in counted if term in other)
            idf = math.log(1 + (len(texts) - found_in + 0.5) / (found_in + 0.5))
            score += idf * frequency * (_K1 + 1) / (frequency + _K1 * (1 - _B + _B * length / average))
        scores.append(score)
    return scores
