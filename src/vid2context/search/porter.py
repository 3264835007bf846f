"""English stems exactly as SQLite's FTS5 ``porter`` tokenizer makes them.

The memory store has no SQLite, yet it must find and rank what SQLite and D1 find, so it stems
with this module. It follows M. F. Porter's 1980 algorithm the way FTS5 implements it, quirks
included, because agreeing with FTS5 matters more here than agreeing with the paper:

- the token is UTF-8 bytes; only tokens of 3 to 64 bytes are stemmed, others pass through;
- only ``a e i o u`` are vowels, and ``y`` after a consonant; anything else, digits and
  non-ASCII bytes included, is a consonant;
- in "contains a vowel" (``*v*``) a ``y`` counts as a vowel anywhere but the first letter;
- each step tries its suffixes longest first and stops at the first that matches, even when its
  condition then fails; a suffix matches only when something is left before it;
- step 2 has Porter's later ``bli -> ble`` and ``logi -> log``.

``tests/test_search_query.py`` checks every word of a large list and random tokens against the
SQLite this runs on (``fts5vocab`` over a ``porter`` table), so a difference shows up as a test
failure, not as a missed hit.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["MAX_STEM_BYTES", "stem"]

MAX_STEM_BYTES = 64
"""FTS5 passes longer tokens through unstemmed (``FTS5_PORTER_MAX_TOKEN``)."""

_VOWELS = frozenset(b"aeiou")
_Y = ord("y")


def _consonants(word: bytes) -> list[bool]:
    """Whether each byte is a consonant: ``y`` is a vowel after a consonant."""
    flags = []
    previous_consonant = False  # so a leading y is a consonant
    for byte in word:
        vowel = byte in _VOWELS or (byte == _Y and previous_consonant)
        previous_consonant = not vowel
        flags.append(previous_consonant)
    return flags


def _measure(stem: bytes) -> int:
    """Porter's *m*: how many vowel-consonant runs follow the leading consonants (capped at 2)."""
    m = 0
    seen_vowel = False
    for consonant in _consonants(stem):
        if not consonant:
            seen_vowel = True
        elif seen_vowel:
            m += 1
            seen_vowel = False
            if m == 2:
                break
    return m


def _has_vowel(stem: bytes) -> bool:
    """FTS5's ``*v*``: any of a e i o u, or a ``y`` that is not the first letter."""
    return any(byte in _VOWELS or (byte == _Y and i > 0) for i, byte in enumerate(stem))


def _cvc(stem: bytes) -> bool:
    """Porter's ``*o``: ends consonant-vowel-consonant, the last not w, x or y."""
    if not stem or stem[-1] in b"wxy":
        return False
    return [True, False, True] == _consonants(stem)[-3:]


def _m_above_0(stem: bytes) -> bool:
    return _measure(stem) > 0


def _m_above_1(stem: bytes) -> bool:
    return _measure(stem) > 1


def _m_above_1_after_s_or_t(stem: bytes) -> bool:
    return stem[-1:] in (b"s", b"t") and _measure(stem) > 1


_STEP2 = [  # (m > 0)
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
]  # fmt: skip
_STEP3 = [  # (m > 0)
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
    ("ness", ""),
]  # fmt: skip
_STEP4 = [  # (m > 1); "ion" also wants the stem to end in s or t
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
]  # fmt: skip


def _ordered(rules: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return sorted(((a.encode(), b.encode()) for a, b in rules), key=lambda rule: -len(rule[0]))


_STEP2_RULES = _ordered(_STEP2)
_STEP3_RULES = _ordered(_STEP3)
_STEP4_RULES = [
    (suffix, b"", _m_above_1_after_s_or_t if suffix == b"ion" else _m_above_1)
    for suffix, _ in _ordered([(s, "") for s in _STEP4])
]


def _replace(word: bytes, rules: list[tuple[bytes, bytes]]) -> bytes:
    """The first (longest) suffix of ``rules`` that ends ``word`` with something before it is
    replaced when the rest has m > 0; whether or not it was, no other suffix is tried."""
    for suffix, replacement in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _m_above_0(stem) else word
    return word


def _step1a(word: bytes) -> bytes:
    if not word.endswith(b"s"):
        return word
    if word.endswith(b"es"):
        if (len(word) > 4 and word.endswith(b"sses")) or (len(word) > 3 and word.endswith(b"ies")):
            return word[:-2]
        return word[:-1]
    return word if word.endswith(b"ss") else word[:-1]


def _step1b(word: bytes) -> bytes:
    if len(word) > 3 and word.endswith(b"eed"):
        return word[:-1] if _m_above_0(word[:-3]) else word
    for suffix in (b"ed", b"ing"):
        if len(word) > len(suffix) and word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return _step1b_tidy(word[: -len(suffix)])
    return word


def _step1b_tidy(word: bytes) -> bytes:
    """After ``ed`` or ``ing`` went: ``at bl iz`` get their ``e`` back, a doubled consonant
    (not l, s or z) loses one, and a short cvc stem gets an ``e``."""
    for suffix in (b"at", b"bl", b"iz"):
        if len(word) > 2 and word.endswith(suffix):
            return word + b"e"
    last = word[-1]
    if len(word) > 1 and last == word[-2] and last not in _VOWELS and last not in b"lsz":
        return word[:-1]  # y counts as a consonant here, as in FTS5
    if _measure(word) == 1 and _cvc(word):
        return word + b"e"
    return word


def _step1c(word: bytes) -> bytes:
    if word.endswith(b"y") and _has_vowel(word[:-1]):
        return word[:-1] + b"i"
    return word


def _step4(word: bytes) -> bytes:
    for suffix, _, condition in _STEP4_RULES:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem if condition(stem) else word
    return word


def _step5(word: bytes) -> bytes:
    if word.endswith(b"e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            word = stem
    if len(word) > 1 and word.endswith(b"ll") and _m_above_1(word[:-1]):
        word = word[:-1]
    return word


@lru_cache(maxsize=65_536)
def stem(token: str) -> str:
    """The stem FTS5's ``porter`` tokenizer indexes for ``token`` (a ``unicode61`` token: lower
    case, accents removed). A stem is not always a word: ``stem("baking") == "bake"``,
    ``stem("happy") == "happi"``."""
    original = word = token.encode("utf-8", "surrogatepass")
    if not 3 <= len(word) <= MAX_STEM_BYTES:
        return token
    word = _step1a(word)
    word = _step1b(word)
    word = _step1c(word)
    word = _replace(word, _STEP2_RULES)
    word = _replace(word, _STEP3_RULES)
    word = _step4(word)
    word = _step5(word)
    if word == original:
        return token
    try:
        return word.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        # The stem ends inside a multi-byte character (a doubled byte dropped): FTS5 indexes those
        # bytes as they are, and surrogateescape keeps them distinct and comparable here.
        return word.decode("utf-8", "surrogateescape")
