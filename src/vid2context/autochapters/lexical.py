"""Words that carry a topic: what lexical cohesion compares and what key-phrase titles are made of.

Spoken transcripts are full of words that say nothing about the subject ("so", "really", "you
know"), so both uses start from the same filter: casefolded words, English function words and
speech fillers left out, each folded to its Porter stem (FTS5's, ``search/porter.py``), so that
"battery" and "batteries" count as one term. Everything here is integer counting and ordered
iteration: the same text gives the same numbers on every machine, which keeps offline chapters
deterministic.

Key phrases are runs of one or two content words (a stop word or punctuation ends a run), scored
by how often the section says them against how many tiles of the whole video do (tf-idf), so a
word every part repeats ("bike" in a bike review) counts for little.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ..search.porter import stem

__all__ = ["STOP_WORDS", "cosine", "key_phrases", "terms", "title_of"]

STOP_WORDS = frozenset(
    """a about above after again against all almost also am an and any anyway are around as at
    back be because been before being below between both but by can could did do does doing done
    down during each either else enough even ever every few for from further get gets getting go
    goes going gone got gotta gonna had has have having he her here hers herself him himself his
    how i if in into is it its itself just kind kinda know knew let lets like little lot lots made
    make makes many may maybe me might mine more most much must my myself need never no nor not
    now of off oh ok okay on once one only onto or other others our ours ourselves out over own
    pretty quite rather really right said same say saying says see seem seems she should since so
    some something sort still stuff such sure take than that thats the their theirs them
    themselves then there these they thing things think this those though through thus to too
    toward try trying um uh under until up upon us use used using very want wanna was way we well
    were what whatever when where whether which while who whom whose why will with within without
    would yeah yes yet you your yours yourself yourselves actually basically literally honestly
    definitely probably obviously anything everything nothing someone everyone anyone""".split()
)
"""English function words and the fillers of speech: never a topic, never a title."""

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_BREAK = re.compile(r"[.,;:!?()\[\]{}\"\u2014\u2013]|\s-\s")
_MIN_LETTERS = 3
_TITLE_CHARS = 80


def _content(word: str) -> bool:
    return len(word) >= _MIN_LETTERS and word not in STOP_WORDS and not word.isdigit()


def _words(text: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in _TOKEN.findall(text.casefold())]


def terms(text: str) -> Counter[str]:
    """The stems of ``text``'s content words, counted."""
    found: Counter[str] = Counter()
    for word in _words(text):
        if "'" in word:
            word = word.split("'", 1)[0]
        if _content(word):
            found[stem(word)] += 1
    return found


def cosine(a: Counter[str], b: Counter[str]) -> float:
    """The cosine of two term counts; 0 when either is empty."""
    if len(a) > len(b):
        a, b = b, a
    dot = sum(count * b[term] for term, count in a.items() if term in b)
    if not dot:
        return 0.0
    norm = math.sqrt(sum(c * c for c in a.values())) * math.sqrt(sum(c * c for c in b.values()))
    return dot / norm


def _runs(text: str) -> list[list[str]]:
    """Runs of consecutive content words (surface forms, casefolded), split at stop words and
    at punctuation."""
    runs: list[list[str]] = []
    for piece in _BREAK.split(text):
        run: list[str] = []
        for word in _words(piece):
            if "'" in word or not _content(word):
                if run:
                    runs.append(run)
                run = []
            else:
                run.append(word)
        if run:
            runs.append(run)
    return runs


def _candidates(text: str) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """Phrase keys (stems joined by a space) counted, and the surface forms each was said as."""
    counts: Counter[str] = Counter()
    surfaces: dict[str, Counter[str]] = {}
    for run in _runs(text):
        stems = [stem(word) for word in run]
        for size in (1, 2):
            for i in range(len(run) - size + 1):
                key = " ".join(stems[i : i + size])
                counts[key] += 1
                surfaces.setdefault(key, Counter())[" ".join(run[i : i + size])] += 1
    return counts, surfaces


def key_phrases(section: str, tiles: Sequence[Counter[str]], most: int = 3) -> list[str]:
    """The ``most`` phrases that best say what ``section`` is about, best first, as said.

    ``tiles`` are the term counts of every tile of the video (``terms``): a phrase's rarity is
    how few tiles hold all of its words. A two-word phrase must be said at least twice to count,
    and a phrase sharing a word with a better one is left out.
    """
    counts, surfaces = _candidates(section)
    total = len(tiles)
    scored: list[tuple[float, int, str]] = []
    for order, (key, count) in enumerate(counts.items()):
        words = key.split(" ")
        if len(words) > 1 and count < 2:
            continue
        held = sum(1 for tile in tiles if all(word in tile for word in words))
        idf = math.log((total + 1) / (held + 0.5))
        weight = 1.5 if len(words) > 1 else 1.0
        scored.append((count * idf * weight, -order, key))
    scored.sort(reverse=True)
    chosen: list[str] = []
    used: set[str] = set()
    for score, _, key in scored:
        if score <= 0 or len(chosen) >= most:
            break
        words = set(key.split(" "))
        if words & used:
            continue
        used |= words
        surface, _ = max(surfaces[key].items(), key=lambda item: (item[1], -len(item[0])))
        chosen.append(surface)
    return chosen


def title_of(phrases: Sequence[str], fallback: str) -> str:
    """``Battery, range and torque`` from three phrases; ``fallback`` when there are none."""
    if not phrases:
        return fallback
    listed = list(phrases)
    text = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    text = text[:1].upper() + text[1:]
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1].rstrip() + "…"
